"""Weight decay and the Schatten quasi-norm of the end-to-end map: ``Σ‖A_i‖_F² ≥ L‖Π A_i‖_{S_{2/L}}^{2/L}``.

Ledent, Alves and Lei, *Generalization Bounds for Rank-sparse Neural Networks* (NeurIPS 2025,
Sec. 1): for any matrices ``A_1, …, A_L`` chaining as ``A_L ⋯ A_1``,
``Σ_i ‖A_i‖_F² ≥ L ‖A_L ⋯ A_1‖_{S_{2/L}}^{2/L}`` (AM–GM on the singular values), with equality
exactly when the chain is *balanced*, ``A_{i+1}ᵀ A_{i+1} = A_i A_iᵀ``, as at any critical point
of a deep linear network's loss plus ``(λ/2) Σ_i ‖A_i‖_F²``: weight decay penalises the
Schatten-2/L quasi-norm of the end-to-end map, which favours low rank. These functions measure
both sides and the distance from balance; every one computes in float64.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from ._bound_setting import _layers
from .spectral import schatten_norm

__all__ = ["end_to_end", "frobenius_sum", "imbalance", "schatten_end_to_end"]


def end_to_end(matrices: Sequence[torch.Tensor]) -> torch.Tensor:
    """The end-to-end map ``A_L ⋯ A_1`` of a chain of layer matrices, in float64.

    Args:
        matrices: ``[A_1, …, A_L]``, A_i of shape ``(m_i, m_{i−1})`` (e.g. from
            :func:`structnets.analysis.dense_matrices`), finite.

    Returns:
        the ``(m_L, m_0)`` float64 product, multiplied from the input side.
    """
    layers = _layers(matrices)
    product = layers[0]
    for matrix in layers[1:]:
        product = matrix @ product
    return product


def frobenius_sum(matrices: Sequence[torch.Tensor]) -> float:
    """``Σ_i ‖A_i‖_F²``: the weight-decay penalty (times 2/λ) of a chain of layer matrices.

    Args:
        matrices: ``[A_1, …, A_L]`` as in :func:`end_to_end`.

    Returns:
        the sum, computed in float64.
    """
    return float(sum(matrix.square().sum() for matrix in _layers(matrices)))


def schatten_end_to_end(matrices: Sequence[torch.Tensor]) -> float:
    """``L ‖A_L ⋯ A_1‖_{S_{2/L}}^{2/L}``: the lower bound on :func:`frobenius_sum` (equal when balanced).

    Args:
        matrices: ``[A_1, …, A_L]`` as in :func:`end_to_end`; L = ``len(matrices)``.

    Returns:
        the value, computed in float64 (singular values at rounding level count as zeros, as
        in :func:`structnets.analysis.schatten_norm`).
    """
    layers = _layers(matrices)
    depth = len(layers)
    peaks = [float(layer.abs().max()) for layer in layers]
    if min(peaks) == 0.0:
        return 0.0
    # ‖Π c_i B_i‖_{S_q}^q = Π c_i^q ‖Π B_i‖_{S_q}^q: the product of the unscaled layers left float64
    # for a balanced chain of 1e±120 · orthogonal layers (0 or a refusal where the value is 3·4e∓240)
    product = end_to_end([layer / peak for layer, peak in zip(layers, peaks)])
    power = float(schatten_norm(product, 2.0 / depth, power=True))
    if power == 0.0:
        return 0.0
    return depth * math.exp(math.log(power) + (2.0 / depth) * sum(math.log(peak) for peak in peaks))


def imbalance(matrices: Sequence[torch.Tensor]) -> float:
    """Distance from balance: ``max_i ‖A_{i+1}ᵀ A_{i+1} − A_i A_iᵀ‖_F / ‖A_i A_iᵀ‖_F``.

    Zero exactly for a balanced chain, where ``Σ_i ‖A_i‖_F² = L ‖Π A_i‖_{S_{2/L}}^{2/L}``;
    along gradient flow on a deep linear network with weight decay λ each difference decays as
    ``e^{−2λt}`` (Arora, Cohen and Hazan 2018, Thm 1, with the weight-decay term added).

    Args:
        matrices: ``[A_1, …, A_L]`` as in :func:`end_to_end`, L ≥ 2, no zero layer but the last.

    Returns:
        the largest relative imbalance over consecutive pairs.
    """
    layers = _layers(matrices)
    if len(layers) < 2:
        raise ValueError(f"`matrices` must hold at least 2 layers to compare, got {len(layers)}")
    ratios = []
    for index in range(len(layers) - 1):
        if not bool(layers[index].any()):
            raise ValueError(f"`matrices[{index}]` is zero: its relative imbalance is undefined")
        # the ratio is invariant under scaling both layers by one c: scale the larger entry to 1, so
        # the Gram matrices of layers ~1e-120 do not underflow to 0 (nor ~1e120 give inf/inf = NaN)
        peak = max(float(layers[index].abs().max()), float(layers[index + 1].abs().max()))
        current, following = layers[index] / peak, layers[index + 1] / peak
        gram = current @ current.T
        scale = float(torch.linalg.matrix_norm(gram))
        difference = float(torch.linalg.matrix_norm(following.T @ following - gram))
        ratios.append(difference / scale if scale > 0 else math.inf)
    return max(ratios)
