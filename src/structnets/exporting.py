"""Turn any model that contains structnets layers into plain torch layers: :func:`export`."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import cast

import torch
from torch import nn

from ._module_walk import unique_modules as _unique_modules
from .nn.swish import Swish


def export(model: nn.Module, *, densify: bool = False) -> nn.Module:
    """Return a copy of ``model`` in which every structnets layer is replaced by plain torch layers.

    **Factorisations are kept** (the default): a ``LowRankLinear`` becomes
    ``nn.Sequential(nn.Linear(in, r, bias=False), nn.Linear(r, out))`` and a ``LowRankConv1d/2d``
    ``nn.Sequential(k×k conv to r channels, 1×1 conv)`` — the compressed parameter count, the same
    outputs (the same two products); a ``LowRankMultiheadAttention`` stays (its forward is plain
    torch functions) with its projections exported. ``densify=True`` multiplies them out instead:
    one ``nn.Linear`` / ``nn.Conv*d`` with the dense weight, an ``nn.MultiheadAttention`` with dense
    packed weights (the pre-compression parameter count). A ``DLoRLinear`` (αI + UVᵀ has no plain
    torch factorised form) is exported dense either way.

    Walks ``model`` recursively (any ``nn.Module``: ``nn.Sequential``, ``nn.ModuleList``/``Dict``,
    your own classes) and replaces each structnets layer by what its ``export()`` method returns,
    the one name every structnets layer converts by: ``LowRankLinear``, ``DLoRLinear``,
    ``RankOneLinear``, ``NormConstrainedLinear`` (and the other norm-constrained layers) become an
    ``nn.Linear`` with the layer's dense weight; ``GradientStepResidual`` and ``MaxMin`` become
    ``x + Linear(ReLU(Linear(x)))`` (``ResidualExport``, a three-line residual wrapper around an
    ``nn.Sequential``); the summed branches of a wide DLoR layer (``DLoRBranches``) become one
    ``nn.Linear`` with weight Σ_k (α_k I + U_k V_kᵀ); ``Swish()`` with β = 1 fixed becomes
    ``nn.SiLU`` (the same kernel). A
    structnets module that has ``to_linear()`` but no ``export()`` is exported through
    ``to_linear()``.

    Everything else is kept (copied): plain torch modules, your own container classes (with their
    structnets children exported, so their ``forward`` keeps working), and structnets modules that
    have no structured parameters to export (``Swish`` with β ≠ 1 or learnable, padding and
    slicing helpers of ``dlor_mlp``, the ``DLoRParallel`` container, whose branches each pass
    through σ before the sum, so it has no single matrix; its branches are exported).

    The exported layers compute each layer's **eval-mode** map: certified spectral bounds and
    steps are frozen at their eval-mode values (in training mode with ``bound="power"`` a
    structnets layer uses a moving estimate, so its outputs are defined only in eval mode). The
    outputs of ``export(model)`` equal those of ``model.eval()`` to rounding (the dense products
    sum in another order). ``model`` itself is not changed (not even its RNG-free power vectors):
    the export works on a deep copy. Modules shared between several places stay shared; each
    module keeps its train/eval flag, and the hooks registered on a replaced layer are registered
    on its export.

    Args:
        model: any ``nn.Module``.
        densify: multiply factorised layers out into dense torch layers.

    Returns:
        a new module with the same outputs, made of plain torch layers (a structnets layer passed
        as ``model`` returns its export directly).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(densify, bool):
        raise TypeError(f"`densify` must be a bool, got {densify!r}")
    factory = _factory(model)
    result = copy.deepcopy(model)
    # id → (original, export): holding the original keeps its id from being reused by a new
    # object once the original is swapped out of its parent and freed.
    exported: dict[int, tuple[nn.Module, nn.Module]] = {}

    def convert(module: nn.Module) -> nn.Module | None:
        if id(module) not in exported:
            exporter = _exporter(module, densify)
            if exporter is None:
                return None
            training = module.training
            module.eval()
            with torch.no_grad():
                new = exporter(factory)
            if not isinstance(new, nn.Module):
                raise TypeError(f"{type(module).__name__}.export() must return an nn.Module, got {type(new).__name__}")
            new.train(training)
            _carry_hooks(module, new)
            exported[id(module)] = (module, new)
        return exported[id(module)][1]

    root = convert(result)
    if root is not None:
        return root
    for parent in _unique_modules(result):
        for name, child in list(parent._modules.items()):
            if child is not None:
                new = convert(child)
                if new is not None:
                    parent._modules[name] = new
    _off_fused_encoder_path(result)
    return result


_HOOKS = (
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_backward_pre_hooks",
    "_backward_hooks",
)


def _carry_hooks(old: nn.Module, new: nn.Module) -> None:
    """Register ``old``'s module hooks on its export ``new``, so that the export computes what ``old`` did."""
    for name in _HOOKS:
        hooks = getattr(old, name, None)
        if hooks:
            getattr(new, name).update(hooks)
    if old._backward_hooks:
        new._is_full_backward_hook = old._is_full_backward_hook


def _off_fused_encoder_path(model: nn.Module) -> None:
    """Send ``nn.TransformerEncoderLayer``s with a factorised feed-forward down their ordinary path.

    torch's fused eval path reads ``linear1.weight`` / ``linear2.weight``, which an exported
    ``Sequential(Linear, Linear)`` lacks; with ``activation_relu_or_gelu = 0`` the layer skips that
    path (the flag is read only there) and computes the same map with its own modules.
    """
    for module in _unique_modules(model):
        if isinstance(module, nn.TransformerEncoderLayer) and not all(
            isinstance(getattr(getattr(module, name, None), "weight", None), torch.Tensor)
            for name in ("linear1", "linear2")
        ):
            module.activation_relu_or_gelu = 0


def _exporter(module: nn.Module, densify: bool) -> Callable[[dict[str, object]], nn.Module] | None:
    """How to export ``module``: a callable taking the model's ``{device, dtype}``, or None to keep it."""
    if type(module) is Swish:
        if not module.learnable and module.initial_beta == 1.0:  # forward is exactly F.silu then
            return lambda factory: nn.SiLU()
        return None
    if not type(module).__module__.startswith("structnets."):
        return None
    from .nn import DLoRBranches, LowRankConv1d, LowRankConv2d, LowRankLinear, LowRankMultiheadAttention

    if type(module) is LowRankLinear:
        low_rank = module
        return lambda factory: low_rank.export() if densify else _factorised_linear(low_rank)
    if type(module) in (LowRankConv1d, LowRankConv2d):
        conv = cast(LowRankConv1d | LowRankConv2d, module)
        return lambda factory: conv.to_conv() if densify else conv.export()
    if type(module) is LowRankMultiheadAttention:
        attention = module
        return (lambda factory: attention.to_multihead_attention()) if densify else None

    if type(module) is DLoRBranches:  # Σ_k (α_k I + U_k V_kᵀ) x + b is one affine map
        return lambda factory: _linear_from(module.to_dense(), module.bias)
    method = getattr(module, "export", None) or getattr(module, "to_linear", None)
    if not callable(method):
        return None
    accepts = inspect.signature(method).parameters
    if "dtype" in accepts and "device" in accepts and not any(True for _ in module.parameters()):
        # A layer without parameters (MaxMin) cannot know the model's dtype: give it.
        return lambda factory: method(**factory)
    return lambda factory: method()


def _factorised_linear(layer: nn.Module) -> nn.Sequential:
    """``LowRankLinear`` U(Vx) + b as ``Sequential(Linear(in, r, bias=False), Linear(r, out))``."""
    from .nn import LowRankLinear

    if not isinstance(layer, LowRankLinear):
        raise TypeError(f"expected a LowRankLinear, got {type(layer).__name__}")
    factory = {"device": layer.U.device, "dtype": layer.U.dtype}
    down = nn.Linear(layer.in_features, layer.rank, bias=False, **factory)  # type: ignore[arg-type]
    up = nn.Linear(layer.rank, layer.out_features, bias=layer.bias is not None, **factory)  # type: ignore[arg-type]
    down.weight.copy_(layer.V)
    up.weight.copy_(layer.U)
    if layer.bias is not None and up.bias is not None:
        up.bias.copy_(layer.bias)
    out = nn.Sequential(down, up)
    out.train(layer.training)
    return out


def _linear_from(weight: torch.Tensor, bias: torch.Tensor | None) -> nn.Linear:
    out_features, in_features = weight.shape
    linear = nn.Linear(in_features, out_features, bias=bias is not None, device=weight.device, dtype=weight.dtype)
    linear.weight.copy_(weight)
    if bias is not None:
        linear.bias.copy_(bias)
    return linear


def _factory(model: nn.Module) -> dict[str, object]:
    """The device and floating dtype of the model's first floating parameter or buffer."""
    for tensor in (*model.parameters(), *model.buffers()):
        if tensor.is_floating_point():
            return {"device": tensor.device, "dtype": tensor.dtype}
    return {"device": None, "dtype": torch.get_default_dtype()}


__all__ = ["export"]
