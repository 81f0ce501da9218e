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

import threading
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
def _leaves_at(leaves: tuple[Any, ...], value: str) -> Iterator[None]:
    """Set ``leaves``' ``fp32_precision`` to ``value`` for a read, and put them back."""
    before = [leaf.fp32_precision for leaf in leaves]
    try:
        for leaf in leaves:
            leaf.fp32_precision = value
        yield
    finally:
        for leaf, old in zip(leaves, before, strict=True):
            leaf.fp32_precision = old


def _stored_matmul_precision(backends: Any) -> str:
    """torch's stored legacy matmul precision, also where it refuses to read it (the two APIs mixed).

    torch checks that value only against a TF32 or bfloat16 matmul leaf (``mkldnn.matmul``,
    ``cuda.matmul``): with both at ``"ieee"`` for the read it always answers.
    """
    try:
        return str(torch.get_float32_matmul_precision())
    except RuntimeError:
        pass
    with _leaves_at((backends.mkldnn.matmul, backends.cuda.matmul), "ieee"):
        return str(torch.get_float32_matmul_precision())


def _stored_cudnn_flag(backends: Any) -> bool:
    """torch's stored legacy ``cudnn.allow_tf32``, also where it refuses to read it.

    torch answers only where ``cudnn.conv`` and ``cudnn.rnn`` both are (or both are not) TF32 and agree
    with the flag: with both at ``"tf32"`` for the read it answers iff the flag is True.
    """
    try:
        return bool(backends.cudnn.allow_tf32)
    except RuntimeError:
        pass
    with _leaves_at((backends.cudnn.conv, backends.cudnn.rnn), "tf32"):
        try:
            return bool(backends.cudnn.allow_tf32)
        except RuntimeError:
            return False


def _pin_ieee(backends: Any) -> None:
    """Legacy flags and every operation-level setting to IEEE float32, agreeing with each other."""
    torch.set_float32_matmul_precision("highest")
    backends.cudnn.allow_tf32 = False
    for node in map(_node, _LEAVES):
        if getattr(node, "fp32_precision", "ieee") != "ieee":
            node.fp32_precision = "ieee"


def _restore(saved: tuple[list[tuple[Any, str]], str, bool]) -> None:
    nodes, matmul, cudnn = saved
    backends = _backends()
    torch.set_float32_matmul_precision(matmul)
    backends.cudnn.allow_tf32 = cudnn
    for node, value in nodes:  # parents first: setting one resets its children
        if node.fp32_precision != value:
            node.fp32_precision = value


#: The scopes open in this process (all threads) and the state the first one found: the settings are
#: process-wide, so overlapping scopes of two threads share one save, restored when the last one ends.
_LOCK = threading.Lock()
_open = 0
_saved: tuple[list[tuple[Any, str]], str, bool] | None = None


@contextmanager
def ieee_float32() -> Iterator[None]:
    """A scope in which every float32 product and convolution (CPU and CUDA) runs in IEEE float32.

    Sets the legacy flags (``torch.set_float32_matmul_precision("highest")``,
    ``torch.backends.cudnn.allow_tf32 = False``) and pins each operation-level ``fp32_precision`` to
    ``"ieee"``, so that the legacy and the new settings agree (cuBLAS calls, and reads of the legacy
    flags, raise where they disagree), and restores every previous value, the stored legacy ones
    included where torch refused to read them (mixed APIs), when the last open scope ends, even after
    an exception. The settings are process-wide, as torch's own are: another thread's float32
    products during the scope run in IEEE float32 too (slower, never less exact), and scopes of
    several threads may overlap in any order (the state is saved by the first, restored by the last).
    """
    global _open, _saved
    backends = _backends()
    with _LOCK:
        if _open == 0:
            nodes = [(node, node.fp32_precision) for node in map(_node, _NODES) if hasattr(node, "fp32_precision")]
            _saved = (nodes, _stored_matmul_precision(backends), _stored_cudnn_flag(backends))
        _open += 1
        try:
            _pin_ieee(backends)  # at every entry: settings changed inside an outer scope are pinned again
        except BaseException:
            _open -= 1
            if _open == 0 and _saved is not None:
                _restore(_saved)
            raise
    try:
        yield
    finally:
        with _LOCK:
            _open -= 1
            if _open == 0 and _saved is not None:
                saved, _saved = _saved, None
                _restore(saved)


__all__ = ["float32_matmul_is_ieee", "ieee_float32"]
