"""Interleaved cost growth: "A costs more than B, and its extra cost grows with a size" (issue 31).

Used by the claims row 004-affine-constraint-cost and by the lipschitz-mnist report, so it lives in
``analysis`` (the experiments may not import ``claims``); :mod:`structnets.claims.rules` re-exports it.
The verdict words equal :mod:`structnets.claims.evidence`'s (a test checks they agree).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from .._validation import check_real

ALPHA = 0.05
REPRODUCED, REFUTED, NOT_REPRODUCED = "reproduced", "refuted", "not reproduced"


def median_interval(values: ArrayLike, alpha: float = ALPHA) -> tuple[float, float, float]:
    """The median of ``values`` and its distribution-free (1 − α) interval from order statistics.

    With x₍₁₎ ≤ … ≤ x₍ₙ₎, [x₍ⱼ₎, x₍ₙ₋ⱼ₊₁₎] covers the population median with probability
    1 − 2·P(Bin(n, ½) ≤ j − 1) for any continuous distribution; j is the largest with that
    probability ≥ 1 − α. Fewer than 6 values cannot reach 95 %: (−inf, inf).

    Returns:
        (median, low, high).
    """
    xs = np.sort(np.asarray(values, dtype=float).ravel())
    n = xs.size
    if n == 0:
        raise ValueError("`values` must not be empty")
    # np.sort puts NaN last: the order statistics would silently be those of the other values
    if not np.isfinite(xs).all():
        raise ValueError(f"`values` must be finite, got {int((~np.isfinite(xs)).sum())} NaN or infinite value(s)")
    alpha = check_real("alpha", alpha, low=0.0, high=1.0, low_open=True, high_open=True)
    median = float(np.median(xs))
    j = _order_statistic(n, alpha)
    if j == 0:
        return median, -math.inf, math.inf
    return median, float(xs[j - 1]), float(xs[n - j])


@functools.lru_cache(maxsize=256)
def _order_statistic(n: int, alpha: float) -> int:
    """The largest j ≤ n/2 with 2·P(Bin(n, ½) ≤ j − 1) ≤ α (0 when even j = 1 does not reach it)."""
    cdf = stats.binom.cdf(np.arange(n // 2 + 1), n, 0.5)
    return int(np.sum(2 * cdf[: n // 2] <= alpha))


@dataclass(frozen=True)
class CostGrowth:
    """Per size: the median of the per-round time ratios A/B and its interval; the median over rounds of
    the least-squares slope of A − B in the size (seconds per unit of size) and its interval; the verdict."""

    ratio: np.ndarray
    ratio_low: np.ndarray
    ratio_high: np.ndarray
    slope: float
    slope_low: float
    slope_high: float
    verdict: str


def cost_growth(a_seconds: ArrayLike, b_seconds: ArrayLike, sizes: ArrayLike, *, alpha: float = ALPHA) -> CostGrowth:
    """Decide "A costs more than B, and its cost grows faster with the size" from interleaved timings.

    A performance claim (hardware stated by the caller) on times measured in rounds: every round times A
    and B once at every size, interleaved, so drift slower than a round cancels in each per-round
    ratio and difference. Per size, the median of the per-round ratios t_A/t_B with its
    distribution-free (order-statistic, :func:`median_interval`) interval; per round, the
    least-squares slope in the size of t_A − t_B (how much more A's time grows per unit of size), and
    the median of those slopes with its interval.

    Verdict: every size's ratio interval above 1 and the slope's interval above 0 — reproduced; some
    size's ratio interval below 1 or the slope's interval below 0 (at level α/(sizes + 1) each, Bonferroni,
    as any one of them refutes) — refuted; else not reproduced.

    Args:
        a_seconds, b_seconds: (rounds, sizes) seconds of A and of B.
        sizes: (sizes,) at least 2 distinct sizes (e.g. depths).
        alpha: level in (0, 1).

    Returns:
        :class:`CostGrowth`.
    """
    # a level outside (0, 1) turned equal costs into a verdict (alpha=5: "refuted")
    alpha = check_real("alpha", alpha, low=0.0, high=1.0, low_open=True, high_open=True)
    a, b = np.asarray(a_seconds, dtype=float), np.asarray(b_seconds, dtype=float)
    size = np.asarray(sizes, dtype=float).ravel()
    if a.ndim != 2 or a.shape != b.shape or a.shape[1] != size.size:
        raise ValueError(
            f"`a_seconds` and `b_seconds` must be (rounds, {size.size}) arrays, got {a.shape} and {b.shape}"
        )
    if not np.isfinite(size).all():  # a NaN size made every slope NaN: no verdict could follow
        raise ValueError(f"`sizes` must be finite, got {size.tolist()}")
    if np.unique(size).size < 2:
        raise ValueError(f"`sizes` must hold at least 2 distinct sizes, got {size.tolist()}")
    if np.any(a <= 0) or np.any(b <= 0) or not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("`a_seconds` and `b_seconds` must be positive and finite")
    ratios = a / b
    sc = size - size.mean()
    slopes = ((a - b) * sc).sum(axis=1) / float((sc**2).sum())
    tests = size.size + 1
    ratio, low, high = (np.array(v) for v in zip(*(median_interval(ratios[:, k], alpha) for k in range(size.size))))
    _, wide_low, wide_high = (
        np.array(v) for v in zip(*(median_interval(ratios[:, k], alpha / tests) for k in range(size.size)))
    )
    slope, slope_low, slope_high = median_interval(slopes, alpha)
    _, strict_low, strict_high = median_interval(slopes, alpha / tests)
    verdict = NOT_REPRODUCED
    if bool(np.all(low > 1)) and slope_low > 0:
        verdict = REPRODUCED
    if bool(np.any(wide_high < 1)) or strict_high < 0:
        verdict = REFUTED
    return CostGrowth(ratio, low, high, slope, slope_low, slope_high, verdict)


__all__ = ["CostGrowth", "cost_growth", "median_interval"]
