"""Levenberg–Marquardt of ``smoothness-rates``' approximation units: the old solver against the current one.

Both minimise the same full-size problem (4 activations × ``--seeds`` seeds, ``--points``
noiseless points of the lacunary target, d = 1 or 2, the unit's width for N parameters, started
after ``--adam`` Adam steps from the unit's initialisation) for ``--iters`` iterations:

* **old**: ``levenberg_marquardt.py`` as of commit 73db794 (read with ``git show``): JᵀJ by
  ``torch.bmm``, μD·I added to a copy, ``torch.cholesky_solve``, every member's residuals and
  Jacobian evaluated at every step;
* **new**: the current module, JᵀJ by BLAS ``syrk`` (``gram``), Jᵀr as rᵀJ, damping in place,
  ``cholesky_step``, only the running/moved members evaluated (``by_members``), the Jacobians
  written into one reused buffer (as ``smoothness-rates`` calls it).

Interleaved pairs (old, new), (new, old), …, one torch and one BLAS thread; the table gives the
median of the per-pair ratios old/new of this process's CPU time (and of the wall time) and the
load average: on a shared machine read the CPU-time column.

    python benchmarks/rates_lm.py [--iters 10] [--pairs 3] [--parameters 640,160] [--points 2048 --seeds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _args import int_at_least, positive_ints  # noqa: E402


def old_module() -> Any:
    """``structnets.training.levenberg_marquardt`` as of commit 73db794, imported under another name."""
    import importlib.util
    import subprocess
    import tempfile

    root = Path(__file__).resolve().parent.parent
    source = subprocess.run(
        ["git", "show", "73db794:src/structnets/training/levenberg_marquardt.py"],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.replace("from .._validation import", "from structnets._validation import")
    path = Path(tempfile.mkdtemp()) / "old_levenberg_marquardt.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("old_levenberg_marquardt", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def warm_start(net: Any, inputs: Any, y: Any, steps: int) -> Any:
    """The parameters after ``steps`` Adam steps (lr 1e-2, cosine), as in a unit's first phase."""
    from structnets.training.lbfgs import adam_phase

    if steps == 0:
        return net.x

    def value_and_grad(x: Any, members: Any) -> Any:
        return net.mse_and_grad(x, inputs, y)

    return adam_phase(None, net.x, steps=steps, lr=1e-2, value_and_grad=value_and_grad)


def pair_times(
    net: Any, inputs: Any, y: Any, x0: Any, iters: int, pairs: int, old_lm: Any
) -> list[tuple[float, float, float, float]]:
    """(old CPU, new CPU, old wall, new wall) seconds of ``pairs`` interleaved pairs."""
    import torch

    import structnets.training.levenberg_marquardt as lm

    def residual(x: torch.Tensor) -> torch.Tensor:
        return net.outputs(x, inputs) - y

    def jacobian(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, J = net.jacobian(x, inputs)
        return out - y, J

    def residual_rows(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        return net.outputs(x, inputs[m], m) - y[m]

    buffer = torch.empty(inputs.shape[0], inputs.shape[1], net.P, dtype=x0.dtype)  # as smoothness-rates does

    def jacobian_rows(x: torch.Tensor, m: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, J = net.jacobian(x, inputs[m], m, out=buffer[: m.numel()])
        return out - y[m], J

    def old() -> None:
        old_lm.batched_levenberg_marquardt(residual, jacobian, x0, max_iter=iters, ftol=1e-9)

    def new() -> None:
        lm.batched_levenberg_marquardt(residual_rows, jacobian_rows, x0, max_iter=iters, ftol=1e-9, by_members=True)

    def timed(fn: Callable[[], None]) -> tuple[float, float]:
        cpu, wall = time.process_time(), time.perf_counter()
        fn()
        return time.process_time() - cpu, time.perf_counter() - wall

    old()
    new()  # warm-up
    rows = []
    for pair in range(pairs):
        if pair % 2 == 0:
            o, n = timed(old), timed(new)
        else:
            n, o = timed(new), timed(old)
        rows.append((o[0], n[0], o[1], n[1]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int_at_least(1), default=10, help="LM iterations per call")
    parser.add_argument("--pairs", type=int_at_least(1), default=3, help="interleaved (old, new) pairs")
    parser.add_argument("--adam", type=int_at_least(0), default=100, help="Adam steps before LM")
    parser.add_argument("--points", type=int_at_least(16), default=2048, help="noiseless training points")
    parser.add_argument("--seeds", type=int_at_least(1), default=3, help="members per activation")
    parser.add_argument("--parameters", type=positive_ints, default=(640, 160), help="parameter counts N")
    parser.add_argument("--depths", type=positive_ints, default=(2, 6), help="weight layers L")
    parser.add_argument("--dims", type=positive_ints, default=(1, 2), help="input dimensions d")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch
    from threadpoolctl import threadpool_limits

    from structnets.data import lacunary_target
    from structnets.experiments.smoothness_rates.config import parameter_count, width_for_parameters
    from structnets.models.ensemble_mlp import EnsembleMLP

    torch.set_num_threads(1)
    old_lm = old_module()
    print(f"load average before: {os.getloadavg()[0]:.2f}; {args.iters} LM iterations per call, {args.pairs} pairs")
    print("| d | L | N (P) | width | old CPU s | new CPU s | CPU ratio old/new (median) | wall ratio (median) | load |")
    print("|---|---|---|---|---|---|---|---|---|")
    with threadpool_limits(limits=1, user_api="blas"):
        for d in args.dims:
            target = lacunary_target(d, 3.0, levels=10, seed=0, directions="dense")
            X, _ = target.sample(args.points, noise=0.0, seed=1000)
            members = [name for name in ("relu", "tanh", "gelu", "silu") for _ in range(args.seeds)]
            inputs = (2 * torch.from_numpy(X) - 1).expand(len(members), -1, -1).contiguous()
            y = target(torch.from_numpy(X)).expand(len(members), -1).contiguous()
            for depth in args.depths:
                for N in args.parameters:
                    width = width_for_parameters(N, d, depth)
                    generator = torch.Generator().manual_seed(7)
                    net = EnsembleMLP(members, d, width, depth, generator=generator, input_scale=10.0)
                    x0 = warm_start(net, inputs, y, args.adam)
                    rows = pair_times(net, inputs, y, x0, args.iters, args.pairs, old_lm)
                    cpu_ratio = statistics.median(o / n for o, n, _, _ in rows)
                    wall_ratio = statistics.median(o / n for _, _, o, n in rows)
                    old_cpu = statistics.median(r[0] for r in rows)
                    new_cpu = statistics.median(r[1] for r in rows)
                    print(
                        f"| {d} | {depth} | {N} ({parameter_count(d, width, depth)}) | {width} | {old_cpu:.2f} | "
                        f"{new_cpu:.2f} | **{cpu_ratio:.2f}** | {wall_ratio:.2f} | {os.getloadavg()[0]:.2f} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
