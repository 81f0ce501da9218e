"""Calibrated compression: whitened truncation against float64 references, streaming, bad input."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from structnets import compress
from structnets.nn import LowRankConv2d

F64 = torch.float64


def _reference(weight: torch.Tensor, x: torch.Tensor, rank: int) -> torch.Tensor:
    """argmin over rank-r Ŵ of ‖(W − Ŵ)X‖_F for full-row-rank X: Ŵ = P_r P_rᵀ W, P from svd(W X).

    [W X]_r = P_r P_rᵀ W X lies in X's row space, so it is reached by Ŵ = P_r P_rᵀ W: a route with
    no Gram matrix, no Cholesky factor and no inverse.
    """
    left, _, _ = torch.linalg.svd(weight @ x, full_matrices=False)
    projector = left[:, :rank] @ left[:, :rank].T
    return projector @ weight


def _data(n: int, rows: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    mixing = torch.randn(n, n, generator=g, dtype=F64) * (0.6 ** torch.arange(n, dtype=F64))  # correlated inputs
    return torch.randn(rows, n, generator=g, dtype=F64) @ mixing.T


@pytest.mark.parametrize("rank", [1, 3, 5])
def test_whitened_truncation_is_the_output_error_minimiser(rank: int) -> None:
    torch.manual_seed(rank)
    layer = nn.Linear(10, 7, dtype=F64)
    x = _data(10, 60, seed=rank)
    report = compress(nn.Sequential(layer), rank=rank, calibration=x, ridge=0.0)
    new = report.model[0]
    weight, approx = layer.weight.detach(), new.to_dense().detach()
    torch.testing.assert_close(approx, _reference(weight, x.T, rank), rtol=1e-9, atol=1e-10)
    (row,) = report.layers
    direct = float(torch.linalg.matrix_norm((weight - approx) @ x.T))
    assert row.output_error == pytest.approx(direct / float(torch.linalg.matrix_norm(weight @ x.T)))
    assert row.relative_error == pytest.approx(
        float(torch.linalg.matrix_norm(weight - approx) / torch.linalg.matrix_norm(weight))
    )
    # Plain SVD is optimal for ‖W − Ŵ‖, not for the outputs: its output error is never smaller.
    plain_report = compress(nn.Sequential(layer), rank=rank)
    (plain,) = plain_report.layers
    plain_output = float(torch.linalg.matrix_norm((weight - plain_report.model[0].to_dense().detach()) @ x.T))
    assert direct <= plain_output * (1 + 1e-12)
    assert plain.output_error is None and plain.rows is None


def test_ridge_is_stated_and_moves_the_factors_by_little() -> None:
    torch.manual_seed(0)
    layer = nn.Linear(10, 7, dtype=F64)
    x = _data(10, 60, seed=0)
    exact = compress(nn.Sequential(layer), rank=3, calibration=x, ridge=0.0)
    ridged = compress(nn.Sequential(layer), rank=3, calibration=x)
    assert ridged.ridge == 1e-6 and ridged.calibrated and exact.ridge == 0.0
    torch.testing.assert_close(ridged.model[0].to_dense(), exact.model[0].to_dense(), rtol=1e-3, atol=1e-4)
    assert ridged.layers[0].output_error >= exact.layers[0].output_error * (1 - 1e-9)
    # Fewer rows than inputs: G₀ is singular; ridge 0 says so, the default ridge copes (3 rows:
    # W X has rank 3, so rank 3 fits it up to the ridge's pull towards W).
    with pytest.raises(ValueError, match=r"Gram matrix of layer '0' is singular.*`ridge`"):
        compress(nn.Sequential(layer), rank=3, calibration=x[:3], ridge=0.0)
    assert compress(nn.Sequential(layer), rank=3, calibration=x[:3]).layers[0].output_error < 1e-4


def _patches(x: torch.Tensor, conv: nn.Conv2d) -> torch.Tensor:
    """Every patch of the padded input as a column, by explicit slicing (c_in, kh, kw order)."""
    pad = conv.padding[0]
    padded = F.pad(x, (pad, pad, pad, pad), mode="reflect")
    k, s, d = conv.kernel_size[0], conv.stride[0], conv.dilation[0]
    span = d * (k - 1) + 1
    columns = []
    for n in range(x.shape[0]):
        for i in range(0, padded.shape[2] - span + 1, s):
            for j in range(0, padded.shape[3] - span + 1, s):
                columns.append(padded[n, :, i : i + span : d, j : j + span : d].reshape(-1))
    return torch.stack(columns, dim=1)


def test_calibrated_convolution_minimises_the_error_on_its_patches() -> None:
    torch.manual_seed(1)
    conv = nn.Conv2d(3, 6, 3, stride=2, padding=2, dilation=2, padding_mode="reflect", dtype=F64)
    x = torch.randn(4, 3, 9, 9, dtype=F64)
    report = compress(nn.Sequential(conv), rank=2, calibration=x, ridge=0.0)
    new = report.model[0]
    assert isinstance(new, LowRankConv2d) and new.rank == 2
    patches = _patches(x, conv)
    weight = conv.weight.detach().reshape(6, -1)
    torch.testing.assert_close(new.to_dense().flatten(1), _reference(weight, patches, 2), rtol=1e-8, atol=1e-10)
    assert report.layers[0].rows == patches.shape[1]
    # The factorised convolution computes Ŵ on every patch of the same geometry.
    out = new(x)
    expected = (new.to_dense().flatten(1) @ patches).reshape(6, 4, *out.shape[2:]).transpose(0, 1) + conv.bias[
        None, :, None, None
    ]
    torch.testing.assert_close(out, expected.detach(), rtol=1e-10, atol=1e-10)


def test_batches_stream_into_one_gram_matrix() -> None:
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(10, 12, dtype=F64), nn.Tanh(), nn.Linear(12, 5, dtype=F64))
    x = _data(10, 40, seed=2)
    one = compress(model, rank=3, calibration=x)
    listed = compress(model, rank=3, calibration=[x[:15], x[15:31], x[31:]])
    loader = compress(model, rank=3, calibration=DataLoader(TensorDataset(x, torch.zeros(40)), batch_size=16))
    for other in (listed, loader):
        for a, b in zip(one.layers, other.layers):
            assert a.rows == b.rows == 40
            assert a.output_error == pytest.approx(b.output_error, rel=1e-9)
        torch.testing.assert_close(other.model[0].to_dense(), one.model[0].to_dense(), rtol=1e-9, atol=1e-12)


def _small() -> nn.Sequential:
    torch.manual_seed(3)
    return nn.Sequential(nn.Linear(10, 12, dtype=F64), nn.ReLU(), nn.Linear(12, 5, dtype=F64))


@pytest.mark.parametrize(
    "calibration, error, message",
    [
        (torch.randn(5, 7, dtype=F64), ValueError, r"`calibration` batch 0 does not fit the model"),
        (torch.randn(5, 10, dtype=torch.float32), TypeError, r"`calibration` batch 0 has dtype torch.float32"),
        (torch.zeros(0, 10, dtype=F64), ValueError, r"`calibration` batch 0 is empty"),
        ([], ValueError, r"`calibration` is empty: it gave no batch"),
        (torch.full((3, 10), float("nan"), dtype=F64), ValueError, r"`calibration` batch 0 has non-finite"),
        ([torch.randn(3, 10, dtype=F64), torch.tensor([[float("inf")] * 10], dtype=F64)], ValueError, r"batch 1 has non-finite"),
        (torch.zeros(3, 10, dtype=F64, device="meta"), ValueError, r"`calibration` batch 0 is on meta"),
        ("data", TypeError, r"`calibration` must be a tensor, an iterable of batches or a DataLoader"),
        ([3.0], TypeError, r"`calibration` batch 0 must be a tensor"),
    ],
)  # fmt: skip
def test_bad_calibration_raises_naming_it_and_leaves_the_model_unchanged(calibration, error, message) -> None:
    model = _small()
    state = copy.deepcopy(model.state_dict())
    with pytest.raises(error, match=message):
        compress(model, rank=2, calibration=calibration, inplace=True)
    assert [type(m) for m in model] == [nn.Linear, nn.ReLU, nn.Linear]
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())
    assert model.training  # the train flag calibration switches off is restored


def test_non_finite_activations_name_the_layer() -> None:
    model = _small()
    with torch.no_grad():
        model[2].weight.zero_()
        model[0].weight.fill_(1e308)  # the first layer's outputs overflow to inf
    with pytest.raises(ValueError, match=r"non-finite inputs .* at layer '2'"):
        compress(model, rank=2, calibration=torch.ones(3, 10, dtype=F64))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"flops": 0.0}, r"`flops` must be a real number in \(0.0, 1.0\], got 0.0"),
        ({"flops": 1.5}, r"`flops` must be a real number in \(0.0, 1.0\], got 1.5"),
        ({"params": -0.1}, r"`params` must be a real number in \(0.0, 1.0\]"),
        ({"params": float("nan")}, r"`params` must be finite"),
        ({"flops": 0.5, "rank": 2}, r"exactly one of .* got rank=2, flops=0.5"),
        ({"rank": 2, "ridge": -1.0}, r"`ridge` must be a real number in \[0.0, inf\]"),
        ({"params": 0.01}, r"`params`=0.01 is below the least reachable fraction"),
        ({"params": 0.5, "method": "dlor"}, r"method='dlor' takes `rank`, `ratio` or `energy`"),
    ],
)
def test_bad_budgets_raise_naming_them(kwargs: dict, message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        compress(_small(), **kwargs)


def test_flops_budget_of_a_cnn_needs_data() -> None:
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Conv2d(8, 8, 3))
    with pytest.raises(ValueError, match=r"`flops` needs `calibration` or `example_input`.*\(0, 2\)"):
        compress(model, flops=0.5)
    report = compress(model, flops=0.5, example_input=torch.zeros(1, 3, 12, 12))
    assert not report.calibrated and report.layers[0].rows == 100 and report.layers[1].rows == 64
    assert 0.48 <= report.reached <= 0.5
