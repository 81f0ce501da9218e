"""Figures of ``dlor-universality`` (error against depth, parameters at equal error), from the results table only."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ...protocol import save_figure
from .config import TARGETS, DLoRUniversalityConfig


def draw_figures(results: pd.DataFrame, config: DLoRUniversalityConfig, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if results.empty:
        return []
    results = results.sort_values(["target", "neurons"])
    targets = [t for t in config.targets if (results["target"] == t).any()]
    paths = []

    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    colours = dict(zip(TARGETS, ("tab:blue", "tab:orange", "tab:green", "tab:red"), strict=True))
    for target in targets:
        rows = results[results["target"] == target]
        ax.plot(rows["deep_r2_depth"], rows["deep_r2_sup"], marker="o", color=colours[target], label=f"{target}, r = 2")
        ax.plot(
            rows["deep_r1_depth"],
            rows["deep_r1_sup"],
            marker="s",
            ls="--",
            color=colours[target],
            label=f"{target}, r = 1",
            alpha=0.7,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("depth (nonlinear layers), width n + m + 2")
    ax.set_ylabel("sup error ‖F − f‖∞")
    ax.set_title("Deep DLoR networks at width n + m + 2: error against depth", fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    paths.append(save_figure(fig, out_dir / "universality_depth.png"))

    columns = min(2, len(targets))
    grid_rows = math.ceil(len(targets) / columns)
    fig, axes = plt.subplots(grid_rows, columns, figsize=(4.2 * columns, 3.3 * grid_rows), squeeze=False)
    for ax in axes.flat[len(targets) :]:
        ax.set_visible(False)
    styles = {
        "shallow": ("black", "dense shallow g"),
        "deep_r2": ("tab:blue", "deep, r = 2"),
        "deep_r1": ("tab:cyan", "deep, r = 1"),
        "deep_generic": ("tab:purple", "deep, generic transfer"),
        "wide_exact": ("tab:green", "wide exact"),
        "wide_generic": ("tab:red", "wide generic (parallel)"),
    }
    for ax, target in zip(axes.flat, targets, strict=False):
        rows = results[results["target"] == target]
        for family, (colour, label) in styles.items():
            if f"{family}_params" not in rows:
                continue
            have = rows[rows[f"{family}_params"].notna()]
            ax.plot(have[f"{family}_params"], have[f"{family}_sup"], marker=".", color=colour, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("parameters")
        ax.set_ylabel("sup error")
        ax.set_title(target, fontsize=9)
    axes.flat[0].legend(fontsize=6)
    fig.suptitle("Parameters at equal error: deep vs wide DLoR (same g per point)", fontsize=10)
    paths.append(save_figure(fig, out_dir / "universality_parameters.png"))
    return paths
