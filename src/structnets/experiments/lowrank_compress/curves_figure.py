"""The curves figure of ``lowrank-compress``: accuracy against whole-model FLOPs per architecture (saved rows only)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...protocol import save_figure
from .curves import ARCHITECTURES
from .targets import curve_rows

_COLORS = {"svd": "tab:orange", "calibrated": "tab:blue", "tucker": "tab:green"}


def draw_curves(results: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Write ``out_dir/curves_accuracy_vs_flops.png``: mean ± std over seeds of each method at each budget, with
    and without fine-tuning (dashed: 0 steps), against whole-model FLOPs per image; the dense net as a star.

    Returns:
        the paths written (none when there are no curve rows).
    """
    rows = curve_rows(results)
    if rows.empty:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    architectures = [a for a in ARCHITECTURES if a in set(rows["architecture"])]
    out_dir.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, len(architectures), figsize=(4.6 * len(architectures), 3.6), squeeze=False)
    for ax, architecture in zip(axes[0], architectures, strict=True):
        part = rows[rows["architecture"] == architecture]
        for (method, steps), cell in part[part["method"] != "dense"].groupby(["method", "finetune_steps"]):
            # by budget: the allocated ranks (and so the FLOPs) may differ a little between seeds
            grouped = cell.groupby("budget")
            flops = grouped["flops"].mean().to_numpy(float)
            mean, std = grouped["accuracy"].mean() * 100, grouped["accuracy"].std(ddof=1).fillna(0.0) * 100
            ax.errorbar(flops, mean.to_numpy(), yerr=std.to_numpy(), capsize=3,
                        color=_COLORS.get(str(method), "gray"), linestyle="--" if int(steps) == 0 else "-",
                        marker="s" if int(steps) == 0 else "o", label=f"{method}, {int(steps)} steps")  # fmt: skip
        dense = part[part["method"] == "dense"]
        if not dense.empty:
            values = dense["accuracy"].to_numpy(float) * 100
            ax.errorbar([float(dense["flops"].iloc[0])], [values.mean()],
                        yerr=[values.std(ddof=1) if len(values) > 1 else 0.0], marker="*", markersize=12,
                        color="black", label="dense", capsize=3, linestyle="none")  # fmt: skip
        ax.ticklabel_format(axis="x", style="sci", scilimits=(0, 0))
        ax.set_xlabel("model FLOPs per image (mean over seeds)")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(f"{architecture} on MNIST", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6)
    fig.suptitle("Compressing trained nets at model-wide FLOP budgets: plain, calibrated SVD, Tucker", fontsize=10)
    return [save_figure(fig, out_dir / "curves_accuracy_vs_flops.png")]
