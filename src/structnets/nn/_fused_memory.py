"""Compiled reads of CPU tensors' memory by address, for the batch's kernels (numba, optional).

A list of tensors of different shapes reaches a compiled kernel either copied into one array
(``torch.cat``: a dispatch and a copy) or one NumPy view per tensor (a detach and a view each). Here a
kernel receives the tensors' addresses (``Tensor.data_ptr()``) and reads them in place: the members'
weights, power vectors and step logits, the applied matrices' gradients, and the content checks (issue 26:
with these, the certified 5 × 50 step took 0.92× the time it took before, in-process A/B). :func:`addresses` is the only way in: it admits
a tensor only where its memory is what a row-major array of its shape and dtype would hold (on
the CPU, float32 or float64, contiguous, no lazy negation, not a zero tensor without storage), and
reports the others so that the caller takes its copying path for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from ._fused_certify import _compiled, call_in, numba

if numba is not None:
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def _pointer(typingctx: Any, address: Any, like: Any) -> Any:
        """The integer ``address`` as a pointer to the dtype of the array ``like``."""
        if not isinstance(address, types.Integer) or not isinstance(like, types.Array):
            return None
        pointer = types.CPointer(like.dtype)

        def codegen(context: Any, builder: Any, signature: Any, arguments: Any) -> Any:
            return builder.inttoptr(arguments[0], context.get_value_type(pointer))

        return pointer(address, like), codegen

    _carray = numba.carray
else:  # pragma: no cover - exercised where numba is absent (nothing calls these then)

    def _pointer(address: Any, like: Any) -> Any:
        raise RuntimeError("numba is not installed")

    _carray = None


@_compiled
def at(address: int, count: int, like: Any) -> Any:
    """The ``count`` entries at ``address`` as a 1-D array of ``like``'s dtype (a view, no copy)."""
    return _carray(_pointer(address, like), count)  # type: ignore[call-arg]  # an intrinsic: typed by numba


@_compiled
def equal_at(address: int, stored: Any) -> bool:
    """Whether the ``stored.size`` entries at ``address`` equal the C-contiguous ``stored``, as ``torch.equal``.

    IEEE comparison: NaN equals nothing, −0.0 equals 0.0. Compared in blocks of 64 without a branch
    (the compiler vectorises a block), stopping at the first block that differs.
    """
    flat = stored.reshape(-1)
    n = flat.shape[0]
    current = at(address, n, flat)
    whole = n - n % 64
    for start in range(0, whole, 64):
        same = True
        for i in range(start, start + 64):
            same &= current[i] == flat[i]
        if not same:
            return False
    for i in range(whole, n):
        if not current[i] == flat[i]:
            return False
    return True


@_compiled
def gather(addresses: Any, sizes: Any, out: Any) -> None:
    """Copy each address's ``sizes[b]`` entries into ``out``, one after another (``torch.cat`` of flat tensors)."""
    start = 0
    for b in range(addresses.shape[0]):
        n = sizes[b]
        out[start : start + n] = at(addresses[b], n, out)
        start += n


@_compiled
def logit_sigmoids(addresses: Any, positions: Any, logits: Any, sigmoids: Any) -> None:
    """Read 0-d step logits θ in place: θ_i into ``logits[i]``, sigmoid(θ_i) into ``sigmoids[positions[i]]``.

    sigmoid(θ) = 1/(1 + exp(−θ)) in the dtype, with libm's exp: the formula of torch's scalar CPU kernel,
    which a 0-d θ's ``torch.sigmoid`` (a layer's own ``step_size()``) runs, so the same bits
    (``test_the_kernels_sigmoid_is_torchs_on_a_0d_tensor``). A stacked θ of 16 or more entries would
    take torch's vectorised kernel, whose exp is another approximation.
    """
    one = np.ones(1, dtype=logits.dtype)[0]
    for i in range(addresses.shape[0]):
        theta = at(addresses[i], 1, logits)[0]
        logits[i] = theta
        sigmoids[positions[i]] = one / (one + np.exp(-theta))


#: Tensor classes read in place; a subclass (a wrapper without storage, or one whose operations mean something
#: else) takes the copying path, through its own ``torch.cat``/``copy_``.
_PLAIN = (torch.Tensor, nn.Parameter)


def readable(tensor: torch.Tensor, dtype: torch.dtype) -> bool:
    """Whether ``tensor``'s memory at ``data_ptr()`` is its row-major content in ``dtype`` (read in place).

    ``dtype`` is float32 or float64 (no conjugate bit); a zero tensor without storage has address 0.
    """
    return (
        type(tensor) in _PLAIN
        and tensor.dtype is dtype
        and tensor.is_cpu
        and tensor.is_contiguous()
        and not tensor.is_neg()
        and tensor.data_ptr() != 0
    )


def addresses(
    tensors: Sequence[torch.Tensor | None], dtype: torch.dtype, numels: Sequence[int]
) -> tuple[np.ndarray, bool]:
    """(int64 addresses, whether every tensor is readable): 0 for None and for any tensor :func:`readable` refuses
    or whose number of entries is not the one the kernel will read (``numels``, one per tensor).

    The caller keeps the tensors alive while a kernel reads the addresses, and takes its copying
    path for every 0 that was not a None. (The checks written out: ≈ 0.4 µs a tensor, in every step.)
    """
    found = [
        tensor.data_ptr()
        if tensor is not None
        and type(tensor) in _PLAIN
        and tensor.dtype is dtype
        and tensor.is_cpu
        and tensor.is_contiguous()
        and not tensor.is_neg()
        and tensor.numel() == numel
        else 0
        for tensor, numel in zip(tensors, numels, strict=True)
    ]
    every = all(address != 0 or tensor is None for address, tensor in zip(found, tensors, strict=True))
    return np.array(found, dtype=np.int64), every


def call(kernel: str, *arguments: Any) -> Any:
    """Run this module's compiled ``kernel`` by name (its result), with :func:`._fused_certify.call`'s cache fallback."""
    return call_in(globals(), kernel, *arguments)


__all__ = ["addresses", "at", "call", "equal_at", "gather", "logit_sigmoids", "readable"]
