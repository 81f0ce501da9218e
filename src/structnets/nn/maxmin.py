"""MaxMin: sort consecutive pairs, (x, y) ↦ (max{x, y}, min{x, y}) (GroupSort of group size 2)."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from .._validation import check_int
from .gradient_step_residual import ResidualExport


class MaxMin(nn.Module):
    """Pairwise sort ``(x₂ᵢ, x₂ᵢ₊₁) ↦ (max, min)``; an odd last coordinate passes through.

    A permutation of the input on each linear region, so it is 1-Lipschitz in ℓ₂ and preserves
    gradient norms (Anil, Lucas, Grosse, ICML 2019). It is exactly a gradient-step residual layer
    with τ = 2/‖W‖₂²: with w = (e₂ᵢ − e₂ᵢ₊₁)/√2,
    ``x − 2 wᵀ ReLU(w·x)`` gives ``(x + σ(y − x), y − σ(y − x)) = (max{x, y}, min{x, y})``, the
    identities max{x, y} = x + σ(y − x), min{x, y} = x − σ(x − y) of Murari, Furuya, Schönlieb,
    *Approximation theory for 1-Lipschitz ResNets* (arXiv 2505.12003), used for exact
    representation of piecewise-affine 1-Lipschitz functions.

    Args:
        features: input and output size d (≥ 1).
        device, dtype: accepted for the common constructor convention; the layer has no tensors.

    Shape: ``(*, features)`` → ``(*, features)``.
    """

    def __init__(
        self,
        features: int,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.features = check_int("features", features, low=1)

    def reset_parameters(self) -> None:
        """No parameters: nothing to initialise."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if not isinstance(input, torch.Tensor):
            raise TypeError(f"`input` must be a torch.Tensor, got {type(input).__name__}")
        if input.dim() == 0 or input.shape[-1] != self.features:
            raise ValueError(
                f"`input` must have last dimension features={self.features}, got shape {tuple(input.shape)}"
            )
        pairs = self.features // 2
        if pairs == 0:
            return input
        head = input[..., : 2 * pairs].unflatten(-1, (pairs, 2))
        first, second = head[..., 0], head[..., 1]
        sorted_pairs = torch.stack((torch.maximum(first, second), torch.minimum(first, second)), dim=-1)
        out = sorted_pairs.flatten(-2)
        if self.features % 2:
            out = torch.cat((out, input[..., -1:]), dim=-1)
        return out

    def lipschitz_bound(self, *, operand_dtype: torch.dtype | None = None) -> float:
        """Certified ℓ₂ Lipschitz constant: 1 (a permutation on each region; no operand to round)."""
        return 1.0

    def export(self, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> ResidualExport:
        """Plain torch layers with identical outputs: ``x + Linear(−2Wᵀ)(ReLU(Linear(W)(x)))``.

        W has one row (e₂ᵢ₊₁ − e₂ᵢ)/√2 per pair, so ‖W‖₂ = 1 and τ = 2 (see the class docstring).
        """
        pairs = self.features // 2
        factory: dict[str, Any] = {"device": device, "dtype": dtype if dtype is not None else torch.get_default_dtype()}
        inner = nn.Linear(self.features, max(pairs, 1), bias=False, **factory)
        outer = nn.Linear(max(pairs, 1), self.features, bias=False, **factory)
        weight = torch.zeros(max(pairs, 1), self.features, **factory)
        rows = torch.arange(pairs)
        weight[rows, 2 * rows] = -1.0 / math.sqrt(2.0)
        weight[rows, 2 * rows + 1] = 1.0 / math.sqrt(2.0)
        with torch.no_grad():
            inner.weight.copy_(weight)
            outer.weight.copy_(-2.0 * weight.T)
        return ResidualExport(nn.Sequential(inner, nn.ReLU(), outer))

    def extra_repr(self) -> str:
        return f"features={self.features}"


__all__ = ["MaxMin"]
