"""Review of the factorised layers' constructors: validate before allocating, name the argument."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from structnets.nn import LowRankConv1d, LowRankConv2d, LowRankMultiheadAttention


def test_low_rank_conv_validates_rank_before_allocating() -> None:
    # rank=10**12 went to torch's allocator first (RuntimeError asking for 1.08e14 bytes).
    with pytest.raises(ValueError, match=r"`rank` must be an int in \[1, .*=8\], got 1000000000000"):
        LowRankConv2d(3, 8, 3, rank=10**12)
    with pytest.raises(ValueError, match=r"`out_channels`=10000000000.*parameters"):
        LowRankConv2d(3, 10**10, 3, rank=20)


def test_low_rank_conv_names_a_bad_kernel_size() -> None:
    # kernel_size=0 was blamed on `rank` ("in [1, ...=0], got 2"); a 2-D kernel for LowRankConv1d
    # built a layer that no input could run.
    with pytest.raises(ValueError, match=r"`kernel_size`.*got 0"):
        LowRankConv2d(3, 8, 0, rank=2)
    with pytest.raises(ValueError, match=r"`kernel_size`.*got \(3, 3\)"):
        LowRankConv1d(3, 8, (3, 3), rank=2)
    with pytest.raises(TypeError, match=r"`kernel_size`"):
        LowRankConv2d(3, 8, 2.5, rank=2)  # type: ignore[arg-type]
    layer = LowRankConv2d(3, 8, (1, 3), rank=3)
    assert layer.kernel_size == (1, 3) and layer.in_features == 9
    dense = nn.Conv2d(3, 8, (1, 3), dtype=torch.float64)
    exact = LowRankConv2d.from_conv(dense, 8)
    x = torch.randn(2, 3, 4, 5, dtype=torch.float64)
    torch.testing.assert_close(exact(x), dense(x), rtol=0, atol=1e-12)


def test_low_rank_attention_checks_dropout_bias_and_size() -> None:
    # dropout=True was taken as 1.0 and bias="no" as True; embed_dim=10**6 went to the allocator.
    with pytest.raises(TypeError, match=r"`dropout`"):
        LowRankMultiheadAttention(8, 2, dropout=True)
    with pytest.raises(TypeError, match=r"`bias`"):
        LowRankMultiheadAttention(8, 2, bias="no")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"`batch_first`"):
        LowRankMultiheadAttention(8, 2, batch_first="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"`embed_dim`=1000000.*parameters"):
        LowRankMultiheadAttention(10**6, 1)
    layer = LowRankMultiheadAttention(8, 2, dropout=0.25, bias=False, batch_first=True)
    assert layer.dropout == 0.25 and layer.q_proj.bias is None and layer.batch_first


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_from_linear_and_from_conv_reject_non_finite_weights(bad: float) -> None:
    # nan raised torch's _LinAlgError from the SVD; inf returned a layer whose matrix is nan.
    from structnets.nn import LowRankLinear

    linear = nn.Linear(6, 5)
    conv = nn.Conv2d(2, 6, 3)
    with torch.no_grad():
        linear.weight[0, 0] = bad
        conv.weight[0, 0, 0, 0] = bad
    with pytest.raises(ValueError, match=r"`linear`.*non-finite"):
        LowRankLinear.from_linear(linear, 2)
    with pytest.raises(ValueError, match=r"`conv`.*non-finite"):
        LowRankConv2d.from_conv(conv, 2)
    with torch.no_grad():
        linear.weight[0, 0] = 0.5
        conv.weight[0, 0, 0, 0] = 0.5
    full = LowRankLinear.from_linear(linear.double(), 5)
    torch.testing.assert_close(full.to_dense(), linear.weight, rtol=0, atol=1e-14)
    kernel = LowRankConv2d.from_conv(conv.double(), 6).to_dense()
    torch.testing.assert_close(kernel, conv.weight, rtol=0, atol=1e-14)


def test_from_factors_checks_the_factor_shapes() -> None:
    # V given transposed ((c_in·k·k) × r instead of r × (c_in·k·k)) has the same number of entries
    # and was reshaped into the kernel without a word: a wrong layer.
    torch.manual_seed(13)
    conv = nn.Conv2d(3, 6, 3, dtype=torch.float64)
    left, right = torch.randn(6, 2, dtype=torch.float64), torch.randn(2, 27, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"`right` must have shape \(2, 27\), got \(27, 2\)"):
        LowRankConv2d.from_factors(conv, left, right.t())
    with pytest.raises(ValueError, match=r"`left` must have shape \(6, r\)"):
        LowRankConv2d.from_factors(conv, left.t(), right)
    layer = LowRankConv2d.from_factors(conv, left, right)
    torch.testing.assert_close(layer.to_dense().flatten(1), left @ right, rtol=0, atol=1e-14)


def test_attention_refuses_integer_masks_as_torch_does() -> None:
    # A uint8 mask (torch's legacy 'masked' flag) was added to the scores as +1, masking nothing;
    # torch refuses masks that are neither bool nor floating.
    torch.manual_seed(14)
    torch_attention = nn.MultiheadAttention(8, 2, dtype=torch.float64).eval()
    ours = LowRankMultiheadAttention.from_attention(torch_attention)
    q = torch.randn(5, 2, 8, dtype=torch.float64)
    mask = torch.rand(5, 5) > 0.5
    mask[:, 0] = False  # no row fully masked
    with pytest.raises(TypeError, match=r"`attn_mask` must be bool or floating, got torch.uint8"):
        ours(q, q, q, attn_mask=mask.to(torch.uint8))
    with pytest.raises(TypeError, match=r"`key_padding_mask` must be bool or floating, got torch.int64"):
        ours(q, q, q, key_padding_mask=mask[:2].long())
    expected = torch_attention(q, q, q, attn_mask=mask)
    got = ours(q, q, q, attn_mask=mask)
    torch.testing.assert_close(got[0], expected[0], rtol=0, atol=1e-12)
    torch.testing.assert_close(got[1], expected[1], rtol=0, atol=1e-12)


def test_attention_checks_mask_shapes_as_torch_does() -> None:
    # A (S, N) key_padding_mask has as many entries as (N, S) and was reshaped into a scrambled
    # mask without a word; torch refuses it. A 3-D attn_mask must be (N·H, L, S).
    torch.manual_seed(15)
    torch_attention = nn.MultiheadAttention(8, 2, dtype=torch.float64).eval()
    ours = LowRankMultiheadAttention.from_attention(torch_attention)
    q = torch.randn(5, 2, 8, dtype=torch.float64)  # L = S = 5, N = 2
    padding = torch.zeros(2, 5, dtype=torch.bool)
    padding[0, 3:] = True
    with pytest.raises(ValueError, match=r"`key_padding_mask` must have shape \(2, 5\), got \(5, 2\)"):
        ours(q, q, q, key_padding_mask=padding.t().contiguous())
    with pytest.raises(ValueError, match=r"`attn_mask` must have shape \(5, 5\) or \(4, 5, 5\), got \(2, 5, 5\)"):
        ours(q, q, q, attn_mask=torch.zeros(2, 5, 5, dtype=torch.float64))
    for kwargs in ({"key_padding_mask": padding}, {"attn_mask": torch.randn(4, 5, 5, dtype=torch.float64)}):
        expected, got = torch_attention(q, q, q, **kwargs), ours(q, q, q, **kwargs)
        torch.testing.assert_close(got[0], expected[0], rtol=0, atol=1e-12)
    single = q[:, 0]  # unbatched: key_padding_mask (S,)
    expected, got = (
        torch_attention(single, single, single, key_padding_mask=padding[0]),
        ours(single, single, single, key_padding_mask=padding[0]),
    )
    torch.testing.assert_close(got[0], expected[0], rtol=0, atol=1e-12)
