"""LowRankLinear(n, n, rank=n//3) against nn.Linear(n, n): median per-pair time ratio.

The low-rank Swish paper (Li et al., ICML 2025) replaces each width×width hidden map by a rank-H
factorisation with H = width/3, which cuts the multiply-adds of that block to 2/3. This script
checks how much of that 1/3 saving shows up as wall time on this machine, for the forward pass
(inference, under ``torch.no_grad``) and for forward + backward (training a hidden layer: the
input requires grad, parameter grads are reset to None each step as ``optimizer.zero_grad()`` does).

A and B are timed in interleaved pairs (``structnets.analysis.timing.interleaved_ratio``); the table reports the median and
interquartile range of the per-pair ratios ``t_low_rank / t_dense``, and the FLOP ratio from
``structnets.analysis.cost``. Run ``--help`` for options; ``make bench`` runs the default set.
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
from structnets.analysis import cost
from structnets.analysis.timing import TimeRatio, interleaved_ratio, other_process_load, settle_before_pair
from structnets.nn import LowRankLinear

SIZES = (256, 512, 1024, 2048, 4096)
BATCHES = (1024, 4096)
MODES = ("forward", "train")
NOISY_LOAD = 0.10  # other processes' CPU share above which a row is flagged: 2 threads on 2 cores then stall


def _ints(text: str) -> tuple[int, ...]:
    values = tuple(int(v) for v in text.split(",") if v.strip())
    if not values or any(v < 3 for v in values):
        raise argparse.ArgumentTypeError(f"expected comma-separated ints >= 3, got {text!r}")
    return values


def _modes(text: str) -> tuple[str, ...]:
    values = tuple(v.strip() for v in text.split(",") if v.strip())
    if not values or any(v not in MODES for v in values):
        raise argparse.ArgumentTypeError(f"expected a comma-separated subset of {MODES}, got {text!r}")
    return values


def _naive(n: int, rank: int) -> nn.Module:
    """The paper's block written as two nn.Linear layers, for comparison."""
    return nn.Sequential(nn.Linear(n, rank, bias=False), nn.Linear(rank, n))


def _step(layer: nn.Module, x: torch.Tensor, grad: torch.Tensor, mode: str) -> Callable[[], object]:
    params = list(layer.parameters())
    if mode == "forward":

        def forward() -> object:
            with torch.no_grad():
                return layer(x)

        return forward

    def train() -> object:
        for p in params:
            p.grad = None
        x.grad = None
        layer(x).backward(grad)
        return None

    return train


def run(args: argparse.Namespace) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for mode in args.modes:
        for n in args.sizes:
            rank = n // 3
            for batch in args.batches:
                torch.manual_seed(0)
                dense = nn.Linear(n, n)
                low = LowRankLinear(n, n, rank)
                x = torch.randn(batch, n, requires_grad=mode == "train")
                grad = torch.randn(batch, n)
                flop_ratio = cost(low, (batch, n)).flops / cost(dense, (batch, n)).flops
                load = other_process_load()
                settle = settle_before_pair(args.settle)
                # Ratios are t_low_rank / t_dense (A = candidate, B = baseline).
                stats = interleaved_ratio(
                    _step(low, x, grad, mode),
                    _step(dense, x, grad, mode),
                    pairs=args.pairs,
                    warmup=args.warmup,
                    repeat=None,
                    before_pair=settle,
                )
                naive: TimeRatio | None = None
                if args.naive:
                    naive = interleaved_ratio(
                        _step(_naive(n, rank), x, grad, mode),
                        _step(dense, x, grad, mode),
                        pairs=args.pairs,
                        warmup=args.warmup,
                        repeat=None,
                        before_pair=settle,
                    )
                rows.append(
                    {"n": n, "batch": batch, "mode": mode, "flop_ratio": flop_ratio, "stats": stats,
                     "naive": naive, "other_load": load()}
                )  # fmt: skip
                print(_row(rows[-1], args.naive), flush=True)
                del dense, low, x, grad
    return rows


def _row(row: dict[str, object], with_naive: bool) -> str:
    stats: TimeRatio = row["stats"]  # type: ignore[assignment]
    load = row["other_load"]
    cells = [
        str(row["n"]),
        str(row["batch"]),
        str(row["mode"]),
        f"{row['flop_ratio']:.3f}",
        f"**{stats.median:.3f}**",
        f"{stats.q1:.3f}–{stats.q3:.3f}",
        f"{stats.best:.3f}",
        f"{stats.seconds_b * 1e3:.2f}",
        f"{stats.seconds_a * 1e3:.2f}",
    ]
    if with_naive:
        naive: TimeRatio = row["naive"]  # type: ignore[assignment]
        cells.append(f"{naive.median:.3f}")
    cells.append("n/a" if load is None else f"{100 * load:.0f}%" + (" ⚠" if load > NOISY_LOAD else ""))
    return "| " + " | ".join(cells) + " |"


def _header(with_naive: bool) -> str:
    names = ["n", "batch", "mode", "FLOP ratio", "time ratio (median)", "IQR", "best/best"]
    names += ["dense ms", "low-rank ms"]
    if with_naive:
        names.append("naive 2×Linear ratio")
    names.append("other load")
    return "| " + " | ".join(names) + " |\n|" + "---|" * len(names)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=_ints, default=SIZES, help="comma-separated n (default %(default)s)")
    parser.add_argument("--batches", type=_ints, default=BATCHES, help="comma-separated batch sizes")
    parser.add_argument("--modes", type=_modes, default=MODES, help="forward,train")
    parser.add_argument("--pairs", type=int_at_least(1), default=15, help="interleaved pairs per row")
    parser.add_argument("--warmup", type=int_at_least(0), default=3, help="untimed calls of each before timing")
    parser.add_argument(
        "--threads", type=int_at_least(1), default=None, help="torch.set_num_threads (default: torch's)"
    )
    parser.add_argument("--naive", action="store_true", help="also time Linear(n→r, no bias)+Linear(r→n)")
    parser.add_argument(
        "--settle",
        type=float,
        default=0.0,
        help="before each pair, wait up to this many seconds for other processes to go idle (default off)",
    )
    parser.add_argument("--quick", action="store_true", help="short run: n in 256,1024, batch 1024, 7 pairs")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.batches, args.pairs = (256, 1024), (1024,), 7
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(
        f"# LowRankLinear(n, n, n//3) vs nn.Linear(n, n), float32\n\n"
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs ({cpu}), "
        f"{args.pairs} interleaved pairs per row; time ratio = t_low_rank / t_dense "
        f"(median of per-pair ratios, IQR of the same); best/best = fastest low-rank sample / fastest "
        f"dense sample; other load = CPU share used by other processes during the row.\n"
    )
    print(_header(args.naive), flush=True)
    start = time.perf_counter()
    rows = run(args)
    if any((row["other_load"] or 0.0) > NOISY_LOAD for row in rows):
        print(
            f"\n⚠ other processes used more than {NOISY_LOAD:.0%} of the CPUs during these rows; with as many "
            "threads as cores their timings are unreliable: rerun them on an idle machine (or use --settle)."
        )
    print(f"\ntotal {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
