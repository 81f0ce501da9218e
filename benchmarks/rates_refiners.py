"""Noiseless fits of ``smoothness-rates``: L-BFGS against Levenberg–Marquardt at similar wall time.

Why the approximation part of ``smoothness-rates`` refines with Levenberg–Marquardt: two
``train_ensemble`` calls on the same problem (lacunary target, d = 1, 2,048 noiseless points, one
hidden layer) with the same seed, hence the same Adam start, one refined by per-member L-BFGS
with ``--lbfgs`` evaluations, the other by per-member LM with ``--lm`` iterations; the table gives
each call's wall time (Adam included) and test RMSE per activation. The defaults give the two
about the same time on one core.

    python benchmarks/rates_refiners.py [--parameters 160] [--lbfgs 3000] [--lm 1000] [--threads 1]
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
    args = parser.parse_args()
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
    from structnets.experiments.smoothness_rates import train_ensemble, width_for_parameters

    torch.set_num_threads(args.threads)
    activations = ["relu", "tanh", "gelu", "silu"]
    target = lacunary_target(1, args.smoothness, levels=10)
    X, y = target.sample(args.points, noise=0.0, seed=1000)
    X_test = torch.from_numpy(np.random.default_rng(999).random((4096, 1)))
    f_test = target(X_test)
    X = torch.from_numpy(np.stack([X] * len(activations)))
    y = torch.from_numpy(np.stack([y] * len(activations)))
    print(f"| N | width | activation | Adam + L-BFGS ({args.lbfgs}) s | L-BFGS test RMSE | Adam + LM ({args.lm}) s | LM test RMSE | MSE ratio LM / L-BFGS |")
    print("|---|---|---|---|---|---|---|---|")
    # Warm-up: the first call pays for lazy imports and allocator growth, not for its refiner.
    train_ensemble(X[:, :16], y[:, :16], X_test[:16], f_test[:16], activations, 2, 2, steps=1, lr=1e-2, seed=0,
                   lbfgs_iters=1, lm_iters=1)
    for N in sizes:
        width = width_for_parameters(N, 1, 2)
        fits, seconds = [], []
        # Same seed, so both refiners start from the same Adam iterate (tested in tests/smooth).
        for refiner in ({"lbfgs_iters": args.lbfgs}, {"lm_iters": args.lm}):
            start = time.perf_counter()
            fits.append(train_ensemble(X, y, X_test, f_test, activations, width, 2, steps=args.adam, lr=1e-2,
                                       seed=5, input_scale=10.0, **refiner))
            seconds.append(time.perf_counter() - start)
        lbfgs, lm = fits
        for i, name in enumerate(activations):
            a, b = math.sqrt(lbfgs.test_mse[i]), math.sqrt(lm.test_mse[i])
            print(f"| {N} | {width} | {name} | {seconds[0]:.1f} | {a:.2e} | {seconds[1]:.1f} | {b:.2e} | {(b / a) ** 2:.3f} |")


if __name__ == "__main__":
    main()
