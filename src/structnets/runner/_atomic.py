"""Atomic file writes: write a temporary file beside the target, then ``os.replace`` it."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd


def umask() -> int:
    """The process's file-creation mask, read without changing it where the OS allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # elsewhere: the classic read-by-setting, restored at once
    os.umask(mask)
    return mask


def file_mode(path: Path) -> int:
    """The mode a rewrite of ``path`` gets: the existing file's, else ``0o666`` less the umask (as
    ``open`` would give a new file; ``mkstemp`` alone would leave it ``0o600``)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return 0o666 & ~umask()


def write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` so that readers see the old or the new file, never half."""
    path = Path(path)
    mode = file_mode(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, obj: Any) -> None:
    """Atomically write ``obj`` as indented JSON (non-JSON values are written with ``str``)."""
    write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def write_csv(path: Path, frame: pd.DataFrame) -> None:
    """Atomically write ``frame`` as CSV without the index."""
    write_text(path, frame.to_csv(index=False, lineterminator="\n"))
