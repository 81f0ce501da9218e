"""LowRankConv1d/2d and LowRankMultiheadAttention: exact against torch's layers in float64, gradcheck."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from structnets.nn import LowRankConv1d, LowRankConv2d, LowRankLinear, LowRankMultiheadAttention

F64 = torch.float64


@pytest.mark.parametrize(
    "kwargs",
    [
        {"stride": 1, "padding": 0},
        {"stride": 2, "padding": 1, "dilation": 2},
        {"stride": (2, 1), "padding": (1, 2), "padding_mode": "reflect"},
        {"padding": "same", "padding_mode": "circular"},
        {"padding": "valid", "bias": False},
    ],
)
def test_full_rank_conv2d_equals_the_dense_convolution(kwargs: dict) -> None:
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 5, (3, 2), dtype=F64, **kwargs)
    layer = LowRankConv2d.from_conv(conv, 5)  # min(5, 3·3·2) = 5: exact
    x = torch.randn(2, 3, 8, 7, dtype=F64)
    torch.testing.assert_close(layer(x), conv(x), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(layer.to_dense(), conv.weight, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(layer.weight, conv.weight, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(layer.to_conv()(x), conv(x), rtol=1e-12, atol=1e-12)
    plain = layer.export()
    assert [type(m) for m in plain] == [nn.Conv2d, nn.Conv2d] and plain[1].kernel_size == (1, 1)
    assert torch.equal(plain(x), layer(x))  # the same two convolutions
    torch.testing.assert_close(layer(x[0]), conv(x[0]), rtol=1e-12, atol=1e-12)  # unbatched


@pytest.mark.parametrize("rank", [1, 2, 4])
def test_truncated_conv_is_the_eckart_young_optimum_of_the_kernel_matrix(rank: int) -> None:
    torch.manual_seed(rank)
    conv = nn.Conv1d(4, 6, 3, stride=2, dtype=F64)
    layer = LowRankConv1d.from_conv(conv, rank)
    matrix = conv.weight.detach().reshape(6, -1)
    sigma = torch.linalg.svdvals(matrix)
    error = torch.linalg.matrix_norm(layer.to_dense().detach().reshape(6, -1) - matrix)
    assert float(error) == pytest.approx(float(sigma[rank:].square().sum().sqrt()), rel=1e-10)
    x = torch.randn(2, 4, 11, dtype=F64)
    expected = nn.functional.conv1d(x, layer.to_dense(), conv.bias, stride=2)
    torch.testing.assert_close(layer(x), expected, rtol=1e-12, atol=1e-12)
    assert sum(p.numel() for p in layer.parameters()) == rank * (12 + 6) + 6


def test_low_rank_conv_gradcheck_and_validation() -> None:
    torch.manual_seed(3)
    layer = LowRankConv2d(2, 3, 3, 2, padding=1, dtype=F64)
    x = torch.randn(1, 2, 4, 4, dtype=F64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda inp: layer(inp), (x,))
    with pytest.raises(
        ValueError, match=r"`rank` must be an int in \[1, min\(out_channels, in_channels·∏kernel_size\)=3\], got 4"
    ):
        LowRankConv2d(2, 3, 3, 4)
    with pytest.raises(ValueError, match="`rank` must be an int >= 1"):
        LowRankConv2d(2, 3, 3, 0)
    with pytest.raises(ValueError, match="groups=1"):
        LowRankConv2d.from_conv(nn.Conv2d(4, 4, 3, groups=2), 2)
    with pytest.raises(TypeError, match="must be a torch.nn.Conv2d, got Conv1d"):
        LowRankConv2d.from_conv(nn.Conv1d(4, 4, 3), 2)


def test_low_rank_linear_weight_is_its_dense_matrix() -> None:
    layer = LowRankLinear(6, 4, 2, dtype=F64)
    assert torch.equal(layer.weight, layer.to_dense()) and layer.weight.shape == (4, 6)


def _pair(batch_first: bool, kdim: int | None = None, bias: bool = True):
    torch.manual_seed(4)
    mha = nn.MultiheadAttention(8, 2, bias=bias, kdim=kdim, vdim=kdim, batch_first=batch_first, dtype=F64).eval()
    return mha, LowRankMultiheadAttention.from_attention(mha)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights, average", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("masks", ["none", "bool", "float", "padding", "both", "3d", "causal"])
def test_attention_equals_torch_multihead_attention(
    batch_first: bool, need_weights: bool, average: bool, masks: str
) -> None:
    mha, layer = _pair(batch_first)
    g = torch.Generator().manual_seed(5)
    n, length, source = 3, 4, 4 if masks == "causal" else 6
    shape = (n, length, 8) if batch_first else (length, n, 8)
    kshape = (n, source, 8) if batch_first else (source, n, 8)
    q, k, v = (
        torch.randn(shape, generator=g, dtype=F64),
        torch.randn(kshape, generator=g, dtype=F64),
        torch.randn(kshape, generator=g, dtype=F64),
    )
    kwargs: dict = {}
    padding = torch.zeros(n, source, dtype=torch.bool)
    padding[0, -2:] = True
    if masks == "bool":
        kwargs["attn_mask"] = torch.rand(length, source, generator=g) > 0.7
        kwargs["attn_mask"][:, 0] = False
    elif masks == "float":
        kwargs["attn_mask"] = torch.randn(length, source, generator=g, dtype=F64)
    elif masks == "padding":
        kwargs["key_padding_mask"] = padding
    elif masks == "both":
        kwargs["attn_mask"] = torch.zeros(length, source, dtype=torch.bool)
        kwargs["attn_mask"][1, 2] = True
        kwargs["key_padding_mask"] = padding
    elif masks == "3d":
        kwargs["attn_mask"] = torch.randn(n * 2, length, source, generator=g, dtype=F64)
    elif masks == "causal":
        kwargs["attn_mask"] = nn.Transformer.generate_square_subsequent_mask(length, dtype=F64)
        kwargs["is_causal"] = True
    expected = mha(q, k, v, need_weights=need_weights, average_attn_weights=average, **kwargs)
    got = layer(q, k, v, need_weights=need_weights, average_attn_weights=average, **kwargs)
    torch.testing.assert_close(got[0], expected[0], rtol=1e-10, atol=1e-12)
    if need_weights:
        torch.testing.assert_close(got[1], expected[1], rtol=1e-10, atol=1e-12)
    else:
        assert got[1] is None and expected[1] is None


def test_attention_unbatched_kdim_no_bias_and_back_to_torch() -> None:
    mha, layer = _pair(False, kdim=5, bias=False)
    q, kv = torch.randn(4, 8, dtype=F64), torch.randn(6, 5, dtype=F64)
    for a, b in zip(layer(q, kv, kv), mha(q, kv, kv)):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    back = layer.to_multihead_attention()
    torch.testing.assert_close(back(q, kv, kv)[0], mha(q, kv, kv)[0], rtol=1e-12, atol=1e-12)
    assert layer.in_proj_bias is None and not layer._qkv_same_embed_dim
    x = torch.randn(3, 2, 8, dtype=F64, requires_grad=True)
    square = LowRankMultiheadAttention(8, 2, dtype=F64)
    assert torch.autograd.gradcheck(lambda inp: square(inp, inp, inp)[0], (x,))
    with pytest.raises(ValueError, match="add_bias_kv"):
        LowRankMultiheadAttention.from_attention(nn.MultiheadAttention(8, 2, add_bias_kv=True))
    with pytest.raises(ValueError, match="divisible"):
        LowRankMultiheadAttention(8, 3)
