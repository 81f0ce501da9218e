"""Read-only places give one-line errors and leave everything as it was.

Permissions do not bind root, so under root the command runs as ``nobody`` (``setpriv``), in
folders made for it under the system temporary folder. ``nobody`` must then be able to start this
interpreter and import structnets and the toy from where they lie; a checkout or virtualenv inside a
private folder (mode 0700, e.g. a fresh clone under root's home or a ``mktemp -d`` folder) is out of
its reach, and the tests are then skipped with that reason (first checked by one probe run as ``nobody``).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

TOY = "toy_experiment:EXPERIMENT"
NOBODY = 65534
TOY_FOLDER = Path(__file__).resolve().parents[1] / "runner"
_CODE: dict[Path, Path | None] = {}
"""Each ``place`` folder's copy of the code that ``nobody`` imports (None: not root, the code as it lies)."""

if os.name != "posix":  # pragma: no cover
    pytest.skip("POSIX permissions", allow_module_level=True)
if os.geteuid() == 0 and shutil.which("setpriv") is None:  # pragma: no cover
    pytest.skip("running as root without setpriv: permissions cannot be tested", allow_module_level=True)


def _as_nobody() -> list[str]:
    """The command prefix that runs a command as ``nobody`` under root (nothing otherwise)."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


def _private_folder(path: Path) -> Path | None:
    """The first folder above ``path`` that others may not enter (no ``o+x``), if any."""
    for folder in [*reversed(path.parents)]:
        try:
            if not folder.stat().st_mode & stat.S_IXOTH:
                return folder
        except OSError:
            return folder
    return None


@pytest.fixture(scope="module")
def code_for_nobody() -> Iterator[Path | None]:
    """Under root, a copy of the structnets package and the toy in a folder ``nobody`` can enter.

    The checkout may lie in a private folder (a ``mktemp -d`` folder, root's home), so the command
    run as ``nobody`` imports this copy (first on its ``PYTHONPATH``): the same code, from a place
    it can reach. The interpreter and its libraries cannot be copied cheaply (torch); when they are
    out of reach too, every test here is skipped, saying where and why.
    """
    if os.geteuid() != 0:
        yield None
        return
    import structnets

    folder = Path(tempfile.mkdtemp(prefix="structnets-perm-code-"))
    try:
        shutil.copytree(
            Path(structnets.__file__).parent, folder / "structnets", ignore=shutil.ignore_patterns("__pycache__")
        )
        shutil.copy2(TOY_FOLDER / "toy_experiment.py", folder / "toy_experiment.py")
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        reason = _unreachable_reason(folder)
        if reason is not None:
            pytest.skip(reason)
        yield folder
    finally:
        shutil.rmtree(folder)


def _env(place: Path, code: Path | None) -> dict[str, str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLCONFIGDIR": str(place / "mpl"), "HOME": str(place)}
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), env.get("PYTHONPATH")]))
    return env


def _unreachable_reason(code: Path) -> str | None:
    """Why ``nobody`` cannot run the command with the copy ``code``, or None when it can."""
    import structnets

    probe_code = (
        "import structnets.cli, toy_experiment, sys; "
        "sys.exit(0 if structnets.__file__.startswith(sys.argv[1]) else 'imported ' + structnets.__file__)"
    )
    with tempfile.TemporaryDirectory(prefix="structnets-perm-probe-") as cwd:
        os.chmod(cwd, 0o777)
        (Path(cwd) / "mpl").mkdir(mode=0o777)
        probe = subprocess.run(
            [*_as_nobody(), sys.executable, "-c", probe_code, str(code)],
            cwd=cwd,
            env=_env(Path(cwd), code),
            capture_output=True,
            text=True,
            timeout=300,
        )
    if probe.returncode == 0:
        return None
    private = _private_folder(Path(sys.executable)) or _private_folder(Path(sys.executable).resolve())
    where = f" (private folder: {private})" if private else ""
    last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
    return (
        f"running as root, these tests run the command as nobody (uid {NOBODY}), who cannot start "
        f"{sys.executable} with a copy of structnets and the toy in {code}{where}: {last}; "
        f"run them with an interpreter every user can reach (not {Path(structnets.__file__).parent})"
    )


@pytest.fixture
def place(code_for_nobody: Path | None) -> Iterator[Path]:
    """A folder every user can enter (pytest's own tmp folders are private to their owner)."""
    folder = Path(tempfile.mkdtemp(prefix="structnets-perm-"))
    folder.chmod(0o755)
    (folder / "mpl").mkdir(mode=0o777)
    (folder / "mpl").chmod(0o777)
    _CODE[folder] = code_for_nobody
    try:
        yield folder
    finally:
        for path in [folder, *folder.rglob("*")]:
            if path.is_dir():
                path.chmod(0o755)
        shutil.rmtree(folder)
        del _CODE[folder]


def _cli(place: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_as_nobody(), sys.executable, "-m", "structnets.cli", *args],
        cwd=place,
        env=_env(place, _CODE[place]),
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
