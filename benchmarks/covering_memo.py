"""The bound calls of one ``rank-bounds`` unit with the per-layer covering memo, against without it.

A ``rank-bounds`` unit computes seven bounds of one network, three of them ``rank_sparse_bounds``
(Maurey tail with the optimal and the equal allocation, truncated tail with the optimal one). Those
ask for the same per-layer coverings at the same radii again; ``analysis.covering`` remembers them
by exact arguments. This script times the unit's seven calls on a network of the unit's shape
(784 → width × (depth − 1) → 10, float32 weights as trained) with the memo emptied before every call
(what each call cost before the memo) against emptied once per unit, interleaved, median of per-pair
wall-time ratios on one thread, and checks both give the same numbers.

Run ``--help`` for options.
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import sys

import torch

from _args import int_at_least, positive_ints
from structnets.analysis import (
    covering,
    layer_spectra,
    pac_bayes_bound,
    parameter_count_bound,
    rank_sparse_bounds,
    spectral_bound,
)
from structnets.analysis.timing import interleaved_ratio

PS = [0.0, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0]  # the full preset's grid


def _matrices(width: int, depth: int, seed: int) -> list[torch.Tensor]:
    """Weights of a ReLU MLP of the unit's shape, with a decaying spectrum like a trained one."""
    generator = torch.Generator().manual_seed(seed)
    sizes = [784] + [width] * (depth - 1) + [10]
    matrices = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
        U, _ = torch.linalg.qr(torch.randn(fan_out, fan_out, generator=generator, dtype=torch.float64))
        V, _ = torch.linalg.qr(torch.randn(fan_in, fan_in, generator=generator, dtype=torch.float64))
        k = min(fan_in, fan_out)
        sigma = 2.0 * torch.arange(1, k + 1, dtype=torch.float64) ** -0.8
        matrices.append(((U[:, :k] * sigma) @ V[:, :k].T).float())
    return matrices


def _unit_bounds(matrices: list[torch.Tensor], fresh_each_call: bool) -> list:
    """The seven bound calls of ``experiments/rank_bounds/units.py`` on ``matrices``."""
    common = {
        "spectra": layer_spectra(matrices),
        "n": 20_000,
        "margin": 1.0,
        "input_norm": 30.0,
        "empirical_risk": 0.05,
        "delta": 0.05,
        "sample_target": 0.1,
    }
    data_norm = 3_000.0
    calls = [
        lambda: [parameter_count_bound(matrices, data_norm=data_norm, **common)],
        lambda: [spectral_bound(matrices, data_norm=data_norm, **common)],
        lambda: [pac_bayes_bound(matrices, **common)],
        lambda: list(rank_sparse_bounds(matrices, ps=PS, data_norm=data_norm, **common)),
        lambda: [parameter_count_bound(matrices, data_norm=data_norm, allocation="equal", **common)],
        lambda: list(rank_sparse_bounds(matrices, ps=PS, data_norm=data_norm, allocation="equal", **common)),
        lambda: list(rank_sparse_bounds(matrices, ps=PS, data_norm=data_norm, tail_covering="truncate", **common)),
    ]
    covering._ROUTES_MEMO.clear()
    results = []
    for call in calls:
        if fresh_each_call:
            covering._ROUTES_MEMO.clear()
        results += call()
    covering._ROUTES_MEMO.clear()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", type=positive_ints, default=(256, 1024))
    parser.add_argument("--depths", type=positive_ints, default=(4, 8))
    parser.add_argument("--pairs", type=int_at_least(1), default=3)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, {platform.machine()}, 1 thread; ratio = with memo / memo emptied every call")
    print("| width | depth | without memo s | with memo s | ratio (median) | IQR | same numbers |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for depth in args.depths:
        for width in args.widths:
            matrices = _matrices(width, depth, seed=0)
            old = _unit_bounds(matrices, fresh_each_call=True)
            new = _unit_bounds(matrices, fresh_each_call=False)
            same = [dataclasses.asdict(b) for b in old] == [dataclasses.asdict(b) for b in new]
            ratio = interleaved_ratio(
                lambda m=matrices: _unit_bounds(m, fresh_each_call=False),
                lambda m=matrices: _unit_bounds(m, fresh_each_call=True),
                pairs=args.pairs,
                warmup=0,
            )
            print(
                f"| {width} | {depth} | {ratio.seconds_b:.2f} | {ratio.seconds_a:.2f} | **{ratio.median:.3f}** | "
                f"{ratio.q1:.3f}–{ratio.q3:.3f} | {'yes' if same else '**no**'} |",
                flush=True,
            )
            if not same:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
