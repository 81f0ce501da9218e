"""analysis.cost: parameter, FLOP and activation-memory counts against hand-computed values."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from structnets.analysis import Cost, LeafCount, cost, register_counter
from structnets.models import mlp
from structnets.nn import LowRankLinear

F64 = torch.float64


def test_single_linear_by_hand() -> None:
    c = cost(nn.Linear(7, 5), (3, 4, 7))
    rows = 12
    assert c.parameters == 7 * 5 + 5
    assert c.macs == rows * 35
    assert c.flops == rows * (2 * 35 + 5) == 900
    assert c.activation_evaluations == 0
    assert c.activation_memory == rows * 5 * 4  # float32 output only; the input is excluded
    (layer,) = c.per_layer
    assert (layer.name, layer.kind, layer.input_shape, layer.output_shape) == ("", "Linear", (3, 4, 7), (3, 4, 5))
    assert layer.flops == c.flops and layer.parameters == 40 and layer.counted
    assert c.uncounted == ()


def test_linear_without_bias_has_no_adds() -> None:
    c = cost(nn.Linear(6, 4, bias=False), (10, 6))
    assert c.flops == 2 * c.macs == 2 * 10 * 24


@pytest.mark.parametrize("bias", [True, False])
def test_low_rank_linear_by_hand(bias: bool) -> None:
    layer = LowRankLinear(9, 6, 2, bias=bias, dtype=F64)
    c = cost(layer, (5, 9))
    assert c.macs == 5 * 2 * (9 + 6)
    assert c.flops == 5 * (2 * 2 * (9 + 6) + (6 if bias else 0))
    assert c.parameters == 2 * 9 + 6 * 2 + (6 if bias else 0)
    # float64 output (5×6) plus the materialised hidden V x (5×2).
    assert c.activation_memory == 5 * 6 * 8 + 5 * 2 * 8


def _hand_mlp_flops(rows: int, d: int, k: int, w: int, depth: int, h: int | None) -> int:
    hidden = 2 * w * w + w if h is None else 2 * h * (w + w) + w
    return rows * ((2 * d * w + w) + (depth - 1) * hidden + (2 * w * k + k))


@pytest.mark.parametrize("h", [1, 4, 11])
def test_mlp_dense_vs_bottleneck_hidden_blocks_at_width_3h(h: int) -> None:
    d, k, w, depth, rows = 5, 3, 3 * h, 4, 16
    dense = cost(mlp(d, k, w, depth), (rows, d))
    low = cost(mlp(d, k, w, depth, bottleneck=h), (rows, d))
    assert dense.flops == _hand_mlp_flops(rows, d, k, w, depth, None)
    assert low.flops == _hand_mlp_flops(rows, d, k, w, depth, h)

    def hidden(c: Cost, kind: str) -> list:
        return [
            layer
            for layer in c.per_layer
            if layer.kind == kind and layer.input_shape[-1] == layer.output_shape[-1] == w
        ]

    dense_hidden = [layer for layer in dense.per_layer[2:-1] if layer.kind == "Linear"]
    low_hidden = hidden(low, "LowRankLinear")
    assert len(dense_hidden) == len(low_hidden) == depth - 1
    # Paper, Sec. 3: width² → 2·H·width multiply-adds per hidden block; at width = 3H that is 2/3.
    assert Fraction(sum(x.macs for x in low_hidden), sum(x.macs for x in dense_hidden)) == Fraction(2, 3)
    # With the bias adds (1 FLOP per output) the ratio is (12H + 3)/(18H + 3).
    assert Fraction(sum(x.flops for x in low_hidden), sum(x.flops for x in dense_hidden)) == Fraction(
        12 * h + 3, 18 * h + 3
    )
    assert dense.activation_evaluations == low.activation_evaluations == rows * w * depth
    # Every layer output is kept; the low-rank model adds its (depth−1) hidden rows×H tensors.
    assert low.activation_memory - dense.activation_memory == (depth - 1) * rows * h * 4


@pytest.mark.parametrize("bottleneck", [None, 3])
def test_batch_dimensions_scale_everything_but_parameters(bottleneck: int | None) -> None:
    model = mlp(4, 2, 9, 3, bottleneck=bottleneck)
    one = cost(model, (1, 4))
    for shape, rows in [((7, 4), 7), ((2, 3, 4), 6), ((4,), 1), ((0, 4), 0)]:
        c = cost(model, shape)
        assert c.flops == rows * one.flops
        assert c.macs == rows * one.macs
        assert c.activation_evaluations == rows * one.activation_evaluations
        assert c.activation_memory == rows * one.activation_memory
        assert c.parameters == one.parameters == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("bottleneck", [None, 2, 0.5])
def test_matmul_flops_agree_with_torch_flop_counter(bottleneck: int | float | None) -> None:
    """An independent count: torch's dispatcher-level FlopCounterMode (matmuls only, 2·m·n·k)."""
    model = mlp(6, 3, 8, 3, bottleneck=bottleneck)
    shape = (5, 7, 6)
    with FlopCounterMode(display=False) as counter:
        model(torch.zeros(shape))
    c = cost(model, shape)
    bias_adds = sum(layer.flops - 2 * layer.macs for layer in c.per_layer)
    assert bias_adds == 35 * (8 + 8 + 8 + 3)
    assert c.flops - bias_adds == counter.get_total_flops()


def test_dtype_sets_memory_not_flops() -> None:
    c32 = cost(mlp(3, 2, 8, 2), (10, 3))
    c64 = cost(mlp(3, 2, 8, 2, dtype=F64), (10, 3))
    assert c64.flops == c32.flops
    assert c64.activation_memory == 2 * c32.activation_memory


def test_aliasing_outputs_add_no_memory() -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.Identity(), nn.ReLU(inplace=True), nn.Flatten(0), nn.Identity())
    c = cost(model, (5, 3))
    assert c.activation_memory == 5 * 4 * 4  # the Linear output is the only new storage
    assert c.activation_evaluations == 20  # ReLU only; Identity evaluates nothing
    assert [layer.activation_memory for layer in c.per_layer] == [80, 0, 0, 0, 0]


def test_shared_module_counts_each_call_but_parameters_once() -> None:
    shared = nn.Linear(4, 4)
    c = cost(nn.Sequential(shared, nn.Tanh(), shared), (2, 4))
    assert c.parameters == 20
    assert c.flops == 2 * 2 * (2 * 16 + 4)
    assert [layer.name for layer in c.per_layer] == ["0", "1", "0"]


def test_cost_leaves_the_model_unchanged_and_is_frozen() -> None:
    model = mlp(3, 2, 6, 2, bottleneck=2)
    model.train()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    c = cost(model, (4, 3))
    assert model.training
    assert all(torch.equal(p, before[n]) and p.grad is None for n, p in model.named_parameters())
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.flops = 0  # type: ignore[misc]


class _Scale(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight


class _Block(nn.Module):
    """A non-container module with children: its own work (the residual add) is invisible to hooks."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.inner(x)


def test_unknown_modules_raise_naming_them() -> None:
    model = nn.Sequential(nn.Linear(3, 4), _Scale(), nn.Softmax(dim=-1))
    with pytest.raises(TypeError, match=r"1 \(_Scale\).*2 \(Softmax\).*register_counter"):
        cost(model, (2, 3))
    assert all(not m._forward_hooks for m in model.modules())  # hooks removed on error too
    c = cost(model, (2, 3), strict=False)
    assert c.uncounted == ("1 (_Scale)", "2 (Softmax)")
    assert c.flops == 2 * (2 * 12 + 4)
    assert [layer.counted for layer in c.per_layer] == [True, False, False]
    assert c.parameters == 16 + 4


def test_registered_counter_counts_a_block_as_a_unit() -> None:
    class Block(_Block):
        pass

    def count(module: nn.Module, x: torch.Tensor, out: torch.Tensor) -> LeafCount:
        rows = x.numel() // 4
        return LeafCount(macs=rows * 16, adds=rows * 8)  # bias + residual

    model = nn.Sequential(Block(), nn.ReLU())
    assert cost(model, (3, 4)).flops == 3 * (2 * 16 + 4)  # inner Linear only: the add is invisible
    register_counter(Block, count)
    c = cost(model, (3, 4))
    assert [layer.kind for layer in c.per_layer] == ["Block", "ReLU"]  # the inner Linear is not revisited
    assert c.flops == 3 * (2 * 16 + 8)


def test_invalid_arguments() -> None:
    model = nn.Linear(3, 2)
    with pytest.raises(ValueError, match="`input_shape`"):
        cost(model, (4, 5))  # wrong feature size
    with pytest.raises(ValueError, match="`input_shape`"):
        cost(model, (2, -1))
    with pytest.raises(TypeError, match="`input_shape`"):
        cost(model, (2, 3.0))
    with pytest.raises(TypeError, match="`input_shape`"):
        cost(model, ())
    with pytest.raises(TypeError, match="`input_shape`"):
        cost(model, 3)
    with pytest.raises(TypeError, match="`model`"):
        cost(lambda x: x, (2, 3))
    with pytest.raises(TypeError, match="`strict`"):
        cost(model, (2, 3), strict="no")
    with pytest.raises(TypeError, match="`module_type`"):
        register_counter(int, lambda m, x, y: LeafCount())
