"""Log–log slope fitting with confidence intervals, for empirical convergence rates.

A rate claim "error ≍ C·x^a" (x = sample size n or parameter count N) is checked by the least-
squares slope of log(error) on log(x). Its interval (``method="t"``, the default) is the t-interval
a ± t_df·σ̂/√Sxx: with replicates (seeds at one x) σ̂² is the pooled within-x ("pure error")
variance with df = n − (number of x values), so a curve that bends does not widen it; without
replicates it is the residual variance with df = n − 2. Under independent normal noise in log y
its coverage is exact for the least-squares slope (the projection slope when the curve bends).
The stratified percentile bootstrap (``method="bootstrap"``, Efron & Tibshirani 1993, Ch. 13) was
the default until 2026-12-07: with 2–5 seeds per x it covered a known slope only 76–92 % of the
time at a nominal 95 % (resampling r replicates shrinks their variance by (r − 1)/r, and the
percentiles of a few resampled means are coarse). Used by the smoothness-adaptivity experiment
(Liu, Wang, Wu, Zhang, arXiv 2602.19691) against the minimax exponent −2s/(2s + d) and the ReLU
depth cap (:func:`relu_depth_cap_exponent`, with the depth convention derived there: the paper's
L − 1 is the number of weight layers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_choice, check_int, check_real


@dataclass(frozen=True)
class SlopeFit:
    """A fitted log–log slope.

    Attributes:
        slope: least-squares a in log y = a·log x + b.
        intercept: b (natural logarithms).
        low, high: the interval for a at ``level`` (see ``method`` of :func:`loglog_slope`).
        level: the interval's nominal coverage (e.g. 0.95).
        n_points: observations used; n_levels: distinct x values.
        n_boot: bootstrap resamples (0 for the t-interval).
    """

    slope: float
    intercept: float
    low: float
    high: float
    level: float
    n_points: int
    n_levels: int
    n_boot: int

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in [low, high]."""
        return self.low <= value <= self.high


def _ols_slopes(lx: np.ndarray, ly: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # Rows are independent fits: slope = cov(lx, ly)/var(lx) along the last axis.
    mx = lx.mean(-1, keepdims=True)
    my = ly.mean(-1, keepdims=True)
    sxx = ((lx - mx) ** 2).sum(-1)
    sxy = ((lx - mx) * (ly - my)).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = sxy / sxx
    return slope, my[..., 0] - slope * mx[..., 0]


def loglog_slope(
    x: np.ndarray | list[float],
    y: np.ndarray | list[float],
    *,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    method: str = "t",
) -> SlopeFit:
    """Fit log y = a log x + b by least squares, with an interval for a (see the module docstring).

    Args:
        x: (n,) positive abscissae (repeated values mark replicates, e.g. seeds at one n).
        y: (n,) positive values (errors).
        n_boot: bootstrap resamples (≥ 100; ``method="bootstrap"`` only).
        level: interval coverage in (0, 1).
        seed: seeds the resampling (``method="bootstrap"`` only).
        method: ``"t"`` (t-interval; pure-error variance with replicates) or ``"bootstrap"``
            (stratified percentile bootstrap: each x level keeps its count and its replicates are
            resampled with replacement; without replicates pairs are resampled).

    Returns:
        a :class:`SlopeFit`. For an exact power law the interval is one point.
    """
    try:
        x = np.asarray(x, dtype=float).ravel()
    except (TypeError, ValueError) as error:
        raise TypeError(f"`x` must be an array of positive numbers, got {x!r}: {error}") from None
    try:
        y = np.asarray(y, dtype=float).ravel()
    except (TypeError, ValueError) as error:
        raise TypeError(f"`y` must be an array of positive numbers, got {y!r}: {error}") from None
    if x.shape != y.shape:
        raise ValueError(f"`x` and `y` must have the same length, got {x.size} and {y.size}")
    if x.size < 3 or not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise ValueError(f"`x` must hold at least 3 finite positive values, got {x.tolist()}")
    if not np.all(np.isfinite(y)) or np.any(y <= 0):
        raise ValueError(f"`y` must hold finite positive values, got {y.tolist()}")
    n_boot = check_int("n_boot", n_boot, low=100, high=10**6)
    level = check_real("level", level, low=0.0, high=1.0, low_open=True, high_open=True)
    seed = check_int("seed", seed, low=0)
    method = check_choice("method", method, ("t", "bootstrap"))
    levels = np.unique(x)
    if levels.size < 2:
        raise ValueError(f"`x` must take at least 2 distinct values, got {levels.tolist()}")
    lx, ly = np.log(x), np.log(y)
    slope, intercept = _ols_slopes(lx, ly)
    if method == "t":
        low, high = _t_interval(x, lx, ly, float(slope), float(intercept), levels, level)
        n_boot = 0
    else:
        low, high = _bootstrap_interval(x, lx, ly, float(slope), levels, level, n_boot, seed)
    return SlopeFit(
        slope=float(slope),
        intercept=float(intercept),
        low=low,
        high=high,
        level=level,
        n_points=int(x.size),
        n_levels=int(levels.size),
        n_boot=n_boot,
    )


def _bootstrap_interval(
    x: np.ndarray,
    lx: np.ndarray,
    ly: np.ndarray,
    slope: float,
    levels: np.ndarray,
    level: float,
    n_boot: int,
    seed: int,
) -> tuple[float, float]:
    """The stratified percentile bootstrap interval (``method="bootstrap"``), widened to contain ``slope``."""
    rng = np.random.default_rng(seed)
    if levels.size < x.size:  # replicates: stratified bootstrap within each x level
        index = np.empty((n_boot, x.size), dtype=int)
        start = 0
        for value in levels:
            members = np.flatnonzero(x == value)
            index[:, start : start + members.size] = rng.choice(members, size=(n_boot, members.size))
            start += members.size
    else:
        index = rng.integers(0, x.size, size=(n_boot, x.size))
    boot, _ = _ols_slopes(lx[index], ly[index])
    boot = boot[np.isfinite(boot)]
    tail = (1 - level) / 2
    low, high = np.quantile(boot, [tail, 1 - tail]) if boot.size else (np.nan, np.nan)
    return float(min(low, slope)), float(max(high, slope))


def _t_interval(
    x: np.ndarray, lx: np.ndarray, ly: np.ndarray, slope: float, intercept: float, levels: np.ndarray, level: float
) -> tuple[float, float]:
    """a ± t_df·σ̂/√Sxx: pure-error σ̂² (pooled over x levels, df = n − k) with replicates, else residual (df = n − 2)."""
    from scipy import stats

    sxx = float(((lx - lx.mean()) ** 2).sum())
    if levels.size < x.size:
        groups = [ly[x == value] for value in levels]
        squares = sum(float(((g - g.mean()) ** 2).sum()) for g in groups)
        df = x.size - levels.size
    else:
        squares = float(((ly - (slope * lx + intercept)) ** 2).sum())
        df = x.size - 2
    half = float(stats.t.ppf(0.5 + level / 2, df)) * float(np.sqrt(squares / df / sxx))
    return slope - half, slope + half


def minimax_exponent(s: float, d: int) -> float:
    """The minimax MSE exponent −2s/(2s + d) for s-smooth regression in dimension d (Stone 1982)."""
    s = check_real("s", s, low=0.0, low_open=True)
    d = check_int("d", d, low=1)
    return -2.0 * s / (2.0 * s + d)


def relu_depth_cap_exponent(s: float, d: int, weight_layers: int) -> float:
    """The ReLU depth cap of Liu et al., Theorem 6.1, as an RMSE/sup-error exponent in N.

    The theorem: a ReLU network of depth L with N parameters has worst-case error
    Ω(N^{−min(L−1, s)/d}) on the unit ball of W^{s,∞}([0,1]^d). Here L counts the layers of
    *neurons*, input and output included, so L − 1 is the number of affine maps (weight layers):
    a one-hidden-layer network has L = 3 and cap N^{−min(2, s)/d}.

    Why this convention (the other one makes the theorem false): at d = 1 a one-hidden-layer ReLU
    network with m units (N = 3m + 1 parameters) is exactly a continuous piecewise-linear function
    with m + 1 free knots, and free-knot linear splines reach sup error ≍ m^{−2} on every C²
    target, so N^{−2} is attainable at one hidden layer (our certified floor,
    :func:`structnets.analysis.piecewise_linear_floor`, measures slope −1.98 and is attained to
    10⁻¹² on y = x²). Reading L as the number of weight layers (L = 2) would give a "lower
    bound" N^{−1} that these networks beat. Conversely, with H = L_w − 1 hidden layers of widths
    w_l a network ℝ → ℝ has at most Π(w_l + 1) pieces (:func:`relu_piece_bound`); pairing
    consecutive layers, (w_l + 1)(w_{l+1} + 1) ≤ 4 w_l w_{l+1} ≤ 4N, so at most (4N)^{⌈H/2⌉}
    pieces, and a target with |f''| ≥ c > 0 then keeps sup error ≥ c'·N^{−2⌈H/2⌉}: exponent
    2⌈(L_w − 1)/2⌉ ≤ L_w = L − 1, with equality for even L_w. So the paper's L − 1 equals our
    number of weight layers L_w, and the cap is sharp at d = 1 for L_w = 2.

    Args:
        s: smoothness (> 0).
        d: input dimension (≥ 1).
        weight_layers: affine maps of the network, L_w = L − 1 (≥ 2; 2 = one hidden layer).

    Returns:
        −min(L_w, s)/d: the error of fixed-depth ReLU networks cannot fall faster than N to this
        power (on the worst target of the class).
    """
    s = check_real("s", s, low=0.0, low_open=True)
    d = check_int("d", d, low=1)
    weight_layers = check_int("weight_layers", weight_layers, low=2)
    return -min(float(weight_layers), s) / d


def relu_estimation_exponent(s: float, d: int, weight_layers: int) -> float:
    """The estimation (MSE in n) exponent that the ReLU depth cap allows: −2r/(2r + d), r = min(L_w, s).

    Derived, not stated by the paper: with approximation order r (squared bias N^{−2r/d}) and
    variance ≍ N/n up to logs, the best N balances to n^{−2r/(2r+d)}. Smooth activations are
    allowed r = s (:func:`minimax_exponent`); a separation in n is predicted only where
    L_w < s, e.g. d = 1, s = 3, L_w = 2: −0.8 against −0.857; d = 2, s = 4, L_w = 2: −0.667
    against −0.8.

    Args:
        s, d, weight_layers: as in :func:`relu_depth_cap_exponent`.
    """
    r = -relu_depth_cap_exponent(s, d, weight_layers) * d
    return -2.0 * r / (2.0 * r + d)


__all__ = ["SlopeFit", "loglog_slope", "minimax_exponent", "relu_depth_cap_exponent", "relu_estimation_exponent"]
