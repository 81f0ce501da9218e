"""Adversarial review of the run machinery (session 9): a full disk, empty folder arguments, lost model files.

Each test reproduces a defect found by attacking ``structnets run`` from outside (a small tmpfs filled
up, ``--out ""``, a unit's saved model deleted); a full disk is simulated here by making SQLite or the
writers fail with the errors a full disk gives (``SQLITE_FULL``, ``ENOSPC``).
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import toy_experiment
from toy_experiment import REGISTRY, ToyConfig

from structnets import atomic_io
from structnets.runner import CorruptStoreError, StoreError, run
from structnets.runner import store as store_module
from structnets.runner.outputs import RESULTS_DB


def _sqlite_error(name: str, code: int, text: str) -> sqlite3.OperationalError:
    error = sqlite3.OperationalError(text)
    error.sqlite_errorcode = code  # type: ignore[attr-defined]
    error.sqlite_errorname = name  # type: ignore[attr-defined]
    return error


class _FailingConnection:
    """A real connection whose statements starting with ``fail_on`` raise ``error`` after ``after`` of them."""

    def __init__(self, conn: sqlite3.Connection, fail_on: str, error: sqlite3.Error, after: int = 0) -> None:
        self._conn = conn
        self._fail_on = fail_on
        self._error = error
        self._left = after

    def execute(self, sql: str, *args: Any) -> Any:
        if sql.lstrip().startswith(self._fail_on):
            if self._left == 0:
                raise self._error
            self._left -= 1
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _patch_connect(monkeypatch: pytest.MonkeyPatch, fail_on: str, error: sqlite3.Error, after: int = 0) -> None:
    real = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> Any:
        return _FailingConnection(real(*args, **kwargs), fail_on, error, after)

    monkeypatch.setattr(store_module.sqlite3, "connect", connect)


FULL = ("SQLITE_FULL", 13, "database or disk is full")
IOERR = ("SQLITE_IOERR_SHMSIZE", 4874, "disk I/O error")


@pytest.mark.parametrize("error", [FULL, IOERR], ids=["full", "ioerr"])
def test_full_disk_while_committing_is_not_called_a_corrupt_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: tuple[str, int, str]
) -> None:
    """A 300 kB tmpfs filled up: the unit commit failed with SQLITE_FULL and the run said results.db was
    "not a usable structnets results database ... move it away", about a sound file on a full disk."""
    out = tmp_path / "run"
    _patch_connect(monkeypatch, "INSERT OR IGNORE INTO results", _sqlite_error(*error), after=3)
    with pytest.raises(StoreError) as caught:
        run("toy", ToyConfig.quick(), out, registry=REGISTRY)
    assert not isinstance(caught.value, CorruptStoreError), caught.value
    message = str(caught.value)
    assert str(out / RESULTS_DB) in message and "full" in message and "not a usable" not in message
    assert "rerun" in message
    monkeypatch.undo()
    # the folder resumes once there is space, and the result equals an uninterrupted run's
    resumed = run("toy", ToyConfig.quick(), out, registry=REGISTRY)
    fresh = run("toy", ToyConfig.quick(), tmp_path / "fresh", registry=REGISTRY)
    pd.testing.assert_frame_equal(resumed, fresh)


def test_io_error_on_opening_is_not_called_a_corrupt_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening results.db on a full tmpfs failed in quick_check with 'disk I/O error' (no room for -shm):
    reported as a corrupt database as well."""
    out = tmp_path / "run"
    run("toy", ToyConfig.quick(), out, registry=REGISTRY)
    _patch_connect(monkeypatch, "PRAGMA quick_check", _sqlite_error(*IOERR))
    with pytest.raises(StoreError) as caught:
        run("toy", ToyConfig.quick(), out, registry=REGISTRY)
    assert not isinstance(caught.value, CorruptStoreError), caught.value
    assert "disk I/O error" in str(caught.value) and "full" in str(caught.value)


def test_genuine_corruption_is_still_called_corrupt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    run("toy", ToyConfig.quick(), out, registry=REGISTRY)
    _patch_connect(
        monkeypatch, "PRAGMA quick_check", _sqlite_error("SQLITE_CORRUPT", 11, "database disk image is malformed")
    )
    with pytest.raises(CorruptStoreError):
        run("toy", ToyConfig.quick(), out, registry=REGISTRY)


def test_full_disk_writing_results_csv_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """results.csv on a full disk: the error said 'check the permissions of the run folder'."""
    real = atomic_io.write_bytes

    def write_bytes(path: Any, data: Any, **kwargs: Any) -> None:
        if Path(path).name == "results.csv":
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data, **kwargs)

    monkeypatch.setattr(atomic_io, "write_bytes", write_bytes)
    with pytest.raises(StoreError) as caught:
        run("toy", ToyConfig.quick(), tmp_path / "run", registry=REGISTRY)
    message = str(caught.value)
    assert "results.csv" in message and "No space left on device" in message
    assert "permissions" not in message


def test_full_disk_drawing_figures_is_not_blamed_on_the_experiment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """figures/ on a full disk: 'toy.figures() failed on the stored results: OSError: [Errno 28] ...'
    blamed the experiment's code for the disk."""

    def figures(self: Any, frame: Any, config: Any, folder: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(toy_experiment.ToyExperiment, "figures", figures)
    with pytest.raises(StoreError) as caught:
        run("toy", ToyConfig.quick(), tmp_path / "run", registry=REGISTRY)
    message = str(caught.value)
    assert "figures" in message and "No space left on device" in message
    assert "toy.figures() failed" not in message


# -- empty folder arguments ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "toy_experiment:EXPERIMENT", "--quick", "--jobs", "1", "--no-progress", "--out", ""],
        ["run", "toy_experiment:EXPERIMENT", "--quick", "--jobs", "1", "--no-progress", "--reuse", ""],
        ["report", ""],
        ["compare", "", "elsewhere"],
    ],
    ids=["run-out", "run-reuse", "report", "compare"],
)
def test_an_empty_folder_argument_is_refused_not_taken_for_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """``structnets run toy --out ""`` (an unset variable in ``--out "$DIR"``) ran into the current folder:
    argparse's ``type=Path`` turns "" into ``Path(".")``, which the library's own check of "" never sees."""
    from structnets.cli import main

    monkeypatch.chdir(tmp_path)
    if "--reuse" in argv:
        argv = [*argv, "--out", str(tmp_path / "run")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "''" in err and "error:" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == []
