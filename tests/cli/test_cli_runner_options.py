"""Command-line options for real use: progress lines, -q/-v, --device, --gpus-per-unit, --figure-format,
and the `show` and `compare` commands."""

from __future__ import annotations

import logging
import re
import shutil
import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
import torch

from structnets.cli import main

TOY = "toy_experiment:EXPERIMENT"
PROGRESS = re.compile(r"^toy: \[\s*(\d+)/(\d+)\] (\S+) finished in \d+\.\d s \(elapsed \d+:\d\d:\d\d")


def _progress_lines(err: str) -> list[re.Match[str]]:
    return [m for m in map(PROGRESS.match, err.splitlines()) if m]


def test_one_progress_line_per_finished_unit_off_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["run", TOY, "--quick", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    lines = _progress_lines(err)
    keys = list(pd.read_csv(out / "results.csv")["key"])
    assert sorted(m.group(3) for m in lines) == sorted(keys) and len(keys) == 6
    assert [int(m.group(1)) for m in lines] == list(range(1, 7))
    assert int(lines[-1].group(2)) == 6
    assert "\r" not in err  # no bar redraws in a log

    # a resumed run has nothing left to run: no unit lines, a note that it resumed
    assert main(["run", TOY, "--quick", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert _progress_lines(err) == [] and f"resuming run in {out}: 6 units already finished" in err


def test_quiet_prints_results_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["run", TOY, "--quick", "--out", str(out), "-q"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out == (out / "table.md").read_text() + f"run folder: {out}\n"
    assert main(["-q", "run", TOY, "--quick", "--out", str(out)]) == 0  # before the command too
    assert capsys.readouterr().err == ""
    assert main(["run", TOY, "--quick", "--out", str(tmp_path / "plain"), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert _progress_lines(err) == [] and "6 units in" in err


def test_verbose_logs_the_runner(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["run", TOY, "--quick", "--out", str(out), "-q"]) == 0
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        assert main(["run", TOY, "--quick", "--out", str(out)]) == 0
        assert not [r for r in caplog.records if r.name.startswith("structnets") and r.levelno == logging.INFO]
        assert main(["run", TOY, "--quick", "--out", str(out), "-v"]) == 0
    info = [r.getMessage() for r in caplog.records if r.name.startswith("structnets") and r.levelno == logging.INFO]
    assert any("resuming toy" in m and "6 units already finished" in m for m in info)
    assert "device: cpu" in capsys.readouterr().err  # -v names the device of a device-aware experiment
    assert main(["run", TOY, "-q", "-v"]) == 2  # exclusive


def test_device_cuda_without_cuda_is_an_error_before_any_unit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "run"
    assert main(["run", "lowrank-uci", "--quick", "--device", "cuda", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: `device`='cuda' but CUDA is not available") and "\n" not in err
    assert not out.exists()
    assert main(["run", TOY, "--quick", "--device", "auto", "--out", str(out)]) == 0
    assert "device: cpu (auto)" in capsys.readouterr().err
    assert set(pd.read_csv(out / "results.csv")["device"]) == {"cpu"}
    assert main(["run", TOY, "--device", "tpu"]) == 2


def test_gpus_per_unit_needs_the_ray_backend(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", TOY, "--quick", "--gpus-per-unit", "1", "--out", str(tmp_path / "run")]) == 2
    assert "--gpus-per-unit applies to --backend ray only" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
    assert main(["run", TOY, "--backend", "ray", "--gpus-per-unit", "0"]) == 2
    assert "must be a positive number" in capsys.readouterr().err


def test_figure_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["run", TOY, "--quick", "--out", str(out), "-q", "--figure-format", "pdf"]) == 0
    assert [p.name for p in (out / "figures").iterdir()] == ["values.pdf"]
    assert (out / "figures" / "values.pdf").read_bytes().startswith(b"%PDF")
    assert main(["report", str(out), "--figure-format", "svg"]) == 0
    assert "<svg" in (out / "figures" / "values.svg").read_text()
    assert main(["report", str(out)]) == 0
    assert (out / "figures" / "values.png").read_bytes().startswith(b"\x89PNG")


def test_show_lists_fields_types_defaults_and_quick(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", TOY]) == 0
    out = capsys.readouterr().out
    assert out.startswith("toy: Two-stage seeded toy experiment")
    assert "| field | type | default | --quick |" in out
    assert "| arms | int | 4 | 2 |" in out
    assert "| seeds | tuple[int, ...] | 0,1,2 | 0,1 |" in out
    assert "| label | str | toy | = |" in out
    assert "| device | str | cpu | = |" in out and "--device cpu|cuda|auto" in out
    assert re.search(r"^arms\s+number of stage-1 arms\.$", out, re.M)

    assert main(["show", "lowrank-uci"]) == 0
    out = capsys.readouterr().out
    assert "| max_rows | int \\| None | none | 2000 |" in out
    assert re.search(r"^latency_pairs\s+batch size and number of interleaved timing pairs\.$", out, re.M)
    assert main(["show", "no-such-experiment"]) == 2


def test_compare_two_runs_of_one_experiment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["run", TOY, "--quick", "--out", str(a), "-q"]) == 0
    assert main(["run", TOY, "--quick", "--out", str(b), "-q", "--set", "scale=2", "label=twice"]) == 0
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--by-unit"]) == 0
    out = capsys.readouterr().out
    assert '- label: A "toy", B "twice"' in out and "- scale: A 1.0, B 2.0" in out
    assert "6 units in both runs; 0 only in A, 0 only in B." in out
    values_a = pd.read_csv(a / "results.csv")["value"]
    row = next(line for line in out.splitlines() if line.startswith("| value |")).split("|")
    assert int(row[2]) == 6 and int(row[7]) == 6
    assert float(row[3]) == pytest.approx(values_a.mean(), rel=1e-5)
    assert float(row[4]) == pytest.approx(2 * values_a.mean(), rel=1e-5)
    assert float(row[5]) == pytest.approx(values_a.mean(), rel=1e-5)  # B − A = A when B = 2A
    assert "Equal on every shared unit: stage, arm, seed." in out
    assert "Text columns that differ: label (6 units)." in out
    unit_rows = [line for line in out.splitlines() if line.startswith("| stage")]
    assert len(unit_rows) == 6

    assert main(["compare", str(a), str(a)]) == 0
    out = capsys.readouterr().out
    assert "Same config." in out and "No numeric result differs on the shared units." in out


def test_compare_of_two_different_experiments_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, other = tmp_path / "a", tmp_path / "other"
    assert main(["run", TOY, "--quick", "--out", str(a), "-q"]) == 0
    shutil.copytree(a, other)
    with sqlite3.connect(other / "results.db") as conn:
        conn.execute("UPDATE meta SET value = 'lowrank-uci' WHERE name = 'experiment'")
    assert main(["compare", str(a), str(other)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: cannot compare runs of two different experiments")
    assert "'toy'" in err and "'lowrank-uci'" in err
    assert main(["compare", str(a), str(tmp_path / "missing")]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_reuse_takes_finished_units_and_refuses_a_folder_without_results(
    tmp_path: Path, calls: Callable[[], Counter[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    first = tmp_path / "first"
    assert main(["run", TOY, "--quick", "--out", str(first), "-q"]) == 0
    before = sum(calls().values())
    second = tmp_path / "second"
    assert main(["run", TOY, "--quick", "--out", str(second), "-q", "--reuse", str(first)]) == 0
    assert sum(calls().values()) == before  # every unit taken, none run
    assert (second / "results.csv").read_text() == (first / "results.csv").read_text()
    capsys.readouterr()
    assert main(["run", TOY, "--quick", "--out", str(tmp_path / "third"), "--reuse", str(tmp_path / "nowhere")]) == 2
    assert "`reuse` folder" in capsys.readouterr().err and not (tmp_path / "third").exists()
