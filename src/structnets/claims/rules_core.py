"""The building blocks every decision rule shares: the level, Holm's correction, least-squares slopes.

Split from :mod:`structnets.claims.rules` (which re-exports these names) so that the rules and the
stratified tests of :mod:`structnets.claims.rules_strata` can share them without an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

ALPHA = 0.05
"""The level of every rule: a family-wise error rate (Holm over cells) or a one-sided test's size."""


def check_alpha(alpha: float) -> float:
    """``alpha`` as a float in (0, 1), or a ValueError naming it: a level outside it makes every test
    silently reject everything (α ≥ 1) or nothing (α ≤ 0)."""
    try:
        value = float(alpha)
    except (TypeError, ValueError):
        raise ValueError(f"`alpha` must be in (0, 1), got {alpha!r}") from None
    if not 0.0 < value < 1.0:
        raise ValueError(f"`alpha` must be in (0, 1), got {alpha!r}")
    return value


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
    alpha = check_alpha(alpha)
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
        :class:`SlopeTest` with arrays of the leading shape; slope and se are NaN where every x is
        equal (no slope to fit), so the rules leave such a cell undecided.
    """
    x, y = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    n = x.shape[-1]
    if n < 3:
        raise ValueError(f"`x` must hold at least 3 points per fit, got {n}")
    # identical x: x − x̄ is rounding noise (~1e-16), which gave a finite slope of pure noise
    flat = np.ptp(x, axis=-1, keepdims=True) == 0
    xc = np.where(flat, 0.0, x - x.mean(axis=-1, keepdims=True))
    yc = y - y.mean(axis=-1, keepdims=True)
    sxx = (xc**2).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = np.where(sxx > 0, (xc * yc).sum(axis=-1) / np.where(sxx > 0, sxx, 1.0), np.nan)
        residual = yc - slope[..., None] * xc
        s2 = (residual**2).sum(axis=-1) / (n - 2)
        se = np.where(sxx > 0, np.sqrt(s2 / np.where(sxx > 0, sxx, 1.0)), np.nan)
    return SlopeTest(slope, se, np.full(slope.shape, float(n - 2)))


def _t_sf(t: np.ndarray, df: np.ndarray) -> np.ndarray:
    """P(T_df > t), with se = 0 handled by the caller as t = ±inf (p 0 or 1) and 0/0 as p = 0.5."""
    t = np.asarray(t, dtype=float)
    return np.where(np.isnan(t), 0.5, stats.t.sf(t, np.maximum(np.asarray(df, dtype=float), 1.0)))


def _ratio(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(a, dtype=float) / np.asarray(b, dtype=float)


def undetermined(slope: np.ndarray, se: np.ndarray, df: np.ndarray) -> np.ndarray:
    """Cells whose fit says nothing: a slope that is not finite, a standard error that is NaN or
    infinite, or a positive standard error on no degrees of freedom (no variance estimate). se = 0
    (an exact construction) needs no degrees of freedom. A negative se is an error naming ``se``.

    Args:
        slope, se, df: (..., cells) broadcast arrays of a fit per cell.

    Returns:
        (..., cells) bool: no test can be made in the cell.
    """
    if np.any(se < 0):
        raise ValueError(f"`se` must be ≥ 0 (a standard error), got {float(se[se < 0].flat[0])}")
    return ~np.isfinite(slope) | ~np.isfinite(se) | ((se > 0) & ~(df > 0))
