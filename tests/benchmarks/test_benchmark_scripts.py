"""The benchmark scripts run end to end (tiny sizes; no timing is asserted: timings live in make bench)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.parametrize(
    "script, args, header",
    [
        (
            "lowrank_speed.py",
            ["--sizes", "48", "--batches", "16", "--pairs", "1", "--modes", "forward,train"],
            "| 48 | 16 |",
        ),
        ("lipschitz_constraint.py", ["--shapes", "1x4,2x6", "--batch", "8", "--pairs", "1"], "| 2 | 6 |"),
        (
            "lipschitz_constraint.py",
            ["--shapes", "1x4", "--batch", "8", "--pairs", "1", "--optimizer", "torch"],
            "optimizer torch.optim.Adam (single-tensor)",
        ),
        (
            "lipschitz_conv_step.py",
            ["--batch", "2", "--pairs", "1", "--no-every-size"],
            "| 64 | 7×7 | sized | verified |",
        ),
        ("fit_checkpoint.py", ["--rows", "256", "--epochs", "1", "--pairs", "1"], "with / without a checkpoint"),
        ("certified_batch_share.py", ["--shapes", "1x4", "--batch", "8", "--rounds", "3", "--calls", "1"], "| 1 | 4 |"),
        (
            "rates_refiners.py",
            ["--parameters", "20", "--lbfgs", "20", "--lm", "5", "--adam", "5", "--points", "32"],
            "| 20 | 6 | tanh |",
        ),
    ],
)
def test_script_runs_and_prints_its_table(script: str, args: list[str], header: str) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--threads", "1", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert header in done.stdout


def test_bad_arguments_name_the_constraint() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "lipschitz_constraint.py"), "--pairs", "0"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "expected an int >= 1, got '0'" in done.stderr
