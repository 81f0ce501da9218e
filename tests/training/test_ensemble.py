"""The batched-ensemble trainer: each member equals `fit` of that member alone; bad input is named."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from structnets.models import dlor_mlp, lipschitz_resnet, mlp
from structnets.training import EnsembleEpoch, EnsembleResult, fit, seeded, train_ensemble

F64 = torch.float64
REL = 1e-10


def _mlps(seeds, width=8, out=1):
    models = []
    for s in seeds:
        with seeded(s):
            models.append(mlp(3, out, width, 2, activation="tanh", dtype=F64))
    return models


def _dlors(seeds):
    models = []
    for s in seeds:
        with seeded(s):
            models.append(dlor_mlp(3, 1, 5, 2, 2, mode="parallel", branches=2, activation="tanh", dtype=F64))
    return models


def _regression(n=48, seed=0, members=None):
    rng = np.random.default_rng(seed)
    shape = (n, 3) if members is None else (members, n, 3)
    X = rng.standard_normal(shape)
    return X, np.sin(X[..., 0]) + X[..., 1] * X[..., 2]


def _assert_close_state(a: nn.Module, b: nn.Module) -> None:
    for (name, x), (_, z) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        scale = float(z.abs().max())
        assert float((x - z).abs().max()) <= REL * max(scale, 1e-300), name


def _assert_same_history(result: EnsembleResult, index: int, alone) -> None:
    member = result.member(index)
    assert member.epochs_run == alone.epochs_run
    assert member.best_epoch == alone.best_epoch
    assert (member.stopped_early, member.restored_best, member.diverged) == (
        alone.stopped_early,
        alone.restored_best,
        alone.diverged,
    )
    np.testing.assert_allclose(member.train_loss, alone.train_loss, rtol=REL)
    np.testing.assert_allclose(member.val_loss, alone.val_loss, rtol=REL)
    assert member.best_loss == pytest.approx(alone.best_loss, rel=REL)


@pytest.mark.parametrize("build", [_mlps, _dlors], ids=["mlp", "dlor-parallel"])
@pytest.mark.parametrize("optimizer", ["adam", "adamw", "sgd"])
def test_shared_data_members_equal_fit_alone(build, optimizer):
    X, y = _regression()
    seeds = [3, 1, 4, 1]  # a repeated shuffle seed is allowed; the inits differ
    ensemble, alone = build(range(4)), build(range(4))
    options = dict(epochs=6, batch_size=10, lr=1e-2, weight_decay=1e-3, optimizer=optimizer, schedule="cosine")
    result = train_ensemble(ensemble, X, y, seeds=seeds, **options)
    assert result.models == tuple(ensemble)
    for e in range(4):
        reference = fit(alone[e], X, y, seed=seeds[e], **options)
        _assert_close_state(ensemble[e], alone[e])
        _assert_same_history(result, e, reference)
    # members really differ (different inits and orders): the test compares distinct runs
    first = [next(iter(m.state_dict().values())) for m in ensemble[:2]]
    assert not torch.equal(*first)


@pytest.mark.parametrize("build", [_mlps, _dlors], ids=["mlp", "dlor-parallel"])
def test_stacked_data_with_validation_and_early_stopping(build):
    E = 3
    X, y = _regression(n=30, members=E)
    X_val, y_val = _regression(n=12, seed=1, members=E)
    ensemble, alone = build(range(10, 10 + E)), build(range(10, 10 + E))
    options = dict(epochs=40, batch_size=8, lr=5e-2, patience=3, min_delta=1e-3)
    result = train_ensemble(ensemble, X, y, stacked=True, validation_data=(X_val, y_val), seeds=[0, 1, 2], **options)
    assert result.monitor == "val_loss"
    for e in range(E):
        reference = fit(alone[e], X[e], y[e], seed=e, validation_data=(X_val[e], y_val[e]), **options)
        _assert_close_state(ensemble[e], alone[e])
        _assert_same_history(result, e, reference)
    assert all(result.restored_best)
    assert len(set(result.epochs_run)) > 1, "members should stop at different epochs here"


def test_validation_fraction_and_classification_with_warmup():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((40, 3))
    y = (X[:, 0] + X[:, 1] ** 2 > 0.5).astype(np.int64) + (X[:, 2] > 1)
    ensemble, alone = _mlps(range(3), out=3), _mlps(range(3), out=3)
    options = dict(
        loss="cross_entropy",
        epochs=8,
        batch_size=7,
        lr=2e-2,
        validation_fraction=0.25,
        schedule="warmup_cosine",
        warmup_epochs=2,
        min_lr=1e-4,
    )
    result = train_ensemble(ensemble, X, y, seeds=[5, 6, 7], **options)
    for e in range(3):
        reference = fit(alone[e], X, y, seed=5 + e, **options)
        _assert_close_state(ensemble[e], alone[e])
        _assert_same_history(result, e, reference)


def test_callable_loss_full_batch_and_scheduler_factory():
    X, y = _regression(n=20)

    def huber(output, target):
        return nn.functional.huber_loss(output, target[:, None], delta=0.5)

    def factory(opt):
        return torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)

    ensemble, alone = _mlps(range(2)), _mlps(range(2))
    result = train_ensemble(ensemble, X, y, loss=huber, epochs=5, batch_size=None, lr=1e-2, schedule=factory)
    for e in range(2):
        reference = fit(alone[e], X, y, loss=huber, epochs=5, batch_size=None, lr=1e-2, schedule=factory, seed=e)
        _assert_close_state(ensemble[e], alone[e])
        _assert_same_history(result, e, reference)


@pytest.mark.parametrize("options", [{}, {"bound": "gram", "maxmin": True}, {"lift": "orthogonal"}], ids=str)
def test_certified_lipschitz_members_equal_fit_alone(options):
    # The certified layers differentiate through their spectral bound; under vmap that path must
    # be taken although a batched weight reports requires_grad=False.
    rng = np.random.default_rng(2)
    X = rng.standard_normal((30, 2))
    y = (X[:, 0] * X[:, 1] > 0).astype(np.int64)

    def build(seed):
        with seeded(seed):
            return lipschitz_resnet(2, 2, 6, 2, dtype=F64, **options)

    ensemble, alone = [build(s) for s in range(3)], [build(s) for s in range(3)]
    result = train_ensemble(ensemble, X, y, loss="cross_entropy", epochs=4, batch_size=8, lr=2e-2)
    for e in range(3):
        reference = fit(alone[e], X, y, loss="cross_entropy", epochs=4, batch_size=8, lr=2e-2, seed=e)
        _assert_close_state(ensemble[e], alone[e])
        _assert_same_history(result, e, reference)


@pytest.mark.parametrize(
    "build",
    [
        lambda: lipschitz_resnet(3, 1, 4, 1, bound="power", dtype=F64),
        lambda: nn.Sequential(nn.Linear(3, 4, dtype=F64), nn.BatchNorm1d(4, dtype=F64), nn.Linear(4, 1, dtype=F64)),
    ],
    ids=["power-iteration-vector", "batch-norm"],
)
def test_models_that_update_buffers_are_refused(build):
    X, y = _regression()
    models = [build(), build()]
    before = [[t.clone() for t in m.state_dict().values()] for m in models]
    with pytest.raises(ValueError, match="`models` change buffers in their training forward pass"):
        train_ensemble(models, X, y, epochs=1)
    for model, saved in zip(models, before, strict=True):  # refused before touching the models
        assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), saved, strict=True))


def test_callback_sees_losses_activity_and_current_predictions():
    E = 3
    X, y = _regression(n=30, members=E)
    X_test = torch.as_tensor(_regression(n=9, seed=5)[0])
    ensemble = _dlors(range(E))
    seen: list[EnsembleEpoch] = []
    outputs = []

    def callback(info: EnsembleEpoch) -> None:
        seen.append(info)
        outputs.append(info.predict(X_test))
        stacked = info.predict(torch.as_tensor(X[:, :4]), stacked=True)
        assert stacked.shape == (E, 4, 1)

    result = train_ensemble(
        ensemble, X, y, stacked=True, epochs=30, batch_size=8, lr=5e-2, patience=2, min_delta=1e-2, callback=callback
    )
    assert [info.epoch for info in seen] == list(range(len(seen)))
    assert len(seen) == max(result.epochs_run)
    for e in range(E):
        run = result.epochs_run[e]
        assert [info.train_loss[e] for info in seen[:run]] == list(result.train_loss[e])
        assert all(np.isnan(info.train_loss[e]) for info in seen[run:])
        assert [info.active[e] for info in seen] == [
            k + 1 < run or (k + 1 == run and run == 30) for k in range(len(seen))
        ]
        # the last prediction while active is the returned model's output (no best-state restore here)
        with torch.no_grad():
            final = ensemble[e](X_test)
        torch.testing.assert_close(outputs[run - 1][e], final, rtol=1e-12, atol=1e-12)
        assert all(torch.isnan(out[e]).all() for out in outputs[run:])
    assert len(set(result.epochs_run)) > 1


def test_frozen_parameters_stay_frozen():
    X, y = _regression()
    ensemble, alone = _mlps(range(2)), _mlps(range(2))
    for model in (*ensemble, *alone):
        model[0].weight.requires_grad_(False)
    before = [m[0].weight.clone() for m in ensemble]
    train_ensemble(ensemble, X, y, epochs=3, batch_size=16)
    for e in range(2):
        fit(alone[e], X, y, epochs=3, batch_size=16, seed=e)
        assert torch.equal(ensemble[e][0].weight, before[e])
        _assert_close_state(ensemble[e], alone[e])


def test_diverging_member_stops_alone():
    X, y = _regression(n=16)
    ensemble = _mlps(range(2))
    with torch.no_grad():
        ensemble[1][0].weight.fill_(float("nan"))
    result = train_ensemble(ensemble, X, y, epochs=4, batch_size=None, lr=1e-2)
    assert result.diverged == (False, True)
    assert result.epochs_run == (4, 1)
    assert all(np.isfinite(result.train_loss[0]))
    assert torch.isfinite(ensemble[0][0].weight).all()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"models": nn.Linear(3, 1)}, TypeError, "`models` must be a sequence"),
        ({"models": []}, ValueError, r"`len\(models\)` must be an int in \[1, 100000\], got 0"),
        ({"models": "ab"}, TypeError, "`models\\[0\\]` must be a torch.nn.Module"),
        ({"same": True}, ValueError, "`models` must be distinct modules"),
        ({"other": lambda: mlp(3, 1, 9, 2, dtype=F64)}, ValueError, r"`models\[1\]` must have the architecture"),
        ({"other": lambda: mlp(3, 1, 8, 2)}, ValueError, r"`models\[1\]` must have the architecture"),
        ({"seeds": [0]}, ValueError, r"`seeds` must hold one seed per model \(2\), got 1"),
        ({"seeds": [0, -1]}, ValueError, r"`seeds\[1\]` must be an int"),
        ({"seeds": 3}, TypeError, "`seeds` must be a sequence of 2 ints"),
        ({"stacked": 1}, TypeError, "`stacked` must be a bool"),
        ({"callback": "print"}, TypeError, "`callback` must be callable or None"),
        ({"stacked": True}, ValueError, r"`X` must be stacked per member, shape \(2, n, ...\), got \(48, 3\)"),
        ({"optimizer": "lbfgs"}, ValueError, "`optimizer` must be one of"),
        ({"epochs": 0}, ValueError, "`epochs` must be an int"),
        ({"schedule": "warmup_cosine"}, ValueError, "exactly one of `warmup_epochs` and `warmup_steps`"),
        ({"validation_fraction": 0.2, "validation_data": ([[0.0] * 3], [0.0])}, ValueError, "not both"),
        ({"y": np.zeros(47)}, ValueError, "`X` and `y` must have the same number of rows, got 48 and 47"),
        ({"X": np.zeros((48, 4))}, ValueError, "`X` of shape"),
        ({"loss": lambda out, t: (out - t) ** 2}, ValueError, r"`loss` must return a scalar per member"),
    ],
)
def test_bad_input_is_named(kwargs, error, match):
    X, y = _regression()
    models = _mlps(range(2))
    if kwargs.pop("same", False):
        models = [models[0], models[0]]
    if "other" in kwargs:
        models[1] = kwargs.pop("other")()
    models = kwargs.pop("models", models)
    X = kwargs.pop("X", X)
    y = kwargs.pop("y", y)
    with pytest.raises(error, match=match):
        train_ensemble(models, X, y, epochs=kwargs.pop("epochs", 2), **kwargs)
