"""What floating-point evaluation adds to the exact-arithmetic certificate of a 1-Lipschitz ResNet.

The certificate (``lipschitz_upper_bound`` ≤ 1) is a statement about exact arithmetic on the
stored parameters: the stored W, b, τ of every gradient-step block and the stored V, b and scale
of every norm-constrained map. A forward pass in a floating dtype rounds every product and sum.
This script measures, for random models ``lipschitz_resnet(784, 10, width, depth)`` stored in each
dtype (weights scaled ×50 so that every map works at full strength, ‖A‖₂ = 1, as after training), the largest deviation ‖f_fl(x) − f(x)‖₂ of the dtype's forward from the exact-arithmetic
model, where f(x) is evaluated in float64 *on the stored values* (τ and the scales read back from
the dtype layers, so both sides describe the same parameters), over inputs of norm ‖x‖ ≈ 10
(MNIST images have ‖x‖ ≈ 9.3). It prints the deviation divided by (depth + 2)·u·(‖x‖ + 1),
u = the dtype's unit round-off: a constant of order one means the error grows like depth × u.

Consequence for certified accuracy: a logit margin computed in floating point differs from the
exact one by at most √2·e (e = the deviation), so a prediction certified at radius ε from
float logits is certified for the floating model when the margin also exceeds 2√2·e.

Run ``--help`` for options; ``make bench`` runs the default set.
"""

from __future__ import annotations

import argparse
import sys

import torch

from _args import int_at_least, positive_ints
from structnets.models import lipschitz_resnet
from structnets.nn import GradientStepResidual, NormConstrainedLinear

F64 = torch.float64


@torch.no_grad()
def exact_forward(model: torch.nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    """The model's exact-arithmetic map on its stored values, evaluated in float64."""
    h = x.to(F64)
    for layer in model:
        if isinstance(layer, GradientStepResidual):
            w = layer.weight.to(F64)
            tau = layer.tau().to(F64)
            b = layer.bias.to(F64) if layer.bias is not None else None
            h = h - tau * torch.relu(torch.nn.functional.linear(h, w, b)) @ w
        elif isinstance(layer, NormConstrainedLinear):
            scale = layer._scale().to(F64)
            b = layer.bias.to(F64) if layer.bias is not None else None
            h = torch.nn.functional.linear(h, layer.raw_weight.to(F64) / scale, b)
        else:
            raise TypeError(f"unexpected layer {type(layer).__name__}")
    return h


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int_at_least(1), default=100, help="width (default 100)")
    parser.add_argument("--points", type=int_at_least(1), default=256, help="inputs per model (default 256)")
    parser.add_argument(
        "--depths", type=positive_ints, default=(5, 20, 50), help="comma-separated depths (default 5,20,50)"
    )
    parser.add_argument("--threads", type=int_at_least(1), default=1, help="torch threads (default 1)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(
        f"# forward rounding, lipschitz_resnet(784, 10, width={args.width}, depth), {args.points} inputs with ‖x‖ ≈ 10"
    )
    print("| dtype | depth | max ‖f(x)‖ | max ‖f_fl(x) − f(x)‖ | / ((depth + 2)·u·(‖x‖ + 1)) |")
    print("| --- | --- | --- | --- | --- |")
    generator = torch.Generator().manual_seed(0)
    x64 = torch.randn(args.points, 784, generator=generator, dtype=F64)
    x64 = 10.0 * x64 / torch.linalg.vector_norm(x64, dim=1, keepdim=True)
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        unit = torch.finfo(dtype).eps / 2
        for depth in args.depths:
            torch.manual_seed(depth)
            model = lipschitz_resnet(784, 10, width=args.width, depth=depth, dtype=dtype).eval()
            with torch.no_grad():  # maps at full strength: ‖A‖₂ = 1 and τ‖W‖₂² ≈ s, as after training
                for parameter in model.parameters():
                    if parameter.dim() == 2:
                        parameter.mul_(50.0)
            x = x64.to(dtype)
            with torch.no_grad():
                exact = exact_forward(model, x)
                error = torch.linalg.vector_norm(model(x).to(F64) - exact, dim=1)
            scale = (depth + 2) * unit * (torch.linalg.vector_norm(x.to(F64), dim=1) + 1.0)
            size = float(torch.linalg.vector_norm(exact, dim=1).max())
            print(
                f"| {str(dtype).removeprefix('torch.')} | {depth} | {size:.2f} | {float(error.max()):.2e} | {float((error / scale).max()):.3f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
