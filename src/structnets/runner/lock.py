"""One run at a time per run folder: an advisory lock held for the whole of :func:`~.orchestrate.run`.

The lock is ``flock`` on ``.structnets.lock`` in the run folder. The kernel drops it when its holder
exits, however it exits (``kill -9`` included), so a lock left by a dead process is simply taken
over. The file records the holder's pid, host and start time, so the refusal names the other
process. Where ``fcntl`` is missing (Windows), the file is a pid file: a lock whose process is no
longer alive is taken over.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

from .errors import RunLockedError, StoreError
from .store import utc_now

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = ".structnets.lock"


def _holder_text(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return os.read(fd, 4096).decode("utf-8", "replace")
    except OSError:
        return ""


def _describe(text: str) -> str:
    fields = dict(part.split("=", 1) for part in text.split() if "=" in part)
    pid = fields.get("pid", "?")
    host = fields.get("host", "?")
    started = fields.get("started", "?")
    return f"pid {pid} on {host}, started {started}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _refused(folder: Path, text: str) -> RunLockedError:
    return RunLockedError(
        f"{folder} is in use by another structnets run ({_describe(text)}); "
        "wait for it to finish or stop it, or use another output folder (--out)"
    )


def _not_plain(path: Path, what: str) -> StoreError:
    return StoreError(
        f"the lock file {path} is {what}: it is never opened, since a run writes into it; remove it and rerun"
    )


def _open_locked(path: Path, folder: Path) -> int:
    """Open ``path`` and hold its lock; return the descriptor. Retries while the file is swapped."""
    while True:
        try:
            # never through a link: a run folder is data, and the lock file is truncated and written
            flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
            fd = os.open(path, flags, 0o666)
        except OSError as e:
            if path.is_symlink():
                raise _not_plain(path, f"a symbolic link (to {os.readlink(path)})") from e
            raise StoreError(f"cannot create the lock file {path}: {e.strerror or e}") from e
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
                raise _not_plain(path, "not a plain file" if not stat.S_ISREG(info.st_mode) else "a hard link")
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise _refused(folder, _holder_text(fd)) from None
                # The holder we waited on may have removed the file meanwhile: then this lock is
                # on a file nobody else will open, so start again with the file now at ``path``.
                try:
                    same = os.fstat(fd).st_ino == os.stat(path).st_ino
                except FileNotFoundError:
                    same = False
                if not same:
                    os.close(fd)
                    continue
            else:  # pragma: no cover - Windows: a pid file, taken over when its process is gone
                text = _holder_text(fd)
                pid = dict(part.split("=", 1) for part in text.split() if "=" in part).get("pid", "")
                if pid.isdigit() and int(pid) != os.getpid() and _pid_alive(int(pid)):
                    raise _refused(folder, text)
        except BaseException:
            os.close(fd)
            raise
        return fd


@contextlib.contextmanager
def run_lock(folder: Path) -> Iterator[None]:
    """Hold the run lock of ``folder`` while the ``with`` block runs; the lock file is removed after.

    Raises:
        RunLockedError: another live process holds it (the message gives its pid and host).
        StoreError: the lock file cannot be created (e.g. a read-only folder).
    """
    path = Path(folder) / LOCK_FILE
    fd = _open_locked(path, Path(folder))
    try:
        me = f"pid={os.getpid()} host={socket.gethostname()} started={utc_now()}\n"
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, me.encode())
        yield
    finally:
        # Unlink while still holding the lock, so a waiting opener sees the file change and retries.
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)
