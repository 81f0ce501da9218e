"""DLoR networks, deep (multiplicative) and wide (additive), and pure rank-1 networks.

Chen, Li, Kim, Lavaei, *Structural Correspondence and Universal Approximation in Diagonal plus
Low-Rank Neural Networks* (arXiv 2605.05659). Every weight is an N×N DLoR matrix αI + UVᵀ; the
input is embedded by zero padding and the output read from the first coordinates, so the
network has no dense matrix at all (the paper's setting, where N = n + m + 2 suffices for
universal approximation).

Side by side, with N = ``width``, r = ``rank``, L = ``depth`` nonlinear layers, B = ``branches``,
M_k = α_k I + U_k V_kᵀ:

================  =====================================================  ===================================
mode              nonlinear layer ℓ = 1 … L; the last map (no σ)          parameters
================  =====================================================  ===================================
``"deep"``        x ↦ σ(M x + b);  y = M x + b                              (L+1)(2Nr + 1 + N)
``"parallel"``    x ↦ Σ_{k=1}^{B} σ(M_k x + b_k);  y = Σ_k M_k x + b        L·B(2Nr + 1 + N) + B(2Nr + 1) + N
``"summed"``      x ↦ σ(Σ_{k=1}^{B} M_k x + b);  y = Σ_k M_k x + b          (L+1)(B(2Nr + 1) + N)
================  =====================================================  ===================================

``"parallel"`` is the paper's wide network: the additive decomposition W = Σ_k M_k "mapped
through the nonlinear activation forms a set of parallel layers" (the paper's structural
correspondence, additive decomposition): every
branch has its own σ, so the layer is B·N units wide, and it reproduces a dense layer only in
the near-linear regime of σ, as h → 0 (:func:`structnets.constructive.dlor_network_from_dense`).
``"summed"`` adds the branches *before* σ, so a summed layer is one DLoR matrix of rank B·r (its
B scalars α_k only add up to one α) and reproduces a dense layer exactly at every h. With B = 1
all three build the same function class. :func:`dlor_parameter_count` gives the counts above.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .._validation import MAX_LAYERS, check_choice, check_fits_in_memory, check_int, itemsize_of
from ..nn import DLoRBranches, DLoRLinear, DLoRParallel, RankOneLinear, TakeFirst, ZeroPad
from ..nn import activation as make_activation

MODES: tuple[str, ...] = ("deep", "parallel", "summed")
"""Accepted ``mode`` values (``"wide"``, the 0.1.0 name of ``"summed"``, was removed in 0.2.0)."""


def resolve_mode(mode: str) -> str:
    """Return ``mode`` if it is one of :data:`MODES`, else raise ``ValueError`` naming it.

    In release 0.1.0, ``mode="wide"`` summed the branches before σ; that form is ``"summed"``, and
    the paper's wide network (σ per branch) is ``"parallel"``. The alias is gone: ``"wide"`` is
    refused, and the message names both forms.
    """
    if mode == "wide":
        raise ValueError(
            "`mode`='wide' was removed: pass 'summed' (branches added before σ, what 'wide' built in 0.1.0) "
            "or 'parallel' (the paper's wide network, σ per branch)"
        )
    return check_choice("mode", mode, MODES)


def dlor_mlp(
    in_features: int,
    out_features: int,
    width: int,
    depth: int,
    rank: int,
    mode: str = "deep",
    activation: str | nn.Module = "swish",
    branches: int = 1,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> nn.Sequential:
    """Build a DLoR network: every weight αI + UVᵀ (N×N), input zero-padded, output truncated.

    Layout: ``ZeroPad(in→N), [L_1, σ, …, L_depth, σ], L_{depth+1}, TakeFirst(N→out)`` where each
    L is a :class:`~structnets.nn.DLoRLinear` (``mode="deep"``, multiplicative: depth composes
    the low-rank updates) or a :class:`DLoRBranches` of ``branches`` DLoR maps summed before σ
    (``mode="summed"``). ``mode="parallel"`` (the paper's wide
    network) replaces each ``L_ℓ, σ`` by a :class:`DLoRParallel` (σ per branch, branches summed
    after σ) and keeps a :class:`DLoRBranches` as the last, linear map. See the module docstring
    for parameter counts.

    Args:
        in_features, out_features: n and m, both ≤ ``width``.
        width: N ≥ max(2, n, m); the paper's universal width is n + m + 2.
        depth: number of nonlinear layers L ≥ 1 (there are L + 1 DLoR maps).
        rank: r in [1, N − 1], the rank of every (branch) update UVᵀ.
        mode: ``"deep"``, ``"parallel"`` or ``"summed"``.
        activation: a name from :data:`structnets.nn.ACTIVATIONS` or a module (then shared).
        branches: B ≥ 1 DLoR maps per layer in parallel/summed mode; must be 1 in deep mode.
        device, dtype: where to allocate parameters.

    Returns:
        an ``nn.Sequential``; input ``(*, in_features)`` → output ``(*, out_features)``.
    """
    in_features = check_int("in_features", in_features, low=1)
    out_features = check_int("out_features", out_features, low=1)
    width = check_int("width", width, low=2)
    if width < max(in_features, out_features):
        raise ValueError(
            f"`width` must be >= `in_features` and `out_features` (the input is zero-padded to width and "
            f"the output read from its first coordinates), got width={width}, in_features={in_features}, "
            f"out_features={out_features}"
        )
    depth = check_int("depth", depth, low=1, high=MAX_LAYERS)
    rank = check_int("rank", rank, low=1, high=width - 1)
    mode = resolve_mode(mode)
    branches = check_int("branches", branches, low=1, high=MAX_LAYERS)
    if mode == "deep" and branches != 1:
        raise ValueError(f"`branches` must be 1 when mode='deep', got {branches}")
    if (depth + 1) * branches > MAX_LAYERS:
        raise ValueError(
            f"`depth`={depth} and `branches`={branches} build (depth + 1) · branches = "
            f"{(depth + 1) * branches} DLoR maps, more than the {MAX_LAYERS} a network may hold"
        )
    make_activation(activation)
    check_fits_in_memory(
        f"`width`={width}, `depth`={depth}, `rank`={rank}, `branches`={branches}",
        dlor_parameter_count(width, depth, rank, mode, branches),
        itemsize=itemsize_of(dtype),
        what="parameters",
    )
    factory: dict[str, Any] = {"device": device, "dtype": dtype}

    def dlor() -> nn.Module:
        if mode == "deep":
            return DLoRLinear(width, rank, **factory)
        return DLoRBranches(width, rank, branches, **factory)

    layers: list[nn.Module] = [ZeroPad(in_features, width)]
    for _ in range(depth):
        if mode == "parallel":
            layers.append(DLoRParallel(width, rank, branches, activation, **factory))
        else:
            layers += [dlor(), make_activation(activation)]
    layers += [dlor(), TakeFirst(width, out_features)]
    return nn.Sequential(*layers)


def dlor_parameter_count(width: int, depth: int, rank: int, mode: str = "deep", branches: int = 1) -> int:
    """Number of parameters of :func:`dlor_mlp` (independent of in/out features).

    deep: (L+1)(2Nr + 1 + N); parallel: L·B(2Nr + 1 + N) + B(2Nr + 1) + N;
    summed: (L+1)(B(2Nr + 1) + N).
    """
    width = check_int("width", width, low=2)
    depth = check_int("depth", depth, low=1)
    rank = check_int("rank", rank, low=1, high=width - 1)
    mode = resolve_mode(mode)
    branches = check_int("branches", branches, low=1)
    per_map = 2 * width * rank + 1
    if mode == "deep":
        return (depth + 1) * (per_map + width)
    if mode == "parallel":
        return depth * branches * (per_map + width) + branches * per_map + width
    return (depth + 1) * (branches * per_map + width)


def rank_one_mlp(
    in_features: int,
    out_features: int,
    width: int,
    depth: int,
    activation: str | nn.Module = "swish",
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> nn.Sequential:
    """Build a pure rank-1 network: every weight u vᵀ, no diagonal (α = 0, r = 1).

    Layout: ``RankOne(in→N), σ, [RankOne(N→N), σ] × (depth−1), RankOne(N→out)``. Whatever its
    width, its output depends on x only through vᵀx (v of the first layer): it is constant
    along every direction orthogonal to v, the orthogonal blind spot.

    Args:
        in_features, out_features, width, depth: as in :func:`structnets.models.mlp`.
        activation: a name from :data:`structnets.nn.ACTIVATIONS` or a module (then shared).
        device, dtype: where to allocate parameters.
    """
    in_features = check_int("in_features", in_features, low=1)
    out_features = check_int("out_features", out_features, low=1)
    width = check_int("width", width, low=1)
    depth = check_int("depth", depth, low=1, high=MAX_LAYERS)
    make_activation(activation)
    check_fits_in_memory(
        f"`in_features`={in_features}, `out_features`={out_features}, `width`={width}, `depth`={depth}",
        (in_features + 1 + width) + (depth - 1) * (3 * width) + (2 * width + out_features),
        itemsize=itemsize_of(dtype),
        what="parameters",
    )
    factory: dict[str, Any] = {"device": device, "dtype": dtype}
    layers: list[nn.Module] = [RankOneLinear(in_features, width, **factory), make_activation(activation)]
    for _ in range(depth - 1):
        layers += [RankOneLinear(width, width, **factory), make_activation(activation)]
    layers.append(RankOneLinear(width, out_features, **factory))
    return nn.Sequential(*layers)


__all__ = ["MODES", "dlor_mlp", "dlor_parameter_count", "rank_one_mlp", "resolve_mode"]
