"""The fit loop: it learns, is seeded, restores the best weights, and rejects bad arguments."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
import torch
from torch import nn

from structnets.models import mlp
from structnets.training import FitResult, evaluate, fit, seeded
from structnets.training.fit import _FusedAdam

# The modules themselves: `structnets.training.fit` the attribute is the function of that name.
fit_module = sys.modules["structnets.training.fit"]
adam_module = sys.modules["structnets.training._adam"]


def _regression(n: int = 256, d: int = 3, seed: int = 0, noise: float = 0.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(np.float32)
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] * X[:, 2] + noise * rng.standard_normal(n)
    return X, y.astype(np.float32)


def _model(seed: int = 0, d: int = 3, out: int = 1, width: int = 32, depth: int = 2) -> nn.Module:
    with seeded(seed):
        return mlp(d, out, width, depth)


def _weights(model: nn.Module) -> list[torch.Tensor]:
    return [t.detach().clone() for t in model.state_dict().values()]


def test_fit_reduces_loss_on_smooth_target():
    X, y = _regression()
    model = _model()
    before = evaluate(model, X, y)
    result = fit(model, X, y, epochs=150, batch_size=64, lr=3e-3)
    after = evaluate(model, X, y)
    assert isinstance(result, FitResult)
    assert result.epochs_run == 150 == len(result.train_loss)
    assert result.val_loss == ()
    assert result.monitor == "train_loss"
    assert not result.stopped_early and not result.diverged and not result.restored_best
    assert after < 0.05 * before
    assert result.train_loss[-1] < 0.1 * result.train_loss[0]
    assert result.wall_time > 0


def test_full_batch_first_epoch_loss_is_initial_loss():
    # Full batch: epoch 0's loss is computed on the initial weights, before the only step.
    X, y = _regression(n=100)
    model = _model()
    initial = evaluate(model, X, y)
    result = fit(model, X, y, epochs=3, batch_size=None)
    assert result.train_loss[0] == pytest.approx(initial, rel=1e-6)


def test_epoch_loss_is_sample_weighted_mean_of_batches():
    X, y = _regression(n=50)
    model = _model()
    initial = evaluate(model, X, y)
    # lr tiny: the weights barely move, so the epoch mean ~ the loss of the initial weights,
    # which holds only if the short last batch (50 = 3·16 + 2) is weighted by its size.
    result = fit(model, X, y, epochs=1, batch_size=16, lr=1e-9)
    assert result.train_loss[0] == pytest.approx(initial, rel=1e-5)


def test_batch_size_at_least_n_is_full_batch():
    X, y = _regression(n=64)
    results = []
    for batch_size in (None, 64, 1000):
        model = _model()
        fit(model, X, y, epochs=5, batch_size=batch_size, seed=3)
        results.append(_weights(model))
    for other in results[1:]:
        assert all(torch.equal(a, b) for a, b in zip(results[0], other, strict=True))


def test_same_seed_same_weights_different_seed_different():
    X, y = _regression()
    runs = {}
    for key, (init, shuffle) in {"a": (0, 0), "b": (0, 0), "c": (0, 1), "d": (1, 0)}.items():
        model = _model(init)
        result = fit(model, X, y, epochs=5, batch_size=32, seed=shuffle, validation_fraction=0.2)
        runs[key] = (_weights(model), result)
    same = all(torch.equal(a, b) for a, b in zip(runs["a"][0], runs["b"][0], strict=True))
    assert same and runs["a"][1].train_loss == runs["b"][1].train_loss
    for key in ("c", "d"):
        assert not all(torch.equal(a, b) for a, b in zip(runs["a"][0], runs[key][0], strict=True))


def test_seeded_fixes_init_and_restores_global_rng():
    torch.manual_seed(123)
    state = torch.random.get_rng_state()
    with seeded(7):
        first = _weights(mlp(3, 1, 8, 2))
    assert torch.equal(torch.random.get_rng_state(), state)
    with seeded(7):
        second = _weights(mlp(3, 1, 8, 2))
    with seeded(8):
        third = _weights(mlp(3, 1, 8, 2))
    assert all(torch.equal(a, b) for a, b in zip(first, second, strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(first, third, strict=True))


def test_fit_leaves_global_rng_and_threads_alone():
    X, y = _regression(n=64)
    model = _model()
    threads = torch.get_num_threads()
    state = torch.random.get_rng_state()
    fit(model, X, y, epochs=3, batch_size=16, validation_fraction=0.25)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert torch.get_num_threads() == threads


def test_early_stopping_restores_best_weights():
    # Few noisy rows, a big model and a large step: validation loss turns up quickly.
    X, y = _regression(n=40, noise=0.5, seed=1)
    X_val, y_val = _regression(n=200, noise=0.5, seed=2)
    model = _model(width=128)
    result = fit(
        model,
        X,
        y,
        epochs=500,
        batch_size=None,
        lr=1e-2,
        validation_data=(X_val, y_val),
        patience=15,
    )
    assert result.monitor == "val_loss" and result.restored_best
    assert result.stopped_early and result.epochs_run < 500
    assert result.best_epoch == int(np.argmin(result.val_loss))
    assert result.best_epoch < result.epochs_run - 1
    assert result.best_loss == min(result.val_loss)
    # The returned model is the best epoch's model, not the last one.
    assert evaluate(model, X_val, y_val) == pytest.approx(result.best_loss, rel=1e-6)
    assert result.val_loss[-1] > result.best_loss


def test_validation_without_patience_still_restores_best():
    X, y = _regression(n=40, noise=0.5, seed=1)
    X_val, y_val = _regression(n=200, noise=0.5, seed=2)
    model = _model(width=128)
    result = fit(model, X, y, epochs=120, batch_size=None, lr=1e-2, validation_data=(X_val, y_val))
    assert result.epochs_run == 120 and not result.stopped_early
    assert evaluate(model, X_val, y_val) == pytest.approx(min(result.val_loss), rel=1e-6)


def test_validation_fraction_holds_out_rows():
    X, y = _regression(n=100)
    result = fit(_model(), X, y, epochs=2, validation_fraction=0.2)
    assert len(result.val_loss) == 2 and result.monitor == "val_loss"


def test_patience_on_training_loss_stops():
    X, y = _regression(n=64)
    # With lr ~ 0 the training loss cannot improve by min_delta, so patience runs out.
    result = fit(_model(), X, y, epochs=100, lr=1e-12, patience=3, min_delta=1e-3)
    assert result.stopped_early and result.epochs_run == 4 and result.best_epoch == 0


def test_cross_entropy_learns_linearly_separable_classes():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 2)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 0).astype(np.int64) + (X[:, 0] > 1).astype(np.int64)
    model = _model(d=2, out=3)
    fit(model, X, y, loss="cross_entropy", epochs=100, batch_size=32, lr=1e-2)
    with torch.no_grad():
        predicted = model(torch.from_numpy(X)).argmax(dim=1).numpy()
    assert (predicted == y).mean() > 0.95


@pytest.mark.parametrize("decoupled", [False, True])
def test_fused_adam_matches_torch_adam_bitwise(decoupled):
    X, y = _regression(n=64)
    X_t, y_t = torch.from_numpy(X), torch.from_numpy(y)[:, None]
    ours, reference = _model(), _model()
    params = list(ours.parameters())
    assert _FusedAdam.supports(params)
    opt = _FusedAdam(params, lr=1e-2, weight_decay=0.1, decoupled=decoupled)
    cls = torch.optim.AdamW if decoupled else torch.optim.Adam
    ref_opt = cls(reference.parameters(), lr=1e-2, weight_decay=0.1, fused=True)
    for i in range(20):
        rows = slice(8 * (i % 8), 8 * (i % 8) + 8)
        for model, optimizer in ((ours, opt), (reference, ref_opt)):
            optimizer.zero_grad()
            nn.functional.mse_loss(model(X_t[rows]), y_t[rows]).backward()
            optimizer.step()
    assert all(torch.equal(a, b) for a, b in zip(_weights(ours), _weights(reference), strict=True))


def test_callable_loss_and_optimizer_factory():
    X, y = _regression(n=64)
    calls = []

    def l1(output, target):
        return (output - target[:, None]).abs().mean()

    def factory(params):
        calls.append(1)
        return torch.optim.SGD(params, lr=1e-2)

    result = fit(_model(), X, y, loss=l1, optimizer=factory, epochs=20, batch_size=16)
    assert calls == [1]
    assert result.train_loss[-1] < result.train_loss[0]


def test_callback_gets_every_epoch_and_nothing_is_printed(capsys):
    X, y = _regression(n=32)
    seen = []
    fit(_model(), X, y, epochs=4, validation_fraction=0.25, callback=lambda e, logs: seen.append((e, sorted(logs))))
    assert seen == [(e, ["train_loss", "val_loss"]) for e in range(4)]
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_divergence_stops_and_is_reported():
    X, y = _regression(n=64)
    result = fit(_model(), X * 1e3, y, epochs=50, lr=1e6, optimizer="sgd", batch_size=None)
    assert result.diverged and result.epochs_run < 50
    assert not math.isfinite(result.train_loss[-1])


def test_float64_model_trains_in_float64():
    X, y = _regression(n=32)
    with seeded(0):
        model = mlp(3, 1, 8, 2, dtype=torch.float64)
    result = fit(model, X, y, epochs=3)
    assert all(p.dtype == torch.float64 for p in model.parameters())
    assert result.epochs_run == 3


def test_mse_never_broadcasts_mismatched_outputs():
    X, y = _regression(n=32)
    with pytest.raises(ValueError, match="outputs"):
        fit(_model(out=2), X, y, epochs=1)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"epochs": 0}, "epochs"),
        ({"batch_size": 0}, "batch_size"),
        ({"lr": 0.0}, "lr"),
        ({"lr": -1.0}, "lr"),
        ({"weight_decay": -0.1}, "weight_decay"),
        ({"validation_fraction": 1.0}, "validation_fraction"),
        ({"patience": 0}, "patience"),
        ({"min_delta": -1.0}, "min_delta"),
        ({"loss": "hinge"}, "loss"),
        ({"optimizer": "rmsprop"}, "optimizer"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_arguments_raise_naming_them(kwargs, name):
    X, y = _regression(n=16)
    with pytest.raises(ValueError, match=f"`{name}`"):
        fit(_model(), X, y, **kwargs)


def test_bad_data_raise():
    X, y = _regression(n=16)
    with pytest.raises(ValueError, match="same number of rows"):
        fit(_model(), X, y[:10], epochs=1)
    with pytest.raises(ValueError, match="validation_data"):
        fit(_model(), X, y, epochs=1, validation_fraction=0.2, validation_data=(X, y))
    with pytest.raises(ValueError, match="validation_fraction"):
        fit(_model(), X[:1], y[:1], epochs=1, validation_fraction=0.5)
    with pytest.raises(TypeError, match="epochs"):
        fit(_model(), X, y, epochs=2.5)


@pytest.mark.parametrize("optimizer", ["adam", "adamw"])
def test_fit_fast_path_is_bit_identical_to_public_fused_adam(optimizer, monkeypatch):
    # The default CPU path calls the private kernel; the public torch.optim optimiser must give
    # the same weights bit for bit (minibatches of uneven size, weight decay on).
    X, y = _regression(n=100)
    fast, public = _model(), _model()
    params = [p for p in fast.parameters()]
    assert fit_module._FusedAdam.applies(params, optimizer == "adamw")
    fit(fast, X, y, epochs=5, batch_size=32, lr=1e-2, weight_decay=0.05, optimizer=optimizer)
    monkeypatch.setattr(adam_module, "USE_FAST_ADAM", False)
    opt = adam_module.make_optimizer(optimizer, public, 1e-2, 0.05)
    assert isinstance(opt, torch.optim.Adam) and opt.defaults["fused"] is True
    fit(public, X, y, epochs=5, batch_size=32, lr=1e-2, weight_decay=0.05, optimizer=optimizer)
    assert all(torch.equal(a, b) for a, b in zip(_weights(fast), _weights(public), strict=True))


def test_fast_adam_self_check_rejects_a_changed_private_kernel(monkeypatch):
    real = fit_module._private_kernel(False)

    def drifted(params, *args, **kwargs):  # arithmetic differs in the last bits: eps doubled
        kwargs["eps"] = 2 * kwargs["eps"]
        return real(params, *args, **kwargs)

    def removed(*args, **kwargs):  # a signature change: the call itself fails
        raise TypeError("unexpected keyword argument")

    for kernel in (drifted, removed):
        fit_module._fast_adam_verified.cache_clear()
        monkeypatch.setattr(adam_module, "private_kernel", lambda decoupled, k=kernel: k)
        try:
            assert fit_module._fast_adam_verified(torch.float32, False) is False
            opt = adam_module.make_optimizer("adam", _model(), 1e-3, 0.0)
            assert isinstance(opt, torch.optim.Adam) and opt.defaults["fused"] is True
        finally:
            monkeypatch.undo()
            fit_module._fast_adam_verified.cache_clear()
    assert fit_module._fast_adam_verified(torch.float32, False) is True


def test_public_adam_falls_back_to_foreach_where_fused_is_refused():
    from structnets.training.fit import _public_adam

    # fused=True refuses complex parameters (at the first step); foreach runs the same update.
    params = [nn.Parameter(torch.ones(3)), nn.Parameter(torch.ones(3, dtype=torch.complex64))]
    opt = _public_adam(params, lr=1e-3, weight_decay=0.0, decoupled=False)
    assert isinstance(opt, torch.optim.Adam)
    assert not opt.defaults["fused"] and opt.defaults["foreach"] is True
    for p in params:
        p.grad = torch.ones_like(p)
    opt.step()  # first Adam step moves every entry by lr·sign(g)
    torch.testing.assert_close(params[0].detach(), torch.full((3,), 1 - 1e-3))


def test_fit_on_cpu_does_not_import_torch_dynamo():
    # torch.optim's Optimizer.step imports torch._dynamo on first use (seconds per process); the
    # verified fast path and its self-check do not, which matters for every runner worker.
    import subprocess

    code = (
        "import sys, numpy as np\n"
        "from structnets.models import mlp\n"
        "from structnets.training import fit\n"
        "fit(mlp(3, 1, 8, 2), np.ones((20, 3), 'float32'), np.ones(20, 'float32'), epochs=2)\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
