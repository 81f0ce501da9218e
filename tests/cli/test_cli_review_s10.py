"""Adversarial review of the command line (session 10): hostile arguments, output files, pipes, default folders.

Each test failed on the code before its fix; the numbers measured then are in the commit messages.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest

from structnets.cli import main

TOY = "toy_experiment:EXPERIMENT"
# the smallest swish-construction run claims can read: 3 units, about a second in-process
TINY_SWISH = [
    "run", "swish-construction", "--quick", "--jobs", "1", "--no-html", "-q", "--set", "targets=power:1:0.5",
    "Ms_1d=4", "taus=2", "lams=4", "sweep_M_1d=4", "grid_1d=201",
]  # fmt: skip


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


# -- --device: names torch refuses --------------------------------------------------------------


@pytest.mark.parametrize("device", ["cuda:²", "cuda:٣", "cuda:01", "cuda:128"])
def test_device_names_torch_refuses_are_usage_errors_on_a_gpu_machine(
    device: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A machine with GPUs, simulated: before the fix "cuda:²" reached int("²") in the runner (a ValueError
    # traceback) and "cuda:01"/"cuda:128" the config's own check (a ValueError traceback), not one line.
    import torch

    import structnets.runner.device as runner_device

    monkeypatch.setattr(runner_device, "cuda_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 200)
    out = tmp_path / "out"
    assert main(["run", TOY, "--quick", "--device", device, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"argument --device: must be cpu, cuda, cuda:N (N in 0..127) or auto, got {device!r}" in err
    assert not out.exists()


# -- --set: a key given twice ---------------------------------------------------------------------


@pytest.mark.parametrize("second", ["arms=2", " arms =2"])
def test_set_key_given_twice_is_refused(second: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # before: the last value won silently (--set arms=1 arms=2 ran arms=2)
    out = tmp_path / "out"
    assert main(["run", TOY, "--quick", "--set", "arms=1", "seeds=0", second, "--out", str(out)]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line == f"error: --set: `arms` is given twice ('arms=1' and {second!r}); give each key once"
    assert not out.exists()


def test_set_distinct_keys_still_apply(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert (
        main(
            [
                "run",
                TOY,
                "--quick",
                "--jobs",
                "1",
                "-q",
                "--no-html",
                "--set",
                "arms=1",
                "--set",
                "seeds=3",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert capsys.readouterr().err == ""
    import json

    assert json.loads((out / "run_info.json").read_text())["config"]["seeds"] == [3]


# -- show: values --set cannot read back -------------------------------------------------------


def test_show_writes_sequences_of_pairs_as_set_reads_them_back(capsys: pytest.CaptureFixture[str]) -> None:
    # smoothness-rates' targets ((1, 1.0), (2, 2.0)) was shown as 1,1.0,2,2.0, which --set refused (the page
    # then named it as unsettable); it is now written 1:1.0,2:2.0 (no shell metacharacter) and --set reads it back
    assert main(["show", "smoothness-rates"]) == 0
    out = capsys.readouterr().out
    assert "| targets | tuple[tuple[int, float], ...] | 1:1.0,2:2.0 | 1:1.0 |" in out
    assert "--set cannot" not in out
    assert main(["show", "lowrank-uci"]) == 0
    assert "--set cannot" not in capsys.readouterr().out  # every cell there parses back


def test_set_reads_and_refuses_sequences_of_pairs() -> None:
    from structnets.experiments.smoothness_rates.config import SmoothnessRatesConfig
    from structnets.runner.config import format_value, parse_overrides, parse_value

    parsed = parse_overrides(SmoothnessRatesConfig, ["targets=1:1.0, 3:1.5", "approx_targets=2:3.0"])
    assert parsed["targets"] == ((1, 1.0), (3, 1.5)) and parsed["approx_targets"] == ((2, 3.0),)
    for value in (((1, 1.0), (2, 2.0)), ((1, 1.0),), ()):
        assert parse_value(format_value(value), tuple[tuple[int, float], ...], name="t") == value
    with pytest.raises(ValueError, match="`targets` must be 2 colon-separated values"):
        parse_overrides(SmoothnessRatesConfig, ["targets=1:1.0,2"])
    with pytest.raises(ValueError, match="`targets` must be 2 colon-separated values"):
        parse_overrides(SmoothnessRatesConfig, ["targets=1,1.0,2,2.0"])  # the old flattened form
    with pytest.raises(ValueError, match="cannot be set from the command line"):
        parse_value("1", tuple[tuple[tuple[int, int], ...], ...], name="deep")
    assert parse_value("1,2,3", tuple[int, ...], name="flat") == (1, 2, 3)  # flat sequences unchanged


# -- claims: output files -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def swish_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("claims") / "swish"
    assert main([*TINY_SWISH, "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("option", ["--out", "--csv", "--html"])
def test_claims_output_that_is_a_folder_is_one_line(
    option: str, swish_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: ValueError traceback, exit 1, after the whole table had been decided
    capsys.readouterr()
    assert main(["claims", str(swish_run), option, str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert _one_error_line(captured.err) == f"error: {option}: {tmp_path} is a folder; name the file to write"
    assert captured.out == ""


def test_claims_output_in_a_missing_folder_names_the_option(
    swish_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: "error: [Errno 2] No such file or directory: '.../missing/.t.md.izi2kkzh.tmp'"
    target = tmp_path / "missing" / "t.md"
    capsys.readouterr()
    assert main(["claims", str(swish_run), "--csv", str(tmp_path / "t.csv"), "--out", str(target)]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line == f"error: --out: cannot write {target}: the folder {target.parent} does not exist"
    assert not (tmp_path / "t.csv").exists()  # nothing written before the refusal


def test_claims_two_options_naming_one_file_are_refused(
    swish_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: the CSV silently replaced the Markdown table written a moment earlier
    target = tmp_path / "t.md"
    capsys.readouterr()
    assert main(["claims", str(swish_run), "--out", str(target), "--csv", str(tmp_path / "." / "t.md")]) == 2
    assert (
        _one_error_line(capsys.readouterr().err)
        == f"error: --out and --csv both name {tmp_path / 't.md'}; give each output its own file"
    )
    assert not target.exists()


# -- a closed pipe ------------------------------------------------------------------------------


def test_closed_stdout_pipe_stops_quietly() -> None:
    # `structnets list | head -1`: before, "error: [Errno 32] Broken pipe" on stderr and exit status 2
    proc = subprocess.Popen(
        [sys.executable, "-m", "structnets", "list"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first line is written
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 141
    assert err == ""


# -- data path: a file ----------------------------------------------------------------------------


def test_data_path_that_is_a_file_is_not_called_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "data.txt"
    file.write_text("x")
    assert main(["data", "path", "--data-dir", str(file)]) == 1
    captured = capsys.readouterr()
    assert captured.out == f"{file}\n"
    assert _one_error_line(captured.err).startswith(f"error: the data folder {file} (--data-dir) is not a folder;")


# -- the default run folder ---------------------------------------------------------------------


class _FrozenClock(dt.datetime):
    @classmethod
    def now(cls, tz: dt.tzinfo | None = None) -> _FrozenClock:  # type: ignore[override]
        return cls(2026, 1, 2, 3, 4, 5)


def test_runs_started_in_the_same_second_get_their_own_default_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: both used runs/NAME-20260102-030405; the second was refused (a changed config, exit 2), and
    # three parallel `structnets run ... &` without --out measured: one of three refused as "in use"
    import structnets.cli._run as cli_run

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli_run, "datetime", _FrozenClock)
    name = "toy-20260102-030405"
    common = ["run", "toy", "--quick", "--jobs", "1", "-q", "--no-html"]
    assert main([*common, "--set", "arms=1"]) == 0
    assert main([*common, "--set", "arms=2"]) == 0
    assert main([*common, "--set", "arms=1"]) == 0  # the same config again: a new run, not a silent resume
    out = capsys.readouterr().out
    folders = [Path("runs") / name, Path("runs") / f"{name}-2", Path("runs") / f"{name}-3"]
    assert [line for line in out.splitlines() if line.startswith("run folder: ")] == [
        f"run folder: {f}" for f in folders
    ]
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [f.name for f in folders]


def test_refused_run_leaves_no_default_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", "toy", "--quick", "--jobs", "1", "--reuse", str(tmp_path / "nowhere")]) == 2
    assert "has no results.db" in _one_error_line(capsys.readouterr().err)
    assert list((tmp_path / "runs").glob("*")) == []  # nothing made for a run that never started


# -- analyze: a complex state dict -------------------------------------------------------------


def test_analyze_complex_state_dict_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # spectrum_table now refuses complex matrices with a TypeError (it dropped the imaginary part:
    # sigma_1 2.055 for a matrix whose sigma_1 is 2.936); analyze caught only ValueError: a traceback
    import torch

    path = tmp_path / "complex.pt"
    torch.save({"weight": torch.randn(3, 4, dtype=torch.complex64, generator=torch.Generator().manual_seed(0))}, path)
    assert main(["analyze", str(path)]) == 2
    captured = capsys.readouterr()
    assert _one_error_line(captured.err) == "error: layer '<root>' must be a real matrix, got dtype torch.complex64"
    assert captured.out == ""


# -- library warnings -----------------------------------------------------------------------------


def test_library_warnings_are_one_line_each(tmp_path: Path) -> None:
    # compare of a mixed folder printed Python's default format: ".../runner/compare.py:117: MixedRunWarning: ..."
    # and then the library's source line "exp, config_a, frame_a = load_results(...)"; a subprocess, since
    # pytest records warnings instead of showing them
    import contextlib
    import json
    import sqlite3

    from structnets.runner.store import row_digest

    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        assert main(["run", "toy", "--quick", "--out", str(out), "-q", "--no-html", "--jobs", "1"]) == 0
    key = "stage1/arm=0/seed=1"
    with contextlib.closing(sqlite3.connect(a / "results.db", isolation_level=None)) as conn:
        (params,) = conn.execute("SELECT params FROM results WHERE key = ?", (key,)).fetchone()
        conn.execute("UPDATE results SET params = ? WHERE key = ?", (json.dumps({**json.loads(params), "old": 1}), key))
        columns = "key, params, result, started, finished, worker, host, wall_s"
        row = conn.execute(f"SELECT {columns} FROM results WHERE key = ?", (key,)).fetchone()
        conn.execute("UPDATE results SET digest = ? WHERE key = ?", (row_digest(*row), key))
    proc = subprocess.run(
        [sys.executable, "-m", "structnets", "compare", str(a), str(b), "--experiment", TOY],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        f"warning: {a} is a mixed run folder: 1 unit(s) were stored with params that differ from what toy now "
        f"gives (e.g. ['{key}']); see changed_units()"
    ]
