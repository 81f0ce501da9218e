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


class CertifiedCheckpointMixin:
    """``_load_from_state_dict`` for the certified layers: refuse non-finite entries, then drop the bound cache.

    One place for what every certified layer does on ``load_state_dict``: a non-finite checkpoint
    is rejected by name (:func:`reject_non_finite`) before anything is copied, and a layer with a
    content-checked bound (``self._bound``, a :class:`~structnets.nn._spectral.CertifiedBound`)
    drops its cache (a stale cache could never be used, but it holds memory). List it before
    ``nn.Module`` among the bases.
    """

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):  # type: ignore[no-untyped-def]
        reject_non_finite(state_dict, prefix)
        super()._load_from_state_dict(  # type: ignore[misc]
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )
        bound = self.__dict__.get("_bound")
        if bound is not None:
            bound.reset()
