"""Epoch checkpoints of :func:`~structnets.training.fit`: a killed training resumes at its last finished epoch.

``fit(..., checkpoint=path)`` writes, after every epoch, everything the remaining epochs depend on:
the model's state dict, what the certified layers carry outside it (the ``"verified"`` margins and
the convolutions' per-frequency power vectors, :func:`training_state`), the optimiser and scheduler
state, the shuffling generator, torch's global RNG, the loss histories, the early-stopping state
and the wall time so far. A later ``fit`` with the same arguments and the same path loads it and
runs the remaining epochs: on the CPU the weights it ends with are bit for bit those of an
uninterrupted run (tested). A checkpoint of a finished run makes ``fit`` train no further epoch.

The file is one atomic write (:mod:`structnets.atomic_io`): a reader sees the previous epoch's
file or this one's, never half of one. It starts with a JSON header holding the SHA-256 of the
payload (``torch.save`` of the state, read back with ``weights_only=True``: no code runs from a
file). A file whose checksum or format does not match is **unusable** (:class:`CheckpointUnusable`:
``fit`` warns and trains from the first epoch, overwriting it); one written by a *different*
training (other data, model shapes, epochs, batch size, learning rate, optimiser, schedule, seed or
validation split: :func:`fingerprint`; a callable loss, optimiser or schedule is not compared, only
that one was given) is refused with a ``ValueError`` naming what differs.
"""

from __future__ import annotations

import hashlib
import io
import json
import numbers
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from .. import atomic_io

#: What ``fit`` saves (and needs back).
KEYS = frozenset(
    (
        "fingerprint", "next_epoch", "finished", "global_step", "model", "training_state", "optimizer", "scheduler",
        "generator", "torch_rng", "cuda_rng", "train_loss", "val_loss", "best_loss", "best_epoch", "stale",
        "best_state", "stopped_early", "diverged", "elapsed",
    )
)  # fmt: skip
#: The first bytes of every checkpoint file.
MAGIC = b"structnets fit checkpoint\n"
FORMAT = 1


class CheckpointUnusable(ValueError):
    """A checkpoint file that cannot be read back as written (checksum, format or content)."""


def check_checkpoint_path(checkpoint: Any) -> Path | None:
    """``checkpoint`` as a Path (None stays None); refuse anything else, or a folder, naming the argument."""
    if checkpoint is None:
        return None
    if isinstance(checkpoint, bool) or not isinstance(checkpoint, str | os.PathLike):
        raise TypeError(f"`checkpoint` must be a path (str or os.PathLike) or None, got {type(checkpoint).__name__}")
    path = Path(checkpoint)
    if os.fspath(checkpoint) == "" or path.is_dir():
        raise ValueError(f"`checkpoint` must name a file, got {os.fspath(checkpoint)!r} (a folder or empty)")
    return path


def training_state(model: nn.Module) -> dict[str, dict[str, Any]]:
    """What the model's certified layers carry outside ``state_dict()``, by module name.

    Their bounds' ``training_state()``: the ``"verified"`` margins (they scale the next step's
    guess, hence τ) and the convolutions' per-frequency power vectors (they choose the guess).
    Without them a resumed run would certify the same way but take different steps.
    """
    state: dict[str, dict[str, Any]] = {}
    for name, module in model.named_modules():
        bound = getattr(module, "_bound", None)
        if callable(getattr(bound, "training_state", None)):
            state[name] = bound.training_state()  # type: ignore[union-attr]
    return state


def load_training_state(model: nn.Module, state: Mapping[str, Mapping[str, Any]]) -> None:
    """Restore :func:`training_state` into ``model`` (ValueError when the layers do not match)."""
    modules = dict(model.named_modules())
    expected = set(training_state(model))
    if set(state) != expected:
        raise CheckpointUnusable(
            f"the checkpoint's certified layers {sorted(state)} are not the model's {sorted(expected)}"
        )
    for name, values in state.items():
        # saved tensors come back on the CPU: put them where the layer computes
        first = next(modules[name].parameters(), None)
        device = None if first is None else first.device
        modules[name]._bound.load_training_state(values, device)  # type: ignore[union-attr]


def data_digest(*tensors: torch.Tensor | None) -> str:
    """SHA-256 of the tensors' dtypes, shapes and bytes (the training data a checkpoint belongs to)."""
    digest = hashlib.sha256()
    for tensor in tensors:
        if tensor is None:
            digest.update(b"none")
            continue
        host = tensor.detach().to("cpu").contiguous()
        digest.update(f"{host.dtype}{tuple(host.shape)}".encode())
        digest.update(host.view(torch.uint8).numpy().tobytes() if host.numel() else b"")
    return digest.hexdigest()


def fingerprint(model: nn.Module, **options: Any) -> dict[str, Any]:
    """What a checkpoint must agree on to be resumed: the options given, the model's tensors' names, shapes and
    dtypes, and its certified layers' bound modes.

    Not the model's weights: a resumed call may hand ``fit`` a freshly built model or the very object a
    kill interrupted (partly trained). The file names the training; give each training its own.
    """
    shapes = {name: [list(t.shape), str(t.dtype)] for name, t in model.state_dict().items()}
    modes = {
        name: str(getattr(module._bound, "mode", "?"))
        for name, module in model.named_modules()
        if getattr(module, "_bound", None) is not None
    }
    return {**{key: _plain(value) for key, value in options.items()}, "model": shapes, "bounds": modes}


def _plain(value: Any) -> Any:
    """Comparable form of an option. A callable (loss, optimiser or schedule factory) becomes ``"callable"``:
    its name says nothing about what it computes (every lambda is ``<lambda>``), so it is not compared.
    NumPy scalars are compared as the Python numbers they hold (they had become ``"callable"``: a warm-up of
    ``np.int64(1)`` epochs was taken for one of ``np.int64(2)``)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return "callable" if callable(value) else repr(value)


def _serialize(state: Mapping[str, Any]) -> bytes:
    buffer = io.BytesIO()
    torch.save(dict(state), buffer)
    return buffer.getvalue()


def check_round_trip(state: Mapping[str, Any]) -> None:
    """Refuse (ValueError naming ``checkpoint``) a state that cannot be saved, or read back with ``weights_only=True``.

    An optimiser's or scheduler's ``state_dict()`` may hold what ``torch.save`` cannot pickle (a
    ``LambdaLR`` whose callable object keeps a lambda) or what the safe loader refuses (a NumPy scalar):
    training would then fail after its first epoch, or never resume. ``fit`` calls this first.
    """
    try:
        torch.load(io.BytesIO(_serialize(state)), map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - any failure means the checkpoint could not be used
        raise ValueError(
            f"`checkpoint`: the training state cannot be saved and read back ({type(e).__name__}: {e}); "
            "an optimiser or scheduler holding a lambda, a NumPy scalar or another object is not supported"
        ) from e


def save(path: Path, state: Mapping[str, Any]) -> None:
    """Write ``state`` to ``path`` atomically, with a header holding its SHA-256."""
    payload = _serialize(state)
    header = json.dumps({"format": FORMAT, "sha256": hashlib.sha256(payload).hexdigest(), "bytes": len(payload)})
    atomic_io.write_bytes(path, MAGIC + header.encode() + b"\n" + payload, parents=True)


def load(path: Path) -> dict[str, Any] | None:
    """The state saved at ``path``; None when there is no file.

    Raises:
        CheckpointUnusable: the file is not a checkpoint of this format, or its payload does not
            match its checksum (truncated, overwritten, edited), or cannot be read back.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    if not data.startswith(MAGIC):
        raise CheckpointUnusable(f"{path} is not a structnets fit checkpoint (its first bytes differ)")
    end = data.find(b"\n", len(MAGIC))
    try:
        header = json.loads(data[len(MAGIC) : end])
        payload = data[end + 1 :]
        if header.get("format") != FORMAT:
            raise CheckpointUnusable(f"{path} has checkpoint format {header.get('format')!r}, expected {FORMAT}")
        if len(payload) != header["bytes"] or hashlib.sha256(payload).hexdigest() != header["sha256"]:
            raise CheckpointUnusable(f"{path} does not match its checksum (truncated or modified)")
        state = torch.load(io.BytesIO(payload), map_location="cpu", weights_only=True)
    except CheckpointUnusable:
        raise
    except Exception as e:  # noqa: BLE001 - any failure to parse means the file cannot be used
        raise CheckpointUnusable(f"{path} cannot be read back: {type(e).__name__}: {e}") from e
    missing = sorted(KEYS - set(state)) if isinstance(state, dict) else sorted(KEYS)
    if missing:
        raise CheckpointUnusable(f"{path} holds no complete fit state (missing: {', '.join(missing)})")
    return state


__all__ = [
    "CheckpointUnusable",
    "check_checkpoint_path",
    "data_digest",
    "fingerprint",
    "load",
    "load_training_state",
    "save",
    "training_state",
]
