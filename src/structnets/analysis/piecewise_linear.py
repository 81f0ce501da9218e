"""Certified lower bounds on the error of any ReLU network on one-dimensional data.

A ReLU MLP ℝ → ℝ is continuous piecewise linear (CPWL) with a number of linear pieces bounded by
its widths (:func:`relu_piece_bound`); on sorted sample points any function with at most m
linear pieces is affine on at most m contiguous runs of points, so the best segmentation of the
data into m runs, each fitted by least squares, bounds its mean squared error from below
(:func:`piecewise_linear_floor`). Together they give an error floor that no ReLU network of the
given widths can beat, however it is trained: the "ReLU depth cap" that the smoothness-adaptivity
experiment (Liu, Wang, Wu, Zhang, arXiv 2602.19691) sets against smooth-activation networks.

The piece count follows Montúfar, Pascanu, Cho and Bengio, *On the number of linear regions of
deep neural networks* (NeurIPS 2014) and Serra, Tjandraatmadja and Ramalingam, *Bounding and
counting linear regions of deep neural networks* (ICML 2018), specialised to input dimension 1.
The segmentation is the optimal segmented (piecewise) regression of Bellman, *On the
approximation of curves by line segments using dynamic programming* (CACM 1961).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_fits_in_memory, check_int

__all__ = ["piecewise_linear_floor", "relu_piece_bound"]

# Rows of the (n × n) cost matrix reduced per DP block: 256 rows × n ≤ 4096 columns × 8 bytes
# = 8 MiB of temporary, small enough to stay near the cache and to keep peak memory at one matrix.
_BLOCK_ROWS = 256


def relu_piece_bound(widths: Sequence[int]) -> int:
    """Upper bound on the number of linear pieces of a ReLU MLP ℝ → ℝ with the given hidden widths.

    Args:
        widths: hidden widths (w_1, …, w_{L−1}) of a network with L weight layers, input and
            output dimension 1; each an int ≥ 1, at least one.

    Returns:
        P = Π_l (w_l + 1). Every function x ↦ A_L σ(A_{L−1} ⋯ σ(A_1 x + b_1) ⋯) + b_L with
        σ = ReLU and these widths is continuous and piecewise linear with at most P pieces.

    The count (Montúfar et al. 2014; Serra et al. 2018, for d = 1): a first-layer unit
    ReLU(a x + b) has at most one breakpoint, so layer 1 cuts ℝ into at most w_1 + 1 intervals
    on which its output is affine. If layer l − 1 leaves at most P_{l−1} such intervals, every
    pre-activation of layer l is affine on each of them and changes sign at most once there, so
    each interval splits into at most w_l + 1 pieces: P_l ≤ P_{l−1}(w_l + 1). The output layer is
    affine and adds no breakpoint.
    """
    if isinstance(widths, (str, bytes)) or not isinstance(widths, Sequence):
        raise TypeError(f"`widths` must be a non-empty sequence of ints >= 1, got {widths!r}")
    if len(widths) == 0:
        raise ValueError("`widths` must be a non-empty sequence of ints >= 1, got []")
    pieces = 1
    for index, width in enumerate(widths):
        pieces *= check_int(f"widths[{index}]", width, low=1) + 1
    return pieces


def _as_finite_vector(name: str, value: ArrayLike) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(f"`{name}` must be a 1-D array of real numbers, got {type(value).__name__}") from error
    if array.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D, got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"`{name}` must have length >= 1, got length 0")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"`{name}` must be finite, got {int(np.sum(~np.isfinite(array)))} non-finite entries")
    return array


def _segment_costs(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares affine residual of every run of sorted points.

    Returns ``cost`` of shape (n, n): ``cost[e, i]`` = min_{a,b} Σ_{k=i}^{e} (y_k − a x_k − b)²
    for i ≤ e, and +inf for i > e (no such run). Row e is filled at once for every start i by
    the updating (Welford / Chan–Golub–LeVeque) co-moments, which avoid the cancellation of
    differencing global prefix sums: adding the point (x_e, y_e) to the run starting at i,

        k ← k + 1,  δx = x_e − x̄,  δy = y_e − ȳ,  x̄ ← x̄ + δx/k,  ȳ ← ȳ + δy/k,
        Sxx ← Sxx + δx (x_e − x̄),  Sxy ← Sxy + δx (y_e − ȳ),  Syy ← Syy + δy (y_e − ȳ),

    and the residual is Syy − Sxy²/Sxx (Syy when Sxx = 0: equal abscissae, the best affine fit
    is the mean), clamped to [0, Syy] against rounding (Cauchy–Schwarz gives Sxy² ≤ Sxx Syy).
    """
    n = x.size
    cost = np.full((n, n), np.inf)
    mean_x = np.empty(n)
    mean_y = np.empty(n)
    sxx = np.zeros(n)
    sxy = np.zeros(n)
    syy = np.zeros(n)
    counts = np.arange(n, 0, -1, dtype=np.float64)  # reused as 1..e+1 for starts e..0
    for e in range(n):
        xe, ye = x[e], y[e]
        mean_x[e], mean_y[e] = xe, ye
        if e > 0:
            k = counts[n - e - 1 : n - 1]  # run lengths e+1, e, …, 2 for starts 0..e−1
            dx = xe - mean_x[:e]
            dy = ye - mean_y[:e]
            mean_x[:e] += dx / k
            mean_y[:e] += dy / k
            sxx[:e] += dx * (xe - mean_x[:e])
            sxy[:e] += dx * (ye - mean_y[:e])
            syy[:e] += dy * (ye - mean_y[:e])
        s_xx, s_xy, s_yy = sxx[: e + 1], sxy[: e + 1], syy[: e + 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            rss = np.where(s_xx > 0.0, s_yy - s_xy * s_xy / s_xx, s_yy)
        cost[e, : e + 1] = np.clip(rss, 0.0, s_yy)
        if e > 0 and s_xx[e - 1] > 0.0:
            cost[e, e - 1] = 0.0  # two distinct abscissae: the line through them, exactly
    return cost


def piecewise_linear_floor(x: ArrayLike, y: ArrayLike, max_pieces: int) -> np.ndarray:
    """Least mean squared error of any function with at most m linear pieces, for m = 1..max_pieces.

    Args:
        x: (n,) finite abscissae, any order, ties allowed.
        y: (n,) finite targets.
        max_pieces: largest piece count M, an int ≥ 1 (values beyond n are allowed; the floor is
            0 there).

    Returns:
        (M,) float64 array F with

            F[m − 1] = (1/n) min_{segmentations of the x-sorted points into ≤ m contiguous runs}
                       Σ_runs min_{a, b} Σ_{i ∈ run} (y_i − a x_i − b)²,

        non-increasing in m; F[0] is the residual of the single least-squares line, and a run of
        one point, or of two with distinct abscissae, costs 0.

    Why it is a lower bound: let f: ℝ → ℝ be affine on each of m closed intervals covering ℝ
    (continuity is not needed, so this covers every ReLU network with
    :func:`relu_piece_bound` (widths) ≤ m). Assign each sample to one interval containing its
    abscissa, all samples sharing an abscissa to the same one; with the points sorted by x the
    classes are ≤ m contiguous runs, and on each run f is one affine function, whose squared
    error is at least the run's least-squares residual. Hence (1/n) Σ_i (f(x_i) − y_i)² ≥ F[m − 1].
    The minimum here also allows runs that split tied abscissae, in whatever order the stable
    sort leaves them; that only enlarges the set minimised over, so the bound stays valid (and
    is exact without ties). Dropping continuity makes F a relaxation, not the best CPWL error.

    Computation (Bellman 1961): with c(i, e) the residual of the run of sorted points i..e and
    D_m(j) the best cost of the first j points in m runs, D_0(0) = 0, D_0(j > 0) = +∞ and

        D_m(j) = min_{0 ≤ i < j} D_{m−1}(i) + c(i, j − 1),    F[m − 1] = min_{m' ≤ m} D_{m'}(n)/n.

    The (n × n) cost matrix (8n² bytes: 134 MB at n = 4096) is built once by numerically stable
    updating co-moments; each of the M steps is a vectorised minimum over its lower triangle,
    O(n²) per step and O(M n²) in all. Data are centred and scaled before fitting (residuals are
    invariant to affine changes of x and scale back by the y scale squared).

    Rounding: each run's residual Syy − Sxy²/Sxx loses about log10(Syy/residual) digits, so F is
    exact to roughly 1e−12 relative for moderate runs and 1e−9 for very well fitted short ones
    (y = x², n = 4096, 256 runs of 16 points). When an achieved error is compared with F at that
    precision, allow such a relative tolerance; the bound is meant for gaps of orders of magnitude.
    """
    x_arr = _as_finite_vector("x", x)
    y_arr = _as_finite_vector("y", y)
    if x_arr.size != y_arr.size:
        raise ValueError(f"`x` and `y` must have the same length, got {x_arr.size} and {y_arr.size}")
    max_pieces = check_int("max_pieces", max_pieces, low=1)
    check_fits_in_memory(f"`max_pieces`={max_pieces}", max_pieces, what="floor values")
    n = x_arr.size

    order = np.argsort(x_arr, kind="stable")
    x_s, y_s = x_arr[order], y_arr[order]
    # Residuals are unchanged by affine maps of x and scale by s² under y ↦ y/s; unit scale keeps
    # every co-moment O(run length) and away from overflow/underflow.
    x_scale = float(np.max(np.abs(x_s - x_s.mean())))
    y_scale = float(np.max(np.abs(y_s - y_s.mean())))
    floor = np.zeros(max_pieces)
    if y_scale == 0.0:
        return floor  # constant data: a single flat piece fits exactly
    x_s = (x_s - x_s.mean()) / (x_scale if x_scale > 0.0 else 1.0)
    y_s = (y_s - y_s.mean()) / y_scale

    cost = _segment_costs(x_s, y_s)
    steps = min(max_pieces, n)
    best = np.inf
    dp = np.full(n + 1, np.inf)
    dp[0] = 0.0
    new = np.empty(n + 1)
    for m in range(1, steps + 1):
        new.fill(np.inf)
        lo = m - 1  # D_{m−1}(i) = +∞ for i < m − 1: fewer points than runs
        if m < steps:
            for a in range(lo, n, _BLOCK_ROWS):
                b = min(a + _BLOCK_ROWS, n)
                # rows e ∈ [a, b) need starts i ∈ [lo, e]; entries with i > e are +∞ in `cost`.
                block = cost[a:b, lo:b] + dp[lo:b]
                new[a + 1 : b + 1] = block.min(axis=1)
        else:
            new[n] = np.min(cost[n - 1, lo:] + dp[lo:n])
        dp, new = new, dp
        best = min(best, float(dp[n]))
        floor[m - 1] = best
        if best == 0.0:
            break  # every larger m is 0 too; `floor` is already 0 there
    if steps < max_pieces and best > 0.0:
        floor[steps:] = best  # unreachable for distinct-or-tied data (n runs of one point cost 0)
    return floor * (y_scale * y_scale / n)
