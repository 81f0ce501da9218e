"""``preset_times.py``'s table and ``speed_probe.py`` (no timing is asserted: only that they report)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def preset_times() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import preset_times

        yield preset_times
    finally:
        sys.path.remove(str(BENCHMARKS))


def _record(**changes: object) -> dict[str, object]:
    record: dict[str, object] = {
        "experiment": "smoothness-rates",
        "preset": "full",
        "jobs": 2,
        "exit": 0,
        "error": "",
        "units": 72,
        "wall_s": 1801.0,
        "cpu_s": 3590.0,
        "other_load": 0.01,
        "tree_cpu": True,
        "commit": "abc1234",
    }
    record.update(changes)
    return record


def test_speed_probe_prints_a_positive_sweep_time() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "speed_probe.py"), "--calls", "1", "--blocks", "1"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    word, value = done.stdout.split()
    assert word == "sweep_ms" and float(value) > 0


def test_table_gives_the_probe_figures_or_a_dash(preset_times: ModuleType) -> None:
    table = preset_times._table(
        [
            _record(probe_ms=[71.4, 80.6]),
            _record(experiment="rank-bounds", wall_s=1799.0),
            _record(probe_ms=[70.0, None]),
        ]
    )
    rows = [line for line in table.splitlines() if line.startswith("| smoothness-rates") or line.startswith("| rank")]
    assert "| 71 / 81 |" in rows[0] and "| **no** |" in rows[0]  # 30 min 01 s misses the target
    assert "| — / — |" in rows[1] and "| yes |" in rows[1]  # a record from before the probe existed
    assert "| 70 / — |" in rows[2]
    header = next(line for line in table.splitlines() if line.startswith("| experiment"))
    assert header.count("|") == rows[0].count("|")


def test_reaping_the_runs_leftovers_gives_up_after_its_timeout() -> None:
    # In a child interpreter: waitpid(-1) must not reap this test process's own children.
    script = f"""
import subprocess, sys, time
sys.path.insert(0, {str(BENCHMARKS)!r})
import preset_times
sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
start = time.monotonic()
assert preset_times._reap_adopted(timeout=0.3) is False   # still running: gives up, does not hang
assert 0.3 <= time.monotonic() - start < 10
sleeper.kill()
assert preset_times._reap_adopted(timeout=10) is True      # exited: reaped
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


@pytest.mark.parametrize(
    "seconds, text", [(0.0, "0 min 00 s"), (59.4, "0 min 59 s"), (119.6, "2 min 00 s"), (1852.3, "30 min 52 s")]
)
def test_minutes_round_the_whole_time_first(preset_times: ModuleType, seconds: float, text: str) -> None:
    assert preset_times._minutes(seconds) == text


def test_a_probe_past_its_timeout_is_recorded_as_not_taken(
    preset_times: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(preset_times, "PROBE_TIMEOUT_S", 0.01)  # far below the interpreter's start-up
    assert preset_times._speed_probe() is None
