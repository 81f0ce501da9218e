"""Exact additive (width) and multiplicative (depth) DLoR decompositions of a dense matrix.

Chen, Li, Kim, Lavaei, arXiv 2605.05659: W = Σ_k (α_k I + U_k V_kᵀ) and W = Π_k (α_k I + U_k V_kᵀ).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from .dlor_factor import F64, DLoRFactor, _as_matrix, _check_rank

# --------------------------------------------------------------------------------------------
# Additive decomposition (width)


def dlor_sum(W: Any, rank: int) -> list[DLoRFactor]:
    """Additive DLoR decomposition: W = Σ_{k=1}^{K} (α_k I + U_k V_kᵀ), exactly.

    With τ = tr(W)/N (the multiple of I closest to W in Frobenius norm) and the SVD
    W − τI = P Σ Qᵀ, the k-th term takes α_k = τ/K and the k-th block of r singular triplets,
    U_k = P_k Σ_k^{1/2}, V_k = Q_k Σ_k^{1/2} (zero-padded to r columns). Singular values below
    N·ε·σ_max are dropped (W − τI of rank ρ gives K = max(1, ⌈ρ/r⌉) terms, ⌈N/r⌉ for a generic
    W). Terms come in decreasing singular value order, so the first j terms are τ·j/K·I plus
    the best rank-jr approximation of W − τI. Chen et al. (arXiv 2605.05659): the additive
    half of the structural correspondence; its K terms, each through σ, are the K parallel
    branches of the paper's wide layer (``dlor_network_from_dense(..., "parallel")``).

    Accuracy: W is scaled by an exact power of two first (W = 2^e·W̃, max|W̃| in [1, 2); 2^e is
    split between U_k and V_k and multiplies α_k), so the reconstruction is normwise exact,
    ‖Σ_k M_k − W‖_F ≤ c·Nε‖W‖_F, for ‖W‖ from 1e-300 to 1e300. It is not entrywise exact on
    graded matrices: every term adds τ/K to every diagonal entry, so a diagonal entry W_jj ≪ τ
    comes back as a difference of numbers of size τ, with absolute error ~ε|τ| (diag(1, 1e-10, 1):
    σ_min off by ~1e-6 relative; only Weyl's |σ̂_min − σ_min| ≤ ‖Ŵ − W‖₂ holds). No additive
    decomposition with Σ_k α_k ≠ 0 can avoid that; :func:`dlor_product` is columnwise exact.

    Args:
        W: (N, N) real matrix (array or tensor), N ≥ 2, finite.
        rank: r in [1, N − 1].

    Returns:
        K factors, each with ``alpha``, ``U``, ``V`` (N × r, float64) and ``dense()``.

    Raises:
        ValueError: non-square, smaller than 2×2 or non-finite ``W``; ``rank`` out of range.
    """
    matrix = _as_matrix(W)
    n = matrix.shape[0]
    rank = _check_rank(rank, n)
    # W = 2^e·W̃ with max|W̃| in [1, 2): exact, and the SVD and sums never overflow or underflow.
    exponent = _max_exponent(matrix)
    scaled = _ldexp(matrix, -exponent)
    tau = float(torch.trace(scaled)) / n
    residual = scaled - tau * torch.eye(n, dtype=F64)
    left, singular, right_t = torch.linalg.svd(residual)
    tolerance = n * torch.finfo(F64).eps * float(singular[0])
    kept = int((singular > tolerance).sum())
    count = max(1, math.ceil(kept / rank))
    half = exponent // 2  # 2^e split between U and V keeps them of equal size, as without scaling
    factors = []
    for k in range(count):
        block = slice(k * rank, min((k + 1) * rank, kept))
        root = singular[block].sqrt()
        U = _ldexp(_pad_columns(left[:, block] * root, rank), half)
        V = _ldexp(_pad_columns(right_t[block].T * root, rank), exponent - half)
        factors.append(DLoRFactor(math.ldexp(tau / count, exponent), U, V))
    return factors


# --------------------------------------------------------------------------------------------
# Multiplicative decomposition (depth)


def dlor_product(W: Any, rank: int) -> list[DLoRFactor]:
    """Multiplicative DLoR decomposition: W = M_1 M_2 ⋯ M_K, M_k = α_k I + U_k V_kᵀ, exactly.

    Construction (no pivoting, no division by pivots, so singular W is fine):

    0. Exact binary scaling. W = 2^e·W̃ with max|W̃| in [1, 2) (multiplying by a power of two
       is exact), so no norm or dot product can overflow or underflow whatever the scale of W.
    1. Householder QR, W̃ = QR with Q = H_1 ⋯ H_p (p ≤ N − 1), R with non-negative diagonal.
       Each reflector H = I − τvvᵀ (τ = 2/vᵀv) is a DLoR matrix with α = 1, r = 1. Pivoting
       is never needed (orthogonal reflections are backward stable without it, column by
       column), and permutations need no special case: the transposition of i and j,
       I − (e_i − e_j)(e_i − e_j)ᵀ, is the reflector with v = e_i − e_j, and a permutation
       matrix decomposes into exactly its transpositions (R = I).
    2. R = 2^{−m}·R', with m ≥ 0 chosen so that every non-zero pivot of R' = 2^m R is ≥ 1.
       R' upper triangular is a product of column replacements, R' = C_N C_{N−1} ⋯ C_1 with
       C_j = I + (r'_j − e_j)e_jᵀ (r'_j the j-th column of R'): column j of the product is
       C_N ⋯ C_{j+1} r'_j = r'_j, since r'_j has no entry below j. Each C_j is DLoR (α = 1,
       r = 1). Its diagonal entry is evaluated as 1 + (r'_jj − 1); with |r'_jj| ≥ 1 this loses
       nothing (for a pivot |r_jj| ≪ 1 it would lose log10(1/|r_jj|) digits, which is why the
       pivots are scaled up first).
    3. Consecutive runs of r of these ≤ 2N − 1 elementary factors (identities skipped) are
       merged into one rank-r factor by (I + U Vᵀ)(I + u vᵀ) = I + [U, (I + UVᵀ)u][V, v]ᵀ.
    4. The exact scale 2^{e−m} goes into the last factor: M_K = 2^{e−m}(I + U_K V_Kᵀ), i.e.
       α_K = 2^{e−m} and U_K multiplied by 2^{e−m}; all other factors have α = 1. (m is capped
       so that α_K stays a normal float; W = I, permutations and any W whose max entry is in
       [1, 2) with pivots ≥ 1 get α_K = 1.)

    Accuracy: the reconstruction has columnwise relative error O(Nε) (‖(Ŵ − W)e_j‖ ≤ c·ε·‖We_j‖
    for every column j), at every scale from subnormal-free 1e-300 to 1e300, so a
    column-graded W = B·D (D diagonal, B well conditioned) keeps its small singular values to
    relative accuracy. When the rows of W are more graded than its columns (max/min ratio of
    row norms larger than that of column norms), the same construction is applied to Wᵀ and
    transposed back, Wᵀ = Π M_k ⇒ W = Π_{reversed} (α_k I + V_k U_kᵀ), which gives rowwise
    accuracy instead.

    Singular W: handled by the same formulas, with no error raised. A zero pivot R_jj = 0 makes
    C_j singular (its column j is r'_j, which has no e_j component), so exactly the factors that
    contain such a C_j are singular and the product is still exactly W (W = 0 gives
    Π_j (I − e_j e_jᵀ) = 0). Every factor's α is non-zero: the identity is what lets a product of
    rank-r updates be full rank, which no product of pure rank-r matrices (α = 0) can be.
    Chen et al. (arXiv 2605.05659): the multiplicative half of the structural correspondence.

    Args:
        W: (N, N) real matrix (array or tensor), N ≥ 2, finite.
        rank: r in [1, N − 1].

    Returns:
        factors [M_1, …, M_K], K ≤ ⌈(2N − 1)/r⌉, product in list order; each has ``alpha``,
        ``U``, ``V`` (N × r, float64; unused columns are zero) and ``dense()``. ``alpha`` is 1
        except possibly for the last factor (a power of two, the exact scale).

    Raises:
        ValueError: non-square, smaller than 2×2 or non-finite ``W``; ``rank`` out of range.
    """
    factors, scale = product_factors(W, rank)
    if scale != 0:
        last = factors[-1]
        factors[-1] = DLoRFactor(math.ldexp(last.alpha, scale), _ldexp(last.U, scale), last.V)
    return factors


def product_factors(W: Any, rank: int, *, shift_pivots: bool = True) -> tuple[list[DLoRFactor], int]:
    """The factors of :func:`dlor_product` before the exact scale: W = 2^scale · Π_k M_k, all α_k = 1.

    ``shift_pivots=False`` skips step 2's shift (m = 0): the factors of R are then as large as R
    itself (‖R‖ ≤ ‖W̃‖), so every partial product M_j ⋯ M_K and M_1 ⋯ M_j is bounded by about
    ‖W̃‖ + 1, at the price of a pivot |r_jj| ≪ 1 being stored only to absolute accuracy ε
    (normwise exact). The shift instead multiplies every column of R by 2^m, with m ≈ 56 for a
    singular W whose rounded pivots are ~1e−17: partial products of size 2^m, harmless in exact
    arithmetic but not to a network that evaluates them one layer at a time with an offset c
    (:func:`.dlor_network.dlor_network_from_dense`, ``mode="deep"``).

    Returns:
        (factors, scale) with W = 2^scale · M_1 ⋯ M_K to rounding.
    """
    matrix = _as_matrix(W)
    n = matrix.shape[0]
    rank = _check_rank(rank, n)
    transpose = _rows_more_graded(matrix)
    work = matrix.T.contiguous() if transpose else matrix
    exponent = _max_exponent(work)
    reflectors, upper = _householder_qr(_ldexp(work, -exponent))
    shift = _pivot_shift(upper, exponent) if shift_pivots else 0
    upper = _ldexp(upper, shift)
    eye = torch.eye(n, dtype=F64)
    elementary: list[tuple[torch.Tensor, torch.Tensor]] = list(reflectors)
    for j in reversed(range(n)):  # C_N first: R' = C_N ⋯ C_1
        update = upper[:, j] - eye[:, j]
        if torch.any(update != 0):
            elementary.append((update, eye[:, j]))
    if not elementary:  # W̃ = I
        zeros = torch.zeros(n, rank, dtype=F64)
        elementary_factors = [DLoRFactor(1.0, zeros, zeros.clone())]
    else:
        elementary_factors = []
        for start in range(0, len(elementary), rank):
            us: list[torch.Tensor] = []
            vs: list[torch.Tensor] = []
            for u, v in elementary[start : start + rank]:
                if us:
                    U, V = torch.stack(us, 1), torch.stack(vs, 1)
                    u = u + U @ (V.T @ u)
                us.append(u)
                vs.append(v)
            elementary_factors.append(
                DLoRFactor(1.0, _pad_columns(torch.stack(us, 1), rank), _pad_columns(torch.stack(vs, 1), rank))
            )
    factors = elementary_factors
    if transpose:
        factors = [DLoRFactor(f.alpha, f.V.clone(), f.U.clone()) for f in reversed(factors)]
    return factors, exponent - shift


def _max_exponent(matrix: torch.Tensor) -> int:
    """The e with 2^e ≤ max|matrix| < 2^{e+1}; 0 for the zero matrix."""
    largest = float(matrix.abs().max())
    return 0 if largest == 0.0 else math.frexp(largest)[1] - 1


def _ldexp(tensor: torch.Tensor, exponent: int) -> torch.Tensor:
    """tensor·2^exponent, exact (no rounding unless a result is subnormal), for any int exponent."""
    if exponent == 0:
        return tensor.clone()
    return torch.from_numpy(np.ldexp(tensor.detach().cpu().numpy(), exponent))


def _rows_more_graded(matrix: torch.Tensor) -> bool:
    """Whether the non-zero row norms of ``matrix`` spread more (max/min) than its column norms."""
    scaled = _ldexp(matrix, -_max_exponent(matrix))  # norms of 1e±300 matrices must not overflow

    def spread(norms: torch.Tensor) -> float:
        norms = norms[norms > 0]
        return float(norms.max() / norms.min()) if len(norms) else 1.0

    return spread(torch.linalg.vector_norm(scaled, dim=1)) > spread(torch.linalg.vector_norm(scaled, dim=0))


def _pivot_shift(upper: torch.Tensor, exponent: int) -> int:
    """m ≥ 0 with every non-zero |R_jj|·2^m ≥ 1, capped so that 2^m·max|R| ≤ 2^1000 and the
    scale 2^{exponent − m} stays a normal float (≥ 2^−1022)."""
    pivots = upper.diagonal().abs()
    pivots = pivots[pivots > 0]
    if len(pivots) == 0:
        return 0
    wanted = -(math.frexp(float(pivots.min()))[1] - 1)
    cap = min(1000 - _max_exponent(upper), exponent + 1022)
    return max(0, min(wanted, cap))


def _householder_qr(matrix: torch.Tensor) -> tuple[list[tuple[torch.Tensor, torch.Tensor]], torch.Tensor]:
    """Return pairs (−τv, v) and R with matrix = (I − τ_1v_1v_1ᵀ)⋯(I − τ_pv_pv_pᵀ) R, τ = 2/vᵀv.

    Each column is scaled by a power of two before its norm is taken (v is only defined up to a
    factor), so neither squares of tiny entries underflow nor squares of large ones overflow.
    """
    n = matrix.shape[0]
    upper = matrix.clone()
    reflectors = []
    for k in range(n - 1):
        column = upper[k:, k]
        if not torch.any(column[1:] != 0):
            continue  # already upper triangular in this column: no reflector needed
        column = _ldexp(column, -_max_exponent(column))
        norm = torch.linalg.vector_norm(column)
        v = torch.zeros(n, dtype=F64)
        v[k:] = column
        # v = x − ‖x‖e₁, so Hx = +‖x‖e₁ (R gets a non-negative diagonal); for x₀ > 0 the first
        # entry x₀ − ‖x‖ is computed as −‖x_{2:}‖²/(x₀ + ‖x‖) to avoid cancellation (Parlett).
        # v is not normalised (τ = 2/vᵀv instead), so a unit column e_j (j > k) gives v = e_k − e_j,
        # τ = 1 and H = I − (e_k − e_j)(e_k − e_j)ᵀ, the transposition itself, with no rounding.
        tail = torch.dot(column[1:], column[1:])
        v[k] = -tail / (column[0] + norm) if column[0] > 0 else column[0] - norm
        tau = 2.0 / torch.dot(v, v)
        upper = upper - torch.outer(tau * v, v @ upper)
        upper[k + 1 :, k] = 0.0  # exactly zero in exact arithmetic; rounding residue removed
        reflectors.append((-tau * v, v))
    return reflectors, upper


def _pad_columns(matrix: torch.Tensor, columns: int) -> torch.Tensor:
    missing = columns - matrix.shape[1]
    if missing == 0:
        return matrix.contiguous()
    return torch.cat([matrix, matrix.new_zeros(matrix.shape[0], missing)], dim=1)
