"""Measured training memory of a model: what one optimisation step must hold at once."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn
from torch.autograd.graph import saved_tensors_hooks

from .._validation import check_int


@contextmanager
def preserved_buffers(model: nn.Module) -> Iterator[None]:
    """Put every buffer of ``model`` back (object and value) on exit.

    A training-mode forward rewrites buffers (BatchNorm's running statistics and batch count, a
    power-iteration vector): a measurement that runs the model must leave them as they were.
    """
    saved = [
        (module, name, buffer, buffer.detach().clone())
        for module in model.modules()
        for name, buffer in module.named_buffers(recurse=False)
    ]
    try:
        yield
    finally:
        with torch.no_grad():
            for module, name, buffer, value in saved:
                if getattr(module, name, None) is not buffer:
                    setattr(module, name, buffer)
                # only a buffer whose values moved is copied back (BatchNorm's kernel writes without
                # bumping the version): a copy bumps the version, which Swish reads to keep its
                # fused SiLU path, so an untouched β = 1 must not be copied
                if not _same(buffer, value):
                    buffer.copy_(value)


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal shapes and values, NaN equal to NaN."""
    if a.shape != b.shape:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(torch.allclose(a, b, rtol=0.0, atol=0.0, equal_nan=True))
    return torch.equal(a, b)


def saved_activation_bytes(model: nn.Module, inputs: torch.Tensor) -> int:
    """Bytes of the tensors autograd saves for backward in one forward pass of ``model``.

    Measured, not modelled: a ``saved_tensors_hooks`` pack hook records every saved tensor's
    storage once (views share storage), excluding the parameters and buffers themselves, which
    exist anyway (BatchNorm saves its running statistics, a power-iteration layer its vector).
    The model's buffers are put back afterwards.

    Args:
        model: any module.
        inputs: a batch ``(B, *)``; it is treated as requiring no gradient.

    Returns:
        bytes of distinct saved storages (the input batch included when a layer saves it).

    Raises:
        RuntimeError: called inside ``torch.inference_mode()``, where autograd saves nothing.
    """
    if torch.is_inference_mode_enabled():  # enable_grad() does not lift it: the count would be 0
        raise RuntimeError("saved_activation_bytes measures autograd: call it outside torch.inference_mode()")
    state = [*model.parameters(), *model.buffers()]
    state_storages = {t.untyped_storage().data_ptr() for t in state}
    storages: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        pointer = storage.data_ptr()
        if pointer not in state_storages:
            storages[pointer] = storage.nbytes()
        return tensor

    with preserved_buffers(model), torch.enable_grad(), saved_tensors_hooks(pack, lambda tensor: tensor):
        output = model(inputs.detach())
    del output
    return int(sum(storages.values()))


def training_memory_bytes(model: nn.Module, inputs: torch.Tensor, *, optimizer_slots: int = 2) -> int:
    """Memory of one training step: parameters + gradients + optimizer state + saved activations.

    Adam keeps two slots per parameter (first and second moments), hence ``optimizer_slots=2``.
    Only trainable parameters (``requires_grad``) get a gradient and optimizer state: a frozen
    parameter has no ``.grad``, and torch's optimizers keep no state for it.

    Args:
        model: any module.
        inputs: a batch ``(B, *)``.
        optimizer_slots: optimizer state tensors per parameter (≥ 0: Adam 2, SGD-momentum 1, SGD 0).

    Returns:
        bytes, ``parameter_bytes + (1 + optimizer_slots) · trainable_parameter_bytes +
        saved_activation_bytes``.
    """
    optimizer_slots = check_int("optimizer_slots", optimizer_slots, low=0)
    parameters = list(model.parameters())
    parameter_bytes = sum(p.numel() * p.element_size() for p in parameters)
    trainable_bytes = sum(p.numel() * p.element_size() for p in parameters if p.requires_grad)
    saved = saved_activation_bytes(model, inputs)
    return int(parameter_bytes + (1 + optimizer_slots) * trainable_bytes + saved)
