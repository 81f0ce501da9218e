"""The command line on a mixed run folder (units stored with params the experiment no longer gives).

``structnets run`` refuses it in one line naming how many units and the first keys, and offers
``--rerun-changed`` or a new ``--out``; ``--rerun-changed`` recomputes just those; ``report`` and
``claims`` mark the folder as mixed.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from structnets.cli import main

OLD = ["stage1/arm=0/seed=1", "stage1/arm=1/seed=0"]


def _reseal(conn: sqlite3.Connection, key: str) -> None:
    """Recompute an edited row's checksum: the row stands for one that other code wrote so."""
    from structnets.runner.store import row_digest

    columns = "key, params, result, started, finished, worker, host, wall_s"
    row = conn.execute(f"SELECT {columns} FROM results WHERE key = ?", (key,)).fetchone()
    conn.execute("UPDATE results SET digest = ? WHERE key = ?", (row_digest(*row), key))


def _make_old(out: Path, keys: list[str]) -> None:
    """Give ``keys`` the params an older version of the experiment would have stored."""
    with contextlib.closing(sqlite3.connect(out / "results.db", isolation_level=None)) as conn:
        for key in keys:
            (params,) = conn.execute("SELECT params FROM results WHERE key = ?", (key,)).fetchone()
            old = {**json.loads(params), "old": True}
            conn.execute("UPDATE results SET params = ? WHERE key = ?", (json.dumps(old, sort_keys=True), key))
            _reseal(conn, key)


def _toy(out: Path, *extra: str) -> int:
    return main(["run", "toy", "--quick", "--out", str(out), "--no-progress", "--jobs", "1", *extra])


def test_run_refuses_in_one_line_then_rerun_changed_recomputes_just_those(
    tmp_path: Path, calls: Callable[[], Counter[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert _toy(out) == 0
    _make_old(out, OLD)
    db = (out / "results.db").read_bytes()
    capsys.readouterr()
    assert _toy(out) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert "2 unit(s)" in lines[0] and repr(OLD[0]) in lines[0]
    assert "--rerun-changed" in lines[0] and "new --out" in lines[0]
    assert (out / "results.db").read_bytes() == db
    assert sum(calls().values()) == 6

    assert _toy(out, "--rerun-changed") == 0
    assert calls() - Counter({k: 1 for k in calls()}) == Counter(OLD)  # only the two old units ran again
    assert "Mixed" not in capsys.readouterr().out
    assert _toy(out) == 0  # current now: resumes as an ordinary finished folder
    assert sum(calls().values()) == 8


def test_report_marks_a_mixed_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert _toy(out) == 0
    _make_old(out, OLD[:1])
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("> **Mixed run folder of toy**: 1 stored unit(s)")
    assert f"`{OLD[0]}`" in printed.splitlines()[0]


def test_claims_marks_a_mixed_folder(tmp_path: Path) -> None:
    """A real quick run of a claims experiment (≈ 6 s) with one unit made old, through ``structnets claims``."""
    out = tmp_path / "dlor-universality"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "structnets"]
    run = [*command, "run", "dlor-universality", "--quick", "--jobs", "1", "--no-progress", "--out", str(out)]
    subprocess.run(run, check=True, capture_output=True, env=env, timeout=600)
    clean = subprocess.run([*command, "claims", str(out)], capture_output=True, text=True, env=env, timeout=600)
    assert clean.returncode == 0, clean.stderr
    assert "old params" not in clean.stdout and clean.stderr == ""
    with contextlib.closing(sqlite3.connect(out / "results.db")) as conn:
        (key,) = conn.execute("SELECT key FROM results ORDER BY key LIMIT 1").fetchone()
    _make_old(out, [key])
    done = subprocess.run([*command, "claims", str(out)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"> **Mixed run folder** {out}: 1 unit(s) (`{key}`)")
    decided = [line for line in done.stdout.splitlines() if str(out) in line and line.startswith("|")]
    assert decided and all(
        f"`{out}` (dlor-universality, quick; mixed: 1 units with old params, 6 units)" in line for line in decided
    )
    assert done.stderr.strip().splitlines() == [
        f"warning: {out} is a mixed run folder (1 units with old params); its claims are marked (mixed)"
    ]
