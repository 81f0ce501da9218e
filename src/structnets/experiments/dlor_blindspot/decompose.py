"""The ``decompose`` stage of ``dlor-blindspot``: Theorems 3 and 4 as matrix identities, to rounding.

Chen, Li, Kim, Lavaei (arXiv 2605.05659), Theorems 3–4: every dense N×N matrix W is *exactly* a sum
(additive, the wide network) and a product (multiplicative, the deep network) of DLoR matrices
α_k I + U_k V_kᵀ of rank r. :func:`structnets.constructive.dlor_sum` and
:func:`~structnets.constructive.dlor_product` build both; in float64 "exactly" can only mean "within
rounding", so each unit measures the reconstruction error of the stored factors against a threshold
derived from the matrix (its size N, its norms, the construction's own truncation), never a fixed 1e-9:

* additive, normwise (the construction is normwise backward stable, not entrywise: its docstring):
  ‖Σ_k M_k − W‖_F ≤ N·ε·(c·‖W‖_F + √(N − ρ)·σ₁(W − τI)), where τ = tr W / N, and the second term is
  the construction's own truncation (the N − ρ singular values of W − τI below N·ε·σ₁ are dropped,
  each at most N·ε·σ₁);
* multiplicative, columnwise (or rowwise, when the construction works on Wᵀ because the rows of W
  are more graded than its columns): ‖(Π_k M_k − W)e_j‖₂ ≤ c·N·ε·‖We_j‖₂ for every column j.

ε = 2⁻⁵² is the float64 machine epsilon and c = :data:`TEST_RATIO` = 30 is the threshold of LAPACK's
own test suite for its scaled residuals ‖A − QR‖/(N·ε·‖A‖) (the default
``THRESH`` = 30.0 of its ``dtest.in``; LAPACK Working Note 41): a backward-stable factorisation gives ratios of order 1, a wrong one
ratios of order 1/ε. The products and sums are formed in float64 as
:func:`~structnets.constructive.dlor_factor.dense_product` and ``dense_sum`` form them, so the
evaluation's rounding is inside the measured error, as it is in LAPACK's tests.

Matrices (seeded, one unit per (N, kind, r)): Gaussian; the same at scales 2⁻⁹⁹⁶ ≈ 1e-300 and 2⁹⁹⁶ ≈ 1e300
(the constructions rescale by exact powers of two); ill-conditioned (singular values 1 … 1e-12 between
random orthogonal factors); singular (one column a sum of two others); column-graded (Gaussian times
diag(1 … 1e-12)), where only the product is accurate column by column.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from ...protocol import JSONScalar

TEST_RATIO = 30.0
"""c of the thresholds: LAPACK's test-suite bound on a scaled residual ‖A − QR‖/(N·ε·‖A‖)."""
EPS = float(np.finfo(np.float64).eps)
DECOMPOSE_KINDS: tuple[str, ...] = ("gaussian", "tiny", "huge", "ill-conditioned", "singular", "column-graded")
"""The matrices of the ``decompose`` stage (module docstring)."""


def ranks_for(size: int) -> list[int]:
    """The ranks r tried at size N: 1, 2, N/4 and N − 1 (those in [1, N − 1])."""
    return sorted({r for r in (1, 2, size // 4, size - 1) if 1 <= r <= size - 1})


def decomposition_matrix(size: int, kind: str, seed: int) -> np.ndarray:
    """The seeded N×N float64 matrix of ``kind`` (:data:`DECOMPOSE_KINDS`)."""
    rng = np.random.default_rng([seed, size, DECOMPOSE_KINDS.index(kind)])
    gauss = rng.standard_normal((size, size))
    if kind == "gaussian":
        return gauss
    if kind == "tiny":
        return np.ldexp(gauss, -996)
    if kind == "huge":
        return np.ldexp(gauss, 996)
    if kind == "ill-conditioned":
        left, _ = np.linalg.qr(gauss)
        right, _ = np.linalg.qr(rng.standard_normal((size, size)))
        return (left * np.logspace(0, -12, size)) @ right.T
    if kind == "singular":
        gauss[:, 0] = gauss[:, 1] + gauss[:, 2 % size]
        return gauss
    if kind == "column-graded":
        return gauss * np.logspace(0, -12, size)
    raise ValueError(f"`kind` must be one of {list(DECOMPOSE_KINDS)}, got {kind!r}")


def _scaled(a: np.ndarray, exponent: int) -> np.ndarray:
    """a·2^−exponent, exact (norms of 1e±300 matrices must neither overflow nor underflow)."""
    return np.ldexp(a, -exponent)


def _ratio(error: np.ndarray, reference: np.ndarray) -> float:
    """max over entries of error/reference, with 0/0 = 0 and x/0 = inf."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(reference > 0, error / np.where(reference > 0, reference, 1.0), np.where(error > 0, np.inf, 0))
    return float(ratio.max())


def run_decompose(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    """One (N, kind, r) unit: both decompositions, their errors, thresholds and factor counts."""
    from ...constructive import dlor_product, dlor_sum
    from ...constructive.dlor_factor import dense_product, dense_sum

    size, kind, rank = int(params["size"]), str(params["kind"]), int(params["rank"])
    W = decomposition_matrix(size, kind, int(params["seed"]))
    exponent = math.frexp(float(np.abs(W).max()))[1]
    Wt = torch.from_numpy(W)
    additive = dlor_sum(Wt, rank)
    multiplicative = dlor_product(Wt, rank)
    scaled = _scaled(W, exponent)

    # additive: normwise, with the construction's truncation of W − τI
    sum_error = _scaled(dense_sum(additive).numpy() - W, exponent)
    shifted = scaled - np.trace(scaled) / size * np.eye(size)
    sigma = np.linalg.svd(shifted, compute_uv=False)
    kept = int(np.sum(sigma > size * EPS * sigma[0])) if sigma[0] > 0 else 0
    norm_w = float(np.linalg.norm(scaled))
    sum_norm = float(np.linalg.norm(sum_error))
    sum_bound = size * EPS * (TEST_RATIO * norm_w + math.sqrt(size - kept) * float(sigma[0]))

    # multiplicative: columnwise (or rowwise, as the construction chooses), in units of N·ε
    product_error = _scaled(dense_product(multiplicative).numpy() - W, exponent)
    column = _ratio(np.linalg.norm(product_error, axis=0), size * EPS * np.linalg.norm(scaled, axis=0))
    row = _ratio(np.linalg.norm(product_error, axis=1), size * EPS * np.linalg.norm(scaled, axis=1))
    return {
        "stage": "decompose",
        "size": size,
        "kind": kind,
        "rank": rank,
        "max_abs_entry": float(np.abs(W).max()),
        "sum_terms": len(additive),
        "sum_terms_cap": max(1, math.ceil(kept / rank)),
        "sum_error_fro": math.ldexp(sum_norm, exponent),
        "sum_bound_fro": math.ldexp(sum_bound, exponent),
        "sum_ratio": sum_norm / sum_bound if sum_bound > 0 else (0.0 if sum_norm == 0 else math.inf),
        "sum_scaled_residual": sum_norm / (size * EPS * norm_w) if norm_w > 0 else 0.0,
        "product_factors": len(multiplicative),
        "product_factors_cap": math.ceil((2 * size - 1) / rank),
        "product_column_ratio": column,
        "product_row_ratio": row,
        "product_ratio": min(column, row) / TEST_RATIO,
        "max_factor_rank": max(int(f.U.shape[1]) for f in (*additive, *multiplicative)),
        "min_abs_alpha_product": min(abs(float(f.alpha)) for f in multiplicative),
    }
