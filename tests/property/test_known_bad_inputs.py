"""Bad inputs once accepted, mis-reported or crashing: each now refused naming the argument,
and the nearby valid inputs still give the documented result."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import structnets.analysis as analysis
import structnets.data as data
import structnets.models as models
import structnets.training as training
from structnets.estimators import MLPClassifier, MLPRegressor


def _regressor(in_features=5):
    torch.manual_seed(0)
    return models.mlp(in_features, 1, 8, 2)


def test_string_bool_for_grid_is_refused_and_numpy_bool_accepted():
    with pytest.raises(TypeError, match="`grid` must be a bool, got 'False'"):
        data.make_sawtooth(4, grid="False")
    X, y = data.make_sawtooth(4, grid=np.bool_(True))
    np.testing.assert_array_equal(X[:, 0], [0.0, 1 / 3, 2 / 3, 1.0])


def test_evaluate_refuses_targets_that_would_broadcast():
    model = _regressor()
    X = torch.rand(40, 5, dtype=torch.float32)
    y = torch.rand(40)
    with pytest.raises(ValueError, match=r"`y` has per-sample shape \(1, 1\)"):
        training.evaluate(model, X, y.reshape(40, 1, 1))
    # the valid shapes give the mean squared error against the (40, 1) output
    with torch.no_grad():
        expected = float(((model(X) - y[:, None]) ** 2).mean())
    assert training.evaluate(model, X, y) == pytest.approx(expected, rel=1e-6)
    assert training.evaluate(model, X, y[:, None]) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("where", ["X", "y"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_fit_and_evaluate_refuse_non_finite_data(where, bad):
    X, y = np.random.default_rng(0).random((30, 5)), np.random.default_rng(1).random(30)
    (X if where == "X" else y)[3] = bad
    with pytest.raises(ValueError, match=f"`{where}` must be finite"):
        training.fit(_regressor(), X, y, epochs=1)
    with pytest.raises(ValueError, match=f"`{where}` must be finite"):
        training.evaluate(_regressor(), X, y)


def test_fit_names_X_when_the_model_cannot_take_it():
    with pytest.raises(ValueError, match=r"`X` of shape \(30, 4\) cannot be fed to `model`"):
        training.fit(_regressor(), np.ones((30, 4)), np.ones(30), epochs=1)


def test_cross_entropy_labels_outside_the_outputs_are_refused():
    torch.manual_seed(0)
    model = models.mlp(3, 3, 4, 1)
    X = np.random.default_rng(0).random((12, 3))
    with pytest.raises(ValueError, match=r"`y` must hold class indices in \[0, 3\)"):
        training.evaluate(model, X, np.arange(12) % 4, loss="cross_entropy")
    with pytest.raises(ValueError, match=r"`y` must hold class indices in \[0, 3\)"):
        training.fit(model, X, np.arange(12) % 3 - 1, loss="cross_entropy", epochs=1)


def test_certified_accuracy_refuses_float_labels_but_takes_integral_floats():
    logits = torch.tensor([[2.0, 0.0], [0.0, 2.0], [1.0, 0.9], [0.0, 3.0]])
    with pytest.raises(ValueError, match="`labels` must hold integer class indices"):
        analysis.certified_accuracy(logits, torch.rand(4), 0.1)
    labels = torch.tensor([0, 1, 0, 0])
    # margins 2, 2, 0.1, -3: at eps=0.1 the certificate needs margin >= sqrt(2)*0.1
    assert analysis.certified_accuracy(logits, labels, 0.1) == 0.5
    assert analysis.certified_accuracy(logits, labels.double(), 0.1) == 0.5
    with pytest.raises(ValueError, match="`logits` must be finite"):
        analysis.certified_accuracy(logits * torch.tensor([1.0, float("nan")]), labels, 0.1)


def test_bottleneck_width_refuses_a_negative_width():
    with pytest.raises(ValueError, match="`width` must be an int >= 1, got -7"):
        models.bottleneck_width(-7, 1 / 3)
    assert models.bottleneck_width(9, 1 / 3) == 3


def test_lipschitz_lower_bound_names_seed():
    with pytest.raises(TypeError, match="`seed` must be an int"):
        analysis.lipschitz_lower_bound(_regressor(), np.ones((3, 5)), seed=None)


def test_jacobian_norms_take_numpy_inputs_like_tensors():
    model = _regressor().double()
    x = np.random.default_rng(0).random((3, 5))
    from_numpy = analysis.jacobian_spectral_norms(model, x)
    from_tensor = analysis.jacobian_spectral_norms(model, torch.from_numpy(x))
    torch.testing.assert_close(from_numpy, from_tensor, rtol=0, atol=0)
    # a linear model's Jacobian norm is its weight's spectral norm, at every point
    linear = torch.nn.Linear(5, 2).double()
    norms = analysis.jacobian_spectral_norms(linear, x)
    torch.testing.assert_close(norms, torch.linalg.matrix_norm(linear.weight.detach(), 2).expand(3))
    with pytest.raises(ValueError, match=r"`model` cannot be applied to `inputs` of shape \(3, 4\)"):
        analysis.jacobian_spectral_norms(model, np.ones((3, 4)))


def test_load_refuses_a_string_download_flag(tmp_path):
    with pytest.raises(TypeError, match="`download`"):
        data.load("iris", data_dir=tmp_path, download="False")


def test_dlor_mlp_names_the_features_that_exceed_width():
    with pytest.raises(ValueError, match="`in_features`"):
        models.dlor_mlp(10**30, 1, 4, 2, 1)


def test_estimators_name_X_and_y_keeping_scikit_learns_wording():
    X = np.random.default_rng(0).random((20, 3))
    with pytest.raises(ValueError, match="`X` is invalid: Expected 2D array"):
        MLPRegressor(epochs=1).fit(X[:, 0], np.ones(20))
    with pytest.raises(ValueError, match="`X` and `y` are invalid: Found input variables with inconsistent"):
        MLPRegressor(epochs=1).fit(X, np.ones(5))
    with pytest.raises(ValueError, match="`y` is invalid: Input y contains NaN"):
        MLPClassifier(epochs=1).fit(X, np.full(20, np.nan))
    with pytest.raises(ValueError, match="`y`"):
        MLPRegressor(epochs=1).fit(X, np.array(["a"] * 20))
