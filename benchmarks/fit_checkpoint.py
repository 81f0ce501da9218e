"""Cost of ``fit(..., checkpoint=path)``: training epochs with a checkpoint saved after each, against none.

``lipschitz-mnist-conv`` and ``lipschitz-mnist`` units train through ``fit`` with the file the runner
gives them (``structnets.runner.checkpoints``), so a killed run resumes at its last epoch. This
script times, interleaved, median of per-pair ratios: ``fit`` for ``--epochs`` epochs of the full
preset's ``lipschitz_convnet`` (529,455 parameters) on ``--rows`` MNIST-shaped random rows, with a
fresh checkpoint file each call, against the same ``fit`` without one. The ratio includes the
per-call costs (hashing the data, checking that the state can be saved and read back) and one
atomic, checksummed save per epoch; it also prints the file size and the time of one save alone.

Run ``--help`` for options; ``make bench`` runs the default.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch

from _args import int_at_least
from structnets.analysis.timing import interleaved_ratio
from structnets.experiments.lipschitz_mnist_conv import LipschitzMNISTConvConfig
from structnets.experiments.lipschitz_mnist_conv.units import build, units
from structnets.training import checkpoint as ckpt
from structnets.training import fit, seeded
from structnets.training.losses import certified_loss


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int_at_least(256), default=2048, help="training rows (default 2048)")
    parser.add_argument("--epochs", type=int_at_least(1), default=2, help="epochs per fit call (default 2)")
    parser.add_argument("--pairs", type=int_at_least(1), default=5, help="interleaved pairs (default 5)")
    parser.add_argument("--threads", type=int_at_least(1), default=1, help="torch threads (default 1)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    params = units(LipschitzMNISTConvConfig(), pd.DataFrame())[0].params
    generator = torch.Generator().manual_seed(0)
    X = torch.rand(args.rows, 784, generator=generator)
    y = torch.randint(10, (args.rows,), generator=generator)
    loss = certified_loss("margin-ce", margin=float(params["margin"]), temperature=float(params["temperature"]))
    folder = Path(tempfile.mkdtemp(prefix="fit-checkpoint-"))
    calls = [0]

    def train(checkpoint: bool) -> None:
        with seeded(0):
            model = build(params).to(memory_format=torch.channels_last)
        path = None
        if checkpoint:
            calls[0] += 1
            path = folder / f"{calls[0]}.ckpt"  # a fresh file: the call trains, it does not resume
        fit(model, X, y, loss=loss, epochs=args.epochs, batch_size=256, lr=5e-3, schedule="cosine", checkpoint=path)
        if path is not None:
            path.unlink()

    ratio = interleaved_ratio(lambda: train(True), lambda: train(False), pairs=args.pairs, warmup=1)
    with seeded(0):
        model = build(params)
    optimizer = torch.optim.Adam(model.parameters())
    for parameter in model.parameters():
        parameter.grad = torch.zeros_like(parameter)
    optimizer.step()  # the moments exist from the first step on
    state = {**{k: None for k in ckpt.KEYS}, "fingerprint": {}, "model": model.state_dict()}
    state["optimizer"] = optimizer.state_dict()
    saves = []
    for _ in range(5):
        start = time.perf_counter()
        ckpt.save(folder / "one.ckpt", state)
        saves.append(time.perf_counter() - start)
    size = (folder / "one.ckpt").stat().st_size
    print(f"torch {torch.__version__}, {args.threads} thread(s), {platform.processor() or platform.machine()}")
    print(
        f"fit {args.epochs} epochs x {args.rows} rows, with / without a checkpoint: "
        f"{ratio.median:.3f}x [{ratio.q1:.3f}, {ratio.q3:.3f}] ({1e3 * ratio.seconds_b:.0f} ms without)"
    )
    print(f"one save (weights and Adam's moments): {1e3 * min(saves):.1f} ms, {size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
