"""The certificate benchmark scripts run end to end at tiny sizes (no timing is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.parametrize(
    "script, args, header",
    [
        ("certificate_cache.py", ["--widths", "8", "--depth", "1", "--pairs", "3"], "| width 8 |"),
        ("forward_rounding.py", ["--width", "6", "--depths", "1", "--points", "4"], "| float32 | 1 |"),
    ],
)
def test_script_runs_and_prints_its_table(script: str, args: list[str], header: str) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--threads", "1", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert header in done.stdout


def test_forward_rounding_error_is_small_against_depth_times_unit_roundoff() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "forward_rounding.py"), "--width", "16", "--depths", "3", "--points", "16"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [
        line.split("|")
        for line in done.stdout.splitlines()
        if line.startswith("| float") or line.startswith("| bfloat")
    ]
    assert len(rows) == 3
    for row in rows:
        assert float(row[5]) < 1.0, row  # error / ((depth + 2)·u·(‖x‖ + 1))


def test_bad_widths_name_the_constraint() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "certificate_cache.py"), "--widths", "0"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "expected comma-separated positive ints" in done.stderr
