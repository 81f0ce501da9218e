"""Diagonal-plus-low-rank layers x ↦ (αI + UVᵀ)x + b and the pure rank-1 layer x ↦ u(vᵀx) + b.

Chen, Li, Kim, Lavaei, *Structural Correspondence and Universal Approximation in Diagonal plus
Low-Rank Neural Networks* (arXiv 2605.05659): a DLoR matrix is M = αI_N + UVᵀ with U, V ∈ ℝ^{N×r},
one scalar more than a rank-r matrix. Without α (the pure rank-1 layer below) every layer only
sees the projection vᵀx, the paper's "orthogonal blind spot"; α restores the full input.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .._validation import check_int, check_real


class DLoRLinear(nn.Module):
    """Square affine map with a diagonal-plus-low-rank weight: ``y = α x + U (Vᵀ x) + b``.

    The weight is M = αI + UVᵀ (learnable scalar α, U, V of shape (features, rank)); a forward
    pass costs 2·rank·features + features multiply-adds per sample instead of features².

    Args:
        features: size N of input and output, an int ≥ 2.
        rank: r, an int in [1, features − 1] (r = N would be a dense matrix with a redundant α).
        bias: whether to add a learnable bias b of shape (features,).
        alpha: the value α takes at initialisation (and on every ``reset_parameters``); finite.
        device, dtype: where to allocate parameters.

    Attributes:
        alpha: () scalar parameter α.
        U: (features, rank) parameter.
        V: (features, rank) parameter.
        bias: (features,) parameter or None.

    Shape: ``(*, features)`` → ``(*, features)``.
    """

    def __init__(
        self,
        features: int,
        rank: int,
        bias: bool = True,
        alpha: float = 1.0,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.features = check_int("features", features, low=2)
        self.rank = check_int("rank", rank, low=1, high=self.features - 1)
        if not isinstance(bias, bool):
            raise TypeError(f"`bias` must be a bool, got {bias!r}")
        self.initial_alpha = check_real("alpha", alpha)
        factory = {"device": device, "dtype": dtype}
        self.alpha = nn.Parameter(torch.empty((), **factory))
        self.U = nn.Parameter(torch.empty(self.features, self.rank, **factory))
        self.V = nn.Parameter(torch.empty(self.features, self.rank, **factory))
        if bias:
            self.bias = nn.Parameter(torch.empty(self.features, **factory))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """α ← ``alpha``; U, V (and b) as ``LowRankLinear`` initialises its two factors.

        With α = 1 the layer starts as the identity plus a low-rank map whose output has about a
        third of the input's scale, the initialisation of a residual block.
        """
        with torch.no_grad():
            self.alpha.fill_(self.initial_alpha)
        # kaiming_uniform_ on the transposed views: fan-in N for Vᵀ (r×N), fan-in r for U (N×r).
        nn.init.kaiming_uniform_(self.V.T, a=math.sqrt(5))
        nn.init.kaiming_uniform_(self.U, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(self.features)
            nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        low_rank = nn.functional.linear(input @ self.V, self.U, self.bias)
        return low_rank + self.alpha * input

    def to_dense(self) -> torch.Tensor:
        """Return the dense (features, features) weight ``αI + U Vᵀ`` (differentiable)."""
        eye = torch.eye(self.features, device=self.U.device, dtype=self.U.dtype)
        return self.alpha * eye + self.U @ self.V.T

    def to_linear(self) -> nn.Linear:
        """Return an ``nn.Linear`` with weight ``αI + UVᵀ`` and the same bias (identical outputs)."""
        return _linear_from(self.to_dense(), self.bias)

    def extra_repr(self) -> str:
        return (
            f"features={self.features}, rank={self.rank}, bias={self.bias is not None}, "
            f"alpha={self.initial_alpha}"
        )


class RankOneLinear(nn.Module):
    """Affine map with a rank-1 weight and no diagonal: ``y = u (vᵀ x) + b``.

    The DLoR layer with α fixed to 0 and r = 1, allowed to be rectangular. Its output depends on
    x only through the scalar vᵀx, so ``layer(x + w) == layer(x)`` for every w ⊥ v: a network
    whose first layer is rank-1 cannot tell apart inputs that differ orthogonally to v (the
    "orthogonal blind spot" of Chen et al., arXiv 2605.05659).

    Args:
        in_features: input size n_in ≥ 1.
        out_features: output size n_out ≥ 1.
        bias: whether to add a learnable bias b of shape (out_features,).
        device, dtype: where to allocate parameters.

    Attributes:
        u: (out_features,) parameter.
        v: (in_features,) parameter.
        bias: (out_features,) parameter or None.

    Shape: ``(*, in_features)`` → ``(*, out_features)``.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.in_features = check_int("in_features", in_features, low=1)
        self.out_features = check_int("out_features", out_features, low=1)
        if not isinstance(bias, bool):
            raise TypeError(f"`bias` must be a bool, got {bias!r}")
        factory = {"device": device, "dtype": dtype}
        self.u = nn.Parameter(torch.empty(self.out_features, **factory))
        self.v = nn.Parameter(torch.empty(self.in_features, **factory))
        if bias:
            self.bias = nn.Parameter(torch.empty(self.out_features, **factory))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """u, v, b as ``LowRankLinear(in, out, rank=1)`` initialises its factors."""
        bound_v = 1.0 / math.sqrt(self.in_features)
        nn.init.uniform_(self.v, -bound_v, bound_v)
        nn.init.uniform_(self.u, -1.0, 1.0)  # fan-in of u is the rank, 1
        if self.bias is not None:
            nn.init.uniform_(self.bias, -1.0, 1.0)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        projection = input @ self.v  # (*,): the only thing the layer sees of x
        out = projection.unsqueeze(-1) * self.u
        return out if self.bias is None else out + self.bias

    def to_dense(self) -> torch.Tensor:
        """Return the dense (out_features, in_features) weight ``u vᵀ``."""
        return torch.outer(self.u, self.v)

    def to_linear(self) -> nn.Linear:
        """Return an ``nn.Linear`` with weight ``u vᵀ`` and the same bias (identical outputs)."""
        return _linear_from(self.to_dense(), self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


def _linear_from(weight: torch.Tensor, bias: torch.Tensor | None) -> nn.Linear:
    out_features, in_features = weight.shape
    linear = nn.Linear(in_features, out_features, bias=bias is not None, device=weight.device, dtype=weight.dtype)
    with torch.no_grad():
        linear.weight.copy_(weight)
        if bias is not None:
            linear.bias.copy_(bias)
    return linear
