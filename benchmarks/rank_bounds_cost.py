"""Where the ``rank-bounds`` full preset spends its time, and its projected wall time on 2 cores.

Runs a sample of the full preset's MLP units (by default: both data sets, every depth, width and
variant, one weight decay) single-threaded with ``--epochs`` epochs instead of 20, and charges the
process CPU time (``time.process_time``, so other processes' load does not count) to phases:

* ``train``: ``structnets.training.fit`` minus its callbacks (scaled by 20/epochs for the full run);
* ``record``: the rank checkpoints (weight SVDs and activation ranks, 5 per unit);
* ``bounds``: the margin bounds of ``structnets.analysis`` (covering bounds, spectral, PAC-Bayes);
* ``rest``: evaluation, margins and the final ranks.

Every unit of the full preset is then projected as the measured unit of its (data set, depth,
width, variant) cell; the deep linear units are run whole. The projected wall time with
``--jobs 2`` is ``max(Σ/2, longest unit)`` (the runner hands units to two workers in order; the
longest is far below half the sum). CPU time is what two idle cores give; on a shared machine
the wall time is longer by the load. Run ``--help`` for options.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pandas as pd
import torch

import structnets.analysis as analysis
import structnets.training as training
from _args import int_at_least
from structnets.experiments.rank_bounds import EXPERIMENT, RankBoundsConfig
from structnets.experiments.rank_bounds.units import _arrays

PHASES = ("train", "record", "bounds", "rest")
BOUNDS = ("parameter_count_bound", "rank_sparse_bounds", "spectral_bound", "pac_bayes_bound")


class _Clock:
    """Process CPU seconds charged to the innermost open phase."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self.stack: list[str] = ["rest"]
        self.mark = time.process_time()

    def _switch(self) -> None:
        now = time.process_time()
        self.spent[self.stack[-1]] += now - self.mark
        self.mark = now

    def wrap(self, phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            self._switch()
            self.stack.append(phase)
            try:
                return function(*args, **kwargs)
            finally:
                self._switch()
                self.stack.pop()

        return timed


def _measure(params: dict[str, Any]) -> dict[str, float]:
    """Run one unit with the phases timed (the functions are patched where the unit imports them)."""
    clock = _Clock()
    saved = {name: getattr(analysis, name) for name in BOUNDS}
    fit = training.fit
    try:
        for name in BOUNDS:
            setattr(analysis, name, clock.wrap("bounds", saved[name]))

        def timed_fit(*args: Any, callback: Any = None, **kwargs: Any) -> Any:
            return fit(*args, callback=clock.wrap("record", callback), **kwargs)

        training.fit = clock.wrap("train", timed_fit)  # type: ignore[assignment]
        clock.mark = time.process_time()
        EXPERIMENT.run_unit(params)
        clock._switch()
    finally:
        for name, function in saved.items():
            setattr(analysis, name, function)
        training.fit = fit  # type: ignore[assignment]
    return dict(clock.spent)


def _linear_ratios(steps: int, pairs: int) -> None:
    """Deep linear training: the previous revision's path (``fit`` with full-batch
    ``torch.optim.SGD``, autograd on the data) against ``deep_linear_gradient_descent`` (the
    data's second moments), interleaved, on the full preset's nets (width 16, n = 256, λ = 1e-2)."""
    from torch import nn

    from structnets.analysis.timing import interleaved_ratio
    from structnets.training.linear_gd import deep_linear_gradient_descent

    g = torch.Generator().manual_seed(0)
    left, _ = torch.linalg.qr(torch.randn(16, 3, generator=g, dtype=torch.float64))
    right, _ = torch.linalg.qr(torch.randn(16, 3, generator=g, dtype=torch.float64))
    X = torch.randn(256, 16, generator=g, dtype=torch.float64)
    Y = X @ (left @ torch.diag(torch.tensor([3.0, 2.0, 1.0], dtype=torch.float64)) @ right.T).T  # a rank-3 teacher
    print(f"\n| deep linear, {steps} steps | fit + SGD (s) | linear_gd (s) | ratio (median, q1–q3) |")
    print("|---|---|---|---|")
    for depth in RankBoundsConfig().linear_depths:
        weights = [torch.randn(16, 16, generator=g, dtype=torch.float64) / 4.0 for _ in range(depth)]

        def by_fit(weights: list[torch.Tensor] = weights) -> None:
            layers = [nn.Linear(16, 16, bias=False, dtype=torch.float64) for _ in weights]
            with torch.no_grad():
                for layer, w in zip(layers, weights, strict=True):
                    layer.weight.copy_(w)
            training.fit(
                nn.Sequential(*layers), X, Y, loss=lambda out, y: 0.5 * (out - y).square().sum() / out.shape[0],
                epochs=steps, batch_size=None,
                optimizer=lambda params: torch.optim.SGD(params, lr=0.02, weight_decay=1e-2),
            )  # fmt: skip

        def by_moments(weights: list[torch.Tensor] = weights) -> None:
            deep_linear_gradient_descent(weights, X, Y, steps=steps, lr=0.02, weight_decay=1e-2)

        r = interleaved_ratio(by_fit, by_moments, pairs=pairs, warmup=1)
        print(f"| L = {depth} | {r.seconds_a:.3f} | {r.seconds_b:.4f} | ×{r.median:.1f} ({r.q1:.1f}–{r.q3:.1f}) |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int_at_least(4), default=4, help="epochs per sampled unit (default 4)")
    parser.add_argument("--weight-decay", type=float, default=1e-4, help="the sampled weight decay (default 1e-4)")
    parser.add_argument("--widths", default="64,128,256,512,1024", help="sampled widths")
    parser.add_argument("--json", help="write the per-cell measurements to this file")
    parser.add_argument("--linear-only", action="store_true", help="only the deep linear old/new ratios")
    parser.add_argument("--linear-steps", type=int_at_least(1), default=2000, help="steps per timed deep linear run")
    parser.add_argument("--linear-pairs", type=int_at_least(1), default=5, help="interleaved pairs (default 5)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.linear_only:
        print(f"# rank-bounds deep linear units, {platform.node()}, load {os.getloadavg()[0]:.2f}")
        _linear_ratios(args.linear_steps, args.linear_pairs)
        return
    full = RankBoundsConfig()
    widths = tuple(int(w) for w in args.widths.split(","))
    sample = replace(full, widths=widths, weight_decays=(args.weight_decay,), epochs=args.epochs, linear_depths=())
    for dataset in full.datasets:  # load outside the clock, as a worker does once
        _arrays(dataset, full.n_train, full.n_test)
    cells: dict[str, dict[str, float]] = {}
    print(f"# rank-bounds cost, {platform.node()}, load {os.getloadavg()[0]:.2f}, torch {torch.__version__}")
    print("| cell | train (×20/epochs) | record | bounds | rest | unit |")
    print("|---|---|---|---|---|---|")
    for unit in EXPERIMENT.units(sample, pd.DataFrame()):
        params = json.loads(json.dumps(unit.params))
        spent = _measure(params)
        spent["train"] *= full.epochs / args.epochs
        cell = f"{params['dataset']}/L={params['depth']}/W={params['width']}/{'dense' if params['rank'] is None else 'rank'}"
        cells[cell] = {phase: spent.get(phase, 0.0) for phase in PHASES}
        row = cells[cell]
        print(
            f"| {cell} | " + " | ".join(f"{row[p]:.1f}" for p in PHASES) + f" | {sum(row.values()):.1f} |", flush=True
        )
    linear: dict[str, float] = {}
    for unit in EXPERIMENT.units(replace(full, datasets=("rice",), widths=(64,), depths=(2,)), pd.DataFrame()):
        if unit.params.get("kind") == "deep-linear":
            start = time.process_time()
            EXPERIMENT.run_unit(json.loads(json.dumps(unit.params)))
            linear[unit.key] = time.process_time() - start
    per_unit = []
    for unit in EXPERIMENT.units(full, pd.DataFrame()):
        p = unit.params
        if p.get("kind") == "deep-linear":
            per_unit.append(linear[unit.key])
        elif p["width"] in widths:
            cell = f"{p['dataset']}/L={p['depth']}/W={p['width']}/{'dense' if p['rank'] is None else 'rank'}"
            per_unit.append(sum(cells[cell].values()))
    phase_sum = {phase: sum(c[phase] for c in cells.values()) * len(full.weight_decays) for phase in PHASES}
    total = sum(per_unit)
    print(f"\ndeep linear units: {len(linear)}, {sum(linear.values()):.1f} s CPU in all")
    print("full preset, CPU s by phase: " + ", ".join(f"{k} {v:.0f}" for k, v in phase_sum.items()))
    print(f"projected: {len(per_unit)} units, Σ {total:.0f} CPU s, longest {max(per_unit):.0f} s; "
          f"--jobs 2 on 2 idle cores ≈ {max(total / 2, max(per_unit)) / 60:.1f} min")  # fmt: skip
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"cells": cells, "linear": linear, "epochs": args.epochs}, handle, indent=1)


if __name__ == "__main__":
    main()
