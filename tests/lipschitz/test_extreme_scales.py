"""Dense certified layers at the edges of float64: tiny and subnormal weights certify, never crash, never NaN.

A diagonal W has ‖W‖₂ = max |wᵢᵢ| exactly, so every certificate is checked in exact rational
arithmetic (``fractions.Fraction`` of the stored floats). Before these fixes a W of scale 2⁻⁶⁰⁰ gave
τ = NaN (s/Q overflowed; a NaN forward that ``lipschitz_bound`` still called 1-Lipschitz) and a
subnormal W crashed the exact bound (2^k overflowed in the scaling, then ``eigh`` failed).
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch

from structnets.functional import certified_step, squared_norm_bound
from structnets.models import lipschitz_resnet
from structnets.nn import GradientStepResidual, NormConstrainedLinear

F64 = torch.float64
SCALES = [2.0**-500, 2.0**-600, 2.0**-900, 2.0**-1030, 2.0**-1070, 2.0**-1074]


def _diagonal(scale: float, n: int = 4) -> torch.Tensor:
    """diag(scale, scale/2, …): every entry exact (or a subnormal 0), ‖W‖₂ = scale."""
    values = torch.tensor([scale * 2.0**-i for i in range(n)], dtype=F64)
    return torch.diag(values)


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("method", ["exact", "gram", "frobenius"])
def test_the_squared_bound_of_a_tiny_matrix_is_a_positive_upper_bound(scale: float, method: str) -> None:
    w = _diagonal(scale)
    square = float(squared_norm_bound(w, method))
    assert square > 0 and Fraction(square) >= Fraction(scale) ** 2


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("bound", ["exact", "verified"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_a_tiny_gradient_step_block_is_finite_and_certified(scale: float, bound: str, dtype: torch.dtype) -> None:
    block = GradientStepResidual(4, 4, bound=bound, dtype=dtype)
    with torch.no_grad():
        block.weight.copy_(_diagonal(scale).to(dtype))  # float32 flushes the tiniest entries to 0
    x = torch.randn(3, 4, dtype=dtype)
    sigma = Fraction(float(block.weight.detach().abs().max()))
    step = Fraction(float(block.step_size().detach().to(F64)))
    for training in (True, False):
        block.train(training)
        tau = block.tau().detach()
        assert bool(torch.isfinite(tau)) and float(tau) >= 0.0
        assert Fraction(float(tau.detach().to(F64))) * sigma**2 <= step
        # finite (its bias term τWᵀσ(b) may be huge, τ ∝ 1/‖W‖₂², and then float evaluation cancels
        # catastrophically: the certificate is for exact arithmetic); the gradient in W, ∝ τ, may exceed
        # float64 at these scales and is not asserted
        assert bool(torch.isfinite(block(x)).all())
    assert block.lipschitz_bound() == 1.0


@pytest.mark.parametrize("scale", SCALES)
def test_a_tiny_norm_constrained_map_bounds_its_norm(scale: float) -> None:
    layer = NormConstrainedLinear(4, 4, dtype=F64).eval()
    with torch.no_grad():
        layer.raw_weight.copy_(_diagonal(scale))
    bound = float(layer._bound.certified(layer.raw_weight))
    assert bound > 0 and Fraction(bound) >= Fraction(scale)
    assert bool(torch.isfinite(layer(torch.randn(2, 4, dtype=F64))).all())


@pytest.mark.parametrize("scale", [2.0**-600, 2.0**-1030])
def test_a_tiny_batched_model_computes_finitely_and_certified(scale: float) -> None:
    """Forward finite, every τ certified. (The gradient is not asserted: ∂τ/∂W ∝ s/‖W‖₂⁴ itself exceeds
    float64 at these scales, as it does in the exact and verified modes.)"""
    torch.manual_seed(0)
    model = lipschitz_resnet(4, 2, width=4, depth=2, bound="verified-batched", dtype=F64).train()
    blocks = [module for module in model if isinstance(module, GradientStepResidual)]
    with torch.no_grad():
        for block in blocks:
            block.weight.copy_(_diagonal(scale))
    taus: list[torch.Tensor] = []
    for block in blocks:
        block.register_forward_hook(lambda module, args, out: taus.append(module.tau().detach()))
    out = model(torch.randn(5, 4, dtype=F64))
    assert bool(torch.isfinite(out).all())
    sigma = Fraction(scale)
    for block, tau in zip(blocks, taus, strict=True):
        step = Fraction(float(block.step_size().detach()))
        assert bool(torch.isfinite(tau)) and Fraction(float(tau)) * sigma**2 <= step


def test_certified_step_never_overflows_to_nan() -> None:
    for square in (2.0**-1074, 2.0**-1030, 2.0**-1023, 0.0):
        tau = certified_step(2.0, torch.tensor(square, dtype=F64), F64)
        assert bool(torch.isfinite(tau))
        assert Fraction(float(tau)) * Fraction(square) <= 2
    assert float(certified_step(2.0, torch.tensor(0.0, dtype=F64), F64)) == 0.0
