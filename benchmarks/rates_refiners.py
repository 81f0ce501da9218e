"""Noiseless fits of ``smoothness-rates``: L-BFGS against Levenberg–Marquardt at similar wall time.

Why the approximation part of ``smoothness-rates`` refines with Levenberg–Marquardt: two
``fit_rates_ensemble`` calls on the same problem (lacunary target, d = 1, 2,048 noiseless points, one
hidden layer) with the same seed, hence the same Adam start, one refined by per-member L-BFGS
with ``--lbfgs`` evaluations, the other by per-member LM with ``--lm`` iterations; the table gives
each call's wall time (Adam included) and test RMSE per activation. The defaults give the two
about the same time on one core.

With ``--gradients`` it instead times one loss-and-gradient evaluation of a unit's ensemble
(4 activations × 5 seeds) three ways, interleaved, and prints the median of per-pair time ratios
against the hand-written sweep :meth:`EnsembleMLP.mse_and_grad` (what ``smoothness-rates`` uses):
autograd through :meth:`EnsembleMLP.forward` (what it used before), and ``torch.func.vmap`` of
``torch.func.grad`` over per-activation stacks of ``nn.Sequential`` members (the approach of
:mod:`structnets.training.ensemble`).

    python benchmarks/rates_refiners.py [--parameters 160] [--lbfgs 3000] [--lm 1000] [--threads 1]
    python benchmarks/rates_refiners.py --gradients [--pairs 30]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _args import int_at_least  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parameters", default="160", help="comma-separated parameter counts N (each ≥ 8)")
    parser.add_argument("--lbfgs", type=int_at_least(1), default=3000, help="L-BFGS evaluations")
    parser.add_argument("--lm", type=int_at_least(1), default=1000, help="Levenberg–Marquardt iterations")
    parser.add_argument("--adam", type=int_at_least(0), default=300, help="Adam steps before either")
    parser.add_argument("--points", type=int_at_least(16), default=2048, help="noiseless training points")
    parser.add_argument("--smoothness", type=float, default=3.0, help="smoothness s of the target")
    parser.add_argument("--threads", type=int_at_least(1), default=1, help="torch threads")
    parser.add_argument("--gradients", action="store_true", help="time gradient evaluations instead")
    parser.add_argument("--pairs", type=int_at_least(3), default=30, help="interleaved timing rounds (--gradients)")
    args = parser.parse_args()
    if args.gradients:
        os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
        gradient_ratios(args.pairs, args.threads)
        return
    try:
        sizes = [int(v) for v in args.parameters.split(",")]
    except ValueError:
        parser.error(f"--parameters must be comma-separated ints, got {args.parameters!r}")
    if any(N < 8 for N in sizes):
        parser.error(f"--parameters must each be >= 8, got {args.parameters!r}")
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))

    import numpy as np
    import torch

    from structnets.data import lacunary_target
    from structnets.experiments.smoothness_rates import fit_rates_ensemble, width_for_parameters

    torch.set_num_threads(args.threads)
    activations = ["relu", "tanh", "gelu", "silu"]
    target = lacunary_target(1, args.smoothness, levels=10)
    X, y = target.sample(args.points, noise=0.0, seed=1000)
    X_test = torch.from_numpy(np.random.default_rng(999).random((4096, 1)))
    f_test = target(X_test)
    X = torch.from_numpy(np.stack([X] * len(activations)))
    y = torch.from_numpy(np.stack([y] * len(activations)))
    print(
        f"| N | width | activation | Adam + L-BFGS ({args.lbfgs}) s | L-BFGS test RMSE | Adam + LM ({args.lm}) s | LM test RMSE | MSE ratio LM / L-BFGS |"
    )
    print("|---|---|---|---|---|---|---|---|")
    # Warm-up: the first call pays for lazy imports and allocator growth, not for its refiner.
    fit_rates_ensemble(
        X[:, :16],
        y[:, :16],
        X_test[:16],
        f_test[:16],
        activations,
        2,
        2,
        steps=1,
        lr=1e-2,
        seed=0,
        lbfgs_iters=1,
        lm_iters=1,
    )
    for N in sizes:
        width = width_for_parameters(N, 1, 2)
        fits, seconds = [], []
        # Same seed, so both refiners start from the same Adam iterate (tested in tests/training/test_lbfgs.py).
        for refiner in ({"lbfgs_iters": args.lbfgs}, {"lm_iters": args.lm}):
            start = time.perf_counter()
            fits.append(
                fit_rates_ensemble(
                    X,
                    y,
                    X_test,
                    f_test,
                    activations,
                    width,
                    2,
                    steps=args.adam,
                    lr=1e-2,
                    seed=5,
                    input_scale=10.0,
                    **refiner,
                )
            )
            seconds.append(time.perf_counter() - start)
        lbfgs, lm = fits
        for i, name in enumerate(activations):
            a, b = math.sqrt(lbfgs.test_mse[i]), math.sqrt(lm.test_mse[i])
            print(
                f"| {N} | {width} | {name} | {seconds[0]:.1f} | {a:.2e} | {seconds[1]:.1f} | {b:.2e} | {(b / a) ** 2:.3f} |"
            )


def gradient_ratios(pairs: int, threads: int) -> None:
    """Median per-pair time ratios of three gradient evaluations of one unit's ensemble (see module doc).

    Times are the calling thread's CPU time (``time.thread_time``; one torch thread), so other
    processes on a shared machine inflate them less than wall time.
    """
    import torch

    torch.set_num_threads(threads)
    print(
        "| unit shape (d, width, depth, n) | hand-written CPU ms | autograd / hand-written | vmap(grad) / hand-written |"
    )
    print("|---|---|---|---|")
    for d, width, depth, n in ((1, 12, 2, 5000), (2, 14, 6, 2000), (1, 213, 2, 2048), (2, 9, 2, 200)):
        hand, autograd, vmapped = _time_shape(d, width, depth, n, pairs)
        print(f"| {d}, {width}, {depth}, {n} | {1e3 * hand:.1f} | {autograd:.2f} | {vmapped:.2f} |")


def _time_shape(d: int, width: int, depth: int, n: int, pairs: int) -> tuple[float, float, float]:
    """(median hand-written seconds, median ratio autograd/hand-written, median ratio vmap/hand-written)."""
    import statistics

    import torch
    from torch.func import functional_call, grad, stack_module_state, vmap

    from structnets.models.ensemble_mlp import EnsembleMLP

    names = ("relu", "tanh", "gelu", "silu")
    activations = [name for name in names for _ in range(5)]
    net = EnsembleMLP(activations, d, width, depth, generator=torch.Generator().manual_seed(0), input_scale=10.0)
    X = torch.rand(len(activations), n, d, dtype=torch.float64)
    y = torch.randn(len(activations), n, dtype=torch.float64)

    def autograd() -> None:
        x = net.x.clone().requires_grad_(True)
        torch.autograd.grad(((net.forward(x, X) - y) ** 2).mean(1).sum(), x)

    def handwritten() -> None:
        net.mse_and_grad(net.x, X, y)

    modules = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh, "gelu": torch.nn.GELU, "silu": torch.nn.SiLU}
    groups = []
    for name in names:
        members = []
        for _ in range(5):
            layers: list[torch.nn.Module] = [torch.nn.Linear(d, width), modules[name]()]
            for _ in range(depth - 2):
                layers += [torch.nn.Linear(width, width), modules[name]()]
            members.append(torch.nn.Sequential(*layers, torch.nn.Linear(width, 1)).double())
        params, buffers = stack_module_state(members)
        base = members[0]

        def loss(p, b, inputs, targets, base=base):  # type: ignore[no-untyped-def]
            return ((functional_call(base, (p, b), (inputs,)).squeeze(-1) - targets) ** 2).mean()

        rows = [i for i, a in enumerate(activations) if a == name]
        groups.append((vmap(grad(loss)), params, buffers, X[rows], y[rows]))

    def vmapped() -> None:
        for fn, params, buffers, inputs, targets in groups:
            fn(params, buffers, inputs, targets)

    timings: dict[str, list[float]] = {"hand": [], "autograd": [], "vmap": []}
    calls = {"hand": handwritten, "autograd": autograd, "vmap": vmapped}
    for fn in calls.values():  # warm-up
        fn()
    for _ in range(pairs):
        for key, fn in calls.items():
            start = time.thread_time()
            fn()
            timings[key].append(time.thread_time() - start)
    ratio = {
        k: statistics.median(a / b for a, b in zip(timings[k], timings["hand"], strict=True))
        for k in ("autograd", "vmap")
    }
    return statistics.median(timings["hand"]), ratio["autograd"], ratio["vmap"]


if __name__ == "__main__":
    main()
