"""benchmarks/adam_step.py runs end to end (tiny sizes; no timing is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "adam_step.py"


def test_script_runs_and_prints_its_table() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--threads", "1", "--widths", "8", "--batch", "4", "--pairs", "1"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "fast path bit-identical on this torch: True" in done.stdout
    assert "| 8 | 4 |" in done.stdout


def test_bad_widths_name_the_constraint() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--widths", "0"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2 and "expected comma-separated widths >= 1" in done.stderr
