"""Read-only places give one-line errors and leave everything as it was.

Permissions do not bind root, so under root the command runs as ``nobody`` (``setpriv``), in
folders made for it under the system temporary folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

TOY = "toy_experiment:EXPERIMENT"
NOBODY = 65534

if os.name != "posix":  # pragma: no cover
    pytest.skip("POSIX permissions", allow_module_level=True)
if os.geteuid() == 0 and shutil.which("setpriv") is None:  # pragma: no cover
    pytest.skip("running as root without setpriv: permissions cannot be tested", allow_module_level=True)


@pytest.fixture
def place() -> Iterator[Path]:
    """A folder every user can enter (pytest's own tmp folders are private to their owner)."""
    folder = Path(tempfile.mkdtemp(prefix="structnets-perm-"))
    folder.chmod(0o755)
    (folder / "mpl").mkdir(mode=0o777)
    (folder / "mpl").chmod(0o777)
    try:
        yield folder
    finally:
        for path in [folder, *folder.rglob("*")]:
            if path.is_dir():
                path.chmod(0o755)
        shutil.rmtree(folder)


def _cli(place: Path, *args: str) -> subprocess.CompletedProcess[str]:
    prefix: list[str] = []
    if os.geteuid() == 0:
        prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLCONFIGDIR": str(place / "mpl"), "HOME": str(place)}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "structnets.cli", *args],
        cwd=place,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _finished_run(place: Path) -> Path:
    from structnets.cli import main

    out = place / "run"
    assert main(["run", TOY, "--quick", "--jobs", "1", "--no-progress", "--out", str(out)]) == 0
    return out


def test_out_under_a_read_only_folder(place: Path) -> None:
    locked = place / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    proc = _cli(place, "run", TOY, "--quick", "--jobs", "1", "--out", str(locked / "run"))
    assert proc.returncode == 2
    line = _one_error_line(proc)
    assert f"cannot create the run folder {locked / 'run'}: Permission denied" in line and "--out" in line
    assert not (locked / "run").exists()


def test_a_read_only_results_db_is_named(place: Path) -> None:
    out = _finished_run(place)
    for path in [out, *out.rglob("*")]:
        path.chmod(0o777 if path.is_dir() else 0o666)
    (out / "results.db").chmod(0o444)
    before = _snapshot(out)
    proc = _cli(place, "run", TOY, "--quick", "--jobs", "1", "--out", str(out))
    assert proc.returncode == 2
    assert f"{out / 'results.db'} is read-only, so the run cannot record its units there" in _one_error_line(proc)
    assert _snapshot(out) == before


@pytest.mark.parametrize("command", ["run", "report"])
def test_a_read_only_run_folder_is_called_read_only(place: Path, command: str) -> None:
    out = _finished_run(place)
    out.chmod(0o555)
    before = _snapshot(out)
    args = ["run", TOY, "--quick", "--jobs", "1", "--out", str(out)] if command == "run" else ["report", str(out)]
    proc = _cli(place, *args)
    assert proc.returncode == 2
    line = _one_error_line(proc)
    assert f"{out} is not writable" in line and "not a usable" not in line
    assert _snapshot(out) == before
