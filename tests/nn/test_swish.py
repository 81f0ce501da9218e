"""Swish ρ_β(x) = x·σ(βx) (Li et al., ICML 2025, eq. 1)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from structnets.nn import ACTIVATIONS, Swish, activation

F64 = torch.float64


def _grid() -> torch.Tensor:
    return torch.cat([torch.linspace(-30, 30, 601, dtype=F64), torch.tensor([0.0, -1e-8, 1e-8], dtype=F64)])


@pytest.mark.parametrize("beta", [0.25, 1.0, 1.7, 10.0])
@pytest.mark.parametrize("learnable", [False, True])
def test_values_match_formula(beta: float, learnable: bool) -> None:
    x = _grid()
    got = Swish(beta, learnable, dtype=F64)(x)
    # Independent scalar reference: x / (1 + exp(-βx)), written in math, not torch.
    want = torch.tensor([v / (1.0 + math.exp(-beta * v)) for v in x.tolist()], dtype=F64)
    torch.testing.assert_close(got, want, rtol=1e-13, atol=1e-300)


def test_beta_one_equals_silu() -> None:
    x = _grid().reshape(4, -1)
    torch.testing.assert_close(Swish(dtype=F64)(x), nn.functional.silu(x), rtol=0, atol=0)
    torch.testing.assert_close(Swish(1.0, learnable=True, dtype=F64)(x), nn.functional.silu(x), rtol=1e-15, atol=1e-15)


def test_known_values() -> None:
    swish = Swish(2.0, dtype=F64)
    assert swish(torch.tensor(0.0, dtype=F64)).item() == 0.0
    # ρ(x) − ρ(−x) = x for every β (σ(t) + σ(−t) = 1).
    x = _grid()
    torch.testing.assert_close(swish(x) - swish(-x), x, rtol=1e-13, atol=1e-13)


def test_gradcheck_input_fixed_beta() -> None:
    x = torch.randn(3, 5, dtype=F64, requires_grad=True)
    assert torch.autograd.gradcheck(Swish(1.3, dtype=F64), (x,))
    assert torch.autograd.gradcheck(Swish(dtype=F64), (x,))
    assert torch.autograd.gradgradcheck(Swish(dtype=F64), (x,))


def test_learnable_beta_gets_gradient_and_passes_gradcheck() -> None:
    swish = Swish(0.8, learnable=True, dtype=F64)
    assert [name for name, _ in swish.named_parameters()] == ["beta"]
    x = torch.randn(4, 3, dtype=F64)
    swish(x).sum().backward()
    # d/dβ [x σ(βx)] = x² σ(βx)(1 − σ(βx))
    s = torch.sigmoid(0.8 * x)
    torch.testing.assert_close(swish.beta.grad, (x**2 * s * (1 - s)).sum(), rtol=1e-12, atol=1e-12)

    x = x.requires_grad_(True)
    beta = swish.beta.detach().clone().requires_grad_(True)

    def fn(x: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(swish, {"beta": beta}, (x,))

    assert torch.autograd.gradcheck(fn, (x, beta))


def test_fixed_beta_is_a_buffer_and_survives_state_dict() -> None:
    swish = Swish(2.5)
    assert list(swish.parameters()) == []
    assert "beta" in swish.state_dict()
    fresh = Swish(2.5)
    fresh.load_state_dict(swish.state_dict())
    x = torch.randn(6)
    assert torch.equal(fresh(x), swish(x))


def test_reset_parameters_restores_initial_beta() -> None:
    swish = Swish(0.5, learnable=True)
    with torch.no_grad():
        swish.beta.fill_(3.0)
    swish.reset_parameters()
    assert swish.beta.item() == 0.5


def test_dtype_and_repr() -> None:
    swish = Swish(1.5, learnable=True, dtype=F64)
    assert swish.beta.dtype == F64
    assert repr(swish) == "Swish(beta=1.5, learnable=True)"


@pytest.mark.parametrize(
    "kwargs, argument, error",
    [
        ({"beta": 0.0}, "beta", ValueError),
        ({"beta": -1.0}, "beta", ValueError),
        ({"beta": float("inf")}, "beta", ValueError),
        ({"beta": float("nan")}, "beta", ValueError),
        ({"beta": "1"}, "beta", TypeError),
        ({"beta": True}, "beta", TypeError),
        ({"learnable": 1}, "learnable", TypeError),
    ],
)
def test_invalid_arguments_are_named(kwargs: dict, argument: str, error: type[Exception]) -> None:
    with pytest.raises(error, match=f"`{argument}`"):
        Swish(**kwargs)


def test_activation_by_name() -> None:
    assert isinstance(activation("swish"), Swish)
    assert isinstance(activation("silu"), nn.SiLU)
    assert activation("relu") is not activation("relu")  # fresh modules
    module = Swish(2.0)
    assert activation(module) is module
    with pytest.raises(ValueError, match="`activation`") as info:
        activation("swishh")
    for name in ACTIVATIONS:
        assert repr(name) in str(info.value)
