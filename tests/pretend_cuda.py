"""A pretend CUDA device for CPU-only machines: checks that code placed on ``"cuda"`` keeps its tensors there.

Without a GPU, ``--device cuda`` code paths never run in the suite, and the bugs they would hide are device
bugs: a tensor made on the host (``torch.zeros(n)``, ``torch.from_numpy``) meeting one on the GPU, ``.numpy()``
on a GPU tensor, a compiled CPU kernel handed device memory. Inside :func:`pretend_cuda`:

* ``torch.cuda.is_available()`` is true, with one device; the RNG-state calls work on the host's generator;
* a tensor placed on ``"cuda"`` (``.to``, ``.cuda()``, a factory's ``device=``, a module's ``.to``) becomes a
  :class:`PretendCudaTensor`: its ``device`` reads ``cuda:0`` and ``is_cuda`` is true, while its values live
  in a host tensor that every operation runs on (so the numbers are the CPU's). To torch's C++ side it is a
  ``meta`` tensor: autograd asks a tensor's device for its stream, which a CPU-only build has only for
  ``meta`` (and the CPU);
* an operation that mixes a pretend-CUDA tensor with a host tensor of one or more dimensions raises
  :class:`DeviceMixError`, as CUDA does (0-d host tensors are allowed, as CUDA allows them; so are copies
  between devices and host index tensors, which CUDA also takes); ``.numpy()`` refuses a pretend tensor
  (torch refuses it on a subclass, as on a GPU tensor), and its ``device`` is not the CPU, so code that
  reads host memory by address must not take it.

What it cannot show: CUDA's numerics (TF32, other reduction orders), its kernels' own errors, its memory.
It shows where tensors live, which a CPU-only suite otherwise leaves untested. Genuine ``meta`` tensors
cannot be made inside it (a request for ``meta`` gives a pretend-CUDA tensor).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

CUDA = torch.device("cuda", 0)
_META = torch.device("meta")
_DEVICE_OFFSET = 2**57
aten = torch.ops.aten


class DeviceMixError(RuntimeError):
    """An operation met tensors on the pretend GPU and on the host, which CUDA refuses."""


class PretendCudaTensor(torch.Tensor):
    """A tensor whose ``device`` reads ``cuda:0`` and whose values are held by the host tensor ``elem``."""

    elem: torch.Tensor

    @staticmethod
    def __new__(cls, elem: torch.Tensor) -> PretendCudaTensor:
        wrapper = torch.Tensor._make_wrapper_subclass(  # type: ignore[attr-defined]
            cls, elem.shape, strides=elem.stride(), storage_offset=elem.storage_offset(), dtype=elem.dtype,
            layout=elem.layout, device=_META, requires_grad=elem.requires_grad,
        )  # fmt: skip
        wrapper.elem = elem
        return wrapper

    @property  # type: ignore[override]
    def device(self) -> torch.device:
        return CUDA

    @property  # type: ignore[override]
    def is_cuda(self) -> bool:
        return True

    @property  # type: ignore[override]
    def is_meta(self) -> bool:
        return False

    @property  # type: ignore[override]
    def is_cpu(self) -> bool:
        return False

    @property  # type: ignore[override]
    def data(self) -> torch.Tensor:
        return torch.Tensor.data.__get__(self)  # type: ignore[attr-defined]

    @data.setter
    def data(self, value: torch.Tensor) -> None:
        # `param.data = new` swaps the C++ tensor (shape, dtype); the values it stands for must follow
        if not isinstance(value, PretendCudaTensor):
            raise DeviceMixError("pretend_cuda cannot move a tensor to the host by `.data = host_tensor`")
        torch.Tensor.data.__set__(self, value)  # type: ignore[attr-defined]
        self.elem = value.elem

    def untyped_storage(self) -> torch.UntypedStorage:  # type: ignore[override]
        # the wrapper's own storage is meta (address 0 for all): code that tells storages apart by address would
        # count every pretend tensor as one
        return self.elem.untyped_storage()

    def data_ptr(self) -> int:  # type: ignore[override]
        # a device address: distinct per tensor as on a GPU, and not host memory (2^57 above the host copy: a
        # non-canonical x86-64 address, so code that reads it from the host faults, as it would on a GPU tensor)
        return self.elem.data_ptr() + _DEVICE_OFFSET

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        return f"PretendCudaTensor({self.elem!r})"

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return _dispatch(func, args, kwargs or {})

    def __deepcopy__(self, memo: dict[int, Any]) -> PretendCudaTensor:
        # torch's own deep copy would copy the wrapper's (meta) storage; a GPU tensor's copies its values
        if id(self) not in memo:
            copied = PretendCudaTensor(self.elem.detach().clone()).requires_grad_(self.requires_grad)
            for key, value in vars(self).items():
                if key != "elem":
                    setattr(copied, key, copy.deepcopy(value, memo))
            if self.grad is not None:
                copied.grad = copy.deepcopy(self.grad, memo)
            memo[id(self)] = copied
        return memo[id(self)]

    def __reduce_ex__(self, protocol: Any) -> Any:
        # torch.save stores a GPU tensor's values, read back on the host with map_location="cpu" (as structnets
        # always loads): saved here as the host tensor it stands for
        return self.elem.detach().__reduce_ex__(protocol)


# the operations CUDA runs across devices: copies (and their bookkeeping)
_CROSS_DEVICE = {
    aten._to_copy.default, aten.copy_.default, aten.copy.default, aten.lift_fresh.default,
    aten._has_compatible_shallow_copy_type.default,
}  # fmt: skip
# indexing: a device tensor takes host indices, a host tensor takes no device ones; the values put go with the target
_INDEXING = {
    aten.index.Tensor, aten.index_put_.default, aten.index_put.default, aten._index_put_impl_.default,
}  # fmt: skip


def _check_indexing(func: Any, args: Any) -> None:
    target, indices = args[0], [index for index in args[1] if index is not None]
    if not isinstance(target, PretendCudaTensor) and any(isinstance(i, PretendCudaTensor) for i in indices):
        raise DeviceMixError(f"{func}: indices on cuda for a host tensor of shape {tuple(target.shape)}")
    if func is not aten.index.Tensor:
        values = args[2]
        if isinstance(values, PretendCudaTensor) != isinstance(target, PretendCudaTensor) and values.dim() > 0:
            raise DeviceMixError(f"{func}: values and the indexed tensor on different devices")


def _is_pretend(device: Any) -> bool:
    return device is not None and torch.device(device).type in ("cuda", "meta")


def _dispatch(func: Any, args: Any, kwargs: dict[str, Any]) -> Any:
    leaves, _ = tree_flatten((args, kwargs))
    on_gpu = any(isinstance(leaf, PretendCudaTensor) for leaf in leaves)
    if on_gpu and func in _INDEXING:
        _check_indexing(func, args)
    elif on_gpu and func not in _CROSS_DEVICE:
        for leaf in leaves:
            if isinstance(leaf, torch.Tensor) and not isinstance(leaf, PretendCudaTensor) and leaf.dim() > 0:
                raise DeviceMixError(
                    f"{func}: expected all tensors to be on the same device, got a host tensor of shape "
                    f"{tuple(leaf.shape)} beside a cuda tensor"
                )
    kwargs = dict(kwargs)
    wanted = kwargs.get("device")
    if _is_pretend(wanted):
        kwargs["device"] = torch.device("cpu")
    if func is aten._to_copy.default:
        to_gpu = _is_pretend(wanted) or (wanted is None and on_gpu)
    elif func in (aten.copy_.default, aten.copy.default) or func in _INDEXING:
        to_gpu = isinstance(args[0], PretendCudaTensor)
    else:
        to_gpu = on_gpu or _is_pretend(wanted)
    out = func(*tree_map(_unwrap, args), **tree_map(_unwrap, kwargs))
    if func is aten.copy_.default:
        return args[0]  # in place: the destination (its host values were written)
    if not to_gpu:
        return out
    return tree_map(
        lambda value: PretendCudaTensor(_resolved(value)) if isinstance(value, torch.Tensor) else value, out
    )


def _resolved(value: torch.Tensor) -> torch.Tensor:
    # a lazily conjugated or negated result must not hide behind a wrapper without those bits: torch's own code
    # (autograd formulas, decompositions) reads them off the wrapper, and got wrong gradients through `.conj()`
    if value.is_conj():
        value = value.resolve_conj()
    return value.resolve_neg() if value.is_neg() else value


def _unwrap(value: Any) -> Any:
    return value.elem if isinstance(value, PretendCudaTensor) else value


class _OnPretendCuda(TorchDispatchMode):
    """Host operations that ask for ``device="cuda"`` (factories) go to the pretend device; others run as they would."""

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        leaves, _ = tree_flatten((args, kwargs))
        if _is_pretend(kwargs.get("device")) or any(isinstance(leaf, PretendCudaTensor) for leaf in leaves):
            return _dispatch(func, args, kwargs)
        return func(*args, **kwargs)


def _target(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """``Tensor.to``'s device and dtype from its overloads: (device, dtype), (dtype), (tensor), keywords."""
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    for arg in args:
        if isinstance(arg, torch.dtype):
            dtype = arg
        elif isinstance(arg, torch.Tensor):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, (str, torch.device, int)) and not isinstance(arg, bool):
            device = arg
    return device, dtype


class _MovesToPretendCuda(TorchFunctionMode):
    """``Tensor.to("cuda")`` and ``Tensor.cuda()``: made here (torch's own path takes a CUDA device guard first)."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func is torch.Tensor.tolist and isinstance(args[0], PretendCudaTensor):
            return args[0].elem.tolist()  # CUDA copies to the host for it
        if func is torch.Tensor.numpy and isinstance(args[0], PretendCudaTensor):
            raise TypeError(
                "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
            )
        if func in (torch.tensor, torch.as_tensor, torch.asarray) and _is_pretend(kwargs.get("device")):
            # torch builds these on the host with Python dispatch off, then copies: made on the host here, then moved
            requires_grad = bool(kwargs.pop("requires_grad", False))
            kwargs.pop("device")
            made = func(*args, **kwargs)
            if not isinstance(made, PretendCudaTensor):
                made = aten._to_copy.default(made, device=_META)
            return made.requires_grad_() if requires_grad else made
        if func is torch.Tensor.cuda or func is torch.Tensor.to:
            self_, rest = args[0], args[1:]
            device, dtype = (CUDA, kwargs.get("dtype")) if func is torch.Tensor.cuda else _target(rest, kwargs)
            if device is not None and torch.device(device).type == "cuda":
                if isinstance(self_, PretendCudaTensor) and dtype in (None, self_.dtype) and not kwargs.get("copy"):
                    return self_
                memory_format = kwargs.get("memory_format", torch.preserve_format)
                return aten._to_copy.default(
                    self_, dtype=dtype or self_.dtype, device=_META, memory_format=memory_format
                )
        return func(*args, **kwargs)


@contextlib.contextmanager
def pretend_cuda(monkeypatch: Any) -> Iterator[None]:
    """Within the block, ``"cuda"`` is a pretend device (module docstring); ``monkeypatch`` undoes the patches."""
    monkeypatch.setattr(torch.cuda, "_lazy_init", lambda: None)  # torch calls it before a factory on "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "get_rng_state", lambda device="cuda": torch.get_rng_state())
    monkeypatch.setattr(torch.cuda, "set_rng_state", lambda state, device="cuda": None)
    monkeypatch.setattr(torch.cuda, "manual_seed", lambda seed: None)
    monkeypatch.setattr(torch.cuda, "manual_seed_all", lambda seed: None)
    from structnets.analysis import _certificate_rules

    check_tree = _certificate_rules._Walk.check_tree

    factories, moves = _OnPretendCuda(), _MovesToPretendCuda()

    def check_tree_without_the_pretend_modes(walk: Any, model: Any) -> None:
        # the certificate rightly refuses any active mode (it may change every operation); the pretend device's
        # two only route tensors, so the tree's checks run with them popped when they are the innermost (its
        # tensors still pretend-CUDA); any other mode is still seen, and refused
        innermost = torch.overrides._get_current_function_mode_stack()[-1:] == [moves]
        innermost = innermost and torch.utils._python_dispatch._get_current_dispatch_mode() is factories
        if not innermost:
            return check_tree(walk, model)
        with torch.overrides._pop_mode_temporarily(), torch.utils._python_dispatch._pop_mode_temporarily():
            return check_tree(walk, model)

    monkeypatch.setattr(_certificate_rules._Walk, "check_tree", check_tree_without_the_pretend_modes)
    global _active
    _active += 1
    try:
        with factories, moves:
            yield
    finally:
        _active -= 1


_active = 0


def pretending() -> bool:
    """Whether ``"cuda"`` is the pretend device now (inside :func:`pretend_cuda`), not a GPU."""
    return _active > 0
