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
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

# re-exported: these live in analysis.cost_growth (the experiments' reports use them too)
from ..analysis.cost_growth import CostGrowth as CostGrowth
from ..analysis.cost_growth import cost_growth as cost_growth
from ..analysis.cost_growth import median_interval as median_interval
from .evidence import CONSISTENT, NOT_REPRODUCED, OPTIMISATION_LIMITED, REFUTED, REPRODUCED

ALPHA = 0.05
"""The level of every rule: a family-wise error rate (Holm over cells) or a one-sided test's size."""
MIN_SEEDS = 5
"""The fewest seeds a trained-network claim is decided on."""
EXPONENT_TOLERANCE = 0.25
"""The tolerance band ± of a predicted exponent where the paper gives no tolerance: a quarter of the
unit gap between the exponents it is told apart from (e.g. W¹ against W²)."""


def _verdicts(shape: tuple[int, ...], fill: str) -> np.ndarray:
    return np.full(shape, fill, dtype=object)


def holm(p: ArrayLike, alpha: float = ALPHA) -> np.ndarray:
    """Holm's step-down rejections of the hypotheses on the last axis at family-wise level ``alpha``.

    With the m p-values sorted, p₍₁₎ ≤ … ≤ p₍ₘ₎, reject H₍₁₎ … H₍ₖ₎ for the largest k such that
    p₍ⱼ₎ ≤ α/(m − j + 1) for every j ≤ k. NaN p-values are never rejected.

    Args:
        p: (..., m) p-values; leading axes are independent families.
        alpha: the family-wise level in (0, 1).

    Returns:
        (..., m) bool: which hypotheses are rejected.
    """
    p = np.asarray(p, dtype=float)
    m = p.shape[-1]
    if m == 0:
        return np.zeros(p.shape, dtype=bool)
    filled = np.where(np.isnan(p), np.inf, p)
    order = np.argsort(filled, axis=-1, kind="stable")
    ranked = np.take_along_axis(filled, order, axis=-1)
    levels = alpha / (m - np.arange(m))
    passed = np.cumprod(ranked <= levels, axis=-1).astype(bool)
    out = np.zeros(p.shape, dtype=bool)
    np.put_along_axis(out, order, passed, axis=-1)
    return out


@dataclass(frozen=True)
class SlopeTest:
    """A least-squares slope with its standard error and residual degrees of freedom (arrays for batches)."""

    slope: np.ndarray
    se: np.ndarray
    df: np.ndarray


def ols_slope(x: ArrayLike, y: ArrayLike) -> SlopeTest:
    """Least-squares slope of y on x, its standard error s/√Σ(x − x̄)² and n − 2 degrees of freedom.

    For a rate, pass logarithms: ``ols_slope(np.log(n), np.log(error))``. Replicates (several y at one
    x, e.g. seeds) enter as separate points, so the residual variance includes the seed spread.

    Args:
        x, y: (..., n) arrays, n ≥ 3; leading axes are independent fits.

    Returns:
        :class:`SlopeTest` with arrays of the leading shape.
    """
    x, y = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    n = x.shape[-1]
    if n < 3:
        raise ValueError(f"`x` must hold at least 3 points per fit, got {n}")
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    sxx = (xc**2).sum(axis=-1)
    slope = (xc * yc).sum(axis=-1) / sxx
    residual = yc - slope[..., None] * xc
    s2 = (residual**2).sum(axis=-1) / (n - 2)
    return SlopeTest(slope, np.sqrt(s2 / sxx), np.full(slope.shape, float(n - 2)))


def _t_sf(t: np.ndarray, df: np.ndarray) -> np.ndarray:
    """P(T_df > t), with se = 0 handled by the caller as t = ±inf (p 0 or 1) and 0/0 as p = 0.5."""
    t = np.asarray(t, dtype=float)
    return np.where(np.isnan(t), 0.5, stats.t.sf(t, np.maximum(np.asarray(df, dtype=float), 1.0)))


def _ratio(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(a, dtype=float) / np.asarray(b, dtype=float)


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
    refuted; every slower cell optimisation-limited — not reproduced, optimisation-limited.

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
    slope, se, df, rate, limited, tolerance = np.broadcast_arrays(
        np.asarray(slope, float),
        np.asarray(se, float),
        np.asarray(df, float),
        np.asarray(rate, float),
        np.asarray(limited, bool),
        np.asarray(tolerance, float),
    )
    p = _t_sf(_ratio(slope - rate - tolerance, se), df)
    slower = holm(p, alpha)
    out = _verdicts(slope.shape[:-1], REPRODUCED)
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
    out[violated.any(axis=-1)] = NOT_REPRODUCED
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
    slope, se, df, predicted = np.broadcast_arrays(
        np.asarray(slope, float), np.asarray(se, float), np.asarray(df, float), np.asarray(predicted, float)
    )
    p_above_low = _t_sf(_ratio(slope - (predicted - tolerance), se), df)  # small: slope > predicted − tol
    p_below_high = _t_sf(_ratio((predicted + tolerance) - slope, se), df)  # small: slope < predicted + tol
    inside = (p_above_low < alpha) & (p_below_high < alpha)
    p_far_above = _t_sf(_ratio(slope - (predicted + tolerance), se), df)
    p_far_below = _t_sf(_ratio((predicted - tolerance) - slope, se), df)
    outside = holm(np.minimum(p_far_above, p_far_below), alpha)
    out = _verdicts(slope.shape[:-1], NOT_REPRODUCED)
    out[inside.all(axis=-1)] = REPRODUCED
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
    if not margin > 0:
        raise ValueError(f"`margin` must be > 0, got {margin}")
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
    if not margin >= 0:
        raise ValueError(f"`margin` must be ≥ 0, got {margin}")
    low, high = _bounds(differences, n_train, n_test, 1 - alpha / 2)
    out = _verdicts(low.shape, NOT_REPRODUCED)
    out[low > 0] = REPRODUCED
    out[high < -margin] = REFUTED
    return out, low, high


def _tie_term(values: np.ndarray) -> np.ndarray:
    """Σ (t³ − t) over the tie groups of each row of ``values`` (..., N)."""
    flat = values.reshape(-1, values.shape[-1])
    ordered = np.sort(flat, axis=-1)
    tied = (ordered[:, 1:] == ordered[:, :-1]).any(axis=-1)
    out = np.zeros(flat.shape[0])
    for i in np.flatnonzero(tied):
        _, counts = np.unique(ordered[i], return_counts=True)
        out[i] = float((counts.astype(float) ** 3 - counts).sum())
    return out.reshape(values.shape[:-1])


@dataclass(frozen=True)
class StratifiedTest:
    """A pooled stratified two-sample test: z (> 0: A tends larger / more), two-sided p, and per
    stratum the signed effect (A's mean rank minus the null centre, or observed minus expected
    successes of A) and the stratum's own z."""

    z: np.ndarray
    p: np.ndarray
    cell_effect: np.ndarray
    cell_z: np.ndarray


def van_elteren(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> StratifiedTest:
    """The van Elteren stratified rank-sum test of A against B (normal approximation, ties corrected).

    In stratum k with m A-values and n B-values (N = m + n), W_k is A's rank sum (mid-ranks; ±inf
    allowed, e.g. epochs of a run that never reached its threshold), E W_k = m(N + 1)/2 and
    Var W_k = mn/12 · (N + 1 − Σ(t³ − t)/(N(N − 1))). With weights w_k = 1/(N + 1) (locally most
    powerful for a common shift), z = Σ w_k(W_k − E W_k) / √Σ w_k² Var W_k, p = 2Φ(−|z|).

    Args:
        a, b: one array per stratum, shaped (..., m_k) and (..., n_k); leading axes are batches.

    Returns:
        :class:`StratifiedTest`; ``cell_effect`` is (W_k − E W_k)/m (A's mean rank minus its centre).
    """
    if len(a) != len(b) or not a:
        raise ValueError(f"`a` and `b` must list the same positive number of strata, got {len(a)} and {len(b)}")
    effects, zs, num, var = [], [], 0.0, 0.0
    for xa, xb in zip(a, b):
        xa, xb = np.asarray(xa, dtype=float), np.asarray(xb, dtype=float)
        m, n = xa.shape[-1], xb.shape[-1]
        if m == 0 or n == 0:
            raise ValueError(f"every stratum needs values on both sides, got {m} and {n}")
        lead = np.broadcast_shapes(xa.shape[:-1], xb.shape[:-1])
        pooled = np.concatenate([np.broadcast_to(xa, (*lead, m)), np.broadcast_to(xb, (*lead, n))], axis=-1)
        big = m + n
        ranks = stats.rankdata(pooled, axis=-1)
        w = ranks[..., :m].sum(axis=-1) - m * (big + 1) / 2
        v = m * n / 12.0 * (big + 1 - _tie_term(pooled) / (big * (big - 1)))
        weight = 1.0 / (big + 1)
        num = num + weight * w
        var = var + weight**2 * v
        effects.append(w / m)
        zs.append(np.where(v > 0, w / np.sqrt(np.where(v > 0, v, 1.0)), 0.0))
    z = np.where(np.asarray(var) > 0, num / np.sqrt(np.where(np.asarray(var) > 0, var, 1.0)), 0.0)
    return StratifiedTest(z, 2 * stats.norm.sf(np.abs(z)), np.stack(effects, axis=-1), np.stack(zs, axis=-1))


def stratified_exact(success_a: ArrayLike, n_a: ArrayLike, success_b: ArrayLike, n_b: ArrayLike) -> StratifiedTest:
    """Exact stratified (Mantel–Haenszel conditional) test of success counts, A against B.

    Given every stratum's margins, A's successes X_k are hypergeometric under H₀ (no difference in
    any stratum), so S = Σ X_k has the convolution of those distributions: the two-sided p is
    2·min(P(S ≥ s), P(S ≤ s)), capped at 1 (exact, so valid for 5 seeds per side). z is the
    Cochran–Mantel–Haenszel statistic Σ(X_k − E X_k)/√Σ Var X_k (signed; z² the CMH χ² without
    continuity correction).

    Args:
        success_a, n_a, success_b, n_b: (strata,) counts of successes and trials (trials may be
            one number for every stratum).

    Returns:
        :class:`StratifiedTest`; ``cell_effect`` is X_k − E X_k.
    """
    try:
        sa, na, sb, nb = (
            np.asarray(v, dtype=int).ravel()
            for v in np.broadcast_arrays(*(np.atleast_1d(v) for v in (success_a, n_a, success_b, n_b)))
        )
    except ValueError:
        sa = np.empty(0, dtype=int)
    if sa.size == 0:
        raise ValueError("`success_a`, `n_a`, `success_b`, `n_b` must be equal-length non-empty count arrays")
    if np.any(sa < 0) or np.any(sb < 0) or np.any(sa > na) or np.any(sb > nb):
        raise ValueError(f"counts must satisfy 0 ≤ successes ≤ trials, got {sa}/{na} and {sb}/{nb}")
    pmf = np.ones(1)
    low = 0
    expected = np.zeros(sa.size)
    variance = np.zeros(sa.size)
    for k in range(sa.size):
        total, successes = int(na[k] + nb[k]), int(sa[k] + sb[k])
        support = np.arange(max(0, successes - int(nb[k])), min(int(na[k]), successes) + 1)
        pk = stats.hypergeom.pmf(support, total, successes, int(na[k]))
        pmf = np.convolve(pmf, pk)
        low += int(support[0])
        expected[k] = na[k] * successes / total if total else 0.0
        variance[k] = na[k] * nb[k] * successes * (total - successes) / (total**2 * (total - 1)) if total > 1 else 0.0
    s = int(sa.sum())
    index = s - low
    p_ge, p_le = float(pmf[index:].sum()), float(pmf[: index + 1].sum())
    p = min(1.0, 2 * min(p_ge, p_le))
    effect = sa - expected
    total_var = float(variance.sum())
    z = float(effect.sum() / math.sqrt(total_var)) if total_var > 0 else 0.0
    cell_z = np.where(variance > 0, effect / np.sqrt(np.where(variance > 0, variance, 1.0)), 0.0)
    return StratifiedTest(np.asarray(z), np.asarray(p), effect, cell_z)


def across_cells(test: StratifiedTest, *, claimed_sign: int, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """Decide "A beats B across cells" from one pooled stratified test and each cell's direction.

    Reproduced: the pooled two-sided p < α with z in the claimed direction, and no cell
    significantly reversed (its own z beyond the normal quantile at Holm-corrected level); refuted:
    the pooled test significant the other way; else not reproduced. The direction of every cell
    (sign of its effect) is returned so the evidence shows it.

    Args:
        test: from :func:`van_elteren` or :func:`stratified_exact`.
        claimed_sign: +1 when the claim is that A's values are larger (e.g. more successes), −1
            when smaller (lower MSE, fewer epochs).
        alpha: level.

    Returns:
        (verdicts, directions): (...) verdicts, (..., cells) signs of the cells' effects.
    """
    if claimed_sign not in (-1, 1):
        raise ValueError(f"`claimed_sign` must be +1 or −1, got {claimed_sign!r}")
    z, p = np.asarray(test.z, float), np.asarray(test.p, float)
    cell_z = np.asarray(test.cell_z, float)
    reversed_ = holm(stats.norm.sf(-claimed_sign * cell_z), alpha)
    out = _verdicts(z.shape, NOT_REPRODUCED)
    out[(p < alpha) & (claimed_sign * z > 0) & ~reversed_.any(axis=-1)] = REPRODUCED
    out[(p < alpha) & (claimed_sign * z < 0)] = REFUTED
    return out, np.sign(np.asarray(test.cell_effect, float))


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
    ratios = np.asarray(ratios, dtype=float)
    if np.any(ratios <= 0):
        raise ValueError("`ratios` must be positive")
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
    distinct x (at least the last 3): with replicates (e.g. seeds), the least-squares slope of
    log y in log x must be significantly negative (one-sided t-test at α); with one value per x
    (a deterministic construction), every step must go down.

    Args:
        x: (n,) positive grid values (repeated for replicates).
        y: (n,) positive errors.

    Returns:
        (falling, slope): the decision and the fitted upper-half slope.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    levels = np.unique(x)
    top = levels[len(levels) // 2 :] if len(levels) >= 6 else levels[-3:]
    keep = np.isin(x, top) & (y > 0)
    if len(np.unique(x[keep])) < 3 or keep.sum() < 3:
        return False, math.nan
    fit = ols_slope(np.log(x[keep]), np.log(y[keep]))
    slope, se, df = float(fit.slope), float(fit.se), float(fit.df)
    if len(np.unique(x[keep])) == keep.sum():  # one value per x
        order = np.argsort(x[keep])
        return bool(np.all(np.diff(y[keep][order]) < 0)), slope
    if se == 0:
        return slope < 0, slope
    return bool(stats.t.cdf(slope / se, df) < alpha), slope
