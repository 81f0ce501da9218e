"""A ``structnets run`` subprocess killed (SIGKILL) or interrupted (SIGINT) mid-way resumes to the same results."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from structnets.cli import main

TOY = "toy_experiment:EXPERIMENT"
# 6 units of 1 s each: slack for the poll below on a loaded machine (raised from 0.2 s while chasing
# a failure whose cause was the inherited SIGINT handled by _CHILD; kept, it costs a few seconds)
ARGS = ["--quick", "--no-progress", "--set", "sleep=1.0"]
N_UNITS = 6


# The child starts as a terminal's would: SIGINT unblocked and handled by Python (a pytest worker may
# pass on an ignored or blocked SIGINT, which exec keeps, and then no Ctrl-C reaches the run).
_CHILD = (
    "import signal, sys\n"
    "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "from structnets.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _start(out: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, "run", TOY, "--out", str(out), *ARGS, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, so a terminal-style Ctrl-C reaches workers too
    )


def _committed(out: Path) -> list[str]:
    db = out / "results.db"
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return [k for (k,) in conn.execute("SELECT key FROM results ORDER BY rowid")]
    except sqlite3.OperationalError:  # schema not created yet
        return []


def _wait_for_rows(out: Path, n: int, proc: subprocess.Popen[str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while len(_committed(out)) < n:
        if proc.poll() is not None:
            pytest.fail(f"run exited early ({proc.returncode}): {proc.stderr.read() if proc.stderr else ''}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no {n} committed units within {timeout} s")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> str:
    """results.csv of an uninterrupted run with the same arguments."""
    out = tmp_path_factory.mktemp("reference") / "run"
    assert main(["run", TOY, "--out", str(out), *ARGS]) == 0
    return (out / "results.csv").read_text()


def test_kill_9_mid_run_then_resume(tmp_path: Path, reference: str, calls: Callable[[], Counter[str]]) -> None:
    out = tmp_path / "run"
    proc = _start(out, "--jobs", "1")
    _wait_for_rows(out, 2, proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)  # also closes its pipes (an unclosed pipe is a ResourceWarning)
    before = _committed(out)
    assert 2 <= len(before) < N_UNITS
    calls_before = calls()
    assert sum(calls_before.values()) <= len(before) + 1  # jobs=1: at most one unit was in flight

    assert main(["run", TOY, "--out", str(out), *ARGS]) == 0
    counts = calls()
    assert all(counts[k] == 1 for k in before)  # committed units never ran again
    assert len(counts) == N_UNITS and sum(counts.values()) <= N_UNITS + 1
    sessions = json.loads((out / "run_info.json").read_text())["sessions"]
    assert [s["status"] for s in sessions] == ["running", "finished"]  # the killed session never ended
    assert (out / "results.csv").read_text() == reference


def test_ctrl_c_with_worker_pool_cancels_and_resumes(
    tmp_path: Path, reference: str, calls: Callable[[], Counter[str]]
) -> None:
    out = tmp_path / "run"
    proc = _start(out, "--jobs", "2")
    _wait_for_rows(out, 2, proc)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: parent, fork server and workers
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted: finished units are saved in" in err and "Traceback" not in err
    before = _committed(out)
    assert len(before) < N_UNITS
    info = json.loads((out / "run_info.json").read_text())
    assert info["status"] == "interrupted"
    with sqlite3.connect(out / "results.db") as conn:
        pids = {int(w.removeprefix("pid:")) for (w,) in conn.execute("SELECT worker FROM results")}
    time.sleep(0.2)
    for pid in pids:  # worker processes were stopped with the run
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)

    assert main(["run", TOY, "--out", str(out), *ARGS]) == 0
    assert all(calls()[k] == 1 for k in before)
    assert (out / "results.csv").read_text() == reference
