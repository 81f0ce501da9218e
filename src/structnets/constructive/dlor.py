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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from .._validation import check_choice, check_int, check_real

F64 = torch.float64


@dataclass(frozen=True)
class DLoRFactor:
    """One DLoR matrix M = αI + UVᵀ.

    Attributes:
        alpha: the scalar α.
        U: (N, r) float64 tensor.
        V: (N, r) float64 tensor.
    """

    alpha: float
    U: torch.Tensor
    V: torch.Tensor

    @property
    def features(self) -> int:
        return int(self.U.shape[0])

    @property
    def rank(self) -> int:
        return int(self.U.shape[1])

    def dense(self) -> torch.Tensor:
        """Return αI + UVᵀ, an (N, N) float64 tensor."""
        return self.alpha * torch.eye(self.features, dtype=self.U.dtype) + self.U @ self.V.T

    def to_layer(self, bias: torch.Tensor | None = None, *, dtype: torch.dtype = F64) -> nn.Module:
        """Return a :class:`~structnets.nn.DLoRLinear` whose ``to_dense()`` equals :meth:`dense`."""
        from ..nn import DLoRLinear

        layer = DLoRLinear(self.features, self.rank, bias=bias is not None, alpha=1.0, dtype=dtype)
        _load_factor(layer, self, bias)
        return layer


# --------------------------------------------------------------------------------------------
# Argument checks


def _as_matrix(W: Any, name: str = "W") -> torch.Tensor:
    """``W`` as an (N, N) float64 tensor, N ≥ 2, all entries finite; else ValueError/TypeError."""
    try:
        if isinstance(W, torch.Tensor):
            matrix = W.detach().to(device="cpu", dtype=F64)
        else:
            matrix = torch.as_tensor(np.asarray(W, dtype=np.float64))
    except (TypeError, ValueError) as error:
        raise TypeError(f"`{name}` must be a real square matrix (array or tensor), got {type(W).__name__}") from error
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"`{name}` must be a square matrix, got shape {tuple(matrix.shape)}")
    if matrix.shape[0] < 2:
        raise ValueError(f"`{name}` must be at least 2×2, got shape {tuple(matrix.shape)}")
    _check_finite(name, matrix)
    return matrix


def _check_finite(name: str, tensor: torch.Tensor) -> None:
    bad = ~torch.isfinite(tensor)
    if bad.any():
        index = tuple(int(i) for i in bad.nonzero()[0])
        raise ValueError(
            f"`{name}` must be finite, got {float(tensor[index])} at index {index} "
            f"({int(bad.sum())} non-finite entries)"
        )


def _check_rank(rank: Any, features: int) -> int:
    if features < 2:
        raise ValueError(f"a DLoR factor needs N >= 2, got N = {features}")
    return check_int("rank", rank, low=1, high=features - 1)


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
    matrix = _as_matrix(W)
    n = matrix.shape[0]
    rank = _check_rank(rank, n)
    transpose = _rows_more_graded(matrix)
    work = matrix.T.contiguous() if transpose else matrix
    exponent = _max_exponent(work)
    reflectors, upper = _householder_qr(_ldexp(work, -exponent))
    shift = _pivot_shift(upper, exponent)
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
    scale = exponent - shift
    if scale != 0:
        last = factors[-1]
        factors[-1] = DLoRFactor(math.ldexp(last.alpha, scale), _ldexp(last.U, scale), last.V)
    return factors


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


# --------------------------------------------------------------------------------------------
# Rank-1 interpolation


def rank_one_interpolant(
    x: Any,
    y: Any,
    activation: str = "relu",
    *,
    dtype: torch.dtype = F64,
) -> nn.Sequential:
    """A pure rank-1 network (every weight u vᵀ, α = 0) with f(x_i) = y_i for every i.

    With a direction v on which the inputs project to distinct t_i = vᵀx_i (v = 1 for scalar
    inputs, else the best separating of 65 deterministic candidate directions), the
    one-hidden-layer network ``RankOne(d→n), σ, RankOne(n→1)`` computes
    f(x) = Σ_j a_j σ(κ(vᵀx − β_j)) + c: its hidden weight is (κ1_n)vᵀ and its output weight is
    1·aᵀ, both rank 1. With the sorted t_(1) < … < t_(n), minimal gap δ, breakpoints β_j below t_(j):

    * ``"relu"``: β_1 = t_(1) − δ, β_j = t_(j−1) (j ≥ 2), κ = 1, c = 0; the matrix
      A_ij = σ(κ(t_(i) − β_j)) is lower triangular with positive diagonal, so a_j follow by
      forward substitution: the piecewise-linear interpolant.
    * other ReLU-like σ (swish, silu, gelu, softplus): the same β_j with κ = 30/δ, so the
      entries above the diagonal are σ(≤ −30) ≈ 0 and a = A⁻¹y is a near-triangular solve.
    * step-like σ (tanh, sigmoid): β_j = t_(j) − δ/2, κ = 8/δ; A is close to a triangular
      matrix of ±1 (or 0/1) and well conditioned.

    This is the interpolation half of the rank-1 paradox in Chen et al. (arXiv 2605.05659):
    exact fit on any finite data set, yet the output only ever depends on vᵀx.

    Args:
        x: (n,) scalar inputs or (n, d) inputs, pairwise distinct, finite.
        y: (n,) scalar targets, finite.
        activation: a name from :data:`structnets.nn.ACTIVATIONS` except ``identity``
            (``"relu"``: exact triangular solve; others: a square float64 solve).
        dtype: dtype of the returned network (float64 keeps the fit exact to ~1e-12).

    Returns:
        an ``nn.Sequential`` mapping ``(*, d)`` → ``(*, 1)`` (``d = 1`` for scalar inputs).

    Raises:
        ValueError: duplicate inputs (naming the two indices), mismatched lengths, non-finite
            values, no points, or a solve whose residual exceeds 1e-9·max(1, max|y|): the message
            gives the residual and condition number and, when the two closest projected inputs are
            within 1e-6 of the spread, names them as nearly coincident and says to merge or
            rescale them (and, for activations other than ReLU, that ReLU's triangular solve may
            succeed).
    """
    from ..nn import ACTIVATIONS, RankOneLinear, activation as make_activation

    check_choice("activation", activation, [a for a in ACTIVATIONS if a != "identity"])
    inputs = torch.as_tensor(np.asarray(x, dtype=np.float64))
    targets = torch.as_tensor(np.asarray(y, dtype=np.float64))
    if inputs.ndim == 1:
        inputs = inputs[:, None]
    if inputs.ndim != 2 or inputs.shape[0] < 1:
        raise ValueError(f"`x` must have shape (n,) or (n, d) with n >= 1, got shape {tuple(np.shape(x))}")
    if targets.ndim != 1 or targets.shape[0] != inputs.shape[0]:
        raise ValueError(
            f"`y` must have shape ({inputs.shape[0]},) to match `x`, got shape {tuple(targets.shape)}"
        )
    _check_finite("x", inputs)
    _check_finite("y", targets)
    _check_distinct(inputs)

    direction = _separating_direction(inputs)
    t = inputs @ direction
    order = torch.argsort(t)
    ts, ys = t[order], targets[order]
    n = len(ts)
    gap = float((ts[1:] - ts[:-1]).min()) if n > 1 else 1.0
    sigma = make_activation(activation).to(F64)
    if activation in _STEP_LIKE:
        scale, breaks = 8.0 / gap, ts - gap / 2
    else:  # ReLU-like: σ(κs) ≈ κ·max(s, 0) up to e^{-30}, so A is numerically lower triangular
        scale = 1.0 if activation == "relu" else 30.0 / gap
        breaks = torch.cat([ts[:1] - gap, ts[:-1]])
    with torch.no_grad():
        matrix = sigma(scale * (ts[:, None] - breaks[None, :]))
    if activation == "relu":
        coefficients = torch.linalg.solve_triangular(matrix, ys[:, None], upper=False)[:, 0]
    else:
        coefficients = torch.linalg.solve(matrix, ys)
    residual = float((matrix @ coefficients - ys).abs().max())
    allowed = 1e-9 * max(1.0, float(ys.abs().max()))
    if not math.isfinite(residual) or residual > allowed:
        raise ValueError(_interpolation_failure(activation, inputs, t, order, matrix, coefficients, residual, allowed))

    hidden = RankOneLinear(inputs.shape[1], n, dtype=F64)
    output = RankOneLinear(n, 1, dtype=F64)
    with torch.no_grad():
        hidden.u.fill_(scale)
        hidden.v.copy_(direction)
        hidden.bias.copy_(-scale * breaks)
        output.u.fill_(1.0)
        output.v.copy_(coefficients)
        output.bias.zero_()
    return nn.Sequential(hidden, sigma, output).to(dtype)


def _interpolation_failure(
    activation: str,
    inputs: torch.Tensor,
    t: torch.Tensor,
    order: torch.Tensor,
    matrix: torch.Tensor,
    coefficients: torch.Tensor,
    residual: float,
    allowed: float,
) -> str:
    """The message of a failed interpolation solve: what failed, on which inputs, what to do."""
    ts = t[order]
    spread = float(ts[-1] - ts[0])
    gaps = ts[1:] - ts[:-1]
    where = int(torch.argmin(gaps))
    gap = float(gaps[where])
    i, j = int(order[where]), int(order[where + 1])
    condition = float(torch.linalg.cond(matrix))
    largest = float(coefficients.abs().max())
    text = (
        f"`activation`={activation!r}: the interpolation system was solved only to a residual of "
        f"{residual:.3g} (allowed {allowed:.3g}; condition number {condition:.3g}, output weights up to "
        f"{largest:.3g}). "
    )
    distance = float(torch.linalg.vector_norm(inputs[i] - inputs[j]))
    projected = "" if inputs.shape[1] == 1 else f" (they are {distance:.3g} apart before the projection vᵀx)"
    if spread > 0 and gap / spread < 1e-6:
        text += (
            f"The inputs are nearly coincident at this scale: x[{i}] and x[{j}] project to t = "
            f"{float(t[i]):.6g} and {float(t[j]):.6g}{projected}, a gap of {gap:.3g} against a spread of "
            f"{spread:.3g} ({gap / spread:.2g} of it): the system is about as ill-conditioned as spread/gap "
            "and rounding swamps the fit. Merge or drop near-duplicate inputs (averaging their "
            "targets); rescaling x does not help, only the ratio gap/spread matters"
        )
    else:
        text += (
            f"The inputs are not nearly coincident (smallest gap {gap:.3g} = {gap / spread:.2g} of the "
            f"spread {spread:.3g}); the {activation!r} system is ill-conditioned on them"
        )
    if activation != "relu":
        text += ", or use activation='relu', whose system is triangular and solved by forward substitution"
    return text + "."


# Bounded, step-like activations: neurons σ(κ(t − β_j)) with β_j just below t_(j).
_STEP_LIKE = ("tanh", "sigmoid")


def _check_distinct(inputs: torch.Tensor) -> None:
    unique, inverse, counts = torch.unique(inputs, dim=0, return_inverse=True, return_counts=True)
    if len(unique) < len(inputs):
        group = int(torch.nonzero(counts > 1)[0])
        first, second = (int(i) for i in torch.nonzero(inverse == group)[:2, 0])
        value = inputs[first].tolist()
        raise ValueError(
            f"`x` must have distinct inputs, got x[{first}] == x[{second}] == "
            f"{value[0] if len(value) == 1 else value}"
        )


def _separating_direction(inputs: torch.Tensor) -> torch.Tensor:
    """A unit vector v whose projections vᵀx_i are pairwise distinct, as far apart as found.

    Candidates: the top principal direction and 64 seeded Gaussian directions; the one with the
    largest minimal gap between sorted projections wins (a larger gap means smaller output
    weights, so less rounding). Distinct inputs have only finitely many bad directions, so a
    random candidate separates them with probability 1.
    """
    d = inputs.shape[1]
    if d == 1:
        return torch.ones(1, dtype=F64)
    centred = inputs - inputs.mean(0)
    candidates = [torch.linalg.svd(centred, full_matrices=False)[2][0]] if len(inputs) > 1 else []
    generator = torch.Generator().manual_seed(0)
    candidates += [torch.randn(d, generator=generator, dtype=F64) for _ in range(64)]
    best, best_gap = candidates[0], -1.0
    for v in candidates:
        v = v / torch.linalg.vector_norm(v)
        t = torch.sort(inputs @ v).values
        gap = float((t[1:] - t[:-1]).min()) if len(t) > 1 else 1.0
        if gap > best_gap:
            best, best_gap = v, gap
    if best_gap <= 0.0:
        raise ValueError("`x` has no direction separating its inputs among 65 candidates; perturb the inputs")
    return best


# --------------------------------------------------------------------------------------------
# The DLoR network of a dense MLP


def dlor_network_from_dense(
    mlp: nn.Module,
    mode: str,
    h: float = 1e-3,
    *,
    rank: int = 1,
    center: float | None = None,
    dtype: torch.dtype = F64,
) -> nn.Sequential:
    """The DLoR network of the structural correspondence for a dense MLP.

    ``mlp`` is ``Linear, σ, Linear, σ, …, Linear`` (as built by :func:`structnets.models.mlp`;
    hidden maps may also be any module with ``to_dense()`` and ``bias``), with maps
    x ↦ W_ℓ x + b_ℓ, ℓ = 1 … L. Let N = max(n, m, widths); every W_ℓ is zero-padded to N×N
    (the padded units stay at 0 before σ, and their outgoing columns are 0). The returned
    network has the layout of :func:`structnets.models.dlor_mlp` (zero-padded input, output
    read from the first m coordinates), in float64:

    * ``mode="summed"`` (``"wide"`` is its deprecated alias): layer ℓ is the sum of the K terms
      of :func:`dlor_sum` (W_ℓ), bias b_ℓ, followed by the same σ:
      ``dlor_mlp(n, m, N, L − 1, rank, "summed", branches=K)``. Exact (a sum before σ is
      linear): the error is rounding only, whatever ``h``.
    * ``mode="parallel"``, the paper's wide network (the additive decomposition "mapped
      through the nonlinear activation forms a set of parallel layers"): with W_ℓ = Σ_k M_k
      (:func:`dlor_sum`, K terms), hidden layer ℓ becomes a :class:`DLoRParallel` of K branches
      a ↦ Σ_k σ(h M_k a + c) (K·N units, σ per branch), then one DLoR map with α = 1/(hs),
      U = V = 0 and bias b_ℓ − Kσ(c)/(hs), then σ: Σ_k λ_h(M_k a) + b_ℓ = W_ℓ a + b_ℓ + O(h)
      before σ. The output map (no σ) is the exact sum of its K branches. Network:
      ``ZeroPad, [DLoRParallel, DLoRLinear, σ] × (L − 1), DLoRBranches, TakeFirst``; sup error
      O(h), O(h²) when σ''(c) = 0, exactly 0 for ReLU once h·max|M_k a| < c: it converges to
      the MLP only as h → 0.
    * ``mode="deep"``: W_ℓ = M_1 ⋯ M_K by :func:`dlor_product`; the product is evaluated by
      K DLoR layers, each but the last followed by σ used in its near-linear regime around
      the operating point c: with s = σ'(c), λ_h(z) = (σ(hz + c) − σ(c))/(h s) = z + O(h z²).
      Layer 1 computes hM_K a + c (α and U scaled by h, bias c·1); the middle layers
      compute h M_j λ_h(·) + c, i.e. weight M_j/s and bias c − (σ(c)/s)·M_j 1; the last
      computes M_1 λ_h(·) + b_ℓ, weight M_1/(hs) and bias b_ℓ − σ(c)/(hs)·M_1 1, and is
      followed by the MLP's σ (none after W_L). All weights stay DLoR (a DLoR matrix times a
      scalar is DLoR). It is ``dlor_mlp(n, m, N, L·K − 1, rank, "deep")``; the sup-error
      against the MLP is O(h), O(h²) when σ''(c) = 0 (tanh, sigmoid at c = 0), and exactly 0
      for ReLU once h·max|z| < c.

    Chen et al. (arXiv 2605.05659): tracking these Taylor remainders is how the paper carries
    universal approximation from dense networks over to DLoR networks.

    Args:
        mlp: the dense network (an ``nn.Sequential``; its parameters are read, not changed).
        mode: ``"deep"``, ``"parallel"`` or ``"summed"`` (``"wide"``: deprecated alias of
            ``"summed"``, with a FutureWarning).
        h: the scale of the near-linear regime, in (0, 1] (ignored by ``"summed"``, which is exact).
        rank: r of every DLoR factor, in [1, N − 1].
        center: the operating point c of σ; default 1 for ReLU, 0 otherwise. σ'(c) must be ≠ 0.
        dtype: dtype of the returned network (float64 by default: at h = 1e-4 the quotient
            λ_h loses about log10(1/h) digits to cancellation).

    Returns:
        an ``nn.Sequential``: as built by :func:`structnets.models.dlor_mlp` for deep and summed;
        the layout above for parallel.
    """
    from ..models.dlor_mlp import DLoRBranches, DLoRParallel, TakeFirst, ZeroPad, dlor_mlp, resolve_mode
    from ..nn import DLoRLinear

    mode = resolve_mode(mode)
    h = check_real("h", h, low=0.0, high=1.0, low_open=True)
    maps, sigma = _dense_layers(mlp)
    in_features, out_features = maps[0][0].shape[1], maps[-1][0].shape[0]
    width = max(2, *(w.shape[0] for w, _ in maps), in_features)
    rank = check_int("rank", rank, low=1, high=width - 1)
    padded = [(_pad_square(w, width), _pad_vector(b, width)) for w, b in maps]
    zero = DLoRFactor(0.0, torch.zeros(width, rank, dtype=F64), torch.zeros(width, rank, dtype=F64))

    if mode == "summed":
        terms = [dlor_sum(w, rank) for w, _ in padded]
        branches = max(len(t) for t in terms)
        network = dlor_mlp(in_features, out_features, width, len(maps) - 1, rank, "summed", sigma, branches, dtype=F64)
        dlor_layers = [m for m in network if hasattr(m, "branches")]
        for layer, factors, (_, bias) in zip(dlor_layers, terms, padded, strict=True):
            for branch, factor in zip(layer.branches, [*factors, *[zero] * (branches - len(factors))], strict=True):
                _load_factor(branch, factor, None)
            with torch.no_grad():
                layer.bias.copy_(bias)
        return network.to(dtype)

    c = (1.0 if isinstance(sigma, nn.ReLU) else 0.0) if center is None else check_real("center", center)
    value, slope = _value_and_slope(sigma, c)
    if slope == 0.0 or not math.isfinite(slope):
        raise ValueError(f"`center` must be a point where the activation's slope is non-zero, got {c} (slope {slope})")

    if mode == "parallel":
        layers: list[nn.Module] = [ZeroPad(in_features, width)]
        for index, (weight, bias) in enumerate(padded):
            terms = dlor_sum(weight, rank)
            if index == len(padded) - 1:  # the output map has no σ: a sum of branches is exact
                last = DLoRBranches(width, rank, len(terms), dtype=F64)
                for branch, factor in zip(last.branches, terms, strict=True):
                    _load_factor(branch, factor, None)
                with torch.no_grad():
                    last.bias.copy_(bias)
                layers += [last, TakeFirst(width, out_features)]
                break
            # a ↦ Σ_k σ(h M_k a + c) = Kσ(c) + hs·W a + O(h²): the parallel layer (K·N units) ...
            parallel = DLoRParallel(width, rank, len(terms), _clone_activation(sigma), dtype=F64)
            for branch, factor in zip(parallel.branches, terms, strict=True):
                _load_factor(branch, _scale(factor, h), torch.full((width,), c, dtype=F64))
            # ... then S ↦ σ(S/(hs) − Kσ(c)/(hs) + b) = σ(W a + b + O(h)): one DLoR map αI (U = V = 0)
            recentre = DLoRLinear(width, rank, dtype=F64)
            _load_factor(recentre, DLoRFactor(1.0 / (h * slope), zero.U, zero.V), bias - len(terms) * value / (h * slope))
            layers += [parallel, recentre, _clone_activation(sigma)]
        return nn.Sequential(*layers).to(dtype)

    products = [dlor_product(w, rank) for w, _ in padded]
    count = max(len(p) for p in products)
    identity = DLoRFactor(1.0, torch.zeros(width, rank, dtype=F64), torch.zeros(width, rank, dtype=F64))
    products = [[*p, *[identity] * (count - len(p))] for p in products]
    network = dlor_mlp(in_features, out_features, width, len(maps) * count - 1, rank, "deep", sigma, dtype=F64)
    dlor_layers = iter(m for m in network if hasattr(m, "alpha"))
    ones = torch.ones(width, dtype=F64)
    for factors, (_, bias) in zip(products, padded, strict=True):
        if count == 1:
            _load_factor(next(dlor_layers), factors[0], bias)
            continue
        for position, factor in enumerate(reversed(factors)):  # M_K acts first
            if position == 0:  # a (exact input or activation) ↦ h M_K a + c
                scaled, layer_bias = _scale(factor, h), torch.full((width,), c, dtype=F64)
            elif position < count - 1:  # λ_h(z) ↦ h M_j λ_h(z) + c
                scaled = _scale(factor, 1.0 / slope)
                layer_bias = c - (value / slope) * (factor.dense() @ ones)
            else:  # λ_h(z) ↦ M_1 λ_h(z) + b_ℓ
                scaled = _scale(factor, 1.0 / (h * slope))
                layer_bias = bias - (value / (h * slope)) * (factor.dense() @ ones)
            _load_factor(next(dlor_layers), scaled, layer_bias)
    return network.to(dtype)


def _dense_layers(mlp: nn.Module) -> tuple[list[tuple[torch.Tensor, torch.Tensor]], nn.Module]:
    """The affine maps (W_ℓ, b_ℓ) in float64 and the (single) activation of a dense MLP."""
    if not isinstance(mlp, nn.Sequential) or len(mlp) < 3 or len(mlp) % 2 == 0:
        raise ValueError(
            "`mlp` must be an nn.Sequential Linear, σ, Linear, …, Linear (odd length ≥ 3), "
            f"got {type(mlp).__name__} of length {len(mlp) if isinstance(mlp, nn.Sequential) else '?'}"
        )
    maps = []
    for index, module in enumerate(mlp[0::2]):
        if isinstance(module, nn.Linear):
            weight = module.weight
        elif hasattr(module, "to_dense"):
            weight = module.to_dense()
        else:
            raise ValueError(f"`mlp`[{2 * index}] must be an affine layer, got {type(module).__name__}")
        bias = module.bias if getattr(module, "bias", None) is not None else torch.zeros(weight.shape[0])
        maps.append((weight.detach().to("cpu", F64), bias.detach().to("cpu", F64)))
    for (w, _), (w_next, _) in zip(maps, maps[1:]):
        if w.shape[0] != w_next.shape[1]:
            raise ValueError(f"`mlp` has mismatched layer shapes {tuple(w.shape)} then {tuple(w_next.shape)}")
    activations = list(mlp[1::2])
    first = activations[0]
    if any(type(a) is not type(first) or repr(a) != repr(first) for a in activations):
        raise ValueError(f"`mlp` must use one activation throughout, got {[repr(a) for a in activations]}")
    for w, b in maps:
        _check_finite("mlp", w)
        _check_finite("mlp", b)
    return maps, _clone_activation(first)


def _clone_activation(module: nn.Module) -> nn.Module:
    import copy

    return copy.deepcopy(module).to(F64)


def _value_and_slope(sigma: nn.Module, c: float) -> tuple[float, float]:
    with torch.enable_grad():  # callers may build networks under no_grad
        point = torch.tensor(c, dtype=F64, requires_grad=True)
        out = sigma(point)
        (slope,) = torch.autograd.grad(out, point)
    return float(out.detach()), float(slope)


def _scale(factor: DLoRFactor, s: float) -> DLoRFactor:
    return DLoRFactor(s * factor.alpha, s * factor.U, factor.V)


def _pad_square(weight: torch.Tensor, size: int) -> torch.Tensor:
    out = torch.zeros(size, size, dtype=F64)
    out[: weight.shape[0], : weight.shape[1]] = weight
    return out


def _pad_vector(vector: torch.Tensor, size: int) -> torch.Tensor:
    out = torch.zeros(size, dtype=F64)
    out[: vector.shape[0]] = vector
    return out


def _load_factor(layer: nn.Module, factor: DLoRFactor, bias: torch.Tensor | None) -> None:
    with torch.no_grad():
        layer.alpha.fill_(factor.alpha)
        layer.U.copy_(factor.U)
        layer.V.copy_(factor.V)
        if bias is not None:
            layer.bias.copy_(bias)
        elif layer.bias is not None:
            layer.bias.zero_()


def dense_product(factors: Sequence[DLoRFactor]) -> torch.Tensor:
    """Return M_1 M_2 ⋯ M_K of ``factors`` (float64), the check of :func:`dlor_product`."""
    out = factors[0].dense()
    for factor in factors[1:]:
        out = out @ factor.dense()
    return out


def dense_sum(factors: Sequence[DLoRFactor]) -> torch.Tensor:
    """Return Σ_k M_k of ``factors`` (float64), the check of :func:`dlor_sum`."""
    return sum((f.dense() for f in factors[1:]), factors[0].dense())


__all__ = [
    "DLoRFactor",
    "dense_product",
    "dense_sum",
    "dlor_network_from_dense",
    "dlor_product",
    "dlor_sum",
    "rank_one_interpolant",
]
