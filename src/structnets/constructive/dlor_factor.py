"""The DLoR factor M = αI + UVᵀ (Chen, Li, Kim, Lavaei, arXiv 2605.05659) and the checks its constructions share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .._validation import check_int
from ._arrays import is_complex

if TYPE_CHECKING:
    from ..nn import DLoRLinear

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

    def to_layer(self, bias: torch.Tensor | None = None, *, dtype: torch.dtype = F64) -> DLoRLinear:
        """Return a :class:`~structnets.nn.DLoRLinear` whose ``to_dense()`` equals :meth:`dense`."""
        from ..nn import DLoRLinear

        layer = DLoRLinear(self.features, self.rank, bias=bias is not None, alpha=1.0, dtype=dtype)
        _load_factor(layer, self, bias)
        return layer


# --------------------------------------------------------------------------------------------
# Argument checks


def _as_matrix(W: Any, name: str = "W") -> torch.Tensor:
    """``W`` as an (N, N) float64 tensor, N ≥ 2, all entries finite; else ValueError/TypeError."""
    if is_complex(W):
        raise TypeError(f"`{name}` must be a real square matrix, got a complex one (dtype {W.dtype})")
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


def _load_factor(layer: DLoRLinear, factor: DLoRFactor, bias: torch.Tensor | None) -> None:
    """Copy α, U, V (and ``bias``, else zero) of ``factor`` into a :class:`~structnets.nn.DLoRLinear`."""
    with torch.no_grad():
        layer.alpha.fill_(factor.alpha)
        layer.U.copy_(factor.U)
        layer.V.copy_(factor.V)
        if bias is not None:
            if layer.bias is None:
                raise ValueError("`layer` has no bias to load the factor's bias into")
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
