"""Where a unit keeps the model it trained, so that anyone can load it back and check it.

A run folder's table says what a trained model scored; a reviewer who doubts a certified
accuracy wants the model itself, to attack it with their own tools. While a unit runs in a run
folder (local backends), :func:`unit_model_file` names a file in the folder's ``models/``; the unit
saves its trained weights there with :func:`save_unit_model`, which returns the file's name and
SHA-256 as result columns (``model_file``, ``model_sha256``), so the stored row is bound to the
file. :func:`load_unit_state` reads the file back, checked against that row. Files stay after the
run finishes (unlike ``checkpoints/``); a unit that runs again replaces its own file.
"""

from __future__ import annotations

import contextvars
import hashlib
import io
import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .. import atomic_io
from .outputs import MODELS  # the folder of a run folder that holds the units' trained models
from .store import dumps

_CURRENT: contextvars.ContextVar[Path | None] = contextvars.ContextVar("structnets_unit_model", default=None)


def model_file(folder: Path, key: str, params: Mapping[str, Any]) -> Path:
    """The model file of unit ``key`` with ``params`` in ``folder``: the key made file-safe, and a hash."""
    digest = hashlib.sha256(dumps({"key": key, "params": dict(params)}).encode()).hexdigest()[:12]
    slug = re.sub(r"[^A-Za-z0-9_=-]+", "-", key).strip("-")[:80] or "unit"  # no dots: never "..", never hidden
    return folder / f"{slug}-{digest}.pt"


def unit_model_file() -> Path | None:
    """The model file of the unit running now, or None outside a run folder (a direct call, a Ray task)."""
    return _CURRENT.get()


@contextmanager
def saving_models(path: Path | None) -> Iterator[None]:
    """Make :func:`unit_model_file` return ``path`` inside the block."""
    token = _CURRENT.set(path)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def save_unit_model(model: nn.Module) -> dict[str, str | None]:
    """Save ``model``'s ``state_dict`` (on the CPU) to the running unit's model file, atomically.

    Returns:
        ``{"model_file": "models/<name>.pt", "model_sha256": <hex>}`` to add to the unit's result
        row; both None when the unit runs outside a run folder (nothing is saved; the columns are
        there all the same, so that every row of a unit kind has them).
    """
    path = unit_model_file()
    if path is None:
        return {"model_file": None, "model_sha256": None}
    state = {name: tensor.detach().to("cpu", copy=True) for name, tensor in model.state_dict().items()}
    buffer = io.BytesIO()
    torch.save(state, buffer)
    payload = buffer.getvalue()
    atomic_io.write_bytes(path, payload, parents=True)
    return {"model_file": f"{MODELS}/{path.name}", "model_sha256": hashlib.sha256(payload).hexdigest()}


def _is_model_name(name: str) -> bool:
    """A run folder is data: a row may only name a file directly inside its ``models/`` folder."""
    parts = name.split("/")
    return len(parts) == 2 and parts[0] == MODELS and re.fullmatch(r"[A-Za-z0-9_=-]+\.pt", parts[1]) is not None


def _plain_file_inside(path: Path, folder: Path) -> bool:
    """``path`` is a plain file (no symbolic link) that resolves inside ``folder/models``."""
    try:
        return not path.is_symlink() and path.is_file() and path.resolve().parent == (folder / MODELS).resolve()
    except OSError:
        return False


def copy_unit_model(source_dir: Path, target_dir: Path, result: Mapping[str, Any]) -> None:
    """Copy the model file a reused row names from its run folder into ``target_dir`` (atomically).

    ``structnets run --reuse`` takes finished rows from other folders; their models come along, so
    the new folder stands alone. A missing source file is left missing (loading it then says so).
    """
    name = result.get("model_file")
    if not isinstance(name, str) or not _is_model_name(name) or source_dir.resolve() == target_dir.resolve():
        return
    source = source_dir / name
    if not _plain_file_inside(source, source_dir):
        return
    try:
        payload = source.read_bytes()
    except FileNotFoundError:
        return
    atomic_io.write_bytes(target_dir / name, payload, parents=True)


def model_problem(folder: Path, result: Mapping[str, Any]) -> str | None:
    """What is wrong with the model file a stored row of run folder ``folder`` names, or None.

    None also for a row that names no file (run outside a run folder, or before models were saved).
    Otherwise the file must be a plain file of ``folder/models`` whose SHA-256 is the row's.
    """
    name, digest = result.get("model_file"), result.get("model_sha256")
    if name is None and digest is None:
        return None
    if not isinstance(name, str) or not isinstance(digest, str) or not _is_model_name(name):
        return f"is named {name!r} with SHA-256 {digest!r}, not a file of its {MODELS}/ folder"
    path = folder / name
    if not path.exists() and not path.is_symlink():
        return f"{path} is missing"
    if not _plain_file_inside(path, folder):
        return f"{path} is a link or not a plain file inside {folder / MODELS}"
    try:
        with path.open("rb") as f:
            actual = hashlib.file_digest(f, "sha256").hexdigest()
    except OSError as e:
        return f"{path} cannot be read ({e.strerror or e})"
    if actual != digest:
        return f"{path} does not match the SHA-256 its row records (replaced, truncated or edited)"
    return None


def unbacked_rows(folder: Path, records: Mapping[str, Any]) -> dict[str, str]:
    """The stored rows (``UnitRecord`` by key) whose model file is missing or altered: key to :func:`model_problem`."""
    problems = {key: model_problem(folder, record.result) for key, record in records.items()}
    return {key: problem for key, problem in problems.items() if problem is not None}


def load_unit_state(run_dir: str | Path, key: str) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """The params and saved ``state_dict`` of unit ``key`` of the run folder ``run_dir``.

    The file is the one the unit's stored row names, and its SHA-256 must match the row's (a file
    replaced, truncated or edited since is refused). Read with ``weights_only=True``.

    Raises:
        FileNotFoundError: ``run_dir`` has no results, or no file for the unit.
        KeyError: no finished unit ``key`` (the message lists the keys there are).
        ValueError: the unit saved no model (run before models were saved, or outside a run
            folder), or the file does not match the row's checksum.
    """
    from .outputs import RESULTS_DB
    from .store import ResultStore

    folder = Path(run_dir)
    if not (folder / RESULTS_DB).is_file():
        raise FileNotFoundError(f"`run_dir` {folder} holds no {RESULTS_DB}: not a run folder")
    with ResultStore.open_existing(folder / RESULTS_DB) as store:
        records = store.records()
    if key not in records:
        raise KeyError(f"`key` {key!r} is not a finished unit of {folder}; there are: {sorted(records)}")
    record = records[key]
    name, digest = record.result.get("model_file"), record.result.get("model_sha256")
    if not isinstance(name, str) or not isinstance(digest, str):
        raise ValueError(
            f"unit {key!r} of {folder} saved no model (run outside a run folder, or before models were saved)"
        )
    if not _is_model_name(name):
        raise ValueError(f"unit {key!r} of {folder} names the model file {name!r}, not a file of its {MODELS}/ folder")
    path = folder / name
    if path.exists() and not _plain_file_inside(path, folder):
        raise ValueError(f"{path} is a link or not a plain file inside {folder / MODELS}: not read")
    payload = path.read_bytes()
    if hashlib.sha256(payload).hexdigest() != digest:
        raise ValueError(f"{path} does not match the SHA-256 its unit's row records (replaced, truncated or edited)")
    state = torch.load(io.BytesIO(payload), map_location="cpu", weights_only=True)
    return json.loads(dumps(dict(record.params))), state


__all__ = [
    "MODELS",
    "copy_unit_model",
    "load_unit_state",
    "model_file",
    "model_problem",
    "save_unit_model",
    "saving_models",
    "unbacked_rows",
    "unit_model_file",
]
