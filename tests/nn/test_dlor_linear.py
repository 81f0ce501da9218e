"""DLoRLinear, RankOneLinear and the DLoR/rank-1 model builders: the maths beyond the conformance suite."""

from __future__ import annotations

import math

import pytest
import torch

from structnets.models import dlor_mlp, dlor_parameter_count, rank_one_mlp
from structnets.nn import DLoRBranches, DLoRLinear, RankOneLinear, TakeFirst, ZeroPad

F64 = torch.float64


def test_to_dense_is_alpha_identity_plus_uv_transpose() -> None:
    torch.manual_seed(0)
    layer = DLoRLinear(7, 2, alpha=-0.75, dtype=F64)
    with torch.no_grad():
        layer.alpha.fill_(1.3)
    expected = 1.3 * torch.eye(7, dtype=F64) + layer.U @ layer.V.T
    assert torch.equal(layer.to_dense(), expected)
    # rank of the update is r: the dense matrix minus αI has exactly 2 non-zero singular values
    singular = torch.linalg.svdvals(layer.to_dense() - 1.3 * torch.eye(7, dtype=F64))
    assert (singular > 1e-12).sum() == 2


def test_alpha_is_learnable_with_the_analytic_gradient() -> None:
    torch.manual_seed(1)
    layer = DLoRLinear(5, 1, dtype=F64)
    x = torch.randn(4, 5, dtype=F64)
    grad_out = torch.randn(4, 5, dtype=F64)
    layer(x).backward(grad_out)
    # y = αx + ..., so ∂⟨g, y⟩/∂α = ⟨g, x⟩
    torch.testing.assert_close(layer.alpha.grad, (grad_out * x).sum(), rtol=1e-12, atol=1e-12)
    assert layer.alpha.requires_grad and layer.alpha.shape == ()


def test_reset_parameters_restores_the_initial_alpha() -> None:
    layer = DLoRLinear(4, 2, alpha=0.25)
    with torch.no_grad():
        layer.alpha.fill_(9.0)
    layer.reset_parameters()
    assert layer.alpha.item() == 0.25


def test_rank_bounds_are_named_in_the_error() -> None:
    with pytest.raises(ValueError, match=r"`rank` must be an int in \[1, 5\], got 6"):
        DLoRLinear(6, 6)
    with pytest.raises(ValueError, match="`features`"):
        DLoRLinear(1, 1)


def test_rank_one_layer_is_blind_to_the_orthogonal_complement() -> None:
    torch.manual_seed(2)
    layer = RankOneLinear(3, 6, dtype=F64)
    v = layer.v.detach()
    x = torch.randn(10, 3, dtype=F64)
    w = torch.linalg.svd(v[None, :])[2][1:]  # (2, 3): an orthonormal basis of v⊥
    moved = x + torch.randn(10, 2, dtype=F64) @ w * 5
    torch.testing.assert_close(layer(moved), layer(x), rtol=0, atol=1e-12)
    assert torch.linalg.matrix_rank(layer.to_dense()) == 1


def test_rank_one_network_output_is_invariant_along_v_perp() -> None:
    """The orthogonal blind spot: f(x + s·w) = f(x) for w ⊥ v of the first layer, any depth and width."""
    torch.manual_seed(3)
    net = rank_one_mlp(2, 1, 32, 3, "tanh", dtype=F64)
    v = net[0].v.detach()
    w = torch.stack([-v[1], v[0]]) / torch.linalg.vector_norm(v)
    x = torch.rand(200, 2, dtype=F64) * 2 - 1
    for s in (-3.0, 0.1, 7.0):
        torch.testing.assert_close(net(x + s * w), net(x), rtol=0, atol=1e-12)
    # A DLoR network of the same rank is not blind: the same kind of move changes its output.
    dlor = dlor_mlp(2, 1, 32, 3, 1, "deep", "tanh", dtype=F64)
    first = dlor[1]
    v_dlor = first.V[:2, 0].detach()  # the rank-1 part sees only V's first two rows on padded inputs
    w_dlor = torch.stack([-v_dlor[1], v_dlor[0]]) / torch.linalg.vector_norm(v_dlor)
    assert (dlor(x + 0.5 * w_dlor) - dlor(x)).abs().max() > 1e-3


@pytest.mark.parametrize(
    ("width", "depth", "rank", "mode", "branches"),
    [
        (8, 1, 1, "deep", 1),
        (8, 3, 2, "summed", 3),
        (16, 5, 4, "deep", 1),
        (5, 2, 4, "summed", 1),
        (2, 1, 1, "summed", 6),
        (8, 3, 1, "parallel", 4),
        (5, 2, 4, "parallel", 1),
        (6, 1, 2, "parallel", 3),
    ],
)
def test_parameter_count_formula(width: int, depth: int, rank: int, mode: str, branches: int) -> None:
    model = dlor_mlp(2, 1, width, depth, rank, mode, branches=branches)
    assert sum(p.numel() for p in model.parameters()) == dlor_parameter_count(width, depth, rank, mode, branches)
    per_map = 2 * width * rank + 1
    if mode == "parallel":  # L layers of B biased branches, then B summed maps with one bias
        expected = depth * branches * (per_map + width) + branches * per_map + width
    else:
        expected = (depth + 1) * ((per_map if mode == "deep" else branches * per_map) + width)
    assert dlor_parameter_count(width, depth, rank, mode, branches) == expected


def test_the_removed_wide_alias_is_refused_naming_both_forms() -> None:
    for call in (
        lambda: dlor_mlp(2, 1, 6, 2, 1, "wide", "tanh", 3, dtype=F64),
        lambda: dlor_parameter_count(6, 2, 1, "wide", 3),
    ):
        with pytest.raises(ValueError, match=r"`mode`='wide' was removed: pass 'summed' .* or 'parallel'"):
            call()


def test_parallel_network_applies_sigma_per_branch_then_sums() -> None:
    """y_ℓ = Σ_k σ(M_k y_{ℓ−1} + b_k) for ℓ ≤ L, then Σ_k M_k y_L + b, against a float64 loop."""
    from structnets.nn import DLoRParallel

    torch.manual_seed(6)
    model = dlor_mlp(3, 2, 6, 2, 2, "parallel", "tanh", 3, dtype=F64)
    layers = [m for m in model if isinstance(m, DLoRParallel)]
    assert len(layers) == 2 and isinstance(model[-2], DLoRBranches)
    x = torch.randn(5, 3, dtype=F64)
    h = torch.cat([x, torch.zeros(5, 3, dtype=F64)], 1)
    for layer in layers:
        h = sum(torch.tanh(h @ b.to_dense().T + b.bias) for b in layer.branches)
    h = h @ model[-2].to_dense().T + model[-2].bias
    torch.testing.assert_close(model(x), h[:, :2], rtol=1e-12, atol=1e-12)
    # σ after the sum would be a different function: the branches are not a re-parametrisation
    summed = sum(b.to_dense() for b in layers[0].branches)
    z = torch.cat([x, torch.zeros(5, 3, dtype=F64)], 1)
    bias = sum(b.bias for b in layers[0].branches)
    assert (layers[0](z) - torch.tanh(z @ summed.T + bias)).abs().max() > 1e-3


def test_dlor_mlp_computes_pad_dlor_sigma_truncate() -> None:
    torch.manual_seed(4)
    for mode, branches in (("deep", 1), ("summed", 3)):
        model = dlor_mlp(3, 2, 6, 2, 2, mode, "tanh", branches, dtype=F64)
        assert isinstance(model[0], ZeroPad) and isinstance(model[-1], TakeFirst)
        maps = [m for m in model if isinstance(m, DLoRLinear | DLoRBranches)]
        assert len(maps) == 3
        x = torch.randn(5, 3, dtype=F64)
        h = torch.cat([x, torch.zeros(5, 3, dtype=F64)], 1)
        for index, layer in enumerate(maps):
            h = h @ layer.to_dense().T + layer.bias
            if index < 2:
                h = torch.tanh(h)
        torch.testing.assert_close(model(x), h[:, :2], rtol=1e-12, atol=1e-12)


def test_wide_layer_is_one_dlor_matrix_of_rank_b_times_r() -> None:
    torch.manual_seed(5)
    layer = DLoRBranches(9, 2, 3, dtype=F64)
    alpha = sum(b.alpha.item() for b in layer.branches)
    U = torch.cat([b.U for b in layer.branches], 1)
    V = torch.cat([b.V for b in layer.branches], 1)
    torch.testing.assert_close(layer.to_dense(), alpha * torch.eye(9, dtype=F64) + U @ V.T, rtol=1e-13, atol=1e-13)
    assert math.isclose(alpha, 1.0)  # branches start at α = 1/B: the layer starts near I + low rank
    x = torch.randn(4, 9, dtype=F64)
    torch.testing.assert_close(layer(x), x @ layer.to_dense().T + layer.bias, rtol=1e-12, atol=1e-12)


def test_one_branch_wide_equals_deep_up_to_parametrisation() -> None:
    deep = dlor_mlp(2, 1, 5, 2, 1, "deep", dtype=F64)
    wide = dlor_mlp(2, 1, 5, 2, 1, "summed", branches=1, dtype=F64)
    assert sum(p.numel() for p in deep.parameters()) == sum(p.numel() for p in wide.parameters())


@pytest.mark.parametrize(
    ("kwargs", "argument", "error"),
    [
        ({"rank": 0}, "rank", ValueError),
        ({"rank": 8}, "rank", ValueError),
        ({"width": 1}, "width", ValueError),
        ({"in_features": 9}, "width", ValueError),
        ({"mode": "tall"}, "mode", ValueError),
        ({"branches": 2}, "branches", ValueError),  # deep mode takes no branches
        ({"mode": "summed", "branches": 0}, "branches", ValueError),
        ({"mode": "parallel", "branches": 0}, "branches", ValueError),
        ({"depth": 0}, "depth", ValueError),
        ({"activation": "nope"}, "activation", ValueError),
        ({"rank": 1.0}, "rank", TypeError),
    ],
)
def test_dlor_mlp_rejects_bad_arguments(kwargs: dict, argument: str, error: type[Exception]) -> None:
    base = {"in_features": 2, "out_features": 1, "width": 8, "depth": 2, "rank": 2, "mode": "deep"}
    with pytest.raises(error, match=f"`{argument}`"):
        dlor_mlp(**{**base, **kwargs})


def test_parallel_layer_rejects_bad_arguments() -> None:
    from structnets.nn import DLoRParallel

    with pytest.raises(ValueError, match="`branches`"):
        DLoRParallel(6, 2, 0)
    with pytest.raises(ValueError, match="`rank`"):
        DLoRParallel(6, 6, 2)
    with pytest.raises(ValueError, match="`activation`"):
        DLoRParallel(6, 2, 2, "nope")
    with pytest.raises(TypeError, match="`bias`"):
        DLoRParallel(6, 2, 2, bias=1)
