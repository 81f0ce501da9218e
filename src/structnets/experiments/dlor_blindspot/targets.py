"""The saddle target f(x) = x₁x₂ on [−1, 1]² and the best error of any function of one projection vᵀx."""

from __future__ import annotations

import math

import numpy as np

MODELS: tuple[str, ...] = ("rank1", "dlor")
"""The trained families: rank-1 networks (α = 0) and rank-1 DLoR networks."""


def saddle(x: np.ndarray) -> np.ndarray:
    """f(x) = x₁·x₂ for x of shape (n, 2)."""
    return x[:, 0] * x[:, 1]


def saddle_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n points uniform on [−1, 1]² and their saddle values."""
    X = np.random.default_rng(seed).uniform(-1.0, 1.0, (n, 2))
    return X, saddle(X)


def saddle_grid(per_axis: int) -> tuple[np.ndarray, np.ndarray]:
    """A per_axis × per_axis grid on [−1, 1]² and its saddle values (the test set)."""
    axis = np.linspace(-1.0, 1.0, per_axis)
    X = np.stack([g.ravel() for g in np.meshgrid(axis, axis, indexing="ij")], axis=1)
    return X, saddle(X)


def ridge_floor(X: np.ndarray, y: np.ndarray, directions: int = 180, bins: int = 400) -> tuple[float, float]:
    """min over v = (cos θ, sin θ) of the MSE of the binned conditional mean of y given vᵀx.

    Returns (floor, θ at the minimum). The binned conditional mean is the best function of the
    bin of vᵀx, so with many samples per bin this estimates the best ridge-function error.
    """
    best, best_theta = math.inf, 0.0
    for theta in np.linspace(0.0, np.pi, directions, endpoint=False):
        t = X @ np.array([np.cos(theta), np.sin(theta)])
        low, span = t.min(), max(float(np.ptp(t)), 1e-300)
        index = np.minimum(((t - low) * (bins / span)).astype(np.int64), bins - 1)  # equal-width bins
        means = np.bincount(index, y, bins) / np.maximum(np.bincount(index, None, bins), 1)
        mse = float(np.mean((y - means[index]) ** 2))
        if mse < best:
            best, best_theta = mse, float(theta)
    return best, best_theta
