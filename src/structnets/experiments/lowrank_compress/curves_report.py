"""The curves section of the ``lowrank-compress`` report: a function of the curve rows alone."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import targets
from .curves import ARCHITECTURES, CURVE_METHODS, TUCKER_ARCHITECTURES

_METHOD_LABELS = {
    "dense": "dense (trained)",
    "svd": "plain SVD",
    "calibrated": "calibrated SVD",
    "tucker": "Tucker-2 convs (tensorly-torch)",
}


def _cell(values: pd.Series, scale: float = 100.0, digits: int = 2) -> str:
    values = values.dropna().astype(float) * scale
    if values.empty:
        return "—"
    if len(values) == 1:
        return f"{values.iloc[0]:.{digits}f}"
    return f"{values.mean():.{digits}f} ± {values.std(ddof=1):.{digits}f}"


def _latency(values: pd.Series) -> str:
    values = values.dropna().astype(float)
    if values.empty:
        return "—"
    return f"{values.median():.2f} [{values.min():.2f}–{values.max():.2f}]"


def curves_section(results: pd.DataFrame) -> list[str]:
    """Markdown lines of the curves: per architecture a table, then the two targets (:mod:`.targets`)."""
    rows = targets.curve_rows(results)
    if rows.empty:
        return []
    steps = sorted(int(s) for s in rows["finetune_steps"].dropna().unique() if int(s) > 0)
    first = rows.iloc[0]
    tucker_shown = "tucker" in set(rows["method"])
    lines = [
        "# Accuracy against FLOPs: an MLP, a CNN and a small ViT on MNIST",
        "",
        f"Each net is trained on {int(first['n_train']):,} MNIST images for {int(first['epochs'])} epochs (Adam), "
        "then compressed at a model-wide budget b, `structnets.compress(model, flops=b, ...)`: the compressible "
        "layers (linear layers, convolutions, the attention projections) together keep at most the fraction b of "
        "their FLOPs, ranks allocated greedily by error decrease per FLOP. **plain SVD**: truncated SVD "
        "(`example_input=` the calibration images, to count rows); **calibrated SVD**: `calibration=` the first "
        "training images, the whitened truncation Ŵ = [W S]_r S⁻¹ (SVD-LLM), ranks from the whitened spectrum; "
        "**Tucker-2**: the CNN's convolutions that plain SVD factorised become tensorly-torch Tucker-2 "
        "convolutions (1×1, k×k, 1×1) costing no more FLOPs than plain SVD gave each of them, the other layers as "
        "in plain SVD (Tucker-2 of a matrix is its SVD, so the arm runs on the CNN only)"
        + ("" if tucker_shown else "; *not in this run* (tensorly-torch did not import, or the arm was not asked for)")
        + f". Each compressed net is scored as it is (0 steps) and after a recovery fine-tune of "
        f"{', '.join(map(str, steps)) or '—'} Adam steps. 'reached' is the compressible layers' FLOPs after / "
        "before as `compress` counts them; 'model FLOPs' counts the whole net per image with "
        "`torch.utils.flop_counter` (2 per multiply–add of products and convolutions). 'forward / dense' is the "
        "CPU forward time over the uncompressed net's on the same test batch, interleaved pairs, the median of "
        "per-pair ratios; shown as the median over seeds [min–max] (the dense ViT runs torch's fused encoder "
        "kernel, which a factorised encoder cannot use). Accuracy: mean ± sample std over seeds, in %.",
        "",
    ]
    architectures = [a for a in ARCHITECTURES if a in set(rows["architecture"])]
    for architecture in architectures:
        part = rows[rows["architecture"] == architecture]
        dense = part[part["method"] == "dense"]
        seeds = sorted(int(s) for s in part["seed"].unique())
        lines += [
            f"## {architecture}: test accuracy on {int(first['n_test']):,} images, seeds {seeds}",
            "",
            "| method | budget b | fine-tune steps | reached | ranks | model FLOPs / image | / dense | parameters | "
            "accuracy % | forward / dense | seeds |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        if not dense.empty:
            lines.append(
                f"| {_METHOD_LABELS['dense']} | 1 | — | 1 | full | {int(dense['flops'].iloc[0]):,} | 1.000 | "
                f"{int(dense['parameters'].iloc[0]):,} | {_cell(dense['accuracy'])} | 1 | {len(dense)} |"
            )
        budgets = sorted(part["budget"].dropna().unique(), reverse=True)
        for budget in budgets:
            for method in CURVE_METHODS:
                for k in sorted(part["finetune_steps"].dropna().unique()):
                    cell = part[(part["method"] == method) & np.isclose(part["budget"].astype(float).fillna(-1), budget)
                                & (part["finetune_steps"] == k)]  # fmt: skip
                    if cell.empty:
                        continue
                    ranks = _ranks(cell)
                    timing = _latency(part[(part["method"] == method) & (part["finetune_steps"] == 0)
                                           & np.isclose(part["budget"].astype(float).fillna(-1), budget)]["latency_ratio"])  # fmt: skip
                    lines.append(
                        f"| {_METHOD_LABELS[method]} | {budget:.3g} | {int(k)} | {cell['budget_reached'].mean():.3f} | "
                        f"{ranks} | {int(cell['flops'].median()):,} | {cell['flops_ratio'].median():.3f} | "
                        f"{int(cell['parameters'].median()):,} | {_cell(cell['accuracy'])} | {timing} | {len(cell)} |"
                    )
        lines.append("")
    lines += _targets_section(rows)
    return lines


def _ranks(cell: pd.DataFrame) -> str:
    low, high = cell["rank_min"].dropna(), cell["rank_max"].dropna()
    text = "—" if low.empty else f"{int(low.min())}–{int(high.max())}"
    if "tucker_ranks" in cell.columns and cell["tucker_ranks"].notna().any():
        text += f"; Tucker {cell['tucker_ranks'].dropna().iloc[0]}"
    return text


def _bound(value: float) -> str:
    return "—" if not math.isfinite(value) else f"{100 * value:+.2f}"


def _targets_section(rows: pd.DataFrame) -> list[str]:
    lines = ["## Targets (issue 27)", ""]
    cells = targets.calibrated_vs_svd(rows)
    lines += [
        f"**(i) Calibrated SVD at least as accurate as plain SVD at every budget: {targets.verdict(cells)}.** "
        f"Test: {targets.rule_text('calibrated')}.",
        "",
        "| architecture | budget b | fine-tune steps | calibrated − plain SVD (points, mean ± sd) | lower bound | "
        "upper bound (α/m) | seeds | outcome |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        spread = "—" if not math.isfinite(c.std) else f"{100 * c.std:.2f}"
        lines.append(
            f"| {c.architecture} | {c.budget:.3g} | {c.steps} | {100 * c.mean:+.2f} ± {spread} | {_bound(c.lower)} | "
            f"{_bound(c.upper)} | {c.pairs} | {c.outcome} |"
        )
    half = targets.half_flops(rows)
    lines += [
        "",
        f"**(ii) At half the FLOPs without fine-tuning within 1 point of the uncompressed accuracy on every model "
        f"(calibrated SVD): {targets.verdict(half)}.** Test: {targets.rule_text('half')}.",
        "",
        "| architecture | method | − dense (points, mean ± sd) | lower bound | upper bound (α/m) | seeds | outcome |",
        "|---|---|---|---|---|---|---|",
    ]
    for method in CURVE_METHODS:
        for c in targets.half_flops(rows, method):
            judged = "" if method == targets.JUDGED_METHOD else " (shown, not judged)"
            spread = "—" if not math.isfinite(c.std) else f"{100 * c.std:.2f}"
            lines.append(
                f"| {c.architecture} | {_METHOD_LABELS[method]}{judged} | {100 * c.mean:+.2f} ± {spread} | "
                f"{_bound(c.lower)} | {_bound(c.upper)} | {c.pairs} | {c.outcome} |"
            )
    if not any(a in TUCKER_ARCHITECTURES for a in set(rows["architecture"])):
        lines += ["", "(No convolutional net in this run: no Tucker arm.)"]
    return [*lines, ""]
