"""A fixed single-thread workload whose time tells how fast this machine runs right now.

Not a ratio: a reference figure to print beside wall times. On the shared 2-core machine one
``smoothness-rates`` unit (``estimation/d=1/s=3/L=2/n=5000``, one thread) took 39.5 s and, minutes
later, 24.6 s with the same code, no other process and no steal time visible inside the VM. A wall
time measured on such a host needs this figure beside it.

The workload is the loss-and-gradient sweep that dominates the first-order experiments:
:meth:`structnets.models.ensemble_mlp.EnsembleMLP.mse_and_grad` of 20 float64 members (ReLU,
Tanh, GELU, SiLU; d = 1, width 14, depth 6) on 5,000 points, one thread; the figure is the
median over ``--blocks`` blocks of ``--calls`` calls, in milliseconds per call.

    python benchmarks/speed_probe.py            # prints e.g. "sweep_ms 74.1"
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from _args import int_at_least


def sweep_ms(calls: int = 10, blocks: int = 3) -> float:
    """Median over ``blocks`` of the mean time of one sweep in ``calls`` calls, in ms (one thread)."""
    import torch
    from threadpoolctl import threadpool_limits

    from structnets.models.ensemble_mlp import EnsembleMLP
    from structnets.training import torch_threads

    activations = [name for name in ("relu", "tanh", "gelu", "silu") for _ in range(5)]
    generator = torch.Generator().manual_seed(0)
    net = EnsembleMLP(activations, 1, 14, 6, generator=generator, input_scale=10.0)
    inputs = torch.rand(len(activations), 5000, 1, generator=generator, dtype=torch.float64) * 2 - 1
    targets = torch.sin(8 * inputs[..., 0])
    times = []
    with torch_threads(1), threadpool_limits(limits=1):
        net.mse_and_grad(net.x, inputs, targets)  # warm-up: allocator, kernels
        for _ in range(blocks):
            start = time.perf_counter()
            for _ in range(calls):
                net.mse_and_grad(net.x, inputs, targets)
            times.append((time.perf_counter() - start) / calls)
    return 1000 * statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int_at_least(1), default=10)
    parser.add_argument("--blocks", type=int_at_least(1), default=3)
    args = parser.parse_args(argv)
    print(f"sweep_ms {sweep_ms(args.calls, args.blocks):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
