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
    depth = len(_layers(matrices))
    return depth * float(schatten_norm(end_to_end(matrices), 2.0 / depth, power=True))


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
        gram = layers[index] @ layers[index].T
        scale = float(torch.linalg.matrix_norm(gram))
        if scale == 0.0:
            raise ValueError(f"`matrices[{index}]` is zero: its relative imbalance is undefined")
        following = layers[index + 1]
        ratios.append(float(torch.linalg.matrix_norm(following.T @ following - gram)) / scale)
    return max(ratios)
