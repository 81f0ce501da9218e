"""What ``run_info.json`` records about the software and machine that produced a run."""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

_PACKAGES = ("structnets", "torch", "numpy", "pandas", "scikit-learn", "scipy", "matplotlib", "ray")


def package_versions() -> dict[str, str | None]:
    """Versions of Python and the libraries results depend on (``None``: not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def git_info(path: Path | None = None) -> dict[str, Any] | None:
    """Commit and dirtiness of the git checkout holding ``path`` (default: structnets' source).

    Returns ``None`` when git or a checkout is missing. Uses read-only git commands with
    ``GIT_OPTIONAL_LOCKS=0`` so that it never writes to the repository.
    """
    if shutil.which("git") is None:
        return None
    if path is None:
        path = Path(__file__).resolve().parent
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}

    def git(*args: str) -> str | None:
        try:
            proc = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, timeout=10, env=env)
        except (OSError, subprocess.SubprocessError):
            return None
        return proc.stdout.strip() if proc.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if not commit:
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def available_cpus() -> int:
    """CPUs this process may run on (affinity-aware where the OS supports it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def memory_bytes() -> int | None:
    """Physical memory of the machine in bytes, or ``None`` if the OS does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def machine_info() -> dict[str, Any]:
    """Platform, hostname, CPU count and memory of this machine."""
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "hostname": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        "cpus_available": available_cpus(),
        "memory_bytes": memory_bytes(),
        "python_executable": sys.executable,
    }


def recorded_units(folder: Path) -> int:
    """How many finished units the run folder's ``run_info.json`` last recorded (0 when unreadable)."""
    import json

    try:
        units = json.loads((folder / "run_info.json").read_text(encoding="utf-8")).get("units", {})
        return int(units.get("finished") or 0) if isinstance(units, dict) else 0
    except (OSError, ValueError, TypeError, AttributeError):
        return 0
