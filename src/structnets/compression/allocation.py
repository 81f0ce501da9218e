"""Rank allocation: one rule per layer (``rank``, ``ratio``, ``energy``) or a model-wide budget.

Costs. A low-rank layer m × n of rank r costs r·(m + n) weight entries against m·n dense; per row
it costs 2·r·(m + n) FLOPs against 2·m·n (a multiply-add is 2 FLOPs), plus m for a bias either way
(the conventions of :func:`structnets.analysis.cost`). A layer applied to R rows per pass (tokens,
output positions of a convolution) costs R times its per-row FLOPs.

Budget (``flops=f`` or ``params=f``): find ranks r_i (or dense) with Σ_i cost_i(r_i) ≤ f·Σ_i
cost_i(dense) that lose the least. The loss of layer i at rank r is its relative squared error
e_i(r) = Σ_{j>r} σ_{ij}² / Σ_j σ_{ij}², with σ the singular values of W (plain) or of W S
(whitened, with calibration: then e_i(r) = ‖(W − Ŵ)X‖²/‖WX‖² up to the ridge). Greedy: start at
rank 1 everywhere; repeatedly take the move with the largest loss decrease per unit of cost —
rank r → r + 1 (decrease σ²_{r+1}/Σσ², cost (m + n) per row), or, at the largest rank that still
saves, to dense (the whole rest of the error, the rest of the cost) — while it fits in the budget;
a layer whose next move does not fit makes no further move, the others go on filling. Because
σ_j² decreases in j, each layer's rank steps come in order of non-increasing decrease per cost,
so the greedy takes them in order (a marginal-gain allocation; not a proof of optimality). A
layer whose rank 1 already costs as much as its dense form (r·(m + n) ≥ m·n) stays dense.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import torch

from ..nn.dlor_linear import dlor_approximation


@dataclass(frozen=True)
class Option:
    """One layer as the allocation sees it.

    Attributes:
        out_features, in_features: m, n.
        bias: whether the layer adds a bias (a fixed cost).
        rows: rows per pass (1 for a count per row, or for ``params``).
        energy: σ_j² / Σ σ² (non-increasing), the share of the error each rank removes.
        largest: the largest rank allowed (min(m, n) for a low-rank layer).
    """

    out_features: int
    in_features: int
    bias: bool
    rows: int
    energy: torch.Tensor
    largest: int


def saving_rank(m: int, n: int) -> int:
    """The largest r with r·(m + n) < m·n (0 if none): above it the dense layer is cheaper."""
    return min((m * n - 1) // (m + n), min(m, n))


def params_of(m: int, n: int, rank: int | None, bias: bool) -> int:
    """Parameters of a dense (``rank`` None) or rank-r low-rank layer, bias included."""
    weight = m * n if rank is None else rank * (m + n)
    return weight + (m if bias else 0)


def flops_of(m: int, n: int, rank: int | None, bias: bool) -> int:
    """FLOPs per row of a dense (``rank`` None) or rank-r layer: 2·macs + bias adds."""
    macs = m * n if rank is None else rank * (m + n)
    return 2 * macs + (m if bias else 0)


def ratio_rank(m: int, n: int, ratio: float) -> int:
    """The largest r with r·(m + n) ≤ ratio·m·n, at least 1 and at most min(m, n)."""
    return max(1, min(math.floor(ratio * m * n / (m + n) + 1e-9), min(m, n)))


def energy_rank(energy_share: torch.Tensor, energy: float, m: int, n: int) -> int | None:
    """The smallest saving r with Σ_{j≤r} share_j ≥ energy (None: no saving rank reaches it)."""
    hi = saving_rank(m, n)
    if hi < 1:
        return None
    kept = torch.cumsum(energy_share, 0)
    for r in range(1, hi + 1):
        if float(kept[r - 1]) >= energy - 1e-12:
            return r
    return None


def dlor_ratio_rank(n: int, ratio: float) -> int:
    return max(1, min(math.floor((ratio * n * n - 1) / (2 * n) + 1e-9), n - 1))


def dlor_saving_rank(n: int) -> int:
    return min((n * n - 2) // (2 * n), n - 1)


def dlor_energy_rank(weight: torch.Tensor, energy: float) -> int | None:
    """Smallest saving r whose best DLoR approximation keeps ``energy`` of ‖W‖_F² (None: none does)."""
    n = weight.shape[0]
    hi = dlor_saving_rank(n)
    if hi < 1:
        return None
    total = float(weight.square().sum())
    allowed = (1.0 - energy) * total

    def fits(r: int) -> bool:
        return dlor_approximation(weight, r).error ** 2 <= allowed

    # α = 0 is among dlor_approximation's candidates, so DLoR at rank r is never worse than the
    # truncated SVD at rank r: the low-rank energy rank, when it saves, is an upper bound.
    sigma_sq = torch.linalg.svdvals(weight).square()
    share = sigma_sq / total if total > 0 else torch.ones_like(sigma_sq) / sigma_sq.numel()
    kept = torch.cumsum(share, 0)
    low_rank = next((r for r in range(1, hi + 1) if float(kept[r - 1]) >= energy - 1e-12), None)
    if low_rank is not None:
        hi = low_rank
    elif not fits(hi):
        return None
    lo_bad, hi_good = 0, hi
    while hi_good - lo_bad > 1:
        mid = (lo_bad + hi_good) // 2
        if fits(mid):
            hi_good = mid
        else:
            lo_bad = mid
    return hi_good


def dlor_params(n: int, r: int, bias: bool) -> int:
    return 2 * n * r + 1 + (n if bias else 0)


def dlor_flops(n: int, r: int, bias: bool) -> int:
    # αx + U(Vᵀx): 2·N·r + N multiply-adds, N adds to sum the two, N for the bias.
    return 2 * (2 * n * r + n) + n + (n if bias else 0)


def _cost(option: Option, rank: int | None, measure: str) -> int:
    m, n = option.out_features, option.in_features
    if measure == "params":
        return params_of(m, n, rank, option.bias)
    return option.rows * flops_of(m, n, rank, option.bias)


def budget_ranks(options: list[Option], fraction: float, measure: str) -> tuple[list[int | None], int, int, int]:
    """Greedy ranks (None = dense) within ``fraction`` of the dense cost (see the module docstring).

    Args:
        options: the layers.
        fraction: f in (0, 1].
        measure: ``"flops"`` or ``"params"``.

    Returns:
        ``(ranks, cost_before, cost_after, least)``: the ranks, the dense total, the allocated total
        and the least reachable total (rank 1 in every layer that saves at rank 1).

    Raises:
        ValueError: the budget is below rank 1 everywhere, naming ``measure`` and the least fraction.
    """
    before = sum(_cost(o, None, measure) for o in options)
    target = fraction * before
    ranks: list[int | None] = [
        1 if min(saving_rank(o.out_features, o.in_features), o.largest) >= 1 else None for o in options
    ]
    total = sum(_cost(o, r, measure) for o, r in zip(options, ranks))
    least = total
    if total > target * (1 + 1e-12):
        raise ValueError(
            f"`{measure}`={fraction} is below the least reachable fraction {least / before:.4f} of the "
            f"compressible layers' {measure} (rank 1 in every layer)"
        )
    heap: list[tuple[float, int, int]] = []  # (−decrease per cost, layer, cost)

    def push(i: int) -> None:
        option, rank = options[i], ranks[i]
        if rank is None:
            return
        hi = min(saving_rank(option.out_features, option.in_features), option.largest)
        current = _cost(option, rank, measure)
        if rank < hi:
            gain = float(option.energy[rank]) if rank < option.energy.numel() else 0.0
            step = _cost(option, rank + 1, measure) - current
        else:
            gain = float(option.energy[rank:].sum())
            step = _cost(option, None, measure) - current
        if step <= 0:
            return
        heapq.heappush(heap, (-gain / step, i, step))

    for i in range(len(options)):
        push(i)
    while heap:
        _, i, step = heapq.heappop(heap)
        if total + step > target * (1 + 1e-12):
            continue  # this layer stops; cheaper moves of the others may still fit
        total += step
        option, rank = options[i], ranks[i]
        hi = min(saving_rank(option.out_features, option.in_features), option.largest)
        ranks[i] = None if rank is not None and rank >= hi else (rank or 0) + 1
        push(i)
    return ranks, before, total, least


__all__ = [
    "Option",
    "budget_ranks",
    "dlor_energy_rank",
    "energy_rank",
    "flops_of",
    "params_of",
    "ratio_rank",
    "saving_rank",
]
