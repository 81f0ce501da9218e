"""Processes around a run: the run-folder lock, no orphans after ``kill -9``, and torch
threads sized by one helper."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from toy_experiment import ToyConfig, ToyExperiment

from structnets.cli import main
from structnets.runner import RunLockedError, run
from structnets.runner import backends as backends_module
from structnets.runner.lock import LOCK_FILE, run_lock

TOY = "toy_experiment:EXPERIMENT"


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def _wait_for_line(proc: subprocess.Popen[str], expected: str, timeout: float = 120.0) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.strip() == expected:
            return
        if not line and proc.poll() is not None:
            break
    proc.kill()
    pytest.fail(f"the helper process did not print {expected!r}: {proc.stderr.read() if proc.stderr else ''}")


def _release(*procs: subprocess.Popen[str]) -> None:
    """Kill what is still alive, reap it and close its pipes (an unclosed pipe is a ResourceWarning)."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


# -- 4. one run per folder ---------------------------------------------------------------------


def test_a_second_run_on_a_held_folder_is_refused_and_a_dead_holder_is_taken_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    out.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from structnets.runner.lock import run_lock\n"
            f"with run_lock(Path({str(out)!r})):\n    print('locked', flush=True)\n    time.sleep(600)\n",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for_line(holder, "locked")
        args = ["run", TOY, "--quick", "--out", str(out), "--jobs", "1", "--no-progress"]
        assert main(args) == 2
        line = _one_error_line(capsys.readouterr().err)
        assert f"{out} is in use by another structnets run (pid {holder.pid} on " in line and "--out" in line
        assert not (out / "results.db").exists()  # refused before anything was opened
        with pytest.raises(RunLockedError, match=f"pid {holder.pid} "):
            run(TOY, ToyConfig.quick(), out)

        holder.send_signal(signal.SIGKILL)  # its lock file stays behind, naming a dead process
        holder.wait(timeout=30)
        assert (out / LOCK_FILE).read_text().startswith(f"pid={holder.pid} ")
        assert main(args) == 0  # the stale lock is taken over
        assert not (out / LOCK_FILE).exists()  # and released when the run ends
    finally:
        _release(holder)


def test_the_lock_is_released_after_a_failure_and_reentrant_use_is_refused(tmp_path: Path) -> None:
    with run_lock(tmp_path):
        with pytest.raises(RunLockedError, match=f"pid {os.getpid()} "):
            with run_lock(tmp_path):  # a second holder, even in the same process, is refused
                pass
    with pytest.raises(ZeroDivisionError):
        with run_lock(tmp_path):
            1 / 0  # noqa: B018
    with run_lock(tmp_path):  # released on the way out of the failure
        pass
    assert not (tmp_path / LOCK_FILE).exists()


# -- 5. no orphans after kill -9 ---------------------------------------------------------------


def _group_members(pgid: int) -> dict[int, str]:
    """Live (non-zombie) processes of process group ``pgid``: pid -> command line."""
    members = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        state, group = fields[0], int(fields[2])
        if group == pgid and state not in ("Z", "X"):
            members[int(entry.name)] = cmdline
    return members


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc to list processes")
def test_kill_9_of_the_run_leaves_no_worker_fork_server_or_resource_tracker(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "structnets.cli",
            "run",
            TOY,
            "--quick",
            "--no-progress",
            "--jobs",
            "2",
            "--set",
            "sleep=1",
            "--out",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: every helper it starts joins it
    )
    try:
        deadline = time.monotonic() + 120
        while True:  # until a worker has committed a unit: the pool, fork server and tracker exist
            rows = 0
            if (out / "results.db").exists():
                try:
                    with sqlite3.connect(f"file:{out / 'results.db'}?mode=ro", uri=True, timeout=5) as conn:
                        rows = conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]
                except sqlite3.OperationalError:
                    rows = 0
            if rows:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the run did not commit a unit: {proc.stderr.read() if proc.stderr else ''}")
            time.sleep(0.05)
        helpers = {pid: cmd for pid, cmd in _group_members(proc.pid).items() if pid != proc.pid}
        assert any("forkserver" in cmd for cmd in helpers.values()), helpers
        assert len(helpers) >= 3, helpers  # fork server, resource tracker, workers

        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 60  # a liveness bound, not a timing assertion
        while _group_members(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _group_members(proc.pid) == {}
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # never leave a failing test's processes behind
        except ProcessLookupError:
            pass
        _release(proc)


def test_a_worker_exits_when_the_watched_process_dies(tmp_path: Path) -> None:
    """The watchdog itself, on a process that is not the worker's parent (as the run is not)."""
    watched = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    code = (
        "import time\nfrom structnets.runner.backends import watch_parent\n"
        f"watch_parent({watched.pid})\nprint('watching', flush=True)\ntime.sleep(600)\n"
    )
    worker = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_line(worker, "watching")
        assert worker.poll() is None
        watched.kill()
        watched.wait(timeout=30)
        assert worker.wait(timeout=60) == 1
    finally:
        _release(watched, worker)


# -- 6. torch threads: cpus / jobs, through one helper ----------------------------------------------


class _Threads(ToyExperiment):
    """Records the torch threads each unit saw."""

    def run_unit(self, params: Mapping[str, Any]) -> dict[str, Any]:
        import torch

        return {**super().run_unit(params), "threads": torch.get_num_threads()}


def test_threads_are_cpus_over_jobs_and_default_jobs_is_one_per_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backends_module, "available_cpus", lambda: 6)
    assert [backends_module.threads_per_job(j) for j in (None, 1, 2, 4, 6, 12)] == [6, 6, 3, 1, 1, 1]
    assert backends_module.default_jobs() == 6
    monkeypatch.setattr(backends_module, "available_cpus", lambda: 64)
    assert backends_module.default_jobs() == backends_module.MAX_DEFAULT_JOBS == 8
    monkeypatch.setattr(backends_module, "available_cpus", lambda: 1)
    assert backends_module.default_jobs() == 1 and backends_module.threads_per_job(4) == 1


def test_an_in_process_run_sets_and_restores_torch_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    before = torch.get_num_threads()
    wanted = 3 if before != 3 else 2
    monkeypatch.setattr(backends_module, "available_cpus", lambda: wanted)
    df = run(_Threads(), ToyConfig.quick(), tmp_path, jobs=1)
    assert set(df["threads"]) == {wanted}
    assert torch.get_num_threads() == before


def test_the_cli_default_is_a_pool_of_single_threaded_workers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["run", TOY, "--quick", "--out", str(out), "--no-progress"]) == 0
    info = json.loads((out / "run_info.json").read_text())
    assert info["jobs"] == backends_module.default_jobs()
    with sqlite3.connect(out / "results.db") as conn:
        workers = {w for (w,) in conn.execute("SELECT worker FROM results")}
    if backends_module.default_jobs() > 1:
        assert f"pid:{os.getpid()}" not in workers  # units ran in worker processes


def test_the_cli_default_gives_a_one_unit_run_every_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run whose first stage has fewer units than CPUs gets that many workers (with cpus // workers threads
    each), not one single-threaded worker per CPU with all but one idle."""
    monkeypatch.setattr(backends_module, "available_cpus", lambda: 2)
    out = tmp_path / "one"
    config = ["--set", "arms=1", "--set", "seeds=0", "--set", "repeats=1"]
    assert main(["run", TOY, "--quick", *config, "--out", str(out), "--no-progress"]) == 0
    assert json.loads((out / "run_info.json").read_text())["jobs"] == 1
    many = tmp_path / "many"
    assert main(["run", TOY, "--quick", "--out", str(many), "--no-progress"]) == 0
    assert json.loads((many / "run_info.json").read_text())["jobs"] == 2
