"""The figure of ``lowrank-compress``: test score against FLOPs, per data set (reads saved results only)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...protocol import save_figure
from .config import DATASETS
from .report import metric_of

_STYLE = {
    "compressed": ("compressed, no fine-tune", "s", "tab:orange"),
    "finetuned": ("compressed + fine-tune", "o", "tab:blue"),
    "scratch": ("low-rank from scratch", "^", "tab:green"),
}


def draw_figures(results: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Write ``out_dir/accuracy_vs_flops.png``: mean ± std over seeds of each model against FLOPs per row
    (and ``curves_accuracy_vs_flops.png`` of the curve rows, :func:`.curves_figure.draw_curves`).

    Args:
        results: the experiment's result rows.
        out_dir: folder of the figure (created).

    Returns:
        the paths written (none when there are no rows).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .curves_figure import draw_curves

    curves = draw_curves(results, out_dir)
    if "stage" in results.columns:
        results = results[results["stage"] != "curve"]
    datasets = [d for d in DATASETS if "dataset" in results and d in set(results["dataset"].dropna())]
    if not datasets:
        return curves
    out_dir.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.6 * len(datasets), 3.6), squeeze=False)
    for ax, dataset in zip(axes[0], datasets, strict=True):
        rows = results[results["dataset"] == dataset]
        column, scale, _, higher = metric_of(rows)
        for model, (label, marker, color) in _STYLE.items():
            part = rows[rows["model"] == model]
            if part.empty:
                continue
            grouped = part.groupby("flops")[column]
            mean, std = grouped.mean() * scale, grouped.std(ddof=1).fillna(0.0) * scale
            ax.errorbar(mean.index.to_numpy(float), mean.to_numpy(), yerr=std.to_numpy(), marker=marker,
                        color=color, label=label, capsize=3)  # fmt: skip
        dense = rows[rows["model"] == "dense"]
        if not dense.empty:
            values = dense[column].to_numpy(float) * scale
            ax.errorbar([float(dense["flops"].iloc[0])], [values.mean()],
                        yerr=[values.std(ddof=1) if len(values) > 1 else 0.0], marker="*", markersize=12,
                        color="black", label="dense", capsize=3, linestyle="none")  # fmt: skip
        ax.set_xscale("log")
        ax.set_xlabel("FLOPs per input row")
        ax.set_ylabel("test accuracy (%)" if column == "accuracy" else "test RMSE")
        ax.set_title(f"{dataset} ({'higher' if higher else 'lower'} is better)", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Compressing a trained dense MLP vs training the low-rank net from scratch", fontsize=10)
    return [save_figure(fig, out_dir / "accuracy_vs_flops.png"), *curves]
