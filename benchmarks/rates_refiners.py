"""Noiseless fits of ``smoothness-rates``: L-BFGS against Levenberg–Marquardt at similar wall time.

Why the approximation part of ``smoothness-rates`` refines with Levenberg–Marquardt: from the
same Adam start (one call, shared), per-member L-BFGS with ``--lbfgs`` evaluations and per-member
LM with ``--lm`` iterations are run one after the other on the same problem (lacunary target,
d = 1, 2,048 noiseless points, one hidden layer), and the table gives each one's wall time and
test RMSE per activation. The defaults give the two about the same time on one core.

    python benchmarks/rates_refiners.py [--parameters 160] [--lbfgs 3000] [--lm 1000] [--threads 1]
"""

from __future__ import annotations

import argparse
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
    from structnets.experiments._rates_training import EnsembleMLP, adam_phase, batched_lbfgs
    from structnets.experiments.smoothness_rates import width_for_parameters
    from structnets.training.levenberg_marquardt import batched_levenberg_marquardt

    torch.set_num_threads(args.threads)
    activations = ["relu", "tanh", "gelu", "silu"]
    target = lacunary_target(1, args.smoothness, levels=10)
    X, y = target.sample(args.points, noise=0.0, seed=1000)
    X_test = torch.from_numpy(np.random.default_rng(999).random((4096, 1)))
    f_test = target(X_test)
    print(f"| N | width | activation | L-BFGS ({args.lbfgs}) s | L-BFGS test RMSE | LM ({args.lm}) s | LM test RMSE | MSE ratio LM / L-BFGS |")
    print("|---|---|---|---|---|---|---|---|")
    for N in sizes:
        width = width_for_parameters(N, 1, 2)
        net = EnsembleMLP(activations, 1, width, 2, generator=torch.Generator().manual_seed(5), input_scale=10.0)
        inputs = (2 * torch.from_numpy(np.stack([X] * len(activations))) - 1)[net.order]
        targets = torch.from_numpy(np.stack([y] * len(activations)))[net.order]
        test_inputs = (2 * X_test - 1).expand(len(activations), -1, -1)

        def residuals(x: torch.Tensor) -> torch.Tensor:
            return net.forward(x, inputs) - targets

        def jacobian(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            out, J = net.jacobian(x, inputs)
            return out - targets, J

        def test_rmse(x: torch.Tensor) -> np.ndarray:
            with torch.no_grad():
                return ((net.forward(x, test_inputs) - f_test) ** 2).mean(1).sqrt()[net.inverse].numpy()

        start = adam_phase(lambda x: (residuals(x) ** 2).mean(1), net.x, steps=args.adam, lr=1e-2)
        t0 = time.perf_counter()
        x_lbfgs, _ = batched_lbfgs(lambda x: (residuals(x) ** 2).mean(1), start, max_iter=args.lbfgs)
        t_lbfgs = time.perf_counter() - t0
        t0 = time.perf_counter()
        x_lm, _ = batched_levenberg_marquardt(residuals, jacobian, start, max_iter=args.lm)
        t_lm = time.perf_counter() - t0
        for name, a, b in zip(activations, test_rmse(x_lbfgs), test_rmse(x_lm)):
            print(f"| {N} | {width} | {name} | {t_lbfgs:.1f} | {a:.2e} | {t_lm:.1f} | {b:.2e} | {(b / a) ** 2:.3f} |")


if __name__ == "__main__":
    main()
