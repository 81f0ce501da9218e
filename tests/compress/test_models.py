"""Done-when models: a ResNet-18-shaped CNN, nn.TransformerEncoder and GPT-2 at flops=0.5, exported."""

from __future__ import annotations

import io

import _compress_models
import pytest
import torch
from _compress_models import encoder, gpt2, resnet18
from torch import nn

from structnets import compress, export
from structnets.compression import safe_globals, skeleton
from structnets.nn import LowRankConv2d, LowRankLinear, LowRankMultiheadAttention


def _weight_holders(model: nn.Module) -> list[str]:
    return [name for name, m in model.named_modules() if list(m.parameters(recurse=False))]


def _accounted(model: nn.Module, report) -> None:
    """Every module of the original that holds weights is compressed (a row) or named as skipped."""
    rows = {row.name for row in report.layers}
    skipped = {name for name, _ in report.skipped}
    for name in _weight_holders(model):
        attention = isinstance(model.get_submodule(name), nn.MultiheadAttention) and f"{name}.q_proj" in rows
        inside_attention = name.endswith("out_proj") and f"{name[: -len('out_proj')]}q_proj" in rows
        assert name in rows or name in skipped or attention or inside_attention, name


def _budget_met(report, target: float = 0.5) -> None:
    assert report.budget == ("flops", target)
    assert target - 0.02 <= report.reached <= target
    per_layer = sum(row.rows * row.flops_after for row in report.layers)
    assert report.budget_after == per_layer
    assert report.model_params_after < report.model_params_before
    assert report.model_flops_after < report.model_flops_before


def test_resnet18_compresses_at_half_the_flops_and_exports_keeping_the_factors() -> None:
    model = resnet18()
    x = torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    report = compress(model, flops=0.5, calibration=x)
    _accounted(model, report)
    _budget_met(report)
    assert {row.kind for row in report.layers} == {"conv2d", "linear"}
    assert all("BatchNorm2d" in reason for name, reason in report.skipped)
    assert any(isinstance(m, LowRankConv2d) for m in report.model.modules())
    compressed = report.model
    with torch.no_grad():
        y = compressed(x)
        plain = export(compressed)
        assert all(type(m).__module__.startswith("torch.nn") or m is plain or "_compress_models" in type(m).__module__
                   for m in plain.modules())  # fmt: skip
        assert sum(p.numel() for p in plain.parameters()) == report.model_params_after
        torch.testing.assert_close(plain(x), y, rtol=1e-5, atol=1e-6)
        dense = export(compressed, densify=True)
        assert sum(p.numel() for p in dense.parameters()) == report.model_params_before
        torch.testing.assert_close(dense(x), y, rtol=1e-4, atol=1e-5)
        exported = torch.export.export(plain, (x,))
        torch.testing.assert_close(exported.module()(x), y, rtol=1e-5, atol=1e-6)
        compiled = torch.compile(compressed, backend="aot_eager", fullgraph=True)
        torch.testing.assert_close(compiled(x), y, rtol=1e-5, atol=1e-6)
    # Full rank: the same outputs as the dense net.
    full = compress(model, rank=64, calibration=x).model  # the largest rank of any layer
    with torch.no_grad():
        torch.testing.assert_close(full(x), model(x), rtol=1e-4, atol=1e-5)


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors:UserWarning")  # the dense encoder's fast path
def test_transformer_encoder_runs_compressed_everywhere_the_original_ran() -> None:
    model = encoder()
    x = torch.randn(3, 7, 32, generator=torch.Generator().manual_seed(1))
    padding = torch.zeros(3, 7, dtype=torch.bool)
    padding[:, 5:] = True
    report = compress(model, flops=0.5, calibration=x)
    _accounted(model, report)
    _budget_met(report)
    compressed = report.model
    assert isinstance(compressed.layers[0].self_attn, LowRankMultiheadAttention)
    assert isinstance(compressed.layers[0].linear1, LowRankLinear)
    assert any("use_nested_tensor" in note for note in report.notes)
    # train mode, eval mode, eval without grad (torch's fast-path candidate), with a padding mask
    compressed.train()
    compressed(x).sum().backward()
    compressed.eval()
    compressed(x)
    with torch.no_grad():
        out = compressed(x, src_key_padding_mask=padding)
        assert out.shape == x.shape and torch.isfinite(out[:, :5]).all()
    # At full rank every output equals the dense encoder's (its nested-tensor path zeroes padded
    # positions, so those are compared where the mask keeps them).
    full = compress(model, rank=32).model
    with torch.no_grad():
        torch.testing.assert_close(full(x), model(x), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(
            full(x, src_key_padding_mask=padding)[:, :5], model(x, src_key_padding_mask=padding)[:, :5], rtol=1e-5,
            atol=1e-5,
        )  # fmt: skip
        plain = export(compressed)
        torch.testing.assert_close(plain(x), compressed(x), rtol=1e-5, atol=1e-6)
        exported = torch.export.export(plain, (x,))
        torch.testing.assert_close(exported.module()(x), compressed(x), rtol=1e-5, atol=1e-6)
        dense = export(compressed, densify=True)
        assert type(dense.layers[0].self_attn) is nn.MultiheadAttention
        torch.testing.assert_close(dense(x), compressed(x), rtol=1e-4, atol=1e-5)


def test_a_compressed_encoder_layer_with_dense_attention_runs_the_fused_path() -> None:
    model = encoder()
    x = torch.randn(2, 5, 32)
    report = compress(model, rank=32, include="*.linear*")  # attention left dense, FFN factorised
    assert all(type(layer.self_attn) is nn.MultiheadAttention for layer in report.model.layers)
    with torch.no_grad():  # eval + no grad: the encoder layer reads linear1.weight for its fused kernel
        torch.testing.assert_close(report.model(x), model(x), rtol=1e-5, atol=1e-5)


def test_gpt2_compresses_its_conv1d_projections_at_half_the_flops() -> None:
    pytest.importorskip("transformers")
    model = gpt2()
    ids = torch.randint(0, 100, (4, 16), generator=torch.Generator().manual_seed(2))
    report = compress(model, flops=0.5, calibration=ids)
    _accounted(model, report)
    _budget_met(report)
    assert {row.kind for row in report.layers} == {"hf-conv1d"}
    assert len(report.layers) == 8  # c_attn, c_proj, c_fc, mlp.c_proj per block
    reasons = dict(report.skipped)
    assert reasons["lm_head"] == "its parameters are tied to another module (transformer.wte.weight)"
    assert "lookup table" in reasons["transformer.wte"] and "normalisation" in reasons["transformer.ln_f"]
    with torch.no_grad():
        logits = report.model(ids).logits
        assert logits.shape == (4, 16, 100)
        plain = export(report.model)
        torch.testing.assert_close(plain(ids).logits, logits, rtol=1e-5, atol=1e-5)
        full = compress(model, rank=64).model
        torch.testing.assert_close(full(ids).logits, model(ids).logits, rtol=1e-4, atol=1e-5)
    # The state dict loads into the skeleton rebuilt from a fresh dense model and the plan.
    state = io.BytesIO()
    torch.save(report.model.state_dict(), state)
    state.seek(0)
    rebuilt = skeleton(gpt2(seed=5), report.plan())
    rebuilt.load_state_dict(torch.load(state, weights_only=True))
    with torch.no_grad():
        torch.testing.assert_close(rebuilt.eval()(ids).logits, logits, rtol=0, atol=0)


def test_state_dict_loads_into_the_rebuilt_skeleton_and_whole_models_load_weights_only() -> None:
    model = encoder()
    x = torch.randn(2, 6, 32)
    report = compress(model, flops=0.4, calibration=x)
    buffer = io.BytesIO()
    torch.save(report.model.state_dict(), buffer)
    buffer.seek(0)
    rebuilt = skeleton(encoder(seed=3), report.plan())
    rebuilt.load_state_dict(torch.load(buffer, weights_only=True))
    with torch.no_grad():
        torch.testing.assert_close(rebuilt.eval()(x), report.model(x), rtol=0, atol=0)
    # A whole pickled compressed CNN with weights_only=True and the documented safe globals.
    cnn = compress(resnet18(), ratio=0.3).model
    buffer = io.BytesIO()
    torch.save(cnn, buffer)
    buffer.seek(0)
    with torch.serialization.safe_globals([*safe_globals(), _compress_models.ResNet18, _compress_models.BasicBlock]):
        loaded = torch.load(buffer, weights_only=True)
    image = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(loaded(image), cnn(image), rtol=0, atol=0)
    # The CNN's state dict (reduce/expand convolutions) into its skeleton, through a JSON plan.
    import json

    report = compress(resnet18(), flops=0.5, calibration=torch.randn(2, 3, 32, 32))
    plan = json.loads(json.dumps(report.plan()))
    rebuilt = skeleton(resnet18(seed=4), plan)
    rebuilt.load_state_dict(report.model.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(rebuilt(image), report.model(image), rtol=0, atol=0)
    with pytest.raises(ValueError, match=r"`plan` layer 'conv1' has kind 'linear', the model's layer is 'conv2d'"):
        skeleton(resnet18(), {"conv1": {"kind": "linear", "method": "lowrank", "rank": 2}})
    with pytest.raises(ValueError, match=r"`plan` names layer 'nope'"):
        skeleton(encoder(), {"nope": {"kind": "linear", "method": "lowrank", "rank": 2}})


@pytest.mark.filterwarnings("ignore::FutureWarning")  # onnxscript's use of a torch pytree alias
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_onnx_export_of_compressed_models_runs_in_onnxruntime(tmp_path) -> None:
    pytest.importorskip("onnxscript")
    ort = pytest.importorskip("onnxruntime")
    for name, model, x in (
        ("resnet", resnet18(), torch.randn(2, 3, 32, 32)),
        ("encoder", encoder(), torch.randn(2, 6, 32)),
    ):
        compressed = compress(model, flops=0.5, calibration=x).model
        plain = export(compressed)
        path = tmp_path / f"{name}.onnx"
        with torch.no_grad():
            torch.onnx.export(plain, (x,), str(path), dynamo=True, verbose=False)
            expected = compressed(x).numpy()
        session = ort.InferenceSession(str(path))
        (out,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
        assert abs(out - expected).max() < 1e-4, name
