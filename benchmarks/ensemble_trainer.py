"""Cost of training E small MLPs: :func:`structnets.training.train_ensemble` vs a Python loop of ``fit``.

Both train the same E members (``mlp(8, 1, width, depth=2)``, float32, n rows, Adam, fixed
epochs and batch size, member e shuffled with seed e), so each member's weights agree to
rounding (``tests/training/test_ensemble.py`` checks it in float64). The ensemble trainer stacks
the members' parameters and runs one ``vmap``-ed forward/backward and one Adam step per
minibatch for all of them; the loop calls ``fit`` once per member. Timed interleaved, median of
per-pair ratios (``structnets.analysis.timing.interleaved_ratio``); a ratio below 1 means the
ensemble trainer is faster. Run ``--help`` for options; ``make bench`` runs the defaults.

Result (torch 2.13.0+cpu, 1 thread, 2-core x86_64, defaults, 7 pairs), taken while other
processes used 92–99 % of the CPUs (load average ~19), so the IQRs are wide: ensemble / loop
**0.67** (E = 5, width 16; IQR 0.61–2.06), **0.25** (E = 20, width 16; 0.21–0.48), **0.73**
(E = 5, width 64; 0.68–1.09), **0.38** (E = 20, width 64; 0.35–0.57). The per-step cost of the
ensemble is mostly ``vmap``'s Python overhead (about 1 ms a forward call here), so the gain
grows with E; rerun on an idle machine before quoting it.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable

import torch
from torch import nn

from _args import int_at_least, positive_ints
from structnets.analysis.timing import interleaved_ratio, other_process_load, settle_before_pair
from structnets.models import mlp
from structnets.training import fit, seeded, set_threads, train_ensemble

MEMBERS = (5, 20)
WIDTHS = (16, 64)
NOISY_LOAD = 0.10  # other processes' CPU share above which a row is flagged


def _members(count: int, width: int) -> list[nn.Module]:
    models = []
    for seed in range(count):
        with seeded(seed):
            models.append(mlp(8, 1, width, 2))
    return models


def _trainers(
    count: int, width: int, X: torch.Tensor, y: torch.Tensor, epochs: int, batch: int
) -> tuple[Callable[[], None], Callable[[], None]]:
    def ensemble() -> None:
        train_ensemble(_members(count, width), X, y, epochs=epochs, batch_size=batch, lr=1e-3)

    def loop() -> None:
        for seed, model in enumerate(_members(count, width)):
            fit(model, X, y, epochs=epochs, batch_size=batch, lr=1e-3, seed=seed)

    return ensemble, loop


def run(args: argparse.Namespace) -> list[dict[str, object]]:
    generator = torch.Generator().manual_seed(0)
    X = torch.randn(args.rows, 8, generator=generator)
    y = torch.sin(X[:, 0]) + X[:, 1] * X[:, 2]
    rows = []
    for width in args.widths:
        for count in args.members:
            ensemble, loop = _trainers(count, width, X, y, args.epochs, args.batch)
            load = other_process_load()
            ratio = interleaved_ratio(
                ensemble, loop, pairs=args.pairs, warmup=1, before_pair=settle_before_pair(args.settle)
            )
            other = load()
            row = {
                "members": count,
                "width": width,
                "ensemble_s": ratio.seconds_a,
                "loop_s": ratio.seconds_b,
                "ratio": ratio.median,
                "q1": ratio.q1,
                "q3": ratio.q3,
                "other_load": other,
            }
            rows.append(row)
            flag = " ⚠" if other is not None and other > NOISY_LOAD else ""
            load_text = "n/a" if other is None else f"{other:.0%}{flag}"
            print(
                f"| {count} | {width} | {ratio.seconds_a:.3f} | {ratio.seconds_b:.3f} | **{ratio.median:.2f}** | "
                f"{ratio.q1:.2f}–{ratio.q3:.2f} | {ratio.seconds_b / ratio.seconds_a:.1f}× | {load_text} |",
                flush=True,
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=positive_ints, default=MEMBERS, help="ensemble sizes E (default 5,20)")
    parser.add_argument("--widths", type=positive_ints, default=WIDTHS, help="MLP widths (default 16,64)")
    parser.add_argument("--rows", type=int_at_least(1), default=256, help="training rows n (default 256)")
    parser.add_argument("--batch", type=int_at_least(1), default=32, help="rows per step (default 32)")
    parser.add_argument("--epochs", type=int_at_least(1), default=3, help="epochs per training (default 3)")
    parser.add_argument("--pairs", type=int_at_least(1), default=7, help="interleaved pairs per ratio (default 7)")
    parser.add_argument(
        "--threads", type=int_at_least(1), default=1, help="torch threads (default 1: as each job runs)"
    )
    parser.add_argument("--settle", type=float, default=0.0, help="wait up to S s before each pair for an idle machine")
    args = parser.parse_args(argv)
    set_threads(args.threads)
    cpu = platform.processor() or platform.machine()
    print(
        "# Training E small MLPs: train_ensemble (stack_module_state + vmap, one Adam) / a loop of fit\n\n"
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs ({cpu}), "
        f"mlp(8, 1, width, depth=2) float32, n={args.rows}, batch {args.batch}, {args.epochs} epochs, Adam; "
        f"{args.pairs} interleaved pairs per ratio; other load = CPU share used by other processes.\n"
    )
    header = ["E", "width", "ensemble s", "loop s", "ensemble / loop (median)", "IQR", "speed-up", "other load"]
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    start = time.perf_counter()
    rows = run(args)
    print(f"\ntotal {time.perf_counter() - start:.0f} s")
    if any((row["other_load"] or 0.0) > NOISY_LOAD for row in rows):  # type: ignore[operator]
        print(
            "⚠ rows marked ⚠ ran while other processes used the CPU: rerun them on an idle machine (or use --settle)."
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
