"""DLoRParallel: B DLoR branches, each through σ, then summed: the wide DLoR layer (Chen et al., arXiv 2605.05659)."""

from __future__ import annotations

from typing import cast

import torch
from torch import nn

from .._validation import MAX_LAYERS, check_bool, check_int
from .activation import activation as make_activation
from .dlor_branches import branch_list
from .dlor_linear import DLoRLinear


class DLoRParallel(nn.Module):
    """Parallel DLoR branches, each through σ, then summed: ``y = Σ_k σ(α_k x + U_k V_kᵀ x + b_k)``.

    The nonlinear layer of the paper's wide network (Chen, Li, Kim, Lavaei, arXiv 2605.05659,
    additive decomposition "mapped through the nonlinear activation ... a set of parallel
    layers"): B·N hidden units, read out by summing the B branches. Each branch is a
    :class:`DLoRLinear` with its own bias. Unlike :class:`DLoRBranches` (sum before σ) it has no
    single dense matrix.

    Args:
        features: N ≥ 2.
        rank: r of every branch, in [1, N − 1].
        branches: B ≥ 1.
        activation: a name from :data:`structnets.nn.ACTIVATIONS` or a module (shared by all branches).
        bias: whether each branch has a learnable bias (features,).
        alpha: initial α of each branch; the default None (1/B) makes Σ_k α_k σ'(0)x the starting
            linear part, like a deep layer's σ'(0)x.
        device, dtype: where to allocate parameters.

    Shape: ``(*, features)`` → ``(*, features)``.
    """

    def __init__(
        self,
        features: int,
        rank: int,
        branches: int,
        activation: str | nn.Module = "swish",
        bias: bool = True,
        alpha: float | None = None,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.branches_count = check_int("branches", branches, low=1, high=MAX_LAYERS)
        bias = check_bool("bias", bias)
        self.activation = make_activation(activation)
        # The name when one was given, so that the repr rebuilds the layer.
        self.activation_name = activation if isinstance(activation, str) else None
        alpha = 1.0 / self.branches_count if alpha is None else alpha
        self.branches = branch_list(features, rank, self.branches_count, bias, alpha, device, dtype)
        first = cast(DLoRLinear, self.branches[0])
        self.features, self.rank, self.initial_alpha = first.features, first.rank, first.initial_alpha
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every branch as :meth:`DLoRLinear.reset_parameters`."""
        for branch in self.branches:
            cast(DLoRLinear, branch).reset_parameters()

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        out = self.activation(self.branches[0](input))
        for branch in self.branches[1:]:
            out = out + self.activation(branch(input))
        return out

    def extra_repr(self) -> str:
        activation = repr(self.activation_name) if self.activation_name is not None else repr(self.activation)
        return (
            f"features={self.features}, rank={self.rank}, branches={self.branches_count}, "
            f"activation={activation}, bias={cast(DLoRLinear, self.branches[0]).bias is not None}, alpha={self.initial_alpha}"
        )


__all__ = ["DLoRParallel"]
