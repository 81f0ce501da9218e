"""The deel-torchlip baselines of lipschitz-mnist and lipschitz-mnist-conv (optional extra ``baselines``).

Their certificates are ours, not deel's: the exported plain-torch network must compute what deel's
network computes, its certified bound must be ≥ the measured Lipschitz constant after training that
rewards steepness, and a layer with no certified constant must be refused (assuming 1 would
undershoot). Skipped where ``deel-torchlip`` is not installed; ``make setup`` installs it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest
import torch
from torch import nn

from structnets.analysis import lipschitz_upper_bound
from structnets.conv_norms import conv_norm_bound
from structnets.experiments import get
from structnets.experiments.lipschitz_mnist import units as dense_units
from structnets.experiments.lipschitz_mnist_conv import LipschitzMNISTConvConfig
from structnets.experiments.lipschitz_mnist_conv import units as conv_units
from structnets.functional import spectral_norm_bound
from structnets.nn import FlatToImage

from .helpers import measured_lipschitz, train_for_steepness

torchlip = pytest.importorskip("deel.torchlip")

SLACK = 1 + 1e-5
"""float32 measurement against a float64 certificate (as the experiments' own check)."""


class _Scale(nn.Module):
    """A parameter-free layer that is 3-Lipschitz: the certifiers must not take it as 1."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return 3 * input


def _inputs(n: int = 32) -> torch.Tensor:
    return torch.rand(n, 784, generator=torch.Generator().manual_seed(3))


def test_deel_is_detected() -> None:
    assert dense_units.deel_torchlip_available()


def _assert_export_equal_and_certified(model: nn.Module, exported: nn.Module) -> None:
    """``exported`` computes ``model`` after steepness training, and its certificate ≥ the measured constant."""
    x = _inputs()
    with torch.no_grad():
        torch.testing.assert_close(exported(x), model.eval()(x), rtol=1e-5, atol=1e-5)
    bound = lipschitz_upper_bound(exported)
    measured = measured_lipschitz(exported, 784)
    assert 0.5 < measured <= bound * SLACK, (measured, bound)


def test_conv_export_computes_deels_network_and_its_certificate_covers_the_measured_constant() -> None:
    torch.manual_seed(0)
    model = conv_units.build({"model": "deel-torchlip-conv", "channels": [2, 4], "depths": [1, 1], "kernel_size": 3})
    train_for_steepness(model, 784, steps=15, lr=0.05)
    certified = conv_units._deel_certified(model)
    _assert_export_equal_and_certified(model, certified)
    # the exported convolutions keep deel's zero "same" padding; each is certified for its input size
    # (28 × 28, then 14 × 14 after the down-sampling), as ours are: never looser than our every-size
    # bound, and above each layer's own measured operator norm at that size
    convs = [m for m in certified.modules() if isinstance(m, nn.Conv2d)]
    assert len(convs) == 4 and all(c.padding == "same" for c in convs if c.kernel_size == (3, 3))
    every_size = 1.0
    for conv, size in zip(convs, (28, 28, 14, 14), strict=True):
        weight = conv.weight.detach().to(torch.float64)
        sized = float(conv_norm_bound(weight, "zeros", input_size=size))
        every_size *= float(conv_norm_bound(weight, "zeros"))
        assert _conv_operator_norm(conv, size) <= sized * SLACK
    linear = [m for m in certified.modules() if isinstance(m, nn.Linear)]
    every_size *= float(spectral_norm_bound(linear[0].weight.detach().to(torch.float64)))
    assert lipschitz_upper_bound(certified) <= every_size * (1 + 1e-12)


def _conv_operator_norm(conv: nn.Conv2d, size: int) -> float:
    """‖conv‖₂ on size × size inputs (no bias), measured by power iteration on the operator and its adjoint."""
    x = torch.randn(1, conv.in_channels, size, size, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    weight = conv.weight.detach().to(torch.float64)
    for _ in range(300):
        x = x / x.norm()
        y = nn.functional.conv2d(x, weight, padding=conv.padding)
        x = torch.nn.functional.conv_transpose2d(y, weight, padding=conv.kernel_size[0] // 2)
    return float(x.norm().sqrt())


def test_conv_certifier_refuses_another_input_size_and_a_padding_it_does_not_cover() -> None:
    model = conv_units.build({"model": "deel-torchlip-conv", "channels": [2, 4], "depths": [1, 1], "kernel_size": 3})
    certified = conv_units._deel_certified(model)
    with pytest.raises(ValueError, match="1×28×28"):  # its convolutions are certified for 28 × 28 and 14 × 14
        certified[1](torch.zeros(2, 1, 14, 14))
    # padding 3 > k − 1 = 2 puts outputs outside the full convolution the per-size bound covers
    inner = torchlip.Sequential(torchlip.SpectralConv2d(1, 2, 3, padding=3), nn.Flatten(),
                                torchlip.SpectralLinear(2 * 32 * 32, 10))  # fmt: skip
    with pytest.raises(ValueError, match="padding"):
        lipschitz_upper_bound(conv_units._deel_certified(nn.Sequential(FlatToImage(1, 28, 28), inner)))


def test_conv_certifier_refuses_an_unknown_layer() -> None:
    with pytest.warns(UserWarning, match="not a Lipschitz layer"):  # deel itself only warns
        inner = torchlip.Sequential(torchlip.SpectralConv2d(1, 2, 3, padding="same"), _Scale(), nn.Flatten(),
                                    torchlip.SpectralLinear(2 * 28 * 28, 10))  # fmt: skip
    certified = conv_units._deel_certified(nn.Sequential(FlatToImage(1, 28, 28), inner))
    with pytest.raises(ValueError, match="_Scale"):
        lipschitz_upper_bound(certified)


def test_conv_certifier_refuses_a_strided_convolution() -> None:
    inner = torchlip.Sequential(torchlip.SpectralConv2d(1, 2, 3, stride=2), nn.Flatten(),
                                torchlip.SpectralLinear(2 * 13 * 13, 10))  # fmt: skip
    certified = conv_units._deel_certified(nn.Sequential(FlatToImage(1, 28, 28), inner))
    with pytest.raises(ValueError, match="stride-1"):
        lipschitz_upper_bound(certified)


def test_dense_export_computes_deels_network_and_its_certificate_covers_the_measured_constant() -> None:
    torch.manual_seed(0)
    model = dense_units._deel_mlp(784, 10, 16, 3)
    train_for_steepness(model, 784, steps=15, lr=0.05)
    _assert_export_equal_and_certified(model, dense_units._deel_export(model))


def test_dense_export_refuses_an_unknown_layer() -> None:
    with pytest.warns(UserWarning, match="not a Lipschitz layer"):  # deel itself only warns
        model = torchlip.Sequential(torchlip.SpectralLinear(784, 8), _Scale(), torchlip.SpectralLinear(8, 10))
    with pytest.raises(ValueError, match="_Scale"):
        dense_units._deel_export(model)


def test_a_deel_conv_unit_trains_and_is_certified_by_our_bound(uci_data: Path) -> None:
    experiment = get("lipschitz-mnist-conv")
    small = dataclasses.replace(LipschitzMNISTConvConfig.quick(), models=("deel-torchlip-conv",), channels=(2, 4), depths=(0, 1), epochs=1,
                                max_train=128, max_test=64, ascent_steps=2, batch_size=64)  # fmt: skip
    (unit,) = experiment.units(small, pd.DataFrame())
    assert unit.key == "train/deel-torchlip-conv/seed=0"
    row = experiment.run_unit(dict(unit.params))
    assert row["model"] == "deel-torchlip-conv" and row["n_train"] == 128 and row["n_test"] == 64
    assert 0 < row["lipschitz_lower"] <= row["lipschitz_upper"] * SLACK
    assert 0 <= row["certified_1.58"] <= row["certified_1"] <= row["certified_0.5"] <= row["accuracy"] <= 1


def test_conv_certifier_counts_a_layer_called_twice_and_refuses_other_containers() -> None:
    """The product runs over calls: a convolution applied twice (norm 2) contributes 2 · 2, not 2."""
    conv = nn.Conv2d(1, 1, 3, padding=1, bias=False)
    with torch.no_grad():
        conv.weight.zero_()
        conv.weight[0, 0, 1, 1] = 2.0  # 2 × identity: operator norm exactly 2 at every size

    class Chain(nn.Sequential):  # stands in for a deel network whose export keeps a shared layer
        def vanilla_export(self) -> nn.Sequential:
            return nn.Sequential(*self)

    head = nn.Linear(784, 10)
    certified = conv_units._deel_certified(nn.Sequential(FlatToImage(1, 28, 28), Chain(conv, conv, nn.Flatten(), head)))
    head_bound = float(spectral_norm_bound(head.weight.detach().to(torch.float64)))
    assert lipschitz_upper_bound(certified) >= 4.0 * head_bound * (1 - 1e-12)
    assert measured_lipschitz(certified, 784) <= lipschitz_upper_bound(certified) * SLACK

    # deel 1.0.5's own export keeps a layer used twice only once: it does not compute the network
    with pytest.warns(UserWarning, match="not a Lipschitz layer"):  # deel itself only warns
        inner = torchlip.Sequential(conv, conv, nn.Flatten(), torchlip.SpectralLinear(784, 10))
    with pytest.raises(ValueError, match="does not compute its network"):
        conv_units._deel_certified(nn.Sequential(FlatToImage(1, 28, 28), inner))

    class Residual(nn.Module):  # x + f(x): its children alone do not bound it
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Identity()

        def forward(self, input: torch.Tensor) -> torch.Tensor:
            return input + self.body(input)

    with pytest.raises(ValueError, match="Residual"):
        conv_units._deel_certified(
            nn.Sequential(FlatToImage(1, 28, 28), Chain(Residual(), nn.Flatten(), nn.Linear(784, 10)))
        )


def test_conv_certificate_follows_layers_added_after_wrapping() -> None:
    """The calls are recorded at every certification: a 5× layer appended to the export is counted."""
    model = conv_units.build({"model": "deel-torchlip-conv", "channels": [2, 4], "depths": [1, 1], "kernel_size": 3})
    certified = conv_units._deel_certified(model)
    before = lipschitz_upper_bound(certified)
    scale = nn.Linear(10, 10)
    with torch.no_grad():
        scale.weight.copy_(5 * torch.eye(10))
    certified[1].inner.append(scale)
    assert lipschitz_upper_bound(certified) >= 5 * before * (1 - 1e-12)


def test_dense_export_must_compute_deels_network() -> None:
    """deel 1.0.5's export keeps a layer used twice once: the dense certifier refuses what it cannot certify."""
    shared = torchlip.SpectralLinear(16, 16)
    model = torchlip.Sequential(torchlip.SpectralLinear(784, 16), shared, torchlip.GroupSort2(), shared,
                                torchlip.SpectralLinear(16, 10))  # fmt: skip
    with pytest.raises(ValueError, match="does not compute its network"):
        dense_units._deel_export(model)
