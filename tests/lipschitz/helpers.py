"""Shared helpers for the 1-Lipschitz tests: steepness training and measurement."""

from __future__ import annotations

import torch
from torch import nn

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
