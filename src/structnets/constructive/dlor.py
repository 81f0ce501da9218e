"""Constructions of the DLoR paper as code: rank-1 interpolation, exact additive and
multiplicative DLoR decompositions of a dense matrix, and the DLoR network of a dense MLP.

Chen, Li, Kim, Lavaei, *Structural Correspondence and Universal Approximation in Diagonal plus
Low-Rank Neural Networks* (arXiv 2605.05659). A DLoR factor is M = αI + UVᵀ, U, V ∈ ℝ^{N×r}.

* :func:`rank_one_interpolant`: a network whose weights are all rank-1 (α = 0) fits any finite
  scalar data set with distinct inputs exactly (the interpolation half of the paper's paradox).
* :func:`dlor_sum`: W = Σ_k (α_k I + U_k V_kᵀ), ⌈rank(W − αI)/r⌉ terms (additive: width).
* :func:`dlor_product`: W = Π_k (α_k I + U_k V_kᵀ), ⌈(2N − 1)/r⌉ factors at most (multiplicative:
  depth), from Householder QR; α_k = 1 but for the last factor, which carries an exact power of
  two; exact for singular W too.
* :func:`dlor_network_from_dense`: the deep, parallel (the paper's wide) or summed DLoR network
  of a dense MLP. Summed is exact; deep and parallel route the product / each branch of the sum
  through the activation's near-linear regime at scale h, with error O(h) (O(h²) when
  σ''(c) = 0 at the operating point c) as h → 0.

Everything is computed in float64 after exact power-of-two scaling; tests check the
reconstructions to relative error 1e-10 for ‖W‖ from 1e-300 to 1e300, and dlor_product's
columnwise (rowwise) accuracy, hence small singular values, on column- (row-) graded matrices.

The constructions live in one module per concept, re-exported here: the factor
(:mod:`.dlor_factor`), the decompositions (:mod:`.dlor_decompositions`), rank-1 interpolation
(:mod:`.rank_one`) and the networks (:mod:`.dlor_network`).
"""

from __future__ import annotations

from .dlor_decompositions import dlor_product, dlor_sum
from .dlor_factor import DLoRFactor, dense_product, dense_sum
from .dlor_network import dlor_network_from_dense
from .rank_one import rank_one_interpolant

__all__ = [
    "DLoRFactor",
    "dense_product",
    "dense_sum",
    "dlor_network_from_dense",
    "dlor_product",
    "dlor_sum",
    "rank_one_interpolant",
]
