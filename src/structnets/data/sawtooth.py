"""Sawtooth targets, the synthetic family of the DLoR experiments (Chen et al., arXiv 2605.05659).

The family, with ``teeth`` = T ≥ 1 and input dimension ``dim`` = d ≥ 1, on the cube [0, 1]^d:

    f_{T,d}(x) = (1/d) Σ_{i=1}^{d} tri(T·x_i),    tri(t) = 1 − |2·frac(t) − 1|,

where tri is the triangle wave of period 1 (tri(0) = 0, tri(1/2) = 1). In one dimension f_{T,1}
has T teeth, rises and falls 2T times, and is Telgarsky's sawtooth for T = 2^{k−1}; in d
dimensions it is a sum of d such ridges along the coordinate axes, which no function of one
projection vᵀx can fit (the rank-1 blind spot). f takes values in [0, 1]; under x ~ U[0, 1]^d its
variance is 1/(12d) (tri(U) is uniform on [0, 1]), the MSE of the best constant predictor.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_bool, check_fits_in_memory, check_int

MAX_TEETH = 2**40
"""Largest ``teeth`` accepted: beyond it T·x on [0, 1] keeps too few float64 fraction bits to draw a tooth."""


def triangle_wave(t: np.ndarray) -> np.ndarray:
    """tri(t) = 1 − |2·frac(t) − 1|: period 1, 0 at the integers, 1 at the half-integers."""
    if isinstance(t, (str, bytes)) or t is None or np.iscomplexobj(t):
        raise TypeError(f"`t` must be a real array, got {type(t).__name__}")
    try:
        t = np.asarray(t, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(f"`t` must be a real array, got {type(t).__name__}: {error}") from None
    return 1.0 - np.abs(2.0 * (t - np.floor(t)) - 1.0)


def sawtooth(x: np.ndarray, teeth: int) -> np.ndarray:
    """f_{T,d}(x) = mean_i tri(T·x_i) for x of shape (n, d); returns shape (n,)."""
    teeth = check_int("teeth", teeth, low=1, high=MAX_TEETH)
    if np.iscomplexobj(x):
        raise TypeError("`x` must be real, got complex values")
    try:
        x = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise TypeError(f"`x` must be a real (n, d) array, got {type(x).__name__}: {error}") from None
    if x.ndim != 2:
        raise ValueError(f"`x` must have shape (n, d), got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("`x` must be finite, got NaN or inf entries")
    return triangle_wave(teeth * x).mean(axis=1)


def make_sawtooth(
    n: int, dim: int = 1, teeth: int = 2, *, seed: int = 0, grid: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Sample ``(X, y)`` from the sawtooth target f_{T,d} on [0, 1]^d.

    Args:
        n: number of points (≥ 1). With ``grid=True``, points per axis (n^d points in all).
        dim: input dimension d ≥ 1.
        teeth: T ≥ 1.
        seed: seeds the uniform sample (ignored for a grid).
        grid: a regular grid with spacing 1/(n−1) (cell midpoints when n = 1) instead of a
            uniform sample; used for test sets.

    Returns:
        X of shape (points, d), float64 in [0, 1]; y = f_{T,d}(X) of shape (points,).
    """
    n = check_int("n", n, low=1)
    dim = check_int("dim", dim, low=1)
    teeth = check_int("teeth", teeth, low=1, high=MAX_TEETH)
    seed = check_int("seed", seed, low=0)
    grid = check_bool("grid", grid)
    # n**dim of two huge ints would itself take forever: cap the exponent's size first.
    points = (n**dim if dim * n.bit_length() < 256 else 2**256) if grid else n
    check_fits_in_memory(
        f"`n`={n}, `dim`={dim}" + (" (n**dim points with grid=True)" if grid else ""),
        points * (dim + 1),
        what="float64 values",
    )
    if grid:
        axis = np.linspace(0.0, 1.0, n) if n > 1 else np.array([0.5])
        X = np.stack([g.ravel() for g in np.meshgrid(*[axis] * dim, indexing="ij")], axis=1)
    else:
        X = np.random.default_rng(seed).random((n, dim))
    return X, sawtooth(X, teeth)


__all__ = ["make_sawtooth", "sawtooth", "triangle_wave"]
