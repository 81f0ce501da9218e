"""Review (session 8) of the certified convolutional layers: paths the other conv tests do not take.

Every check compares a certificate with an independent float64 measurement: the σ₁ of the explicit
matrix of the operator the forward applies (built by applying torch's ``F.conv2d`` on an explicitly
padded input to every basis image, no FFT), or the float64 Jacobian of the forward at a point.

Paths: tensors read through ``torch.nn.utils.parametrize`` (a non-finite parametrization output,
and a random one, DropConnect, which hands each read a different tensor); the applied kernel of the
norm-constrained layers rounded to float16/bfloat16; constructor options the certificate does not
cover, in every spelling.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils import parametrize

from structnets.analysis import lipschitz_upper_bound
from structnets.nn import GradientStepConv2d, InvertibleDownsample, NormConstrainedConv2d

from .helpers import dense_operator_norm

F64 = torch.float64


class Overflow(nn.Module):
    """A deterministic parametrization whose output overflows to ±inf (finite parameters, non-finite tensor)."""

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        return weight * 1e308 * 10.0


class DropConnect(nn.Module):
    """Weight dropout: in training mode every read of the parametrized tensor draws a new mask."""

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        return F.dropout(weight, 0.5, self.training)


LAYERS = [
    (lambda: GradientStepConv2d(2, 3, 3, step=2.0, learnable_step=False, dtype=F64), "weight"),
    (lambda: NormConstrainedConv2d(2, 2, 3, dtype=F64), "raw_weight"),
    (lambda: InvertibleDownsample(2, 8, 2, kind="norm-constrained", dtype=F64), "raw_weight"),
    (lambda: InvertibleDownsample(2, 8, 2, kind="orthogonal", dtype=F64), "raw_weight"),
]


@pytest.mark.parametrize(("make", "name"), LAYERS)
def test_a_non_finite_tensor_behind_a_parametrization_is_refused(make, name: str) -> None:  # type: ignore[no-untyped-def]
    """The forward reads ``layer.weight`` through the parametrization: ±inf there makes it compute NaN, so no
    certificate may be given (it was 1.0: the finiteness check read only the layer's own parameters)."""
    torch.manual_seed(0)
    layer = make().eval()
    parametrize.register_parametrization(layer, name, Overflow())
    try:
        with torch.no_grad():
            output = layer(torch.randn(1, 2, 6, 6, dtype=F64))
    except ValueError as error:  # the orthogonal kind's polar factor refuses ±inf by name: no output at all
        assert "non-finite" in str(error)
        output = torch.full((1,), torch.nan)
    assert not bool(torch.isfinite(output).all())
    with pytest.raises(ValueError, match=f"`{name}` has non-finite entries"):
        layer.lipschitz_bound()
    with pytest.raises(ValueError, match=f"`{name}` has non-finite entries"):
        lipschitz_upper_bound(nn.Sequential(layer))


def _jacobian_norm(layer: nn.Module, x: torch.Tensor, seed: int) -> float:
    """‖J‖₂ of the map one forward call computes at x (its dropout masks drawn from ``seed``)."""

    def f(z: torch.Tensor) -> torch.Tensor:
        torch.manual_seed(seed)  # the same masks at every evaluation: one realisation of the layer
        return layer(z.reshape(x.shape)).flatten()

    jacobian = torch.autograd.functional.jacobian(f, x.flatten())
    return float(torch.linalg.matrix_norm(jacobian, ord=2))


@pytest.mark.parametrize(("make", "name"), LAYERS)
def test_a_random_parametrization_gives_one_certified_map_per_call(make, name: str) -> None:  # type: ignore[no-untyped-def]
    """DropConnect on the weight: each call must apply one weight throughout (the convolution, the step's
    norm bound and the adjoint), so that every realisation is within the certificate. Reading it once
    per use gave ‖J‖₂ up to 1.2 (norm-constrained: V₁ divided by the bound of V₂) against a bound of 1."""
    torch.manual_seed(1)
    layer = make()
    parametrize.register_parametrization(layer, name, DropConnect())
    with torch.no_grad():
        getattr(layer.parametrizations, name).original.mul_(20.0)  # far outside the unit ball: the scale acts
    layer.train()
    bound = layer.lipschitz_bound()
    generator = torch.Generator().manual_seed(2)
    worst = 0.0
    for seed in range(12):
        x = torch.randn(1, 2, 4, 4, generator=generator, dtype=F64)
        worst = max(worst, _jacobian_norm(layer, x, seed))
    assert worst <= bound * (1 + 1e-12)
    assert worst >= 0.5  # the realisations are not trivial maps: the check can fail


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize(("c_in", "c_out", "kernel_size"), [(3, 4, 3), (4, 4, 2), (1, 1, 3)])
def test_low_precision_norm_constrained_kernel_is_within_its_certificate(
    dtype: torch.dtype, c_in: int, c_out: int, kernel_size: int
) -> None:
    """The applied kernel A = V / B is rounded to the layer's dtype: σ₁ of the operator of that stored A
    must stay ≤ ``lipschitz_bound()`` (bfloat16 measured 1.00044 against 1.0 before the scale covered the
    rounding)."""
    n = 5
    worst = 0.0
    for seed in range(12):
        torch.manual_seed(seed)
        layer = NormConstrainedConv2d(c_in, c_out, kernel_size, padding_mode="circular", input_size=n, dtype=dtype)
        with torch.no_grad():
            layer.raw_weight.mul_(10.0)  # outside the unit ball: A = V / B(V)
        worst = max(worst, dense_operator_norm(layer.kernel(), n, "circular") / layer.lipschitz_bound())
    assert worst <= 1.0
    assert worst >= 0.95  # the widening (≤ 1 + u√(k²r), 1 % in bfloat16) gives away no more than that


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_invertible_downsample_matrix_is_within_its_certificate(dtype: torch.dtype) -> None:
    worst = 0.0
    for seed in range(12):
        torch.manual_seed(seed)
        layer = InvertibleDownsample(3, 8, 2, kind="norm-constrained", dtype=dtype)
        with torch.no_grad():
            layer.raw_weight.mul_(10.0)
        sigma = float(torch.linalg.matrix_norm(layer.matrix().detach().to(F64), ord=2))
        worst = max(worst, sigma / layer.lipschitz_bound())
    assert 0.98 <= worst <= 1.0


@pytest.mark.parametrize("name", ["stride", "dilation"])
@pytest.mark.parametrize("value", [(1,), (), [1, 1, 1], 1.0, (1, 1.0), "1"])
def test_unsupported_stride_and_dilation_spellings_are_refused_by_name(name: str, value: object) -> None:
    """Only 1 or a pair of 1s: other spellings (which torch's Conv2d rejects or reads otherwise) were accepted."""
    for make in (GradientStepConv2d, NormConstrainedConv2d):
        with pytest.raises((ValueError, TypeError), match=f"`{name}`"):
            make(2, 3, 3, **{name: value})
    GradientStepConv2d(2, 3, 3, **{name: (1, 1)})  # the supported spellings
    NormConstrainedConv2d(2, 3, 3, **{name: [1, 1]})
