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


# -- a finished unit's saved model deleted or damaged ---------------------------------------------------------


def _model_names(out: Path) -> dict[str, str]:
    with sqlite3.connect(out / RESULTS_DB) as conn:
        rows = conn.execute("SELECT key, json_extract(result, '$.model_file') FROM results").fetchall()
    return dict(rows)


def test_a_finished_unit_whose_model_file_was_deleted_or_damaged_is_rerun(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, calls: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """``rm run/models/<unit>.pt`` (or a garbled one) and resume: the run said "finished" and kept a row
    bound to a file that is gone (load_unit_state then failed); the folder never got it back."""
    from structnets.runner.unit_models import load_unit_state

    monkeypatch.setenv("STRUCTNETS_TOY_MODELS", "1")
    config = ToyConfig.quick()
    out = tmp_path / "run"
    fresh = run("toy", config, out, registry=REGISTRY)
    names = _model_names(out)
    deleted, garbled = "stage1/arm=0/seed=1", "stage2/arm=1/repeat=0"
    assert garbled in names
    expected = {key: (out / names[key]).read_bytes() for key in (deleted, garbled)}
    (out / names[deleted]).unlink()
    (out / names[garbled]).write_bytes(b"garbled")
    before = calls()
    with caplog.at_level("WARNING", logger="structnets.runner"):
        resumed = run("toy", config, out, registry=REGISTRY)
    rerun = calls() - before
    assert sorted(rerun) == sorted([deleted, garbled])  # just those two, each once
    assert names[deleted] in caplog.text and names[garbled] in caplog.text
    for key, payload in expected.items():
        assert (out / names[key]).read_bytes() == payload
        load_unit_state(out, key)  # the row's checksum matches its file again
    pd.testing.assert_frame_equal(
        resumed.drop(columns=["wall_s"], errors="ignore"), fresh.drop(columns=["wall_s"], errors="ignore")
    )


def test_reuse_does_not_take_a_row_whose_model_file_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, calls: Any
) -> None:
    """A --reuse source whose model file was deleted: the row was taken without its file, so the new
    folder held a row bound to nothing."""
    from structnets.runner.unit_models import load_unit_state

    monkeypatch.setenv("STRUCTNETS_TOY_MODELS", "1")
    config = ToyConfig(arms=1, seeds=(0, 1), repeats=1)
    first = tmp_path / "first"
    run("toy", config, first, registry=REGISTRY)
    names = _model_names(first)
    key = "stage1/arm=0/seed=1"
    (first / names[key]).unlink()
    before = calls()
    run("toy", config, tmp_path / "grown", registry=REGISTRY, reuse=[first])
    assert sorted(calls() - before) == [key]  # run here, the others taken
    load_unit_state(tmp_path / "grown", key)


# -- report while a run holds the folder ----------------------------------------------------------------------


def test_report_does_not_write_into_a_folder_a_run_holds(tmp_path: Path) -> None:
    """``structnets report RUN`` while ``structnets run ... --out RUN`` works took no lock: it rewrote
    results.csv, table.md and figures/ under the run, and one that read results.db just before the run's
    last unit wrote an "Unfinished run" table.md after the run's final one, into a finished folder."""
    from structnets.runner import RunLockedError, report
    from structnets.runner.lock import run_lock

    out = tmp_path / "run"
    run("toy", ToyConfig.quick(), out, registry=REGISTRY)
    with sqlite3.connect(out / RESULTS_DB) as conn:  # as the run's folder looks before its last unit
        conn.execute("DELETE FROM results WHERE key = 'stage2/arm=1/repeat=1'")
    table = (out / "table.md").read_bytes()
    csv = (out / "results.csv").read_bytes()
    with run_lock(out), pytest.raises(RunLockedError, match=f"pid {__import__('os').getpid()} "):
        report(out, registry=REGISTRY)
    assert (out / "table.md").read_bytes() == table and (out / "results.csv").read_bytes() == csv
    assert "Unfinished run" in report(out, registry=REGISTRY)  # once the folder is free


# -- a run folder's own files as symbolic links -------------------------------------------------------------


@pytest.mark.parametrize("name", ["checkpoints", "models", RESULTS_DB, "results.db-wal"])
def test_a_run_folder_whose_own_files_are_links_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """``ln -s ../other/checkpoints run/checkpoints``: the run deleted every ``*.ckpt`` of the other folder
    when it finished (the in-flight checkpoints of another run); a linked ``models/`` or ``results.db``
    had the run write into another folder's files, outside that folder's lock."""
    monkeypatch.setenv("STRUCTNETS_TOY_MODELS", "1")
    other = tmp_path / "other"
    run("toy", ToyConfig.quick(), other, registry=REGISTRY)
    (other / "checkpoints").mkdir()
    (other / "checkpoints" / "inflight.ckpt").write_bytes(b"another run's training state")
    before = {p: p.read_bytes() for p in other.rglob("*") if p.is_file()}
    out = tmp_path / "run"
    out.mkdir()
    (out / name).symlink_to(other / name)
    with pytest.raises(StoreError, match="is a symbolic link"):
        run("toy", ToyConfig.quick(), out, registry=REGISTRY)
    assert {p: p.read_bytes() for p in other.rglob("*") if p.is_file()} == before


# -- a garbled byte that SQLite reports in a message that is not UTF-8 ------------------------------------------


def test_a_schema_garbled_into_bytes_that_are_not_utf8_is_a_corrupt_database(tmp_path: Path) -> None:
    """One byte of results.db flipped inside the sessions table's CREATE statement: SQLite's error
    ("malformed database schema (sessions) - near "KE\\x92"") is not UTF-8, so ``PRAGMA quick_check``
    raised UnicodeDecodeError and ``structnets run`` died with a traceback instead of one line."""
    from structnets.runner import report

    out = tmp_path / "run"
    run("toy", ToyConfig.quick(), out, registry=REGISTRY)
    data = bytearray((out / RESULTS_DB).read_bytes())
    at = data.index(b"id INTEGER PRIMARY KEY") + len(b"id INTEGER PRIMARY KE")
    data[at] = 0x92
    (out / RESULTS_DB).write_bytes(bytes(data))
    for call in (lambda: run("toy", ToyConfig.quick(), out, registry=REGISTRY), lambda: report(out, registry=REGISTRY)):
        with pytest.raises(CorruptStoreError, match="results.db is not a usable"):
            call()
    assert (out / RESULTS_DB).read_bytes() == bytes(data)  # left untouched


# -- the command line's account of a run ---------------------------------------------------------------------


def test_a_new_folder_built_from_reuse_is_not_announced_as_a_resumed_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``structnets run toy --reuse A --out NEW`` printed "resuming run in NEW: 8 units already finished"
    for a folder that did not exist: the units were taken from A, nothing was resumed."""
    from structnets.cli import main

    args = ["run", "toy_experiment:EXPERIMENT", "--jobs", "1", "--no-html"]
    assert main([*args, "--set", "arms=2", "seeds=0,1", "repeats=1", "--out", str(tmp_path / "a")]) == 0
    capsys.readouterr()
    new = tmp_path / "new"
    assert (
        main([*args, "--set", "arms=2", "seeds=0,1,2", "repeats=1", "--reuse", str(tmp_path / "a"), "--out", str(new)])
        == 0
    )
    err = capsys.readouterr().err
    assert "resuming" not in err and f"4 finished units taken from --reuse {tmp_path / 'a'}" in err, err
    assert main([*args, "--set", "arms=2", "seeds=0,1,2", "repeats=1", "--out", str(new)]) == 0
    assert f"resuming run in {new}: 7 units already finished" in capsys.readouterr().err


@pytest.mark.parametrize("link", ["symbolic", "hard"])
def test_a_lock_file_that_is_a_link_is_refused_and_its_target_untouched(tmp_path: Path, link: str) -> None:
    """A received run folder holding ``.structnets.lock -> ~/.bashrc``: the lock was opened through the link
    and truncated, so ``structnets run``/``report`` of that folder overwrote the link's target with a
    ``pid=... host=...`` line."""
    from structnets.runner import report
    from structnets.runner.lock import LOCK_FILE

    out = tmp_path / "run"
    run("toy", ToyConfig.quick(), out, registry=REGISTRY)
    victim = tmp_path / "bashrc"
    victim.write_text("export IMPORTANT=1\n")
    if link == "symbolic":
        (out / LOCK_FILE).symlink_to(victim)
    else:
        (out / LOCK_FILE).hardlink_to(victim)
    for call in (lambda: run("toy", ToyConfig.quick(), out, registry=REGISTRY), lambda: report(out, registry=REGISTRY)):
        with pytest.raises(StoreError, match="link"):
            call()
        assert victim.read_text() == "export IMPORTANT=1\n"
        assert (out / LOCK_FILE).is_symlink() or (out / LOCK_FILE).stat().st_nlink == 2


# -- what a write cut short by kill -9 leaves behind ---------------------------------------------------------


def test_temporaries_of_writes_cut_short_are_removed_when_the_run_finishes(tmp_path: Path) -> None:
    """kill -9 while results.csv, table.md, run_info.json, a figure or a model was being written leaves
    its temporary (``.results.csv.x1y2.tmp``, ``.figures-abc/``, ``models/.unit.pt.x.tmp``) in the run
    folder; resuming and finishing the run left them there for good."""
    out = tmp_path / "run"
    run("toy", ToyConfig.quick(), out, registry=REGISTRY)
    leftovers = [
        out / ".results.csv.k2j3h4.tmp",
        out / ".table.md.abcdef.tmp",
        out / ".run_info.json.zz9.tmp",
        out / ".figures-q1w2e3" / "values.png",
        out / "models" / ".stage1-arm=0-seed=0-0123456789ab.pt.x7.tmp",
    ]
    for path in leftovers:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"half a file")
    kept = [out / "notes.txt", out / ".hidden-by-the-user", out / "figures" / "mine.png"]
    for path in kept:
        path.write_bytes(b"the user's")
    run("toy", ToyConfig.quick(), out, registry=REGISTRY)  # resumes: nothing to run, outputs rewritten
    assert [p for p in leftovers if p.exists()] == [] and not (out / ".figures-q1w2e3").exists()
    assert all(p.read_bytes() == b"the user's" for p in kept)


# -- a run folder's own files of the wrong kind -------------------------------------------------------------


@pytest.mark.parametrize("name", ["results.csv", "table.md", "run_info.json", "figures", "models"])
def test_a_run_folder_file_of_the_wrong_kind_is_named_before_any_unit_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, calls: Any, name: str
) -> None:
    """``mkdir run/table.md`` (or results.csv, run_info.json) ended the run in a ValueError traceback
    from atomic_io, after its units ran (run_info.json: before any); ``figures`` or ``models`` as a plain
    file gave 'File exists; check the permissions' or failed every unit that saves a model."""
    from structnets.runner import report

    monkeypatch.setenv("STRUCTNETS_TOY_MODELS", "1")
    out = tmp_path / "run"
    run("toy", ToyConfig.quick(), out, registry=REGISTRY)
    with sqlite3.connect(out / RESULTS_DB) as conn:
        conn.execute("DELETE FROM results WHERE key LIKE 'stage2/%'")
    path = out / name
    if path.is_dir():
        __import__("shutil").rmtree(path)
        path.write_text("a file")
    else:
        path.unlink()
        path.mkdir()
    before = calls()
    kind = "a folder" if name in ("results.csv", "table.md", "run_info.json") else "not a folder"
    for call in (lambda: run("toy", ToyConfig.quick(), out, registry=REGISTRY), lambda: report(out, registry=REGISTRY)):
        with pytest.raises(StoreError, match=f"{path} is {kind}"):
            call()
    assert calls() == before  # refused before any unit ran


# -- finished run folders that cannot be written: read them all the same ---------------------------------------


def _read_only(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``folder`` read-only: its permissions where they bind, else (root) SQLite fails as it does there."""
    import os

    if os.geteuid() != 0:
        for path in [folder, *folder.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        return
    real = sqlite3.connect
    target = str(folder / RESULTS_DB)

    def connect(database: Any, *args: Any, **kwargs: Any) -> Any:
        conn = real(database, *args, **kwargs)
        if kwargs.get("uri") or str(database) != target:
            return conn
        # WAL mode needs results.db-shm beside the file: in a read-only folder, opening fails
        return _FailingConnection(conn, "", sqlite3.OperationalError("unable to open database file"))

    monkeypatch.setattr(store_module.sqlite3, "connect", connect)


def test_a_read_only_finished_run_folder_can_be_reused_compared_and_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, calls: Any
) -> None:
    """A finished run on a read-only mount (an archive, another user's folder): ``--reuse`` of it,
    ``compare`` and ``load_results`` all failed with "cannot open results.db: unable to open database
    file (check the permissions ...)", though nothing needs writing: SQLite's WAL mode wanted to create
    results.db-shm there."""
    from structnets.runner import load_results
    from structnets.runner.compare import compare_runs

    source = tmp_path / "archive"
    config = ToyConfig.quick()
    expected = run("toy", config, source, registry=REGISTRY)
    _read_only(source, monkeypatch)
    try:
        _, _, frame = load_results(source, registry=REGISTRY)
        pd.testing.assert_frame_equal(frame, expected)
        assert compare_runs(source, source, registry=REGISTRY).shared == len(expected)
        before = calls()
        grown = run("toy", config, tmp_path / "grown", registry=REGISTRY, reuse=[source])
        assert calls() == before  # every unit taken from the archive
        pd.testing.assert_frame_equal(grown, expected)
    finally:
        for path in [source, *source.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)


# -- config text that is not UTF-8 --------------------------------------------------------------------------


def test_a_config_string_that_is_not_utf8_is_refused_before_the_folder_exists(tmp_path: Path) -> None:
    """``--set label=$'\\xff'`` (argv bytes that are not UTF-8 arrive as lone surrogates): every unit ran
    and was committed, then writing results.csv died in a UnicodeEncodeError traceback, leaving a folder
    whose stored config holds text no file can be written with."""
    from structnets.runner import InvalidConfigError

    out = tmp_path / "run"
    with pytest.raises(InvalidConfigError, match="`label`.*UTF-8"):
        run("toy", ToyConfig(label="caf\udce9"), out, registry=REGISTRY)
    assert not out.exists()
    with pytest.raises(InvalidConfigError, match="`seeds`.*UTF-8"):
        run("toy", ToyConfig(seeds=(0, "\udcff")), out, registry=REGISTRY)  # type: ignore[arg-type]
    assert not out.exists()


# -- an emptied results.db ----------------------------------------------------------------------------------


def test_an_emptied_results_db_of_a_run_with_finished_units_is_not_restarted_silently(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``truncate -s 0 run/results.db``: a 0-byte file is taken for a new database, so the run started
    over without a word, though run_info.json said 15 units had finished there."""
    out = tmp_path / "run"
    expected = run("toy", ToyConfig(), out, registry=REGISTRY)
    (out / RESULTS_DB).write_bytes(b"")
    with caplog.at_level("WARNING", logger="structnets.runner"):
        again = run("toy", ToyConfig(), out, registry=REGISTRY)
    assert "results.db holds no finished unit" in caplog.text and "run_info.json" in caplog.text
    assert "15" in caplog.text
    pd.testing.assert_frame_equal(again, expected)


def test_a_hard_linked_results_db_is_refused(tmp_path: Path) -> None:
    """``cp -al runA runB`` (a hard-link copy) then a run in runB: one database file under two names, whose
    journals (results.db-wal) SQLite keeps beside each name, so runs in both corrupt it; runB's run
    wrote straight into runA's database, outside runA's lock."""
    import contextlib
    import os

    first = tmp_path / "a"
    run("toy", ToyConfig.quick(), first, registry=REGISTRY)
    second = tmp_path / "b"
    second.mkdir()
    os.link(first / RESULTS_DB, second / RESULTS_DB)
    with contextlib.closing(sqlite3.connect(first / RESULTS_DB)) as conn:
        conn.execute("DELETE FROM results WHERE key LIKE 'stage2/%'")
        conn.commit()
    before = (first / RESULTS_DB).read_bytes()
    with pytest.raises(StoreError, match="hard link"):
        run("toy", ToyConfig.quick(), second, registry=REGISTRY)
    assert (first / RESULTS_DB).read_bytes() == before
