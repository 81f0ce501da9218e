"""The A = fl(V/s) a norm-constrained map computes is within its certificate, in every dtype.

Dividing V by its bound B in V's dtype rounds each entry, so ‖fl(V/B)‖₂ may exceed 1 = min(1, B)
by the rounding (bfloat16: 1.00044 measured for a conv kernel). ``functional.division_scale``
widens the divisor by exactly what the rounding can add (the argument is in its docstring).
"""

from __future__ import annotations

import pytest
import torch

from structnets.functional import division_scale
from structnets.nn import NormConstrainedLinear


def _largest_norm(dtype: torch.dtype, scale_with, seeds: int = 40) -> float:
    worst = 0.0
    for seed in range(seeds):
        torch.manual_seed(seed)
        layer = NormConstrainedLinear(24, 6, dtype=dtype)
        with torch.no_grad():
            # mostly rank one plus noise: σ₁ far above 1 and rounding errors that line up with it
            u, v = torch.randn(6, 1), torch.randn(1, 24)
            layer.raw_weight.copy_((3.0 * u @ v + 0.3 * torch.randn(6, 24)).to(dtype))
        layer.eval()
        if scale_with is not None:
            layer._scale = scale_with.__get__(layer)  # the pre-fix divisor, to show the test can fail
        a = layer.to_dense().detach().to(torch.float64)
        assert layer.lipschitz_bound() == 1.0
        worst = max(worst, float(torch.linalg.matrix_norm(a, 2)))
    return worst


def _unwidened(self):  # max(1, B): the divisor before division_scale
    bound, _ = self._bound(self.raw_weight, self.power_vector, self.training)
    return bound.clamp_min(1.0)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_stored_matrix_is_within_the_certificate(dtype: torch.dtype) -> None:
    assert _largest_norm(dtype, None) <= 1.0


def test_without_the_widening_bfloat16_exceeds_the_certificate() -> None:
    """The same draws with the divisor max(1, B) break ‖A‖₂ ≤ 1: the test above can fail."""
    assert _largest_norm(torch.bfloat16, _unwidened) > 1.0


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_division_scale_is_one_at_or_below_the_unit_ball_and_widens_above(dtype: torch.dtype) -> None:
    weight = torch.zeros(10, 30, dtype=dtype)
    assert division_scale(torch.tensor(0.5, dtype=dtype), weight).item() == 1.0
    above = division_scale(torch.tensor(2.0, dtype=dtype), weight).item()
    unit = torch.finfo(dtype).eps / 2
    assert 2.0 < above <= 2.0 * (1 + 2 * unit * (10**0.5 + 2) + 2.0**-48)  # + a few float64 ulps of widening
    assert torch.isnan(division_scale(torch.tensor(float("nan"), dtype=dtype), weight))
