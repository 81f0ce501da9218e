"""Activations by name, so models and configs can say ``activation="gelu"``."""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from .._validation import check_choice
from .swish import Swish

_FACTORIES: dict[str, Callable[[], nn.Module]] = {
    "swish": Swish,
    "silu": nn.SiLU,
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "gelu": nn.GELU,
    "sigmoid": nn.Sigmoid,
    "softplus": nn.Softplus,
    "identity": nn.Identity,
}

ACTIVATIONS: tuple[str, ...] = tuple(_FACTORIES)


def activation(name: str | nn.Module) -> nn.Module:
    """Return a fresh activation module for ``name`` (one of :data:`ACTIVATIONS`).

    A module passed in is returned as is, so builders accept either.
    """
    if isinstance(name, nn.Module):
        return name
    check_choice("activation", name, ACTIVATIONS)
    return _FACTORIES[name]()
