"""Which device an experiment's units train on: ``cpu``, ``cuda`` or ``auto``.

An experiment takes part when its config has a ``device`` field (a ``str``); its units pass the
value to the models and estimators they build. The runner resolves the choice once, before the
run folder is touched, and stores the resolved name (``"cpu"`` or ``"cuda"``) in the config, so a
run folder records where its numbers came from and a resume on another device is refused as a
changed config instead of mixing results. Seeds and unit keys do not depend on the device.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .errors import DeviceUnavailableError, InvalidConfigError

DEVICES: tuple[str, ...] = ("cpu", "cuda", "auto")
"""Accepted ``device`` values (also ``"cuda:N"`` for one GPU of several)."""


def cuda_available() -> bool:
    """Whether torch can use a CUDA GPU in this process (imports torch)."""
    import torch

    return bool(torch.cuda.is_available())


def _check_name(device: Any, what: str) -> str:
    # cuda:N as torch parses it (training.device.check_device): str.isdigit took "cuda:²" (then int()
    # raised) and "cuda:01" / "cuda:128", which torch refuses or wraps to another device
    from ..training.device import check_device

    try:
        return check_device(device, what.strip("`"))
    except ValueError:
        raise InvalidConfigError(
            f"{what} must be one of {', '.join(DEVICES)} (or cuda:N, N in [0, 127] without leading zeros), got {device!r}"
        ) from None


def resolve_device(device: str, *, backend: str = "local", gpus_per_unit: float | None = None) -> str:
    """Resolve ``device`` to the name units train on, checking that it is usable.

    ``auto`` is ``cuda`` when a GPU is usable and ``cpu`` otherwise. With the ``local`` backend
    "usable" means ``torch.cuda.is_available()`` here. With ``ray`` the units run on the
    cluster, where a task sees a GPU only when it requests one: there ``cuda`` needs
    ``gpus_per_unit > 0`` (the cluster's GPUs are checked when Ray starts) and ``auto`` is
    ``cuda`` exactly when ``gpus_per_unit > 0``.

    Args:
        device: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"``.
        backend: ``"local"`` or ``"ray"``.
        gpus_per_unit: GPUs each Ray task requests (``None``: none).

    Returns:
        ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.

    Raises:
        InvalidConfigError: an unknown device name or backend, or ``gpus_per_unit`` not a finite
            number > 0 or None.
        DeviceUnavailableError: ``cuda`` without a usable GPU (no CUDA build of torch, no driver,
            no visible device, ``cuda:N`` beyond the device count), or without ``gpus_per_unit``
            on Ray.
    """
    device = _check_name(device, "`device`")
    # the checks of make_backend, so that a direct call refuses what run() would
    if backend not in ("local", "ray"):
        raise InvalidConfigError(f"`backend` must be one of local, ray, got {backend!r}")
    if gpus_per_unit is not None and (
        isinstance(gpus_per_unit, bool)
        or not isinstance(gpus_per_unit, (int, float))
        or not (0 < gpus_per_unit < float("inf"))
    ):
        raise InvalidConfigError(f"`gpus_per_unit` must be a finite number > 0 or None, got {gpus_per_unit!r}")
    if backend == "ray":
        wants_gpu = bool(gpus_per_unit)
        if device == "auto":
            return "cuda" if wants_gpu else "cpu"
        if device.startswith("cuda") and not wants_gpu:
            raise DeviceUnavailableError(
                f"`device`={device!r} on the ray backend needs `gpus_per_unit` > 0 (--gpus-per-unit): "
                "a Ray task that requests no GPU sees none"
            )
        return device
    if device == "cpu":
        return device
    available = cuda_available()
    if device == "auto":
        return "cuda" if available else "cpu"
    if not available:
        import torch

        why = (
            "this torch build has no CUDA support" if torch.version.cuda is None
            else "no CUDA device is visible (driver, CUDA_VISIBLE_DEVICES)"
        )  # fmt: skip
        raise DeviceUnavailableError(
            f"`device`={device!r} but CUDA is not available ({why}, torch {torch.__version__}); "
            "use --device cpu, or --device auto to take a GPU only when there is one"
        )
    if ":" in device:
        import torch

        index, count = int(device[5:]), torch.cuda.device_count()
        if index >= count:
            raise DeviceUnavailableError(f"`device`={device!r} but only {count} CUDA device(s) are visible")
    return device


def has_device_field(config: Any) -> bool:
    """Whether ``config`` (a dataclass instance) has an init field called ``device``."""
    return any(f.name == "device" and f.init for f in dataclasses.fields(config))


def apply_device(
    config: Any, device: str | None, *, experiment: str, backend: str = "local", gpus_per_unit: float | None = None
) -> Any:
    """Return ``config`` with its ``device`` field resolved (:func:`resolve_device`).

    Args:
        config: the experiment's config (a frozen dataclass instance).
        device: the requested device (``--device``), or ``None`` to resolve the config's own
            ``device`` value (an ``"auto"`` there is resolved, a ``"cuda"`` checked).
        experiment: the experiment's name, for messages.
        backend, gpus_per_unit: as in :func:`resolve_device`.

    Returns:
        the config, with ``device`` replaced by the resolved name when it has the field.

    Raises:
        InvalidConfigError: ``device`` is unknown, or it asks for a GPU (``cuda``) and the
            experiment's config has no ``device`` field (it trains on the CPU only).
        DeviceUnavailableError: see :func:`resolve_device`.
    """
    if not has_device_field(config):
        if device is None:
            return config
        device = _check_name(device, "--device")
        if device.startswith("cuda"):
            raise InvalidConfigError(
                f"experiment {experiment!r} cannot run on {device!r}: its config has no `device` field, so its "
                "units run on the CPU only; use --device cpu or auto (auto then means cpu)"
            )
        return config  # cpu, or auto (which can only mean cpu here)
    requested = config.device if device is None else device
    resolved = resolve_device(requested, backend=backend, gpus_per_unit=gpus_per_unit)
    if resolved == config.device:
        return config
    return dataclasses.replace(config, device=resolved)


__all__ = ["DEVICES", "apply_device", "cuda_available", "has_device_field", "resolve_device"]
