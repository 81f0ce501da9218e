"""The training used by ``smoothness-rates``: batched per-member L-BFGS after Adam, convergence flags."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch

from structnets.experiments.smoothness_rates import (
    _long,
    estimation_width,
    fit_rates_ensemble,
    parameter_count,
)
from structnets.models.ensemble_mlp import EnsembleMLP
from structnets.training.lbfgs import adam_phase, batched_lbfgs


def _quadratics(E: int, P: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    Q = torch.linalg.qr(torch.randn(E, P, P, generator=g, dtype=torch.float64))[0]
    eig = (
        torch.logspace(0, 3, P, dtype=torch.float64).expand(E, P) * (1 + torch.arange(E, dtype=torch.float64))[:, None]
    )
    A = Q @ torch.diag_embed(eig) @ Q.transpose(1, 2)  # condition number 1e3, different per member
    c = torch.randn(E, P, generator=g, dtype=torch.float64)
    return A, c


def test_lbfgs_finds_the_minimiser_of_ill_conditioned_quadratics() -> None:
    A, c = _quadratics(4, 12)

    def loss(x: torch.Tensor) -> torch.Tensor:
        u = x - c
        return 0.5 * torch.einsum("ep,epq,eq->e", u, A, u)

    x, result = batched_lbfgs(loss, torch.zeros(4, 12, dtype=torch.float64), max_iter=500, ftol=0.0, gtol=1e-10)
    assert bool(result.converged.all())
    torch.testing.assert_close(x, c, rtol=0, atol=1e-8)
    # L-BFGS with 20 pairs on a 12-dimensional quadratic: superlinear, far fewer steps than the
    # ~κ = 1e3 of steepest descent.
    assert int(result.iterations.max()) < 150
    assert torch.all(result.grad_norm <= 1e-10 * result.loss.clamp(min=1.0))


def test_lbfgs_members_are_independent() -> None:
    """Member e's trajectory depends on L_e only, even when other members backtrack or stop."""
    A, c = _quadratics(3, 8, seed=1)
    scale = torch.tensor([1.0, 1.0, 1.0], dtype=torch.float64)

    def make(scale: torch.Tensor):
        def loss(x: torch.Tensor) -> torch.Tensor:
            u = x - c
            quad = 0.5 * torch.einsum("ep,epq,eq->e", u, A, u)
            return scale * quad + (scale - 1) * torch.cos(3 * x).sum(1)  # member 2 made non-convex

        return loss

    x0 = torch.ones(3, 8, dtype=torch.float64)
    other = scale.clone()
    other[2] = 7.0
    x1, r1 = batched_lbfgs(make(scale), x0, max_iter=40, ftol=0.0, gtol=0.0)
    x2, r2 = batched_lbfgs(make(other), x0, max_iter=40, ftol=0.0, gtol=0.0)
    assert not torch.allclose(x1[2], x2[2])
    torch.testing.assert_close(x1[:2], x2[:2], rtol=0, atol=0)
    torch.testing.assert_close(r1.iterations[:2], r2.iterations[:2])


def test_convergence_flag_matches_its_definition() -> None:
    """A member stops when its relative loss change stays ≤ ftol; one that cannot is not converged."""
    A, c = _quadratics(2, 30, seed=2)

    def loss(x: torch.Tensor) -> torch.Tensor:
        u = x - c
        return 0.5 * torch.einsum("ep,epq,eq->e", u, A, u) + 1.0  # minimum value 1

    x0 = torch.zeros(2, 30, dtype=torch.float64)
    _, short = batched_lbfgs(loss, x0, max_iter=3, ftol=1e-12, gtol=0.0)
    assert not bool(short.converged.any())  # 3 steps on a 30-dim problem cannot stall
    assert torch.all(short.iterations <= 3)
    _, long = batched_lbfgs(loss, x0, max_iter=2000, ftol=1e-12, gtol=0.0, patience=5)
    assert bool(long.converged.all())
    assert torch.all(long.iterations < 2000)
    torch.testing.assert_close(long.loss, torch.ones(2, dtype=torch.float64), rtol=1e-10, atol=0)
    assert torch.all(long.loss_half >= long.loss)


def _sine_problem(E: int = 4, n: int = 256):
    g = torch.Generator().manual_seed(3)
    X = torch.rand(E, n, 1, generator=g, dtype=torch.float64)
    y = torch.sin(8 * X[..., 0]) + 0.5 * torch.cos(19 * X[..., 0])
    return X, y


def test_lbfgs_phase_reaches_lower_training_loss_than_adam_alone() -> None:
    X, y = _sine_problem()
    net = EnsembleMLP(
        ["tanh", "gelu", "silu", "relu"], 1, 16, 2, generator=torch.Generator().manual_seed(0), input_scale=10.0
    )
    Xp, yp = (2 * X[net.order] - 1), y[net.order]

    def losses(x: torch.Tensor) -> torch.Tensor:
        return ((net.forward(x, Xp) - yp) ** 2).mean(1)

    # Equal budgets of loss-and-gradient evaluations: 600 Adam steps vs 150 Adam + 450 L-BFGS.
    adam_only = losses(adam_phase(losses, net.x, steps=600, lr=1e-2))
    start = adam_phase(losses, net.x, steps=150, lr=1e-2)
    _, result = batched_lbfgs(losses, start, max_iter=450)
    smooth = slice(0, 3)  # tanh, gelu, silu (internal order = given order here)
    assert torch.all(result.loss[smooth] < 0.1 * adam_only[smooth])
    assert torch.all(result.loss <= adam_only * 1.01)


def test_fit_rates_ensemble_reports_the_lbfgs_diagnostics() -> None:
    X, y = _sine_problem(E=3, n=200)
    X_test = torch.rand(300, 1, dtype=torch.float64)
    f_test = torch.sin(8 * X_test[:, 0]) + 0.5 * torch.cos(19 * X_test[:, 0])
    fit = fit_rates_ensemble(
        X,
        y,
        X_test,
        f_test,
        ["tanh", "relu", "tanh"],
        12,
        2,
        steps=100,
        lr=1e-2,
        seed=0,
        input_scale=10.0,
        lbfgs_iters=300,
    )
    assert fit.train_mse.shape == fit.converged.shape == fit.late_gain.shape == (3,)
    assert np.all(fit.train_mse <= fit.adam_train_mse)  # the L-BFGS phase only accepts decreases
    assert np.all(fit.late_gain >= 0)
    assert np.all(fit.iterations <= 300)


def test_settled_flag_is_computed_from_the_members_diagnostics() -> None:
    row = {
        "part": "estimation",
        "d": 1,
        "s": 1.0,
        "depth": 2,
        "n": 100,
        "width": 8,
        "parameters": 25,
        "noise": 0.1,
        "noise_mse": 0.01,
    }
    cases = {  # (converged, late_gain, test_mse) -> settled with settle_tol = 0.1
        "relu": (True, 5.0, 1.0, True),
        "tanh": (False, 0.05, 1.0, True),
        "gelu": (False, 0.2, 1.0, False),
        "silu": (False, float("nan"), 1.0, False),
    }
    for name, (conv, gain, test, _) in cases.items():
        row.update(
            {
                f"{name}/0/train_mse": 0.01,
                f"{name}/0/test_mse": test,
                f"{name}/0/adam_train_mse": 0.02,
                f"{name}/0/converged": conv,
                f"{name}/0/iterations": 10,
                f"{name}/0/late_gain": gain,
            }
        )
    long = _long(pd.DataFrame([row]), settle_tol=0.1).set_index("activation")
    for name, (*_, expected) in cases.items():
        assert bool(long.loc[name, "settled"]) is expected, name


@pytest.mark.parametrize(("d", "s", "depth"), [(1, 1.0, 2), (1, 1.0, 6), (2, 2.0, 6)])
def test_estimation_width_grows_with_n_as_the_budget(d: int, s: float, depth: int) -> None:
    sizes = (50, 100, 200, 500, 1000, 2000, 5000)
    widths = [estimation_width(n, d, s, depth, budget=8.0, min_width=6, n_min=50) for n in sizes]
    assert widths == sorted(widths) and widths[-1] > widths[0]  # grows at every depth
    counts = np.array([parameter_count(d, w, depth) for w in widths], dtype=float)
    slope = np.polyfit(np.log(sizes), np.log(counts), 1)[0]
    assert abs(slope - d / (2 * s + d)) < 0.08  # N ∝ n^{d/(2s+d)} up to width rounding


@pytest.mark.parametrize("depth", [2, 3, 6])
def test_ensemble_jacobian_matches_autograd(depth: int) -> None:
    """One backward sweep of per-point signals gives every row of ∂output/∂parameters."""
    net = EnsembleMLP(
        ["relu", "tanh", "gelu", "silu", "tanh"],
        2,
        5,
        depth,
        generator=torch.Generator().manual_seed(1),
        input_scale=3.0,
    )
    X = torch.rand(5, 7, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    out, J = net.jacobian(net.x, X)
    reference = torch.func.jacrev(lambda x: net.forward(x, X))(net.x)  # (E, m, E, P)
    torch.testing.assert_close(out, net.forward(net.x, X).detach(), rtol=1e-13, atol=1e-15)
    for e in range(5):
        torch.testing.assert_close(J[e], reference[e, :, e, :], rtol=1e-12, atol=1e-14)


def test_lm_phase_lowers_the_noiseless_training_error_below_lbfgs() -> None:
    """The approximation part's third phase: from the same Adam start and with as many iterations,
    Levenberg–Marquardt ends below L-BFGS on a noiseless fit, by ~100× for most members."""
    X = torch.rand(3, 256, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    y = torch.sin(6 * X[..., 0]) + 0.3 * torch.cos(17 * X[..., 0])
    X_test = torch.linspace(0, 1, 301, dtype=torch.float64)[:, None]
    f_test = torch.sin(6 * X_test[:, 0]) + 0.3 * torch.cos(17 * X_test[:, 0])
    common: dict[str, Any] = dict(steps=100, lr=1e-2, seed=3, input_scale=10.0)
    activations = ["tanh", "gelu", "silu"]
    lbfgs = fit_rates_ensemble(X, y, X_test, f_test, activations, 12, 2, lbfgs_iters=150, **common)
    lm = fit_rates_ensemble(X, y, X_test, f_test, activations, 12, 2, lm_iters=150, **common)
    ratio = lm.train_mse / lbfgs.train_mse
    assert np.all(ratio <= 1.0) and np.median(ratio) < 0.1  # measured 0.86, 0.017, 0.009
    assert np.all(lm.adam_train_mse == lbfgs.adam_train_mse)
    assert np.all(lm.iterations > 0)


def _mixed_ensemble(depth: int) -> tuple[EnsembleMLP, torch.Tensor, torch.Tensor]:
    net = EnsembleMLP(
        ["relu", "tanh", "gelu", "silu", "tanh", "relu"],
        2,
        6,
        depth,
        generator=torch.Generator().manual_seed(4),
        input_scale=3.0,
    )
    g = torch.Generator().manual_seed(5)
    X = torch.rand(6, 40, 2, dtype=torch.float64, generator=g)
    y = torch.randn(6, 40, dtype=torch.float64, generator=g)
    return net, X, y


@pytest.mark.parametrize("depth", [2, 3, 5])
def test_mse_and_grad_equals_autograd(depth: int) -> None:
    """The hand-written backward sweep gives autograd's losses and gradients to float64 rounding."""
    net, X, y = _mixed_ensemble(depth)
    x = net.x.clone().requires_grad_(True)
    losses = ((net.forward(x, X) - y) ** 2).mean(1)
    (reference,) = torch.autograd.grad(losses.sum(), x)
    value, grad = net.mse_and_grad(net.x, X, y)
    torch.testing.assert_close(value, losses.detach(), rtol=1e-14, atol=0)
    scale = reference.abs().amax(dim=1, keepdim=True)
    assert torch.all((grad - reference).abs() <= 1e-14 * scale)
    torch.testing.assert_close(net.outputs(net.x, X), net.forward(net.x, X).detach(), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("depth", [2, 4])
def test_member_subsets_give_those_members_values(depth: int) -> None:
    """Evaluating a sorted subset of members gives their rows of the full evaluation (to rounding)."""
    net, X, y = _mixed_ensemble(depth)
    members = torch.tensor([0, 2, 3, 5])
    value, grad = net.mse_and_grad(net.x, X, y)
    sub_value, sub_grad = net.mse_and_grad(net.x[members], X[members], y[members], members)
    torch.testing.assert_close(sub_value, value[members], rtol=1e-13, atol=0)
    torch.testing.assert_close(sub_grad, grad[members], rtol=1e-12, atol=1e-15)
    _, J = net.jacobian(net.x, X)
    _, sub_J = net.jacobian(net.x[members], X[members], members)
    torch.testing.assert_close(sub_J, J[members], rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="rows"):
        net.mse_and_grad(net.x, X, y, members)


@pytest.mark.parametrize("depth", [2, 4])
def test_jacobian_reusing_a_kept_forward_pass_is_the_same(depth: int) -> None:
    """``jacobian(forward=forward_pass(...))`` gives exactly the Jacobian of a fresh sweep, also for
    rows of a pass over more members; a pass of another point, members or inputs is refused."""
    net, X, _ = _mixed_ensemble(depth)
    x = net.x + 0.01 * torch.randn(net.x.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    kept = net.forward_pass(x, X)
    out, J = net.jacobian(x, X)
    out_kept, J_kept = net.jacobian(x, X, forward=kept)
    assert torch.equal(out_kept, out) and torch.equal(J_kept, J)
    assert torch.equal(kept.outputs, net.outputs(x, X))
    running = torch.tensor([0, 1, 3, 4, 5])
    moved = torch.tensor([1, 4, 5])
    index = torch.searchsorted(running, moved)
    part = net.forward_pass(x[running], X[running], running).rows(index, moved)
    _, J_moved = net.jacobian(x[moved], X[moved], moved)
    _, J_rows = net.jacobian(x[moved], X[moved], moved, forward=part)
    assert torch.equal(J_rows, J_moved)
    every = net.forward_pass(x[running], X[running], running).rows(torch.arange(5), running)
    assert torch.equal(net.jacobian(x[running], X[running], running, forward=every)[1], J[running])
    other_x = x.clone()
    other_x[2, 3] += 1e-9
    for args, forward in [
        ((other_x, X), kept),  # another point
        ((x[moved], X[moved], moved), net.forward_pass(x[moved], X[moved], torch.tensor([1, 4, 4]))),  # members
        ((x, X + 1e-12), kept),  # other inputs
    ]:
        with pytest.raises(ValueError, match="forward_pass of the same"):
            net.jacobian(*args, forward=forward)


def test_lm_phase_is_the_same_with_the_kept_forward_pass() -> None:
    """fit_rates_ensemble's LM reuses the accepted trial point's forward pass for its Jacobian: every
    number equals a run whose Jacobians sweep afresh (forward_pass hidden from the closure)."""
    X = torch.rand(4, 96, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    y = torch.sin(6 * X[..., 0])
    X_test = torch.linspace(0, 1, 51, dtype=torch.float64)[:, None]
    common: dict[str, Any] = dict(steps=20, lr=1e-2, seed=3, input_scale=5.0, lm_iters=40)
    activations = ["relu", "tanh", "gelu", "silu"]
    jacobian = EnsembleMLP.jacobian
    given = []

    def watched(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        given.append(kwargs.get("forward") is not None)
        return jacobian(self, *args, **kwargs)

    EnsembleMLP.jacobian = watched  # type: ignore[method-assign]
    try:
        reused = fit_rates_ensemble(X, y, X_test, torch.sin(6 * X_test[:, 0]), activations, 8, 3, **common)
    finally:
        EnsembleMLP.jacobian = jacobian  # type: ignore[method-assign]
    assert sum(given) >= len(given) - 1 > 0  # every linearisation but the first reused a kept pass
    original = EnsembleMLP.forward_pass
    calls = []

    def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        forward = original(self, *args, **kwargs)
        return forward._replace(x=forward.x + 1.0)  # never matches: every Jacobian sweeps afresh

    EnsembleMLP.forward_pass = counted  # type: ignore[method-assign]
    try:
        fresh = fit_rates_ensemble(X, y, X_test, torch.sin(6 * X_test[:, 0]), activations, 8, 3, **common)
    finally:
        EnsembleMLP.forward_pass = original  # type: ignore[method-assign]
    assert calls  # the LM phase evaluates its residuals through forward_pass
    for field in ("train_mse", "test_mse", "iterations", "converged", "grad_norm", "late_gain"):
        np.testing.assert_array_equal(getattr(reused, field), getattr(fresh, field))


def test_optimisers_with_value_and_grad_follow_the_autograd_trajectory() -> None:
    """Adam and L-BFGS (which also skips converged members) with hand-written gradients follow the
    autograd trajectories to rounding."""
    net, X, y = _mixed_ensemble(2)

    def losses(x: torch.Tensor) -> torch.Tensor:
        return ((net.forward(x, X) - y) ** 2).mean(1)

    def value_and_grad(x: torch.Tensor, members: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        return net.mse_and_grad(x, X, y) if members is None else net.mse_and_grad(x, X[members], y[members], members)

    start = adam_phase(losses, net.x, steps=40, lr=1e-2)
    torch.testing.assert_close(
        adam_phase(None, net.x, steps=40, lr=1e-2, value_and_grad=value_and_grad), start, rtol=1e-10, atol=1e-12
    )
    # L-BFGS given (losses, gradients) of the active members only: on convex quadratics whose
    # members converge at different iterations, the same minimisers and flags as the autograd path.
    A, c = _quadratics(5, 10, seed=6)

    def quadratic(x: torch.Tensor, rows: torch.Tensor | None = None) -> torch.Tensor:
        u = x - (c if rows is None else c[rows])
        return 0.5 * torch.einsum("ep,epq,eq->e", u, A if rows is None else A[rows], u)

    def quadratic_value_and_grad(x: torch.Tensor, rows: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        x = x.detach().requires_grad_(True)
        value = quadratic(x, rows)
        return value.detach(), torch.autograd.grad(value.sum(), x)[0]

    x0 = torch.zeros(5, 10, dtype=torch.float64)
    x1, r1 = batched_lbfgs(quadratic, x0, max_iter=300, ftol=0.0, gtol=1e-10)
    x2, r2 = batched_lbfgs(None, x0, max_iter=300, ftol=0.0, gtol=1e-10, value_and_grad=quadratic_value_and_grad)
    assert bool(r1.converged.all()) and bool(r2.converged.all())
    assert len(set(r2.iterations.tolist())) > 1  # members stopped at different iterations: subsets were used
    torch.testing.assert_close(x2, c, rtol=0, atol=1e-8)
    torch.testing.assert_close(x2, x1, rtol=0, atol=1e-8)
    with pytest.raises(ValueError, match="loss_fn"):
        batched_lbfgs(None, start, max_iter=1)
    with pytest.raises(ValueError, match="loss_fn"):
        adam_phase(None, start, steps=1, lr=1e-2)


def test_ensemble_rejects_bad_arguments() -> None:
    generator = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="activations"):
        EnsembleMLP(["softplus"], 1, 4, 2, generator=generator)
    with pytest.raises(ValueError, match="depth"):
        EnsembleMLP(["relu"], 1, 4, 1, generator=generator)
    net = EnsembleMLP(["relu", "tanh"], 1, 4, 2, generator=generator)
    with pytest.raises(ValueError, match="`x` must have shape"):
        net.outputs(net.x[:, :-1], torch.zeros(2, 3, 1, dtype=torch.float64))


def test_mse_and_grad_over_blocks_of_points_equals_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """The blocked sweep (blocks of 7 points here, the last one shorter) sums to the one-block sweep."""
    import structnets.models.ensemble_mlp as ensemble_mlp

    net, X, y = _mixed_ensemble(3)
    value, grad = net.mse_and_grad(net.x, X, y)
    monkeypatch.setattr(ensemble_mlp, "CHUNK_ELEMENTS", 6 * 6 * 7)  # 6 members × width 6 × 7 points
    blocked_value, blocked_grad = net.mse_and_grad(net.x, X, y)
    torch.testing.assert_close(blocked_value, value, rtol=1e-14, atol=0)
    assert torch.all((blocked_grad - grad).abs() <= 1e-14 * grad.abs().amax(dim=1, keepdim=True))
    with pytest.raises(ValueError, match="targets"):
        net.mse_and_grad(net.x, X, y[:, :-1])


def test_jacobian_into_a_reused_buffer_equals_a_fresh_one() -> None:
    net, X, _ = _mixed_ensemble(3)
    _, J = net.jacobian(net.x, X)
    buffer = torch.full_like(J, float("nan"))
    for _ in range(2):  # every column is written: a reused buffer holds no stale values
        _, into = net.jacobian(net.x, X, out=buffer)
        assert into is buffer and torch.equal(into, J)
    members = torch.tensor([1, 4])
    _, sub = net.jacobian(net.x[members], X[members], members, out=buffer[:2])
    torch.testing.assert_close(sub, J[members], rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="`out`"):
        net.jacobian(net.x, X, out=buffer[:2])
    with pytest.raises(ValueError, match="`out`"):
        net.jacobian(net.x, X, out=buffer.float())
