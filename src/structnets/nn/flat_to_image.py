"""Reshape flat rows into images: (N, C·H·W) → (N, C, H, W), an isometry."""

from __future__ import annotations

import torch
from torch import nn

from .._validation import check_int


class FlatToImage(nn.Module):
    """Reshape each row of ``(N, C·H·W)`` into a ``(C, H, W)`` image (row-major, as ``nn.Unflatten``).

    A reshape keeps every entry, so it is an isometry: certified constant 1. It lets an image
    network take the flat (n, d) rows that :func:`structnets.analysis.certify` and
    :func:`~structnets.analysis.lipschitz_lower_bound` work on.

    Args:
        channels, height, width: the image shape (each ≥ 1).

    Shape: ``(N, channels·height·width)`` → ``(N, channels, height, width)``.
    """

    def __init__(self, channels: int, height: int, width: int) -> None:
        super().__init__()
        self.channels = check_int("channels", channels, low=1)
        self.height = check_int("height", height, low=1)
        self.width = check_int("width", width, low=1)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        size = self.channels * self.height * self.width
        if not isinstance(input, torch.Tensor):  # a type error, as every other layer's
            raise TypeError(f"`input` must be a torch.Tensor, got {type(input).__name__}")
        if input.dim() != 2 or input.shape[1] != size:
            raise ValueError(f"`input` must have shape (N, {size}), got {tuple(input.shape)}")
        return input.reshape(input.shape[0], self.channels, self.height, self.width)

    def lipschitz_bound(self) -> float:
        """1: a reshape is an isometry."""
        return 1.0

    def export(self) -> nn.Unflatten:
        """``nn.Unflatten(1, (channels, height, width))`` (identical outputs)."""
        return nn.Unflatten(1, (self.channels, self.height, self.width))

    def extra_repr(self) -> str:
        return f"channels={self.channels}, height={self.height}, width={self.width}"


__all__ = ["FlatToImage"]
