"""cost() counts every structured layer of the library by hand-checked formulas."""

import pytest

from structnets.analysis import cost
from structnets.models import dlor_mlp, lipschitz_resnet
from structnets.nn import DLoRLinear, GradientStepResidual, MaxMin, NormConstrainedLinear, RankOneLinear


@pytest.mark.parametrize("bias", [True, False])
def test_dlor_linear(bias):
    n, r, rows = 10, 3, 7
    c = cost(DLoRLinear(n, r, bias=bias), (rows, n))
    # αx + U(Vᵀx) (+ b): 2nr + n multiply-adds, n adds for the sum, n for the bias.
    assert c.macs == rows * (2 * n * r + n)
    assert c.flops == 2 * c.macs + rows * (n + (n if bias else 0))


def test_rank_one_linear():
    c = cost(RankOneLinear(4, 6), (5, 4))
    assert c.macs == 5 * (4 + 6)
    assert c.flops == 2 * c.macs + 5 * 6


def test_norm_constrained_linear_counts_as_its_product():
    c = cost(NormConstrainedLinear(5, 3), (2, 5))
    assert (c.macs, c.flops) == (2 * 15, 2 * 2 * 15 + 2 * 3)


def test_gradient_step_residual_and_maxmin():
    rows, n, h = 3, 4, 6
    c = cost(GradientStepResidual(n, h), (rows, n))
    assert c.macs == rows * (2 * n * h + h)
    assert c.activation_evaluations == rows * h
    assert cost(MaxMin(n), (rows, n)).activation_evaluations == rows * n


@pytest.mark.parametrize("mode, branches", [("deep", 1), ("wide", 1), ("wide", 4)])
def test_dlor_networks_sum_their_maps(mode, branches):
    n, r, depth, rows = 8, 1, 3, 5
    model = dlor_mlp(2, 1, n, depth, r, mode, **({"branches": branches} if mode == "wide" else {}))
    per_map = 2 * (2 * n * r + n) * branches + (n * branches + n)  # flops per row of one layer
    assert cost(model, (rows, 2)).flops == rows * (depth + 1) * per_map


def test_lipschitz_resnet_is_countable():
    c = cost(lipschitz_resnet(4, 3, 8, 3), (2, 4))
    assert c.parameters == sum(p.numel() for p in lipschitz_resnet(4, 3, 8, 3).parameters())
    assert c.flops > 0 and not c.uncounted
