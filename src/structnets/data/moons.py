"""Two-moons data (the toy of Murari, Furuya, Schönlieb, arXiv 2505.12003: 4000 points, noise 0.1)."""

from __future__ import annotations

import numpy as np

from .._validation import check_fits_in_memory, check_int, check_real


def make_moons(
    n_samples: int = 4000, noise: float = 0.1, train_fraction: float = 0.2, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return a seeded, stratified train/test split of scikit-learn's two interleaving moons.

    Args:
        n_samples: total points (≥ 4), half per moon.
        noise: standard deviation of the Gaussian noise added to every point (≥ 0).
        train_fraction: share of points used for training, in (0, 1) (the paper: 0.2).
        seed: seeds both the sampling and the split.

    Returns:
        ``(X_train, y_train, X_test, y_test)``: float64 (n, 2) features, int64 labels in {0, 1}.
    """
    from sklearn.datasets import make_moons as _sk_make_moons
    from sklearn.model_selection import train_test_split

    n_samples = check_int("n_samples", n_samples, low=4)
    noise = check_real("noise", noise, low=0.0)
    train_fraction = check_real("train_fraction", train_fraction, low=0.0, high=1.0, low_open=True, high_open=True)
    seed = check_int("seed", seed, low=0, high=2**32 - 1)
    check_fits_in_memory(f"`n_samples`={n_samples}", 8 * n_samples, what="float64 values")
    X, y = _sk_make_moons(n_samples=n_samples, noise=noise, random_state=seed)
    X_train, X_test, y_train, y_test = train_test_split(X, y, train_size=train_fraction, random_state=seed, stratify=y)
    return (
        X_train.astype(np.float64),
        y_train.astype(np.int64),
        X_test.astype(np.float64),
        y_test.astype(np.int64),
    )


__all__ = ["make_moons"]
