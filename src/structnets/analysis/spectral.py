"""Spectral measurements of weight and activation matrices: Schatten norms and four notions of rank.

These are the quantities the rank-sparse generalization bounds of Ledent, Alves and Lei,
*Generalization Bounds for Rank-sparse Neural Networks* (NeurIPS 2025, arXiv 2510.21945) are
written in: the Schatten-p quasi-norm ``‖A‖_{S_p} = (Σ_i σ_i(A)^p)^{1/p}`` interpolates between the
rank (p → 0, ``‖A‖_{S_p}^p → rank A``) and the spectral norm (p = ∞).

Every function accepts a ``(*, m, n)`` tensor (leading batch dimensions allowed) and returns one
value per matrix, shape ``(*)``. Integer tensors are promoted to float64; float16/bfloat16 to
float32 (LAPACK has no half-precision SVD); float32 and float64 are kept, so float64 inputs give
float64 answers. Empty, non-finite or non-matrix inputs raise ``ValueError`` naming the argument.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from numbers import Real

import torch

from .._validation import check_bool, check_real

__all__ = [
    "bottleneck_rank",
    "effective_rank",
    "numerical_rank",
    "schatten_norm",
    "singular_values",
    "stable_rank",
]


def _as_matrix(matrix: torch.Tensor, name: str = "matrix") -> torch.Tensor:
    """Validate a ``(*, m, n)`` tensor and return it in a dtype LAPACK supports."""
    if not isinstance(matrix, torch.Tensor):
        raise TypeError(f"`{name}` must be a torch.Tensor of shape (*, m, n), got {type(matrix).__name__}")
    if matrix.ndim < 2:
        raise ValueError(f"`{name}` must have at least 2 dimensions (*, m, n), got shape {tuple(matrix.shape)}")
    if matrix.shape[-1] == 0 or matrix.shape[-2] == 0 or matrix.numel() == 0:
        raise ValueError(f"`{name}` must be non-empty, got shape {tuple(matrix.shape)}")
    if matrix.is_complex():
        raise TypeError(f"`{name}` must be real, got dtype {matrix.dtype}")
    if not matrix.is_floating_point():
        matrix = matrix.to(torch.float64)
    elif matrix.dtype in (torch.float16, torch.bfloat16):
        matrix = matrix.to(torch.float32)
    matrix = matrix.detach()
    if not bool(torch.isfinite(matrix).all()):
        bad = int((~torch.isfinite(matrix)).sum())
        raise ValueError(f"`{name}` must be finite, got {bad} NaN/Inf entries in shape {tuple(matrix.shape)}")
    return matrix


def singular_values(matrix: torch.Tensor) -> torch.Tensor:
    """Singular values σ_1 ≥ … ≥ σ_k ≥ 0, k = min(m, n), of each matrix.

    Args:
        matrix: ``(*, m, n)`` real tensor.

    Returns:
        ``(*, min(m, n))`` tensor, descending.
    """
    return torch.linalg.svdvals(_as_matrix(matrix))


def schatten_norm(matrix: torch.Tensor, p: float, *, power: bool = False) -> torch.Tensor:
    """Schatten-p (quasi-)norm ``‖A‖_{S_p} = (Σ_i σ_i(A)^p)^{1/p}`` of each matrix.

    p = 1 is the nuclear norm, p = 2 the Frobenius norm, p = ∞ the spectral norm σ_1; for
    p ∈ (0, 1) it is only a quasi-norm (``‖A + B‖_{S_p}^p ≤ ‖A‖_{S_p}^p + ‖B‖_{S_p}^p`` replaces
    the triangle inequality). As p → 0, ``‖A‖_{S_p}^p → rank A``: this is the quantity in the
    rank-sparse bounds of Ledent, Alves and Lei (NeurIPS 2025, Sec. 3).

    Computed as ``σ_1 · (Σ_i (σ_i/σ_1)^p)^{1/p}`` so large p cannot overflow. Singular values
    at or below ``max(m, n) · eps(dtype) · σ_1`` (the SVD's accuracy, NumPy's rank tolerance) are
    taken as exact zeros, so an exactly rank-r matrix gives ``‖A‖_{S_p}^p → r`` as p → 0 rather
    than counting its rounding noise.

    Args:
        matrix: ``(*, m, n)`` real tensor.
        p: exponent in (0, ∞]; ``math.inf`` gives the spectral norm.
        power: return ``‖A‖_{S_p}^p = Σ_i σ_i^p`` instead (needs finite p).

    Returns:
        ``(*)`` tensor of norms (0 for a zero matrix).
    """
    if isinstance(p, bool) or not isinstance(p, Real):  # Real: NumPy scalars such as np.float32 too
        raise TypeError(f"`p` must be a real number in (0, inf], got {p!r} ({type(p).__name__})")
    p = float(p)
    if math.isnan(p) or p <= 0:
        raise ValueError(f"`p` must be a real number in (0, inf], got {p}")
    power = check_bool("power", power)
    if power and math.isinf(p):
        raise ValueError("`power=True` needs a finite `p` (Σ σ_i^p diverges or is undefined), got p=inf")
    matrix = _as_matrix(matrix)
    sigma = torch.linalg.svdvals(matrix)
    top = sigma[..., 0]
    if math.isinf(p):
        return top
    # Singular values below the SVD's accuracy (max(m, n)·eps·σ_1) are rounding noise of an exact
    # zero; raised to a small p they would count almost fully (1e-16^0.1 ≈ 0.03), so drop them.
    sigma = torch.where(sigma > _default_rtol(matrix) * top.unsqueeze(-1), sigma, torch.zeros_like(sigma))
    safe_top = torch.where(top > 0, top, torch.ones_like(top))
    total = ((sigma / safe_top.unsqueeze(-1)) ** p).sum(-1)
    if power:
        return torch.where(top > 0, safe_top**p * total, torch.zeros_like(top))
    return torch.where(top > 0, safe_top * total ** (1.0 / p), torch.zeros_like(top))


def _default_rtol(matrix: torch.Tensor) -> float:
    return max(matrix.shape[-2:]) * torch.finfo(matrix.dtype).eps


def numerical_rank(matrix: torch.Tensor, rtol: float | None = None) -> torch.Tensor:
    """Number of singular values above ``rtol · σ_1``: ``#{i : σ_i > rtol · σ_1}``.

    The default ``rtol = max(m, n) · eps(dtype)`` is NumPy's ``matrix_rank`` convention (the rank
    of the matrix up to rounding); pass e.g. ``rtol=1e-2`` for an *approximate* rank that ignores
    directions carrying less than 1% of the top singular value.

    Args:
        matrix: ``(*, m, n)`` real tensor.
        rtol: relative threshold in [0, 1), or None for the default above.

    Returns:
        ``(*)`` int64 tensor; 0 for a zero matrix.
    """
    matrix = _as_matrix(matrix)
    tol = _default_rtol(matrix) if rtol is None else check_real("rtol", rtol, low=0.0, high=1.0, high_open=True)
    sigma = torch.linalg.svdvals(matrix)
    top = sigma[..., :1]
    return ((sigma > tol * top) & (sigma > 0)).sum(-1)


def stable_rank(matrix: torch.Tensor) -> torch.Tensor:
    """Stable rank ``‖A‖_F² / ‖A‖_2² = Σ_i σ_i² / σ_1²`` (Rudelson and Vershynin, 2007).

    A continuous surrogate of the rank: ``1 ≤ srank(A) ≤ rank(A)`` for A ≠ 0; it appears in the
    PAC-Bayes bound of Neyshabur et al. (2018) as ``Σ_i ‖W_i‖_F² / ‖W_i‖_2²``.

    Args:
        matrix: ``(*, m, n)`` real tensor.

    Returns:
        ``(*)`` tensor; 0 for a zero matrix (consistent with its rank).
    """
    sigma = singular_values(matrix)
    top = sigma[..., 0]
    safe_top = torch.where(top > 0, top, torch.ones_like(top))
    return torch.where(top > 0, ((sigma / safe_top.unsqueeze(-1)) ** 2).sum(-1), torch.zeros_like(top))


def effective_rank(matrix: torch.Tensor) -> torch.Tensor:
    """Effective rank ``exp(H(q))`` with ``q_i = σ_i / Σ_j σ_j`` and ``H(q) = −Σ_i q_i log q_i``.

    Roy and Vetterli, *The effective rank: a measure of effective dimensionality* (EUSIPCO 2007).
    ``1 ≤ erank(A) ≤ rank(A)``, with equality on the right iff all non-zero singular values are equal.

    Args:
        matrix: ``(*, m, n)`` real tensor.

    Returns:
        ``(*)`` tensor; 0 for a zero matrix.
    """
    sigma = singular_values(matrix)
    # relative to σ_1 first: Σσ_i overflowed for σ ~ 1e306 (float64) or 1e37 (float32), and
    # q = σ/inf = 0 gave erank 1 for a matrix of effective rank 27
    top = sigma[..., :1]
    sigma = sigma / torch.where(top > 0, top, torch.ones_like(top))
    total = sigma.sum(-1, keepdim=True)
    safe_total = torch.where(total > 0, total, torch.ones_like(total))
    q = sigma / safe_total
    entropy = -torch.where(q > 0, q * torch.log(torch.where(q > 0, q, torch.ones_like(q))), torch.zeros_like(q)).sum(-1)
    return torch.where(total[..., 0] > 0, torch.exp(entropy), torch.zeros_like(entropy))


def bottleneck_rank(
    activations: torch.Tensor | Sequence[torch.Tensor],
    *,
    rtol: float = 1e-3,
    center: bool = True,
) -> list[int]:
    """Approximate rank of each layer's representation of a batch of inputs.

    For a layer with activations ``H ∈ R^{N×W}`` (N inputs, W units) this is
    ``#{i : σ_i(H̃) > rtol · σ_1(H̃)}`` with ``H̃ = H − 1 h̄ᵀ`` (column means removed when
    ``center``). The *bottleneck rank* phenomenon (Jacot 2023; Ledent, Alves and Lei 2025, Sec. 1)
    is that for deep nets these ranks settle, in the middle layers, at the smallest rank needed
    to represent the training data, below the width W.

    Args:
        activations: one ``(N, W)`` tensor or a sequence of them, one per layer (e.g. from
            :func:`structnets.analysis.hidden_representations`).
        rtol: relative singular-value threshold in [0, 1).
        center: remove the per-unit mean first (a constant offset adds one rank without
            carrying information); directions at or below ``max(N, W)·eps·√N·‖h̄‖`` (the
            rounding level of the subtracted means h̄, NumPy's rank tolerance) are not counted.

    Returns:
        one int per layer.
    """
    rtol = check_real("rtol", rtol, low=0.0, high=1.0, high_open=True)
    if not isinstance(center, bool):
        raise TypeError(f"`center` must be a bool, got {center!r}")
    if not isinstance(activations, torch.Tensor) and (
        isinstance(activations, (str, bytes)) or not isinstance(activations, Iterable)
    ):
        raise TypeError(
            f"`activations` must be an (N, W) torch.Tensor or a sequence of them, got {type(activations).__name__}"
        )
    layers = [activations] if isinstance(activations, torch.Tensor) else list(activations)
    if not layers:
        raise ValueError("`activations` must hold at least one (N, W) tensor, got an empty sequence")
    ranks: list[int] = []
    for index, layer in enumerate(layers):
        name = "activations" if isinstance(activations, torch.Tensor) else f"activations[{index}]"
        matrix = _as_matrix(layer, name)
        if matrix.ndim != 2:
            raise ValueError(f"`{name}` must be a 2-D (N, W) tensor, got shape {tuple(matrix.shape)}")
        # ranks are scale free: max|H| = 1 first, so the column sums of the mean cannot overflow
        # (1e306 entries gave MKL's DLASCL errors on stderr and rank 0 for a rank-1 layer)
        top = float(matrix.abs().max())
        if top == 0.0:
            ranks.append(0)
            continue
        matrix = matrix / top
        floor = 0.0
        if center:
            # Subtracting the rounded mean h̄ leaves 1·δᵀ with |δ_j| ≲ N·eps·|h̄_j| (float32 0.1 in
            # 1,000 rows, a layer of dead units, gave rank 1): centred singular values at or below
            # max(N, W)·eps·‖1 h̄ᵀ‖_2 = max(N, W)·eps·√N·‖h̄‖ (NumPy's tolerance, on what the
            # centring subtracts) are that noise. ‖h̄‖ scaled first: its square underflows at 1e-170.
            mean = matrix.mean(0, keepdim=True)
            peak = float(mean.abs().max())
            if peak > 0:
                floor = _default_rtol(matrix) * math.sqrt(matrix.shape[0]) * peak * float((mean / peak).norm())
            matrix = matrix - mean
        if not bool(matrix.any()):
            ranks.append(0)
            continue
        sigma = torch.linalg.svdvals(matrix)
        ranks.append(int(((sigma > rtol * sigma[0]) & (sigma > floor) & (sigma > 0)).sum()))
    return ranks
