"""Cost of the 1-Lipschitz constraint: constrained / unconstrained training step, median per-pair ratio.

The 1-Lipschitz ResNet issue sets a goal: the constraint should cost at most 1.3× an unconstrained
training epoch. An epoch is a fixed number of identical steps (forward, backward, Adam, cosine
schedule on a batch of 256 MNIST-shaped rows), so the ratio of step times is the ratio of epoch
times. For each (depth, width) of the MNIST grid this script times, interleaved with the
unconstrained ResNet of the same shape (``lipschitz_resnet(..., variant="unconstrained")``):

* ``exact``: every map's bound is the float64 Gram eigenvalue with a rounding margin, at every
  step (certified during training as well as at evaluation);
* ``power``: the paper's persistent power estimate while training (one step per call), the exact
  certified bound at evaluation.

Both are ``variant="gradient-step"`` (lift, ``depth`` gradient-step blocks, head, all constrained).
Run ``--help`` for options; ``make bench`` runs the default set.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable

import torch

from _args import int_at_least
from structnets.analysis.timing import TimeRatio, interleaved_ratio, other_process_load, settle_before_pair
from structnets.models import lipschitz_resnet

SHAPES = ((5, 50), (10, 100), (20, 200))
BOUNDS = ("exact", "power")
GOAL = 1.3
NOISY_LOAD = 0.10  # other processes' CPU share above which a row is flagged


def _shapes(text: str) -> tuple[tuple[int, int], ...]:
    try:
        shapes = tuple(tuple(int(v) for v in item.split("x")) for item in text.split(",") if item.strip())
    except ValueError:
        shapes = ()
    if not shapes or any(len(s) != 2 or min(s) < 1 for s in shapes):
        raise argparse.ArgumentTypeError(f"expected comma-separated DEPTHxWIDTH pairs such as 5x50,10x100, got {text!r}")
    return shapes  # type: ignore[return-value]


def _stepper(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor, batch: int) -> Callable[[], None]:
    """One training step per call on the next minibatch of (X, y), as the experiments train."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=10_000)
    model.train()
    position = [0]

    def step() -> None:
        start = position[0]
        position[0] = (start + batch) % (len(X) - batch)
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(X[start : start + batch]), y[start : start + batch])
        loss.backward()
        optimizer.step()
        schedule.step()

    return step


def run(args: argparse.Namespace) -> list[dict[str, object]]:
    generator = torch.Generator().manual_seed(0)
    X = torch.rand(8 * args.batch, 784, generator=generator)
    y = torch.randint(10, (8 * args.batch,), generator=generator)
    rows: list[dict[str, object]] = []
    for depth, width in args.shapes:
        torch.manual_seed(0)
        baseline = _stepper(lipschitz_resnet(784, 10, width, depth, variant="unconstrained"), X, y, args.batch)
        load = other_process_load()
        settle = settle_before_pair(args.settle)
        ratios: dict[str, TimeRatio] = {}
        for bound in BOUNDS:
            model = lipschitz_resnet(784, 10, width, depth, variant="gradient-step", bound=bound)
            ratios[bound] = interleaved_ratio(
                _stepper(model, X, y, args.batch), baseline, pairs=args.pairs, warmup=3, before_pair=settle
            )
        rows.append({"depth": depth, "width": width, "ratios": ratios, "other_load": load()})
        print(_row(rows[-1]), flush=True)
    return rows


def _row(row: dict[str, object]) -> str:
    ratios: dict[str, TimeRatio] = row["ratios"]  # type: ignore[assignment]
    load = row["other_load"]
    cells = [str(row["depth"]), str(row["width"]), f"{ratios[BOUNDS[0]].seconds_b * 1e3:.1f}"]
    for bound in BOUNDS:
        r = ratios[bound]
        mark = "" if r.median <= GOAL else " ✗"
        cells += [f"**{r.median:.2f}×**{mark}", f"{r.q1:.2f}–{r.q3:.2f}"]
    cells.append("n/a" if load is None else f"{100 * load:.0f}%" + (" ⚠" if load > NOISY_LOAD else ""))  # type: ignore[operator]
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", type=_shapes, default=SHAPES, help="DEPTHxWIDTH list (default 5x50,10x100,20x200)")
    parser.add_argument("--batch", type=int_at_least(1), default=256, help="rows per step (default 256, the paper's)")
    parser.add_argument("--pairs", type=int_at_least(1), default=20, help="interleaved pairs per ratio (default 20)")
    parser.add_argument("--threads", type=int_at_least(1), default=1, help="torch threads (default 1: as each experiment job runs)")
    parser.add_argument("--settle", type=float, default=0.0, help="wait up to S s before each pair for the machine to go idle")
    parser.add_argument("--quick", action="store_true", help="depth 5 width 50 only, 8 pairs (about 10 s)")
    args = parser.parse_args(argv)
    if args.quick:
        args.shapes, args.pairs = ((5, 50),), 8
    torch.set_num_threads(args.threads)
    cpu = platform.processor() or platform.machine()
    print(
        f"# 1-Lipschitz constraint cost: training step constrained / unconstrained (goal ≤ {GOAL}×)\n\n"
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs ({cpu}), "
        f"batch {args.batch}, {args.pairs} interleaved pairs per ratio; other load = CPU share used by "
        f"other processes during the row.\n"
    )
    header = ["depth", "width", "unconstrained ms"]
    for bound in BOUNDS:
        header += [f"{bound} ratio (median)", f"{bound} IQR"]
    header.append("other load")
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    start = time.perf_counter()
    rows = run(args)
    print(f"\ntotal {time.perf_counter() - start:.0f} s")
    if any((row["other_load"] or 0.0) > NOISY_LOAD for row in rows):  # type: ignore[operator]
        print("⚠ rows marked ⚠ ran while other processes used the CPU: rerun them on an idle machine (or use --settle).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
