"""Targets of compressing trained networks (issue 27), decided by the curves of ``lowrank-compress``.

Not a paper's claims but ours, stated before the run: structnets' activation-aware truncation
(the whitened SVD of SVD-LLM, Wang et al. 2024; ASVD, Yuan et al. 2023), which minimises the
output error ‖(W − Ŵ)X‖_F on calibration data rather than the weight error ‖W − Ŵ‖_F, (i) is at
least as accurate as plain truncated SVD at every model-wide FLOP budget, paired over seeds, and
(ii) at half the compressible layers' FLOPs, without fine-tuning, stays within one accuracy point
of the uncompressed net, on an MLP, a CNN and a small vision transformer trained on MNIST. Both are
decided by :mod:`structnets.experiments.lowrank_compress.targets`, the same functions the
experiment's report uses, so the claims rows and the report agree by construction. Their ids
carry the number of the low-rank Swish paper (000), whose low-rank layers the compression builds.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from .evidence import Claim, Evidence, not_tested

PAPER = "low-rank Swish (000): compression targets (issue 27)"


def _describe(cells: list[Any], cells_per_budget: bool) -> str:
    return "; ".join(
        f"{c.architecture}" + (f" b={c.budget:.3g} {c.steps} steps" if cells_per_budget else "")
        + f": {100 * c.mean:+.2f} [{100 * c.lower:+.2f}, ∞) {c.outcome}"
        for c in cells
    )  # fmt: skip


def _evidence(cells: list[Any], target: str, what: str) -> Evidence:
    from ..experiments.lowrank_compress import targets

    if not cells:
        return not_tested(f"no curve rows with {what}")
    verdict = targets.verdict(cells)
    held = sum(c.outcome == targets.HOLDS for c in cells)
    failed = [c for c in cells if c.outcome == targets.FAILS]
    seeds = min(c.pairs for c in cells)
    keys = tuple(dict.fromkeys(k for c in cells for k in c.keys))
    ours = (
        f"holds in {held} of {len(cells)} cells, fails in {len(failed)} (min {seeds} seeds); mean difference "
        f"{100 * min(c.mean for c in cells):+.2f} to {100 * max(c.mean for c in cells):+.2f} points; "
        + _describe(cells, target == "calibrated")
    )
    return Evidence(ours, verdict, targets.rule_text(target), len(keys) or sum(2 * c.pairs for c in cells), keys)


def _calibrated(results: pd.DataFrame, config: Any) -> Evidence:
    from ..experiments.lowrank_compress import targets

    return _evidence(targets.calibrated_vs_svd(results), "calibrated", "both plain and calibrated SVD")


def _half(results: pd.DataFrame, config: Any) -> Evidence:
    from ..experiments.lowrank_compress import targets

    return _evidence(targets.half_flops(results), "half", "a dense net and calibrated SVD at flops = 1/2, 0 steps")


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "000-compress-calibrated-not-worse",
        PAPER,
        "Calibrated (whitened) SVD compression is at least as accurate as plain truncated SVD at every model-wide "
        "FLOP budget (1/2, 1/3, 1/4), with and without a recovery fine-tune, on an MLP, a CNN and a small ViT "
        "trained on MNIST (paired over seeds)",
        "target: calibrated ≥ plain SVD in every (model, budget, fine-tune) cell",
        "lowrank-compress",
        _calibrated,
    ),
    Claim(
        "000-compress-half-flops-one-point",
        PAPER,
        "At half the compressible layers' FLOPs and without fine-tuning, calibrated SVD keeps every model (MLP, "
        "CNN, small ViT on MNIST) within 1 accuracy point of the uncompressed net",
        "target: ≥ dense − 1 point on every model",
        "lowrank-compress",
        _half,
    ),
)
