"""Where an experiment's units train: the config check, the unit param and the unit's torch device.

An experiment takes part in ``structnets run --device`` when its config has a ``device`` ``str``
field (:mod:`structnets.runner.device` resolves it before the run folder is touched). These three
helpers are what its config and units share:

* the config validates the field with :func:`check_device`;
* :func:`device_param` puts the device into a unit's params only off the CPU, so CPU units keep
  the params of runs stored before the field existed, and those run folders resume;
* a unit reads its device back with :func:`unit_device` (absent means ``"cpu"``; an unresolved
  ``"auto"``, from a config used without the runner, is resolved here).

Seeds and unit keys never depend on the device: models, initial weights and data are built and
drawn on the CPU from the seed and then moved, so a unit starts from the same point everywhere.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

DEVICE_NAMES: tuple[str, ...] = ("cpu", "cuda", "auto")
"""Accepted ``device`` values, besides ``"cuda:N"`` (one GPU of several)."""


def check_device(device: object, name: str = "device") -> str:
    """Return ``device`` if it is ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"``.

    Args:
        device: the value to check.
        name: the argument's name, for the message.

    Returns:
        ``device``, unchanged.

    Raises:
        ValueError: ``device`` is not one of those strings (``"cuda:N"`` needs N a decimal integer
            in [0, 127], torch's device index, written without leading zeros).
    """
    # N as torch parses it: torch refuses "cuda:01" (and str.isdigit takes "²" or "٣"), and its index is
    # an int8, so "cuda:128" became cuda:-128 and "cuda:255" plain "cuda" (torch 2.13)
    if not isinstance(device, str) or not (device in DEVICE_NAMES or _CUDA_INDEX.fullmatch(device)):
        raise ValueError(f"`{name}` must be one of 'cpu', 'cuda', 'cuda:N', 'auto', got {device!r}")
    return device


#: ``cuda:N`` with N in [0, 127] (torch's int8 device index) written without leading zeros
_CUDA_INDEX = re.compile(r"cuda:(?:0|[1-9][0-9]?|1[01][0-9]|12[0-7])", re.ASCII)


def device_param(device: str) -> dict[str, str]:
    """A unit's device entry: ``{}`` for ``"cpu"``, else ``{"device": device}``.

    Empty on the CPU so that CPU units keep the params (and keys) of runs stored before the
    experiment had a ``device`` field, and those run folders resume without a params change.
    """
    return {} if device == "cpu" else {"device": device}


def unit_device(params: Mapping[str, Any]) -> str:
    """A unit's torch device from its params: ``params["device"]``, ``"cpu"`` when absent.

    ``"auto"`` (a config used without the runner, which would have resolved it) becomes
    ``"cuda"`` when ``torch.cuda.is_available()`` and ``"cpu"`` otherwise.
    """
    device = str(params.get("device", "cpu"))
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    return device


def synchronized_clock() -> float:
    """``time.perf_counter()`` read after queued CUDA work has finished, so a wall time measured on a
    GPU includes the kernels it launched (a no-op wait on CPU-only runs)."""
    from ..analysis.timing import synchronize  # deferred: keeps `import structnets.training` light

    synchronize()
    return time.perf_counter()


__all__ = ["DEVICE_NAMES", "check_device", "device_param", "synchronized_clock", "unit_device"]
