"""Convolutional 1-Lipschitz ResNets: lift, stages of gradient-step convolutions, down-sampling, head."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from .._validation import check_choice, check_int, check_real
from ..nn import (
    FlatToImage,
    GradientStepConv2d,
    GradientStepResidual,
    InvertibleDownsample,
    L2NormPool2d,
    NormConstrainedConv2d,
    OrthogonalLinear,
)
from ..nn._conv_common import CONV_BOUNDS

HEADS: tuple[str, ...] = ("flatten", "pool")


def _ints(name: str, values: object, low: int) -> tuple[int, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or len(values) == 0:
        raise TypeError(f"`{name}` must be a non-empty sequence of ints, got {values!r}")
    return tuple(check_int(name, v, low=low) for v in values)


def lipschitz_convnet(
    in_channels: int,
    num_classes: int,
    image_size: int | tuple[int, int] = 28,
    channels: Sequence[int] = (16, 32, 64),
    depths: Sequence[int] = (0, 1, 2),
    hidden_channels: Sequence[int] | None = None,
    kernel_size: int = 3,
    padding_mode: str = "zeros",
    head: str = "flatten",
    head_width: int | None = 256,
    head_depth: int = 2,
    step: float = 1.0,
    learnable_step: bool = True,
    size_specific: bool = True,
    flat_input: bool = False,
    bound: str = "exact",
    head_bound: str | None = None,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> nn.Sequential:
    """Build a convolutional ResNet that is 1-Lipschitz in ℓ₂ by construction.

    Layout (an ``nn.Sequential``, so :func:`structnets.analysis.lipschitz_upper_bound` multiplies the
    certified constants of its layers and :func:`structnets.export` turns it into plain torch):

    * ``FlatToImage`` (only with ``flat_input``: rows of ``(N, C·H·W)``);
    * lift ``NormConstrainedConv2d(in_channels → channels[0], kernel_size)`` at full resolution;
    * for each stage s: ``depths[s]`` × ``GradientStepConv2d(channels[s], hidden_channels[s])``
      (x − τWᵀReLU(Wx + b), τ‖W‖_op² ≤ 2; Murari, Furuya, Schönlieb, NeurIPS 2025, with W a
      convolution), then, except after the last stage, ``InvertibleDownsample(channels[s] →
      channels[s+1])`` (pixel-unshuffle 2× then an orthogonal 1×1 convolution);
    * head ``"flatten"``: ``nn.Flatten`` (an isometry), then ``OrthogonalLinear`` to ``head_width``,
      ``head_depth`` dense ``GradientStepResidual`` blocks and ``OrthogonalLinear`` to
      ``num_classes`` (``head_width=None``: one ``OrthogonalLinear`` straight to the classes);
      ``"pool"``: :class:`L2NormPool2d` then the same dense part on ``channels[-1]`` features.

    Every layer is certified ≤ 1, so Lip(f) ≤ 1.

    Args:
        in_channels: image channels (1 for MNIST).
        num_classes: outputs.
        image_size: H (= W) or (H, W); each stage but the last halves it (must stay even).
        channels: channels of each stage.
        depths: residual blocks per stage (≥ 0; as many entries as ``channels``).
        hidden_channels: output channels of each stage's W (default ``channels``).
        kernel_size: k of the lift and the blocks.
        padding_mode: ``"zeros"`` or ``"circular"``.
        head: one of :data:`HEADS`.
        head_width: width of the dense part, or None for a single linear head.
        head_depth: dense gradient-step blocks in the head (≥ 0).
        step: initial s ∈ (0, 2) of every τ = s/‖W‖².
        learnable_step: learn s per block.
        size_specific: certify each convolution for the one input size it sees (tighter, cheaper,
            other sizes refused); False: for every size.
        flat_input: take flat rows ``(N, in_channels·H·W)`` (as :func:`structnets.analysis.certify`).
        bound: ``"exact"`` or ``"verified"``, the ``bound`` of the lift and the conv blocks:
            ``"verified"`` certifies each training step by warm per-frequency power estimates and one
            batched Cholesky test (cheaper; the exact bound when the test fails); eval mode and
            certification use the exact bound either way.
        head_bound: ``"exact"`` or ``"verified"``, the ``bound`` of the dense head blocks (None: the
            same as ``bound``). The dense ``"verified"`` test keeps one power vector per layer; in
            the head of ``lipschitz-mnist-conv`` it fell back to the exact bound in 9–10 % of steps
            with its margin near 4 % (clustered top singular values), where the 128 × 128 exact
            bound costs a few milliseconds, so that experiment keeps the head exact.
        device, dtype: where to allocate parameters.

    Returns:
        an ``nn.Sequential``: ``(N, in_channels, H, W)`` (or flat rows) → ``(N, num_classes)``.
    """
    in_channels = check_int("in_channels", in_channels, low=1)
    num_classes = check_int("num_classes", num_classes, low=1)
    if isinstance(image_size, (tuple, list)):
        if len(image_size) != 2:
            raise ValueError(f"`image_size` must be an int or a pair of ints, got {image_size!r}")
        height, width = check_int("image_size", image_size[0], low=1), check_int("image_size", image_size[1], low=1)
    else:
        height = width = check_int("image_size", image_size, low=1)
    stage_channels = _ints("channels", channels, 1)
    stage_depths = _ints("depths", depths, 0)
    if len(stage_depths) != len(stage_channels):
        raise ValueError(f"`depths` must have one entry per stage ({len(stage_channels)}), got {stage_depths!r}")
    hidden = stage_channels if hidden_channels is None else _ints("hidden_channels", hidden_channels, 1)
    if len(hidden) != len(stage_channels):
        raise ValueError(f"`hidden_channels` must have one entry per stage ({len(stage_channels)}), got {hidden!r}")
    check_choice("head", head, HEADS)
    check_choice("bound", bound, CONV_BOUNDS)
    head_bound = bound if head_bound is None else check_choice("head_bound", head_bound, CONV_BOUNDS)
    if head_width is not None:
        head_width = check_int("head_width", head_width, low=1)
    head_depth = check_int("head_depth", head_depth, low=0)
    if head_width is None and head_depth > 0:
        raise ValueError(f"`head_depth` must be 0 when head_width is None, got {head_depth}")
    if learnable_step:
        check_real("step", step, low=0.0, high=2.0, low_open=True, high_open=True)
    else:
        check_real("step", step, low=0.0, high=2.0)
    for name, flag in (
        ("learnable_step", learnable_step),
        ("size_specific", size_specific),
        ("flat_input", flat_input),
    ):
        if not isinstance(flag, bool):
            raise TypeError(f"`{name}` must be a bool, got {flag!r}")
    sizes = [(height, width)]
    for s in range(len(stage_channels) - 1):
        h, w = sizes[-1]
        if h % 2 or w % 2:
            raise ValueError(
                f"`image_size` {height}×{width} cannot be halved {len(stage_channels) - 1} times "
                f"(stage {s} is {h}×{w}): give fewer `channels` stages or another size"
            )
        sizes.append((h // 2, w // 2))
    factory: dict[str, Any] = {"device": device, "dtype": dtype}
    conv = {"kernel_size": kernel_size, "padding_mode": padding_mode, "bound": bound, **factory}
    layers: list[nn.Module] = []
    if flat_input:
        layers.append(FlatToImage(in_channels, height, width))
    layers.append(
        NormConstrainedConv2d(in_channels, stage_channels[0], input_size=sizes[0] if size_specific else None, **conv)
    )
    for s, (c, depth, h) in enumerate(zip(stage_channels, stage_depths, hidden)):
        size = sizes[s] if size_specific else None
        for _ in range(depth):
            layers.append(GradientStepConv2d(c, h, step=step, learnable_step=learnable_step, input_size=size, **conv))
        if s + 1 < len(stage_channels):
            layers.append(InvertibleDownsample(c, stage_channels[s + 1], 2, **factory))
    if head == "flatten":
        layers.append(nn.Flatten())
        features = stage_channels[-1] * sizes[-1][0] * sizes[-1][1]
    else:
        layers.append(L2NormPool2d())
        features = stage_channels[-1]
    if head_width is None:
        layers.append(OrthogonalLinear(features, num_classes, **factory))
    else:
        layers.append(OrthogonalLinear(features, head_width, **factory))
        for _ in range(head_depth):
            layers.append(
                GradientStepResidual(
                    head_width, head_width, step=step, learnable_step=learnable_step, bound=head_bound, **factory
                )
            )
        layers.append(OrthogonalLinear(head_width, num_classes, **factory))
    return nn.Sequential(*layers)


__all__ = ["HEADS", "lipschitz_convnet"]
