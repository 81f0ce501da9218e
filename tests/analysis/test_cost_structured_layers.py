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


@pytest.mark.parametrize("mode, branches", [("deep", 1), ("summed", 1), ("summed", 4)])
def test_dlor_networks_sum_their_maps(mode, branches):
    n, r, depth, rows = 8, 1, 3, 5
    model = dlor_mlp(2, 1, n, depth, r, mode, **({"branches": branches} if mode == "summed" else {}))
    per_map = 2 * (2 * n * r + n) * branches + (n * branches + n)  # flops per row of one layer
    assert cost(model, (rows, 2)).flops == rows * (depth + 1) * per_map


def test_lipschitz_resnet_is_countable():
    c = cost(lipschitz_resnet(4, 3, 8, 3), (2, 4))
    assert c.parameters == sum(p.numel() for p in lipschitz_resnet(4, 3, 8, 3).parameters())
    assert c.flops > 0 and not c.uncounted


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("branches", [1, 2, 5])
def test_dlor_parallel_counts_the_branch_sum(branches, bias):
    """Σ_k σ(M_k x + b_k): B DLoR maps, B·N activations and the (B − 1)·N additions of the sum."""
    from structnets.nn import DLoRParallel

    n, r, rows = 6, 2, 3
    layer = DLoRParallel(n, r, branches, "tanh", bias=bias)
    c = cost(layer, (rows, n))
    assert not c.uncounted and len(c.per_layer) == 1  # counted as a unit, children not again
    assert c.macs == rows * branches * (2 * n * r + n)
    per_branch_adds = n + (n if bias else 0)  # αx + U(Vᵀx), then the bias
    assert c.flops == 2 * c.macs + rows * (branches * per_branch_adds + (branches - 1) * n)
    assert c.activation_evaluations == rows * branches * n
    # output (rows·n) + per branch Vᵀx, pre-activation and σ of it, + B − 2 partial sums
    assert c.activation_memory == 4 * rows * (n + branches * r + (3 * branches - 2) * n)
    assert c.parameters == branches * (2 * n * r + 1 + (n if bias else 0))


def test_parallel_dlor_network_cost():
    n, r, depth, branches, rows = 5, 1, 2, 3, 4
    model = dlor_mlp(2, 1, n, depth, r, "parallel", "tanh", branches)
    hidden = 2 * branches * (2 * n * r + n) + branches * 2 * n + (branches - 1) * n  # one DLoRParallel
    last = 2 * branches * (2 * n * r + n) + branches * n + n  # DLoRBranches: B maps summed, one bias
    c = cost(model, (rows, 2))
    assert c.flops == rows * (depth * hidden + last)
    assert c.activation_evaluations == rows * depth * branches * n
    assert not c.uncounted
