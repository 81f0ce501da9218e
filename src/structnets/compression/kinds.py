"""The layer kinds :func:`structnets.compress` factorises, as matrices W (m × n) applied to rows.

| kind | module | W | a row (one input of W) | replaced by |
| --- | --- | --- | --- | --- |
| ``linear`` | ``nn.Linear`` (exact type) | ``weight`` | the last dimension of the input | ``LowRankLinear`` / ``DLoRLinear`` |
| ``hf-conv1d`` | ``transformers.pytorch_utils.Conv1D`` | ``weight.T`` (stored in × out) | the last dimension | ``LowRankLinear`` / ``DLoRLinear`` |
| ``conv1d``, ``conv2d`` | ``nn.Conv1d`` / ``nn.Conv2d``, groups = 1 | ``weight.reshape(c_out, c_in·∏k)`` | one (padded) input patch | ``LowRankConv1d`` / ``LowRankConv2d`` |

``nn.MultiheadAttention`` is first rewritten as :class:`structnets.nn.LowRankMultiheadAttention`
with its packed q, k, v and its output projection as four ``nn.Linear`` children (the same
outputs), which are then ``linear`` layers like any other; an attention none of whose projections
is replaced is put back as it was.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..nn.dlor_linear import DLoRLinear
from ..nn.low_rank_attention import LowRankMultiheadAttention
from ..nn.low_rank_conv import LowRankConv1d, LowRankConv2d, _LowRankConvNd
from ..nn.low_rank_linear import LowRankLinear

KINDS: tuple[str, ...] = ("linear", "hf-conv1d", "conv1d", "conv2d")


def _hf_conv1d_type() -> type[nn.Module] | None:
    """``transformers.pytorch_utils.Conv1D`` if transformers is already imported, else None.

    Only an already imported transformers is looked at: a model holding a Conv1D has imported it,
    and compressing other models then never pays transformers' import time.
    """
    import sys

    module = sys.modules.get("transformers.pytorch_utils")
    found = getattr(module, "Conv1D", None) if module is not None else None
    return found if isinstance(found, type) else None


def kind_of(module: nn.Module) -> str | None:
    """The kind of ``module`` (see the module docstring), or None if it is not one of them."""
    if type(module) is nn.Linear:
        return "linear"
    if type(module) is nn.Conv1d:
        return "conv1d"
    if type(module) is nn.Conv2d:
        return "conv2d"
    hf = _hf_conv1d_type()
    if hf is not None and type(module) is hf:
        return "hf-conv1d"
    return None


@dataclass
class Candidate:
    """One layer that may be factorised.

    Attributes:
        name: qualified module name in the model being compressed.
        module: the layer.
        kind: one of :data:`KINDS`.
        out_features, in_features: m and n of W.
        bias: whether the layer adds a bias.
    """

    name: str
    module: nn.Module
    kind: str
    out_features: int
    in_features: int
    bias: bool

    @property
    def weight_param(self) -> torch.Tensor:
        weight = self.module.weight
        if not isinstance(weight, torch.Tensor):
            raise TypeError(f"layer {self.name!r} has no weight tensor")
        return weight

    def matrix(self) -> torch.Tensor:
        """W as an (m × n) float64 tensor (a copy)."""
        weight = self.weight_param.detach()
        if self.kind == "hf-conv1d":
            weight = weight.t()
        return weight.reshape(self.out_features, self.in_features).to(torch.float64)

    def rows(self, input: torch.Tensor) -> torch.Tensor:
        """The rows W is applied to in one call on ``input``: (rows, n)."""
        if self.kind in ("linear", "hf-conv1d"):
            return input.reshape(-1, self.in_features)
        conv = self.module
        assert isinstance(conv, (nn.Conv1d, nn.Conv2d))
        spatial = 1 if self.kind == "conv1d" else 2
        x = input if input.dim() == spatial + 2 else input.unsqueeze(0)  # unbatched input
        # Pad exactly as the convolution does (any padding_mode, 'same'), then take patches.
        pad = conv._reversed_padding_repeated_twice
        if any(pad):
            mode = "constant" if conv.padding_mode == "zeros" else conv.padding_mode
            x = F.pad(x, pad, mode=mode)
        kernel, stride, dilation = tuple(conv.kernel_size), tuple(conv.stride), tuple(conv.dilation)
        if spatial == 1:
            x = x.unsqueeze(2)
            kernel, stride, dilation = (1, *kernel), (1, *stride), (1, *dilation)
        patches = F.unfold(x, kernel, dilation=dilation, stride=stride)  # (N, c_in·∏k, positions)
        return patches.transpose(1, 2).reshape(-1, self.in_features)


def candidate(name: str, module: nn.Module) -> Candidate | None:
    """The :class:`Candidate` for ``module``, or None if its type is not a compressible kind."""
    kind = kind_of(module)
    if kind is None:
        return None
    weight = module.weight
    bias = getattr(module, "bias", None) is not None
    if kind == "linear":
        assert isinstance(module, nn.Linear)
        return Candidate(name, module, kind, module.out_features, module.in_features, bias)
    if kind == "hf-conv1d":
        assert isinstance(weight, torch.Tensor)
        return Candidate(name, module, kind, weight.shape[1], weight.shape[0], bias)
    assert isinstance(module, (nn.Conv1d, nn.Conv2d))
    n = module.in_channels // module.groups * math.prod(module.kernel_size)
    return Candidate(name, module, kind, module.out_channels, n, bias)


def hooked(module: nn.Module) -> str:
    """Why ``module``'s hooks keep it (``""`` without hooks): a new layer would not run them.

    Forward (pre-)hooks may change inputs, outputs or the weight itself (``spectral_norm`` computes
    ``weight`` in one), so replacing the layer would silently change the model.
    """
    kinds = [
        what
        for what, hooks in (
            ("forward pre-", module._forward_pre_hooks),
            ("forward ", module._forward_hooks),
            ("backward pre-", module._backward_pre_hooks),
            ("backward ", module._backward_hooks),
        )
        if hooks
    ]
    if not kinds:
        return ""
    return f"it has {', '.join(w + 'hooks' for w in kinds)} (e.g. spectral_norm) that a replacement would not run"


def why_not(item: Candidate, method: str) -> str:
    """Why ``item`` cannot be factorised by ``method`` (``""`` if it can)."""
    module = item.module
    reason = hooked(module)
    if reason:
        return reason
    if isinstance(module, (nn.Conv1d, nn.Conv2d)) and module.groups != 1:
        return f"a grouped convolution (groups={module.groups}); only groups=1 is factorised"
    if min(item.in_features, item.out_features) < 2:
        return f"shape {item.out_features}×{item.in_features} cannot be factored (min dimension < 2)"
    weight = item.weight_param
    if not weight.is_floating_point() or weight.is_complex():
        return f"weight dtype {weight.dtype} is not real floating point"
    return ""


def uses_dlor(item: Candidate, method: str) -> bool:
    """Whether ``item`` becomes a DLoR layer: ``method="dlor"`` and a square linear map."""
    return method == "dlor" and item.kind in ("linear", "hf-conv1d") and item.in_features == item.out_features


def as_linear(item: Candidate) -> nn.Linear:
    """``item`` as an ``nn.Linear`` with the same W and bias (the module itself for ``linear``)."""
    if isinstance(item.module, nn.Linear):
        return item.module
    weight = item.weight_param
    linear = nn.Linear(item.in_features, item.out_features, bias=item.bias, device=weight.device, dtype=weight.dtype)
    with torch.no_grad():
        linear.weight.copy_(item.matrix())
        bias = getattr(item.module, "bias", None)
        if bias is not None:
            linear.bias.copy_(bias.detach())
    linear.weight.requires_grad_(weight.requires_grad)
    linear.train(item.module.training)
    return linear


@torch.no_grad()
def build_low_rank(item: Candidate, left: torch.Tensor, right: torch.Tensor) -> nn.Module:
    """The factorised layer U V (``left`` (m × r), ``right`` (r × n)) with ``item``'s geometry and bias."""
    module = item.module
    if item.kind in ("conv1d", "conv2d"):
        cls = LowRankConv1d if item.kind == "conv1d" else LowRankConv2d
        assert isinstance(module, (nn.Conv1d, nn.Conv2d))
        weight = module.weight
        return cls.from_factors(module, left.to(weight.dtype), right.to(weight.dtype))  # type: ignore[arg-type]
    weight = item.weight_param
    rank = left.shape[1]
    layer = LowRankLinear(
        item.in_features, item.out_features, rank, bias=item.bias, device=weight.device, dtype=weight.dtype
    )
    layer.U.copy_(left)
    layer.V.copy_(right)
    bias = getattr(module, "bias", None)
    if bias is not None and layer.bias is not None:
        layer.bias.copy_(bias.detach())
    layer.requires_grad_(weight.requires_grad)
    layer.train(module.training)
    return layer


def build_dlor(item: Candidate, rank: int) -> DLoRLinear:
    """``DLoRLinear.from_linear`` of ``item`` (a square linear map): best α, truncated SVD of W − αI."""
    layer = DLoRLinear.from_linear(as_linear(item), rank)
    layer.train(item.module.training)
    return layer


def unpackable(attention: nn.MultiheadAttention) -> str:
    """Why ``attention`` cannot be rewritten with separate projections (``""`` if it can)."""
    if attention.bias_k is not None or attention.add_zero_attn:
        return "add_bias_kv / add_zero_attn attention is not supported (left alone)"
    reason = hooked(attention)
    if reason:
        return reason
    if not attention.out_proj.weight.is_floating_point():
        return f"weight dtype {attention.out_proj.weight.dtype} is not real floating point"
    return ""


def unpack(attention: nn.MultiheadAttention) -> LowRankMultiheadAttention:
    """``attention`` with its q, k, v and output projections as ``nn.Linear`` children (same outputs)."""
    return LowRankMultiheadAttention.from_attention(attention)


def is_factorised(module: nn.Module) -> bool:
    """Whether ``module`` is already a structnets factorised layer (its children are not candidates)."""
    return isinstance(module, (_LowRankConvNd, LowRankLinear, DLoRLinear))


__all__ = ["KINDS", "Candidate", "candidate", "kind_of"]
