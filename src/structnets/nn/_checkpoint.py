"""Checks on checkpoints loaded into constrained layers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch


def reject_non_finite(state_dict: Mapping[str, Any], prefix: str) -> None:
    """Raise ValueError naming the first entry under ``prefix`` with NaN/inf values.

    A constrained layer computes its step or scale from its weights, so a non-finite checkpoint
    would silently give NaN outputs; it is rejected by name instead.
    """
    for name, tensor in state_dict.items():
        if name.startswith(prefix) and torch.is_tensor(tensor) and tensor.is_floating_point():
            if not torch.isfinite(tensor).all():
                raise ValueError(f"`state_dict[{name!r}]` must be finite, got non-finite values")
