"""Data sets for the structnets experiments: eight UCI sets and MNIST, verified and preprocessed.

``load(name)`` returns a :class:`Dataset` with float64 features ``X``, targets ``y``, ``task``,
``feature_names``, ``classes`` / ``target_range`` and a ``description`` of the preprocessing.

Where files come from. A file is looked for in the ``data_dir`` argument, then the folder in
``$STRUCTNETS_DATA``, then the user cache ``~/.cache/structnets``, under its original name or with
``.gz`` appended; otherwise the official archive is downloaded into the cache (written atomically).
Every copy must match the pinned SHA-256 of its decompressed content, else :class:`DataFileError`
names the file and both digests. ``data_dir()`` says which folder comes first and ``verify()``
checks every file without downloading (``structnets data path|verify``).

Preprocessing (the setup of the UCI reproduction of Li et al., *Approximation to Smooth Functions
by Low-Rank Swish Networks*, ICML 2025). Categorical columns are one-hot encoded, categories
sorted, one column per category (``"column=category"``). Features are NOT standardised: that must
happen inside each training fold (in the estimator or pipeline) to avoid leakage. Class labels
become indices into the sorted labels (``classes``). Regression targets are min-max scaled to
[0, 1] (so RMSE is on the paper's scale); ``target_range`` holds the original (min, max) and
``Dataset.unscale_target`` maps predictions back.

==============  ======================================================  =========  ========
name            source and preprocessing                                X          task
==============  ======================================================  =========  ========
iris            ``bezdekIris.data`` (corrected, = scikit-learn's)       150×4      3 classes
rice            ``Rice_Cammeo_Osmancik.arff``                           3810×7     2 classes
bank-marketing  ``bank-full.csv``; 9 categoricals one-hot               45211×51   2 classes
adult           ``adult.data`` + ``adult.test``; 8 categoricals one-hot  48842×108  2 classes
                with ``?`` kept as a category
real-estate     CSV of UCI's workbook; ``No`` dropped; target Y         414×6      regression
abalone         ``abalone.data``; Sex one-hot; target Rings             4177×10    regression
wine-quality    red + white joined, ``is_red`` added; target quality    6497×12    regression
bike-sharing    ``hour.csv``; instant, dteday, casual, registered        17379×12   regression
                dropped; target cnt
mnist           IDX files; pixels / 255; 60000 train rows then 10000     70000×784  10 classes
                test rows, marked by ``Dataset.split``
==============  ======================================================  =========  ========

Non-finite feature values are an error naming the column (:func:`check_finite`, which the
estimators reuse).
"""

from .dataset import Dataset, check_finite
from .files import DataFileError, FileStatus, cache_dir, data_dir, verify
from .loader import load, names
from .moons import make_moons
from .sawtooth import make_sawtooth, sawtooth, triangle_wave  # synthetic DLoR targets
from .smooth_targets import SmoothTarget, lacunary_target, power_target, sine_target  # noqa: F401

__all__ = [
    "DataFileError",
    "Dataset",
    "FileStatus",
    "cache_dir",
    "check_finite",
    "data_dir",
    "load",
    "make_moons",
    "names",
    "verify",
]
__all__ += ["make_sawtooth", "sawtooth", "triangle_wave"]
__all__ += ["SmoothTarget", "lacunary_target", "power_target", "sine_target"]
