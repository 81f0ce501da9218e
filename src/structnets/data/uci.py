"""One small parser per UCI data set: verified file contents in, feature matrix and target out.

Shared rules (the setup of the low-rank Swish paper's UCI reproduction, Li et al., ICML 2025):

- a categorical column is replaced, in place, by its one-hot block; categories are sorted by code
  point and named ``"column=category"``; every category gets a column (none is dropped), and a
  missing-value marker such as Adult's ``?`` is a category of its own;
- numeric columns are kept as they are: features are NOT standardised here, because scaling
  statistics must come from the training fold only;
- class labels become indices into the sorted list of labels;
- a regression target is min-max scaled to [0, 1], and its original (min, max) is recorded.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from .dataset import Parsed, Task, check_finite

_NOT_STANDARDISED = "Features are not standardised (do it inside each training fold to avoid leakage)."


def _csv(content: bytes, **options: object) -> pd.DataFrame:
    return pd.read_csv(io.BytesIO(content), **options)  # type: ignore[arg-type]


def _encode(frame: pd.DataFrame, columns: Sequence[tuple[str, bool]]) -> tuple[np.ndarray, list[str]]:
    """Stack ``columns`` (name, is_categorical) as float64 columns, one-hot for categoricals."""
    blocks: list[np.ndarray] = []
    names: list[str] = []
    for column, categorical in columns:
        if categorical:
            values = np.asarray(frame[column].to_numpy(dtype=object), dtype=str)
            categories, codes = np.unique(values, return_inverse=True)
            blocks.append((codes[:, None] == np.arange(categories.size)).astype(np.float64))
            names.extend(f"{column}={category}" for category in categories)
        else:
            blocks.append(frame[column].to_numpy(dtype=np.float64)[:, None])
            names.append(column)
    return np.hstack(blocks), names


def _classes(values: np.ndarray | pd.Series) -> tuple[np.ndarray, tuple[str, ...]]:
    labels, codes = np.unique(np.asarray(values, dtype=str), return_inverse=True)
    return codes.astype(np.int64), tuple(str(label) for label in labels)


def _min_max(values: np.ndarray | pd.Series) -> tuple[np.ndarray, tuple[float, float]]:
    target = np.asarray(values, dtype=np.float64)
    low, high = float(target.min()), float(target.max())
    return (target - low) / (high - low), (low, high)


def _finish(
    name: str,
    X: np.ndarray,
    feature_names: list[str],
    y: np.ndarray,
    task: Task,
    description: str,
    *,
    classes: tuple[str, ...] | None = None,
    target_range: tuple[float, float] | None = None,
) -> Parsed:
    check_finite(X, feature_names, argument=f"features of data set {name!r}")
    if task == "regression":
        check_finite(y[:, None], ["target"], argument=f"target of data set {name!r}")
    X = np.ascontiguousarray(X, dtype=np.float64)
    for array in (X, y):
        array.setflags(write=False)
    return Parsed(X, y, task, tuple(feature_names), classes, target_range, description)


def iris(contents: Sequence[bytes]) -> Parsed:
    """Iris from ``bezdekIris.data`` (the corrected file, equal to scikit-learn's ``load_iris``)."""
    features = ["sepal length (cm)", "sepal width (cm)", "petal length (cm)", "petal width (cm)"]
    frame = _csv(contents[0], header=None, names=[*features, "class"])
    X, names = _encode(frame, [(f, False) for f in features])
    y, classes = _classes(frame["class"])
    description = (
        f"Iris (UCI 53) from bezdekIris.data, the corrected copy that scikit-learn ships: "
        f"{X.shape[0]} flowers x {X.shape[1]} measurements in cm; classes {list(classes)} -> "
        f"indices 0..{len(classes) - 1}. {_NOT_STANDARDISED}"
    )
    return _finish("iris", X, names, y, "classification", description, classes=classes)


def rice(contents: Sequence[bytes]) -> Parsed:
    """Rice (Cammeo and Osmancik) from the original ARFF file."""
    lines = contents[0].decode("utf-8").splitlines()
    attributes: list[str] = []
    start = None
    for index, line in enumerate(lines):
        words = line.split()
        if not words or line.startswith("%"):
            continue
        keyword = words[0].lower()
        if keyword == "@attribute":
            attributes.append(words[1])
        elif keyword == "@data":
            start = index + 1
            break
    if start is None or not attributes:
        raise ValueError("Rice_Cammeo_Osmancik.arff has no @ATTRIBUTE/@DATA section")
    frame = _csv("\n".join(lines[start:]).encode(), header=None, names=attributes)
    target = attributes[-1]
    X, names = _encode(frame, [(a, False) for a in attributes[:-1]])
    y, classes = _classes(frame[target])
    description = (
        f"Rice (Cammeo and Osmancik, UCI 545) from the original Rice_Cammeo_Osmancik.arff: "
        f"{X.shape[0]} grains x {X.shape[1]} numeric morphological features; classes "
        f"{list(classes)} -> indices 0..1. {_NOT_STANDARDISED}"
    )
    return _finish("rice", X, names, y, "classification", description, classes=classes)


_BANK_COLUMNS = [
    ("age", False),
    ("job", True),
    ("marital", True),
    ("education", True),
    ("default", True),
    ("balance", False),
    ("housing", True),
    ("loan", True),
    ("contact", True),
    ("day", False),
    ("month", True),
    ("duration", False),
    ("campaign", False),
    ("pdays", False),
    ("previous", False),
    ("poutcome", True),
]


def bank_marketing(contents: Sequence[bytes]) -> Parsed:
    """Bank Marketing from ``bank-full.csv`` (``;``-separated, quoted strings)."""
    frame = _csv(contents[0], sep=";", keep_default_na=False)
    X, names = _encode(frame, _BANK_COLUMNS)
    y, classes = _classes(frame["y"])
    description = (
        f"Bank Marketing (UCI 222) from bank-full.csv: {X.shape[0]} clients; 7 numeric columns "
        f"kept (including duration, which UCI notes is only known after the call) and 9 "
        f"categorical columns (job, marital, education, default, housing, loan, contact, month, "
        f"poutcome) one-hot encoded with sorted categories, 'unknown' kept as a category: "
        f"{X.shape[1]} features. Target y {list(classes)} -> indices 0..1. {_NOT_STANDARDISED}"
    )
    return _finish("bank-marketing", X, names, y, "classification", description, classes=classes)


_ADULT_NAMES = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
]
_ADULT_CATEGORICAL = {
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "native-country",
}


def adult(contents: Sequence[bytes]) -> Parsed:
    """Adult from ``adult.data`` and ``adult.test`` joined (48842 rows, 108 features)."""
    train_bytes, test_bytes = contents
    # adult.test opens with the banner "|1x3 Cross validator"; skip it only if it is there.
    skip = 1 if test_bytes.lstrip().startswith(b"|") else 0
    options = dict(header=None, names=_ADULT_NAMES, skipinitialspace=True, keep_default_na=False)
    frame = pd.concat(
        [_csv(train_bytes, **options), _csv(test_bytes, skiprows=skip, **options)],
        ignore_index=True,
    )
    income = frame["income"].astype(str).str.rstrip(".")  # test labels end with "."
    columns = [(c, c in _ADULT_CATEGORICAL) for c in _ADULT_NAMES[:-1]]
    X, names = _encode(frame, columns)
    y, classes = _classes(income)
    description = (
        f"Adult (UCI 2): adult.data and adult.test joined into {X.shape[0]} rows (the test "
        f"file's '|1x3 Cross validator' banner skipped and the trailing '.' of its labels "
        f"removed); 6 numeric columns kept and 8 categorical columns one-hot encoded with sorted "
        f"categories, the missing-value marker '?' kept as a category of its own: "
        f"{X.shape[1]} features, as in the low-rank Swish paper. Target income "
        f"{list(classes)} -> indices 0..1. {_NOT_STANDARDISED}"
    )
    return _finish("adult", X, names, y, "classification", description, classes=classes)


def real_estate(contents: Sequence[bytes]) -> Parsed:
    """Real Estate Valuation from the CSV of UCI's workbook."""
    frame = _csv(contents[0])
    target = "Y house price of unit area"
    features = [c for c in frame.columns if c not in ("No", target)]
    X, names = _encode(frame, [(c, False) for c in features])
    y, target_range = _min_max(frame[target])
    description = (
        f"Real Estate Valuation (UCI 477) from the CSV of UCI's workbook: {X.shape[0]} sales x "
        f"{X.shape[1]} numeric features (X1..X6; the 'No' index column dropped). Target "
        f"'{target}' min-max scaled to [0, 1] from {target_range}. {_NOT_STANDARDISED}"
    )
    return _finish("real-estate", X, names, y, "regression", description, target_range=target_range)


_ABALONE_NAMES = [
    "Sex",
    "Length",
    "Diameter",
    "Height",
    "Whole_weight",
    "Shucked_weight",
    "Viscera_weight",
    "Shell_weight",
    "Rings",
]


def abalone(contents: Sequence[bytes]) -> Parsed:
    """Abalone from ``abalone.data``; target Rings."""
    frame = _csv(contents[0], header=None, names=_ABALONE_NAMES, keep_default_na=False)
    X, names = _encode(frame, [(c, c == "Sex") for c in _ABALONE_NAMES[:-1]])
    y, target_range = _min_max(frame["Rings"])
    description = (
        f"Abalone (UCI 1) from abalone.data: {X.shape[0]} shells; Sex (F, I, M) one-hot encoded "
        f"and 7 numeric measurements kept: {X.shape[1]} features. Target Rings min-max scaled to "
        f"[0, 1] from {target_range}. {_NOT_STANDARDISED}"
    )
    return _finish("abalone", X, names, y, "regression", description, target_range=target_range)


def wine_quality(contents: Sequence[bytes]) -> Parsed:
    """Wine Quality: red then white wines, with an ``is_red`` indicator; target quality."""
    red, white = (_csv(content, sep=";") for content in contents)
    red["is_red"], white["is_red"] = 1.0, 0.0
    frame = pd.concat([red, white], ignore_index=True)
    features = [c for c in frame.columns if c != "quality"]
    X, names = _encode(frame, [(c, False) for c in features])
    y, target_range = _min_max(frame["quality"])
    description = (
        f"Wine Quality (UCI 186): winequality-red.csv ({len(red)} rows) then "
        f"winequality-white.csv ({len(white)} rows) joined into {X.shape[0]} rows; the 11 "
        f"physicochemical columns plus an is_red indicator (1 red, 0 white): {X.shape[1]} "
        f"features. Target quality min-max scaled to [0, 1] from {target_range}. "
        f"{_NOT_STANDARDISED}"
    )
    return _finish("wine-quality", X, names, y, "regression", description, target_range=target_range)


_BIKE_DROPPED = ("instant", "dteday", "casual", "registered")


def bike_sharing(contents: Sequence[bytes]) -> Parsed:
    """Bike Sharing from ``hour.csv``; target cnt, without the leaking casual/registered counts."""
    frame = _csv(contents[0])
    features = [c for c in frame.columns if c not in (*_BIKE_DROPPED, "cnt")]
    X, names = _encode(frame, [(c, False) for c in features])
    y, target_range = _min_max(frame["cnt"])
    description = (
        f"Bike Sharing (UCI 275) from hour.csv: {X.shape[0]} hours; instant (row index) and "
        f"dteday (date string) dropped, and casual and registered dropped because they sum to "
        f"the target; the {X.shape[1]} remaining columns (season, yr, mnth, hr, holiday, "
        f"weekday, workingday, weathersit as their integer codes; temp, atemp, hum, windspeed "
        f"as UCI normalised them) kept as numbers. Target cnt min-max scaled to [0, 1] from "
        f"{target_range}. {_NOT_STANDARDISED}"
    )
    return _finish("bike-sharing", X, names, y, "regression", description, target_range=target_range)


PARSERS: dict[str, Callable[[Sequence[bytes]], Parsed]] = {
    "iris": iris,
    "rice": rice,
    "bank-marketing": bank_marketing,
    "adult": adult,
    "real-estate": real_estate,
    "abalone": abalone,
    "wine-quality": wine_quality,
    "bike-sharing": bike_sharing,
}
"""Parser per UCI data set; each takes the verified contents in the order of ``files.FILES``."""

CODED_CATEGORICALS: dict[str, tuple[str, ...]] = {
    "bike-sharing": ("season", "mnth", "hr", "weekday", "weathersit"),
}
"""Categorical columns that a data set's files store as integer codes and :func:`load` keeps as
numbers (0/1 columns such as Bike Sharing's yr, holiday, workingday are left out: one-hot adds
nothing to them). :func:`one_hot_codes` turns them into one-hot blocks on request."""


def one_hot_codes(X: np.ndarray, feature_names: Sequence[str], columns: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Replace each named integer-coded column of ``X``, in place, by its one-hot block.

    Categories are the column's distinct values sorted numerically, one indicator column each,
    named ``"column=code"`` (none dropped); other columns are kept as they are.

    Raises:
        ValueError: a name in ``columns`` is not in ``feature_names``, or ``X`` has not
            ``len(feature_names)`` columns.
    """
    X = np.asarray(X, dtype=np.float64)
    names = list(feature_names)
    if X.ndim != 2 or X.shape[1] != len(names):
        raise ValueError(f"`X` must be 2-D with {len(names)} columns (one per feature name), got shape {X.shape}")
    missing = [c for c in columns if c not in names]
    if missing:
        raise ValueError(f"`columns` must name features in {names}, got {missing}")
    blocks: list[np.ndarray] = []
    out_names: list[str] = []
    for index, name in enumerate(names):
        column = X[:, index]
        if name in columns:
            categories, codes = np.unique(column, return_inverse=True)
            blocks.append((codes[:, None] == np.arange(categories.size)).astype(np.float64))
            out_names.extend(f"{name}={c:g}" for c in categories)
        else:
            blocks.append(column[:, None])
            out_names.append(name)
    return np.hstack(blocks), out_names
