"""TakeFirst: read y ∈ ℝᵐ from the first m coordinates, the output map of a DLoR network (arXiv 2605.05659)."""

from __future__ import annotations

import torch
from torch import nn

from .._validation import check_fits_in_memory, check_int, itemsize_of


class TakeFirst(nn.Module):
    """Read the output from the first ``out_features`` coordinates (no parameters): the map ``[I_m, 0]``.

    The output map of a DLoR network (Chen, Li, Kim, Lavaei, arXiv 2605.05659), whose N×N layers
    αI + UVᵀ carry the m outputs in their first coordinates.

    Args:
        width: N ≥ 1.
        out_features: m in [1, N].
        device, dtype: accepted for the common constructor convention; the layer has no tensors.

    Shape: ``(*, width)`` → ``(*, out_features)``.
    """

    def __init__(
        self,
        width: int,
        out_features: int,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.width = check_int("width", width, low=1)
        # one input row holds `width` numbers: a width no machine can hold is refused here
        check_fits_in_memory(f"`width`={self.width}", self.width, itemsize=itemsize_of(dtype))
        self.out_features = check_int("out_features", out_features, low=1, high=self.width)

    def reset_parameters(self) -> None:
        """No parameters: nothing to initialise."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if not isinstance(input, torch.Tensor):
            raise TypeError(f"`input` must be a torch.Tensor, got {type(input).__name__}")
        if input.dim() == 0 or input.shape[-1] != self.width:
            raise ValueError(f"`input` must have last dimension width={self.width}, got shape {tuple(input.shape)}")
        return input[..., : self.out_features]

    def extra_repr(self) -> str:
        return f"width={self.width}, out_features={self.out_features}"


__all__ = ["TakeFirst"]
