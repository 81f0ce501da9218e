"""Cost of checking the certified-bound cache by content, against recomputing the bound.

A constrained layer caches its certified bound B ≥ ‖W‖₂ with a copy of the weight it was computed
for, and reuses it only when ``torch.equal`` says the weight is unchanged (version counters miss
fused-optimizer and ``.data`` updates). This script measures, interleaved, median of per-pair
ratios on one thread:

* per matrix: the content check (``torch.equal`` against the stored copy) / one certified bound
  (float64 Gram eigen-solve, ``squared_norm_bound``);
* per model: an eval-mode forward of ``lipschitz_resnet(784, 10, width, depth)`` on a batch of 256
  with the cache / the same forward recomputing every bound (as under ``torch.compile``).

Run ``--help`` for options; ``make bench`` runs the default set.
"""

from __future__ import annotations

import argparse
import platform
import sys

import torch

from _args import int_at_least, positive_ints
from structnets.analysis.timing import interleaved_ratio
from structnets.functional import squared_norm_bound
from structnets.models import lipschitz_resnet
from structnets.nn import GradientStepResidual, NormConstrainedLinear

WIDTHS = (100, 256, 512)


def _recomputing(model: torch.nn.Module) -> None:
    """Make every constrained layer of ``model`` skip its cache (what a compiled graph does)."""
    for layer in model.modules():
        if isinstance(layer, (GradientStepResidual, NormConstrainedLinear)):
            bound = layer._bound

            def fresh(weight: torch.Tensor, _bound=bound) -> torch.Tensor:  # type: ignore[no-untyped-def]
                from structnets.functional import certificate_method

                with torch.no_grad():
                    return squared_norm_bound(weight.detach(), certificate_method(_bound.mode))

            bound.certified_squared = fresh  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int_at_least(3), default=30, help="timed pairs per row (default 30)")
    parser.add_argument("--depth", type=int_at_least(1), default=10, help="gradient-step blocks per model (default 10)")
    parser.add_argument(
        "--widths", type=positive_ints, default=WIDTHS, help="comma-separated n / widths (default 100,256,512)"
    )
    parser.add_argument("--threads", type=int_at_least(1), default=1, help="torch threads (default 1)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(
        f"# certificate cache, {args.threads} thread(s), {platform.processor() or platform.machine()}, torch {torch.__version__}"
    )
    print("| n | check (µs) | eigen-solve (µs) | check / solve, median [q1, q3] |")
    print("| --- | --- | --- | --- |")
    for n in args.widths:
        weight = torch.randn(n, n)
        stored = weight.clone()
        ratio = interleaved_ratio(
            lambda stored=stored, weight=weight: torch.equal(stored, weight),
            lambda weight=weight: squared_norm_bound(weight),
            pairs=args.pairs,
            repeat=None,
        )
        print(
            f"| {n} | {ratio.seconds_a * 1e6:.1f} | {ratio.seconds_b * 1e6:.0f} | "
            f"{ratio.median:.2e} [{ratio.q1:.2e}, {ratio.q3:.2e}] |"
        )
    print()
    print(
        f"| model (depth {args.depth}) | cached forward (ms) | recomputing forward (ms) | cached / recomputing, median [q1, q3] |"
    )
    print("| --- | --- | --- | --- |")
    x = torch.randn(256, 784)
    for width in args.widths:
        cached = lipschitz_resnet(784, 10, width=width, depth=args.depth).eval()
        fresh = lipschitz_resnet(784, 10, width=width, depth=args.depth).eval()
        fresh.load_state_dict(cached.state_dict())
        _recomputing(fresh)
        with torch.no_grad():
            ratio = interleaved_ratio(lambda cached=cached: cached(x), lambda fresh=fresh: fresh(x), pairs=args.pairs)
        print(
            f"| width {width} | {ratio.seconds_a * 1e3:.2f} | {ratio.seconds_b * 1e3:.2f} | "
            f"{ratio.median:.3f} [{ratio.q1:.3f}, {ratio.q3:.3f}] |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
