"""The explicit low-rank Swish construction: structure, widths, error ≤ bound, rates in M and λ."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from structnets.analysis import loglog_slope
from structnets.constructive import swish_approximator
from structnets.constructive.swish_approximator import (
    construction_width,
    multi_indices,
    paper_width,
    taylor_constant,
    taylor_polynomial,
)
from structnets.data import SmoothTarget, lacunary_target, power_target, sine_target
from structnets.nn import LowRankLinear, Swish


def _grid(d: int, n: int) -> torch.Tensor:
    axis = torch.linspace(0, 1, n, dtype=torch.float64)
    return torch.cartesian_prod(*[axis] * d).reshape(-1, d)


def _sup_error(target: SmoothTarget, M: int, n: int | None = None, **options) -> tuple[float, object]:
    approx = swish_approximator(target.function, target.derivative, target.d, target.beta, M, R=target.R, **options)
    points = _grid(target.d, n or (20_001 if target.d == 1 else 121))
    with torch.no_grad():
        error = (approx(points) - target(points)).abs().max().item()
    return error, approx


TARGETS = [
    power_target(1, 0.5),
    power_target(1, 1.5),
    sine_target(1, 3.0),
    power_target(2, 1.5),
    sine_target(2, 2.0),
    lacunary_target(2, 1.5, levels=3),
]


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
def test_measured_sup_error_is_below_the_bound(target: SmoothTarget) -> None:
    M = 8 if target.d == 1 else 6
    error, approx = _sup_error(target, M)
    bound = approx.bound
    assert error <= bound.total
    assert bound.taylor > 0 and bound.leakage > 0 and bound.product >= 0
    # Not vacuous: the bound is within a factor 50 of what is measured.
    assert bound.total < 50 * error


@pytest.mark.parametrize(
    ("target", "Ms"),
    [
        (power_target(1, 0.5), [4, 8, 16, 32, 64]),
        (power_target(1, 1.5), [4, 8, 16, 32, 64]),
        (power_target(1, 3.0), [4, 8, 16, 32, 64]),
        (sine_target(1, 3.0), [4, 8, 16, 32, 64]),
        (sine_target(2, 2.0), [6, 12, 24]),
    ],
    ids=lambda v: v.name if hasattr(v, "name") else str(v),
)
def test_error_falls_like_M_to_the_minus_beta(target: SmoothTarget, Ms: list[int]) -> None:
    errors = []
    for M in Ms:
        error, approx = _sup_error(target, M)
        assert error <= approx.bound.total
        errors.append(error)
    slope = loglog_slope(Ms, errors).slope
    assert abs(slope + target.beta) < 0.2, (slope, errors)


def test_product_term_takes_over_for_small_lambda() -> None:
    target = sine_target(1, 3.0)
    sharp, sharp_approx = _sup_error(target, 64, lam=1e4)
    errors = []
    for lam in (32.0, 64.0, 128.0):
        error, approx = _sup_error(target, 64, lam=lam)
        assert error <= approx.bound.total
        assert approx.bound.product > approx.bound.taylor  # the c₃/λ² term dominates the bound
        errors.append(error)
    assert errors[-1] > 10 * sharp  # a floor set by λ, not by M
    # Product error ∝ λ^{-2}.
    assert abs(loglog_slope([32.0, 64.0, 128.0], errors).slope + 2) < 0.2
    assert sharp_approx.bound.product < sharp_approx.bound.taylor


def test_leakage_shrinks_with_tau_and_the_limit_is_the_relu_taylor_term() -> None:
    target = power_target(1, 1.5)
    leak = [swish_approximator(target.function, target.derivative, 1, 1.5, 8, tau=t, R=target.R).bound for t in (2.0, 8.0, 32.0)]
    assert leak[0].leakage > leak[1].leakage > leak[2].leakage
    assert leak[0].taylor == leak[2].taylor == pytest.approx(taylor_constant(1, 1) * target.R * (2 / 24) ** 1.5)
    for tau in (2.0, 8.0):
        error, approx = _sup_error(target, 8, tau=tau)
        assert error <= approx.bound.total


@pytest.mark.parametrize(("d", "beta", "M"), [(1, 0.5, 5), (1, 2.5, 7), (2, 1.5, 4), (2, 2.5, 3), (3, 1.5, 2)])
def test_structure_is_low_rank_swish(d: int, beta: float, M: int) -> None:
    target = power_target(d, beta)
    approx = swish_approximator(target.function, target.derivative, d, beta, M, R=target.R)
    layers = list(approx.network)
    assert isinstance(layers[0], nn.Linear) and isinstance(layers[-1], nn.Linear)
    assert all(isinstance(layer, Swish) for layer in layers[1:-1:2])
    blocks = layers[2:-1:2]
    assert all(isinstance(block, LowRankLinear) for block in blocks)
    nonlinear = [layers[0].out_features] + [b.out_features for b in blocks]
    assert all(width == approx.width for width in nonlinear)
    for block in blocks:
        # Bias-free linear layer (V) of width H ≤ nonlinear width / 3 between Swish layers.
        assert 3 * block.rank <= approx.width
        assert tuple(block.V.shape) == (block.rank, approx.width)
    assert [b.rank for b in blocks] == list(approx.ranks)
    assert all(p.dtype == torch.float64 for p in approx.network.parameters())
    x = _grid(d, 5)
    assert approx(x).shape == (x.shape[0],)


@pytest.mark.parametrize(("d", "kappa", "M"), [(1, 0, 9), (1, 2, 4), (2, 1, 5), (2, 2, 3), (3, 1, 2), (4, 0, 1)])
def test_widths_match_the_formula(d: int, kappa: int, M: int) -> None:
    widths = construction_width(d, kappa, M)
    monomials = len(multi_indices(d, kappa))
    assert widths[0] == 4 * d * (M + 1) + 2 * d
    assert widths[-1] == 4 * (monomials - 1) + 2
    middle = widths[1:-1]
    assert len(middle) == max(d - 1, kappa - 1, 0)
    if d == 2 and kappa <= 2:
        # bump products (M+1)², degree-2 monomials (3 if κ = 2), carried x₁, x₂ (and ψ none left)
        assert middle[0] == 4 * (M + 1) ** 2 + 4 * (3 if kappa == 2 else 0) + 2 * 2
    # The paper's width formula dominates ours (it spends 6 units per cell, we spend ≤ 4).
    assert max(widths) <= paper_width(d, kappa, M)
    assert paper_width(2, 1, 4) == 2 * 3 + 4 * 1 + 4 * 2 + 6 * 25


@pytest.mark.parametrize("target", [power_target(1, 2.5), sine_target(2, 2.5), power_target(2, 1.3), lacunary_target(1, 2.2, levels=4)], ids=lambda t: t.name)
def test_taylor_remainder_bound(target: SmoothTarget) -> None:
    kappa = math.ceil(target.beta) - 1
    generator = torch.Generator().manual_seed(0)
    for _ in range(5):
        centre = torch.rand(target.d, generator=generator, dtype=torch.float64)
        x = torch.rand(400, target.d, generator=generator, dtype=torch.float64)
        remainder = (target(x) - taylor_polynomial(target.derivative, centre, kappa, x)).abs()
        distance = (x - centre).abs().max(1).values
        assert torch.all(remainder <= taylor_constant(target.d, kappa) * target.R * distance**target.beta + 1e-12)


def test_taylor_constant_is_below_the_papers() -> None:
    for d in range(1, 5):
        for kappa in range(0, 5):
            assert taylor_constant(d, kappa) <= math.comb(kappa + d - 1, d - 1)
            exact = sum(1 / math.prod(math.factorial(a) for a in alpha) for alpha in multi_indices(d, kappa) if sum(alpha) == kappa)
            assert taylor_constant(d, kappa) == pytest.approx(exact)


_T = power_target(1, 1.5)


@pytest.mark.parametrize(
    ("kwargs", "argument", "error"),
    [
        ({"f": 3.0}, "f", ValueError),
        ({"derivatives": None}, "derivatives", ValueError),
        ({"M": 0}, "M", ValueError),
        ({"tau": -1.0}, "tau", ValueError),
        ({"lam": -2.0}, "lam", ValueError),
        ({"lam": 0.0}, "lam", ValueError),
        ({"beta": 0.0}, "beta", ValueError),
        ({"beta": -1.0}, "beta", ValueError),
        ({"d": 2}, "f", ValueError),  # f is one-dimensional: d mismatch
        ({"kappa": 2}, "kappa", ValueError),
        ({"R": -1.0}, "R", ValueError),
        ({"M": 2.5}, "M", TypeError),
    ],
)
def test_bad_input_names_the_argument(kwargs: dict, argument: str, error: type) -> None:
    call = {"f": _T.function, "derivatives": _T.derivative, "d": 1, "beta": 1.5, "M": 4, "R": _T.R}
    call.update(kwargs)
    with pytest.raises(error, match=f"`{argument}`"):
        swish_approximator(**call)
