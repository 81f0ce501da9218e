"""Where a running unit may keep a checkpoint, so that a killed run resumes inside its long units.

The runner's resume is per unit: a unit whose result is not in ``results.db`` runs again from its
start. A unit that trains for most of an hour (``lipschitz-mnist-conv``'s full preset) would lose
all of it to a kill. So, while a unit runs, :func:`unit_checkpoint` names a file in the run folder's
``checkpoints/`` that belongs to that unit (its key and params, hashed): the unit passes it to
``fit(..., checkpoint=...)``, which saves after every epoch and resumes from it. The runner deletes
the file once the unit's result is committed; a unit whose params change gets another file.

Outside a run folder (a unit called directly, a Ray task on another machine) it is None, and units
train from their start as before.
"""

from __future__ import annotations

import contextvars
import hashlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .store import dumps

#: The folder of a run folder that holds the units' checkpoints.
CHECKPOINTS = "checkpoints"

_CURRENT: contextvars.ContextVar[Path | None] = contextvars.ContextVar("structnets_unit_checkpoint", default=None)


def unit_checkpoint() -> Path | None:
    """The checkpoint file of the unit running now, or None when there is none to keep.

    For ``run_unit`` code: pass it to :func:`structnets.training.fit` as ``checkpoint=``. One file
    holds one training (``fit`` refuses a file of another): a unit that trains twice names a second
    file beside it, e.g. ``path.with_suffix(".finetune.ckpt")`` (deleted with the rest when the run
    finishes).
    """
    return _CURRENT.get()


def checkpoint_file(folder: Path, key: str, params: Mapping[str, Any]) -> Path:
    """The checkpoint file of unit ``key`` with ``params`` in ``folder`` (a hash: keys may hold any character)."""
    digest = hashlib.sha256(dumps({"key": key, "params": dict(params)}).encode()).hexdigest()[:32]
    return folder / f"{digest}.ckpt"


@contextmanager
def checkpointing(path: Path | None) -> Iterator[None]:
    """Make :func:`unit_checkpoint` return ``path`` inside the block."""
    token = _CURRENT.set(path)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def discard(folder: Path | None, key: str, params: Mapping[str, Any]) -> None:
    """Delete the unit's checkpoint: its result is committed."""
    if folder is not None:
        checkpoint_file(folder, key, params).unlink(missing_ok=True)


def remove_all(folder: Path) -> None:
    """Delete every checkpoint in ``folder`` and the folder: the run is finished, no unit is in flight.

    What is left then belongs to no unit of the run (a unit whose params changed with
    ``--rerun-changed`` left its old file, or a write was cut short): nothing can resume from it.
    Only this module's files are touched (``*.ckpt`` and their temporary ``.*.ckpt.*`` siblings).
    """
    if not folder.is_dir():
        return
    for path in [*folder.glob("*.ckpt"), *folder.glob(".*.ckpt.*")]:
        path.unlink(missing_ok=True)
    try:
        folder.rmdir()
    except OSError:  # a file someone else put there: leave the folder
        pass


__all__ = ["CHECKPOINTS", "checkpoint_file", "checkpointing", "discard", "remove_all", "unit_checkpoint"]
