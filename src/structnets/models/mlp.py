"""Dense and low-rank (bottleneck) MLPs (Li et al., ICML 2025, Sec. 3 and Sec. 5)."""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import torch
from torch import nn

from .._validation import MAX_LAYERS, check_fits_in_memory, check_int, check_real, itemsize_of
from ..nn import LowRankLinear
from ..nn import activation as make_activation


def bottleneck_width(width: int, bottleneck: int | float) -> int:
    """Resolve ``bottleneck`` (an int H, or a float ratio of ``width``) to an int H in [1, width].

    A ratio r gives H = max(1, round(r · width)); the paper's setting is r = 1/3.
    """
    width = check_int("width", width, low=1)
    if isinstance(bottleneck, bool):
        raise TypeError(f"`bottleneck` must be an int, a float ratio or None, got {bottleneck!r}")
    if isinstance(bottleneck, Integral):
        return check_int("bottleneck", bottleneck, low=1, high=width)
    if isinstance(bottleneck, Real):
        ratio = check_real("bottleneck", bottleneck, low=0.0, high=1.0, low_open=True)
        return max(1, round(ratio * width))
    raise TypeError(f"`bottleneck` must be an int, a float ratio in (0, 1] or None, got {bottleneck!r}")


def mlp(
    in_features: int,
    out_features: int,
    width: int,
    depth: int,
    activation: str | nn.Module = "swish",
    bottleneck: int | float | None = None,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> nn.Sequential:
    """Build an MLP with ``depth`` nonlinear layers of ``width`` units.

    Layout: ``Linear(in→width), σ, [hidden, σ] × (depth−1), Linear(width→out)``. The hidden map is
    ``Linear(width→width)`` when ``bottleneck`` is None, otherwise the paper's low-rank block
    ``LowRankLinear(width, width, rank=H)``, i.e. ``Linear(width→H, bias=False)`` then
    ``Linear(H→width)``; the first and output layers stay dense. Per hidden block this changes
    the multiply-adds from width² to 2·H·width (−1/3 at H = width/3).

    Args:
        in_features, out_features: input and output sizes.
        width: nonlinear width 𝓗 (≥ 1).
        depth: number of nonlinear layers, in [1, 100000]
            (:data:`structnets._validation.MAX_LAYERS`); a network whose parameters would not fit in
            this machine's memory is refused before anything is allocated.
        activation: a name from :data:`structnets.nn.ACTIVATIONS` or a module (shared by all layers).
        bottleneck: None (dense), an int H in [1, width], or a float ratio of width in (0, 1].
        device, dtype: where to allocate parameters.

    Returns:
        an ``nn.Sequential``; input ``(*, in_features)`` → output ``(*, out_features)``.
    """
    in_features = check_int("in_features", in_features, low=1)
    out_features = check_int("out_features", out_features, low=1)
    width = check_int("width", width, low=1)
    depth = check_int("depth", depth, low=1, high=MAX_LAYERS)
    rank = None if bottleneck is None else bottleneck_width(width, bottleneck)
    make_activation(activation)  # validate the name before allocating anything
    hidden = width * width + width if rank is None else 2 * rank * width + width
    check_fits_in_memory(
        f"`in_features`={in_features}, `out_features`={out_features}, `width`={width}, `depth`={depth}",
        (in_features + 1) * width + (depth - 1) * hidden + (width + 1) * out_features,
        itemsize=itemsize_of(dtype),
        what="parameters",
    )
    factory: dict[str, Any] = {"device": device, "dtype": dtype}

    layers: list[nn.Module] = [nn.Linear(in_features, width, **factory), _fresh(activation)]
    for _ in range(depth - 1):
        if rank is None:
            layers.append(nn.Linear(width, width, **factory))
        else:
            layers.append(LowRankLinear(width, width, rank, **factory))
        layers.append(_fresh(activation))
    layers.append(nn.Linear(width, out_features, **factory))
    return nn.Sequential(*layers)


def _fresh(activation: str | nn.Module) -> nn.Module:
    # A module argument is shared on purpose (e.g. one learnable Swish β); names build new ones.
    return make_activation(activation)
