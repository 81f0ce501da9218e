"""Bound calculators against hand-computed one- and two-layer cases, and the paper's orderings."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from structnets.analysis import (
    dudley_entropy_bound,
    margin_loss,
    margins,
    pac_bayes_bound,
    parameter_count_bound,
    rank_sparse_bound,
    rank_sparse_bounds,
    schatten_ball_log_covering,
    spectral_bound,
)

F64 = torch.float64
A1 = torch.tensor([[3.0, 0.0], [0.0, 1.0]], dtype=F64)  # σ = (3, 1)
A2 = torch.tensor([[math.sqrt(2.0), math.sqrt(2.0)]], dtype=F64)  # σ = (2,), one row of norm 2
SETTING = {"n": 1000, "margin": 0.5, "input_norm": 2.0, "empirical_risk": 0.1, "delta": 0.05}


def _rank_r(rows: int, cols: int, rank: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    p, _ = torch.linalg.qr(torch.randn(rows, rank, generator=g, dtype=F64))
    q, _ = torch.linalg.qr(torch.randn(cols, rank, generator=g, dtype=F64))
    return p @ torch.diag(torch.linspace(1.0, 0.5, rank, dtype=F64)) @ q.T  # σ_1 = 1


# ---------------------------------------------------------------------------------- margins


def test_margins_and_margin_loss_by_hand() -> None:
    out = torch.tensor([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0]])
    m = margins(out, torch.tensor([0, 2]))
    assert m.tolist() == [1.0, -2.0]
    assert margin_loss(m, 1.0) == 1.0
    assert margin_loss(m, 0.5) == 0.5
    with pytest.raises(ValueError, match="`targets`"):
        margins(out, torch.tensor([0, 3]))
    with pytest.raises(ValueError, match="`margin`"):
        margin_loss(m, 0.0)


# ---------------------------------------------------------------------------- covering numbers


def test_schatten_ball_covering_by_hand() -> None:
    # parameter count: rows·cols·log(3√k_max/t)
    value, k = schatten_ball_log_covering(4, 4, 0.01)
    assert (value, k) == (pytest.approx(16 * math.log(3 * 2 / 0.01), rel=1e-12), 4)
    # rank-sparse by truncation, p = 1/2, M/s^p = 2: σ_{k+1} ≤ u_k = (2/(k+1))², head net at
    # radius t − u_k; the best k is 21 (the Maurey-tail cases are in test_rank_sparse_tail.py)
    value, k = schatten_ball_log_covering(100, 100, 0.01, p=0.5, relative_schatten_power=2.0, tail_covering="truncate")
    assert k == 21
    assert value == pytest.approx(201 * 21 * math.log(9 * math.sqrt(21) / (0.01 - (2 / 22) ** 2)), rel=1e-12)
    assert value < 10000 * math.log(3 * 10 / 0.01)
    # rank class (p = 0): (rows + cols + 1) r log(9√r / t)
    value, k = schatten_ball_log_covering(100, 100, 0.01, p=0, relative_schatten_power=3)
    assert (value, k) == (pytest.approx(201 * 3 * math.log(9 * math.sqrt(3) / 0.01), rel=1e-12), 3)
    # whole class inside radius ε/2 (k = 0), or inside radius ε of zero (t ≥ 1): one point
    assert schatten_ball_log_covering(50, 50, 0.5, p=1.0, relative_schatten_power=0.2) == (0.0, 0)
    assert schatten_ball_log_covering(50, 50, 1.0) == (0.0, 0)
    # large M: the parameter count is smaller and is returned instead
    value, k = schatten_ball_log_covering(3, 3, 1e-3, p=1.0, relative_schatten_power=3.0)
    assert (value, k) == (pytest.approx(9 * math.log(3 * math.sqrt(3) / 1e-3), rel=1e-12), 3)


def test_dudley_matches_closed_form_for_inverse_square_entropy() -> None:
    """log N = C/ε²: inf_α 4α + 12√(C/n) ln(1/α) at α* = 3√(C/n)."""
    c, n = 2.0, 10_000
    alpha = 3 * math.sqrt(c / n)
    exact = 4 * alpha + 12 * math.sqrt(c / n) * math.log(1 / alpha)
    value, found_alpha, integral = dudley_entropy_bound(lambda eps: c / eps**2, n)
    assert exact <= value <= exact * 1.01  # an upper bound, and a tight one
    assert found_alpha == pytest.approx(alpha, rel=0.02)
    assert value == pytest.approx(4 * found_alpha + 12 / math.sqrt(n) * integral, rel=1e-12)
    assert dudley_entropy_bound(lambda eps: 1e12 / eps**2, 10) == (4.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="finite"):
        dudley_entropy_bound(lambda eps: float("nan"), 10)


def test_one_layer_parameter_count_bound_by_hand() -> None:
    a = torch.diag(torch.tensor([2.0, 1.0, 0.0], dtype=F64))
    bound = parameter_count_bound([a], **SETTING)
    scale = math.e * SETTING["input_norm"] * 2.0  # K = e ρ^0 B s_1
    assert bound.lipschitz_scale == pytest.approx(scale, rel=1e-12)
    assert bound.parameters == 9
    t = min(SETTING["margin"] * bound.dudley_alpha / (2 * scale), 1.0)
    assert bound.log_covering_at_alpha == pytest.approx(9 * math.log(3 * math.sqrt(3) / t), rel=1e-9)
    assert bound.rademacher == pytest.approx(4 * bound.dudley_alpha + 12 / math.sqrt(1000) * bound.entropy_integral)
    assert bound.complexity == pytest.approx(2 * bound.rademacher)
    assert bound.confidence == pytest.approx(3 * math.sqrt(math.log(2 / 0.05) / 2000))
    assert bound.total == pytest.approx(0.1 + bound.complexity + bound.confidence)
    with pytest.raises(dataclasses.FrozenInstanceError):
        bound.total = 0.0  # type: ignore[misc]


# ------------------------------------------------------------------------ Bartlett / Neyshabur


def test_two_layer_spectral_bound_by_hand() -> None:
    bound = spectral_bound([A1, A2], lipschitz=1.5, data_norm=40.0, **SETTING)
    assert bound.spectral_norms == pytest.approx((3.0, 2.0))
    assert bound.norm_ratios == pytest.approx((4.0 / 3.0, 1.0))  # row-norm sums / σ_1
    r_a = 1.5 * 3.0 * 2.0 * ((4.0 / 3.0) ** (2 / 3) + 1.0) ** 1.5
    assert bound.spectral_complexity == pytest.approx(r_a, rel=1e-12)
    assert bound.width == 2
    expected = 72 * 40.0 * math.log(4) * math.log(1000) * r_a / (0.5 * 1000)
    assert bound.complexity == pytest.approx(expected, rel=1e-12)
    assert bound.total == pytest.approx(0.1 + 8 / 1000 + expected + 3 * math.sqrt(math.log(40) / 2000))
    # the default ‖X‖_F is its bound B√n; references shift the (2,1) norms
    assert spectral_bound([A1, A2], **SETTING).data_norm == pytest.approx(2.0 * math.sqrt(1000))
    shifted = spectral_bound([A1, A2], references=[A1, torch.zeros_like(A2)], **SETTING)
    assert shifted.norm_ratios == pytest.approx((0.0, 1.0))


def test_two_layer_pac_bayes_bound_by_hand() -> None:
    bound = pac_bayes_bound([A1, A2], **SETTING)
    assert bound.stable_rank_sum == pytest.approx(10.0 / 9.0 + 1.0, rel=1e-12)
    assert bound.spectral_product == pytest.approx(6.0)
    kl = (42**2 * math.e**2 / 2) * 4 * 4.0 * 2 * math.log(16) * 36.0 * (10 / 9 + 1) / 0.25
    assert bound.kl == pytest.approx(kl, rel=1e-12)
    log_term = math.log(6 * 2 * 1000**2 / 0.05)
    assert bound.complexity == pytest.approx(4 * math.sqrt((kl + log_term) / 999), rel=1e-12)
    assert bound.total == pytest.approx(0.1 + bound.complexity)


def test_bounds_are_invariant_to_rebalancing_layers() -> None:
    """ReLU nets are positively homogeneous: (cA_1, A_2/c) is the same function."""
    torch.manual_seed(0)
    layers = [torch.randn(6, 4, dtype=F64), torch.randn(5, 6, dtype=F64), torch.randn(3, 5, dtype=F64)]
    scaled = [4.0 * layers[0], layers[1], layers[2] / 4.0]
    for calculator in (spectral_bound, pac_bayes_bound, parameter_count_bound):
        assert calculator(layers, **SETTING).total == pytest.approx(calculator(scaled, **SETTING).total, rel=1e-9)
    for a, b in zip(rank_sparse_bounds(layers, **SETTING), rank_sparse_bounds(scaled, **SETTING)):
        assert a.total == pytest.approx(b.total, rel=1e-9)


def test_bounds_shrink_with_more_samples_and_larger_margin() -> None:
    layers = [_rank_r(32, 10, 2, 0), _rank_r(4, 32, 2, 1)]
    for calculator in (spectral_bound, pac_bayes_bound, parameter_count_bound):
        small = calculator(layers, n=10**4, margin=0.1, input_norm=1.0)
        big = calculator(layers, n=10**8, margin=0.1, input_norm=1.0)
        wide = calculator(layers, n=10**8, margin=1.0, input_norm=1.0)
        assert big.complexity < small.complexity
        assert wide.complexity <= big.complexity


# ---------------------------------------------------------------------------- paper's orderings


def test_rank_sparse_never_exceeds_parameter_count() -> None:
    torch.manual_seed(1)
    layers = [torch.randn(20, 10, dtype=F64), torch.randn(20, 20, dtype=F64), torch.randn(3, 20, dtype=F64)]
    count = parameter_count_bound(layers, **SETTING)
    for bound in rank_sparse_bounds(layers, ps=(0.0, 0.1, 0.5, 1.0, 2.0, 10.0), **SETTING):
        assert bound.total <= count.total + 1e-12
        assert bound.sample_complexity <= count.sample_complexity * (1 + 1e-9)


def test_rank_sparse_beats_norm_bounds_when_rank_is_small() -> None:
    width, rank = 256, 2
    layers = [_rank_r(width, 100, rank, 0), _rank_r(width, width, rank, 1), _rank_r(10, width, rank, 2)]
    setting = {"n": 60_000, "margin": 0.5, "input_norm": 10.0}
    rank_bound = rank_sparse_bound(layers, p=0, **setting)
    assert rank_bound.complexity == 8.0 and rank_bound.ranks_at_alpha == (0, 0, 0)  # vacuous at this n
    assert rank_sparse_bound(layers, p=0, **{**setting, "n": 10**12}).ranks_at_alpha == (rank,) * 3
    assert rank_bound.schatten_powers == (2.0, 2.0, 2.0)
    count = parameter_count_bound(layers, **setting)
    spectral = spectral_bound(layers, **setting)
    pac = pac_bayes_bound(layers, **setting)
    assert rank_bound.sample_complexity < count.sample_complexity / 10
    assert rank_bound.sample_complexity < spectral.sample_complexity
    assert rank_bound.sample_complexity < pac.sample_complexity
    small_p = rank_sparse_bound(layers, p=0.05, **setting)
    assert small_p.sample_complexity < count.sample_complexity


def test_sample_complexity_grows_linearly_in_width_for_rank_sparse_and_quadratically_for_count() -> None:
    """Paper: Õ(W r L²) for small p vs Õ(W² L) norm/parameter-based. Fitted log-log slopes."""
    widths = [64, 128, 256, 512]
    rank_sc, count_sc = [], []
    for w in widths:
        layers = [_rank_r(w, 50, 2, 0), _rank_r(w, w, 2, 1), _rank_r(10, w, 2, 2)]
        setting = {"n": 10_000, "margin": 0.5, "input_norm": 5.0}
        rank_sc.append(rank_sparse_bound(layers, p=0, **setting).sample_complexity)
        count_sc.append(parameter_count_bound(layers, **setting).sample_complexity)
    log_w = np.log(widths)
    rank_slope = np.polyfit(log_w, np.log(rank_sc), 1)[0]
    count_slope = np.polyfit(log_w, np.log(count_sc), 1)[0]
    assert 0.8 <= rank_slope <= 1.3
    assert 1.6 <= count_slope <= 2.3


# ------------------------------------------------------------------------------- bad input


def test_bad_inputs_are_clear_errors_never_nan() -> None:
    good = [A1, A2]
    nan = A1.clone()
    nan[0, 1] = float("nan")
    with pytest.raises(ValueError, match=r"`matrices\[0\]` must be finite"):
        spectral_bound([nan, A2], **SETTING)
    with pytest.raises(ValueError, match="chain"):
        pac_bayes_bound([A2, A1], **SETTING)
    with pytest.raises(ValueError, match="empty"):
        parameter_count_bound([], **SETTING)
    with pytest.raises(ValueError, match="non-empty"):
        parameter_count_bound([torch.zeros(0, 2)], **SETTING)
    with pytest.raises(ValueError, match="2-D"):
        rank_sparse_bound([torch.ones(2, 2, 2)], p=1.0, **SETTING)
    with pytest.raises(TypeError, match="`matrices`"):
        spectral_bound(A1, **SETTING)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`p`"):
        rank_sparse_bound(good, p=-0.5, **SETTING)
    with pytest.raises(ValueError, match=r"`ps\[1\]`"):
        rank_sparse_bounds(good, ps=(1.0, float("nan")), **SETTING)
    for key, value in (("margin", 0.0), ("n", 1), ("delta", 1.0), ("input_norm", -1.0), ("empirical_risk", 1.5)):
        with pytest.raises(ValueError, match=f"`{key}`"):
            parameter_count_bound(good, **{**SETTING, key: value})
    with pytest.raises(ValueError, match="zero"):
        spectral_bound([torch.zeros(2, 2, dtype=F64), A2], **SETTING)
    # a zero network is the single zero function: the covering bound is finite, not NaN
    zero = parameter_count_bound([torch.zeros(2, 2, dtype=F64), A2], **SETTING)
    assert math.isfinite(zero.total) and zero.log_covering_at_alpha == 0.0


def test_float32_low_rank_layers_keep_their_rank() -> None:
    """A float32 rank-2 product has rounding-level singular values; they must not count."""
    g = torch.Generator().manual_seed(7)
    u, v = torch.randn(64, 2, generator=g), torch.randn(2, 40, generator=g)
    layers = [u @ v, torch.randn(3, 64, generator=g)]
    assert layers[0].dtype == torch.float32
    bound = rank_sparse_bound(layers, p=0, n=10**12, margin=1.0, input_norm=1.0)
    assert bound.schatten_powers == (2.0, 3.0)
    assert bound.ranks_at_alpha == (2, 3)
    small_p = rank_sparse_bound(layers, p=0.01, n=10**12, margin=1.0, input_norm=1.0)
    exact = torch.linalg.svdvals(u.double() @ v.double())[:2]
    assert small_p.schatten_powers[0] == pytest.approx(float((exact**0.01).sum()), rel=1e-5)


def test_swish_lipschitz_constant_is_an_upper_bound() -> None:
    from structnets.analysis.bounds import SWISH_LIPSCHITZ

    x = torch.linspace(-30, 30, 600_001, dtype=F64)
    s = torch.sigmoid(x)
    derivative = (s * (1 + x * (1 - s))).abs()
    assert derivative.max().item() <= SWISH_LIPSCHITZ <= derivative.max().item() + 1e-5
