"""MLPClassifier / MLPRegressor: they learn, are seeded, standardise per fold, and fail clearly."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import load_iris
from sklearn.model_selection import GridSearchCV, cross_val_score

from structnets.estimators import InvalidParameterError, MLPClassifier, MLPRegressor
from structnets.nn import LowRankLinear
from structnets.training import evaluate


def _smooth_1d(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, size=(n, 1))
    return x, np.sin(np.pi * x[:, 0])


def _blobs(n: int = 120, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = rng.standard_normal((n, 3)) + 2.0 * y[:, None]
    return X, y


def test_classifier_reaches_high_accuracy_on_iris():
    X, y = load_iris(return_X_y=True)
    scores = cross_val_score(MLPClassifier(random_state=0), X, y, cv=5)
    assert scores.mean() > 0.93  # 0.967-0.973 over random_state 0-2


def test_regressor_fits_smooth_function():
    X, y = _smooth_1d(400)
    X_test, y_test = _smooth_1d(200, seed=1)
    model = MLPRegressor(width=32, epochs=300, batch_size=64, lr=1e-2, random_state=0).fit(X, y)
    rmse = np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2))
    assert rmse < 0.03  # y has std ~0.7
    assert model.history_["train_loss"][-1] < 0.02 * model.history_["train_loss"][0]
    assert model.n_iter_ == 300


def test_fit_reduces_loss():
    X, y = _blobs()
    clf = MLPClassifier(epochs=30, lr=1e-2, random_state=0).fit(X, y)
    losses = clf.history_["train_loss"]
    assert len(losses) == 30 and losses[-1] < 0.25 * losses[0]  # ~0.1 over seeds 0-4


def test_regressor_1d_and_2d_targets():
    X, y = _smooth_1d(64)
    Y = np.column_stack([y, 2.0 * y + 1.0])
    reg = MLPRegressor(epochs=5, random_state=0)
    assert reg.fit(X, y).predict(X).shape == (64,)
    assert reg.fit(X, Y).predict(X).shape == (64, 2)
    assert reg.fit(X, y[:, None]).predict(X).shape == (64, 1)
    assert reg.predict(X).dtype == np.float64


def test_same_random_state_same_predictions_different_differs():
    X, y = _blobs()
    p = [MLPClassifier(epochs=5, random_state=s).fit(X, y).predict_proba(X) for s in (0, 0, 1)]
    np.testing.assert_array_equal(p[0], p[1])
    assert np.abs(p[0] - p[2]).max() > 1e-4
    X, y = _smooth_1d(64)
    r = [MLPRegressor(epochs=5, random_state=s).fit(X, y).predict(X) for s in (3, 3, 4)]
    np.testing.assert_array_equal(r[0], r[1])
    assert np.abs(r[0] - r[2]).max() > 1e-4


def test_early_stopping_keeps_best_validation_epoch():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 5))
    y = X[:, 0] + rng.standard_normal(60)  # noisy: a wide network overfits quickly
    reg = MLPRegressor(
        width=256,
        epochs=400,
        batch_size=None,
        lr=1e-2,
        early_stopping=True,
        validation_fraction=0.3,
        patience=10,
        random_state=0,
    ).fit(X, y)
    result = reg.fit_result_
    assert result.stopped_early and reg.n_iter_ < 400
    assert result.restored_best and result.best_loss == min(result.val_loss)
    assert len(result.val_loss) == reg.n_iter_


def test_early_stopping_classifier_validation_loss_is_best():
    X, y = _blobs(200)
    clf = MLPClassifier(epochs=50, early_stopping=True, random_state=0).fit(X, y)
    assert clf.fit_result_.monitor == "val_loss"
    assert clf.fit_result_.best_loss == min(clf.history_["val_loss"])


def test_standardization_uses_training_statistics_only():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 2)) * [1.0, 100.0] + [1e4, -5e3]
    y = np.sin(X[:, 0] - 1e4) + (X[:, 1] + 5e3) / 100.0
    reg = MLPRegressor(epochs=100, lr=1e-2, random_state=0).fit(X[:200], y[:200])
    np.testing.assert_allclose(reg.feature_mean_, X[:200].mean(axis=0))
    np.testing.assert_allclose(reg.feature_scale_, X[:200].std(axis=0))
    # A row's prediction does not depend on the other rows predicted with it (no test statistics).
    full = reg.predict(X[200:])
    np.testing.assert_allclose(reg.predict(X[200:201]), full[:1], rtol=1e-12)
    np.testing.assert_allclose(reg.predict(X[200:][::-1])[::-1], full, rtol=1e-12)
    assert reg.score(X[200:], y[200:]) > 0.9  # the big offsets and scales were removed


def test_constant_column_gets_unit_scale():
    X, y = _blobs()
    X = np.column_stack([X, np.full(len(X), 7.0)])
    clf = MLPClassifier(epochs=5, random_state=0).fit(X, y)
    assert clf.feature_scale_[-1] == 1.0 and clf.feature_mean_[-1] == 7.0
    assert np.isfinite(clf.predict_proba(X)).all()


def test_standardize_false_keeps_raw_features():
    X, y = _blobs()
    clf = MLPClassifier(epochs=2, standardize=False, random_state=0).fit(X, y)
    assert clf.feature_mean_ is None and clf.feature_scale_ is None


def test_string_labels_binary_and_multiclass():
    X, y = _blobs(90)
    labels = np.array(["no", "yes"])[y]
    clf = MLPClassifier(epochs=20, random_state=0).fit(X, labels)
    assert list(clf.classes_) == ["no", "yes"]
    assert clf.decision_function(X).shape == (90,)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(X)), proba, rtol=1e-10)
    # Binary decision function is logit(classes_[1]) − logit(classes_[0]).
    positive = (clf.decision_function(X) > 0).astype(int)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[positive])
    three = np.array(["a", "b", "c"])[np.arange(90) % 3]
    clf3 = MLPClassifier(epochs=2, random_state=0).fit(X, three)
    assert clf3.decision_function(X).shape == (90, 3)
    assert set(clf3.predict(X)) <= {"a", "b", "c"}


def test_bottleneck_builds_low_rank_layers():
    X, y = _blobs()
    clf = MLPClassifier(width=30, depth=4, bottleneck=1 / 3, epochs=1, random_state=0).fit(X, y)
    low_rank = [m for m in clf.model_.modules() if isinstance(m, LowRankLinear)]
    assert len(low_rank) == 3 and all(m.rank == 10 for m in low_rank)
    dense = MLPClassifier(width=30, depth=4, epochs=1, random_state=0).fit(X, y)
    assert not any(isinstance(m, LowRankLinear) for m in dense.model_.modules())
    ranked = MLPRegressor(width=12, depth=2, bottleneck=3, epochs=1).fit(X, y.astype(float))
    assert [m.rank for m in ranked.model_.modules() if isinstance(m, LowRankLinear)] == [3]


def test_float64_dtype():
    X, y = _blobs()
    clf = MLPClassifier(epochs=2, dtype="float64", random_state=0).fit(X, y)
    assert all(p.dtype == torch.float64 for p in clf.model_.parameters())


def test_fitted_model_matches_reported_validation_loss():
    X, y = _blobs(100)
    clf = MLPClassifier(epochs=20, early_stopping=True, random_state=0).fit(X, y)
    # The full-data loss of the returned model is finite and the model is a torch module.
    X_std = ((X - clf.feature_mean_) / clf.feature_scale_).astype(np.float32)
    assert np.isfinite(evaluate(clf.model_, X_std, y, loss="cross_entropy"))


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("width", 0),
        ("depth", 0),
        ("bottleneck", 100),
        ("bottleneck", 0.0),
        ("activation", "softsign"),
        ("epochs", 0),
        ("epochs", 1.5),
        ("batch_size", 0),
        ("lr", 0.0),
        ("lr", -1e-3),
        ("weight_decay", -1.0),
        ("optimizer", "rmsprop"),
        ("early_stopping", "yes"),
        ("validation_fraction", 1.0),
        ("validation_fraction", 0.0),
        ("patience", 0),
        ("standardize", 1),
        ("random_state", "seed"),
        ("dtype", "float16"),
        ("device", "gpu0"),
    ],
)
@pytest.mark.parametrize("cls", [MLPClassifier, MLPRegressor])
def test_bad_params_raise_at_fit_naming_them(cls, param, value):
    X, y = _blobs(20)
    estimator = cls(**{param: value})  # the constructor only stores
    assert estimator.get_params()[param] == value
    with pytest.raises(ValueError, match=f"`{param}`") as info:
        estimator.fit(X, y)
    assert isinstance(info.value, InvalidParameterError)


def test_regressor_bad_standardize_target():
    X, y = _smooth_1d(10)
    with pytest.raises(ValueError, match="`standardize_target`"):
        MLPRegressor(standardize_target="no").fit(X, y)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_feature_names_column_index(bad):
    X, y = _blobs(20)
    X[5, 2] = bad
    with pytest.raises(ValueError, match=r"column 2\b"):
        MLPClassifier(epochs=1).fit(X, y)
    X_ok, _ = _blobs(20)
    clf = MLPClassifier(epochs=1).fit(X_ok, y)
    with pytest.raises(ValueError, match=r"column 2\b"):
        clf.predict(X)


def test_non_finite_feature_names_dataframe_column():
    X, y = _blobs(20)
    frame = pd.DataFrame(X, columns=["height", "weight", "age"])
    reg = MLPRegressor(epochs=1).fit(frame, y.astype(float))
    assert list(reg.feature_names_in_) == ["height", "weight", "age"]
    frame.loc[3, "weight"] = np.nan
    with pytest.raises(ValueError, match="'weight'"):
        MLPRegressor(epochs=1).fit(frame, y.astype(float))
    with pytest.raises(ValueError, match="'weight'"):
        reg.predict(frame)


def test_one_class_is_an_error():
    X, _ = _blobs(10)
    with pytest.raises(ValueError, match="class"):
        MLPClassifier(epochs=1).fit(X, np.zeros(10, dtype=int))


def test_grid_search_and_cross_val_score():
    X, y = load_iris(return_X_y=True)
    search = GridSearchCV(
        MLPClassifier(epochs=30, batch_size=32, lr=1e-2, random_state=0),
        {"width": [8, 16], "bottleneck": [None, 2]},
        cv=3,
    ).fit(X, y)
    assert set(search.best_params_) == {"width", "bottleneck"}
    assert search.best_score_ > 0.9
    Xr, yr = _smooth_1d(90)
    scores = cross_val_score(MLPRegressor(epochs=50, lr=1e-2, random_state=0), Xr, yr, cv=3)
    assert scores.shape == (3,) and scores.min() > 0.5


def test_fit_never_prints(capsys):
    X, y = _blobs(30)
    MLPClassifier(epochs=3, early_stopping=True).fit(X, y).predict(X)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


class _StopAfterInit(Exception):
    pass


@pytest.mark.parametrize("device", ["meta", "cpu"])
def test_initial_weights_are_drawn_on_the_cpu_whatever_the_device(monkeypatch, device):
    """A seed gives the same initial weights on every device: the net is drawn on the CPU, then moved."""
    import structnets.estimators as estimators_module

    drawn: dict[str, dict[str, torch.Tensor]] = {}
    real_mlp = estimators_module.mlp

    def recording_mlp(*args, **kwargs):
        module = real_mlp(*args, **kwargs)
        drawn["state"] = {k: v.detach().clone() for k, v in module.state_dict().items()}
        original_to = module.to

        def to_then_stop(*to_args, **to_kwargs):
            moved = original_to(*to_args, **to_kwargs)
            drawn["moved_to"] = {str(p.device) for p in moved.parameters()}
            raise _StopAfterInit

        module.to = to_then_stop  # type: ignore[method-assign]
        return module

    monkeypatch.setattr(estimators_module, "mlp", recording_mlp)
    X, y = _smooth_1d(50)
    with pytest.raises(_StopAfterInit):
        MLPRegressor(width=8, epochs=1, random_state=3, device=device).fit(X, y)
    assert drawn["moved_to"] == {device}
    assert all(t.device.type == "cpu" for t in drawn["state"].values())
    # the same seed drawn for a plain CPU estimator gives the same numbers
    reference = MLPRegressor(width=8, epochs=1, random_state=3)
    monkeypatch.setattr(estimators_module, "mlp", real_mlp)
    cpu_drawn: dict[str, dict[str, torch.Tensor]] = {}

    def recording_cpu_mlp(*args, **kwargs):
        module = real_mlp(*args, **kwargs)
        cpu_drawn["state"] = {k: v.detach().clone() for k, v in module.state_dict().items()}
        return module

    monkeypatch.setattr(estimators_module, "mlp", recording_cpu_mlp)
    reference.fit(X, y)
    for name, value in drawn["state"].items():
        assert torch.equal(value, cpu_drawn["state"][name]), name
