"""The Swish bump ψ^τ: its identities and the decay bounds the construction's proof uses."""

from __future__ import annotations

import math

import pytest
import torch

from structnets.constructive.swish_bump import (
    BUMP_MAX,
    G_MAX,
    SWISH_DERIVATIVE_MAX,
    absolute_sum_excess,
    deviation_envelope,
    far_moment,
    partition_sum_error,
    swish_bump,
    trapezoid,
)

silu = torch.nn.functional.silu


def test_constants_are_the_extrema_of_swish() -> None:
    z = torch.linspace(-20, 20, 2_000_001, dtype=torch.float64)
    g = silu(z) - torch.relu(z)
    assert abs(g.abs().max().item() - G_MAX) < 1e-10
    z.requires_grad_(True)
    (grad,) = torch.autograd.grad(silu(z).sum(), z)
    assert grad.max().item() <= SWISH_DERIVATIVE_MAX + 1e-9
    assert grad.max().item() > SWISH_DERIVATIVE_MAX - 1e-6
    # ρ'(−z) = 1 − ρ'(z) because ρ(z) − ρ(−z) = z.
    assert abs(grad.min().item() - (1 - grad.max().item())) < 1e-9


@pytest.mark.parametrize("tau", [0.5, 2.0, 10.0, 50.0])
def test_bump_is_within_its_deviation_envelope_of_the_trapezoid(tau: float) -> None:
    u = torch.linspace(-8, 8, 160_001, dtype=torch.float64)
    psi = swish_bump(u, tau)
    envelope = (
        sum(
            torch.tensor([deviation_envelope(tau * abs(v - a)) for v in u[::100].tolist()], dtype=torch.float64)
            for a in (-2.0, -1.0, 1.0, 2.0)
        )
        / tau
    )
    assert torch.all(
        (psi[::100] - trapezoid(u[::100])).abs() <= envelope + 1e-13
    )  # float64 rounding of ρ(τu) at |τu| ~ 100
    assert psi.abs().max().item() <= BUMP_MAX


def test_bump_tends_to_the_trapezoid() -> None:
    u = torch.linspace(-5, 5, 10_001, dtype=torch.float64)
    gaps = [(swish_bump(u, tau) - trapezoid(u)).abs().max().item() for tau in (10.0, 100.0, 1000.0)]
    # Near a corner the rounding is g(τ·dist)/τ ≤ g*/τ, attained within 1/τ of the corner.
    for gap, tau in zip(gaps, (10.0, 100.0, 1000.0)):
        assert 0.5 * G_MAX / tau < gap <= 2 * G_MAX / tau + 1e-12


@pytest.mark.parametrize("M", [1, 3, 10])
@pytest.mark.parametrize("tau", [1.0, 5.0, 30.0])
def test_partition_sum_telescopes_and_is_near_one(M: int, tau: float) -> None:
    y = torch.linspace(0, 3 * M, 30_001, dtype=torch.float64)
    total = sum(swish_bump(y - 3 * k, tau) for k in range(M + 1))
    closed = (
        silu(tau * (y + 2)) - silu(tau * (y + 1)) - silu(tau * (y - 3 * M - 1)) + silu(tau * (y - 3 * M - 2))
    ) / tau
    torch.testing.assert_close(total, closed, rtol=0, atol=1e-12)
    assert (total - 1).abs().max().item() <= partition_sum_error(tau)
    if tau >= 5:  # not vacuous: for sharp bumps ε_T is attained up to a factor 3 at y = 0, 3M
        assert (total - 1).abs().max().item() >= partition_sum_error(tau) / 3


@pytest.mark.parametrize("tau", [1.0, 4.0, 20.0])
@pytest.mark.parametrize("beta", [0.5, 1.5, 3.0])
def test_absolute_sum_and_far_moment_bounds(tau: float, beta: float) -> None:
    M = 6
    y = torch.linspace(0, 3 * M, 60_001, dtype=torch.float64)
    u = y[:, None] - 3 * torch.arange(M + 1, dtype=torch.float64)
    psi = swish_bump(u, tau).abs()
    assert psi.sum(1).max().item() <= 1 + absolute_sum_excess(tau)
    excess = (u.abs() ** beta - 2**beta).clamp_min(0)
    assert (psi * excess).sum(1).max().item() <= far_moment(tau, beta)


@pytest.mark.parametrize("tau", [1.0, 3.0, 10.0, 30.0])
def test_papers_decay_bound_away_from_the_cell(tau: float) -> None:
    # Li et al.: |φ_m^τ| ≤ (2‖ρ'‖∞)^{d−1}·6τe^{−τ} away from its cell (|u|_∞ ≥ 3); d = 1 and 2.
    u = torch.linspace(3, 40, 37_001, dtype=torch.float64)
    far = torch.cat([u, -u])
    bound = 6 * tau * math.exp(-tau)
    assert swish_bump(far, tau).abs().max().item() <= bound
    near = torch.linspace(-40, 40, 801, dtype=torch.float64)
    grid = torch.cartesian_prod(far[::97], near)
    phi = swish_bump(grid[:, 0], tau) * swish_bump(grid[:, 1], tau)
    assert phi.abs().max().item() <= 2 * SWISH_DERIVATIVE_MAX * bound


@pytest.mark.parametrize("beta", [0.5, 1.5, 3.0, 5.5])
def test_trapezoid_moment_is_the_supremum_one_point_five_to_the_beta(beta: float) -> None:
    from structnets.constructive.swish_bump import trapezoid, trapezoid_moment

    value = trapezoid_moment(beta)
    y = torch.linspace(-6.0, 6.0, 24001, dtype=torch.float64)
    brute = sum(trapezoid(y - 3 * k) * (y - 3 * k).abs() ** beta for k in range(-4, 5)).max().item()
    assert brute <= value <= 1.5**beta * (1 + 2e-3) and brute == pytest.approx(1.5**beta, rel=1e-6)


@pytest.mark.parametrize("beta", [0.5, 1.5, 3.0])
@pytest.mark.parametrize("tau", [0.5, 2.0, 8.0, 40.0])
def test_bump_moment_bounds_the_swish_weighted_sum(tau: float, beta: float) -> None:
    from structnets.constructive.swish_bump import bump_moment, trapezoid_moment

    value = bump_moment(tau, beta)
    y = torch.rand(20000, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 12 - 6
    brute = sum(swish_bump(y - 3 * k, tau).abs() * (y - 3 * k).abs() ** beta for k in range(-12, 13)).max().item()
    assert brute <= value
    if tau >= 8.0:  # the rounding costs nothing at the weighted sup: W_β(τ) = S_β to 4 digits
        assert value <= trapezoid_moment(beta) * (1 + 2e-3)
