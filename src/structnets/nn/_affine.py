"""The plain ``nn.Linear`` an affine structured layer exports to."""

from __future__ import annotations

import torch
from torch import nn


@torch.no_grad()
def linear_from_dense(weight: torch.Tensor, bias: torch.Tensor | None) -> nn.Linear:
    """Return an ``nn.Linear`` applying ``weight`` (out, in) and ``bias``, on their device and dtype."""
    linear = nn.Linear(
        weight.shape[1], weight.shape[0], bias=bias is not None, device=weight.device, dtype=weight.dtype
    )
    linear.weight.copy_(weight)
    if bias is not None:
        linear.bias.copy_(bias)
    return linear
