"""Slope fitting recovers power laws; targets have the smoothness and constants they claim."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from structnets.analysis import loglog_slope, minimax_exponent
from structnets.data import lacunary_target, power_target, sine_target


def test_exact_power_law_gives_exact_slope_and_point_interval() -> None:
    x = np.array([10.0, 20, 50, 100, 1000])
    fit = loglog_slope(x, 7.0 * x**-0.8)
    assert fit.slope == pytest.approx(-0.8, abs=1e-12)
    assert fit.intercept == pytest.approx(math.log(7.0), abs=1e-10)
    assert fit.high - fit.low < 1e-10


@pytest.mark.parametrize("exponent", [-2.0 / 3.0, -0.5, -1.6])
def test_noisy_power_law_interval_covers_the_exponent(exponent: float) -> None:
    # 40 synthetic experiments: 6 sizes over 2 decades × 5 seeds, log-normal noise. The 95%
    # interval must cover the truth in most of them and have roughly the right width.
    x = np.repeat(np.geomspace(50, 5000, 6), 5)
    rng = np.random.default_rng(0)
    covered, slopes = 0, []
    for rep in range(40):
        y = 2.0 * x**exponent * np.exp(0.3 * rng.standard_normal(x.size))
        fit = loglog_slope(x, y, n_boot=500, seed=rep)
        covered += fit.contains(exponent)
        slopes.append(fit.slope)
    assert covered >= 33  # nominal 38; the percentile bootstrap undercovers slightly at 5 reps
    # Standard error of the OLS slope: σ/√(Σ(lx − mean)²) ≈ 0.3/√(30·var) — compare the spread.
    lx = np.log(x)
    se = 0.3 / math.sqrt(((lx - lx.mean()) ** 2).sum())
    assert abs(np.std(slopes) / se - 1) < 0.35
    assert abs(np.mean(slopes) - exponent) < 2 * se


def test_slope_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="`x`"):
        loglog_slope([1, 2], [1, 2])
    with pytest.raises(ValueError, match="`y`"):
        loglog_slope([1, 2, 3], [1, 0, 2])
    with pytest.raises(ValueError, match="`x`"):
        loglog_slope([2, 2, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="`level`"):
        loglog_slope([1, 2, 3], [1, 2, 3], level=1.5)


def test_minimax_exponent() -> None:
    assert minimax_exponent(1, 1) == pytest.approx(-2 / 3)
    assert minimax_exponent(2, 4) == pytest.approx(-0.5)
    with pytest.raises(ValueError, match="`s`"):
        minimax_exponent(0, 1)


@pytest.mark.parametrize(
    "target",
    [
        power_target(1, 0.7),
        power_target(2, 1.5),
        power_target(4, 2.5),
        sine_target(2, 1.5),
        lacunary_target(4, 1.2, levels=5),
        lacunary_target(2, 2.0, levels=6, directions="dense"),
        lacunary_target(4, 1.2, levels=4, directions="dense"),
    ],
    ids=lambda t: t.name,
)
def test_holder_constant_holds_for_top_derivatives(target) -> None:
    kappa = math.ceil(target.beta) - 1
    gamma = target.beta - kappa
    generator = torch.Generator().manual_seed(1)
    x = torch.rand(3000, target.d, generator=generator, dtype=torch.float64)
    # Pairs at all scales, including very close ones where the singularity bites.
    y = (
        x
        + torch.randn(3000, target.d, generator=generator, dtype=torch.float64)
        * torch.logspace(-6, 0, 3000, dtype=torch.float64)[:, None]
    ).clamp(0, 1)
    distance = (x - y).abs().max(1).values.clamp_min(1e-300)
    from structnets.constructive.swish_approximator import multi_indices

    for alpha in multi_indices(target.d, kappa):
        if sum(alpha) != kappa:
            continue
        diff = (target.derivative(alpha, x) - target.derivative(alpha, y)).abs()
        assert torch.all(diff <= target.R * distance**gamma * (1 + 1e-9) + 1e-12)
    assert target(x).abs().max().item() <= target.sup_norm + 1e-12


def test_power_target_is_no_smoother_than_beta() -> None:
    # The κ-th derivative's Hölder quotient at the singularity tends to a positive constant for
    # exponent γ = β − κ and blows up for any larger exponent.
    target = power_target(1, 1.5)
    centre = (1 / math.pi) % 1.0
    h = torch.logspace(-8, -2, 7, dtype=torch.float64)
    x0 = torch.full((7, 1), centre, dtype=torch.float64)
    quotient = (target.derivative((1,), x0 + h[:, None]) - target.derivative((1,), x0)).abs() / h**0.5
    torch.testing.assert_close(quotient, torch.full_like(quotient, 1.5), rtol=1e-6, atol=0)
    larger = quotient / h**0.1  # the quotient for exponent 0.6 grows like h^{−0.1} as h → 0
    assert larger[0] / larger[-1] == pytest.approx(10**0.6, rel=1e-5)


def test_lacunary_sobolev_energy_decays_at_rate_s() -> None:
    # d = 1: the Fourier energy at frequency 2^k is 2^{−2ks}/2 (cosines of unit amplitude ratio).
    s = 1.5
    target = lacunary_target(1, s, levels=8)
    n = 4096
    x = torch.arange(n, dtype=torch.float64)[:, None] / n
    spectrum = torch.fft.rfft(target(x)).abs() / (n / 2)
    amplitudes = spectrum[2 ** torch.arange(8)]
    torch.testing.assert_close(amplitudes, 2.0 ** (-s * torch.arange(8, dtype=torch.float64)), rtol=1e-9, atol=1e-12)


def test_dense_lacunary_levels_carry_many_directions_with_energy_two_to_the_minus_2ks() -> None:
    d, s, K = 2, 1.0, 6
    dense = lacunary_target(d, s, levels=K, directions="dense")
    # Same as the one-direction series at d = 1 (one direction per level either way).
    x1 = torch.rand(500, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(
        lacunary_target(1, s, levels=K, directions="dense")(x1), lacunary_target(1, s, levels=K)(x1), rtol=0, atol=0
    )
    # 2^{k(d−1)} waves of amplitude 2^{−ks}·2^{−k(d−1)/2} at level k.
    assert dense.sup_norm == pytest.approx(sum(2.0 ** (-k * s) * 2 ** (k / 2) for k in range(K)))
    # Level energies on a fine periodic grid: the waves are nearly orthogonal, so the L² energy of
    # level k is 2^{−2ks}/2 up to the random directions' overlap; the sum of levels' energies is
    # checked against the measured mean square (to 10%).
    m = 256
    grid = torch.stack(torch.meshgrid(torch.arange(m), torch.arange(m), indexing="ij"), -1).reshape(-1, 2) / m
    mean_square = float((dense(grid.double()) ** 2).mean())
    expected = sum(2.0 ** (-2 * k * s) / 2 for k in range(K))
    assert mean_square == pytest.approx(expected, rel=0.1)
    with pytest.raises(ValueError, match="`levels`"):
        lacunary_target(4, 1.0, levels=8, directions="dense")  # 2^{3k} waves per level: too many
    with pytest.raises(ValueError, match="`directions`"):
        lacunary_target(2, 1.0, directions="many")


def test_sample_is_seeded_and_noisy() -> None:
    target = lacunary_target(2, 1.0, levels=4)
    X1, y1 = target.sample(100, noise=0.1, seed=3)
    X2, y2 = target.sample(100, noise=0.1, seed=3)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    clean = target(torch.from_numpy(X1)).numpy()
    assert 0.07 < np.std(y1 - clean) < 0.13
    with pytest.raises(ValueError, match="`beta`"):
        power_target(1, 2.0)
    with pytest.raises(ValueError, match="`x`"):
        target(torch.zeros(3, 3, dtype=torch.float64))
