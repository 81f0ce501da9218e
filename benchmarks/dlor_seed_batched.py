"""Cost of training the dlor-sawtooth seed ensembles: ``train_batched`` on the hand-stacked
:class:`~structnets.models.batched_dlor.BatchedDLoRNet` vs the library's ``train_ensemble``
(``stack_module_state`` + ``vmap``) on the S ``dlor_mlp`` networks.

Both train the same S seeded networks of one dlor-sawtooth architecture (N = 8, r = 1, tanh, the
full preset's 256 points of the 1-D sawtooth, full-batch Adam with cosine decay to lr/100); each
seed's weights agree to rounding (``tests/experiments/test_dlor_experiments.py`` and
``tests/training/test_ensemble.py`` check each against separate training). ``train_batched`` also
evaluates the test MSE at epoch 0 and at the end (as the experiment does every 50 epochs); the
ensemble trainer does not. Timed interleaved, median of per-pair ratios
(``structnets.analysis.timing.interleaved_ratio``); a ratio above 1 means the ensemble trainer is
slower. Run ``--help`` for options.
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
from structnets.analysis.timing import interleaved_ratio, other_process_load
from structnets.data import make_sawtooth
from structnets.models import dlor_mlp
from structnets.models.batched_dlor import BatchedDLoRNet
from structnets.training import seeded, train_ensemble
from structnets.training.seed_batched import train_batched

# (mode, depth, branches) of the full dlor-sawtooth preset: the matched deep network and both wide ones
ARCHITECTURES = (("deep", 14, 1), ("parallel", 3, 4), ("summed", 3, 5))


def _members(mode: str, depth: int, branches: int, seeds: int) -> list[nn.Module]:
    models: list[nn.Module] = []
    for seed in range(seeds):
        with seeded(seed):
            models.append(dlor_mlp(1, 1, 8, depth, 1, mode, "tanh", branches))
    return models


def _trainers(
    mode: str, depth: int, branches: int, seeds: int, epochs: int
) -> tuple[Callable[[], None], Callable[[], None]]:
    X_np, y_np = make_sawtooth(256, 1, 2, seed=12345)
    X, y = torch.as_tensor(X_np, dtype=torch.float32), torch.as_tensor(y_np, dtype=torch.float32)

    def ensemble() -> None:
        train_ensemble(
            _members(mode, depth, branches, seeds), X, y, epochs=epochs, batch_size=None, lr=3e-3,
            schedule="cosine", min_lr=3e-5,
        )  # fmt: skip

    def batched() -> None:
        net = BatchedDLoRNet(_members(mode, depth, branches, seeds))  # type: ignore[arg-type]
        train_batched(net, X, y, X, y, epochs=epochs, lr=3e-3, eval_every=epochs)

    return ensemble, batched


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int_at_least(1), default=5, help="networks per ensemble S (default 5)")
    parser.add_argument("--epochs", type=int_at_least(1), default=200, help="Adam steps per training (default 200)")
    parser.add_argument("--pairs", type=int_at_least(1), default=5, help="interleaved pairs per ratio (default 5)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    cpu = platform.processor() or platform.machine()
    print(
        "# dlor-sawtooth ensembles: train_ensemble (vmap over dlor_mlp) / train_batched (BatchedDLoRNet)\n\n"
        f"torch {torch.__version__}, 1 thread, {os.cpu_count()} CPUs ({cpu}), S = {args.seeds}, N = 8, r = 1, "
        f"n = 256, {args.epochs} full-batch epochs; {args.pairs} interleaved pairs per ratio.\n"
    )
    header = ["network", "ensemble s", "batched s", "ensemble / batched (median)", "IQR", "other load"]
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    start = time.perf_counter()
    for mode, depth, branches in ARCHITECTURES:
        ensemble, batched = _trainers(mode, depth, branches, args.seeds, args.epochs)
        load = other_process_load()
        ratio = interleaved_ratio(ensemble, batched, pairs=args.pairs, warmup=1)
        other = load()
        load_text = "n/a" if other is None else f"{other:.0%}"
        print(
            f"| {mode}, depth {depth}, B = {branches} | {ratio.seconds_a:.3f} | {ratio.seconds_b:.3f} | "
            f"**{ratio.median:.2f}** | {ratio.q1:.2f}–{ratio.q3:.2f} | {load_text} |",
            flush=True,
        )
    print(f"\ntotal {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
