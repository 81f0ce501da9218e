"""Atomic file writes: write a temporary file beside the target, fsync it, then ``os.replace`` it.

Readers of the target see the old file or the new one, never a half-written one: ``os.replace`` is atomic
on POSIX and Windows when source and target lie in the same folder, which is why the temporary file is made
there. A rewrite keeps the existing file's permission bits; a new file gets ``0o666`` less the umask, as
``open`` would give it (``tempfile.mkstemp`` alone would leave it ``0o600``). This is the one atomic writer
of the package: the runner's results and run information and the data cache both write through it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._validation import check_bool

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["file_mode", "umask", "write_bytes", "write_csv", "write_json", "write_text"]


def umask() -> int:
    """The process's file-creation mask, read without changing it where the OS allows.

    Returns:
        The mask, e.g. ``0o022``. Linux reports it in ``/proc/self/status``; elsewhere it is read by
        setting it and restoring it at once (not thread-safe there, as ``os.umask`` never is).
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _check_path(path: Any) -> Path:
    """``path`` as a Path to a file name, or raise naming it (an int would be taken as a file descriptor)."""
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"`path` must be a str or os.PathLike, got {path!r:.80} ({type(path).__name__})")
    target = Path(path)
    if os.fspath(path) == "" or target.name in ("", ".", ".."):
        raise ValueError(f"`path` must name a file, got {os.fspath(path)!r}")
    return target


def file_mode(path: str | os.PathLike[str]) -> int:
    """The permission bits a rewrite of ``path`` gets.

    Args:
        path: the target file.

    Returns:
        The existing file's mode bits (``st_mode & 0o7777``), else ``0o666 & ~umask()``.
    """
    path = _check_path(path)
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return 0o666 & ~umask()


def write_bytes(
    path: str | os.PathLike[str], data: bytes | bytearray | memoryview, *, parents: bool = False, suffix: str = ".tmp"
) -> None:
    """Write ``data`` to ``path`` so that readers see the old or the new file, never half of one.

    Args:
        path: the target file.
        data: its new content.
        parents: create missing parent folders first (like ``mkdir -p``).
        suffix: the temporary file's suffix (its name is ``.<target name>.<random><suffix>``).

    Raises:
        TypeError/ValueError: ``data`` is not bytes-like, ``path`` is not a str/PathLike naming a
            file, ``parents`` is not a bool or ``suffix`` holds a path separator.
        OSError: the folder is missing (with ``parents=False``) or not writable; the target is untouched
            and the temporary file removed.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"`data` must be bytes, bytearray or memoryview, got {type(data).__name__}")
    target = _check_path(path)
    parents = check_bool("parents", parents)
    if not isinstance(suffix, str) or any(c in suffix for c in ("/", os.sep, "\0")):
        raise ValueError(f"`suffix` must be a str without path separators or NUL, got {suffix!r}")
    if target.is_dir():
        raise ValueError(f"`path` must name a file, got the folder {str(target)!r}")
    if parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    mode = file_mode(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
    try:
        os.chmod(tmp, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: str | os.PathLike[str], text: str, *, parents: bool = False) -> None:
    """Atomically write ``text`` as UTF-8 to ``path``, newlines unchanged (see :func:`write_bytes`).

    Args:
        path: the target file.
        text: its new content.
        parents: create missing parent folders first.

    Raises:
        TypeError: ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise TypeError(f"`text` must be a str, got {type(text).__name__}")
    _check_path(path)
    write_bytes(path, text.encode("utf-8"), parents=parents)


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Atomically write ``obj`` as indented JSON plus a final newline (non-JSON values go through ``str``).

    Args:
        path: the target file.
        obj: the value to serialise, keys in their given order.
    """
    _check_path(path)
    write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def write_csv(path: str | os.PathLike[str], frame: pd.DataFrame) -> None:
    """Atomically write ``frame`` as CSV without its index, ``\\n`` line ends.

    Args:
        path: the target file.
        frame: the table to write.
    """
    import pandas

    _check_path(path)
    if not isinstance(frame, pandas.DataFrame):
        raise TypeError(f"`frame` must be a pandas.DataFrame, got {type(frame).__name__}")
    write_text(path, frame.to_csv(index=False, lineterminator="\n"))
