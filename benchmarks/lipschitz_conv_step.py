"""Cost of the certified convolutional block: one training step against an unconstrained residual conv block.

Issue 26 sets the goal: a training step of a certified conv block ≤ 1.5× an unconstrained residual
conv block of the same shape. Both blocks map (256, c, n, n) → (256, c, n, n) with a 3×3 kernel and
c hidden channels, zero padding:

* ``certified``: :class:`structnets.nn.GradientStepConv2d` x − τWᵀReLU(Wx + b), τ = s/Q with a
  certified Q ≥ ‖W‖_op² at every step — ``sized``: for the one input size (the (n + 2)-torus, what
  ``lipschitz_convnet`` uses), ``every-size``: the sampled-torus bound; ``bound="exact"``: the
  batched eigensolve at every step, ``bound="verified"``: warm per-frequency power vectors and one
  batched Cholesky test (:func:`structnets.nn._conv_verified.training_conv_square`);
* ``unconstrained``: x + U⋆ReLU(W⋆x + b) with two free ``nn.Conv2d`` (the same flops in the convolutions).

A step is forward, backward and an Adam update; steps are timed interleaved (A, B, B, A, …) and the
median of per-pair ratios is reported with its quartiles. A second column times the certificate
alone (Q and its gradient), which is where the extra time goes. With ``--train-steps N`` a second
table trains ``lipschitz_convnet`` (the ``lipschitz-mnist-conv`` layout) with ``bound="verified"``
for N Adam steps on random MNIST-shaped data and counts the steps that fell back to the exact bound.
Run ``--help`` for options.
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
from torch.nn import functional as F

from _args import int_at_least
from structnets.analysis.timing import interleaved_ratio
from structnets.conv_norms import conv_squared_norm_bound
from structnets.models import lipschitz_convnet
from structnets.nn import GradientStepConv2d, NormConstrainedConv2d
from structnets.nn._conv_verified import training_conv_square

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


def certificate_alone(weight: torch.Tensor, size: int | None, bound: str, repeat: int = 5) -> float:
    """Seconds per call of Q and its gradient alone (warm vectors for ``"verified"``)."""
    vectors = training_conv_square(weight.detach(), None, 0.01, "zeros", size)[1]
    start = time.perf_counter()
    for _ in range(repeat):
        if bound == "exact":
            conv_squared_norm_bound(weight, "zeros", size).backward()
        else:
            square, vectors, _ = training_conv_square(weight, vectors, 0.01, "zeros", size)
            square.backward()
    return (time.perf_counter() - start) / repeat


def step_table(args: argparse.Namespace) -> None:
    print("| channels | size | certificate | bound | step ratio, median [q1, q3] | certified step (ms) | unconstrained step (ms) | certificate + gradient alone (ms) | fallbacks | goal |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for channels, n in SHAPES:
        x = torch.randn(args.batch, channels, n, n)
        baseline = stepper(UnconstrainedConvResidual(channels, channels), x)
        rows: list[tuple[str, int | None, str]] = [("sized", n, "exact"), ("sized", n, "verified")]
        if args.every_size:
            rows += [("every-size", None, "exact"), ("every-size", None, "verified")]
        for mode, size, bound in rows:
            layer = GradientStepConv2d(channels, channels, 3, input_size=size, bound=bound)
            ratio = interleaved_ratio(stepper(layer, x), baseline, pairs=args.pairs, warmup=2)
            weight = layer.weight.detach().clone().requires_grad_(True)
            alone = certificate_alone(weight, size, bound)
            fallbacks = (
                f"{layer._bound.exact_fallbacks} of {layer._bound.exact_fallbacks + layer._bound.verified_steps}"
            )
            verdict = "met" if ratio.median <= GOAL else "missed"
            print(
                f"| {channels} | {n}×{n} | {mode} | {bound} | {ratio.median:.2f}× [{ratio.q1:.2f}, {ratio.q3:.2f}] | "
                f"{1e3 * ratio.seconds_a:.1f} | {1e3 * ratio.seconds_b:.1f} | {1e3 * alone:.1f} | "
                f"{fallbacks if bound == 'verified' else '—'} | ≤ {GOAL}× ({verdict}) |"
            )
            sys.stdout.flush()


def convnet(bound: str, head_bound: str | None = None) -> nn.Sequential:
    """The ``lipschitz-mnist-conv`` layout (its config's defaults; ``head_bound`` None: ``bound``)."""
    torch.manual_seed(0)
    return lipschitz_convnet(1, 10, 28, channels=(16, 32, 64), depths=(0, 1, 2), head_width=128, head_depth=2,
                             bound=bound, head_bound=head_bound)  # fmt: skip


def model_stepper(model: nn.Module, x: torch.Tensor, y: torch.Tensor, lr: float) -> Callable[[], None]:
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        optimizer.step()

    return step


def training_table(args: argparse.Namespace) -> None:
    """Fallbacks of ``bound="verified"`` in a short training of the lipschitz-mnist-conv layout, and its step cost."""
    x = torch.rand(args.train_batch, 1, 28, 28)
    y = torch.randint(0, 10, (args.train_batch,))
    model = convnet("verified")
    step = model_stepper(model, x, y, args.lr)
    start = time.perf_counter()
    for _ in range(args.train_steps):
        step()
    seconds = time.perf_counter() - start
    print()
    print(
        f'# bound="verified" in {args.train_steps} Adam steps (lr {args.lr}, batch {args.train_batch}, random '
        f"MNIST-shaped data) of lipschitz_convnet(1, 10, 28): {seconds:.1f} s"
    )
    print()
    print("| layer | verified steps | exact fallbacks | cold starts | fallback fraction | final margin |")
    print("|---|---|---|---|---|---|")
    for index, layer in enumerate(model):
        if isinstance(layer, (GradientStepConv2d, NormConstrainedConv2d)):
            bound = layer._bound
            steps = bound.verified_steps + bound.exact_fallbacks
            fraction = bound.exact_fallbacks / steps if steps else float("nan")
            print(
                f"| {index}: {type(layer).__name__} | {bound.verified_steps} | {bound.exact_fallbacks} | "
                f"{bound.cold_starts} | {fraction:.1%} | {bound.verified_margin:.4f} |"
            )
    print()
    for bound, head_bound, layout, what in (
        ("verified", "exact", torch.contiguous_format, "verified convolutions, exact dense head"),
        ("verified", "verified", torch.contiguous_format, "verified everywhere"),
        ("verified", "exact", torch.channels_last,
         "verified convolutions, exact dense head, channels-last (what lipschitz-mnist-conv trains)"),
    ):  # fmt: skip
        ratio = interleaved_ratio(
            model_stepper(convnet(bound, head_bound).to(memory_format=layout), x, y, args.lr),
            model_stepper(convnet("exact"), x, y, args.lr),
            pairs=args.pairs, warmup=2,
        )  # fmt: skip
        print(
            f"Whole-model training step (batch {args.train_batch}), {what} / bound='exact': "
            f"{ratio.median:.2f}× [{ratio.q1:.2f}, {ratio.q3:.2f}] ({1e3 * ratio.seconds_a:.0f} ms vs "
            f"{1e3 * ratio.seconds_b:.0f} ms)"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int_at_least(1), default=15, help="interleaved pairs per row (default 15)")
    parser.add_argument("--batch", type=int_at_least(1), default=256, help="batch size (default 256)")
    parser.add_argument("--threads", type=int_at_least(1), default=1, help="torch threads (default 1)")
    parser.add_argument("--no-every-size", dest="every_size", action="store_false",
                        help="skip the (slow) every-size rows")  # fmt: skip
    parser.add_argument("--train-steps", type=int_at_least(0), default=0,
                        help="also train lipschitz_convnet this many steps with bound='verified' (default 0: skip)")  # fmt: skip
    parser.add_argument("--train-batch", type=int_at_least(1), default=128, help="batch of that training (default 128)")
    parser.add_argument("--lr", type=float, default=5e-3, help="Adam learning rate of that training (default 5e-3)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(
        f"# certified conv block step / unconstrained conv residual step (batch {args.batch}, 3×3, "
        f"{args.threads} thread(s), {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__})"
    )
    print()
    step_table(args)
    if args.train_steps:
        training_table(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
