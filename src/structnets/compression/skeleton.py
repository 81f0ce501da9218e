"""Load a compressed state dict: rebuild the factorised skeleton from the dense model and the plan.

A compressed model's ``state_dict()`` has the factors' keys (``fc.U``, ``fc.V``, ``conv.reduce.weight``,
``attn.q_proj.U``, ...), which the dense architecture does not. ``skeleton(dense_model,
report.plan())`` returns a copy of the dense model with every layer of the plan replaced by a
factorised layer of the planned rank (its values are placeholders), so that

    model = skeleton(dense_model, plan)
    model.load_state_dict(torch.load("compressed.pt", weights_only=True))

gives the compressed model back. ``plan`` is JSON-serialisable: save it beside the state dict.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from .._module_walk import replace_children
from ..nn.dlor_linear import DLoRLinear
from ..nn.low_rank_attention import LowRankMultiheadAttention
from ..nn.low_rank_conv import LowRankConv1d, LowRankConv2d
from ..nn.low_rank_linear import LowRankLinear
from . import kinds

_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "out_proj")


def skeleton(model: nn.Module, plan: Mapping[str, Mapping[str, Any]]) -> nn.Module:
    """A copy of the dense ``model`` with the factorised layers that ``plan`` names (see the module docstring).

    Args:
        model: the dense model that was compressed (same architecture; its weights do not matter).
        plan: ``CompressionReport.plan()``: ``{layer name: {"kind", "method", "rank"}}``.

    Returns:
        the skeleton, into which the compressed model's state dict loads (``load_state_dict``).

    Raises:
        ValueError / TypeError naming ``plan`` and the layer: a name that is not a layer of
            ``model``, a kind that does not match, a bad rank.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(plan, Mapping):
        raise TypeError(f"`plan` must be a mapping (CompressionReport.plan()), got {type(plan).__name__}")
    work = copy.deepcopy(model)
    # Attentions whose projections are planned are unpacked first, as compress() did.
    swaps: dict[int, nn.Module] = {}
    for name in plan:
        if not isinstance(name, str):
            raise TypeError(f"`plan` keys must be layer names, got {name!r}")
        parent, _, leaf = name.rpartition(".")
        if leaf in _PROJECTIONS:
            try:
                owner = work.get_submodule(parent)
            except AttributeError:
                continue
            if type(owner) is nn.MultiheadAttention and id(owner) not in swaps:
                swaps[id(owner)] = LowRankMultiheadAttention.from_attention(owner)
    if id(work) in swaps:
        work = swaps[id(work)]
    replace_children(work, swaps)
    replacements: dict[int, nn.Module] = {}
    for name, entry in plan.items():
        try:
            module = work.get_submodule(name)
        except AttributeError as error:
            raise ValueError(f"`plan` names layer {name!r}, which `model` does not have") from error
        item = kinds.candidate(name, module)
        if item is None:
            raise ValueError(f"`plan` layer {name!r} is a {type(module).__name__}, not a compressible kind")
        if not isinstance(entry, Mapping) or not {"kind", "method", "rank"} <= set(entry):
            raise TypeError(f"`plan` entry {name!r} must be a mapping with kind, method and rank, got {entry!r}")
        if entry["kind"] != item.kind:
            raise ValueError(f"`plan` layer {name!r} has kind {entry['kind']!r}, the model's layer is {item.kind!r}")
        rank, method = entry["rank"], entry["method"]
        if method == "dlor" and not kinds.uses_dlor(item, "dlor"):
            raise ValueError(
                f"`plan` layer {name!r} has method 'dlor', but it is a {item.kind} of shape "
                f"{item.out_features}×{item.in_features}: DLoR needs a square linear map"
            )
        largest = min(item.in_features, item.out_features) - (1 if method == "dlor" else 0)
        if isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank <= largest:
            raise ValueError(f"`plan` layer {name!r} rank must be an int in [1, {largest}], got {rank!r}")
        replacements[id(module)] = _placeholder(item, str(method), rank)
    if id(work) in replacements:
        return replacements[id(work)]
    replace_children(work, replacements)
    for module in work.modules():
        if isinstance(module, nn.TransformerEncoder) and getattr(module, "use_nested_tensor", False):
            if any(id(m) in {id(r) for r in replacements.values()} for m in module.modules()):
                module.use_nested_tensor = False
    return work


def _placeholder(item: kinds.Candidate, method: str, rank: int) -> nn.Module:
    weight = item.weight_param
    factory: dict[str, Any] = {"device": weight.device, "dtype": weight.dtype}
    new: nn.Module
    if method == "dlor":
        new = DLoRLinear(item.in_features, rank, bias=item.bias, **factory)
    elif method != "lowrank":
        raise ValueError(f"`plan` layer {item.name!r} method must be 'lowrank' or 'dlor', got {method!r}")
    elif item.kind in ("conv1d", "conv2d"):
        cls = LowRankConv1d if item.kind == "conv1d" else LowRankConv2d
        m, n = item.out_features, item.in_features
        new = cls.from_factors(
            item.module,  # type: ignore[arg-type]
            torch.zeros(m, rank, **factory),
            torch.zeros(rank, n, **factory),
        )
    else:
        new = LowRankLinear(item.in_features, item.out_features, rank, bias=item.bias, **factory)
    new.train(item.module.training)
    return new


def safe_globals() -> list[type]:
    """The classes ``torch.load(..., weights_only=True)`` must allow to unpickle a whole compressed model.

    structnets' factorised layers and every ``torch.nn`` module class (a pickled model names the
    classes of all its modules). Use as::

        with torch.serialization.safe_globals(structnets.compression.safe_globals()):
            model = torch.load(path, weights_only=True)

    A model holding other classes (your own modules, transformers') needs those added too;
    saving the ``state_dict()`` and loading it into :func:`skeleton` needs none.
    """
    import inspect

    classes: list[type] = [LowRankLinear, LowRankConv1d, LowRankConv2d, LowRankMultiheadAttention, DLoRLinear]
    for _, value in inspect.getmembers(nn):
        if isinstance(value, type) and issubclass(value, nn.Module) and value not in classes:
            classes.append(value)
    from torch.nn.modules.linear import NonDynamicallyQuantizableLinear

    classes.append(NonDynamicallyQuantizableLinear)
    return classes


__all__ = ["safe_globals", "skeleton"]
