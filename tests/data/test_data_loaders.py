"""The eight UCI loaders on the real files: counts from PROVENANCE.md and the paper's setup."""

from __future__ import annotations

import numpy as np
import pytest

import structnets.data as data

# name -> (rows, features, class counts by label) for classification
CLASSIFICATION = {
    "iris": (150, 4, {"Iris-setosa": 50, "Iris-versicolor": 50, "Iris-virginica": 50}),
    "rice": (3810, 7, {"Cammeo": 1630, "Osmancik": 2180}),
    "bank-marketing": (45211, 51, {"no": 39922, "yes": 5289}),
    # adult.data (24720 / 7841) + adult.test (12435 / 3846)
    "adult": (48842, 108, {"<=50K": 37155, ">50K": 11687}),
}
# name -> (rows, features, original target (min, max))
REGRESSION = {
    "real-estate": (414, 6, (7.6, 117.5)),
    "abalone": (4177, 10, (1.0, 29.0)),
    "wine-quality": (6497, 12, (3.0, 9.0)),
    "bike-sharing": (17379, 12, (1.0, 977.0)),
}


def test_names_lists_every_data_set_in_order() -> None:
    assert data.names() == [
        "iris",
        "rice",
        "bank-marketing",
        "adult",
        "real-estate",
        "abalone",
        "wine-quality",
        "bike-sharing",
        "mnist",
    ]


@pytest.mark.parametrize("name", sorted(CLASSIFICATION))
def test_classification_shapes_and_class_counts(shared_data, name: str) -> None:
    rows, features, counts = CLASSIFICATION[name]
    ds = data.load(name)
    assert ds.name == name and ds.task == "classification"
    assert ds.X.shape == (rows, features) and ds.X.dtype == np.float64
    assert ds.y.shape == (rows,) and ds.y.dtype == np.int64
    assert len(ds.feature_names) == features == len(set(ds.feature_names))
    assert ds.classes == sorted(counts)  # index i <-> the i-th label in sorted order
    assert dict(zip(ds.classes, np.bincount(ds.y).tolist())) == counts
    assert ds.target_range is None and ds.split is None
    assert np.isfinite(ds.X).all()
    assert "not standardised" in ds.description


@pytest.mark.parametrize("name", sorted(REGRESSION))
def test_regression_target_scaled_to_unit_interval(shared_data, name: str) -> None:
    rows, features, target_range = REGRESSION[name]
    ds = data.load(name)
    assert ds.task == "regression" and ds.classes is None
    assert ds.X.shape == (rows, features) and ds.X.dtype == np.float64
    assert ds.y.shape == (rows,) and ds.y.dtype == np.float64
    assert ds.target_range == target_range
    assert ds.y.min() == 0.0 and ds.y.max() == 1.0  # both ends attained
    original = ds.unscale_target(ds.y)
    assert original.min() == target_range[0] and original.max() == target_range[1]
    assert "not standardised" in ds.description and "[0, 1]" in ds.description


def test_adult_has_the_papers_108_features(shared_data) -> None:
    ds = data.load("adult")
    numeric = [n for n in ds.feature_names if "=" not in n]
    assert numeric == [
        "age",
        "fnlwgt",
        "education-num",
        "capital-gain",
        "capital-loss",
        "hours-per-week",
    ]
    groups: dict[str, list[int]] = {}
    for index, feature in enumerate(ds.feature_names):
        if "=" in feature:
            groups.setdefault(feature.split("=")[0], []).append(index)
    sizes = {column: len(indices) for column, indices in groups.items()}
    assert sizes == {
        "workclass": 9,
        "education": 16,
        "marital-status": 7,
        "occupation": 15,
        "relationship": 6,
        "race": 5,
        "sex": 2,
        "native-country": 42,
    }
    for column, indices in groups.items():  # exactly one category per row
        assert (ds.X[:, indices].sum(axis=1) == 1).all(), column
    # '?' is its own category; these missing-value counts are the UCI ones over both files
    question = {
        c: ds.X[:, ds.feature_names.index(f"{c}=?")].sum() for c in ("workclass", "occupation", "native-country")
    }
    assert question == {"workclass": 2799, "occupation": 2809, "native-country": 857}
    assert all(not label.endswith(".") for label in ds.classes)


def test_iris_is_the_corrected_file_equal_to_scikit_learn(shared_data) -> None:
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    reference = sklearn_datasets.load_iris()
    ds = data.load("iris")
    np.testing.assert_array_equal(ds.X, reference.data)
    np.testing.assert_array_equal(ds.y, reference.target)
    # the two rows bezdekIris.data corrects (samples 35 and 38, 1-based)
    np.testing.assert_array_equal(ds.X[34], [4.9, 3.1, 1.5, 0.2])
    np.testing.assert_array_equal(ds.X[37], [4.9, 3.6, 1.4, 0.1])


def test_bank_one_hot_is_sorted_and_keeps_unknown(shared_data) -> None:
    ds = data.load("bank-marketing")
    months = [n.split("=")[1] for n in ds.feature_names if n.startswith("month=")]
    assert months == sorted(months) and len(months) == 12
    assert "education=unknown" in ds.feature_names and "poutcome=unknown" in ds.feature_names
    job = [i for i, n in enumerate(ds.feature_names) if n.startswith("job=")]
    assert len(job) == 12 and (ds.X[:, job].sum(axis=1) == 1).all()


def test_bike_sharing_drops_leaking_and_index_columns(shared_data) -> None:
    ds = data.load("bike-sharing")
    for dropped in ("casual", "registered", "instant", "dteday", "cnt"):
        assert dropped not in ds.feature_names
    assert ds.feature_names == [
        "season",
        "yr",
        "mnth",
        "hr",
        "holiday",
        "weekday",
        "workingday",
        "weathersit",
        "temp",
        "atemp",
        "hum",
        "windspeed",
    ]
    assert ds.unscale_target(ds.y).sum() == pytest.approx(3_292_679, abs=1e-6)  # PROVENANCE


def test_wine_joins_red_then_white_with_indicator(shared_data) -> None:
    ds = data.load("wine-quality")
    is_red = ds.X[:, ds.feature_names.index("is_red")]
    np.testing.assert_array_equal(is_red, np.r_[np.ones(1599), np.zeros(4898)])
    quality = np.rint(ds.unscale_target(ds.y)).astype(int)
    counts = dict(zip(*np.unique(quality, return_counts=True)))
    assert counts == {3: 30, 4: 216, 5: 2138, 6: 2836, 7: 1079, 8: 193, 9: 5}


def test_abalone_sex_one_hot_counts(shared_data) -> None:
    ds = data.load("abalone")
    assert ds.feature_names[:3] == ["Sex=F", "Sex=I", "Sex=M"]
    assert ds.X[:, :3].sum(axis=0).tolist() == [1307, 1342, 1528]


def test_real_estate_drops_row_index(shared_data) -> None:
    ds = data.load("real-estate")
    assert "No" not in ds.feature_names
    assert ds.feature_names[0] == "X1 transaction date"
    np.testing.assert_array_equal(ds.X[0], [2012.9166667, 32, 84.87882, 10, 24.98298, 121.54024])
    assert ds.unscale_target(ds.y[0]) == pytest.approx(37.9, rel=1e-15)


def test_load_returns_independent_writable_copies(shared_data) -> None:
    first = data.load("abalone")
    first.X[:] = -1.0
    first.y[:] = -1.0
    first.feature_names.clear()
    second = data.load("abalone")
    assert second.X.min() >= 0.0 and second.y.min() == 0.0
    assert len(second.feature_names) == 10
    assert second.X.flags.writeable and second.y.flags.writeable
