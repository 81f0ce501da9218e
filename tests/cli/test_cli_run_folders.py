"""Run folders that never surprise: no code named by a run folder is imported, partial
runs report what exists, bad configs are refused before the folder exists, damaged folders give one
line, output files follow the umask."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from toy_experiment import ToyConfig

from structnets.cli import main
from structnets.runner import InvalidConfigError, run

TOY = "toy_experiment:EXPERIMENT"


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def _toy_run(out: Path) -> None:
    assert main(["run", TOY, "--quick", "--out", str(out), "--no-progress", "--jobs", "1"]) == 0


def _set_meta(out: Path, **values: str) -> None:
    with sqlite3.connect(out / "results.db") as conn:
        for name, value in values.items():
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (name, value))


def _reseal(conn: sqlite3.Connection, key: str) -> None:
    """Recompute an edited row's checksum: the row stands for one that other code wrote so."""
    from structnets.runner.store import row_digest

    columns = "key, params, result, started, finished, worker, host, wall_s"
    row = conn.execute(f"SELECT {columns} FROM results WHERE key = ?", (key,)).fetchone()
    conn.execute("UPDATE results SET digest = ? WHERE key = ?", (row_digest(*row), key))


def _edit_result(out: Path, key: str, edit) -> None:  # type: ignore[no-untyped-def]
    with sqlite3.connect(out / "results.db") as conn:
        (text,) = conn.execute("SELECT result FROM results WHERE key = ?", (key,)).fetchone()
        row = json.loads(text)
        edit(row)
        conn.execute("UPDATE results SET result = ? WHERE key = ?", (json.dumps(row), key))
        _reseal(conn, key)
    with sqlite3.connect(out / "results.db") as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # so that the file's bytes hold the edit


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m structnets.cli ARGS`` in ``cwd``: ``-m`` puts ``cwd`` first on ``sys.path``."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "structnets.cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


# -- 1. a run folder cannot make report import code ----------------------------------------------


@pytest.fixture(scope="module")
def toy_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("toy") / "run"
    _toy_run(out)
    return out


def _copy_run(src: Path, dest: Path) -> Path:
    dest.mkdir()
    (dest / "results.db").write_bytes((src / "results.db").read_bytes())
    return dest


def _received_folder(toy_folder: Path, tmp_path: Path, experiment: str, ref: str) -> tuple[Path, Path, Path]:
    """A copy of a toy run whose results.db names ``experiment``/``ref``, and a folder holding a
    module ``evil_mod`` that writes a marker file when imported."""
    work = tmp_path / "cwd"
    work.mkdir()
    marker = tmp_path / "imported"
    (work / "evil_mod.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\nEXPERIMENT = None\n"
    )
    out = _copy_run(toy_folder, work / "received")
    _set_meta(out, experiment=experiment, experiment_ref=ref)
    return work, out, marker


@pytest.mark.parametrize(("experiment", "ref"), [("evil", "evil_mod:EXPERIMENT"), ("this", "this:X")])
def test_report_never_imports_a_module_the_folder_names(
    toy_folder: Path, tmp_path: Path, experiment: str, ref: str
) -> None:
    work, out, marker = _received_folder(toy_folder, tmp_path, experiment, ref)
    # `python -m` from the folder holding the module: the cwd is first on sys.path.
    proc = _cli("report", str(out), cwd=work)
    assert proc.returncode == 2, proc.stderr
    line = _one_error_line(proc.stderr)
    assert "not a registered experiment" in line and "--experiment" in line
    assert not marker.exists()
    assert proc.stdout == ""  # `import this` would print the Zen of Python
    assert not (out / "table.md").exists()


@pytest.mark.parametrize(
    ("experiment", "ref"),
    [("evil_mod", ""), ("toy", "evil_mod:EXPERIMENT"), ("evil", "evil_mod"), ("evil", "toy_experiment:ToyExperiment")],
)
def test_report_in_process_refuses_every_unregistered_name(
    toy_folder: Path,
    tmp_path: Path,
    experiment: str,
    ref: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    work, out, marker = _received_folder(toy_folder, tmp_path, experiment, ref)
    monkeypatch.syspath_prepend(str(work))  # importable, were it ever imported
    assert main(["report", str(out)]) == 2
    assert "not a registered experiment" in _one_error_line(capsys.readouterr().err)
    assert not marker.exists() and "evil_mod" not in sys.modules


def test_report_of_a_registered_or_explicit_experiment_works(
    toy_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _copy_run(toy_folder, tmp_path / "run")
    assert main(["report", str(out)]) == 0  # the toy is registered (tests/cli/conftest.py), so its spec is trusted
    table = (out / "table.md").read_text()
    _set_meta(out, experiment_ref="this:X")
    capsys.readouterr()
    assert main(["report", str(out)]) == 2
    assert "'this:X', which is not a registered experiment" in _one_error_line(capsys.readouterr().err)
    # The caller vouches for the code: then the stored reference is not used at all.
    assert main(["report", str(out), "--experiment", TOY]) == 0
    assert capsys.readouterr().out == table
    assert main(["report", str(out), "--experiment", "nope"]) == 2
    assert "--experiment: unknown experiment 'nope'" in _one_error_line(capsys.readouterr().err)


# -- 2. reports of unfinished runs --------------------------------------------------------------


@pytest.mark.parametrize("name", ["lowrank-uci", "dlor-sawtooth", "swish-construction"])
def test_report_of_a_run_without_units_says_what_is_missing(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from structnets import experiments
    from structnets.runner.config import config_to_json
    from structnets.runner.store import ResultStore

    exp = experiments.get(name)
    config = exp.config_class.quick()
    ResultStore.create_or_resume(
        tmp_path / "results.db", experiment=name, experiment_ref=name, config=config_to_json(config)
    ).close()
    n_first = len(exp.units(config, pd.DataFrame({"key": pd.Series([], dtype=object)})))
    assert main(["report", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert (
        f"Unfinished run of {name}**: 0 of {n_first} units known so far are finished; {n_first} missing" in captured.out
    )
    assert f"--out {tmp_path}" in captured.out
    assert (tmp_path / "table.md").read_text() == captured.out
    assert (tmp_path / "results.csv").read_text().strip() == "key"


def test_report_of_a_toy_run_cut_short_shows_its_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    _toy_run(out)
    with sqlite3.connect(out / "results.db") as conn:
        conn.execute("DELETE FROM results WHERE key != 'stage1/arm=0/seed=0'")
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    table = capsys.readouterr().out
    assert "1 of 4 units known so far are finished; 3 missing (`stage1/arm=0/seed=1`" in table
    assert "| 1 | 0 | 1 |" in table  # the experiment's own table of the row that exists
    assert len((out / "results.csv").read_text().splitlines()) == 2


# -- 3. the whole config is checked before the folder exists ----------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["lr=nan"], "error: --set: `lr` must be finite, got nan"),
        (["lr=0"], "error: --set: `lr` must be a finite float > 0 (it is passed to training), got 0.0"),
        (["epochs=0"], "error: --set: `epochs` must be an int >= 1 (it is passed to training), got 0"),
        (["batch_size=-1"], "error: --set: `batch_size` must be an int >= 1"),
        (["bottleneck=inf"], "error: --set: `bottleneck` must be finite"),
    ],
)
def test_bad_config_values_are_refused_before_the_folder_exists(
    overrides: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["run", "lowrank-uci", "--quick", "--out", str(out), "--set", *overrides]) == 2
    assert _one_error_line(capsys.readouterr().err).startswith(message)
    assert not out.exists()


def test_library_run_checks_the_config_before_creating_the_folder(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfigError, match="`scale` must be finite, got nan"):
        run(TOY, ToyConfig(scale=float("nan")), tmp_path / "out")
    with pytest.raises(InvalidConfigError, match="`seeds` must be finite"):
        run(TOY, ToyConfig(seeds=(0, float("inf"))), tmp_path / "out")  # type: ignore[arg-type]
    assert not (tmp_path / "out").exists()


def test_a_run_whose_first_unit_failed_can_rerun_with_a_corrected_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "run")
    monkeypatch.setenv("STRUCTNETS_TOY_FAIL_KEYS", "stage1/arm=0/seed=0")
    args = ["run", TOY, "--quick", "--out", out, "--jobs", "1", "--no-progress"]
    assert main([*args, "--set", "label=bad"]) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert "no unit has finished" in line and "the same --out may be used with a changed config" in line
    monkeypatch.delenv("STRUCTNETS_TOY_FAIL_KEYS")
    assert main([*args, "--set", "label=good"]) == 0  # the advice works
    assert json.loads((Path(out) / "run_info.json").read_text())["config"]["label"] == "good"

    monkeypatch.setenv("STRUCTNETS_TOY_FAIL_KEYS", "stage2/arm=1/repeat=0,stage2/arm=0/repeat=0")
    out2 = str(tmp_path / "run2")
    args2 = ["run", TOY, "--quick", "--out", out2, "--jobs", "1", "--no-progress"]
    capsys.readouterr()
    assert main(args2) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert f"the 4 finished units are saved in {out2}" in line and "rerun the same command to resume" in line
    monkeypatch.delenv("STRUCTNETS_TOY_FAIL_KEYS")
    assert main(args2) == 0


# -- 7. damaged run folders: one line, nothing overwritten ------------------------------------------


def test_a_stored_value_of_the_wrong_type_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    _toy_run(out)
    _edit_result(out, "stage1/arm=1/seed=0", lambda row: row.update(value="oops"))
    db = (out / "results.db").read_bytes()
    table = (out / "table.md").read_text()
    capsys.readouterr()
    for argv in (["report", str(out)], ["run", TOY, "--quick", "--out", str(out), "--jobs", "1"]):
        assert main(argv) == 2
        line = _one_error_line(capsys.readouterr().err)
        assert "row 'stage1/arm=1/seed=0' holds 'oops' (str) in column 'value'" in line
        assert "number values" in line and "DELETE FROM results WHERE key='stage1/arm=1/seed=0'" in line
    assert (out / "table.md").read_text() == table and (out / "results.db").read_bytes() == db


def test_a_stored_row_missing_a_column_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    _toy_run(out)
    _edit_result(out, "stage2/arm=1/repeat=1", lambda row: row.pop("value"))
    capsys.readouterr()
    assert main(["report", str(out)]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "row 'stage2/arm=1/repeat=1' lacks the column 'value' that the other 1 rows of its kind" in line
    # The advised fix works: delete the row, rerun to recompute it.
    with sqlite3.connect(out / "results.db") as conn:
        conn.execute("DELETE FROM results WHERE key='stage2/arm=1/repeat=1'")
    assert main(["run", TOY, "--quick", "--out", str(out), "--jobs", "1"]) == 0


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda c: c.update(arms="two"),
            "its stored config is not a valid ToyConfig: saved config key 'arms' must be int",
        ),
        (lambda c: c.update(seeds=[0, "x"]), "saved config key 'seeds' must be tuple[int, ...]"),
        (lambda c: c.update(bogus=1), "saved config has keys ['bogus'] that ToyConfig does not define"),
        (lambda c: c.update(arms=0), "its stored config is not a valid ToyConfig: `arms` must be a positive int"),
    ],
)
def test_a_stored_config_of_the_wrong_type_or_with_extra_keys_is_refused(
    edit,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],  # type: ignore[no-untyped-def]
) -> None:
    out = tmp_path / "run"
    _toy_run(out)
    with sqlite3.connect(out / "results.db") as conn:
        config = json.loads(conn.execute("SELECT value FROM meta WHERE name='config'").fetchone()[0])
    edit(config)
    _set_meta(out, config=json.dumps(config))
    capsys.readouterr()
    assert main(["report", str(out)]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert message in line and "results.db is not a usable structnets results database" in line


def test_a_stored_config_that_is_not_an_object_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    _toy_run(out)
    _set_meta(out, config="[1, 2]")
    capsys.readouterr()
    assert main(["report", str(out)]) == 2
    assert "its stored config is a JSON list, not an object" in _one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_outputs_follow_the_umask(mask: int, tmp_path: Path) -> None:
    old = os.umask(mask)
    try:
        _toy_run(tmp_path / "run")
    finally:
        os.umask(old)
    for name in ("table.md", "results.csv", "run_info.json"):
        assert (tmp_path / "run" / name).stat().st_mode & 0o777 == 0o666 & ~mask, name
    assert (tmp_path / "run" / "figures" / "values.png").stat().st_mode & 0o777 == 0o666 & ~mask


# -- a folder of another config is refused, with the --set that resumes it --------------------------


def test_a_folder_of_another_config_is_refused_with_the_set_that_resumes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], calls: Callable[[], Counter[str]]
) -> None:
    """After a preset's default changes, its old folders name the --set that makes them resume."""
    out = tmp_path / "run"
    assert main(["run", TOY, "--out", str(out), "--no-progress", "--jobs", "1", "--set", "seeds=0,1", "scale=2.5"]) == 0
    capsys.readouterr()
    assert main(["run", TOY, "--out", str(out), "--no-progress", "--jobs", "1"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "seeds: stored [0, 1], requested [0, 1, 2]" in line
    assert line.endswith("to resume it as stored, pass --set scale=2.5 seeds=0,1")
    ran = calls()
    assert ran and all(count == 1 for count in ran.values())
    # the hint does what it says: the folder resumes, and no unit runs again
    assert main(["run", TOY, "--out", str(out), "--no-progress", "--jobs", "1", "--set", "scale=2.5", "seeds=0,1"]) == 0
    assert calls() == ran


def test_a_folder_of_another_experiment_gets_no_set_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    _toy_run(out)
    _set_meta(out, experiment="other")
    capsys.readouterr()
    assert main(["run", TOY, "--quick", "--out", str(out), "--no-progress", "--jobs", "1"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "experiment: stored 'other'" in line and "--set" not in line
