"""Cost of the certified convolutional block: one training step against an unconstrained residual conv block.

Issue 26 sets the goal: a training step of a certified conv block ≤ 1.5× an unconstrained residual
conv block of the same shape. Both blocks map (256, c, n, n) → (256, c, n, n) with a 3×3 kernel and
c hidden channels, zero padding:

* ``certified``: :class:`structnets.nn.GradientStepConv2d` x − τWᵀReLU(Wx + b), τ = s/Q with the
  certified Q ≥ ‖W‖_op² recomputed (differentiably) at every step — ``sized``: for the one input size
  (the (n + 2)-torus, what ``lipschitz_convnet`` uses), ``every-size``: the sampled-torus bound;
* ``unconstrained``: x + U⋆ReLU(W⋆x + b) with two free ``nn.Conv2d`` (the same flops in the convolutions).

A step is forward, backward and an Adam update; steps are timed interleaved (A, B, B, A, …) and the
median of per-pair ratios is reported with its quartiles. A second column times the certificate
alone (Q and its gradient), which is where the extra time goes. Run ``--help`` for options.
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
from structnets.analysis.timing import interleaved_ratio
from structnets.conv_norms import conv_squared_norm_bound
from structnets.nn import GradientStepConv2d

SHAPES = ((32, 14), (64, 7))
GOAL = 1.5


class UnconstrainedConvResidual(nn.Module):
    """x + U⋆ReLU(W⋆x + b): the unconstrained baseline of the same shape."""

    def __init__(self, channels: int, hidden: int) -> None:
        super().__init__()
        self.inner = nn.Conv2d(channels, hidden, 3, padding=1)
        self.outer = nn.Conv2d(hidden, channels, 3, padding=1, bias=False)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return input + self.outer(torch.relu(self.inner(input)))


def stepper(model: nn.Module, x: torch.Tensor) -> Callable[[], None]:
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    model.train()

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        optimizer.step()

    return step


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int_at_least(1), default=15, help="interleaved pairs per row (default 15)")
    parser.add_argument("--batch", type=int_at_least(1), default=256, help="batch size (default 256)")
    parser.add_argument("--threads", type=int_at_least(1), default=1, help="torch threads (default 1)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(
        f"# certified conv block step / unconstrained conv residual step (batch {args.batch}, 3×3, "
        f"{args.threads} thread(s), {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__})"
    )
    print()
    print("| channels | size | mode | step ratio, median [q1, q3] | certified step (ms) | unconstrained step (ms) | certificate + gradient alone (ms) | goal |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for channels, n in SHAPES:
        x = torch.randn(args.batch, channels, n, n)
        baseline = stepper(UnconstrainedConvResidual(channels, channels), x)
        for mode, size in (("sized", n), ("every-size", None)):
            layer = GradientStepConv2d(channels, channels, 3, input_size=size)
            ratio = interleaved_ratio(stepper(layer, x), baseline, pairs=args.pairs, warmup=2)
            weight = layer.weight.detach().clone().requires_grad_(True)
            start = time.perf_counter()
            for _ in range(5):
                conv_squared_norm_bound(weight, "zeros", size).backward()
            alone = (time.perf_counter() - start) / 5
            verdict = "met" if ratio.median <= GOAL else "missed"
            print(
                f"| {channels} | {n}×{n} | {mode} | {ratio.median:.2f}× [{ratio.q1:.2f}, {ratio.q3:.2f}] | "
                f"{1e3 * ratio.seconds_a:.1f} | {1e3 * ratio.seconds_b:.1f} | {1e3 * alone:.1f} | ≤ {GOAL}× ({verdict}) |"
            )
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
