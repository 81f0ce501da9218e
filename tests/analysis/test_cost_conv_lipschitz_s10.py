"""``cost`` counts the convolutional 1-Lipschitz layers (session 10).

Before, ``cost(lipschitz_convnet(...), shape)`` raised in strict mode (GradientStepConv2d,
NormConstrainedConv2d, InvertibleDownsample, OrthogonalLinear, L2NormPool2d, FlatToImage had no
counter), so the models of ``lipschitz-mnist-conv`` could not be costed. Each count is checked
against ``torch.utils.flop_counter.FlopCounterMode`` on the layer's plain-torch export (which
performs the same convolutions and products), plus the per-call τ scaling of the kernel that the
counter does not see.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from structnets import export
from structnets.analysis import cost
from structnets.models import lipschitz_convnet
from structnets.nn import (
    FlatToImage,
    GradientStepConv2d,
    InvertibleDownsample,
    L2NormPool2d,
    NormConstrainedConv2d,
    OrthogonalLinear,
)


def _counted_macs(module: nn.Module, x: torch.Tensor) -> int:
    plain = export(module).eval()
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        plain(x)
    return counter.get_total_flops() // 2


@pytest.mark.parametrize("padding_mode", ["zeros", "circular"])
@pytest.mark.parametrize(
    ("channels", "hidden", "kernel", "size"), [(3, 5, 3, 7), (1, 1, 1, 1), (4, 2, 5, 6), (2, 3, 2, 4)]
)
def test_gradient_step_conv(padding_mode: str, channels: int, hidden: int, kernel: int, size: int) -> None:
    layer = GradientStepConv2d(channels, hidden, kernel, padding_mode=padding_mode).eval()
    x = torch.randn(2, channels, size, size)
    result = cost(layer, tuple(x.shape))
    positions = 2 * size * size
    assert result.macs == _counted_macs(layer, x) + hidden * channels * kernel * kernel  # + τ·W once
    assert result.macs == 2 * positions * channels * hidden * kernel**2 + hidden * channels * kernel**2
    assert result.activation_evaluations == positions * hidden
    assert result.flops == 2 * result.macs + positions * (channels + hidden)


@pytest.mark.parametrize("kind", ["orthogonal", "norm-constrained"])
def test_downsample_norm_conv_and_linear_maps(kind: str) -> None:
    down = InvertibleDownsample(3, 10, 2, kind=kind).eval()
    x = torch.randn(2, 3, 6, 8)
    assert cost(down, tuple(x.shape)).macs == _counted_macs(down, x) == 2 * 10 * 3 * 4 * 3 * 4
    conv = NormConstrainedConv2d(3, 4, 3).eval()
    assert cost(conv, tuple(x.shape)).macs == _counted_macs(conv, x) == 2 * 4 * 6 * 8 * 3 * 9
    linear = OrthogonalLinear(7, 5).eval()
    assert cost(linear, (3, 7)).macs == _counted_macs(linear, torch.randn(3, 7)) == 3 * 7 * 5


def test_pool_and_reshape() -> None:
    result = cost(nn.Sequential(FlatToImage(2, 3, 4), L2NormPool2d()), (5, 24))
    assert (result.macs, result.activation_evaluations) == (5 * 24, 5 * 2)


def test_the_conv_experiments_model_is_costed_strictly() -> None:
    model = lipschitz_convnet(1, 10, 28).eval()
    result = cost(model, (2, 1, 28, 28))
    assert not result.uncounted
    assert result.parameters == sum(p.numel() for p in model.parameters())
    # every convolution and product of the exported network, plus the three kernels' τ scaling
    tau = sum(m.hidden_channels * m.channels * 9 for m in model if isinstance(m, GradientStepConv2d))
    dense_tau = 2 * 2 * 256  # GradientStepResidual counts h per row for τ (2 rows, 2 blocks)
    assert result.macs == _counted_macs(model, torch.randn(2, 1, 28, 28)) + tau + dense_tau
