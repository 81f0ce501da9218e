"""Deep DLoR networks of width n + m + 2 (Chen et al., Theorems 5–8): the register construction is
exactly a narrow dense network with DLoR weights, its error against the shallow network is O(h²)
for tanh and 0 for ReLU, its error against the target falls with depth, and bad input is refused."""

from __future__ import annotations

import math

import pytest
import torch

from structnets.constructive import dlor_from_shallow, dlor_universal_approximator, fit_shallow, wide_dlor_from_shallow
from structnets.constructive.dlor_universality import ShallowNetwork, grid, register_depth
from structnets.models import dlor_parameter_count

F64 = torch.float64


def saddle(x: torch.Tensor) -> torch.Tensor:
    return x[:, 0] * x[:, 1]


def pair(x: torch.Tensor) -> torch.Tensor:
    return torch.stack([x[:, 0] * x[:, 1], torch.sin(x[:, 0] + 2 * x[:, 1])], dim=1)


X_TEST = grid(2, 41)


@pytest.mark.parametrize(("target", "m", "rank"), [(saddle, 1, 1), (saddle, 1, 2), (pair, 2, 1), (pair, 2, 2)])
def test_transfer_is_exact_weight_by_weight(target, m: int, rank: int) -> None:
    """Every dense weight of the narrow network is αI + UVᵀ of its DLoR layer, bit for bit."""
    shallow = fit_shallow(target, 2, 6, points_per_axis=16)
    built = dlor_from_shallow(shallow, rank=rank)
    N = 2 + m + 2
    assert built.width == N
    assert built.depth == register_depth(6, m, rank) == (6 + 1 + m if rank == 2 else 12 + m)
    assert built.parameters == dlor_parameter_count(N, built.depth, rank, "deep")
    layers = [mod for mod in built.network if hasattr(mod, "alpha")]
    linears = [mod for mod in built.narrow if isinstance(mod, torch.nn.Linear)]
    assert len(layers) == len(linears) == built.depth + 1
    assert linears[0].weight.shape == (N, 2) and linears[-1].weight.shape == (m, N)
    for layer, linear, factor in zip(layers, linears, built.factors, strict=True):
        rows, cols = linear.weight.shape
        dense = layer.to_dense()
        assert dense.shape == (N, N) and layer.rank == rank
        assert torch.equal(dense[:rows, :cols], linear.weight)
        assert torch.equal(dense, factor.dense())
        assert int(torch.linalg.matrix_rank(dense - float(layer.alpha.detach()) * torch.eye(N, dtype=F64))) <= rank
    with torch.no_grad():
        torch.testing.assert_close(built.network(X_TEST), built.narrow(X_TEST), rtol=0, atol=1e-12)


def test_relu_registers_are_exact() -> None:
    """ReLU at c = 1: every register stays on the linear piece, so the DLoR network equals g."""
    shallow = fit_shallow(pair, 2, 10, activation="relu", points_per_axis=16)
    for rank in (1, 2):
        built = dlor_from_shallow(shallow, rank=rank, h=1e-3)
        with torch.no_grad():
            gap = float((built.network(X_TEST) - shallow(X_TEST)).abs().max())
        assert gap < 1e-10


def test_tanh_register_error_is_second_order_in_h() -> None:
    """tanh is odd (σ''(0) = 0): halving h divides ‖F − g‖_∞ by 4, up to higher-order terms."""
    shallow = fit_shallow(saddle, 2, 12, points_per_axis=16)
    gaps = []
    for h in (2e-2, 1e-2, 5e-3):
        built = dlor_from_shallow(shallow, rank=2, h=h)
        with torch.no_grad():
            gaps.append(float((built.network(X_TEST) - shallow(X_TEST)).abs().max()))
    ratios = [gaps[0] / gaps[1], gaps[1] / gaps[2]]
    assert all(3.6 < r < 4.4 for r in ratios), (gaps, ratios)
    # the default h = 1e-10 (σ(0) = 0: no cancellation, rounding stays relative): C·h² + rounding
    built = dlor_from_shallow(shallow, rank=2)
    assert built.h == 1e-10
    with torch.no_grad():
        gap = float((built.network(X_TEST) - shallow(X_TEST)).abs().max())
    assert gap < 2 * gaps[-1] / 5e-3**2 * 1e-20 + 1e-12, gap


def test_wide_exact_computes_the_shallow_network() -> None:
    for target, neurons in ((saddle, 1), (saddle, 9), (pair, 2), (pair, 7)):
        shallow = fit_shallow(target, 2, neurons, points_per_axis=12)
        wide = wide_dlor_from_shallow(shallow)
        with torch.no_grad():
            torch.testing.assert_close(wide(X_TEST), shallow(X_TEST), rtol=0, atol=1e-12)
            torch.testing.assert_close(shallow.to_dense()(X_TEST), shallow(X_TEST), rtol=0, atol=1e-12)


def test_features_are_nested_and_the_fit_improves_with_neurons() -> None:
    """The first J features do not depend on the total; least squares over nested features
    (ridge 0) cannot have a larger residual on the fit grid."""
    fits = [fit_shallow(saddle, 2, j, points_per_axis=20, ridge=0.0) for j in (4, 8, 16, 32)]
    for small, large in zip(fits, fits[1:]):
        assert torch.equal(large.weight[: small.neurons], small.weight)
        assert torch.equal(large.bias[: small.neurons], small.bias)
    X = grid(2, 20)
    residual = [float((f(X)[:, 0] - saddle(X)).pow(2).sum()) for f in fits]
    assert all(b <= a * (1 + 1e-9) + 1e-20 for a, b in zip(residual, residual[1:])), residual


def test_error_falls_with_depth_and_beats_the_blind_spot() -> None:
    """Sup error against x₁x₂ falls with depth; the rank-1 DLoR network gets below the MSE floor
    4/135 that every network with a rank-1 first weight obeys."""
    f = saddle(X_TEST)[:, None]
    sup, mse, depth = [], [], []
    for neurons in (4, 16, 64):
        built = dlor_universal_approximator(saddle, 2, neurons, rank=1, points_per_axis=32)
        with torch.no_grad():
            out = built.network(X_TEST)
        sup.append(float((out - f).abs().max()))
        mse.append(float((out - f).pow(2).mean()))
        depth.append(built.depth)
    assert depth == [9, 33, 129]
    assert sup[0] > sup[1] > sup[2] and sup[2] < 2e-2, sup
    assert mse[2] < 4 / 135 / 100


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"target": 3.0}, "target"),
        ({"target": lambda x: torch.log(x[:, 0])}, "target"),
        ({"target": lambda x: torch.zeros(3)}, "target"),
        ({"neurons": 0}, "neurons"),
        ({"activation": "identity"}, "activation"),
        ({"activation": "cosine"}, "activation"),
        ({"rank": 3}, "rank"),
        ({"h": 0.0}, "h"),
        ({"h": 2.0}, "h"),
        ({"low": 1.0, "high": 1.0}, "high"),
        ({"scale": -1.0}, "scale"),
        ({"points_per_axis": 1}, "points_per_axis"),
        ({"ridge": -1e-3}, "ridge"),
        ({"in_features": 0}, "in_features"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict, name: str) -> None:
    arguments = {"target": saddle, "in_features": 2, "neurons": 3, "points_per_axis": 8} | kwargs
    with pytest.raises(ValueError, match=f"`{name}`"):
        dlor_universal_approximator(**arguments)


def test_bad_shallow_and_center_are_named() -> None:
    with pytest.raises(ValueError, match="`shallow`"):
        dlor_from_shallow("not a network")
    relu = fit_shallow(saddle, 2, 3, activation="relu", points_per_axis=8)
    with pytest.raises(ValueError, match="`center`"):
        dlor_from_shallow(relu, center=-1.0)  # ReLU is flat there
    nan = ShallowNetwork(relu.weight * math.nan, relu.bias, relu.coefficients, relu.offset, "relu")
    with pytest.raises(ValueError, match="`shallow`"):
        dlor_from_shallow(nan)
    with pytest.raises(ValueError, match="`shallow`"):
        wide_dlor_from_shallow(None)
