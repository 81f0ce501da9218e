"""Batched Levenberg–Marquardt: exact on linear problems, classic test problems, member independence."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from structnets.models.ensemble_mlp import EnsembleMLP
from structnets.training.lbfgs import batched_lbfgs
from structnets.training.levenberg_marquardt import batched_levenberg_marquardt, cholesky_step, gradient, gram


def _linear(E: int, n: int, P: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(E, n, P, generator=g, dtype=torch.float64)
    A[:, :, 0] *= 100.0  # badly scaled column: Marquardt's scaling must cope
    b = torch.randn(E, n, generator=g, dtype=torch.float64)
    return A, b


def test_linear_least_squares_reaches_the_lstsq_solution() -> None:
    A, b = _linear(3, 20, 5)

    def residual(x: torch.Tensor) -> torch.Tensor:
        return torch.einsum("enp,ep->en", A, x) - b

    def jacobian(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return residual(x), A

    x, result = batched_levenberg_marquardt(
        residual, jacobian, torch.zeros(3, 5, dtype=torch.float64), max_iter=100, ftol=1e-15, gtol=1e-13
    )
    reference = torch.linalg.lstsq(A, b[:, :, None]).solution.squeeze(-1)
    torch.testing.assert_close(x, reference, rtol=0, atol=1e-9)
    assert bool(result.converged.all())
    # Gauss–Newton is exact on a linear problem; only the damping (shrunk ×3 per step) delays it.
    assert int(result.iterations.max()) < 40
    expected = ((torch.einsum("enp,ep->en", A, reference) - b) ** 2).mean(1)
    torch.testing.assert_close(result.loss, expected, rtol=1e-10, atol=0)


def _rosenbrock(x: torch.Tensor) -> torch.Tensor:
    return torch.stack([10 * (x[:, 1] - x[:, 0] ** 2), 1 - x[:, 0]], dim=1)


def _rosenbrock_jacobian(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    J = torch.zeros(x.shape[0], 2, 2, dtype=x.dtype)
    J[:, 0, 0] = -20 * x[:, 0]
    J[:, 0, 1] = 10
    J[:, 1, 0] = -1
    return _rosenbrock(x), J


def test_rosenbrock_from_the_classic_start() -> None:
    x0 = torch.tensor([[-1.2, 1.0], [2.0, -1.0], [0.0, 0.0]], dtype=torch.float64)
    x, result = batched_levenberg_marquardt(_rosenbrock, _rosenbrock_jacobian, x0, max_iter=200, gtol=1e-14)
    torch.testing.assert_close(x, torch.ones(3, 2, dtype=torch.float64), rtol=0, atol=1e-10)
    assert bool(result.converged.all())
    assert float(result.loss.max()) < 1e-20


def test_members_are_independent() -> None:
    """A member's trajectory depends on its own residuals only, bit for bit."""
    x0 = torch.tensor([[-1.2, 1.0], [2.0, -1.0], [0.5, 0.5]], dtype=torch.float64)
    x1, r1 = batched_levenberg_marquardt(_rosenbrock, _rosenbrock_jacobian, x0, max_iter=15, ftol=0.0, gtol=0.0)

    def shifted(x: torch.Tensor) -> torch.Tensor:
        r = _rosenbrock(x)
        r[2] = r[2] * 3.0 + 0.5  # a different problem for member 2 only
        return r

    def shifted_jacobian(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _, J = _rosenbrock_jacobian(x)
        J[2] = J[2] * 3.0
        return shifted(x), J

    x2, r2 = batched_levenberg_marquardt(shifted, shifted_jacobian, x0, max_iter=15, ftol=0.0, gtol=0.0)
    assert torch.equal(x1[:2], x2[:2])
    assert torch.equal(r1.loss[:2], r2.loss[:2])
    assert torch.equal(r1.damping[:2], r2.damping[:2])
    assert not torch.equal(x1[2], x2[2])


def test_zero_residual_network_fit_beats_lbfgs_by_orders_of_magnitude() -> None:
    """Noiseless data from a tanh / SiLU network, started near the teacher.

    Gauss–Newton curvature is exact as the residual vanishes, so LM drives the loss down ten
    orders of magnitude, far below L-BFGS with the same number of iterations (the reason the
    approximation part of ``smoothness-rates`` uses it). The Jacobian of this net is nearly rank
    deficient (singular values down to ~1e-11), so neither reaches rounding level.
    """
    g = torch.Generator().manual_seed(0)
    teacher = EnsembleMLP(["tanh", "silu"], 2, 6, 3, generator=g)
    inputs = torch.rand(2, 200, 2, generator=g, dtype=torch.float64) * 2 - 1
    y = teacher.forward(teacher.x, inputs)
    start = teacher.x + 0.05 * torch.randn(teacher.x.shape, generator=g, dtype=torch.float64)

    def residual(x: torch.Tensor) -> torch.Tensor:
        return teacher.forward(x, inputs) - y

    def jacobian(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, J = teacher.jacobian(x, inputs)
        return out - y, J

    initial = (residual(start) ** 2).mean(1)
    _, lm = batched_levenberg_marquardt(residual, jacobian, start, max_iter=300, ftol=0.0, gtol=0.0)
    _, lbfgs = batched_lbfgs(lambda x: (residual(x) ** 2).mean(1), start, max_iter=300, ftol=0.0, gtol=0.0)
    assert torch.all(initial > 1e-4)
    assert torch.all(lm.loss < 1e-10 * initial)
    assert torch.all(lm.loss < 1e-2 * lbfgs.loss)
    for solver in ("qr", "cholesky"):  # both solvers of the damped step take the same path here
        _, short = batched_levenberg_marquardt(
            residual, jacobian, start, max_iter=30, ftol=0.0, gtol=0.0, solver=solver
        )
        assert torch.all(short.loss < 1e-6 * initial)


def test_loss_never_increases_and_half_budget_loss_is_recorded() -> None:
    A, b = _linear(2, 30, 4, seed=3)

    def residual(x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(torch.einsum("enp,ep->en", A, x)) - 0.5 * torch.tanh(b)

    def jacobian(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = torch.einsum("enp,ep->en", A, x)
        return residual(x), (1 - torch.tanh(z) ** 2)[:, :, None] * A

    x0 = torch.zeros(2, 4, dtype=torch.float64)
    losses = [(residual(x0) ** 2).mean(1)]
    x = x0
    for _ in range(6):
        x, result = batched_levenberg_marquardt(residual, jacobian, x, max_iter=3, ftol=0.0, gtol=0.0)
        losses.append(result.loss)
        assert torch.all(result.loss_half >= result.loss)
    for before, after in zip(losses, losses[1:]):
        assert torch.all(after <= before)
    assert torch.all(losses[-1] < losses[0])


def test_bad_input_names_the_argument() -> None:
    x0 = torch.zeros(1, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match="`max_iter`"):
        batched_levenberg_marquardt(_rosenbrock, _rosenbrock_jacobian, x0, max_iter=-1)
    with pytest.raises(ValueError, match="`initial_damping`"):
        batched_levenberg_marquardt(_rosenbrock, _rosenbrock_jacobian, x0, max_iter=1, initial_damping=0.0)
    with pytest.raises(ValueError, match="`solver`"):
        batched_levenberg_marquardt(_rosenbrock, _rosenbrock_jacobian, x0, max_iter=1, solver="svd")
    with pytest.raises(ValueError, match="`x`"):
        batched_levenberg_marquardt(_rosenbrock, _rosenbrock_jacobian, torch.zeros(2), max_iter=1)


def _reference_lm(residual_fn, jacobian_fn, x, *, max_iter, ftol=1e-10, gtol=1e-12, patience=10, initial_damping=1e-3):  # type: ignore[no-untyped-def]
    """The Cholesky path as it was before ``gram`` and ``by_members`` (commit 73db794), kept as the oracle:
    every member's residuals and Jacobian evaluated at every step, JᵀJ by ``torch.bmm``, μD·I added."""
    x = x.detach().clone()
    E, P = x.shape
    r, J = jacobian_fn(x)
    n = r.shape[1]
    g = torch.bmm(J.transpose(1, 2), r[:, :, None]).squeeze(-1)
    A = torch.bmm(J.transpose(1, 2), J)
    half_sq = 0.5 * (r * r).sum(1)
    mu = torch.full((E,), initial_damping, dtype=x.dtype)
    nu = torch.full((E,), 2.0, dtype=x.dtype)
    iterations = torch.zeros(E, dtype=torch.long)
    quiet = torch.zeros(E, dtype=torch.long)
    converged = 2.0 / n * g.norm(dim=1) <= gtol * (2.0 * half_sq / n).clamp(min=1.0)
    eye = torch.eye(P, dtype=x.dtype)
    for _ in range(max_iter):
        active = ~converged
        if not bool(active.any()):
            break
        idx = active.nonzero().squeeze(1)
        diag = torch.diagonal(A[idx], dim1=1, dim2=2)
        D = torch.maximum(diag, 1e-12 * diag.amax(1, keepdim=True).clamp(min=1e-300))
        h_active = torch.zeros(idx.numel(), P, dtype=x.dtype)
        chol, info = torch.linalg.cholesky_ex(A[idx] + (mu[idx, None] * D)[:, :, None] * eye)
        solved = info == 0
        if bool(solved.any()):
            h_active[solved] = -torch.cholesky_solve(g[idx][solved][:, :, None], chol[solved]).squeeze(-1)
        h = torch.zeros_like(x)
        h[idx] = h_active
        r_trial = residual_fn(x + h)
        trial = 0.5 * (r_trial * r_trial).sum(1)
        predicted = torch.zeros(E, dtype=x.dtype)
        predicted[idx] = 0.5 * (h_active * (mu[idx, None] * D * h_active - g[idx])).sum(1)
        rho = (half_sq - trial) / predicted.clamp(min=1e-300)
        ok = torch.zeros(E, dtype=torch.bool)
        ok[idx] = solved & (predicted[idx] > 0)
        ok &= (rho > 0) & torch.isfinite(trial)
        failed = active & ~ok
        mu = torch.where(failed, mu * nu, mu)
        nu = torch.where(failed, 2 * nu, nu)
        if bool(ok.any()):
            moved = ok.nonzero().squeeze(1)
            small = (half_sq - trial).abs() <= ftol * torch.maximum(half_sq.abs(), trial.abs()).clamp(min=1e-300)
            quiet = torch.where(ok, torch.where(small, quiet + 1, torch.zeros_like(quiet)), quiet)
            mu = torch.where(ok, mu * torch.clamp(1 - (2 * rho - 1) ** 3, min=1.0 / 3.0), mu)
            nu = torch.where(ok, torch.full_like(nu, 2.0), nu)
            iterations += ok.long()
            x = torch.where(ok[:, None], x + h, x)
            r_moved, J_moved = jacobian_fn(x)
            J_moved, r_moved = J_moved[moved], r_moved[moved]
            A[moved] = torch.bmm(J_moved.transpose(1, 2), J_moved)
            g[moved] = torch.bmm(J_moved.transpose(1, 2), r_moved[:, :, None]).squeeze(-1)
            half_sq = torch.where(ok, trial, half_sq)
        converged |= (
            (quiet >= patience)
            | (mu > 1e16)
            | (active & (2.0 / n * g.norm(dim=1) <= gtol * (2.0 * half_sq / n).clamp(min=1.0)))
        )
    return x, 2.0 * half_sq / n, mu, iterations, converged


@pytest.mark.parametrize(
    ("shape", "dtype"), [((3, 50, 7), torch.float64), ((2, 5, 9), torch.float64), ((2, 40, 6), torch.float32)]
)
def test_gram_equals_bmm_and_is_exactly_symmetric(shape: tuple[int, int, int], dtype: torch.dtype) -> None:
    J = torch.randn(shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(dtype)
    A = gram(J)
    reference = torch.bmm(J.double().transpose(1, 2), J.double())
    tolerance = 1e-13 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(A.double(), reference, rtol=0, atol=tolerance * float(reference.abs().max()))
    assert A.dtype == dtype and torch.equal(A, A.transpose(1, 2))
    # a non-contiguous (expanded) Jacobian, as a linear problem's constant J may be
    expanded = J[:1].expand(4, -1, -1)
    assert torch.equal(gram(expanded), gram(J[:1].contiguous()).expand(4, -1, -1))


def _network_problem(seed: int) -> tuple[EnsembleMLP, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Noiseless fits of a 4-member mixed-activation net from a perturbed start; member 0 starts at the teacher."""
    g = torch.Generator().manual_seed(seed)
    net = EnsembleMLP(["tanh", "silu", "gelu", "relu"], 2, 7, 3, generator=g)
    inputs = torch.rand(4, 60, 2, generator=g, dtype=torch.float64) * 2 - 1
    y = net.forward(net.x, inputs)
    start = net.x + 0.3 * torch.randn(net.x.shape, generator=g, dtype=torch.float64)
    start[0] = net.x[0]  # zero residual: converged before the first step, never evaluated again
    return net, inputs, y, start


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_same_iterates_as_the_reference_solver(seed: int) -> None:
    """``gram`` (syrk), the in-place damping and the member subsets follow the old iterates (ill-conditioned nets)."""
    net, inputs, y, start = _network_problem(seed)

    def residual(x: torch.Tensor) -> torch.Tensor:
        return net.outputs(x, inputs) - y

    def jacobian(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, J = net.jacobian(x, inputs)
        return out - y, J

    calls: list[int] = []

    def residual_rows(x: torch.Tensor, members: torch.Tensor) -> torch.Tensor:
        calls.append(members.numel())
        return net.outputs(x, inputs[members], members) - y[members]

    def jacobian_rows(x: torch.Tensor, members: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, J = net.jacobian(x, inputs[members], members)
        return out - y[members], J

    x_ref, loss_ref, mu_ref, it_ref, conv_ref = _reference_lm(residual, jacobian, start, max_iter=12, ftol=0.0)
    x_old, old = batched_levenberg_marquardt(residual, jacobian, start, max_iter=12, ftol=0.0)
    x_new, new = batched_levenberg_marquardt(
        residual_rows, jacobian_rows, start, max_iter=12, ftol=0.0, by_members=True
    )
    assert bool(conv_ref[0]) and int(it_ref[0]) == 0 and int(it_ref[1:].min()) >= 3
    assert max(calls) == 3  # member 0 was never evaluated
    for x, result in ((x_old, old), (x_new, new)):
        # JᵀJ rounded differently (syrk vs gemm, ~1e-16 relative) is amplified by cond(JᵀJ):
        # 1e-11 after one step, ≤ 1e-8 after twelve on these nets; the paths are the same.
        torch.testing.assert_close(x, x_ref, rtol=1e-7, atol=1e-9)
        torch.testing.assert_close(result.loss, loss_ref, rtol=1e-6, atol=1e-16)
        assert torch.equal(result.iterations, it_ref) and torch.equal(result.converged, conv_ref)
        torch.testing.assert_close(result.damping, mu_ref, rtol=1e-6, atol=0)  # μ scales by a gain ratio of differences


@pytest.mark.parametrize("by_members", [False, True])
def test_bit_identical_to_the_reference_with_the_same_gram(by_members: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """With JᵀJ and Jᵀr from ``torch.bmm`` and the step from ``torch.cholesky_solve`` as before, the restructured loop (in-place damping, no copies while
    every member runs) reproduces the old iterates bit for bit; with member subsets, to rounding."""
    import structnets.training.levenberg_marquardt as module

    monkeypatch.setattr(module, "gram", lambda J, out=None: torch.bmm(J.transpose(1, 2), J, out=out))
    monkeypatch.setattr(module, "cholesky_step", lambda L, g: -torch.cholesky_solve(g[:, :, None], L).squeeze(-1))
    monkeypatch.setattr(module, "gradient", lambda J, r: torch.bmm(J.transpose(1, 2), r[:, :, None]).squeeze(-1))
    net, inputs, y, start = _network_problem(4)

    def residual(x: torch.Tensor) -> torch.Tensor:
        return net.outputs(x, inputs) - y

    def jacobian(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, J = net.jacobian(x, inputs)
        return out - y, J

    def residual_rows(x: torch.Tensor, members: torch.Tensor) -> torch.Tensor:
        return net.outputs(x, inputs[members], members) - y[members]

    def jacobian_rows(x: torch.Tensor, members: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, J = net.jacobian(x, inputs[members], members)
        return out - y[members], J

    x_ref, loss_ref, mu_ref, it_ref, conv_ref = _reference_lm(residual, jacobian, start, max_iter=25, ftol=1e-9)
    residual_fn, jacobian_fn = (residual_rows, jacobian_rows) if by_members else (residual, jacobian)
    x, result = module.batched_levenberg_marquardt(
        residual_fn, jacobian_fn, start, max_iter=25, ftol=1e-9, by_members=by_members
    )
    if by_members:  # a member subset's evaluation rounds differently (EnsembleMLP: "to rounding")
        torch.testing.assert_close(x, x_ref, rtol=1e-8, atol=1e-10)
        torch.testing.assert_close(result.loss, loss_ref, rtol=1e-6, atol=1e-18)
    else:
        assert torch.equal(x, x_ref) and torch.equal(result.loss, loss_ref) and torch.equal(result.damping, mu_ref)
    assert torch.equal(result.iterations, it_ref) and torch.equal(result.converged, conv_ref)


def test_subsets_equal_the_whole_batch_on_rejections_and_convergence() -> None:
    """Rejected steps (a huge first step: tiny damping) and members converging at different times."""
    A, b = _linear(4, 30, 5, seed=5)
    A[:, :, 0] /= 100.0  # well conditioned, so the reference comparison is tight
    scale = torch.tensor([1.0, 3.0, 0.3, 2.0], dtype=torch.float64)

    def residual_rows(x: torch.Tensor, members: torch.Tensor) -> torch.Tensor:
        return torch.tanh(scale[members, None] * torch.einsum("enp,ep->en", A[members], x)) - 0.5 * torch.tanh(
            b[members]
        )

    def jacobian_rows(x: torch.Tensor, members: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = scale[members, None] * torch.einsum("enp,ep->en", A[members], x)
        return residual_rows(x, members), ((1 - torch.tanh(z) ** 2) * scale[members, None])[:, :, None] * A[members]

    every = torch.arange(4)
    x0 = torch.full((4, 5), 2.0, dtype=torch.float64)
    kwargs: dict[str, Any] = {"max_iter": 60, "ftol": 1e-6, "patience": 2}
    x1, r1 = batched_levenberg_marquardt(
        lambda x: residual_rows(x, every), lambda x: jacobian_rows(x, every), x0, initial_damping=1e-9, **kwargs
    )
    x2, r2 = batched_levenberg_marquardt(
        residual_rows, jacobian_rows, x0, initial_damping=1e-9, by_members=True, **kwargs
    )
    x3, _, mu3, it3, c3 = _reference_lm(
        lambda x: residual_rows(x, every), lambda x: jacobian_rows(x, every), x0, initial_damping=1e-9, **kwargs
    )
    torch.testing.assert_close(x1, x3, rtol=1e-8, atol=1e-10)  # up to 60 steps of rounding
    assert torch.equal(r1.iterations, it3) and torch.equal(r1.converged, c3)
    torch.testing.assert_close(r1.damping, mu3, rtol=1e-8, atol=0)
    torch.testing.assert_close(x1, x2, rtol=1e-12, atol=1e-14)
    assert torch.equal(r1.iterations, r2.iterations) and torch.equal(r1.converged, r2.converged)
    assert bool(r1.converged.all()) and len(set(r1.iterations.tolist())) > 1
    assert bool((r1.damping > 0).all())


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_same_steps_as_the_reference_on_random_problems(seed: int) -> None:
    """Random well-conditioned nonlinear least squares r = tanh(Ax) − c: the old and new steps agree to 1e-10."""
    A, b = _linear(5, 40, 8, seed=seed)
    A[:, :, 0] /= 100.0  # undo _linear's bad scaling: cond(A) ~ 10 here
    c = 0.5 * torch.tanh(b)

    def residual(x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(torch.einsum("enp,ep->en", A, x)) - c

    def jacobian(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = torch.einsum("enp,ep->en", A, x)
        return residual(x), (1 - torch.tanh(z) ** 2)[:, :, None] * A

    x0 = 0.3 * torch.randn(5, 8, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    # Five steps: beyond that these fits reach the rounding floor, where whether a step of size
    # ~1e-8 is accepted depends on the last bits of the loss (both are valid minimisers).
    for steps in (1, 5):
        x_ref, loss_ref, mu_ref, it_ref, _ = _reference_lm(residual, jacobian, x0, max_iter=steps, ftol=0.0)
        x_new, new = batched_levenberg_marquardt(residual, jacobian, x0, max_iter=steps, ftol=0.0)
        assert not torch.equal(x_ref, x0)
        torch.testing.assert_close(x_new, x_ref, rtol=1e-10, atol=1e-13)
        torch.testing.assert_close(new.loss, loss_ref, rtol=1e-10, atol=0)
        assert torch.equal(new.iterations, it_ref)


def test_cholesky_step_equals_cholesky_solve() -> None:
    g = torch.Generator().manual_seed(3)
    J = torch.randn(4, 30, 12, generator=g, dtype=torch.float64)
    A = gram(J) + 1e-3 * torch.eye(12, dtype=torch.float64)
    rhs = torch.randn(4, 12, generator=g, dtype=torch.float64)
    chol = torch.linalg.cholesky(A)
    h = cholesky_step(chol, rhs)
    torch.testing.assert_close(h, -torch.cholesky_solve(rhs[:, :, None], chol).squeeze(-1), rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(torch.bmm(A, h[:, :, None]).squeeze(-1), -rhs, rtol=1e-10, atol=1e-12)


def test_gradient_and_gram_into_a_buffer_equal_the_plain_products() -> None:
    g = torch.Generator().manual_seed(4)
    J = torch.randn(3, 40, 9, generator=g, dtype=torch.float64)
    r = torch.randn(3, 40, generator=g, dtype=torch.float64)
    reference = torch.bmm(J.transpose(1, 2), r[:, :, None]).squeeze(-1)
    torch.testing.assert_close(gradient(J, r), reference, rtol=1e-13, atol=1e-13)
    buffer = torch.full((3, 9, 9), float("nan"), dtype=torch.float64)
    assert gram(J, out=buffer) is buffer
    assert torch.equal(buffer, gram(J))
