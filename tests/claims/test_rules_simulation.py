"""The decision rules on simulated results where the right verdict is known (fixed seeds, numpy-vectorised).

Each rule's false-positive and false-negative rates are measured over simulated draws: a true rate
over 18 cells must come out reproduced ≥ 90 % of the time, a true loss beyond the margin must be
refuted, a true equality must not be refuted too often, and so on. Several tests also run the
rule each replaced, to show that the old rule decided before the data did.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from structnets.claims import rules
from structnets.claims.evidence import CONSISTENT, NOT_REPRODUCED, OPTIMISATION_LIMITED, REFUTED, REPRODUCED

SIMS = 2000


def share(verdicts: np.ndarray, verdict: str) -> float:
    return float(np.mean(verdicts == verdict))


# --- building blocks -------------------------------------------------------------------------------


def test_holm_matches_its_definition() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        m = int(rng.integers(1, 7))
        p = rng.uniform(0, 0.1, size=m)
        order = np.argsort(p)
        expected = np.zeros(m, dtype=bool)
        for j, i in enumerate(order):
            if p[i] > 0.05 / (m - j):
                break
            expected[i] = True
        assert np.array_equal(rules.holm(p), expected)


def test_ols_slope_matches_linregress() -> None:
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(4, 12)), rng.normal(size=(4, 12))
    fit = rules.ols_slope(x, y)
    for i in range(4):
        reference = stats.linregress(x[i], y[i])
        assert fit.slope[i] == pytest.approx(reference.slope, rel=1e-12)
        assert fit.se[i] == pytest.approx(reference.stderr, rel=1e-10)
    assert np.all(fit.df == 10)


def test_nadeau_bengio_se_is_the_corrected_formula() -> None:
    d = np.array([0.1, -0.2, 0.3, 0.0, 0.05])
    expected = math.sqrt((1 / 5 + 20 / 80) * d.var(ddof=1))
    assert rules.nadeau_bengio_se(d, 80, 20) == pytest.approx(expected, rel=1e-14)


# --- upper-bound rates -----------------------------------------------------------------------------

LEVELS = np.repeat(np.geomspace(100, 6400, 7), 5)  # 7 sample sizes × 5 seeds, as smoothness-rates


def _rate_cells(rng: np.random.Generator, slopes: np.ndarray, noise: float = 0.3) -> rules.SlopeTest:
    """Simulated log–log fits: (SIMS, cells) slopes, with log error = slope·log n + N(0, noise²)."""
    lx = np.log(LEVELS)
    ly = slopes[..., None] * lx + rng.normal(scale=noise, size=(*slopes.shape, lx.size))
    return rules.ols_slope(lx, ly)


def test_a_true_rate_over_18_cells_is_reproduced_at_least_90_percent() -> None:
    rng = np.random.default_rng(2)
    rate = np.full((SIMS, 18), -0.8)
    fit = _rate_cells(rng, rate)
    verdicts, _ = rules.upper_bound_rate(fit.slope, fit.se, fit.df, rate, np.zeros_like(rate, dtype=bool))
    assert share(verdicts, REPRODUCED) >= 0.90
    # The replaced rule (every cell's 95 % interval contains the rate) reproduces ≈ 0.95¹⁸ ≈ 0.40.
    half = stats.t.ppf(0.975, fit.df) * fit.se
    old = np.all(np.abs(fit.slope - rate) <= half, axis=-1)
    assert float(old.mean()) < 0.5


def test_steeper_cells_are_never_a_miss() -> None:
    rng = np.random.default_rng(3)
    rate = np.full((SIMS, 18), -0.8)
    fit = _rate_cells(rng, rate - 0.6)  # every cell falls much faster than the bound
    verdicts, _ = rules.upper_bound_rate(fit.slope, fit.se, fit.df, rate, np.zeros_like(rate, dtype=bool))
    assert share(verdicts, REPRODUCED) >= 0.99


def test_one_slower_cell_refutes_or_is_optimisation_limited() -> None:
    rng = np.random.default_rng(4)
    rate = np.full((SIMS, 18), -0.8)
    truth = rate.copy()
    truth[:, 5] = -0.3  # one cell falls markedly slower than the bound allows
    fit = _rate_cells(rng, truth)
    settled = np.zeros_like(rate, dtype=bool)
    verdicts, slower = rules.upper_bound_rate(fit.slope, fit.se, fit.df, rate, settled)
    assert share(verdicts, REFUTED) >= 0.90
    assert float(slower[:, 5].mean()) >= 0.90
    limited = settled.copy()
    limited[:, 5] = True
    verdicts, _ = rules.upper_bound_rate(fit.slope, fit.se, fit.df, rate, limited)
    assert share(verdicts, OPTIMISATION_LIMITED) >= 0.85
    assert share(verdicts, REFUTED) <= 0.05  # a settled cell is wrongly called slower ≤ α of the time


# --- predicted exponents ---------------------------------------------------------------------------


def test_predicted_exponent_two_sided() -> None:
    rng = np.random.default_rng(5)
    predicted = np.full((SIMS, 4), 1.0)
    on = _rate_cells(rng, predicted, noise=0.2)
    verdicts, _, _ = rules.predicted_exponent(on.slope, on.se, on.df, predicted, tolerance=0.25)
    assert share(verdicts, REPRODUCED) >= 0.90
    assert share(verdicts, REFUTED) <= 0.05
    far = _rate_cells(rng, predicted.copy() + np.array([0.0, 0.0, 0.8, 0.0]), noise=0.2)  # one cell at 1.8
    verdicts, _, _ = rules.predicted_exponent(far.slope, far.se, far.df, predicted, tolerance=0.25)
    assert share(verdicts, REFUTED) >= 0.90
    below = _rate_cells(rng, predicted.copy() - 0.8, noise=0.2)  # too flat is a miss too: two-sided
    verdicts, _, _ = rules.predicted_exponent(below.slope, below.se, below.df, predicted, tolerance=0.25)
    assert share(verdicts, REFUTED) >= 0.90
    # On the band's edge the equivalence test is reproduced at most ≈ α of the time (its size).
    edge = _rate_cells(rng, np.full((SIMS, 1), 1.25), noise=0.2)
    verdicts, _, _ = rules.predicted_exponent(edge.slope, edge.se, edge.df, 1.0, tolerance=0.25)
    assert share(verdicts, REPRODUCED) <= 0.07


def test_predicted_exponent_of_an_exact_construction() -> None:
    verdicts, _, _ = rules.predicted_exponent(
        np.array([[1.02, 0.9], [1.5, 1.0], [1.1, 1.2]]), 0.0, 1.0, 1.0, tolerance=0.15
    )
    assert list(verdicts) == [REPRODUCED, REFUTED, REFUTED]  # 1.2 is outside 1 ± 0.15, exactly


# --- non-inferiority and superiority on correlated CV folds -----------------------------------------


def _cv_differences(rng: np.random.Generator, mean: float, sd: float, folds: int = 10) -> np.ndarray:
    """Fold differences correlated as CV folds are (shared training rows): equicorrelation ρ = 1/folds,
    the Nadeau–Bengio model with n_test/n = 1/folds."""
    rho = 1.0 / folds
    shared = rng.normal(size=(SIMS, 1)) * math.sqrt(rho)
    own = rng.normal(size=(SIMS, folds)) * math.sqrt(1 - rho)
    return mean + sd * (shared + own)


def test_a_true_one_point_loss_is_refuted_at_a_half_point_margin() -> None:
    rng = np.random.default_rng(6)
    d = _cv_differences(rng, -1.0, 0.35)
    verdicts, _, _ = rules.non_inferiority(d, 0.5, n_train=900, n_test=100)
    assert share(verdicts, REFUTED) >= 0.85
    assert share(verdicts, REPRODUCED) == 0.0


def test_a_true_equality_is_rarely_refuted_and_mostly_reproduced() -> None:
    rng = np.random.default_rng(7)
    d = _cv_differences(rng, 0.0, 0.35)
    verdicts, _, _ = rules.non_inferiority(d, 0.5, n_train=900, n_test=100)
    assert share(verdicts, REFUTED) <= 0.01
    assert share(verdicts, REPRODUCED) >= 0.85
    # A small true loss inside the margin is not a refutation either.
    d = _cv_differences(rng, -0.3, 0.35)
    verdicts, _, _ = rules.non_inferiority(d, 0.5, n_train=900, n_test=100)
    assert share(verdicts, REFUTED) <= 0.05


def test_the_corrected_variance_holds_the_level_on_correlated_folds() -> None:
    rng = np.random.default_rng(8)
    d = _cv_differences(rng, -0.5, 0.35)  # a true loss exactly at the margin
    verdicts, _, _ = rules.non_inferiority(d, 0.5, n_train=900, n_test=100)
    corrected = share(verdicts, REPRODUCED)
    naive_lower = d.mean(axis=1) - stats.t.ppf(0.95, 9) * d.std(axis=1, ddof=1) / math.sqrt(10)
    naive = float(np.mean(naive_lower > -0.5))
    assert corrected <= 0.07  # the test's size, ≈ α
    assert naive > 0.10  # the uncorrected t-test declares "not worse" too often


def test_superiority() -> None:
    rng = np.random.default_rng(9)
    gain = _cv_differences(rng, 1.0, 0.35)
    verdicts, _, _ = rules.superiority(gain, 0.5, n_train=900, n_test=100)
    assert share(verdicts, REPRODUCED) >= 0.85
    verdicts_same, _, _ = rules.superiority(_cv_differences(rng, 0.0, 0.35), 0.5, n_train=900, n_test=100)
    assert share(verdicts_same, REPRODUCED) <= 0.05 and share(verdicts_same, REFUTED) <= 0.01
    verdicts, _, _ = rules.superiority(_cv_differences(rng, -1.5, 0.35), 0.5, n_train=900, n_test=100)
    assert share(verdicts, REFUTED) >= 0.85


# --- pooled stratified tests -----------------------------------------------------------------------


def test_van_elteren_with_one_stratum_is_the_rank_sum_test() -> None:
    rng = np.random.default_rng(10)
    a, b = rng.normal(size=7), rng.normal(size=9) + 0.5
    b[:2] = a[:2]  # ties
    test = rules.van_elteren([a], [b])
    reference = stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=False)
    assert float(test.p) == pytest.approx(reference.pvalue, rel=1e-10)


def _strata(rng: np.random.Generator, shift: float, cells: int = 6, seeds: int = 5) -> tuple[list, list]:
    a = [rng.normal(size=(SIMS, seeds)) - shift for _ in range(cells)]
    b = [rng.normal(size=(SIMS, seeds)) for _ in range(cells)]
    return a, b


def test_van_elteren_holds_its_level_and_finds_a_common_shift() -> None:
    rng = np.random.default_rng(11)
    a, b = _strata(rng, 0.0)
    verdicts, _ = rules.across_cells(rules.van_elteren(a, b), claimed_sign=-1)
    assert share(verdicts, REPRODUCED) <= 0.04  # one-sided share of a two-sided 5 % test
    assert share(verdicts, REFUTED) <= 0.04
    a, b = _strata(rng, 1.2)  # deep lower by 1.2 sd in every cell, 5 seeds each
    test = rules.van_elteren(a, b)
    verdicts, directions = rules.across_cells(test, claimed_sign=-1)
    assert share(verdicts, REPRODUCED) >= 0.90
    assert directions.shape == (SIMS, 6)
    # The replaced rule (an exact rank test significant in all six cells) almost never reproduces it.
    every_cell = np.ones(SIMS, dtype=bool)
    for xa, xb in zip(a[:3], b[:3]):  # already three cells make it rare
        p = stats.mannwhitneyu(xa, xb, axis=-1, method="exact").pvalue
        every_cell &= p < 0.05
    assert float(every_cell.mean()) < 0.25


def test_a_cell_significantly_reversed_blocks_reproduced() -> None:
    a = [np.arange(5.0) - 10 for _ in range(5)] + [np.arange(5.0) + 10]
    b = [np.arange(5.0) for _ in range(6)]
    test = rules.van_elteren(a, b)
    verdicts, directions = rules.across_cells(test, claimed_sign=-1)
    assert float(test.z) < 0 and float(test.p) < 0.05
    assert list(directions) == [-1] * 5 + [1]
    # The reversed cell's own z is 12.5/√(25·11/12) = 2.61, one-sided p 0.0045 < 0.05/6 (Holm's first step).
    assert float(test.cell_z[-1]) == pytest.approx(12.5 / math.sqrt(25 * 11 / 12))
    assert verdicts == NOT_REPRODUCED
    verdicts, _ = rules.across_cells(rules.van_elteren(a[:5], b[:5]), claimed_sign=-1)
    assert verdicts == REPRODUCED


def test_stratified_exact_with_one_stratum_is_fishers_one_sided_test() -> None:
    for sa, sb in itertools.product(range(6), range(6)):
        test = rules.stratified_exact([sa], [5], [sb], [5])
        greater = stats.fisher_exact([[sa, 5 - sa], [sb, 5 - sb]], alternative="greater").pvalue
        less = stats.fisher_exact([[sa, 5 - sa], [sb, 5 - sb]], alternative="less").pvalue
        assert float(test.p) == pytest.approx(min(1.0, 2 * min(greater, less)), abs=1e-12)
        if 0 < sa + sb < 10:
            chi2 = stats.chi2_contingency([[sa, 5 - sa], [sb, 5 - sb]], correction=False)[0]
            assert float(test.z) ** 2 == pytest.approx(chi2 * 9 / 10, rel=1e-10)


def test_stratified_exact_holds_its_level_and_has_power() -> None:
    rng = np.random.default_rng(12)
    sims = 600

    def run(pa: float, pb: float) -> np.ndarray:
        sa = rng.binomial(5, pa, size=(sims, 6))
        sb = rng.binomial(5, pb, size=(sims, 6))
        return np.array(
            [rules.across_cells(rules.stratified_exact(sa[i], 5, sb[i], 5), claimed_sign=1)[0] for i in range(sims)]
        )

    null = run(0.5, 0.5)
    assert share(null, REPRODUCED) + share(null, REFUTED) <= 0.05  # exact: at most α
    effect = run(0.8, 0.3)
    assert share(effect, REPRODUCED) >= 0.85


# --- performance ratios, lower bounds, seeds, density ----------------------------------------------


def test_performance_ratio() -> None:
    rng = np.random.default_rng(13)
    measured = np.exp(rng.normal(math.log(0.93), 0.08, size=(SIMS, 8)))  # 0.93 ± 8 % over 8 data sets
    verdicts, _, _ = rules.performance_ratio(measured, 2 / 3)
    assert share(verdicts, REFUTED) >= 0.99
    faster = np.exp(rng.normal(math.log(0.62), 0.08, size=(SIMS, 8)))
    verdicts, _, _ = rules.performance_ratio(faster, 2 / 3)
    assert share(verdicts, REFUTED) == 0.0 and share(verdicts, REPRODUCED) >= 0.6
    at_claim = np.exp(rng.normal(math.log(2 / 3), 0.08, size=(SIMS, 8)))
    verdicts, _, _ = rules.performance_ratio(at_claim, 2 / 3)
    assert share(verdicts, REFUTED) <= 0.04
    exact, _, _ = rules.performance_ratio(np.array([1.088]), 0.73, exact=True)
    assert exact == REFUTED
    single, _, _ = rules.performance_ratio(np.array([0.5]), 0.73)
    assert single == NOT_REPRODUCED  # one noisy measurement has no interval


def test_lower_bound_needs_a_contrast_that_could_fail() -> None:
    never = np.zeros((3,), dtype=bool)
    assert rules.lower_bound(never, never) == CONSISTENT
    assert rules.lower_bound(never, np.ones(3, dtype=bool)) == REPRODUCED
    assert rules.lower_bound(never, np.array([True, False, True])) == CONSISTENT
    assert rules.lower_bound(np.array([False, True, False]), np.ones(3, dtype=bool)) == NOT_REPRODUCED
    # Simulated: ReLU cells at the cap and smooth cells no steeper than ReLU give no contrast, whatever the seeds.
    rng = np.random.default_rng(14)
    relu = _rate_cells(rng, np.full((SIMS, 2), -1.0))
    smooth = _rate_cells(rng, np.full((SIMS, 2), -1.0))
    violated = rules.holm(stats.t.cdf((relu.slope + 1.0) / relu.se, relu.df))
    contrast = rules.holm(stats.t.cdf((smooth.slope + 1.0) / smooth.se, smooth.df))
    verdicts = rules.lower_bound(violated, contrast)
    assert share(verdicts, REPRODUCED) <= 0.01


def test_enough_seeds() -> None:
    assert not rules.enough_seeds(1) and rules.enough_seeds(5)


def test_above_reference_is_the_one_sided_t_test() -> None:
    rng = np.random.default_rng(21)
    for _ in range(50):
        values = 0.63 + 0.004 * rng.standard_normal(5)
        significant, lower = rules.above_reference(values, 0.628)
        p = stats.ttest_1samp(values, 0.628, alternative="greater").pvalue
        assert significant == (p < rules.ALPHA)
        # the lower bound is the reference at which the p-value is exactly α
        assert stats.ttest_1samp(values, lower, alternative="greater").pvalue == pytest.approx(rules.ALPHA)
    assert rules.above_reference([0.7], 0.5) == (False, -math.inf)  # one seed: no spread, nothing significant
    assert rules.above_reference([0.64] * 5, 0.628) == (True, pytest.approx(0.64))
    with pytest.raises(ValueError, match="`values`"):
        rules.above_reference([0.6, math.nan], 0.5)


@pytest.mark.parametrize("spread", [0.003, 0.006])
def test_a_network_only_as_good_as_the_reference_is_rarely_called_better(spread: float) -> None:
    """True mean = GloRo's 62.8 %, seed-to-seed sd 0.3 or 0.6 points, 5 seeds: called better ≤ 5 % (+ Monte Carlo
    slack); the replaced rule (the mean ≥ 63 %) at sd 0.6: about 23 %."""
    rng = np.random.default_rng(22)
    draws = 0.628 + spread * rng.standard_normal((SIMS, 5))
    better = [rules.above_reference(row, 0.628)[0] for row in draws]
    assert np.mean(better) <= 0.065
    if spread == 0.006:
        assert np.mean(draws.mean(axis=1) >= 0.63) >= 0.15


def test_a_network_half_a_point_above_the_reference_is_found() -> None:
    rng = np.random.default_rng(23)
    draws = 0.635 + 0.003 * rng.standard_normal((SIMS, 5))
    assert np.mean([rules.above_reference(row, 0.628)[0] for row in draws]) >= 0.9


def test_still_falling_tells_a_plateau_from_convergence() -> None:
    depth = np.repeat([1.0, 2, 4, 8, 16, 32], 5)
    rng = np.random.default_rng(15)
    falling = 0.2 * depth**-0.5 * np.exp(rng.normal(scale=0.1, size=depth.size))
    plateau = (0.2 * np.minimum(depth, 4.0) ** -0.5) * np.exp(rng.normal(scale=0.1, size=depth.size))
    assert rules.still_falling(depth, falling)[0]
    assert not rules.still_falling(depth, plateau)[0]
    # last < first holds for both: the replaced rule could not tell them apart.
    assert plateau[-5:].mean() < plateau[:5].mean() and falling[-5:].mean() < falling[:5].mean()
    neurons = np.array([8.0, 16, 32, 64, 128])
    assert rules.still_falling(neurons, np.array([1.0, 0.5, 0.2, 0.1, 0.05]))[0]
    assert not rules.still_falling(neurons, np.array([1.0, 0.5, 0.2, 0.2, 0.2]))[0]
