"""Random piecewise-affine 1-Lipschitz targets, seeded, with their exact max-min representation.

Murari, Furuya, Schönlieb (*Approximation theory for 1-Lipschitz ResNets*, NeurIPS 2025, arXiv
2505.12003) prove that their ResNets represent every scalar piecewise-affine 1-Lipschitz function
exactly (through the max-min representation, see :mod:`structnets.constructive.maxmin`) and that the
fixed-width networks (width d + 3, norm-constrained affine maps between residual blocks; their
Theorem 4.1) are dense in the scalar 1-Lipschitz functions on compacts as depth grows. Measuring
either claim needs targets that are 1-Lipschitz *by construction* and whose exact network is known:

* :func:`random_lattice_target_1d`: the piecewise-linear interpolant of K slopes mₖ ~ U[−1, 1]
  on K random cells of [low, high]; |mₖ| ≤ 1, so Lip(f) = maxₖ |mₖ| ≤ 1; pieces from
  :func:`~structnets.constructive.lattice_pieces_1d` (Ovchinnikov 2002, Thm. 2.1).
* :func:`random_maxmin_target`: f(x) = maxᵢ min_{j ≤ J} (aᵢⱼᵀ(x − pᵢⱼ) + hᵢⱼ) on [low, high]ᵈ with
  ‖aᵢⱼ‖₂ ≤ 1; max and min of 1-Lipschitz functions are 1-Lipschitz, so Lip(f) ≤ maxᵢⱼ ‖aᵢⱼ‖₂ ≤ 1.
  Anchors pᵢⱼ are drawn in the domain so the pieces cross inside it.

Every target is a :class:`LipschitzTarget`: callable on (n, d) float64 arrays (the reference
:func:`~structnets.constructive.evaluate_maxmin`), with its pieces for
:func:`~structnets.constructive.maxmin_network`. :func:`max_secant_ratio` measures
max |f(x) − f(y)|/‖x − y‖₂ over a point set in float64 (a lower bound of Lip(f)).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .._validation import check_fits_in_memory, check_int, check_real
from ._arrays import real_array
from .maxmin import evaluate_maxmin, lattice_pieces_1d

Pieces = tuple[tuple[tuple[tuple[float, ...], float], ...], ...]


@dataclass(frozen=True)
class LipschitzTarget:
    """A piecewise-affine 1-Lipschitz f: [low, high]ᵈ → ℝ given by f = maxᵢ min_{(a, c) ∈ pieces[i]} aᵀx + c.

    Attributes:
        name: a short label, e.g. ``"1d-K8-s0"``.
        dim: d.
        low, high: the domain [low, high]ᵈ.
        pieces: the max-min representation (tuples of (a, c), a of length d, ‖a‖₂ ≤ 1).
        knots, values: the 1-D interpolation data (empty for other targets).
    """

    name: str
    dim: int
    low: float
    high: float
    pieces: Pieces
    knots: tuple[float, ...] = ()
    values: tuple[float, ...] = ()

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """f at (n, d) points (float64 reference, :func:`evaluate_maxmin`); returns (n,)."""
        return evaluate_maxmin(self.pieces, np.asarray(x, dtype=np.float64).reshape(-1, self.dim))

    @property
    def n_pieces(self) -> int:
        """Number of affine pieces listed over all groups (with repeats)."""
        return sum(len(group) for group in self.pieces)

    @property
    def n_groups(self) -> int:
        """Number of max-min groups (the outer max runs over them)."""
        return len(self.pieces)

    @property
    def lipschitz_by_construction(self) -> float:
        """max over pieces of ‖a‖₂: an upper bound of Lip(f) (≤ 1 for every target made here)."""
        return max(float(np.linalg.norm(a)) for group in self.pieces for a, _ in group)

    def grid(self, points_per_axis: int) -> np.ndarray:
        """The tensor grid of ``points_per_axis``ᵈ points on [low, high]ᵈ, shape (nᵈ, d), float64."""
        return grid_points(self.dim, points_per_axis, self.low, self.high)


def grid_points(dim: int, points_per_axis: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
    """Tensor grid of ``points_per_axis`` equispaced points per axis on [low, high]ᵈ.

    Args:
        dim: d ≥ 1.
        points_per_axis: n ≥ 2.
        low, high: finite, low < high.

    Returns:
        (nᵈ, d) float64 array (first coordinate varying slowest).
    """
    dim = check_int("dim", dim, low=1)
    points_per_axis = check_int("points_per_axis", points_per_axis, low=2)
    low, high = check_domain(low, high)
    # nᵈ points of d coordinates; compared in logarithms first (nᵈ is slow to form for a huge d)
    if dim > 64 or dim * math.log2(points_per_axis) > 64:
        raise ValueError(f"`dim`={dim} and `points_per_axis`={points_per_axis} ask for more than 2**64 grid points")
    check_fits_in_memory(
        f"`dim`={dim}, `points_per_axis`={points_per_axis}", points_per_axis**dim * dim, what="coordinates"
    )
    axis = np.linspace(low, high, points_per_axis)
    mesh = np.meshgrid(*([axis] * dim), indexing="ij")
    return np.stack([m.reshape(-1) for m in mesh], axis=-1)


def random_lattice_target_1d(
    n_pieces: int, *, seed: int, low: float = -1.0, high: float = 1.0, min_cell: float = 0.25
) -> LipschitzTarget:
    """A random 1-Lipschitz piecewise-linear f on [low, high] with ``n_pieces`` linear pieces.

    Cell widths are (1 − min_cell)·Dirichlet(1, …, 1) + min_cell/K of the interval (so no cell
    is shorter than min_cell·(high − low)/K), slopes mₖ ~ U[−1, 1] i.i.d., and f is centred:
    f(low) = −(mean of the knot values before shifting). By construction |mₖ| ≤ 1, so
    Lip(f) = maxₖ |mₖ| ≤ 1. The max-min pieces are :func:`lattice_pieces_1d` of the knots.

    Args:
        n_pieces: K ≥ 1.
        seed: seeds ``numpy.random.default_rng``.
        low, high: the interval (finite, low < high).
        min_cell: share of the interval spread evenly over the cells, in [0, 1].

    Returns:
        a :class:`LipschitzTarget` with ``knots`` and ``values`` set.
    """
    n_pieces = check_int("n_pieces", n_pieces, low=1)
    check_fits_in_memory(f"`n_pieces`={n_pieces}", 4 * n_pieces, what="knots and values")
    seed = check_int("seed", seed, low=0)
    low, high = check_domain(low, high)
    min_cell = check_real("min_cell", min_cell, low=0.0, high=1.0)
    rng = np.random.default_rng(seed)
    widths = (1.0 - min_cell) * rng.dirichlet(np.ones(n_pieces)) + min_cell / n_pieces
    knots = low + (high - low) * np.concatenate([[0.0], np.cumsum(widths)])
    knots[-1] = high
    slopes = rng.uniform(-1.0, 1.0, n_pieces)
    values = np.concatenate([[0.0], np.cumsum(slopes * np.diff(knots))])
    values -= values.mean()
    # Recompute the slopes the pieces will carry from the rounded knots and values: clip any
    # rounding excess over 1 by pulling the next value in, so |mₖ| ≤ 1 holds on the stored data.
    for k in range(n_pieces):
        step = knots[k + 1] - knots[k]
        if abs(values[k + 1] - values[k]) > step:
            values[k + 1] = values[k] + math.copysign(step, values[k + 1] - values[k])
    pieces = lattice_pieces_1d(knots, values)
    return LipschitzTarget(
        name=f"1d-K{n_pieces}-s{seed}",
        dim=1,
        low=low,
        high=high,
        pieces=_freeze(pieces),
        knots=tuple(float(t) for t in knots),
        values=tuple(float(v) for v in values),
    )


def random_maxmin_target(
    dim: int,
    n_groups: int,
    group_size: int,
    *,
    seed: int,
    low: float = -1.0,
    high: float = 1.0,
    min_slope: float = 0.3,
    height: float = 0.25,
) -> LipschitzTarget:
    """A random 1-Lipschitz max-min f(x) = maxᵢ min_{j ≤ J} (aᵢⱼᵀ(x − pᵢⱼ) + hᵢⱼ) on [low, high]ᵈ.

    aᵢⱼ = rᵢⱼ uᵢⱼ with uᵢⱼ uniform on the unit sphere and rᵢⱼ ~ U[min_slope, 1], so ‖aᵢⱼ‖₂ ≤ 1;
    anchors pᵢⱼ ~ U[low, high]ᵈ and heights hᵢⱼ ~ height·(high − low)·U[−1, 1]. Every piece is
    1-Lipschitz and min/max preserve that, so Lip(f) ≤ 1 by construction.

    Args:
        dim: d ≥ 1.
        n_groups: number of groups I ≥ 1 (outer max).
        group_size: pieces per group J ≥ 1 (inner min).
        seed: seeds ``numpy.random.default_rng``.
        low, high: the domain (finite, low < high).
        min_slope: smallest gradient norm, in [0, 1].
        height: spread of the heights, ≥ 0.

    Returns:
        a :class:`LipschitzTarget`.
    """
    dim = check_int("dim", dim, low=1)
    n_groups = check_int("n_groups", n_groups, low=1)
    group_size = check_int("group_size", group_size, low=1)
    check_fits_in_memory(
        f"`dim`={dim}, `n_groups`={n_groups}, `group_size`={group_size}", dim * n_groups * group_size, what="slopes"
    )
    seed = check_int("seed", seed, low=0)
    low, high = check_domain(low, high)
    min_slope = check_real("min_slope", min_slope, low=0.0, high=1.0)
    height = check_real("height", height, low=0.0)
    rng = np.random.default_rng(seed)
    directions = rng.normal(size=(n_groups, group_size, dim))
    directions /= np.linalg.norm(directions, axis=-1, keepdims=True)
    radii = rng.uniform(min_slope, 1.0, (n_groups, group_size, 1))
    gradients = directions * radii
    # Guard the stored gradient against a rounding excess over norm 1.
    norms = np.linalg.norm(gradients, axis=-1, keepdims=True)
    gradients = np.where(norms > 1.0, gradients / np.nextafter(norms, np.inf), gradients)
    anchors = rng.uniform(low, high, (n_groups, group_size, dim))
    heights = height * (high - low) * rng.uniform(-1.0, 1.0, (n_groups, group_size))
    offsets = heights - np.einsum("ijk,ijk->ij", gradients, anchors)
    pieces = [[(gradients[i, j], float(offsets[i, j])) for j in range(group_size)] for i in range(n_groups)]
    return LipschitzTarget(
        name=f"{dim}d-G{n_groups}x{group_size}-s{seed}", dim=dim, low=low, high=high, pieces=_freeze(pieces)
    )


def max_secant_ratio(points: np.ndarray, values: np.ndarray, *, chunk: int = 2048) -> float:
    """max over pairs x ≠ y of |f(x) − f(y)| / ‖x − y‖₂, in float64 (a measured lower bound of Lip(f)).

    In 1-D the points are sorted and only neighbours are compared: for any t₁ < t₂ < t₃ the secant
    over [t₁, t₃] is a weighted mean of those over [t₁, t₂] and [t₂, t₃], so neighbours attain the
    maximum. In d ≥ 2 every pair is compared (O(n²) time, O(chunk·n) memory).

    Args:
        points: (n, d) points (n ≥ 2; distinct points are compared, coincident ones skipped).
        values: (n,) f at the points.
        chunk: rows compared at once.

    Returns:
        the largest secant ratio (0.0 if all points coincide).
    """
    x = real_array("points", points)
    if x.ndim == 1:
        x = x[:, None]
    f = real_array("values", values).reshape(-1)
    if x.ndim != 2 or x.shape[0] != f.size or f.size < 2:
        raise ValueError(
            f"`points` must be (n, d) and `values` (n,) with n ≥ 2, got {np.shape(points)} and {np.shape(values)}"
        )
    if not (np.isfinite(x).all() and np.isfinite(f).all()):
        raise ValueError("`points` and `values` must be finite")
    chunk = check_int("chunk", chunk, low=1)
    if x.shape[1] == 1:
        order = np.argsort(x[:, 0], kind="stable")
        dx, df = np.diff(x[order, 0]), np.abs(np.diff(f[order]))
        keep = dx > 0
        return float((df[keep] / dx[keep]).max()) if keep.any() else 0.0
    best = 0.0
    for start in range(0, len(x), chunk):
        dist = np.linalg.norm(x[start : start + chunk, None, :] - x[None, :, :], axis=-1)
        diff = np.abs(f[start : start + chunk, None] - f[None, :])
        mask = dist > 0
        if mask.any():
            best = max(best, float((diff[mask] / dist[mask]).max()))
    return best


def check_target(
    target: Callable[[np.ndarray], np.ndarray], dim: int, low: float, high: float, *, name: str = "target"
) -> Callable[[np.ndarray], np.ndarray]:
    """Return ``target`` if it is callable and finite, of shape (n,), on a probe grid of [low, high]ᵈ.

    Raises:
        ValueError: naming ``name``, when it is not callable, raises, returns the wrong shape or
            non-finite values on the probe points.
    """
    dim = check_int("dim", dim, low=1)
    if not callable(target):
        raise ValueError(f"`{name}` must be a callable (n, {dim}) array -> (n,) array, got {target!r}")
    probe = grid_points(dim, 17 if dim <= 2 else 5, low, high)
    try:
        values = np.asarray(target(probe), dtype=np.float64)
    except Exception as error:  # noqa: BLE001 (re-raised with the argument named)
        raise ValueError(f"`{name}` failed on (n, {dim}) points of [{low}, {high}]^{dim}: {error!r}") from error
    if values.reshape(-1).size != len(probe):
        raise ValueError(f"`{name}` must return one value per point: {len(probe)} points gave shape {values.shape}")
    if not np.isfinite(values).all():
        raise ValueError(f"`{name}` must be finite on [{low}, {high}]^{dim}, got non-finite values")
    return target


def check_domain(low: float, high: float) -> tuple[float, float]:
    """``(low, high)`` as finite floats with ``low < high``, else ``ValueError``/``TypeError`` naming them."""
    low = check_real("low", low)
    high = check_real("high", high)
    if not low < high:
        raise ValueError(f"`low` must be < `high`, got low={low}, high={high}")
    return low, high


def _freeze(pieces: Sequence[Sequence[tuple[Sequence[float] | np.ndarray, float]]]) -> Pieces:
    return tuple(
        tuple((tuple(float(v) for v in np.asarray(a).reshape(-1)), float(c)) for a, c in group) for group in pieces
    )


__all__ = [
    "LipschitzTarget",
    "check_domain",
    "check_target",
    "grid_points",
    "max_secant_ratio",
    "random_lattice_target_1d",
    "random_maxmin_target",
]
