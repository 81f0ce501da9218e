"""One decision rule per kind of claim: pure functions of summary statistics, shared by every evaluator.

Each rule maps the statistics of a results table to a verdict of :data:`~structnets.claims.VERDICTS`
and is written so that the data, not the rule, decide: every branch can be reached by some data
set, and ``tests/claims/test_rules_simulation.py`` measures each rule's error rates on simulated
draws where the right verdict is known. The rules (``docs/claims.md``, "Policies"):

* :func:`upper_bound_rate` — a rate stated as an upper bound, error = O(x^rate): reproduced unless
  some cell is *significantly slower* (one-sided t-test of the fitted slope against the rate,
  Holm-corrected over cells, so the family-wise chance of a false miss is ≤ α); a slower cell
  with settled training refutes; slower cells all optimisation-limited give "not reproduced,
  optimisation-limited". A steeper slope is never a miss.
* :func:`lower_bound` — a lower bound (a cap no network of a class can beat): measurements can
  only be consistent with it, so it is reproduced only by a contrast that could have failed
  (same-protocol networks of another class beating the cap where the bounded class does not);
  otherwise "consistent, not tested".
* :func:`predicted_exponent` — a predicted exponent: two-sided, by two one-sided tests (TOST)
  against a stated tolerance band; refuted when the interval lies entirely outside the band.
* :func:`non_inferiority` — "not worse" / "keeps accuracy": the lower one-sided test of TOST
  against a stated margin, with the Nadeau–Bengio corrected variance for cross-validation folds;
  refuted only by a loss beyond the margin.
* :func:`superiority` — "A is significantly better than B" on CV folds, with the same variance.
* :func:`across_cells` with :func:`van_elteren` (MSE, epochs) or :func:`stratified_exact`
  (success counts) — "A beats B across cells": one pooled stratified test, plus the direction in
  every cell.
* :func:`performance_ratio` — a performance claim (a time or memory ratio): refuted when the
  interval of the measured ratio lies entirely beyond the claim.
* :func:`enough_seeds` — the configuration is fixed before the run (the paper's, never chosen on
  the test set) and measured over at least :data:`MIN_SEEDS` seeds.
* :func:`above_reference` — "our trained networks beat a published number": the one-sided lower
  confidence bound of the mean over seeds above the reference, so a configuration whose true mean
  equals the reference is called better with probability ≤ α.
* :func:`still_falling` — a density claim (error → 0, no rate): the error still falls over the
  upper half of the grid, not only between its ends.

References: Holm, *A simple sequentially rejective multiple test procedure*, Scand. J. Stat. 1979;
Schuirmann, *A comparison of the two one-sided tests procedure*, J. Pharmacokinet. Biopharm. 1987;
Nadeau and Bengio, *Inference for the generalization error*, Machine Learning 52, 2003; van
Elteren, *On the combination of independent two-sample tests of Wilcoxon*, Bull. ISI 1960;
Mantel and Haenszel, J. Natl. Cancer Inst. 22, 1959.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

# re-exported: these live in analysis.cost_growth (the experiments' reports use them too)
from ..analysis.cost_growth import CostGrowth as CostGrowth
from ..analysis.cost_growth import cost_growth as cost_growth
from ..analysis.cost_growth import median_interval as median_interval
from .evidence import CONSISTENT, NOT_REPRODUCED, OPTIMISATION_LIMITED, REFUTED, REPRODUCED

# re-exported: the shared building blocks and the stratified tests live in their own files (file length)
from .rules_core import ALPHA as ALPHA
from .rules_core import SlopeTest as SlopeTest
from .rules_core import _ratio as _ratio
from .rules_core import _t_sf as _t_sf
from .rules_core import _verdicts as _verdicts
from .rules_core import check_alpha as check_alpha
from .rules_core import holm as holm
from .rules_core import ols_slope as ols_slope
from .rules_core import undetermined as undetermined
from .rules_strata import StratifiedTest as StratifiedTest
from .rules_strata import across_cells as across_cells
from .rules_strata import stratified_exact as stratified_exact
from .rules_strata import van_elteren as van_elteren

MIN_SEEDS = 5
"""The fewest seeds a trained-network claim is decided on."""
MIN_RATE_DF = 2
"""The fewest residual degrees of freedom of a noisy cell (se > 0) :func:`upper_bound_rate` reproduces on."""
EXPONENT_TOLERANCE = 0.25
"""The tolerance band ± of a predicted exponent where the paper gives no tolerance: a quarter of the
unit gap between the exponents it is told apart from (e.g. W¹ against W²)."""


def upper_bound_rate(
    slope: ArrayLike,
    se: ArrayLike,
    df: ArrayLike,
    rate: ArrayLike,
    limited: ArrayLike,
    *,
    tolerance: ArrayLike = 0.0,
    alpha: float = ALPHA,
) -> tuple[np.ndarray, np.ndarray]:
    """Decide an upper-bound rate, error = O(x^rate) (rate < 0: the error falls at least this fast).

    Per cell, H₀: slope ≤ rate + tolerance (at least as fast, up to a stated tolerance; 0 for
    trained networks) against H₁: slower, by the one-sided t-test t = (slope − rate − tolerance)/se
    on df degrees of freedom; the cells' p-values are
    Holm-corrected, so when every cell sits on its rate a false "slower" happens with probability
    ≤ α in the whole table. A steeper slope (faster decay) never counts against the claim: the
    theorem bounds the error from above.

    Verdict: no cell significantly slower — reproduced; a slower cell whose training settled —
    refuted; every slower cell optimisation-limited — not reproduced, optimisation-limited. A cell
    without a fit (:func:`~structnets.claims.rules_core.undetermined`: NaN slope or se, infinite
    se, se > 0 on 0 df), a noisy cell on fewer than :data:`MIN_RATE_DF` degrees of freedom, or no
    cell at all makes "reproduced" "not reproduced": absence of a test is not evidence (on 3 points,
    1 df, the one-sided test needs t > 6.31: a flat error against a claimed n^−1 was reproduced 12.6 %).

    Args:
        slope, se, df: (..., cells) fitted log–log slopes, standard errors and degrees of freedom
            (se = 0 for an exact, noiseless construction: then slower means slope > rate).
        rate: (..., cells) or scalar: the claimed exponent.
        limited: (..., cells) bool: the cell's training did not settle.
        tolerance: (..., cells) or scalar ≥ 0: how much slower than the rate still counts as the rate
            (for nearly noiseless constructions, whose pre-asymptotic curvature is otherwise significant).
        alpha: family-wise level.

    Returns:
        (verdicts, slower): (...) object array of verdicts and (..., cells) bool of slower cells.
    """
    alpha = check_alpha(alpha)
    slope, se, df, rate, limited, tolerance = np.broadcast_arrays(
        np.atleast_1d(np.asarray(slope, float)),
        np.asarray(se, float),
        np.asarray(df, float),
        np.asarray(rate, float),
        np.asarray(limited, bool),
        np.asarray(tolerance, float),
    )
    if not np.all(np.isfinite(tolerance) & (tolerance >= 0)):
        raise ValueError(f"`tolerance` must be finite and ≥ 0, got {tolerance.ravel()[:4]}")
    blind = undetermined(slope, se, df)
    p = np.where(blind, np.nan, _t_sf(_ratio(slope - rate - tolerance, se), df))
    slower = holm(p, alpha)
    out = _verdicts(slope.shape[:-1], REPRODUCED)
    # a cell without a fit, a noisy one on < MIN_RATE_DF df (its test can hardly reject), or no cell at
    # all leaves the claim undecided: not reproduced (a refutation elsewhere still stands)
    thin = blind | ((se > 0) & (df < MIN_RATE_DF))
    out[thin.any(axis=-1) | (slope.shape[-1] == 0)] = NOT_REPRODUCED
    any_slower = slower.any(axis=-1)
    settled_slower = (slower & ~limited).any(axis=-1)
    out[any_slower] = OPTIMISATION_LIMITED
    out[settled_slower] = REFUTED
    return out, slower


def lower_bound(violated: ArrayLike, contrast: ArrayLike) -> np.ndarray:
    """Decide a lower bound (a cap the bounded class cannot beat) from per-cell contrasts.

    A lower bound on the error can only be *consistent* with measurements of the bounded class
    (e.g. ReLU nets whose fitted slope does not beat the cap): that check cannot fail for nets that
    are simply hard to train. It is reproduced only where a contrast that could have failed holds in
    every cell: networks of another class trained by the same protocol beat the cap (or a certified
    floor of the bounded class) there. A bounded-class cell significantly beating an asymptotic cap
    with an unknown constant does not refute it on a finite grid: not reproduced.

    Args:
        violated: (..., cells) bool: the bounded class significantly beats the bound in the cell.
        contrast: (..., cells) bool: the contrast class beats it in the cell.

    Returns:
        (...) object array: reproduced, not reproduced or consistent, not tested.
    """
    violated, contrast = np.broadcast_arrays(np.asarray(violated, bool), np.asarray(contrast, bool))
    out = _verdicts(violated.shape[:-1], CONSISTENT)
    out[contrast.all(axis=-1)] = REPRODUCED
    out[violated.any(axis=-1) | (violated.shape[-1] == 0)] = NOT_REPRODUCED  # no cell: nothing tested
    return out


def predicted_exponent(
    slope: ArrayLike,
    se: ArrayLike,
    df: ArrayLike,
    predicted: ArrayLike,
    *,
    tolerance: float = EXPONENT_TOLERANCE,
    alpha: float = ALPHA,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decide a predicted exponent, two-sided, against the band predicted ± tolerance.

    Per cell, the two one-sided tests (TOST) of H₀: slope ≤ predicted − tolerance and H₀: slope ≥
    predicted + tolerance, each at level α: both rejected — the slope is inside the band (the
    (1 − 2α) interval lies in it). Refuted: the (1 − 2α) interval lies entirely outside the band in
    some cell (one-sided tests Holm-corrected over cells). Reproduced: inside in every cell
    (an intersection–union test needs no correction). Else not reproduced.

    Args:
        slope, se, df: (..., cells) fitted slopes, standard errors (0 for an exact construction)
            and degrees of freedom.
        predicted: (..., cells) or scalar: the paper's exponent.
        tolerance: half-width of the band (stated in the claim's test text).
        alpha: the level of each one-sided test.

    Returns:
        (verdicts, inside, outside): (...) verdicts and (..., cells) bool masks.
    """
    alpha = check_alpha(alpha)
    if not (math.isfinite(tolerance) and tolerance > 0):
        raise ValueError(f"`tolerance` must be finite and > 0 (the band's half-width), got {tolerance}")
    slope, se, df, predicted = np.broadcast_arrays(
        np.atleast_1d(np.asarray(slope, float)),
        np.asarray(se, float),
        np.asarray(df, float),
        np.asarray(predicted, float),
    )
    slope = np.where(undetermined(slope, se, df), np.nan, slope)  # a cell without a fit is neither in nor out
    p_above_low = _t_sf(_ratio(slope - (predicted - tolerance), se), df)  # small: slope > predicted − tol
    p_below_high = _t_sf(_ratio((predicted + tolerance) - slope, se), df)  # small: slope < predicted + tol
    inside = (p_above_low < alpha) & (p_below_high < alpha)
    p_far_above = _t_sf(_ratio(slope - (predicted + tolerance), se), df)
    p_far_below = _t_sf(_ratio((predicted - tolerance) - slope, se), df)
    outside = holm(np.minimum(p_far_above, p_far_below), alpha)
    out = _verdicts(slope.shape[:-1], NOT_REPRODUCED)
    out[inside.all(axis=-1) & (slope.shape[-1] > 0)] = REPRODUCED
    out[outside.any(axis=-1)] = REFUTED
    return out, inside, outside


def nadeau_bengio_se(differences: ArrayLike, n_train: float, n_test: float) -> np.ndarray:
    """The corrected standard error of the mean of J cross-validation differences (Nadeau–Bengio).

    Folds share training data, so their differences are correlated and σ²/J understates the
    variance of their mean. The corrected resampled-t variance is (1/J + n_test/n_train)·s², s² the
    sample variance of the J differences (Nadeau and Bengio 2003, eq. (11)).

    Args:
        differences: (..., J) per-fold (or per (fold, seed)) differences, J ≥ 2.
        n_train, n_test: rows in each fold's training and test set.

    Returns:
        (...) standard errors.
    """
    differences = np.asarray(differences, dtype=float)
    j = differences.shape[-1]
    if j < 2:
        raise ValueError(f"`differences` must hold at least 2 folds on its last axis, got {j}")
    if not (n_train > 0 and n_test > 0):
        raise ValueError(f"`n_train` and `n_test` must be > 0, got {n_train} and {n_test}")
    return np.sqrt((1.0 / j + n_test / n_train) * differences.var(axis=-1, ddof=1))


def _bounds(differences: ArrayLike, n_train: float, n_test: float, level: float) -> tuple[np.ndarray, np.ndarray]:
    differences = np.asarray(differences, dtype=float)
    mean = differences.mean(axis=-1)
    se = nadeau_bengio_se(differences, n_train, n_test)
    t = float(stats.t.ppf(level, differences.shape[-1] - 1))
    return mean - t * se, mean + t * se


def non_inferiority(
    differences: ArrayLike, margin: float, *, n_train: float, n_test: float, alpha: float = ALPHA
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decide "A is not worse than B" from CV differences A − B (oriented: positive is A better).

    The lower one-sided test of TOST: H₀: mean difference ≤ −margin, rejected at level α when the
    lower (1 − α) confidence bound, mean − t_{1−α, J−1}·se_NB, is above −margin: reproduced. A
    refutation needs a loss beyond the margin: the upper bound mean + t·se_NB below −margin. Else
    not reproduced (too few or too noisy folds to tell). se_NB is :func:`nadeau_bengio_se`.

    Args:
        differences: (..., J) differences A − B, larger is better for A.
        margin: the largest loss that still counts as "not worse" (> 0, stated with the claim).
        n_train, n_test: rows per fold's training and test sets.
        alpha: level of each one-sided test.

    Returns:
        (verdicts, lower, upper): (...) verdicts and the (1 − α) one-sided bounds.
    """
    alpha = check_alpha(alpha)
    if not (margin > 0 and math.isfinite(margin)):
        raise ValueError(f"`margin` must be finite and > 0, got {margin}")
    lower, upper = _bounds(differences, n_train, n_test, 1 - alpha)
    out = _verdicts(lower.shape, NOT_REPRODUCED)
    out[lower > -margin] = REPRODUCED
    out[upper < -margin] = REFUTED
    return out, lower, upper


def superiority(
    differences: ArrayLike, margin: float, *, n_train: float, n_test: float, alpha: float = ALPHA
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decide "A is significantly better than B" from CV differences A − B (positive: A better).

    Two-sided at level α with the Nadeau–Bengio variance: the (1 − α) interval above 0 —
    reproduced; entirely below −margin (A worse by more than the margin) — refuted; else not
    reproduced.

    Returns:
        (verdicts, low, high): (...) verdicts and the two-sided (1 − α) interval.
    """
    alpha = check_alpha(alpha)
    if not (margin >= 0 and math.isfinite(margin)):
        raise ValueError(f"`margin` must be finite and ≥ 0, got {margin}")
    low, high = _bounds(differences, n_train, n_test, 1 - alpha / 2)
    out = _verdicts(low.shape, NOT_REPRODUCED)
    out[low > 0] = REPRODUCED
    out[high < -margin] = REFUTED
    return out, low, high


def performance_ratio(
    ratios: ArrayLike, claimed: float, *, alpha: float = ALPHA, exact: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decide a performance claim "ratio ≤ claimed" (e.g. time or memory of A over B).

    The two-sided (1 − α) t-interval of the geometric-mean ratio over the measurements (data sets),
    computed on log ratios: entirely at or below the claim — reproduced; entirely beyond it —
    refuted; else not reproduced. ``exact=True`` marks a deterministic measurement (e.g. allocated
    bytes), whose interval is the value itself.

    Args:
        ratios: (..., k) positive measured ratios.
        claimed: the claim's ratio (e.g. 2/3 for "a third faster").
        alpha: level.
        exact: the measurements have no noise.

    Returns:
        (verdicts, low, high): (...) verdicts and the interval of the ratio.
    """
    alpha = check_alpha(alpha)
    if not (claimed > 0 and math.isfinite(claimed)):
        raise ValueError(f"`claimed` must be a finite ratio > 0, got {claimed}")
    ratios = np.asarray(ratios, dtype=float)
    if ratios.ndim == 0 or ratios.shape[-1] == 0 or not np.all(np.isfinite(ratios) & (ratios > 0)):
        raise ValueError(f"`ratios` must be a non-empty array of finite ratios > 0, got {ratios.ravel()[:8]}")
    logs = np.log(ratios)
    k = logs.shape[-1]
    centre = logs.mean(axis=-1)
    if exact:
        low, high = logs.min(axis=-1), logs.max(axis=-1)
    elif k < 2:
        low = np.full(centre.shape, -np.inf)
        high = np.full(centre.shape, np.inf)
    else:
        half = float(stats.t.ppf(1 - alpha / 2, k - 1)) * logs.std(axis=-1, ddof=1) / math.sqrt(k)
        low, high = centre - half, centre + half
    out = _verdicts(centre.shape, NOT_REPRODUCED)
    out[high <= math.log(claimed)] = REPRODUCED
    out[low > math.log(claimed)] = REFUTED
    return out, np.exp(low), np.exp(high)


def enough_seeds(seeds: int, minimum: int = MIN_SEEDS) -> bool:
    """Whether a configuration fixed before the run was measured over at least ``minimum`` seeds."""
    try:
        whole = not isinstance(seeds, bool) and math.isfinite(seeds) and seeds >= 0 and seeds == int(seeds)
    except (TypeError, ValueError):
        whole = False
    if not whole:
        raise ValueError(f"`seeds` must be a whole number of seeds ≥ 0, got {seeds!r}")
    return int(seeds) >= minimum


def above_reference(values: ArrayLike, reference: float, *, alpha: float = ALPHA) -> tuple[bool, float]:
    """Decide "the mean over seeds exceeds ``reference``" by a one-sided t-test.

    The (1 − α) lower confidence bound of the mean, x̄ − t_{1−α, k−1}·s/√k over the k seeds
    (Student's t; seeds are independent trainings on the same test set, so the seed-to-seed spread
    is the variance that matters when comparing with a published number on that test set). With
    fewer than two seeds there is no spread to estimate and nothing is significant.

    Args:
        values: (k,) one measurement per seed (e.g. certified accuracy).
        reference: the number to beat (e.g. a published accuracy, in the same units).
        alpha: the test's size.

    Returns:
        (significant, lower): whether the lower bound is above ``reference``, and the bound
        (−∞ for k < 2).
    """
    alpha = check_alpha(alpha)
    values = np.asarray(values, dtype=float).ravel()
    if not math.isfinite(reference):
        raise ValueError(f"`reference` must be finite, got {reference}")
    if values.size and not np.isfinite(values).all():
        raise ValueError("`values` must be finite")
    k = values.size
    if k < 2:
        return False, -math.inf
    lower = float(values.mean() - stats.t.ppf(1 - alpha, k - 1) * values.std(ddof=1) / math.sqrt(k))
    return lower > reference, lower


def still_falling(x: ArrayLike, y: ArrayLike, *, alpha: float = ALPHA) -> tuple[bool, float]:
    """Whether an error still falls over the upper half of its grid (a density claim, no rate).

    "last < first" passes a curve that stopped falling long ago. Here, over the upper half of the
    distinct x: with replicates (e.g. seeds; at least the last 3 x), the least-squares slope of
    log y in log x must be significantly negative (one-sided t-test at α); with one value per x,
    every step must go down over at least the last k x, k the fewest with 1/k! ≤ α (4 at α = 0.05).
    Under a flat curve with exchangeable noise (e.g. medians over seeds) every step of k values goes
    down with probability 1/k! (an exact permutation test): over 3 values that is 1/6, so a grid
    with fewer than k sizes decides nothing.

    Args:
        x: (n,) positive grid values (repeated for replicates).
        y: (n,) positive errors (non-positive or NaN ones are left out).
        alpha: the level of the test.

    Returns:
        (falling, slope): the decision and the fitted slope over the x used (NaN when too few).
    """
    alpha = check_alpha(alpha)
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"`x` and `y` must be 1-D of one length, got shapes {x.shape} and {y.shape}")
    if not np.all(np.isfinite(x) & (x > 0)):
        raise ValueError(f"`x` must be positive and finite (a grid of sizes), got {x[~(np.isfinite(x) & (x > 0))][0]}")
    levels = np.unique(x)
    half = levels[len(levels) // 2 :] if len(levels) >= 6 else levels[-3:]
    single = len(levels) == x.size
    k = 2
    while single and math.factorial(k) * alpha < 1:
        k += 1
    top = levels[-max(k, len(half)) :] if single else half
    keep = np.isin(x, top) & (y > 0)
    used = len(np.unique(x[keep]))
    if used < 3 or keep.sum() < 3:
        return False, math.nan
    fit = ols_slope(np.log(x[keep]), np.log(y[keep]))
    slope, se, df = float(fit.slope), float(fit.se), float(fit.df)
    if single:
        order = np.argsort(x[keep])
        return used >= k and bool(np.all(np.diff(y[keep][order]) < 0)), slope
    if se == 0:
        return slope < 0, slope
    return bool(stats.t.cdf(slope / se, df) < alpha), slope
