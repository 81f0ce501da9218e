"""``store_power_vector``: the training call's write of the next power vector, with or without buffer hooks."""

from __future__ import annotations

import torch
from torch import nn

from structnets.nn import GradientStepResidual, NormConstrainedLinear
from structnets.nn._spectral import store_power_vector


def _train_once(layer: nn.Module) -> None:
    layer.train()
    layer(torch.randn(4, 6)).sum().backward()


def test_the_vector_is_written_and_saved_with_the_state() -> None:
    torch.manual_seed(0)
    for layer in (GradientStepResidual(6, 6, bound="verified"), NormConstrainedLinear(6, 6, bound="verified")):
        before = layer.power_vector
        _train_once(layer)
        after = layer.power_vector
        assert after is not before and layer._buffers["power_vector"] is after
        assert torch.equal(layer.state_dict()["power_vector"], after)
        assert "power_vector" not in layer._non_persistent_buffers_set


def test_a_global_buffer_hook_still_sees_every_write() -> None:
    seen: list[tuple[str, torch.Tensor]] = []

    def hook(module: nn.Module, name: str, tensor: torch.Tensor) -> torch.Tensor:
        seen.append((name, tensor))
        return tensor * 1.0  # a replacement, as such hooks may return

    torch.manual_seed(1)
    layer = GradientStepResidual(6, 6, bound="verified")
    handle = nn.modules.module.register_module_buffer_registration_hook(hook)
    try:
        _train_once(layer)
    finally:
        handle.remove()
    assert [name for name, _ in seen] == ["power_vector"]
    assert layer.power_vector is not seen[0][1] and torch.equal(layer.power_vector, seen[0][1])


def test_the_same_vector_is_not_written_again() -> None:
    layer = NormConstrainedLinear(3, 2)
    vector = layer.power_vector
    store_power_vector(layer, vector)
    assert layer.power_vector is vector
    fresh = torch.ones(3)
    store_power_vector(layer, fresh)
    assert layer.power_vector is fresh
