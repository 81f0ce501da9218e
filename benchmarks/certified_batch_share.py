"""How much of a ``verified-batched`` training step is the batch computation, and what is left without it.

Issue 26 asks for a certified dense step ≤ 1.5× an unconstrained one. ``CertifiedBatch._compute`` (the
Gram products, Lanczos guesses, batched Cholesky test and rounding of every map's value) is one part
of the extra time; the members' content checks, the certified values' gradient and the τ products
are the rest. For each (depth, width) this script times, in interleaved rounds, the unconstrained
step (A), the certified step (B) and the batch computation alone on unchanged weights (C), and
prints the medians, B/A, and (B − C)/A: the ratio a batch computation that cost nothing would give,
so the most a faster batch computation alone could reach. Where the compiled kernel runs (numba,
extra ``fast``), it also times the batch computation as tensor operations (the path without numba,
on CUDA and in half precision) in the same rounds. Run ``--help`` for options.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable

import torch

from _args import int_at_least
from lipschitz_constraint import _model, _shapes, _stepper
from structnets.models import lipschitz_resnet
from structnets.nn import _fused_certify


def _per_call_ms(function: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        function()
    return (time.perf_counter() - start) / calls * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", type=_shapes, default=((5, 50), (5, 100)), help="DEPTHxWIDTH list (5x50,5x100)")
    parser.add_argument("--rounds", type=int_at_least(3), default=25, help="interleaved rounds (default 25)")
    parser.add_argument("--calls", type=int_at_least(1), default=20, help="calls timed per round (default 20)")
    parser.add_argument("--batch", type=int_at_least(2), default=256, help="rows per step (default 256)")
    parser.add_argument("--threads", type=int_at_least(1), default=1, help="torch threads (default 1)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(0)
    X = torch.rand(8 * args.batch, 784, generator=generator)
    y = torch.randint(10, (8 * args.batch,), generator=generator)
    print(
        f"# verified-batched step: its batch computation and the rest ({args.threads} thread(s), "
        f"{platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}; batch {args.batch}, "
        f"{args.rounds} rounds × {args.calls} calls, medians)\n"
    )
    fused = _fused_certify.AVAILABLE
    print(
        "| depth | width | unconstrained ms | certified ms | batch computation ms | certified / unconstrained "
        "| without the batch computation | batch computation as tensor operations ms |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for depth, width in args.shapes:
        torch.manual_seed(0)
        model = _model("verified-batched", depth, width)
        step = _stepper(model, X, y, args.batch)
        base = _stepper(lipschitz_resnet(784, 10, width, depth, variant="unconstrained"), X, y, args.batch)
        for _ in range(5):
            step()
            base()
        compute = model.certified_batch._compute

        def tensor_operations(compute: Callable[[], None] = compute) -> None:
            _fused_certify.AVAILABLE = False
            try:
                compute()
            finally:
                _fused_certify.AVAILABLE = fused

        rounds = [
            (
                _per_call_ms(base, args.calls),
                _per_call_ms(step, args.calls),
                _per_call_ms(compute, args.calls),
                _per_call_ms(tensor_operations, args.calls) if fused else float("nan"),
            )
            for _ in range(args.rounds)
        ]
        a, b, c, d = (statistics.median(r[i] for r in rounds) for i in range(4))
        ratio = statistics.median(r[1] / r[0] for r in rounds)
        rest = statistics.median((r[1] - r[2]) / r[0] for r in rounds)
        tensor = f"{d:.2f}" if fused else "— (numba not installed: the batch computation is the tensor one)"
        print(
            f"| {depth} | {width} | {a:.2f} | {b:.2f} | {c:.2f} | {ratio:.2f}× | {rest:.2f}× | {tensor} |", flush=True
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
