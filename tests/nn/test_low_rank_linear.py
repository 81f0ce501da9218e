"""LowRankLinear: truncated-SVD construction (Eckart–Young) and exact conversions."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from structnets.nn import LowRankLinear

F64 = torch.float64


def _linear(in_features: int, out_features: int, bias: bool = True, seed: int = 0) -> nn.Linear:
    torch.manual_seed(seed)
    return nn.Linear(in_features, out_features, bias=bias, dtype=F64)


@pytest.mark.parametrize("shape", [(10, 7), (6, 9), (8, 8)], ids=str)
@pytest.mark.parametrize("rank", [1, 2, 5])
def test_from_linear_is_the_eckart_young_optimum(shape: tuple[int, int], rank: int) -> None:
    in_features, out_features = shape
    linear = _linear(in_features, out_features)
    sigma = torch.linalg.svdvals(linear.weight.detach())
    layer = LowRankLinear.from_linear(linear, rank)
    assert layer.rank == rank
    error = linear.weight.detach() - layer.to_dense()
    frobenius_sq = torch.linalg.matrix_norm(error, "fro") ** 2
    spectral = torch.linalg.matrix_norm(error, 2)
    torch.testing.assert_close(frobenius_sq, (sigma[rank:] ** 2).sum(), rtol=1e-10, atol=0)
    torch.testing.assert_close(spectral, sigma[rank], rtol=1e-10, atol=0)
    # The factors carry the top-r singular values: the kept spectrum is exact.
    torch.testing.assert_close(torch.linalg.svdvals(layer.to_dense())[:rank], sigma[:rank], rtol=1e-10, atol=0)
    assert torch.equal(layer.bias, linear.bias)


@pytest.mark.parametrize("shape", [(5, 8), (8, 5), (6, 6)], ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_from_linear_full_rank_reconstructs_exactly(shape: tuple[int, int], bias: bool) -> None:
    linear = _linear(*shape, bias=bias)
    layer = LowRankLinear.from_linear(linear, min(shape))
    torch.testing.assert_close(layer.to_dense(), linear.weight.detach(), rtol=1e-12, atol=1e-14)
    x = torch.randn(3, 2, shape[0], dtype=F64)
    torch.testing.assert_close(layer(x), linear(x), rtol=1e-12, atol=1e-13)
    assert (layer.bias is None) == (not bias)


def test_from_linear_of_a_rank_deficient_weight_is_exact_at_its_rank() -> None:
    torch.manual_seed(1)
    weight = torch.randn(9, 2, dtype=F64) @ torch.randn(2, 7, dtype=F64)  # rank 2
    linear = nn.Linear(7, 9, dtype=F64)
    with torch.no_grad():
        linear.weight.copy_(weight)
    layer = LowRankLinear.from_linear(linear, 2)
    torch.testing.assert_close(layer.to_dense(), weight, rtol=1e-12, atol=1e-12)


def test_from_linear_keeps_dtype_and_is_trainable() -> None:
    layer = LowRankLinear.from_linear(nn.Linear(6, 4), 2)
    assert layer.U.dtype == torch.float32 and layer.U.requires_grad and layer.V.requires_grad
    assert layer.U.grad_fn is None  # a leaf, detached from the source weight


def test_from_linear_rejects_non_linear_and_bad_rank() -> None:
    with pytest.raises(TypeError, match="`linear`"):
        LowRankLinear.from_linear(nn.Conv1d(3, 3, 1), 1)
    with pytest.raises(TypeError, match="`linear`"):
        LowRankLinear.from_linear(torch.randn(3, 3), 1)
    with pytest.raises(ValueError, match="`rank`"):
        LowRankLinear.from_linear(nn.Linear(4, 3), 4)
    with pytest.raises(ValueError, match="`rank`"):
        LowRankLinear.from_linear(nn.Linear(4, 3), 0)


@pytest.mark.parametrize("bias", [True, False])
def test_to_linear_gives_identical_outputs(bias: bool) -> None:
    torch.manual_seed(0)
    layer = LowRankLinear(7, 5, 3, bias=bias, dtype=F64)
    linear = layer.to_linear()
    assert (linear.in_features, linear.out_features) == (7, 5)
    assert (linear.bias is None) == (not bias)
    x = torch.randn(4, 3, 7, dtype=F64)
    torch.testing.assert_close(linear(x), layer(x), rtol=1e-12, atol=1e-13)
    assert torch.linalg.matrix_rank(linear.weight.detach()).item() == 3
    # to_linear copies: training the dense layer leaves the low-rank one alone.
    with torch.no_grad():
        linear.weight.zero_()
    assert layer.to_dense().abs().sum() > 0


def test_round_trip_linear_low_rank_linear() -> None:
    torch.manual_seed(2)
    layer = LowRankLinear(8, 6, 4, dtype=F64)
    again = LowRankLinear.from_linear(layer.to_linear(), 4)
    torch.testing.assert_close(again.to_dense(), layer.to_dense(), rtol=1e-10, atol=1e-12)


def test_composition_equals_two_linear_layers() -> None:
    """The paper's block: Linear(in→H, bias=False) then Linear(H→out)."""
    torch.manual_seed(3)
    layer = LowRankLinear(9, 9, 3, dtype=F64)
    down = nn.Linear(9, 3, bias=False, dtype=F64)
    up = nn.Linear(3, 9, dtype=F64)
    with torch.no_grad():
        down.weight.copy_(layer.V)
        up.weight.copy_(layer.U)
        up.bias.copy_(layer.bias)
    x = torch.randn(11, 9, dtype=F64)
    torch.testing.assert_close(layer(x), up(down(x)), rtol=1e-13, atol=1e-13)
    assert sum(p.numel() for p in layer.parameters()) == 3 * 9 + 9 * 3 + 9


def test_initialisation_matches_the_two_linear_composition() -> None:
    """Factor bounds are nn.Linear's: 1/sqrt(fan_in) for V (fan_in = in) and for U and b (fan_in = H)."""
    torch.manual_seed(4)
    layer = LowRankLinear(400, 300, 25)
    assert layer.V.abs().max() <= 1 / 400**0.5
    assert layer.V.abs().max() > 0.9 / 400**0.5
    assert layer.U.abs().max() <= 1 / 25**0.5
    assert layer.bias.abs().max() <= 1 / 25**0.5


@pytest.mark.parametrize("bias", [True, False])
def test_both_intermediate_layouts_agree(bias: bool) -> None:
    """forward picks the layout of V x by rank; values and gradients must not depend on it."""
    torch.manual_seed(5)
    layer = LowRankLinear(10, 8, 3, bias=bias, dtype=F64)
    x = torch.randn(2, 6, 10, dtype=F64, requires_grad=True)
    results = []
    for threshold in (0, 1000):  # row-major intermediate, then transposed
        layer.transpose_below_rank = threshold
        layer.zero_grad(set_to_none=True)
        x.grad = None
        out = layer(x)
        out.pow(2).sum().backward()
        grads = [x.grad, *(p.grad for p in layer.parameters())]
        assert all(g.is_contiguous() for g in grads)
        results.append((out.detach(), grads))
    (out_a, grads_a), (out_b, grads_b) = results
    torch.testing.assert_close(out_a, out_b, rtol=1e-13, atol=1e-13)
    for a, b in zip(grads_a, grads_b, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
