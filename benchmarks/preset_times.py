"""Wall time of every experiment preset, run one after another in one sitting.

Not a ratio: the table ``benchmarks/README.md`` keeps of how long each full and quick preset takes
(``structnets run NAME [--quick] --jobs J``) on this machine. Each preset runs from scratch in its
own folder under ``--out`` as a subprocess; beside its wall time the table gives the CPU time of the
run (its processes and their workers) and the share of all CPUs that *other* processes used while it
ran (``/proc/stat``), because a wall time taken next to other work is not the preset's wall time,
and ``speed_probe.py``'s figure before and after it, because this host's own speed moves (1.6×
within minutes here) while nothing inside the machine shows it.

Resumable: every finished preset is appended to ``OUT/times.jsonl``; a second call skips presets
already measured at the same commit and starts an interrupted one again from scratch (its
half-finished folder under ``OUT`` is removed first). ``--table FILE`` writes the Markdown table.

    python benchmarks/preset_times.py --presets quick,full --jobs 2 --out runs/preset-times \
        --table benchmarks/preset_times.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _args import int_at_least
from structnets.atomic_io import write_text
from structnets.experiments import names

PRESETS = ("quick", "full")
FULL_TARGET_S = 30 * 60  # every full preset within 30 minutes on 2 idle cores
PROBE_TIMEOUT_S = 300  # speed_probe.py takes ~5 s; a hung probe must not stop the measurements
IDLE_LOAD = 0.10  # above this share of all CPUs used by other processes, a measurement is not idle


def _csv_choice(allowed: tuple[str, ...] | list[str], what: str) -> Any:
    def parse(text: str) -> tuple[str, ...]:
        values = tuple(v.strip() for v in text.split(",") if v.strip())
        if values == ("all",):
            return tuple(allowed)
        unknown = [v for v in values if v not in allowed]
        if not values or unknown:
            raise argparse.ArgumentTypeError(f"{what} must be 'all' or among {', '.join(allowed)}, got {text!r}")
        return values

    return parse


def _become_subreaper() -> bool:
    """Adopt orphaned descendants (Linux ``PR_SET_CHILD_SUBREAPER``), so their CPU time can be counted.

    The runner's workers are children of a multiprocessing fork server, which is not waited for by the
    ``structnets run`` process; without this, its workers' CPU time never reaches this process's
    children times, and the preset's own CPU would be counted as other processes' load.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(36, 1, 0, 0, 0) == 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


REAP_TIMEOUT_S = 120.0  # how long the run's adopted descendants may take to exit after it


def _reap_adopted(timeout: float = REAP_TIMEOUT_S) -> bool:
    """Wait for every descendant adopted after the run (the fork server and any worker it left).

    Returns False if some are still running after ``timeout`` seconds (a worker left hanging by a
    killed run): they are not waited for, so their CPU time is not counted.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        except InterruptedError:
            continue
        if pid == 0:  # some are alive and none has exited yet
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)


def _cpu_ticks() -> tuple[int, int]:
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    return sum(fields), fields[3] + fields[4]


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def _units_finished(folder: Path) -> int:
    database = folder / "results.db"
    if not database.exists():
        return 0
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
        return int(connection.execute("select count(*) from results").fetchone()[0])


def _speed_probe() -> float | None:
    """``speed_probe.py``'s sweep time (ms) now, or None if it failed: how fast the host runs."""
    try:
        probe = subprocess.run(
            [sys.executable, str(Path(__file__).with_name("speed_probe.py"))],
            capture_output=True, text=True, check=False, timeout=PROBE_TIMEOUT_S,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return None
    words = probe.stdout.split()
    if probe.returncode or len(words) != 2 or words[0] != "sweep_ms":
        return None
    return float(words[1])


def _measure(name: str, preset: str, jobs: int, out: Path, adopted: bool, probe: bool) -> dict[str, Any]:
    folder = out / f"{name}-{preset}"
    if folder.exists():  # an interrupted measurement: a resumed run would understate the wall time
        if not (folder / "run_info.json").exists():
            raise SystemExit(f"{folder} exists but is not a run folder; remove it or choose another --out")
        shutil.rmtree(folder)
    command = [sys.executable, "-m", "structnets", "run", name, "--jobs", str(jobs), "--out", str(folder), "-q"]
    if preset == "quick":
        command.insert(5, "--quick")
    probe_before = _speed_probe() if probe else None
    load_before = os.getloadavg()[0]
    ticks_start, children_start = _cpu_ticks(), sum(os.times()[2:4])
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _, stderr = process.communicate()
    except BaseException:  # SIGTERM or Ctrl-C: stop the run as well, so no orphan keeps writing its folder
        process.terminate()
        process.wait()
        raise
    wall = time.perf_counter() - start
    # their CPU time joins this process's children times once they are waited for
    reaped = _reap_adopted()
    if not reaped:
        print(f"warning: {name} {preset}: processes it left are still running; its CPU time is not counted")
    ticks_end, children_end = _cpu_ticks(), sum(os.times()[2:4])
    total, idle = ticks_end[0] - ticks_start[0], ticks_end[1] - ticks_start[1]
    own = (children_end - children_start) * os.sysconf("SC_CLK_TCK")
    probe_after = _speed_probe() if probe else None
    return {
        "experiment": name,
        "preset": preset,
        "jobs": jobs,
        "exit": process.returncode,
        "error": stderr.strip().splitlines()[-1] if process.returncode and stderr else "",
        "units": _units_finished(folder),
        "wall_s": round(wall, 1),
        "cpu_s": round(children_end - children_start, 1),
        "other_load": round(max(0.0, (total - idle - own) / max(total, 1)), 3),
        "tree_cpu": adopted and reaped,  # False: the workers' CPU time was not counted (cpu_s, other_load unknown)
        "load_before": round(load_before, 2),
        "probe_ms": [probe_before, probe_after],  # speed_probe.py before and after (None: not run)
        "commit": _commit(),
        "cpus": os.cpu_count(),
        "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def _read_log(log: Path) -> list[dict[str, Any]]:
    """The measured presets; a line cut short by a kill is skipped (that preset is measured again)."""
    records = []
    for line in log.read_text().splitlines() if log.exists() else []:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def _minutes(seconds: float) -> str:
    whole = round(seconds)  # round first: 119.6 s is 2 min 00 s, not 1 min 60 s
    return f"{whole // 60} min {whole % 60:02d} s"


def _table(records: list[dict[str, Any]]) -> str:
    lines = [
        f"Measured with `python benchmarks/preset_times.py` on {platform.machine()}, {os.cpu_count()} CPUs; "
        "other load = share of all CPUs used by other processes during the preset (above 10 %: not an idle "
        "measurement, marked ⚠); speed probe = `benchmarks/speed_probe.py`'s sweep time before / after the "
        "preset (ms; higher: a slower host; — where not taken).",
        "",
        "| experiment | preset | jobs | units | wall | CPU time | full ≤ 30 min | other load | speed probe | commit "
        "| exit |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in records:
        target = ("yes" if r["wall_s"] <= FULL_TARGET_S else "**no**") if r["preset"] == "full" else ""
        measured = bool(r.get("tree_cpu", False))
        flag = " ⚠" if measured and r["other_load"] > IDLE_LOAD else ""
        cpu = _minutes(r["cpu_s"]) if measured else "not measured"
        load = f"{100 * r['other_load']:.0f} %{flag}" if measured else "not measured"
        probes = " / ".join("—" if v is None else f"{v:.0f}" for v in r.get("probe_ms", [None, None]))
        lines.append(
            f"| {r['experiment']} | {r['preset']} | {r['jobs']} | {r['units']} | {_minutes(r['wall_s'])} | "
            f"{cpu} | {target} | {load} | {probes} | {r['commit']} | "
            f"{r['exit']}{' ' + r['error'] if r['error'] else ''} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=_csv_choice(names(), "--experiments"), default=tuple(names()))
    parser.add_argument("--presets", type=_csv_choice(PRESETS, "--presets"), default=PRESETS)
    parser.add_argument("--jobs", type=int_at_least(1), default=2)
    parser.add_argument("--out", type=Path, default=Path("runs/preset-times"))
    parser.add_argument("--table", type=Path, default=None, help="write the Markdown table here")
    parser.add_argument(
        "--no-probe", action="store_true", help="skip speed_probe.py before and after each preset (about 5 s each)"
    )
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))  # unwinds _measure, which stops the run

    args.out.mkdir(parents=True, exist_ok=True)
    adopted = _become_subreaper()
    if not adopted:
        print("warning: cannot adopt the runner's worker processes here; CPU time and other load are not measured")
    log = args.out / "times.jsonl"
    records = _read_log(log)
    commit = _commit()
    # A preset is done when measured at this commit on an idle machine; a loaded measurement is taken again.
    done = {
        (r["experiment"], r["preset"])
        for r in records
        if r["commit"] == commit and r.get("tree_cpu", False) and r["other_load"] <= IDLE_LOAD
    }
    for preset in args.presets:
        for name in args.experiments:
            if (name, preset) in done:
                continue
            print(f"{name} {preset} ...", flush=True)
            record = _measure(name, preset, args.jobs, args.out, adopted, not args.no_probe)
            records.append(record)
            with log.open("a") as f:
                f.write(json.dumps(record) + "\n")
            probes = " / ".join("—" if v is None else f"{v:.0f}" for v in record["probe_ms"])
            print(
                f"  {_minutes(record['wall_s'])}, other load {100 * record['other_load']:.0f} %, "
                f"speed probe {probes} ms",
                flush=True,
            )
    latest = {(r["experiment"], r["preset"]): r for r in records}
    table = _table([latest[k] for k in sorted(latest, key=lambda k: (PRESETS.index(k[1]), k[0]))])
    if args.table is not None:
        write_text(args.table, table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
