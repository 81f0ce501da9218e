"""``run`` and ``report`` on the staged toy experiment: outputs, resume, protocol errors, backends."""

from __future__ import annotations

import json
import os
import sqlite3
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from toy_experiment import EXPERIMENT as TOY_EXPERIMENT
from toy_experiment import REGISTRY as TOY_REGISTRY
from toy_experiment import ToyConfig, ToyExperiment

from structnets.runner import ExperimentError, RunnerError, StoreError, Unit, UnitFailedError, load_results, report, run

TOY = "toy_experiment:EXPERIMENT"
QUICK = ToyConfig.quick()  # 2 arms x 2 seeds, then 2 repeats of the best arm: 6 units
N_QUICK = 6
N_FULL = 4 * 3 + 3


def _outputs(out: Path) -> tuple[str, str, bytes]:
    return (
        (out / "results.csv").read_text(),
        (out / "table.md").read_text(),
        (out / "figures" / "values.png").read_bytes(),
    )


def _db_rows(out: Path) -> int:
    with sqlite3.connect(out / "results.db") as conn:
        return conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]


def test_run_writes_the_run_folder(tmp_path: Path, calls: Callable[[], Counter[str]]) -> None:
    events: list[tuple[int, int]] = []
    df = run(TOY, ToyConfig(), tmp_path, progress=lambda done, total: events.append((done, total)))

    assert list(df.columns) == ["key", "stage", "arm", "seed", "value", "label", "device"]
    assert len(df) == N_FULL and df["key"].is_unique
    stage1 = df[df["stage"] == 1]
    best = int(stage1.groupby("arm")["value"].mean().idxmax())
    assert set(df[df["stage"] == 2]["arm"]) == {best}  # stage 2 was built from stage-1 results
    assert list(df["key"][:3]) == ["stage1/arm=0/seed=0", "stage1/arm=0/seed=1", "stage1/arm=0/seed=2"]
    assert set(calls().values()) == {1} and len(calls()) == N_FULL

    # progress: done never decreases, total grows when stage 2 appears, and ends complete.
    assert events[0] == (0, 12) and events[-1] == (N_FULL, N_FULL)
    assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in zip(events, events[1:]))

    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "results.csv"), df, check_dtype=False)
    assert (tmp_path / "table.md").read_text() == TOY_EXPERIMENT.report(df, ToyConfig())
    assert (tmp_path / "figures" / "values.png").read_bytes()[:4] == b"\x89PNG"
    assert _db_rows(tmp_path) == N_FULL

    info = json.loads((tmp_path / "run_info.json").read_text())
    assert info["experiment"] == "toy" and info["experiment_ref"] == TOY
    assert info["config"]["seeds"] == [0, 1, 2] and info["status"] == "finished"
    assert info["backend"] == "local" and info["jobs"] == 1
    assert {"python", "structnets", "torch", "numpy", "pandas", "scikit-learn"} <= set(info["versions"])
    assert info["machine"]["cpu_count"] >= 1 and info["wall_s"] >= 0 and info["finished"]
    assert info["units"] == {
        "total": N_FULL,
        "finished": N_FULL,
        "run_this_session": N_FULL,
        "reused_this_session": 0,
    }
    assert "git" in info
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp files left


@pytest.mark.parametrize("fail_key", ["stage1/arm=1/seed=0", "stage2/arm=1/repeat=1"])
def test_resume_after_failure_skips_finished_units(
    tmp_path: Path, calls: Callable[[], Counter[str]], monkeypatch: pytest.MonkeyPatch, fail_key: str
) -> None:
    reference = tmp_path / "reference"
    run(TOY, QUICK, reference)
    reference_calls = calls()

    out = tmp_path / "resumed"
    monkeypatch.setenv("STRUCTNETS_TOY_FAIL_KEYS", fail_key)
    with pytest.raises(UnitFailedError) as info:
        run(TOY, QUICK, out)
    assert info.value.key == fail_key and "toy failure requested" in info.value.error
    assert "RuntimeError" in info.value.traceback
    saved = _db_rows(out)
    order = list(pd.read_csv(reference / "results.csv")["key"])
    assert saved == order.index(fail_key)  # everything before the failing unit is committed
    assert json.loads((out / "run_info.json").read_text())["status"] == "failed"
    assert not (out / "table.md").exists()

    monkeypatch.delenv("STRUCTNETS_TOY_FAIL_KEYS")
    df = run(TOY, QUICK, out)
    counts = calls() - reference_calls
    assert counts == Counter({k: 2 if k == fail_key else 1 for k in order[saved:]} | {k: 1 for k in order[:saved]})
    assert _outputs(out)[:2] == _outputs(reference)[:2]
    assert len(df) == N_QUICK
    sessions = json.loads((out / "run_info.json").read_text())["sessions"]
    assert [s["status"] for s in sessions] == ["failed", "finished"]
    assert [s["units_run"] for s in sessions] == [saved, N_QUICK - saved]

    before = calls()
    pd.testing.assert_frame_equal(run(TOY, QUICK, out), df)  # a finished run reruns nothing
    assert calls() == before


class _Interrupting(ToyExperiment):
    """Raises KeyboardInterrupt (as Ctrl-C would) in the third unit."""

    def __init__(self) -> None:
        self.n = 0

    def run_unit(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self.n += 1
        if self.n == 3:
            raise KeyboardInterrupt
        return super().run_unit(params)


def test_keyboard_interrupt_is_recorded_and_resumable(tmp_path: Path) -> None:
    exp = _Interrupting()
    with pytest.raises(KeyboardInterrupt):
        run(exp, QUICK, tmp_path)
    assert _db_rows(tmp_path) == 2
    assert json.loads((tmp_path / "run_info.json").read_text())["status"] == "interrupted"
    df = run(exp, QUICK, tmp_path)
    assert len(df) == N_QUICK and exp.n == 3 + N_QUICK - 2


def test_report_regenerates_outputs_from_the_db_alone(tmp_path: Path) -> None:
    run(TOY, QUICK, tmp_path)
    before = _outputs(tmp_path)
    for name in ("results.csv", "table.md", "figures/values.png"):
        (tmp_path / name).unlink()
    table = report(tmp_path, registry=TOY_REGISTRY)
    assert table == before[1]
    assert _outputs(tmp_path) == before
    exp, config, df = load_results(tmp_path, registry=TOY_REGISTRY)
    assert exp is TOY_EXPERIMENT and config == QUICK and len(df) == N_QUICK


def test_report_of_an_unfinished_run_uses_finished_units(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRUCTNETS_TOY_FAIL_KEYS", "stage1/arm=1/seed=0")
    with pytest.raises(UnitFailedError):
        run(TOY, QUICK, tmp_path)
    table = report(tmp_path, registry=TOY_REGISTRY)
    assert "| 1 | 0 | 2 |" in table and "| 1 | 1 |" not in table
    assert len(pd.read_csv(tmp_path / "results.csv")) == 2


def test_report_needs_a_run_folder(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no results database"):
        report(tmp_path)
    assert list(tmp_path.iterdir()) == []


class _Local(ToyExperiment):
    name = "local-toy"


def test_unimportable_experiment_object_runs_and_reports_with_help(tmp_path: Path) -> None:
    exp = _Local()  # not reachable by name or module attribute: pickled, and report needs it passed
    df = run(exp, QUICK, tmp_path)
    assert json.loads((tmp_path / "run_info.json").read_text())["experiment_ref"] is None
    with pytest.raises(RunnerError, match="names the experiment 'local-toy', which is not a registered experiment"):
        report(tmp_path)
    assert report(tmp_path, experiment=exp) == (tmp_path / "table.md").read_text()
    assert len(df) == N_QUICK


class _Duplicates(ToyExperiment):
    def units(self, config: ToyConfig, finished: pd.DataFrame) -> list[Unit]:
        return [Unit("a", {"unit": "a"}), Unit("b", {}), Unit("a", {})]


class _BadParams(ToyExperiment):
    def units(self, config: ToyConfig, finished: pd.DataFrame) -> list[Unit]:
        return [Unit("a", {"x": object()})]


class _BadResult(ToyExperiment):
    def run_unit(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {"value": [1, 2]}


def test_protocol_errors_name_the_unit(tmp_path: Path) -> None:
    with pytest.raises(ExperimentError, match="returned the key 'a' twice"):
        run(_Duplicates(), QUICK, tmp_path / "dup")
    assert _db_rows(tmp_path / "dup") == 0
    with pytest.raises(ExperimentError, match="params of unit 'a' are not JSON-serialisable"):
        run(_BadParams(), QUICK, tmp_path / "params")
    with pytest.raises(UnitFailedError, match="returned list in column 'value' for unit 'stage1/arm=0/seed=0'"):
        run(_BadResult(), QUICK, tmp_path / "result")


def test_bad_arguments_are_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="`backend` must be one of local, ray, got 'gpu'"):
        run(TOY, QUICK, tmp_path, backend="gpu")
    with pytest.raises(ValueError, match="`jobs` must be a positive int"):
        run(TOY, QUICK, tmp_path, jobs=0)
    with pytest.raises(TypeError, match="`config` must be a ToyConfig"):
        run(TOY, {"arms": 2}, tmp_path)
    with pytest.raises(ValueError, match="unknown experiment 'nope'"):
        run("nope", QUICK, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_local_jobs_2_equals_jobs_1(tmp_path: Path, calls: Callable[[], Counter[str]]) -> None:
    serial = run(TOY, QUICK, tmp_path / "serial")
    parallel = run(TOY, QUICK, tmp_path / "parallel", jobs=2)
    pd.testing.assert_frame_equal(parallel, serial)
    assert _outputs(tmp_path / "parallel") == _outputs(tmp_path / "serial")
    assert set(calls().values()) == {2}  # the env var reached the workers; each unit ran once per run
    with sqlite3.connect(tmp_path / "parallel" / "results.db") as conn:
        workers = {w for (w,) in conn.execute("SELECT worker FROM results")}
    assert f"pid:{os.getpid()}" not in workers
    info = json.loads((tmp_path / "parallel" / "run_info.json").read_text())
    assert info["jobs"] == 2


def test_local_jobs_2_failure_keeps_finished_units(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fail_key = "stage1/arm=0/seed=1"
    monkeypatch.setenv("STRUCTNETS_TOY_FAIL_KEYS", fail_key)
    with pytest.raises(UnitFailedError, match="toy failure requested") as info:
        run(TOY, QUICK, tmp_path / "run", jobs=2)
    assert info.value.key == fail_key and "RuntimeError" in info.value.traceback
    with sqlite3.connect(tmp_path / "run" / "results.db") as conn:
        saved = {k for (k,) in conn.execute("SELECT key FROM results")}
    assert "stage1/arm=0/seed=0" in saved and fail_key not in saved  # in-flight units were drained
    monkeypatch.delenv("STRUCTNETS_TOY_FAIL_KEYS")
    pd.testing.assert_frame_equal(run(TOY, QUICK, tmp_path / "run"), run(TOY, QUICK, tmp_path / "serial"))


@pytest.mark.slow
def test_ray_backend_equals_local(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    local = run(TOY, QUICK, tmp_path / "local")
    on_ray = run(TOY, QUICK, tmp_path / "ray", backend="ray")
    pd.testing.assert_frame_equal(on_ray, local)
    assert _outputs(tmp_path / "ray") == _outputs(tmp_path / "local")
    assert json.loads((tmp_path / "ray" / "run_info.json").read_text())["backend"] == "ray"
