"""DLoRLinear.from_linear: the best α and a truncated SVD of W − αI (dlor_approximation)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from structnets.nn import DLoRLinear, LowRankLinear, RankOneLinear
from structnets.nn.dlor_linear import dlor_approximation

F64 = torch.float64


def _linear(weight: torch.Tensor, bias: bool = True) -> nn.Linear:
    linear = nn.Linear(weight.shape[1], weight.shape[0], bias=bias, dtype=weight.dtype)
    with torch.no_grad():
        linear.weight.copy_(weight)
    return linear


def _profile(W: torch.Tensor, rank: int, alpha: float) -> float:
    """f(α) = Σ_{i>r} σ_i(W − αI)², the error² of the best rank-r part at this α (Eckart–Young)."""
    eye = torch.eye(W.shape[0], dtype=W.dtype)
    return float(torch.linalg.svdvals(W - alpha * eye)[rank:].square().sum())


@pytest.mark.parametrize("features, rank, alpha", [(6, 2, -0.7), (10, 3, 2.5), (9, 8, 0.3)])
def test_an_exact_dlor_matrix_is_recovered(features: int, rank: int, alpha: float) -> None:
    torch.manual_seed(features)
    U, V = torch.randn(features, rank, dtype=F64), torch.randn(features, rank, dtype=F64)
    W = alpha * torch.eye(features, dtype=F64) + U @ V.T
    layer = DLoRLinear.from_linear(_linear(W), rank)
    assert layer.rank == rank
    assert abs(float(layer.alpha.detach()) - alpha) < 1e-9
    torch.testing.assert_close(layer.to_dense().detach(), W, rtol=0, atol=1e-10)


@pytest.mark.parametrize("seed", range(6))
def test_symmetric_weight_gets_the_global_optimum(seed: int) -> None:
    # For symmetric W, f(α) = sum of the N − r smallest (λ_i − α)²; the joint minimum over α and
    # the kept set is the least spread of any N − r consecutive sorted eigenvalues (α = their mean).
    torch.manual_seed(seed)
    features, rank = 7, 1 + seed % 5
    A = torch.randn(features, features, dtype=F64)
    W = A + A.T
    eigenvalues = torch.linalg.eigvalsh(W)
    size = features - rank
    windows = [eigenvalues[k : k + size] for k in range(features - size + 1)]
    optimum = min(float((w - w.mean()).square().sum()) for w in windows)
    fit = dlor_approximation(W, rank)
    assert fit.error**2 == pytest.approx(optimum, rel=1e-9, abs=1e-12)
    layer = DLoRLinear.from_linear(_linear(W), rank)
    error = torch.linalg.matrix_norm(W - layer.to_dense().detach()) ** 2
    assert float(error) == pytest.approx(optimum, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_general_weight_is_no_worse_than_a_fine_grid_or_plain_low_rank(seed: int) -> None:
    torch.manual_seed(100 + seed)
    features = 3 + seed % 4
    rank = 1 + seed % (features - 1)
    W = torch.randn(features, features, dtype=F64) + float(torch.randn(())) * torch.eye(features, dtype=F64)
    fit = dlor_approximation(W, rank)
    # The returned factors realise the reported error, which is f at the returned α.
    dense = fit.alpha * torch.eye(features, dtype=F64) + fit.U @ fit.V.T
    assert float(torch.linalg.matrix_norm(W - dense)) == pytest.approx(fit.error, rel=1e-10)
    assert fit.error**2 == pytest.approx(_profile(W, rank, fit.alpha), rel=1e-10)
    # The optimum lies in |α| ≤ ‖W‖₂ + ‖W‖_F (beyond, every σ_i(W − αI) > ‖W‖_F): scan it.
    limit = float(torch.linalg.matrix_norm(W, 2) + torch.linalg.matrix_norm(W))
    grid = min(_profile(W, rank, float(a)) for a in torch.linspace(-limit, limit, 2001, dtype=F64))
    assert fit.error**2 <= grid * (1 + 1e-12)
    # α = 0 is plain truncated SVD at the same rank; α = tr(W)/N the r = 0 optimum.
    assert fit.error <= fit.lowrank_error * (1 + 1e-12)
    sigma = torch.linalg.svdvals(W)
    assert fit.lowrank_error == pytest.approx(float(sigma[rank:].square().sum().sqrt()), rel=1e-12)
    assert fit.error**2 <= _profile(W, rank, float(torch.trace(W)) / features) * (1 + 1e-12)


def test_fixed_alpha_is_used_and_the_rest_is_eckart_young() -> None:
    torch.manual_seed(3)
    W = torch.randn(6, 6, dtype=F64)
    layer = DLoRLinear.from_linear(_linear(W), 2, alpha=0.25)
    assert float(layer.alpha.detach()) == 0.25 and layer.initial_alpha == 0.25
    residual = W - layer.to_dense().detach()
    assert float(residual.square().sum()) == pytest.approx(_profile(W, 2, 0.25), rel=1e-10)


def test_from_linear_copies_bias_keeps_dtype_and_gives_the_same_outputs_at_exact_weights() -> None:
    torch.manual_seed(4)
    W = 1.5 * torch.eye(5) + torch.randn(5, 1) @ torch.randn(1, 5)  # float32, exactly DLoR rank 1
    linear = _linear(W)
    layer = DLoRLinear.from_linear(linear, 1)
    assert layer.U.dtype == torch.float32 and layer.U.requires_grad and layer.U.grad_fn is None
    assert torch.equal(layer.bias, linear.bias)
    x = torch.randn(3, 5)
    torch.testing.assert_close(layer(x), linear(x), rtol=1e-5, atol=1e-5)
    assert DLoRLinear.from_linear(_linear(W, bias=False), 1).bias is None


def test_from_linear_rejects_bad_input_naming_it() -> None:
    with pytest.raises(ValueError, match="`linear` must be square"):
        DLoRLinear.from_linear(nn.Linear(4, 3), 1)
    with pytest.raises(TypeError, match="`linear`"):
        DLoRLinear.from_linear(nn.Conv1d(3, 3, 1), 1)
    with pytest.raises(ValueError, match=r"`rank` must be an int in \[1, 3\], got 4"):
        DLoRLinear.from_linear(nn.Linear(4, 4), 4)
    with pytest.raises(ValueError, match="`rank`"):
        DLoRLinear.from_linear(nn.Linear(4, 4), 0)
    with pytest.raises(ValueError, match="`alpha`"):
        DLoRLinear.from_linear(nn.Linear(4, 4), 1, alpha=float("nan"))
    with pytest.raises(ValueError, match="`weight` must be a square"):
        dlor_approximation(torch.zeros(3, 4), 1)


@pytest.mark.parametrize(
    "layer",
    [
        LowRankLinear(7, 5, 3, dtype=F64),
        DLoRLinear(6, 2, alpha=0.5, dtype=F64),
        RankOneLinear(4, 6, dtype=F64),
        LowRankLinear(5, 4, 2, bias=False, dtype=F64),
    ],
    ids=["lowrank", "dlor", "rank-one", "lowrank-no-bias"],
)
def test_export_is_one_name_and_to_linear_stays_its_alias(layer: nn.Module) -> None:
    exported, alias = layer.export(), layer.to_linear()
    assert type(exported) is nn.Linear and type(alias) is nn.Linear
    assert torch.equal(exported.weight, alias.weight)
    assert torch.equal(exported.weight, layer.to_dense().detach())
    x = torch.randn(4, 2, exported.in_features, dtype=F64)
    torch.testing.assert_close(exported(x), layer(x), rtol=1e-12, atol=1e-13)
    with torch.no_grad():  # a copy: changing the export leaves the layer alone
        exported.weight.zero_()
    assert layer.to_dense().abs().sum() > 0
