"""Shared helpers for the 1-Lipschitz tests: steepness training and measurement, conv operators, precision settings."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from structnets.analysis import jacobian_spectral_norms, lipschitz_lower_bound


def train_for_steepness(model: nn.Module, features: int, *, steps: int = 40, lr: float = 0.05, seed: int = 0) -> None:
    """Adversarial training steps: maximise ‖f(x) − f(y)‖/‖x − y‖ and ‖f(x) − f(x')‖ over parameters.

    A loss that rewards steepness pushes every weight towards breaking the Lipschitz constraint.
    """
    generator = torch.Generator().manual_seed(seed)
    dtype = next(model.parameters()).dtype
    x = torch.randn(64, features, generator=generator, dtype=dtype)
    y = x + 0.05 * torch.randn(64, features, generator=generator, dtype=dtype)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        ratio = torch.linalg.vector_norm(model(x) - model(y), dim=-1) / torch.linalg.vector_norm(x - y, dim=-1)
        (-ratio.mean()).backward()
        optimizer.step()
    model.eval()


def measured_lipschitz(model: nn.Module, features: int, *, seed: int = 1) -> float:
    """Largest Jacobian norm over 256 random points and gradient ascent over pairs (a lower bound)."""
    generator = torch.Generator().manual_seed(seed)
    dtype = next(model.parameters()).dtype
    points = torch.randn(256, features, generator=generator, dtype=dtype)
    jac = float(jacobian_spectral_norms(model, points).max())
    return max(jac, lipschitz_lower_bound(model, points, steps=30, pairs=32, lr=0.02, seed=seed))


def reference_conv(x: torch.Tensor, kernel: torch.Tensor, padding_mode: str) -> torch.Tensor:
    """Stride-1 "same" convolution: pad (k − 1)//2 before and k//2 after, then a valid convolution."""
    kh, kw = kernel.shape[2:]
    pads = ((kw - 1) // 2, kw // 2, (kh - 1) // 2, kh // 2)
    return F.conv2d(F.pad(x, pads, mode="constant" if padding_mode == "zeros" else "circular"), kernel)


def dense_operator_norm(kernel: torch.Tensor, n: int, padding_mode: str) -> float:
    """σ₁ of the (c_out·n², c_in·n²) matrix of the "same" convolution on an n × n input, by float64 SVD."""
    c_in = kernel.shape[1]
    basis = torch.eye(c_in * n * n, dtype=torch.float64).reshape(-1, c_in, n, n)
    columns = reference_conv(basis, kernel.detach().to(torch.float64), padding_mode).reshape(c_in * n * n, -1)
    return float(torch.linalg.matrix_norm(columns, ord=2))


#: Every float32 precision setting of torch (2.13), parents before children.
PRECISION_NODES = (
    "", "mkldnn", "mkldnn.matmul", "mkldnn.conv", "mkldnn.rnn", "cuda.matmul", "cudnn", "cudnn.conv", "cudnn.rnn"
)  # fmt: skip


def precision_node(path: str) -> Any:
    """``torch.backends`` or the sub-module at the dotted ``path`` (``""``: ``torch.backends``)."""
    node: Any = torch.backends
    for part in filter(None, path.split(".")):
        node = getattr(node, part)
    return node


def precision_settings() -> dict[str, str]:
    """Every node's ``fp32_precision``."""
    return {path: str(precision_node(path).fp32_precision) for path in PRECISION_NODES}
