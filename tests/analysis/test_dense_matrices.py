"""dense_matrices / hidden_representations reproduce the network they read."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from structnets.analysis import dense_matrices, hidden_representations, linear_layers
from structnets.models import mlp
from structnets.nn import LowRankLinear, Swish


class _DiagonalPlusLowRank(nn.Module):
    """A stand-in for a structured layer that only exposes ``to_dense()`` (αI + UVᵀ)."""

    def __init__(self, features: int, rank: int) -> None:
        super().__init__()
        self.alpha = nn.Parameter(torch.tensor(0.5, dtype=torch.float64))
        self.U = nn.Parameter(torch.randn(features, rank, dtype=torch.float64))
        self.V = nn.Parameter(torch.randn(features, rank, dtype=torch.float64))

    def to_dense(self) -> torch.Tensor:
        return self.alpha * torch.eye(self.U.shape[0], dtype=self.U.dtype) + self.U @ self.V.T

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.alpha * x + (x @ self.V) @ self.U.T


def test_product_of_matrices_is_the_linear_network() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(5, 8, bias=False, dtype=torch.float64),
        nn.Identity(),
        LowRankLinear(8, 8, 2, bias=False, dtype=torch.float64),
        _DiagonalPlusLowRank(8, 3),
        nn.Linear(8, 3, bias=False, dtype=torch.float64),
    )
    matrices = dense_matrices(model)
    assert [tuple(m.shape) for m in matrices] == [(8, 5), (8, 8), (8, 8), (3, 8)]
    x = torch.randn(10, 5, dtype=torch.float64)
    end_to_end = matrices[3] @ matrices[2] @ matrices[1] @ matrices[0]
    torch.testing.assert_close(model(x), x @ end_to_end.T, rtol=1e-12, atol=1e-12)
    assert torch.linalg.matrix_rank(matrices[1]).item() == 2
    assert [name for name, _ in linear_layers(model)] == ["0", "2", "3", "4"]


def test_mlp_with_bottleneck_and_copies_are_detached() -> None:
    torch.manual_seed(1)
    model = mlp(4, 2, width=12, depth=3, bottleneck=4, activation=Swish(learnable=True))
    matrices = dense_matrices(model)
    assert [tuple(m.shape) for m in matrices] == [(12, 4), (12, 12), (12, 12), (2, 12)]
    torch.testing.assert_close(matrices[1], model[2].to_dense().detach())
    assert not matrices[0].requires_grad
    matrices[0].zero_()
    assert model[0].weight.abs().sum() > 0


def test_hidden_representations_match_manual_forward() -> None:
    torch.manual_seed(2)
    model = mlp(3, 2, width=6, depth=2, activation="relu")
    x = torch.randn(9, 3)
    hidden = hidden_representations(model, x)
    assert len(hidden) == 2
    first = torch.relu(model[0](x))
    torch.testing.assert_close(hidden[0], first)
    torch.testing.assert_close(hidden[1], torch.relu(model[2](first)))


def test_unknown_parametrised_module_is_refused() -> None:
    model = nn.Sequential(nn.Conv1d(1, 2, 3), nn.ReLU())
    with pytest.raises(TypeError, match="Conv1d"):
        dense_matrices(model)
    with pytest.raises(TypeError, match="`model`"):
        dense_matrices("not a model")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`inputs`"):
        hidden_representations(nn.Sequential(nn.Linear(2, 2)), torch.ones(2))
