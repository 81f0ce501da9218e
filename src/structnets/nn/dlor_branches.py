"""DLoRBranches: B diagonal-plus-low-rank maps summed before the activation (Chen et al., arXiv 2605.05659)."""

from __future__ import annotations

from typing import Any, cast

import torch
from torch import nn

from .._validation import MAX_LAYERS, check_bool, check_fits_in_memory, check_int
from .dlor_linear import DLoRLinear


def branch_list(
    features: int, rank: int, branches: int, bias: bool, alpha: float, device: Any, dtype: Any
) -> nn.ModuleList:
    """``branches`` DLoR layers of one shape, refused up front when their parameters cannot fit in memory."""
    first = DLoRLinear(features, rank, bias=bias, alpha=alpha, device=device, dtype=dtype)
    check_fits_in_memory(
        f"`branches`={branches}, `features`={first.features}, `rank`={first.rank}",
        branches * sum(p.numel() for p in first.parameters()),
        itemsize=first.U.element_size(),
        what="parameters",
    )
    rest = [DLoRLinear(features, rank, bias=bias, alpha=alpha, device=device, dtype=dtype) for _ in range(branches - 1)]
    return nn.ModuleList([first, *rest])


class DLoRBranches(nn.Module):
    """Parallel DLoR branches summed before the activation: ``y = Σ_k (α_k I + U_k V_kᵀ) x + b``.

    The additive layer of a wide DLoR network (the additive decomposition W = Σ_k M_k of Chen, Li,
    Kim, Lavaei, arXiv 2605.05659). Each branch is a bias-free :class:`DLoRLinear`; the bias is
    shared (one per layer, as in a dense layer). The layer is one affine map whose weight,
    :meth:`to_dense`, is a DLoR matrix of rank at most B·r.

    Args:
        features: N ≥ 2.
        rank: r of every branch, in [1, N − 1].
        branches: B ≥ 1.
        bias: whether to add a learnable bias (features,).
        alpha: initial α of each branch; the layer starts at (B·alpha)·I + low rank, so the
            default None (1/B) starts near the identity like a deep layer.
        device, dtype: where to allocate parameters.

    Shape: ``(*, features)`` → ``(*, features)``.
    """

    def __init__(
        self,
        features: int,
        rank: int,
        branches: int,
        bias: bool = True,
        alpha: float | None = None,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.branches_count = check_int("branches", branches, low=1, high=MAX_LAYERS)
        bias = check_bool("bias", bias)
        alpha = 1.0 / self.branches_count if alpha is None else alpha
        self.branches = branch_list(features, rank, self.branches_count, False, alpha, device, dtype)
        first = cast(DLoRLinear, self.branches[0])
        self.features, self.rank, self.initial_alpha = first.features, first.rank, first.initial_alpha
        self.bias: nn.Parameter | None
        if bias:
            self.bias = nn.Parameter(torch.empty(self.features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every branch as :meth:`DLoRLinear.reset_parameters`; b uniform in ±1/√N like ``nn.Linear``."""
        for branch in self.branches:
            cast(DLoRLinear, branch).reset_parameters()
        if self.bias is not None:
            bound = 1.0 / self.features**0.5
            nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        out = self.branches[0](input)
        for branch in self.branches[1:]:
            out = out + branch(input)
        return out if self.bias is None else out + self.bias

    def to_dense(self) -> torch.Tensor:
        """Return Σ_k (α_k I + U_k V_kᵀ), the (features, features) weight (differentiable)."""
        dense = [cast(DLoRLinear, branch).to_dense() for branch in self.branches]
        return sum(dense[1:], dense[0])

    def extra_repr(self) -> str:
        return (
            f"features={self.features}, rank={self.rank}, branches={self.branches_count}, "
            f"bias={self.bias is not None}, alpha={self.initial_alpha}"
        )


__all__ = ["DLoRBranches"]
