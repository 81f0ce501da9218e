"""Projected wall time of the full ``smoothness-rates`` preset from short runs of every unit.

Each training unit of the full preset runs once, one thread, at its full size (members, points,
width) but with shortened budgets (``--adam`` steps, ``--lbfgs`` L-BFGS evaluations, ``--lm``
Levenberg–Marquardt iterations). The CPU time of each phase is measured separately and scaled to
the unit's real budget: an Adam step and an L-BFGS evaluation cost one loss-and-gradient sweep,
an LM iteration one trial evaluation plus, when accepted, one Jacobian and JᵀJ. Scaling assumes
every member runs the whole budget (converged members stop earlier), so the projection is an
upper bound for L-BFGS and LM. The units are then scheduled like the runner's ``--jobs N``
(longest-first order of ``make_units``, each unit to the first free worker), and the table gives
the projected wall = that schedule's makespan, beside max(Σ/N, longest unit).

    python benchmarks/rates_projection.py [--jobs 2] [--adam 40] [--lbfgs 60] [--lm 12] [--parts estimation,approximation] [--quick]
"""

from __future__ import annotations

import argparse
import heapq
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _args import int_at_least  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int_at_least(1), default=2, help="workers of the projected run")
    parser.add_argument("--adam", type=int_at_least(1), default=40, help="Adam steps measured")
    parser.add_argument("--lbfgs", type=int_at_least(1), default=60, help="L-BFGS evaluations measured")
    parser.add_argument("--lm", type=int_at_least(1), default=12, help="LM iterations measured")
    parser.add_argument("--parts", default="estimation,approximation", help="unit parts to measure")
    parser.add_argument("--match", default="", help="only units whose key contains this")
    parser.add_argument("--quick", action="store_true", help="the quick preset instead (to check the method)")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import pandas as pd
    import torch
    from threadpoolctl import threadpool_limits

    import structnets.training.lbfgs as lbfgs
    import structnets.training.levenberg_marquardt as lm
    from structnets.experiments.smoothness_rates import SmoothnessRatesConfig, make_units
    from structnets.experiments.smoothness_rates.units import _run_fit_unit

    torch.set_num_threads(1)
    spent: dict[str, float] = {}
    originals: dict[str, Any] = {
        "adam": lbfgs.adam_phase,
        "lbfgs": lbfgs.batched_lbfgs,
        "lm": lm.batched_levenberg_marquardt,
    }

    def timed(name: str) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            start = time.process_time()
            try:
                return originals[name](*a, **k)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - start

        return wrapper

    lbfgs.adam_phase = timed("adam")  # type: ignore[assignment]
    lbfgs.batched_lbfgs = timed("lbfgs")  # type: ignore[assignment]
    lm.batched_levenberg_marquardt = timed("lm")  # type: ignore[assignment]
    parts = set(args.parts.split(","))
    units = make_units(SmoothnessRatesConfig.quick() if args.quick else SmoothnessRatesConfig(), pd.DataFrame())
    projected: list[tuple[str, float]] = []
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print("| unit | width | measured CPU s | projected CPU s |")
    print("|---|---|---|---|")
    with threadpool_limits(limits=1, user_api="blas"):
        for unit in units:
            p = dict(unit.params)
            if p["part"] not in parts or args.match not in unit.key:
                projected.append((unit.key, 0.0))
                continue
            full = {"adam": int(p["steps"]), "lbfgs": int(p["lbfgs_iters"]), "lm": int(p.get("lm_iters", 0))}
            short = {"adam": min(args.adam, full["adam"]), "lbfgs": min(args.lbfgs, full["lbfgs"])}
            short["lm"] = min(args.lm, full["lm"])
            p.update(steps=short["adam"], lbfgs_iters=short["lbfgs"], lm_iters=short["lm"])
            spent.clear()
            start = time.process_time()
            _run_fit_unit(p)
            total = time.process_time() - start
            rest = total - sum(spent.values())  # data, test evaluation
            estimate = rest + sum(spent.get(k, 0.0) * full[k] / short[k] for k in full if short[k] > 0)
            projected.append((unit.key, estimate))
            print(f"| {unit.key} | {p['width']} | {total:.1f} | {estimate:.0f} |", flush=True)
    workers = [0.0] * args.jobs
    heapq.heapify(workers)
    for _, seconds in projected:  # make_units' order: longest expected first
        heapq.heappush(workers, heapq.heappop(workers) + seconds)
    total = sum(s for _, s in projected)
    longest = max(s for _, s in projected)
    print(
        f"\nprojected unit-seconds {total:.0f}, longest unit {longest:.0f} s; --jobs {args.jobs}: "
        f"makespan {max(workers) / 60:.1f} min (max(sum/N, longest) = {max(total / args.jobs, longest) / 60:.1f} min); "
        f"load average after: {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
