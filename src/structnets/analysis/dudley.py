"""Dudley's entropy integral, evaluated as a rigorous upper bound on a geometric grid."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .._validation import check_int

_DUDLEY_GRID = 4000
_DUDLEY_LOW = 1e-12


def _dudley_grid() -> np.ndarray:
    return np.logspace(math.log10(_DUDLEY_LOW), 0.0, _DUDLEY_GRID)


def _dudley_tails(grid: np.ndarray, log_covering: np.ndarray) -> np.ndarray:
    """``tails[j]`` ≥ ∫_{grid[j]}^1 √log N: left Riemann sums of a non-increasing integrand."""
    cells = np.sqrt(log_covering[:-1]) * np.diff(grid)
    return np.cumsum(cells[::-1])[::-1]


def _dudley_min(grid: np.ndarray, tails: np.ndarray, n: float) -> tuple[float, float, float]:
    candidates = 4.0 * grid[:-1] + 12.0 / math.sqrt(n) * tails
    j = int(np.argmin(candidates))
    if candidates[j] >= 4.0:
        return 4.0, 1.0, 0.0  # α = 1: the integral is empty
    return float(candidates[j]), float(grid[j]), float(tails[j])


def dudley_entropy_bound(log_covering: Callable[[float], float], n: int) -> tuple[float, float, float]:
    """Dudley's entropy integral bound on the empirical Rademacher complexity of a [0, 1] class.

    ``R̂_n(H) ≤ inf_{α > 0} ( 4α + (12/√n) ∫_α^1 √(log N(H, ε, L2(P_n))) dε )``
    (Bartlett et al. 2017, Lemma A.5, rescaled to the normalised empirical L2 metric).

    The integral is bounded above rigorously by a left Riemann sum on a geometric grid of
    4000 points in [1e-12, 1] (``log N`` is non-increasing in ε, so each left endpoint
    over-estimates its cell) and the infimum is taken over the grid points, so the value
    returned is itself a valid upper bound (at most 4, the value at α = 1).

    Args:
        log_covering: ε ↦ an upper bound on ``log N(H, ε)``, non-increasing, ≥ 0.
        n: number of samples (≥ 1).

    Returns:
        ``(bound, α, integral)``: the minimised value, the minimising α and ``∫_α^1 √log N``.
    """
    if not callable(log_covering):
        raise TypeError(f"`log_covering` must be callable, got {type(log_covering).__name__}")
    n = check_int("n", n, low=1)
    grid = _dudley_grid()
    values = np.array([_covering_value(log_covering, float(eps)) for eps in grid])
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        j = int(np.argmax(bad))
        raise ValueError(f"`log_covering` must return a finite value >= 0, got {values[j]} at eps={grid[j]:g}")
    return _dudley_min(grid, _dudley_tails(grid, values), n)


def _covering_value(log_covering: Callable[[float], float], eps: float) -> float:
    value = log_covering(eps)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(
            f"`log_covering` must return a real number, got {value!r:.80} ({type(value).__name__}) at eps={eps:g}"
        ) from None
