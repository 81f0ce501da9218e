"""The ``structnets`` command line, called in-process through ``main(argv)``."""

from __future__ import annotations

import json
import os
import types
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from structnets import __version__, data, experiments
from structnets.cli import main

TOY = "toy_experiment:EXPERIMENT"


@pytest.fixture
def toy_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register the toy experiment under the name 'toy', plus a broken entry."""
    monkeypatch.setitem(experiments._MODULES, "toy", "toy_experiment")
    monkeypatch.setitem(experiments._MODULES, "zz-broken", "structnets.no_such_module")


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"structnets {__version__}"


def test_list_shows_names_and_descriptions(toy_registered: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    toy = next(line for line in lines if line.startswith("toy "))
    assert "Two-stage seeded toy experiment" in toy
    assert any(line.startswith("zz-broken") and "cannot be loaded" in line for line in lines)
    assert [line.split()[0] for line in lines] == sorted(experiments.names())


def test_run_prints_table_and_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    argv = ["run", TOY, "--quick", "--out", str(out), "--set", "scale=2", "label=cli", "--set", "seeds=0,1"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.out == (out / "table.md").read_text() + f"run folder: {out}\n"
    config = json.loads((out / "run_info.json").read_text())["config"]
    assert config["scale"] == 2.0 and config["label"] == "cli" and config["seeds"] == [0, 1] and config["arms"] == 2

    plain = tmp_path / "plain"
    assert main(["run", TOY, "--quick", "--out", str(plain), "--no-progress"]) == 0
    a, b = pd.read_csv(out / "results.csv"), pd.read_csv(plain / "results.csv")
    assert (a["label"] == "cli").all()
    pd.testing.assert_series_equal(a["value"], 2 * b["value"])  # --set scale=2 reached run_unit as a float

    capsys.readouterr()
    assert main(argv) == 0  # same command, same folder: resumes (nothing left to run)
    assert f"resuming run in {out}: 6 units already finished" in capsys.readouterr().err


def test_run_by_registered_name_and_default_out(
    toy_registered: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    # --jobs 1: "toy" is registered by monkeypatching this process only, so worker processes cannot find it.
    assert main(["run", "toy", "--quick", "--jobs", "1"]) == 0
    (folder,) = (tmp_path / "runs").iterdir()
    assert folder.name.startswith("toy-") and (folder / "table.md").exists()
    assert json.loads((folder / "run_info.json").read_text())["experiment_ref"] == "toy"
    assert capsys.readouterr().out.endswith(f"run folder: {Path('runs') / folder.name}\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "nope"], "error: unknown experiment 'nope'; valid names: "),
        (["run", "structnets.nothing_here:X"], "error: cannot import module 'structnets.nothing_here'"),
        (
            ["run", TOY, "--set", "bogus=1"],
            "error: --set: unknown config key 'bogus' for ToyConfig; valid keys: arms, seeds",
        ),
        (["run", TOY, "--set", "arms=two"], "error: --set: `arms` must be an int, got 'two'"),
        (["run", TOY, "--set", "arms"], "error: --set expects key=value, got 'arms'"),
        (["run", TOY, "--set", "arms=0"], "error: --set: `arms` must be a positive int, got 0"),
    ],
)
def test_usage_errors_are_one_line_exit_2(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert _one_error_line(captured.err).startswith(message)
    assert not (tmp_path / "out").exists()


def test_corrupt_db_is_reported_and_left_untouched(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    out.mkdir()
    garbage = os.urandom(1000)
    (out / "results.db").write_bytes(garbage)
    assert main(["run", TOY, "--quick", "--out", str(out)]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert str(out / "results.db") in line and "not an SQLite database" in line
    assert (out / "results.db").read_bytes() == garbage
    assert main(["report", str(out)]) == 2
    assert "not an SQLite database" in _one_error_line(capsys.readouterr().err)
    assert (out / "results.db").read_bytes() == garbage


def test_config_mismatch_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "run")
    assert main(["run", TOY, "--quick", "--out", out]) == 0
    capsys.readouterr()
    assert main(["run", TOY, "--quick", "--out", out, "--set", "repeats=5"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "repeats: stored 2, requested 5" in line and "--out" in line


def test_report_regenerates_and_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["run", TOY, "--quick", "--out", str(out)]) == 0
    table = (out / "table.md").read_text()
    (out / "table.md").unlink()
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    assert capsys.readouterr().out == table
    assert (out / "table.md").read_text() == table
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "is not a directory" in _one_error_line(capsys.readouterr().err)


def test_failed_unit_exits_1_and_resumes(
    tmp_path: Path,
    calls: Callable[[], Counter[str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = str(tmp_path / "run")
    monkeypatch.setenv("STRUCTNETS_TOY_FAIL_KEYS", "stage1/arm=0/seed=1")
    assert main(["run", TOY, "--quick", "--out", out, "-q"]) == 1  # -q: no progress lines, only the error
    line = _one_error_line(capsys.readouterr().err)
    assert "unit 'stage1/arm=0/seed=1' failed: RuntimeError: toy failure requested" in line and "resume" in line
    assert main(["--traceback", "run", TOY, "--quick", "--out", out]) == 1
    assert "Traceback" in capsys.readouterr().err
    monkeypatch.delenv("STRUCTNETS_TOY_FAIL_KEYS")
    assert main(["run", TOY, "--quick", "--out", out]) == 0
    assert calls()["stage1/arm=0/seed=0"] == 1 and calls()["stage1/arm=0/seed=1"] == 3


def test_argparse_errors_return_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", TOY, "--jobs", "0"]) == 2
    assert "must be a positive integer" in capsys.readouterr().err
    assert main(["run", TOY, "--backend", "gpu"]) == 2
    assert main([]) == 2


def _status(name: str, ok: bool, message: str = "") -> types.SimpleNamespace:
    return types.SimpleNamespace(
        dataset=name,
        filename=f"{name}.csv",
        path=Path(f"/d/{name}.csv"),
        ok=ok,
        expected_sha256="a" * 64,
        actual_sha256=("a" if ok else "b") * 64,
        message=message,
    )


def test_data_path_and_verify(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(data, "data_dir", lambda data_dir=None: Path(data_dir or tmp_path), raising=False)
    assert main(["data", "path"]) == 0
    assert capsys.readouterr().out == f"{tmp_path}\n"
    assert main(["data", "path", "--data-dir", "/x"]) == 1  # printed, but it does not exist
    captured = capsys.readouterr()
    assert captured.out == "/x\n"
    line = _one_error_line(captured.err)
    assert "/x (--data-dir) does not exist" in line and "STRUCTNETS_DATA" in line and "download" in line
    monkeypatch.setattr(data, "data_dir", lambda data_dir=None: None)
    assert main(["data", "path"]) == 2
    assert _one_error_line(capsys.readouterr().err).startswith("error: no data folder")

    seen: list[object] = []

    def verify(data_dir: Path | None = None) -> list[types.SimpleNamespace]:
        seen.append(data_dir)
        return [_status("iris", True), _status("wine", False, "sha256 mismatch")]

    monkeypatch.setattr(data, "verify", verify, raising=False)
    assert main(["data", "verify", "--data-dir", "/elsewhere"]) == 1
    captured = capsys.readouterr()
    assert seen == [Path("/elsewhere")]
    rows = captured.out.splitlines()
    assert rows[0].split() == ["dataset", "file", "status", "message", "path"]
    assert rows[1].split()[:3] == ["iris", "iris.csv", "ok"] and "FAIL" in rows[2] and "sha256 mismatch" in rows[2]
    assert _one_error_line(captured.err) == "error: 1 of 2 data files failed verification"

    monkeypatch.setattr(data, "verify", lambda data_dir=None: [_status("iris", True)])
    assert main(["data", "verify"]) == 0
