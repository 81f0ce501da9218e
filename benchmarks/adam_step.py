"""Cost of fit's default Adam: the verified private-kernel fast path vs public ``torch.optim.Adam``.

:func:`structnets.training.fit` trains with ``torch.optim.Adam(fused=True)`` (public torch), except
on CPU where ``_FusedAdam`` calls the same fused kernel directly, without ``torch.optim``'s
per-step Python bookkeeping, after a one-time self-check that it is bit-identical (the test
``tests/training/test_fit.py`` also checks whole ``fit`` runs bit for bit). This script measures
whether that fast path is worth keeping: one whole training step (zero the gradients, forward,
MSE backward, optimiser step) of ``mlp(8, 1, width, depth=3)`` on a batch, the fast path timed
against ``Adam(fused=True)``, and ``Adam(foreach=True)`` timed against ``Adam(fused=True)``,
interleaved, median of per-pair ratios (``structnets.analysis.timing.interleaved_ratio``).
A ratio below 1 means faster than public fused Adam. Run ``--help`` for options.

Result (torch 2.13.0+cpu, 1 thread, 2-core Xeon, 30 pairs, machine idle, load average 0.3; the
same steps and timing helper as this script, run before it was written up as one):
width 64, batch 128: fast / fused **0.77** (IQR 0.75–0.81; 388 µs vs 502 µs a step), foreach /
fused 1.34; width 256, batch 256: fast / fused **0.94** (IQR 0.89–0.98), foreach / fused 1.12.
The fast path has a second, per-process benefit this table does not show: ``Optimizer.step``
imports ``torch._dynamo`` on its first call (4.4–9.3 s measured on this 2-core machine under
load), which the fast path and its self-check never do (``tests/training/test_fit.py``).
So the fast path is kept on CPU, where the models of the UCI grid search are this small; a run
of this script later the same day under 100 % load from other processes gave 0.40–0.89 with
IQRs spanning 1, which is not evidence either way.
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

from _args import int_at_least
from structnets.analysis.timing import TimeRatio, interleaved_ratio, other_process_load, settle_before_pair
from structnets.models import mlp
from structnets.training.fit import _fast_adam_verified, _FusedAdam

WIDTHS = (64, 256)
NOISY_LOAD = 0.10  # other processes' CPU share above which a row is flagged


def _widths(text: str) -> tuple[int, ...]:
    try:
        widths = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        widths = ()
    if not widths or min(widths) < 1:
        raise argparse.ArgumentTypeError(f"expected comma-separated widths >= 1 such as 64,256, got {text!r}")
    return widths


def _stepper(kind: str, width: int, X: torch.Tensor, y: torch.Tensor) -> Callable[[], None]:
    torch.manual_seed(0)
    model = mlp(X.shape[1], 1, width, 3)
    params = list(model.parameters())
    if kind == "fast":
        optimizer: torch.optim.Optimizer | _FusedAdam = _FusedAdam(params, lr=1e-3, weight_decay=0.0, decoupled=False)
    else:
        optimizer = torch.optim.Adam(params, lr=1e-3, **{kind: True})

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        nn.functional.mse_loss(model(X), y).backward()
        optimizer.step()

    return step


def run(args: argparse.Namespace) -> list[dict[str, object]]:
    generator = torch.Generator().manual_seed(0)
    X = torch.randn(args.batch, 8, generator=generator)
    y = torch.randn(args.batch, 1, generator=generator)
    rows: list[dict[str, object]] = []
    for width in args.widths:
        load = other_process_load()
        settle = settle_before_pair(args.settle)
        fused = _stepper("fused", width, X, y)
        ratios: dict[str, TimeRatio] = {
            kind: interleaved_ratio(
                _stepper(kind, width, X, y), fused, pairs=args.pairs, repeat=None, before_pair=settle
            )
            for kind in ("fast", "foreach")
        }
        rows.append({"width": width, "ratios": ratios, "other_load": load()})
        print(_row(rows[-1], args.batch), flush=True)
    return rows


def _row(row: dict[str, object], batch: int) -> str:
    ratios: dict[str, TimeRatio] = row["ratios"]  # type: ignore[assignment]
    load = row["other_load"]
    fast, foreach = ratios["fast"], ratios["foreach"]
    cells = [
        str(row["width"]), str(batch), f"{fast.seconds_b * 1e6:.0f}", f"{fast.seconds_a * 1e6:.0f}",
        f"**{fast.median:.3f}**", f"{fast.q1:.3f}–{fast.q3:.3f}", f"{foreach.median:.3f}",
        "n/a" if load is None else f"{100 * load:.0f}%" + (" ⚠" if load > NOISY_LOAD else ""),  # type: ignore[operator]
    ]  # fmt: skip
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", type=_widths, default=WIDTHS, help="MLP widths (default 64,256)")
    parser.add_argument("--batch", type=int_at_least(1), default=128, help="rows per step (default 128)")
    parser.add_argument("--pairs", type=int_at_least(1), default=30, help="interleaved pairs per ratio (default 30)")
    parser.add_argument(
        "--threads", type=int_at_least(1), default=1, help="torch threads (default 1: as each experiment job runs)"
    )
    parser.add_argument(
        "--settle", type=float, default=0.0, help="wait up to S s before each pair for the machine to go idle"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    cpu = platform.processor() or platform.machine()
    verified = _fast_adam_verified(torch.float32, False)
    print(
        "# fit's Adam step: private-kernel fast path / public torch.optim.Adam(fused=True)\n\n"
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs ({cpu}), "
        f"mlp(8, 1, width, depth=3), {args.pairs} interleaved pairs per ratio; fast path bit-identical "
        f"on this torch: {verified}; other load = CPU share used by other processes during the row.\n"
    )
    header = ["width", "batch", "fused µs", "fast µs", "fast / fused (median)", "IQR", "foreach / fused", "other load"]
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
