"""Argument checks: unknown names, non-finite features, and the Dataset invariants."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
from pathlib import Path

import numpy as np
import pytest

import structnets.data as data
from structnets.data import Dataset, check_finite, files


def test_unknown_name_lists_the_valid_names() -> None:
    with pytest.raises(ValueError, match=r"`name` must be one of \[") as caught:
        data.load("irs")
    message = str(caught.value)
    assert "'irs'" in message
    for name in data.names():
        assert repr(name) in message
    with pytest.raises(TypeError, match=r"`name` must be a str"):
        data.load(None)  # type: ignore[arg-type]


def test_check_finite_names_the_first_bad_column() -> None:
    X = np.zeros((5, 4))
    X[3, 2] = np.nan
    X[1, 2] = np.inf
    X[4, 3] = -np.inf
    with pytest.raises(ValueError) as caught:
        check_finite(X, ["a", "b", "c", "d"], argument="X_train")
    message = str(caught.value)
    assert "`X_train`" in message and "'c' (index 2)" in message
    assert "2 non-finite" in message and "first in row 1" in message and "2 columns" in message
    X[:, 2] = 0.0  # without names the column is given by index
    pattern = r"but column 3 has 1 non-finite value\(s\).*first in row 4$"
    with pytest.raises(ValueError, match=pattern):
        check_finite(X)


def test_check_finite_accepts_finite_and_rejects_bad_input() -> None:
    X = np.arange(6.0).reshape(3, 2)
    assert check_finite(X) is X
    assert check_finite(np.array([[1, 2]], dtype=np.int64)).dtype == np.int64
    with pytest.raises(ValueError, match=r"`X` must be 2-D.*\(3,\)"):
        check_finite(np.ones(3))
    with pytest.raises(TypeError, match=r"numeric dtype"):
        check_finite(np.array([["a"]], dtype=object))
    pattern = r"`feature_names` must have one name per column.*\(2\), got 3"
    with pytest.raises(ValueError, match=pattern):
        check_finite(X, ["a", "b", "c"])


def test_load_rejects_non_finite_features_naming_the_column(monkeypatch, tmp_path: Path, content_of) -> None:
    # A NaN that passes the digest check (the pinned digest is replaced for this test) must
    # still be caught, by feature name, before a Dataset is returned.
    content = content_of("bezdekIris.data").replace(b"5.1,3.5,1.4,0.2", b"5.1,nan,1.4,0.2", 1)
    (tmp_path / "bezdekIris.data.gz").write_bytes(gzip.compress(content))
    spec = dataclasses.replace(files.FILES["iris"][0], sha256=hashlib.sha256(content).hexdigest())
    monkeypatch.setitem(files.FILES, "iris", (spec,))
    with pytest.raises(ValueError, match=r"'sepal width \(cm\)' \(index 1\) has 1 non-finite"):
        data.load("iris", data_dir=tmp_path)


def test_dataset_checks_its_invariants() -> None:
    X = np.zeros((3, 2))
    ok = Dataset("t", X, np.array([0, 1, 1]), "classification", ["a", "b"], classes=["x", "y"])
    assert ok.n_samples == 3 and ok.n_features == 2 and ok.n_classes == 2
    pattern = r"`y` must hold class indices in \[0, 1\], got range \[0, 2\]"
    with pytest.raises(ValueError, match=pattern):
        Dataset("t", X, np.array([0, 1, 2]), "classification", ["a", "b"], classes=["x", "y"])
    with pytest.raises(ValueError, match=r"`feature_names` must have one name per column"):
        Dataset("t", X, np.array([0, 1, 1]), "classification", ["a"], classes=["x", "y"])
    with pytest.raises(ValueError, match=r"`task` must be one of"):
        Dataset("t", X, np.zeros(3), "ranking", ["a", "b"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"`target_range` must be set"):
        Dataset("t", X, np.zeros(3), "regression", ["a", "b"])
    with pytest.raises(ValueError, match=r"needs a regression data set"):
        ok.unscale_target([0.5])
    y = np.array([0.0, 0.5, 1.0])
    reg = Dataset("r", X, y, "regression", ["a", "b"], target_range=(2.0, 6.0))
    np.testing.assert_array_equal(reg.unscale_target(reg.y), [2.0, 4.0, 6.0])
    with pytest.raises(dataclasses.FrozenInstanceError):
        reg.name = "other"  # type: ignore[misc]
