"""Splitting a covering radius budget over layers: the Lagrangian allocation of docs/bounds.md, Sec. 3."""

from __future__ import annotations

import numpy as np

_ALLOCATIONS = ("optimal", "equal")
_TAU_PER_DECADE = 250
_OPTIMISE_FROM = 1e-6
"""Loss scales ε below this keep the equal allocation (Dudley's α is far above it in practice;
the equal allocation stays valid there, and the minimum of the two is still non-increasing)."""


def _allocation_choice(allocation: str) -> str:
    if not isinstance(allocation, str) or allocation not in _ALLOCATIONS:
        raise ValueError(f"`allocation` must be one of {list(_ALLOCATIONS)}, got {allocation!r}")
    return allocation


def _lower_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the lower convex hull of the points (x_j, y_j), x increasing (monotone chain)."""
    hull: list[int] = []
    for j in range(x.size):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # drop b if it lies on or above the segment from a to j
            if (y[b] - y[a]) * (x[j] - x[a]) >= (y[j] - y[a]) * (x[b] - x[a]):
                hull.pop()
            else:
                break
        hull.append(j)
    return np.asarray(hull, dtype=np.int64)


def _allocate(costs: np.ndarray, tau: np.ndarray, budgets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Split a radius budget over layers: ``min Σ_i g_i(t_i)`` subject to ``Σ_i t_i ≤ T``.

    ``costs[i, j] = g_i(tau[j])`` (non-increasing in j). For a multiplier λ every layer takes
    ``t_i(λ) = argmin_j g_i(tau_j) + λ tau_j`` (a vertex of the lower convex hull of its points);
    that choice minimises ``Σ g_i`` over the grid among all allocations with
    ``Σ t_i ≤ S(λ) := Σ t_i(λ)`` (a Lagrangian point minimises the objective under its own
    constraint value). The joint choice only changes where λ crosses minus a hull slope of some
    layer, so every breakpoint and one λ between each two consecutive breakpoints give all the
    Lagrangian points. For a budget T the best of them with ``S(λ) ≤ T`` is returned: a valid
    allocation, evaluated exactly, whose value is non-increasing in T.

    Returns ``(value, pick)``: per budget the cost (inf if no candidate fits) and the grid index
    chosen for each layer, ``(len(budgets), L)`` (−1 where none fits).
    """
    depth = costs.shape[0]
    hulls = []
    for i in range(depth):
        hull = _lower_hull(tau, costs[i])
        slopes = np.diff(costs[i][hull]) / np.diff(tau[hull])  # increasing (convex), ≤ 0
        hulls.append((hull, slopes))
    breaks = np.unique(np.concatenate([-slopes for _, slopes in hulls] + [np.zeros(1)]))
    top = breaks[-1] * 2.0 + 1.0
    multipliers = np.concatenate([breaks, 0.5 * (breaks[:-1] + breaks[1:]), [top]])
    picks = np.empty((multipliers.size, depth), dtype=np.int64)
    for i, (hull, slopes) in enumerate(hulls):
        # argmin of g + λ t over the hull: the first vertex whose outgoing slope is ≥ −λ
        picks[:, i] = hull[np.searchsorted(slopes, -multipliers, side="left")] if slopes.size else hull[0]
    spent = tau[picks].sum(axis=1)
    value = costs[np.arange(depth)[None, :], picks].sum(axis=1)
    order = np.argsort(spent, kind="stable")
    spent, value, picks = spent[order], value[order], picks[order]
    running = np.minimum.accumulate(value)
    best_at = np.maximum.accumulate(np.where(value <= running, np.arange(value.size), 0))
    where = np.searchsorted(spent, budgets, side="right") - 1
    fits = where >= 0
    chosen_row = best_at[np.maximum(where, 0)]
    out = np.where(fits, value[chosen_row], np.inf)
    chosen = np.where(fits[:, None], picks[chosen_row], -1)
    return out, chosen
