"""Review of structnets.compress: reduced precision, non-finite weights, hooks, attention dropout."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

import structnets
from structnets.compression import compress
from structnets.nn import LowRankMultiheadAttention


def _stored_matrix(layer: nn.Module) -> torch.Tensor:
    """U V of a factorised layer from its stored parameters, multiplied in float64."""
    if hasattr(layer, "U"):
        return layer.U.detach().double() @ layer.V.detach().double()
    u = layer.expand.weight.detach().double().flatten(1)
    v = layer.reduce.weight.detach().double().flatten(1)
    return u @ v


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("kind", ["linear", "conv2d"])
def test_reported_errors_are_those_of_the_stored_factors(dtype: torch.dtype, kind: str) -> None:
    # The new layer computes with U and V rounded to the layer's dtype: its matrix is U V of the
    # rounded factors, not the rounding of the float64 product. At full rank the truncation error
    # is 0 and all that is left is that rounding (bfloat16: about 2e-3).
    torch.manual_seed(0)
    if kind == "linear":
        layer: nn.Module = nn.Linear(20, 16).to(dtype)
        data = torch.randn(64, 20).to(dtype)
    else:
        layer = nn.Conv2d(3, 16, 3).to(dtype)
        data = torch.randn(4, 3, 6, 6).to(dtype)
    weight = layer.weight.detach().double().reshape(16, -1)
    for rank in (3, 16):
        for calibration in (None, data):
            report = compress(nn.Sequential(layer), rank=rank, calibration=calibration)
            row, new = report.layers[0], report.model[0]
            approx = _stored_matrix(new)
            measured = float((weight - approx).norm() / weight.norm())
            assert row.relative_error == pytest.approx(measured, rel=1e-9, abs=1e-15)
            if calibration is not None:
                rows = kinds_rows(layer, kind, data)
                out = float(((weight - approx) @ rows.t()).norm() / (weight @ rows.t()).norm())
                assert row.output_error == pytest.approx(out, rel=1e-9, abs=1e-15)
            if rank == 16 and dtype != torch.float32:
                assert row.relative_error > 1e-5  # the rounding of the factors is there and reported


def kinds_rows(layer: nn.Module, kind: str, data: torch.Tensor) -> torch.Tensor:
    if kind == "linear":
        return data.double()
    return nn.functional.unfold(data.double(), 3).transpose(1, 2).reshape(-1, 27)


def test_float64_error_is_eckart_young_exactly() -> None:
    torch.manual_seed(1)
    layer = nn.Linear(30, 12, dtype=torch.float64)
    sigma = torch.linalg.svdvals(layer.weight.detach())
    for rank in (1, 5, 11):
        row = compress(nn.Sequential(layer), rank=rank).layers[0]
        expected = math.sqrt(float(sigma[rank:].square().sum() / sigma.square().sum()))
        assert row.relative_error == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
@pytest.mark.parametrize("rule", [{"rank": 2}, {"params": 0.6}, {"energy": 0.9}])
def test_non_finite_weights_raise_naming_the_layer(bad: float, rule: dict[str, float]) -> None:
    # nan made the SVD raise torch's _LinAlgError; inf gave a model of nan outputs and
    # relative_error=nan without a word.
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))
    with torch.no_grad():
        model[2].weight[1, 3] = bad
    before = model[2].weight.detach().clone()
    with pytest.raises(ValueError, match=r"layer '2'.*non-finite"):
        compress(model, **rule)  # type: ignore[arg-type]
    assert torch.equal(model[2].weight, before) or bool(torch.isnan(before).any())
    # A layer left out by `exclude` does not matter.
    report = compress(model, rank=2, exclude="2")
    assert [row.name for row in report.layers] == ["0"]


def test_dlor_non_finite_weights_raise_naming_the_layer() -> None:
    model = nn.Sequential(nn.Linear(6, 6))
    with torch.no_grad():
        model[0].weight[0, 0] = float("inf")
    with pytest.raises(ValueError, match=r"layer '0'.*non-finite"):
        compress(model, method="dlor", rank=2)


def test_a_layer_with_a_forward_hook_is_left_alone_with_the_reason() -> None:
    # The factorised layer does not run the dense layer's hooks: before, the compressed model's
    # outputs at full rank differed from the model's by the hook's effect (1.18 here).
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8))
    model[0].register_forward_hook(lambda module, args, out: 2 * out)
    x = torch.randn(5, 8)
    report = compress(model, rank=8)
    assert torch.allclose(report.model(x), model(x), atol=1e-6)
    assert [row.name for row in report.layers] == ["2"]
    reason = dict(report.skipped)["0"]
    assert "hook" in reason


def test_spectral_norm_layers_are_left_alone() -> None:
    # spectral_norm computes weight = weight_orig / σ in a forward pre-hook; replacing the layer
    # by the factors of its stored `weight` attribute changed the outputs by 2.76.
    torch.manual_seed(3)
    model = nn.Sequential(nn.utils.spectral_norm(nn.Linear(8, 8)), nn.ReLU(), nn.Linear(8, 6)).eval()
    x = torch.randn(5, 8)
    for calibration in (None, x):
        report = compress(model, rank=6, calibration=calibration)
        with torch.no_grad():  # a grad-mode pass leaves a non-leaf `weight`, which deepcopy refuses
            assert torch.allclose(report.model(x), model(x), atol=1e-6)
        assert "hook" in dict(report.skipped)["0"]


def test_hooked_attention_is_not_unpacked() -> None:
    torch.manual_seed(4)
    attention = nn.MultiheadAttention(8, 2, batch_first=True).eval()

    class Wrap(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(8, 8)
            self.attn = attention

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.fc(x)
            return self.attn(h, h, h)[0]

    wrap = Wrap().eval()
    attention.register_forward_hook(lambda module, args, out: (out[0] * 3, out[1]))
    x = torch.randn(2, 5, 8)
    report = compress(wrap, rank=8)
    assert type(report.model.attn) is nn.MultiheadAttention
    assert "hook" in dict(report.skipped)["attn"]
    assert torch.allclose(report.model(x), wrap(x), atol=1e-5)


def test_attention_weights_in_training_mode_are_the_dropped_out_ones() -> None:
    # torch returns the attention weights after dropout (those multiplied with v); with the same
    # seed the outputs agreed and the weights differed by 0.22.
    torch.manual_seed(5)
    torch_attention = nn.MultiheadAttention(8, 2, dropout=0.3, batch_first=True, dtype=torch.float64).train()
    ours = LowRankMultiheadAttention.from_attention(torch_attention)
    q = torch.randn(2, 5, 8, dtype=torch.float64)
    for average in (True, False):
        torch.manual_seed(6)
        out1, weights1 = torch_attention(q, q, q, average_attn_weights=average)
        torch.manual_seed(6)
        out2, weights2 = ours(q, q, q, average_attn_weights=average)
        assert weights1 is not None and weights2 is not None
        torch.testing.assert_close(out2, out1, rtol=0, atol=1e-12)
        torch.testing.assert_close(weights2, weights1, rtol=0, atol=1e-12)
    assert structnets.compress is compress


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_dlor_reported_error_is_that_of_the_stored_alpha_u_v(dtype: torch.dtype) -> None:
    # to_dense() in bfloat16 rounds αI + UVᵀ once more: at rank 15 it reported 1.43e-3 for a
    # layer whose matrix αI + UVᵀ (exact in float64) is 2.03e-3 from W.
    torch.manual_seed(7)
    layer = nn.Linear(16, 16).to(dtype)
    with torch.no_grad():
        layer.weight.add_(3 * torch.eye(16, dtype=dtype))
    weight = layer.weight.detach().double()
    for rank in (3, 15):
        report = compress(nn.Sequential(layer), method="dlor", rank=rank)
        new = report.model[0]
        exact = (
            float(new.alpha.detach()) * torch.eye(16, dtype=torch.float64)
            + new.U.detach().double() @ new.V.detach().double().T
        )
        measured = float((weight - exact).norm() / weight.norm())
        assert report.layers[0].relative_error == pytest.approx(measured, rel=1e-9)
        assert report.layers[0].alpha == float(new.alpha.detach())


def test_skeleton_rejects_a_dlor_plan_for_a_layer_dlor_cannot_be() -> None:
    # A DLoR entry for a non-square linear or a convolution built DLoRLinear(in_features) there
    # (features=27 for a 3→6 3×3 convolution) without a word; rank N for DLoR raised without
    # naming `plan` or the layer.
    from structnets.compression import skeleton

    for model, kind in ((nn.Sequential(nn.Linear(8, 6)), "linear"), (nn.Sequential(nn.Conv2d(3, 6, 3)), "conv2d")):
        with pytest.raises(ValueError, match=r"`plan` layer '0'.*dlor"):
            skeleton(model, {"0": {"kind": kind, "method": "dlor", "rank": 2}})
    with pytest.raises(ValueError, match=r"`plan` layer '0' rank must be an int in \[1, 7\], got 8"):
        skeleton(nn.Sequential(nn.Linear(8, 8)), {"0": {"kind": "linear", "method": "dlor", "rank": 8}})
    # The plan compress gives still loads, DLoR and low rank side by side.
    torch.manual_seed(8)
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 6))
    report = compress(model, method="dlor", rank=7)
    again = skeleton(model, report.plan())
    again.load_state_dict(report.model.state_dict())
    x = torch.randn(3, 8)
    torch.testing.assert_close(again(x), report.model(x), rtol=0, atol=0)


def test_ratio_below_rank_one_is_said_in_the_note() -> None:
    # `ratio` promises at most that fraction of each weight's parameters; where even rank 1 costs
    # more (4×6 at ratio 0.05: 10 entries against 1.2) the layer keeps rank 1, and the row says so.
    torch.manual_seed(9)
    model = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 40), nn.Linear(40, 40, bias=False))
    report = compress(model, ratio=0.05)
    small, wide, square = report.layers
    assert (small.rank, wide.rank, square.rank) == (1, 1, 1)
    for row in (small, wide):
        assert row.params_after - row.out_features > 0.05 * row.in_features * row.out_features
        assert "ratio" in row.note and "rank 1" in row.note
    assert square.params_after == 80 <= 0.05 * 1600 and square.note == ""
    report = compress(nn.Sequential(nn.Linear(4, 4)), method="dlor", ratio=0.1)
    assert report.layers[0].rank == 1 and 2 * 4 + 1 > 0.1 * 16 and "ratio" in report.layers[0].note


def _encoder_and_input() -> tuple[nn.TransformerEncoder, torch.Tensor]:
    """A two-layer float64 encoder in eval mode (no dropout) and a batch for it, from the current seed."""
    encoder = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True, dtype=torch.float64),
        2,
        enable_nested_tensor=False,
    ).eval()
    return encoder, torch.randn(3, 7, 16, dtype=torch.float64)


def test_exported_attention_still_gives_its_dense_weights_and_densifies() -> None:
    # export() keeps a LowRankMultiheadAttention with Sequential(Linear, Linear) projections; its
    # in_proj_weight raised TypeError, in_proj_bias said None though every projection has a bias,
    # and export(..., densify=True) of that model raised.
    torch.manual_seed(10)
    encoder, x = _encoder_and_input()
    compressed = compress(encoder, rank=4).model
    plain = structnets.export(compressed)
    attention, original = plain.layers[0].self_attn, compressed.layers[0].self_attn
    assert isinstance(attention.q_proj, nn.Sequential)
    torch.testing.assert_close(attention.in_proj_weight, original.in_proj_weight, rtol=0, atol=1e-14)
    assert attention.in_proj_bias is not None
    torch.testing.assert_close(attention.in_proj_bias, original.in_proj_bias, rtol=0, atol=0)
    dense = structnets.export(plain, densify=True)
    assert type(dense.layers[0].self_attn) is nn.MultiheadAttention
    torch.testing.assert_close(dense(x), compressed(x), rtol=0, atol=1e-12)
    # A Sequential(Linear with bias, Linear) projection composes to W2 W1 x + W2 b1 + b2.
    layer = LowRankMultiheadAttention(4, 1, dtype=torch.float64)
    layer.out_proj = nn.Sequential(nn.Linear(4, 2, dtype=torch.float64), nn.Linear(2, 4, dtype=torch.float64))
    q = torch.randn(5, 1, 4, dtype=torch.float64)
    torch.testing.assert_close(layer.to_multihead_attention()(q, q, q)[0], layer(q, q, q)[0], rtol=0, atol=1e-12)


def test_export_of_an_encoder_with_compressed_feed_forward_runs_in_eval_mode() -> None:
    # With dense attention the exported layer takes torch's fused eval path, which reads
    # linear1.weight: the exported Sequential(Linear, Linear) has none (AttributeError).
    torch.manual_seed(11)
    encoder, x = _encoder_and_input()
    report = compress(encoder, rank=4, include="*linear*")
    assert {row.name.rsplit(".", 1)[1] for row in report.layers} == {"linear1", "linear2"}
    plain = structnets.export(report.model)
    assert isinstance(plain.layers[0].linear1, nn.Sequential)
    assert type(plain.layers[0].self_attn) is nn.MultiheadAttention
    assert sum(p.numel() for p in plain.parameters()) == report.model_params_after
    with torch.no_grad():
        torch.testing.assert_close(plain(x), report.model(x), rtol=0, atol=1e-12)
    # The dense encoder itself keeps its fused path (nothing of it was exported).
    assert structnets.export(encoder).layers[0].activation_relu_or_gelu == 1


def test_inplace_compression_of_an_attention_as_the_model_returns_the_compressed_one() -> None:
    # inplace=True on a bare nn.MultiheadAttention returned the input module, uncompressed, while
    # the report said rank 2 in all four projections (parameters 288 → 288).
    torch.manual_seed(12)
    attention = nn.MultiheadAttention(8, 2, dtype=torch.float64).eval()
    q = torch.randn(5, 2, 8, dtype=torch.float64)
    expected = compress(attention, rank=2)
    report = compress(attention, rank=2, inplace=True)
    assert isinstance(report.model, LowRankMultiheadAttention)
    assert report.model_params_after == expected.model_params_after == 4 * (2 * 16 + 8) < 288
    with torch.no_grad():
        torch.testing.assert_close(report.model(q, q, q)[0], expected.model(q, q, q)[0], rtol=0, atol=0)
        assert float((report.model(q, q, q)[0] - attention(q, q, q)[0]).abs().max()) > 1e-3


def test_export_keeps_the_hooks_of_the_layers_it_replaces() -> None:
    # A forward hook on a factorised layer was dropped by export: the outputs of export(model)
    # then differed from model.eval()'s by the hook's effect.
    torch.manual_seed(16)
    model = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Conv1d(8, 6, 1))
    compressed = compress(model, rank=3).model.eval()
    compressed[0].register_forward_hook(lambda module, args, out: 3 * out)
    compressed[2].register_forward_pre_hook(lambda module, args: (args[0] + 1,))
    x = torch.randn(2, 5, 8)

    def run(m: nn.Module) -> torch.Tensor:
        with torch.no_grad():
            return m[2](m[1](m[0](x)).transpose(1, 2))

    expected = run(compressed)
    for densify in (False, True):
        torch.testing.assert_close(run(structnets.export(compressed, densify=densify)), expected, rtol=0, atol=1e-5)
