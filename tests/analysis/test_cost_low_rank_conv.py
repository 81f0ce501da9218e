"""cost() of convolutions and rank-r convolutions: counts from the definition, exact."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from structnets.analysis import cost
from structnets.nn import LowRankConv1d, LowRankConv2d


@pytest.mark.parametrize("stride, padding, dilation", [(1, 0, 1), (2, 1, 1), (1, 2, 2)])
def test_conv2d_and_its_rank_r_form_count_per_output_position(stride: int, padding: int, dilation: int) -> None:
    conv = nn.Conv2d(3, 8, 3, stride=stride, padding=padding, dilation=dilation)
    out = conv(torch.zeros(2, 3, 11, 11))
    positions = out.shape[0] * out.shape[2] * out.shape[3]
    dense = cost(conv, (2, 3, 11, 11))
    assert dense.macs == positions * 8 * 27 and dense.flops == 2 * dense.macs + positions * 8
    low = LowRankConv2d.from_conv(conv, 4)
    factored = cost(low, (2, 3, 11, 11))
    assert factored.macs == positions * 4 * (27 + 8)
    assert factored.flops == 2 * factored.macs + positions * 8
    assert factored.parameters == 4 * 27 + 8 * 4 + 8
    # A grouped convolution counts only its groups' channels.
    grouped = nn.Conv2d(4, 6, 3, groups=2, bias=False)
    assert cost(grouped, (1, 4, 5, 5)).macs == 9 * 6 * 2 * 9


def test_conv1d_and_its_rank_r_form() -> None:
    conv = nn.Conv1d(5, 7, 4, stride=2)
    low = LowRankConv1d.from_conv(conv, 3)
    length = (20 - 4) // 2 + 1
    assert cost(conv, (1, 5, 20)).macs == length * 7 * 20
    assert cost(low, (1, 5, 20)).macs == length * 3 * (20 + 7)
