"""Swish activation ρ(x) = x·sigmoid(βx) (Ramachandran et al. 2017; Li et al. ICML 2025, eq. 1)."""

from __future__ import annotations

import torch
from torch import nn

from .._validation import check_bool, check_real


class Swish(nn.Module):
    """Swish ρ_β(x) = x · σ(βx), elementwise.

    Args:
        beta: the slope β > 0. β = 1 gives SiLU, the activation of the low-rank Swish paper;
            β → ∞ tends to ReLU.
        learnable: when True, β is a trainable scalar parameter.
        device, dtype: where to allocate β.

    Shape: any ``(*)`` to the same shape.
    """

    def __init__(
        self,
        beta: float = 1.0,
        learnable: bool = False,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.initial_beta = check_real("beta", beta, low=0.0, low_open=True)
        self.learnable = check_bool("learnable", learnable)
        beta_tensor = torch.empty((), device=device, dtype=dtype)
        if learnable:
            self.beta = nn.Parameter(beta_tensor)
        else:
            self.register_buffer("beta", beta_tensor)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        with torch.no_grad():
            self.beta.fill_(self.initial_beta)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if not self.learnable and self.initial_beta == 1.0:
            # SiLU is the fused kernel for β = 1: same values, faster and one less buffer read.
            return nn.functional.silu(input)
        return input * torch.sigmoid(self.beta * input)

    def extra_repr(self) -> str:
        return f"beta={self.initial_beta}, learnable={self.learnable}"
