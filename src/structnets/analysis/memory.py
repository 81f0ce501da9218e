"""Measured training memory of a model: what one optimisation step must hold at once."""

from __future__ import annotations

import torch
from torch import nn
from torch.autograd.graph import saved_tensors_hooks

from .._validation import check_int


def saved_activation_bytes(model: nn.Module, inputs: torch.Tensor) -> int:
    """Bytes of the tensors autograd saves for backward in one forward pass of ``model``.

    Measured, not modelled: a ``saved_tensors_hooks`` pack hook records every saved tensor's
    storage once (views share storage), excluding the parameters themselves, which exist anyway.

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
    parameter_storages = {p.untyped_storage().data_ptr() for p in model.parameters()}
    storages: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        pointer = storage.data_ptr()
        if pointer not in parameter_storages:
            storages[pointer] = storage.nbytes()
        return tensor

    with torch.enable_grad(), saved_tensors_hooks(pack, lambda tensor: tensor):
        output = model(inputs)
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
    return int(parameter_bytes + (1 + optimizer_slots) * trainable_bytes + saved_activation_bytes(model, inputs))
