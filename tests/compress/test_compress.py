"""structnets.compress: any module's nn.Linear layers to truncated-SVD low-rank or best-α DLoR layers."""

from __future__ import annotations

import io
import math

import pytest
import torch
from torch import nn

import structnets
from structnets import compress, export
from structnets.analysis import cost
from structnets.nn import DLoRLinear, LowRankLinear
from structnets.nn.dlor_linear import dlor_approximation

F64 = torch.float64


class Encoder(nn.Module):
    """A user-defined module: nested containers, a shared layer used twice, a non-square layer."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Linear(10, 16), nn.Tanh(), nn.Linear(16, 16))
        self.blocks = nn.ModuleDict({"mix": nn.Linear(16, 16), "down": nn.Linear(16, 12, bias=False)})
        self.shared = nn.Linear(12, 12)
        self.stack = nn.ModuleList([self.shared, nn.GELU(), self.shared])  # one layer, two places
        self.head = nn.Linear(12, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x)
        h = torch.relu(self.blocks["mix"](h)) + h
        h = self.blocks["down"](h)
        for layer in self.stack:
            h = layer(h)
        return self.head(h)


def _model(seed: int = 0) -> Encoder:
    torch.manual_seed(seed)
    return Encoder().to(F64)


def _input(rows: int = 7) -> torch.Tensor:
    return torch.randn(rows, 10, generator=torch.Generator().manual_seed(1), dtype=F64)


def _linear_names(model: nn.Module) -> list[str]:
    return [name for name, m in model.named_modules() if type(m) is nn.Linear]


def test_full_rank_lowrank_gives_the_same_outputs_and_leaves_the_original_alone() -> None:
    model = _model()
    x = _input()
    before = model(x)
    report = compress(model, "lowrank", rank=16)
    compressed = report.model
    assert compressed is not model
    assert _linear_names(model) == ["stem.0", "stem.2", "blocks.mix", "blocks.down", "shared", "head"]
    assert _linear_names(compressed) == ["head"]  # 12 → 1 cannot be factored
    assert [row.name for row in report.layers] == ["stem.0", "stem.2", "blocks.mix", "blocks.down", "shared"]
    assert [row.rank for row in report.layers] == [10, 16, 16, 12, 12]  # capped at min(in, out)
    assert report.skipped == (("head", "shape 1×12 cannot be factored (min dimension < 2)"),)
    torch.testing.assert_close(compressed(x), before, rtol=1e-12, atol=1e-12)
    assert all(row.relative_error < 1e-14 for row in report.layers)
    # The shared layer became one LowRankLinear, still shared by both places.
    assert compressed.shared is compressed.stack[0] is compressed.stack[2]
    assert isinstance(compressed.shared, LowRankLinear)


@pytest.mark.parametrize("rank", [1, 3, 7])
def test_report_errors_are_eckart_young_and_costs_match_analysis_cost(rank: int) -> None:
    model = _model(seed=rank)
    report = compress(model, rank=rank)
    for row in report.layers:
        old = model.get_submodule(row.name)
        new = report.model.get_submodule(row.name)
        sigma = torch.linalg.svdvals(old.weight.detach())
        expected = math.sqrt(float(sigma[row.rank :].square().sum() / sigma.square().sum()))
        assert row.relative_error == pytest.approx(expected, rel=1e-9, abs=1e-15)
        # parameters and FLOPs per input row as structnets.analysis.cost counts them
        old_cost, new_cost = cost(old, (1, row.in_features)), cost(new, (1, row.in_features))
        assert (row.params_before, row.flops_before) == (old_cost.parameters, old_cost.flops)
        assert (row.params_after, row.flops_after) == (new_cost.parameters, new_cost.flops)
    assert report.params_after == sum(row.params_after for row in report.layers)
    frame = report.to_frame()
    assert list(frame["name"]) == [row.name for row in report.layers]
    assert {"rank", "params_before", "params_after", "flops_before", "flops_after", "relative_error"} <= set(frame)


@pytest.mark.parametrize("ratio", [0.2, 0.5, 1.0])
def test_ratio_takes_the_largest_rank_within_the_parameter_budget(ratio: float) -> None:
    report = compress(_model(), ratio=ratio)
    for row in report.layers:
        m, n, r = row.out_features, row.in_features, row.rank
        assert r * (m + n) <= ratio * m * n or r == 1
        assert (r + 1) * (m + n) > ratio * m * n or r == min(m, n)


@pytest.mark.parametrize("ratio", [0.1, 0.3, 0.8])
def test_dlor_ratio_counts_u_v_and_alpha(ratio: float) -> None:
    report = compress(_model(), "dlor", ratio=ratio)
    for row in report.layers:
        if row.method != "dlor":
            assert "dlor falls back to low rank" in row.note and row.in_features != row.out_features
            continue
        n, r = row.in_features, row.rank
        assert 2 * n * r + 1 <= ratio * n * n or r == 1
        assert 2 * n * (r + 1) + 1 > ratio * n * n or r == n - 1


def test_new_layers_follow_requires_grad_and_train_flags() -> None:
    model = _model()
    model.stem[2].requires_grad_(False)
    model.blocks.eval()
    compressed = compress(model, rank=3).model
    assert not any(p.requires_grad for p in compressed.stem[2].parameters())
    assert all(p.requires_grad for p in compressed.stem[0].parameters())
    assert not compressed.blocks["mix"].training and compressed.stem[0].training


@pytest.mark.parametrize("energy", [0.3, 0.6, 0.9])
def test_energy_takes_the_smallest_rank_that_keeps_it(energy: float) -> None:
    torch.manual_seed(0)
    # A decaying spectrum, so that small ranks keep most of the energy.
    weight = (
        torch.randn(40, 8, dtype=F64) @ torch.diag(0.5 ** torch.arange(8, dtype=F64)) @ torch.randn(8, 30, dtype=F64)
    )
    model = nn.Sequential(nn.Linear(30, 40, dtype=F64))
    with torch.no_grad():
        model[0].weight.copy_(weight)
    report = compress(model, energy=energy)
    (row,) = report.layers
    sigma_sq = torch.linalg.svdvals(weight).square()
    kept = lambda r: float(sigma_sq[:r].sum() / sigma_sq.sum())  # noqa: E731
    assert row.replaced and kept(row.rank) >= energy
    assert row.rank == 1 or kept(row.rank - 1) < energy
    assert row.relative_error**2 <= 1 - energy + 1e-12


def test_energy_keeps_a_layer_dense_when_no_saving_rank_reaches_it() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 16, dtype=F64))  # a random square weight: flat spectrum
    report = compress(model, energy=0.999)
    (row,) = report.layers
    assert not row.replaced and row.method == "dense" and "kept dense" in row.note
    assert type(report.model[0]) is nn.Linear and row.params_after == row.params_before


def test_dlor_replaces_square_layers_with_the_best_alpha() -> None:
    model = _model()
    report = compress(model, "dlor", rank=3)
    replaced = [row.name for row in report.layers if row.method == "dlor"]
    assert replaced == ["stem.2", "blocks.mix", "shared"]
    # Non-square layers fall back to low rank (saying so) instead of being refused.
    fallback = {row.name: row for row in report.layers if row.method == "lowrank"}
    assert set(fallback) == {"stem.0", "blocks.down"}
    assert all("not square" in row.note and row.rank == 3 for row in fallback.values())
    assert isinstance(report.model.stem[0], LowRankLinear)
    assert {name for name, _ in report.skipped} == {"head"}
    for row in report.layers:
        if row.method != "dlor":
            continue
        layer = report.model.get_submodule(row.name)
        assert isinstance(layer, DLoRLinear) and layer.rank == 3
        weight = model.get_submodule(row.name).weight.detach()
        fit = dlor_approximation(weight, 3)
        assert row.alpha == pytest.approx(fit.alpha) and row.alpha == float(layer.alpha.detach())
        assert row.relative_error == pytest.approx(fit.error / float(torch.linalg.matrix_norm(weight)), rel=1e-9)
        assert fit.error <= fit.lowrank_error  # never worse than low rank at the same rank
        n = row.in_features
        assert row.params_after == 2 * n * 3 + 1 + n  # U, V, α and the bias


def test_exact_dlor_weights_compress_without_error() -> None:
    torch.manual_seed(5)
    model = nn.Sequential(nn.Linear(12, 12, dtype=F64), nn.Tanh(), nn.Linear(12, 12, dtype=F64))
    with torch.no_grad():
        for layer, alpha in ((model[0], 0.9), (model[2], -1.3)):
            layer.weight.copy_(
                alpha * torch.eye(12, dtype=F64) + torch.randn(12, 2, dtype=F64) @ torch.randn(2, 12, dtype=F64)
            )
    x = torch.randn(5, 12, dtype=F64)
    report = compress(model, "dlor", rank=2)
    assert [round(row.alpha, 9) for row in report.layers] == [0.9, -1.3]
    torch.testing.assert_close(report.model(x), model(x), rtol=1e-9, atol=1e-9)


def test_include_exclude_and_min_params_select_layers() -> None:
    model = _model()
    assert [r.name for r in compress(model, rank=2, include="blocks.*").layers] == ["blocks.mix", "blocks.down"]
    assert [r.name for r in compress(model, rank=2, include=["stem.*", "shared"], exclude="stem.0").layers] == [
        "stem.2",
        "shared",
    ]
    # min_params counts weight entries: 16·16 = 256 qualify, 10·16 = 160 and 12·12 = 144 do not.
    assert [r.name for r in compress(model, rank=2, min_params=200).layers] == ["stem.2", "blocks.mix"]


def test_inplace_replaces_the_layers_of_the_model_itself() -> None:
    model = _model()
    report = compress(model, rank=4, inplace=True)
    assert report.model is model and isinstance(model.stem[2], LowRankLinear)
    single = nn.Linear(6, 5)
    report = compress(single, rank=2)  # the model is itself a linear layer
    assert isinstance(report.model, LowRankLinear) and type(single) is nn.Linear


def test_multihead_attention_projections_are_compressed_and_still_run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.Unflatten(1, (1, 8)))
    attention = nn.MultiheadAttention(8, 2, batch_first=True)
    whole = nn.ModuleDict({"pre": model, "attn": attention})
    report = compress(whole, rank=8)  # full rank: the same outputs
    names = [r.name for r in report.layers]
    assert names == ["pre.0", "attn.q_proj", "attn.k_proj", "attn.v_proj", "attn.out_proj"]
    x = torch.randn(3, 8)
    h, h_new = whole["pre"](x), report.model["pre"](x)
    out, weights = whole["attn"](h, h, h)
    out_new, weights_new = report.model["attn"](h_new, h_new, h_new)
    torch.testing.assert_close(out_new, out, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(weights_new, weights, rtol=1e-5, atol=1e-6)
    assert type(whole["attn"]) is nn.MultiheadAttention  # the input is unchanged


def test_state_dict_round_trip_and_weights_only_load() -> None:
    model = _model()
    first = compress(model, ratio=0.4).model
    with torch.no_grad():  # move away from the SVD factors, as fine-tuning would
        for p in first.parameters():
            p.add_(0.01 * torch.randn_like(p))
    buffer = io.BytesIO()
    torch.save(first.state_dict(), buffer)
    buffer.seek(0)
    second = compress(_model(seed=9), ratio=0.4).model  # same structure, other weights
    second.load_state_dict(torch.load(buffer, weights_only=True))
    x = _input()
    assert torch.equal(second(x), first(x))


def test_export_keeps_the_factorisation_and_densify_multiplies_it_out() -> None:
    compressed = compress(_model(), "lowrank", ratio=0.5).model
    x = _input()
    plain = export(compressed)
    assert not any(isinstance(m, LowRankLinear) for m in plain.modules())
    assert {type(m) for m in plain.modules()} <= {Encoder, nn.Sequential, nn.ModuleDict, nn.ModuleList,
                                                  nn.Linear, nn.Tanh, nn.GELU}  # fmt: skip
    # Five factorised layers as Linear(in, r, bias=False) → Linear(r, out), the head dense.
    assert len(_linear_names(plain)) == 11
    assert sum(p.numel() for p in plain.parameters()) == sum(p.numel() for p in compressed.parameters())
    assert plain.stem[0][0].bias is None and plain.stem[0][0].out_features == compressed.stem[0].rank
    torch.testing.assert_close(plain(x), compressed(x), rtol=1e-12, atol=1e-12)
    dense = export(compressed, densify=True)
    assert len(_linear_names(dense)) == 6
    assert sum(p.numel() for p in dense.parameters()) == sum(p.numel() for p in _model().parameters())
    torch.testing.assert_close(dense(x), compressed(x), rtol=1e-12, atol=1e-12)
    with pytest.raises(TypeError, match="`densify` must be a bool"):
        export(compressed, densify=1)  # type: ignore[arg-type]


def test_public_names() -> None:
    assert structnets.compress is compress and structnets.export is export
    assert {"compress", "export", "CompressionReport", "LayerCompression"} <= set(structnets.__all__)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"rank": 0}, r"`rank` must be an int >= 1, got 0"),
        ({"rank": 17}, r"`rank` must be an int in \[1, 16\]"),
        ({"rank": 2.5}, r"`rank` must be an int"),
        ({"ratio": 0.0}, r"`ratio` must be a real number in \(0.0, 1.0\], got 0.0"),
        ({"ratio": 1.5}, r"`ratio` must be a real number in \(0.0, 1.0\], got 1.5"),
        ({"energy": 0.0}, r"`energy` must be a real number in \(0.0, 1.0\]"),
        ({"energy": 1.01}, r"`energy` must be a real number in \(0.0, 1.0\], got 1.01"),
        ({"energy": float("nan")}, r"`energy` must be finite"),
        (
            {"rank": 2, "ratio": 0.5},
            r"exactly one of `rank`, `ratio`, `energy`, `flops`, `params`; got rank=2, ratio=0.5",
        ),
        ({"ratio": 0.5, "energy": 0.9}, r"exactly one of .* got ratio=0.5, energy=0.9"),
        ({}, r"exactly one of `rank`, `ratio`, `energy`, `flops`, `params`; got none"),
        ({"rank": 2, "method": "svd"}, r"`method` must be one of \['dlor', 'lowrank'\], got 'svd'"),
        ({"rank": 2, "min_params": -1}, r"`min_params`"),
    ],
)
def test_bad_arguments_raise_naming_them(kwargs: dict, message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        compress(_model(), **kwargs)


def test_a_model_without_qualifying_layers_says_so() -> None:
    with pytest.raises(ValueError, match="has no layer that qualifies for method='lowrank'.*it holds no such layer"):
        compress(nn.Sequential(nn.ReLU(), nn.Tanh()), rank=1)
    with pytest.raises(ValueError, match=r"found: 0: shape 1×8 cannot be factored"):
        compress(nn.Sequential(nn.Linear(8, 1)), rank=1)
    with pytest.raises(ValueError, match=r"1: LayerNorm: a normalisation"):
        compress(nn.Sequential(nn.Linear(8, 1), nn.LayerNorm(1)), rank=1)
    with pytest.raises(ValueError, match="does not match include"):
        compress(_model(), rank=1, include="nothing.*")
    with pytest.raises(TypeError, match="`model`"):
        compress(torch.zeros(3), rank=1)  # type: ignore[arg-type]


@pytest.mark.parametrize("energy", [0.5, 0.8])
def test_dlor_energy_takes_the_smallest_rank_whose_best_alpha_keeps_it(energy: float) -> None:
    torch.manual_seed(6)
    # Identity plus a decaying low-rank part: the shape DLoR is made for.
    part = torch.randn(14, 6, dtype=F64) @ torch.diag(0.6 ** torch.arange(6, dtype=F64)) @ torch.randn(6, 14, dtype=F64)
    model = nn.Sequential(nn.Linear(14, 14, dtype=F64))
    with torch.no_grad():
        model[0].weight.copy_(2.0 * torch.eye(14, dtype=F64) + part)
    (row,) = compress(model, "dlor", energy=energy).layers
    weight = model[0].weight.detach()
    total = float(weight.square().sum())
    assert row.replaced and row.relative_error**2 <= 1 - energy + 1e-12
    assert row.rank == 1 or dlor_approximation(weight, row.rank - 1).error ** 2 > (1 - energy) * total


def test_inplace_with_attention_shared_layers_and_calibration_changes_the_model_itself() -> None:
    torch.manual_seed(7)
    shared = nn.Linear(8, 8, dtype=F64)
    attention = nn.MultiheadAttention(8, 2, batch_first=True, dtype=F64)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.first, self.attn, self.again = shared, attention, shared

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.first(x)
            return self.again(self.attn(h, h, h, need_weights=False)[0])

    model = Net()
    x = torch.randn(2, 5, 8, dtype=F64)
    before = model(x)
    report = compress(model, rank=8, calibration=x, inplace=True)  # full rank: same outputs
    assert report.model is model
    assert isinstance(model.first, LowRankLinear) and model.first is model.again
    assert type(model.attn).__name__ == "LowRankMultiheadAttention"
    assert isinstance(model.attn.q_proj, LowRankLinear)
    torch.testing.assert_close(model(x), before, rtol=1e-10, atol=1e-10)
    assert [row.rows for row in report.layers] == [20, 10, 10, 10, 10]  # the shared layer runs twice
