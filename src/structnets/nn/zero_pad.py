"""ZeroPad: embed x ∈ ℝⁿ as [x, 0, …, 0] ∈ ℝᴺ, the input map of a DLoR network (Chen et al., arXiv 2605.05659)."""

from __future__ import annotations

import torch
from torch import nn

from .._validation import check_fits_in_memory, check_int, itemsize_of


class ZeroPad(nn.Module):
    """Embed ``x`` ∈ ℝⁿ as ``[x, 0, …, 0]`` ∈ ℝᴺ (no parameters): the linear map ``[I_n; 0]``.

    A DLoR network (Chen, Li, Kim, Lavaei, arXiv 2605.05659) has only square N×N weights
    αI + UVᵀ, so its n inputs are embedded in ℝᴺ by zero padding (N = n + m + 2 suffices for
    universal approximation).

    Args:
        in_features: n ≥ 1.
        width: N ≥ n.
        device, dtype: accepted for the common constructor convention; the layer has no tensors.

    Shape: ``(*, in_features)`` → ``(*, width)``.
    """

    def __init__(
        self,
        in_features: int,
        width: int,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.in_features = check_int("in_features", in_features, low=1)
        # one output row holds `width` numbers: a width no machine can hold is refused here
        check_fits_in_memory(f"`in_features`={self.in_features}", self.in_features, itemsize=itemsize_of(dtype))
        self.width = check_int("width", width, low=self.in_features)
        check_fits_in_memory(f"`width`={self.width}", self.width, itemsize=itemsize_of(dtype))

    def reset_parameters(self) -> None:
        """No parameters: nothing to initialise."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if not isinstance(input, torch.Tensor):
            raise TypeError(f"`input` must be a torch.Tensor, got {type(input).__name__}")
        if input.dim() == 0 or input.shape[-1] != self.in_features:
            raise ValueError(
                f"`input` must have last dimension in_features={self.in_features}, got shape {tuple(input.shape)}"
            )
        return nn.functional.pad(input, (0, self.width - self.in_features))

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, width={self.width}"


__all__ = ["ZeroPad"]
