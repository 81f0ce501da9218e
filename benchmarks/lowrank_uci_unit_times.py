"""Per-unit CPU seconds of ``lowrank-uci`` and the torch-thread A/B behind its one-thread units.

Usage (``STRUCTNETS_DATA`` set; pin to one core, e.g. ``taskset -c 1``, for per-unit CPU):

    python benchmarks/lowrank_uci_unit_times.py run OUT_DIR LOG.jsonl   # the full preset, jobs=1,
        # one JSON line per finished unit: key, CPU seconds (process_time), wall, load average
    python benchmarks/lowrank_uci_unit_times.py project LOG.jsonl       # totals and a 2-worker projection
    python benchmarks/lowrank_uci_unit_times.py threads                 # interleaved 2- vs 1-thread A/B

``project`` list-schedules the logged units, in run order, on two workers in the runner's two rounds
(the grid; then CV and efficiency), i.e. the wall time of ``--jobs 2`` on two idle cores.
"""

from __future__ import annotations

import heapq
import json
import os
import sys
import time
from collections import defaultdict


def run(out: str, log_path: str) -> None:
    from structnets import runner
    from structnets.experiments import lowrank_uci

    last = [time.process_time()]
    with open(log_path, "a") as log:

        def on_unit(record) -> None:  # type: ignore[no-untyped-def]
            now = time.process_time()
            row = {"key": record.key, "cpu_s": round(now - last[0], 3), "wall_s": record.wall_s}
            log.write(json.dumps({**row, "load1": round(os.getloadavg()[0], 2)}) + "\n")
            log.flush()
            last[0] = now

        runner.run(lowrank_uci.EXPERIMENT, lowrank_uci.LowRankUCIConfig(), out, jobs=1, on_unit=on_unit)


def _schedule(seconds: list[float], workers: int = 2) -> float:
    free = [0.0] * workers
    for s in seconds:
        heapq.heappush(free, heapq.heappop(free) + s)
    return max(free)


def project(log_path: str) -> None:
    rows = [json.loads(line) for line in open(log_path)]
    by_stage: dict[str, float] = defaultdict(float)
    by_set: dict[str, float] = defaultdict(float)
    for row in rows:
        stage, dataset = row["key"].split("/")[:2]
        by_stage[stage] += row["cpu_s"]
        by_set[dataset] += row["cpu_s"]
    total = sum(row["cpu_s"] for row in rows)
    grid = [row["cpu_s"] for row in rows if row["key"].startswith("select/")]
    rest = [row["cpu_s"] for row in rows if not row["key"].startswith("select/")]
    wall = _schedule(grid) + _schedule(rest)
    print(f"{len(rows)} units, {total:.0f} CPU s ({total / 60:.1f} min)")
    print("by stage:", {k: round(v) for k, v in by_stage.items()})
    print("by data set:", {k: round(v) for k, v in sorted(by_set.items(), key=lambda kv: -kv[1])})
    print(f"--jobs 2 on 2 idle cores: {wall:.0f} s ({wall / 60:.1f} min)")


def threads() -> None:
    import torch

    from structnets.experiments.lowrank_uci import LowRankUCIConfig, _run_select, _training_params

    params = {
        "stage": "select", "dataset": "bike-sharing", "depth": 2, "width": 96, "selection_fraction": 0.2,
        **_training_params(LowRankUCIConfig(epochs=10, early_stopping=False)),
    }  # fmt: skip
    torch.set_num_threads(1)
    _run_select({**params, "epochs": 1})  # warm-up
    for pair in range(3):
        for count in (2, 1) if pair % 2 == 0 else (1, 2):
            torch.set_num_threads(count)  # _run_select directly: _run_unit would force one thread
            load = os.getloadavg()[0]
            cpu, wall = time.process_time(), time.perf_counter()
            result = _run_select(params)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            print(json.dumps({"pair": pair, "threads": count, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                              "load1": round(load, 2), "rmse": result["rmse"]}))  # fmt: skip


if __name__ == "__main__":
    command, *args = sys.argv[1:] or ["threads"]
    if command == "run":
        run(*args)
    elif command == "project":
        project(*args)
    else:
        threads()
