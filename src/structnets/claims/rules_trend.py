"""A pooled within-strata trend test: a density claim as two sizes grow together (issue 31, 004-unbounded-density).

Split from :mod:`structnets.claims.rules` (which it uses) to keep each file short; the policy is the
"density as two sizes grow together" row of :mod:`structnets.claims.policies`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from .evidence import NOT_REPRODUCED, REFUTED, REPRODUCED
from .rules import ALPHA, StratifiedTest, _ratio, _t_sf, check_alpha, holm, ols_slope


@dataclass(frozen=True)
class TrendTest:
    """A pooled within-strata trend (one slope, each stratum its own intercept) and each stratum's own slope.

    ``slope``, ``se``, ``df``, ``p``: the pooled fixed-effects slope, its standard error, residual degrees
    of freedom n − G − 1 and two-sided p; ``cell_slope``, ``cell_p_reversed``: per stratum the
    least-squares slope and the one-sided p of a slope against the claimed direction; ``reversed_``:
    those Holm-rejected; ``verdict``: of :func:`pooled_trend`.
    """

    slope: float
    se: float
    df: float
    p: float
    cell_slope: np.ndarray
    cell_p_reversed: np.ndarray
    reversed_: np.ndarray
    verdict: str


def pooled_trend(
    x: ArrayLike, y: ArrayLike, strata: ArrayLike, *, claimed_sign: int, alpha: float = ALPHA
) -> TrendTest:
    """Decide "y moves in the claimed direction as x grows, in every stratum" from replicated measurements.

    The fixed-effects regression y_ij = a_j + b·x_ij + ε (stratum j its own intercept, replicates such as
    seeds as separate points): b̂ = Σ(x − x̄_j)(y − ȳ_j) / Σ(x − x̄_j)², se² = s²/Σ(x − x̄_j)² on n − G − 1
    degrees of freedom. Per stratum, its own least-squares slope b̂_j ± se_j (n_j − 2 df) and the
    one-sided p of "b_j against the claimed direction" (Holm over strata).

    Verdict: the pooled two-sided p < α with b̂ in the claimed direction, every stratum's b̂_j in the
    claimed direction and none significantly reversed — reproduced; the pooled slope significantly
    the other way — refuted; else not reproduced. Unlike "last < first", a curve that moves in the
    claimed direction only at one end, or only in some strata, does not pass.

    Args:
        x, y: (n,) values (for a trend in log–log, pass logarithms); strata: (n,) labels.
        claimed_sign: −1 when y should fall as x grows (an error), +1 when it should rise.
        alpha: level.

    Returns:
        :class:`TrendTest`.
    """
    alpha = check_alpha(alpha)
    if claimed_sign not in (-1, 1):
        raise ValueError(f"`claimed_sign` must be +1 or −1, got {claimed_sign!r}")
    x, y = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    labels = np.asarray(strata).ravel()
    if not (x.size == y.size == labels.size) or x.size == 0:
        raise ValueError(f"`x`, `y` and `strata` must be equal-length non-empty, got {x.size}, {y.size}, {labels.size}")
    names = list(dict.fromkeys(labels.tolist()))
    xc, yc = np.empty_like(x), np.empty_like(y)
    cell_slope, cell_p = np.full(len(names), math.nan), np.full(len(names), math.nan)
    for j, name in enumerate(names):
        mask = labels == name
        xc[mask] = x[mask] - x[mask].mean()
        yc[mask] = y[mask] - y[mask].mean()
        if mask.sum() >= 3 and np.ptp(x[mask]) > 0:
            fit = ols_slope(x[mask], y[mask])
            cell_slope[j] = float(fit.slope)
            # small p: the stratum's slope is significantly against the claimed direction
            cell_p[j] = float(_t_sf(_ratio(-claimed_sign * fit.slope, fit.se), fit.df))
    sxx = float((xc**2).sum())
    df = float(x.size - len(names) - 1)
    if sxx == 0 or df < 1:
        slope = se = p = math.nan
    else:
        slope = float((xc * yc).sum() / sxx)
        s2 = float(((yc - slope * xc) ** 2).sum()) / df
        se = math.sqrt(s2 / sxx)
        t = slope / se if se > 0 else math.copysign(math.inf, slope) if slope != 0 else 0.0
        p = float(2 * stats.t.sf(abs(t), df))
    reversed_ = holm(cell_p, alpha)
    verdict = NOT_REPRODUCED
    if math.isfinite(p) and p < alpha and claimed_sign * slope > 0:
        if bool(np.all(claimed_sign * cell_slope > 0)) and not reversed_.any():
            verdict = REPRODUCED
    elif math.isfinite(p) and p < alpha and claimed_sign * slope < 0:
        verdict = REFUTED
    return TrendTest(slope, se, df, p, cell_slope, cell_p, reversed_, verdict)


TINY_SE = 1e-12
"""The floor of a standard error in :func:`pooled_contrast`: an exact line (se 0) weighs as this."""


@dataclass(frozen=True)
class ContrastTest:
    """:func:`pooled_contrast`: the pooled slope, its se, the test (for :func:`~structnets.claims.rules.across_cells`)
    and each (stratum, contrast)'s own slope and se (strata in order, contrasts within each)."""

    slope: np.ndarray
    se: np.ndarray
    test: StratifiedTest
    cell_slope: np.ndarray
    cell_se: np.ndarray


def pooled_contrast(x: Sequence[np.ndarray], contrasts: Sequence[np.ndarray]) -> ContrastTest:
    """One pooled test of the slopes in x of several contrasts per stratum that share one control.

    E.g. per estimation cell, y_ik = log(MSE of smooth activation k / MSE of ReLU) on the i-th (n, seed)
    run: the k contrasts share the ReLU run, so their slopes are correlated, and pooling them as
    independent estimates understates the variance (2 strata × 3 contrasts under no effect: 16.7 %
    significant at a nominal 5 %). Here each stratum j enters once, by the least-squares slope b_j of
    the row means ȳ_i = mean_k y_ik on x (its se from its own residuals, n_j − 2 df, so the shared noise
    is in it); pooled b = Σ w_j b_j / Σ w_j, w_j = 1/se_j², z = b·√Σ w_j, p = 2·P(T_ν > |z|) with ν the
    smallest stratum's n_j − 2 (estimated weights: the normal tail gave 6.1 % at 5 %). Per (stratum,
    contrast), the own slope b_jk and z_jk = b_jk/se_jk give the directions and the reversals (Holm
    holds under any dependence).

    Args:
        x: per stratum, (r_j,) the regressor (e.g. log n of each run).
        contrasts: per stratum, (..., r_j, k_j) contrasts; leading axes are batches.

    Returns:
        :class:`ContrastTest`.
    """
    if len(x) != len(contrasts) or not x:
        raise ValueError(
            f"`x` and `contrasts` must list the same positive number of strata, got {len(x)}, {len(contrasts)}"
        )
    num, den, slopes, ses, df = 0.0, 0.0, [], [], math.inf
    for xj, yj in zip(x, contrasts):
        xj, yj = np.asarray(xj, dtype=float), np.asarray(yj, dtype=float)
        if yj.ndim < 2 or yj.shape[-2] != xj.size:
            raise ValueError(
                f"`contrasts` must be (..., rows, contrasts) with rows = len(x) = {xj.size}, got {yj.shape}"
            )
        mean = ols_slope(xj, yj.mean(axis=-1))
        own = ols_slope(xj, np.swapaxes(yj, -1, -2))
        weight = 1.0 / np.maximum(mean.se, TINY_SE) ** 2
        num, den, df = num + weight * mean.slope, den + weight, min(df, float(np.min(mean.df)))
        slopes.append(own.slope)
        ses.append(own.se)
    pooled, se = np.asarray(num / den), np.asarray(1.0 / np.sqrt(den))
    z = pooled / se
    b, s = np.concatenate(slopes, axis=-1), np.concatenate(ses, axis=-1)
    test = StratifiedTest(z, 2 * stats.t.sf(np.abs(z), df), b, b / np.maximum(s, TINY_SE))
    return ContrastTest(pooled, se, test, b, s)


__all__ = ["ContrastTest", "TrendTest", "pooled_contrast", "pooled_trend"]
