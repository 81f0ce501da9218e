"""Loss functions by name, and the target dtype each expects.

Every loss is a mean over the batch, so the fit loop can weight minibatch losses by batch size
to report the epoch's per-sample average.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from .._validation import check_choice

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def mse(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean squared error ``(1 / (n·k)) Σᵢⱼ (outputᵢⱼ − targetᵢⱼ)²``.

    Args:
        output: (n, k) predictions.
        target: (n, k) targets, same shape as ``output`` (the fit loop reshapes a 1-D target to
            (n, 1) before calling; it never relies on broadcasting, which would silently compare
            every prediction with every target).

    Returns:
        a scalar tensor.
    """
    return nn.functional.mse_loss(output, target)


def cross_entropy(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Softmax cross-entropy ``(1/n) Σᵢ [logsumexp(outputᵢ) − outputᵢ,targetᵢ]``.

    Args:
        output: (n, K) unnormalised logits.
        target: (n,) int64 class indices in [0, K).

    Returns:
        a scalar tensor.
    """
    return nn.functional.cross_entropy(output, target)


LOSSES: dict[str, LossFn] = {"mse": mse, "cross_entropy": cross_entropy}

# How the fit loop must convert ``y`` for each named loss: class indices or real-valued targets.
TARGET_KIND: dict[str, str] = {"mse": "real", "cross_entropy": "index"}


def get_loss(name: str | LossFn) -> LossFn:
    """Return the loss function named ``name`` (one of :data:`LOSSES`), or ``name`` if callable.

    Args:
        name: ``"mse"``, ``"cross_entropy"`` or a callable ``(output, target) -> scalar``.

    Returns:
        the loss function.
    """
    if callable(name):
        return name
    check_choice("loss", name, tuple(LOSSES))
    return LOSSES[name]
