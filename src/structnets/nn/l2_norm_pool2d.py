"""ℓ₂-norm pooling over the spatial dimensions: (N, C, H, W) → (N, C), 1-Lipschitz."""

from __future__ import annotations

import torch
from torch import nn


class L2NormPool2d(nn.Module):
    """``y_c = ‖x_c‖₂``, the ℓ₂ norm of each channel's H × W map (global ℓ₂-norm pooling).

    1-Lipschitz in ℓ₂: |‖x_c‖ − ‖x'_c‖| ≤ ‖x_c − x'_c‖ for each channel (triangle inequality),
    so ‖y − y'‖² ≤ Σ_c ‖x_c − x'_c‖² = ‖x − x'‖². Unlike average pooling (constant 1/√(HW)) it
    does not shrink the signal (the pooling of Singla, Singla, Feizi, *Improved deterministic ℓ₂
    robustness on CIFAR-10 and CIFAR-100*, ICLR 2022). Has no parameters; :func:`structnets.export`
    keeps it as it is (torch has no layer for it without a fixed input size).

    Shape: ``(N, C, H, W)`` → ``(N, C)``.
    """

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if not isinstance(input, torch.Tensor):  # a type error, as every other layer's
            raise TypeError(f"`input` must be a torch.Tensor, got {type(input).__name__}")
        if input.dim() != 4:
            raise ValueError(f"`input` must have shape (N, C, H, W), got {tuple(input.shape)}")
        return torch.linalg.vector_norm(input, dim=(2, 3))

    def lipschitz_bound(self) -> float:
        """1 (see the class docstring)."""
        return 1.0


__all__ = ["L2NormPool2d"]
