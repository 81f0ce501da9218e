"""Batched Levenberg–Marquardt: exact on linear problems, classic test problems, member independence."""

from __future__ import annotations

import pytest
import torch

from structnets.models.ensemble_mlp import EnsembleMLP
from structnets.training.lbfgs import batched_lbfgs
from structnets.training.levenberg_marquardt import batched_levenberg_marquardt


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
