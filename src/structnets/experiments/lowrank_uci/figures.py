"""Figures of ``lowrank-uci`` (read saved results only)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...protocol import save_figure
from .config import ALL_DATASETS, PAPER


def figures(results: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Write ``accuracy.png`` (dense vs low-rank per data set, folds as points, the paper's values as
    stars) and ``sensitivity.png`` (error relative to dense against the bottleneck ratio) from the
    result rows alone; returns the paths written (none before the first CV row)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    cv = results[results["stage"] == "cv"] if "stage" in results else results.iloc[0:0]
    paths: list[Path] = []
    if cv.empty:
        return paths

    # 1. Low-rank vs dense per data set, paired folds as points, with the paper's values.
    datasets = [d for d in ALL_DATASETS if not cv[cv["dataset"] == d].empty]
    fig, axes = plt.subplots(1, len(datasets), figsize=(2.2 * len(datasets), 3.2), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        rows = cv[cv["dataset"] == dataset]
        classification = rows["task"].iloc[0] == "classification"
        column, scale = ("accuracy", 100.0) if classification else ("rmse", 1.0)
        for position, model in enumerate(("dense", "lowrank")):
            values = rows[rows["model"] == model][column].to_numpy(float) * scale
            ax.scatter(np.full(len(values), position), values, s=10, alpha=0.6)
            ax.errorbar(
                position + 0.15,
                values.mean(),
                yerr=values.std(ddof=1) if len(values) > 1 else 0,
                fmt="o",
                color="black",
                capsize=3,
            )
        paper = PAPER.get(dataset)
        if paper is not None:
            ax.scatter([0.3, 1.3], [paper[1], paper[0]], marker="*", s=60, color="red", label="paper")
        ax.set_xticks([0, 1], ["dense", "low-rank"])
        ax.set_title(dataset, fontsize=9)
        ax.set_ylabel("ACC (%)" if classification else "RMSE")
    fig.suptitle("Dense vs low-rank Swish MLP (points: folds; red stars: paper)", fontsize=10)
    path = save_figure(fig, out_dir / "accuracy.png")
    paths.append(path)

    # 2. Sensitivity: metric relative to dense vs bottleneck ratio.
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for dataset in datasets:
        rows = cv[cv["dataset"] == dataset]
        classification = rows["task"].iloc[0] == "classification"
        column = "accuracy" if classification else "rmse"
        dense_mean = rows[rows["model"] == "dense"][column].mean()
        low = rows[rows["model"] != "dense"].groupby("ratio")[column].mean()
        dense_error = 1 - dense_mean if classification else dense_mean
        # a dense net without error (ACC 1 or RMSE 0) leaves the ratio undefined: nothing to draw
        if low.empty or not np.isfinite(dense_error) or dense_error <= 0:
            continue
        # error ratio (1 − ACC or RMSE) relative to dense: > 1 means worse than dense.
        error = (1 - low) / dense_error if classification else low / dense_error
        ax.plot(low.index, error.to_numpy(), marker="o", label=dataset)
    ax.axhline(1.0, color="gray", lw=0.8, ls="--")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bottleneck ratio H / width")
    ax.set_ylabel("error / dense error")
    ax.set_title("Bottleneck sensitivity (error: 1 − ACC or RMSE)", fontsize=10)
    ax.legend(fontsize=7)
    path = save_figure(fig, out_dir / "sensitivity.png")
    paths.append(path)
    return paths
