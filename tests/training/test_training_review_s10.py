"""Adversarial review (s10) of the training loop: Adam fast path, checkpoints, schedules, trainers, losses."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from structnets.training import _adam, fit, seeded, train_ensemble
from structnets.training._adam import FusedAdam
from structnets.training.lbfgs import batched_lbfgs
from structnets.training.levenberg_marquardt import batched_levenberg_marquardt
from structnets.training.linear_gd import deep_linear_gradient_descent
from structnets.training.losses import certified_loss, hkr, margin_cross_entropy, multiclass_hinge, scaled_cross_entropy


class _SometimesUsed(nn.Module):
    """A layer whose second parameter enters the output on every other call only (as in stochastic depth)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 2)
        self.extra = nn.Parameter(torch.zeros(2))
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        out = self.linear(x)
        return out + self.extra if self.calls % 2 == 0 else out


def test_fused_adam_counts_each_parameters_own_steps_like_torch():
    """A parameter without a gradient at a step keeps its step count in torch.optim; the fast path shared one count.

    After 6 steps, with the second parameter stepped at steps 0, 2, 4, 5, it differed from
    ``torch.optim.Adam(fused=True)`` by 3.8e-3 (float32): its bias correction used the shared count.
    """
    for dtype in (torch.float32, torch.float64):
        for decoupled in (False, True):
            generator = torch.Generator().manual_seed(0)
            start = [
                torch.randn(4, 3, generator=generator, dtype=dtype),
                torch.randn(3, generator=generator, dtype=dtype),
            ]
            ours = [nn.Parameter(t.clone()) for t in start]
            theirs = [nn.Parameter(t.clone()) for t in start]
            fast = FusedAdam(ours, lr=1e-2, weight_decay=0.05, decoupled=decoupled)
            reference = (torch.optim.AdamW if decoupled else torch.optim.Adam)(
                theirs, lr=1e-2, weight_decay=0.05, fused=True
            )
            for step in range(8):
                grads = [
                    torch.randn(4, 3, generator=generator, dtype=dtype),
                    torch.randn(3, generator=generator, dtype=dtype),
                ]
                for params in (ours, theirs):
                    params[0].grad = grads[0].clone()
                    params[1].grad = grads[1].clone() if step in (0, 2, 4, 5) else None
                fast.step()
                reference.step()
                for a, b in zip(ours, theirs, strict=True):
                    assert torch.equal(a, b), (dtype, decoupled, step)


def test_fit_fast_adam_equals_public_adam_when_a_parameter_sits_out(monkeypatch):
    X = torch.randn(24, 4, generator=torch.Generator().manual_seed(1))
    y = torch.randn(24, 2, generator=torch.Generator().manual_seed(2))
    models = []
    for fast in (True, False):
        monkeypatch.setattr(_adam, "USE_FAST_ADAM", fast)
        with seeded(0):
            model = _SometimesUsed()
        fit(model, X, y, epochs=3, batch_size=8, lr=1e-2, seed=0)
        models.append(model)
    for a, b in zip(models[0].state_dict().values(), models[1].state_dict().values(), strict=True):
        assert torch.equal(a, b)


# -- batched optimisers: the functions' outputs are checked, naming them ------------------------------------------


def test_lbfgs_refuses_losses_that_are_not_one_per_member():
    """A scalar loss was accepted (every member's Armijo test then used the total); an (E, 1) column failed with an
    IndexError about a boolean mask."""
    x = torch.ones(2, 3, dtype=torch.float64)
    for loss in (lambda z: (z**2).sum(), lambda z: (z**2).sum(1, keepdim=True)):
        with pytest.raises(ValueError, match=r"`loss_fn` must give one loss per member, shape \(2,\)"):
            batched_lbfgs(loss, x, max_iter=5)
    with pytest.raises(ValueError, match=r"`value_and_grad` must give .*got \(2,\) and \(2, 2\)"):
        batched_lbfgs(None, x, max_iter=5, value_and_grad=lambda z, members: ((z**2).sum(1), z[:, :2]))


def test_levenberg_marquardt_refuses_misshapen_residuals_and_jacobians():
    """No residuals (n = 0) or no parameters raised ZeroDivisionError; a Jacobian of the wrong width a RuntimeError."""
    x = torch.zeros(2, 3, dtype=torch.float64)

    def jacobian(width: int, rows: int = 4):
        return lambda z: (z.new_ones(z.shape[0], rows), z.new_ones(z.shape[0], rows, width))

    for jac, start in ((jacobian(3, rows=0), x), (jacobian(5), x), (jacobian(0), x[:, :0])):
        with pytest.raises(ValueError, match="`jacobian_fn` must give residuals"):
            batched_levenberg_marquardt(lambda z: z.new_ones(z.shape[0], 4), jac, start, max_iter=3)
    with pytest.raises(ValueError, match=r"`residual_fn` must give residuals of shape \(2, 4\)"):
        batched_levenberg_marquardt(lambda z: z.new_ones(z.shape[0], 5), jacobian(3), x, max_iter=3)


def test_deep_linear_gradient_descent_refuses_complex_and_object_arrays():
    """A complex weight lost its imaginary part with only a ComplexWarning."""
    eye = torch.eye(2)
    with pytest.raises(TypeError, match=r"`weights\[0\]` must hold real numbers, got dtype complex64"):
        deep_linear_gradient_descent(
            [eye.to(torch.complex64) * (1 + 1j)], torch.ones(3, 2), torch.ones(3, 2), steps=1, lr=0.1
        )
    with pytest.raises(TypeError, match="`Y` must hold real numbers, got dtype object"):
        deep_linear_gradient_descent([eye], torch.ones(3, 2), np.ones((3, 2), dtype=object), steps=1, lr=0.1)


# -- losses ---------------------------------------------------------------------------------------------------------


def test_certified_cross_entropies_skip_no_label():
    """torch's ignore_index -100 left such rows out: scaled-ce of three rows with one label -100 was the mean of two."""
    logits = torch.tensor([[1.0, 0.0], [0.0, 1.0], [5.0, -5.0]])
    for loss in (scaled_cross_entropy, margin_cross_entropy):
        with pytest.raises((IndexError, RuntimeError, ValueError)):
            loss(logits, torch.tensor([0, 1, -100]))


def test_certified_losses_name_a_bad_target_or_output():
    logits = torch.randn(3, 2)
    for loss in (scaled_cross_entropy, margin_cross_entropy, multiclass_hinge, hkr):
        with pytest.raises(TypeError, match="`target` must hold integer class indices, got dtype torch.float32"):
            loss(logits, torch.tensor([0.0, 1.0, 1.0]))
        with pytest.raises(TypeError, match="`output` must be a torch.Tensor, got list"):
            loss([[1.0, 2.0]], torch.tensor([1]))


@pytest.mark.parametrize("name", ["margin-ce", "scaled-ce", "hinge", "hkr"])
def test_certified_losses_still_run_under_vmap(name):
    """train_ensemble maps a callable loss over members with vmap: the checks must not depend on the data."""
    logits, labels = torch.randn(3, 5, 4, dtype=torch.float64), torch.randint(4, (3, 5))
    loss = certified_loss(name)
    mapped = torch.func.vmap(loss)(logits, labels)
    for e in range(3):
        torch.testing.assert_close(mapped[e], loss(logits[e], labels[e]), rtol=1e-12, atol=0)


# -- checkpoints: a real SIGKILL ------------------------------------------------------------------------------------

_KILLED_CHILD = """
import os, signal, sys, torch
torch.set_num_threads(1)
sys.path[:0] = {paths!r}
from test_training_review_s10 import _dropout_training
_dropout_training(sys.argv[1], kill_after_epoch=int(sys.argv[2]))
"""


def _dropout_training(checkpoint: str | None, kill_after_epoch: int | None = None) -> tuple[dict, object]:
    """A dropout MLP (it draws from torch's global RNG) trained with validation, patience and a cosine schedule."""
    import os
    import signal

    generator = torch.Generator().manual_seed(0)
    X, y = torch.randn(90, 5, generator=generator), torch.randint(3, (90,), generator=generator)
    with seeded(1):
        model = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Dropout(0.3), nn.Linear(16, 3))

    def callback(epoch: int, logs: object) -> None:
        if epoch == kill_after_epoch:
            os.kill(os.getpid(), signal.SIGKILL)

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(7)
        result = fit(
            model, X, y, loss="cross_entropy", epochs=8, batch_size=16, lr=5e-3, seed=4, validation_fraction=0.2,
            patience=20, schedule="cosine", min_lr=1e-4, optimizer="adamw", weight_decay=0.01,
            checkpoint=checkpoint, callback=callback,
        )  # fmt: skip
    return model.state_dict(), result


def test_sigkilled_training_resumes_to_the_uninterrupted_weights(tmp_path):
    """The process is really killed (SIGKILL, no exception, no cleanup) after epoch 4's callback, before its save."""
    import os
    import subprocess
    import sys

    from structnets.training import checkpoint as ckpt

    path = tmp_path / "fit.ckpt"
    here = os.path.dirname(__file__)
    code = _KILLED_CHILD.format(paths=[here, *sys.path])
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", code, str(path), "4"], env=env, capture_output=True, timeout=120)
    assert done.returncode == -9, done.stderr.decode()[-2000:]
    assert ckpt.load(path)["next_epoch"] == 4  # epochs 0-3 saved; epoch 4 lost with the process
    expected_state, expected = _dropout_training(None)
    state, result = _dropout_training(str(path))
    for name, tensor in expected_state.items():
        assert torch.equal(state[name], tensor), name
    assert (result.train_loss, result.val_loss) == (expected.train_loss, expected.val_loss)
    assert (result.best_epoch, result.best_loss) == (expected.best_epoch, expected.best_loss)


# -- fit's data checks ----------------------------------------------------------------------------------------------


def test_cross_entropy_needs_two_logits_per_row_in_fit_as_in_the_loss():
    """A 1-output model with labels 0 trained on an identically zero loss (nothing learned, no error), though the
    checked ``cross_entropy`` refuses K < 2."""
    X = torch.randn(12, 4, generator=torch.Generator().manual_seed(0))
    labels = torch.zeros(12, dtype=torch.long)
    with pytest.raises(
        ValueError, match=r"`model` must output \(n, K\) logits with K >= 2.*got per-sample shape \(1,\)"
    ):
        fit(nn.Linear(4, 1), X, labels, loss="cross_entropy", epochs=1)
    with pytest.raises(ValueError, match="K >= 2"):
        train_ensemble([nn.Linear(4, 1), nn.Linear(4, 1)], X, labels, loss="cross_entropy", epochs=1)


def test_bad_validation_labels_are_named_as_validation_data():
    """Out-of-range validation labels were reported as "`y` must hold class indices", though `y` was fine."""
    X = torch.randn(12, 4, generator=torch.Generator().manual_seed(0))
    labels = torch.arange(12) % 3
    with pytest.raises(ValueError, match=r"`validation_data\[1\]` must hold class indices in \[0, 3\)"):
        fit(
            nn.Linear(4, 3), X, labels, loss="cross_entropy", epochs=1, validation_data=(X[:3], torch.tensor([0, 1, 7]))
        )
    with pytest.raises(ValueError, match=r"`validation_data\[1\]` must hold class indices in \[0, 3\)"):
        train_ensemble(
            [nn.Linear(4, 3), nn.Linear(4, 3)], X, labels, loss="cross_entropy", epochs=1,
            validation_data=(X[:3], torch.tensor([0, 1, 7])),
        )  # fmt: skip


class _DataGated(nn.Module):
    """``extra`` enters the output only for batches whose first input is positive: its Adam steps are a subset."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 2)
        self.extra = nn.Parameter(torch.zeros(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.linear(x)
        return out + self.extra if bool(x[0, 0] > 0) else out


def test_resume_keeps_each_parameters_own_adam_step_count(tmp_path):
    """The per-parameter counts go through the checkpoint: killed and resumed equals uninterrupted, bit for bit."""
    X = torch.randn(40, 4, generator=torch.Generator().manual_seed(3))
    y = torch.randn(40, 2, generator=torch.Generator().manual_seed(4))
    options = dict(epochs=5, batch_size=6, lr=1e-2, seed=2)

    def build() -> nn.Module:
        with seeded(0):
            return _DataGated()

    reference = build()
    fit(reference, X, y, **options)
    calls = [0]

    def dying(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        calls[0] += 1
        if calls[0] == 17:  # inside epoch 2 (7 steps an epoch)
            raise KeyboardInterrupt
        return nn.functional.mse_loss(output, target)

    path = tmp_path / "fit.ckpt"
    with pytest.raises(KeyboardInterrupt):
        fit(build(), X, y, loss=dying, checkpoint=path, **options)
    resumed = build()
    fit(resumed, X, y, loss=lambda o, t: nn.functional.mse_loss(o, t), checkpoint=path, **options)
    for a, b in zip(reference.state_dict().values(), resumed.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_stacked_ensemble_takes_per_member_class_labels():
    """``y`` (E, n) of class indices with ``stacked=True`` is documented; it was refused as "`y` must be 1-D class
    indices, got shape (3, 26)". Each member equals fit on its own data."""
    generator = torch.Generator().manual_seed(0)
    X = torch.randn(3, 26, 5, generator=generator, dtype=torch.float64)
    y = torch.randint(3, (3, 26), generator=generator)
    X_val = torch.randn(3, 7, 5, generator=generator, dtype=torch.float64)
    y_val = torch.randint(3, (3, 7), generator=generator).double()  # integral floats, as fit takes them

    def build(seed: int) -> nn.Module:
        with seeded(seed):
            return nn.Sequential(nn.Linear(5, 12), nn.SiLU(), nn.Linear(12, 3)).double()

    options = dict(loss="cross_entropy", epochs=8, batch_size=5, lr=3e-2, patience=2)
    members = [build(e) for e in range(3)]
    result = train_ensemble(members, X, y, stacked=True, validation_data=(X_val, y_val), seeds=[7, 8, 9], **options)
    for e in range(3):
        alone = build(e)
        expected = fit(alone, X[e], y[e], validation_data=(X_val[e], y_val[e]), seed=7 + e, **options)
        for a, b in zip(alone.state_dict().values(), members[e].state_dict().values(), strict=True):
            torch.testing.assert_close(b, a, rtol=1e-10, atol=1e-12)
        assert result.member(e).best_epoch == expected.best_epoch
        np.testing.assert_allclose(result.val_loss[e], expected.val_loss, rtol=1e-10)
    with pytest.raises(ValueError, match=r"`y` must be class indices of shape \(E, n\)"):
        train_ensemble([build(0), build(1), build(2)], X, y[:, :, None], stacked=True, **options)


def test_checkpoint_of_another_warm_up_given_as_numpy_ints_is_refused(tmp_path):
    """NumPy scalars went into the fingerprint as "callable" (not compared): a finished run with warmup_epochs=np.int64(1)
    was taken for the one asked with np.int64(2), which then trained nothing and returned the other run's weights."""
    X = torch.randn(24, 4, generator=torch.Generator().manual_seed(0))
    y = torch.randn(24, 2, generator=torch.Generator().manual_seed(1))
    path = tmp_path / "fit.ckpt"
    options = dict(epochs=3, batch_size=8, schedule="warmup_cosine")
    fit(nn.Linear(4, 2), X, y, warmup_epochs=np.int64(1), checkpoint=path, **options)
    with pytest.raises(ValueError, match=r"another training \(differs in: warmup_epochs\)"):
        fit(nn.Linear(4, 2), X, y, warmup_epochs=np.int64(2), checkpoint=path, **options)
    fit(nn.Linear(4, 2), X, y, warmup_epochs=1, checkpoint=path, **options)  # the same training, as a plain int
