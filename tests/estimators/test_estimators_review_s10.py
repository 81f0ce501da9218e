"""Adversarial review (s10) of MLPClassifier / MLPRegressor: data at extreme scales, float32 range, round trips."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone

from structnets.estimators import InvalidParameterError, MLPClassifier, MLPRegressor

OPTIONS = dict(width=8, depth=1, epochs=4, batch_size=16, random_state=0)


def _data(n: int = 40, d: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    return X, X[:, 0] - 0.5 * X[:, 1] + 0.1 * rng.normal(size=n)


@pytest.mark.parametrize("factor", [1e160, 1e300])
def test_huge_targets_are_standardised_not_made_infinite(factor):
    """The targets' std overflowed (their squares exceed float64): target_scale_ was inf and every prediction inf."""
    X, y = _data()
    small = MLPRegressor(**OPTIONS).fit(X, y)
    big = MLPRegressor(**OPTIONS).fit(X, y * factor)
    assert np.isfinite(big.target_scale_).all() and np.isfinite(big.target_mean_).all()
    np.testing.assert_allclose(big.target_scale_ / factor, small.target_scale_, rtol=1e-12)
    np.testing.assert_allclose(big.predict(X) / factor, small.predict(X), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("factor", [1e160, 1e-16, 1e-200])
def test_features_at_any_scale_are_standardised_alike(factor):
    """Standardised features do not depend on the units of X.

    At 1e160 the std overflowed to inf (every feature became 0, the classifier predicted one
    constant row); below 2.2e-15 a floor of 1 in the constant-column test called every column
    constant (only centred: features ~1e-16, the same constant predictions).
    """
    X, y = _data()
    labels = (y > 0).astype(int)
    reference = MLPClassifier(**OPTIONS).fit(X, labels)
    scaled = MLPClassifier(**OPTIONS).fit(X * factor, labels)
    np.testing.assert_allclose(scaled.feature_scale_ / factor, reference.feature_scale_, rtol=1e-12)
    np.testing.assert_allclose(scaled.predict_proba(X * factor), reference.predict_proba(X), rtol=1e-5, atol=1e-6)


def test_constant_columns_are_still_only_centred():
    X, y = _data()
    X[:, 1] = 0.1  # round-off makes its std ~1e-17, not 0
    X[:, 2] = 0.0
    model = MLPRegressor(**OPTIONS).fit(X, np.full(40, 3.7))
    assert model.feature_scale_[1] == 1.0 and model.feature_scale_[2] == 1.0
    assert model.target_scale_[0] == 1.0
    np.testing.assert_allclose(model.feature_mean_[1], 0.1, rtol=1e-15)


@pytest.mark.parametrize("what", ["X", "y"])
def test_values_beyond_float32_are_refused_by_name_not_called_infinite(what):
    """Finite data beyond float32's range, not standardised, were refused as "`X` must be finite, got 92 NaN or
    infinite entries" by the training loop: the data had none."""
    X, y = _data()
    if what == "X":
        model, X = MLPRegressor(standardize=False, **OPTIONS), X * 1e39
    else:
        model, y = MLPRegressor(standardize_target=False, **OPTIONS), y * 1e39
    with pytest.raises(ValueError, match=rf"`{what}`.*float32.*dtype='float64'"):
        model.fit(X, y)
    MLPRegressor(**{**OPTIONS, "dtype": "float64"}).set_params(standardize=False, standardize_target=False).fit(
        X, y
    )  # float64 holds them


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_unavailable_device_is_a_named_parameter_error():
    """device='cuda' on a CPU-only torch failed in fit with torch's bare AssertionError 'Torch not compiled with CUDA
    enabled' (not a ValueError: GridSearchCV's error_score and `except ValueError` missed it)."""
    X, y = _data()
    with pytest.raises(InvalidParameterError, match=r"`device`='cuda' cannot be used here"):
        MLPRegressor(device="cuda", **OPTIONS).fit(X, y)


def test_fitted_estimators_round_trip_through_pickle_and_clone():
    """Pickled and unpickled estimators predict the same numbers; a clone refits to the same numbers."""
    X, y = _data()
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    labels = np.where(y > 0, "yes", "no").astype(object)
    for model, target, output in (
        (MLPClassifier(**OPTIONS), labels, "predict_proba"),
        (MLPRegressor(**OPTIONS), np.stack([y, -y], axis=1), "predict"),
    ):
        model.fit(frame, target)
        again = pickle.loads(pickle.dumps(model))
        np.testing.assert_array_equal(getattr(again, output)(frame), getattr(model, output)(frame))
        np.testing.assert_array_equal(again.feature_names_in_, ["a", "b", "c"])
        refit = clone(model).fit(frame, target)
        np.testing.assert_array_equal(getattr(refit, output)(frame), getattr(model, output)(frame))
        assert clone(model).get_params() == model.get_params()


def test_inputs_that_overflow_once_standardised_are_refused_not_predicted_as_nan():
    """Features of scale 1e-200 are standardised by their std now (above); a row of 1e200 then overflows to inf once
    standardised: refused naming `X`, not fed to the network (whose output would be NaN), not blamed on standardize."""
    X, y = _data()
    model = MLPRegressor(**OPTIONS).fit(X * 1e-200, y)
    with pytest.raises(ValueError, match="`X` is beyond the float64 range .* once standardised"):
        model.predict(np.full((2, 3), 1e200))
