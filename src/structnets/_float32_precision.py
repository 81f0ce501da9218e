"""Whether float32 matrix products run in IEEE float32, and a scope in which they do.

torch lets a user lower the precision of float32 products globally:
``torch.set_float32_matmul_precision("high" | "medium")``, ``torch.backends.fp32_precision = "tf32"``,
``torch.backends.cuda.matmul.allow_tf32 = True`` (TF32: 10-bit mantissa, u = 2⁻¹¹, on NVIDIA GPUs since
Ampere), ``torch.backends.mkldnn.matmul.fp32_precision = "bf16"`` (oneDNN's bfloat16 products on CPUs
with AVX-512 BF16 or AMX). cuDNN convolutions use TF32 by default (``cudnn.conv.fp32_precision`` is
``"tf32"`` in a fresh process). Two things in structnets assume IEEE float32 (u = 2⁻²⁴):

* the float32 Gram test of ``bound="verified-batched"`` (its rounding factor K, Higham 2002, Thm 10.3,
  is derived for u = 2⁻²⁴): where products are not IEEE it runs in float64 instead;
* the logits that :func:`structnets.analysis.certify` reads margins from: a TF32 forward errs by
  ≈ 10⁻³ of the logits, which moves certified radii by as much; ``certify`` evaluates inside
  :func:`ieee_float32`.

The settings form a tree (global → backend → operation); a setting of ``"none"`` inherits its parent's,
and a child set to anything else wins over its parent (torch 2.13).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

#: The float32 precisions that are IEEE float32 arithmetic.
_IEEE = ("ieee", "highest")


def _backends() -> Any:
    return torch.backends


def _effective(*chain: Any) -> str | None:
    """The precision the first setting of ``chain`` (leaf first) that is not ``"none"`` says, or None if all inherit."""
    for node in chain:
        value = getattr(node, "fp32_precision", None)
        if value is None:
            continue
        if value != "none":
            return str(value)
    return None


def float32_matmul_is_ieee(device: torch.device | str) -> bool:
    """Whether float32 ``matmul``/``bmm``/``linear`` on ``device`` run in IEEE float32 under the current settings.

    False where the settings allow TF32 or bfloat16 products, where they cannot be read (mixed legacy
    and new APIs can make torch refuse to answer), and for device types other than CPU and CUDA.
    """
    kind = torch.device(device).type
    backends = _backends()
    try:
        if kind == "cpu":
            value = _effective(backends.mkldnn.matmul, backends.mkldnn, backends)
        elif kind == "cuda":
            value = _effective(backends.cuda.matmul, backends)
            # the legacy flag, where the new API has not been used (it then agrees with it)
            if value is None and bool(backends.cuda.matmul.allow_tf32):
                return False
        else:
            return False
    except RuntimeError:  # torch refuses to read a precision set through both APIs
        return False
    return value is None or value in _IEEE


#: Every precision setting, parents before children (setting a parent resets its children).
_NODES = ("", "mkldnn", "mkldnn.matmul", "mkldnn.conv", "mkldnn.rnn", "cuda.matmul", "cudnn", "cudnn.conv", "cudnn.rnn")
#: The operation-level settings :func:`ieee_float32` pins to ``"ieee"``.
_LEAVES = ("mkldnn.matmul", "mkldnn.conv", "mkldnn.rnn", "cuda.matmul", "cudnn.conv", "cudnn.rnn")


def _node(path: str) -> Any:
    node = _backends()
    for part in filter(None, path.split(".")):
        node = getattr(node, part)
    return node


@contextmanager
def ieee_float32() -> Iterator[None]:
    """A scope in which every float32 product and convolution (CPU and CUDA) runs in IEEE float32.

    Sets the legacy flags (``torch.set_float32_matmul_precision("highest")``,
    ``torch.backends.cudnn.allow_tf32 = False``) and pins each operation-level ``fp32_precision`` to
    ``"ieee"``, so that the legacy and the new settings agree (cuBLAS and cuDNN calls raise where they
    disagree), and restores every previous value on exit, even after an exception. A legacy flag torch
    refuses to read (the user mixed the two APIs) is left alone. The settings are process-wide, as
    torch's own are: another thread's float32 products during the scope run in IEEE float32 too
    (slower, never less exact).
    """
    backends = _backends()
    saved = [(node, node.fp32_precision) for node in map(_node, _NODES) if hasattr(node, "fp32_precision")]
    try:
        legacy_matmul: str | None = torch.get_float32_matmul_precision()
    except RuntimeError:
        legacy_matmul = None
    try:
        legacy_cudnn: bool | None = bool(backends.cudnn.allow_tf32)
    except RuntimeError:
        legacy_cudnn = None
    try:
        if legacy_matmul is not None:
            torch.set_float32_matmul_precision("highest")
        if legacy_cudnn is not None:
            backends.cudnn.allow_tf32 = False
        for node in map(_node, _LEAVES):
            if getattr(node, "fp32_precision", "ieee") != "ieee":
                node.fp32_precision = "ieee"
        yield
    finally:
        if legacy_matmul is not None:
            torch.set_float32_matmul_precision(legacy_matmul)
        if legacy_cudnn is not None:
            backends.cudnn.allow_tf32 = legacy_cudnn
        for node, value in saved:  # parents first: setting one resets its children
            if node.fp32_precision != value:
                node.fp32_precision = value


__all__ = ["float32_matmul_is_ieee", "ieee_float32"]
