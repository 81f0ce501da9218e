"""``rank-bounds`` figures, drawn from the results table alone."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ...protocol import save_figure
from .config import RankBoundsConfig
from .report import SC_FAMILIES, _families

_COLOURS = {
    "param_sc": "tab:blue",
    "param_factorised_sc": "black",
    "spectral_sc": "tab:orange",
    "pacbayes_sc": "tab:green",
    "best_rs_sc": "tab:red",
}


def _figures(results: pd.DataFrame, config: RankBoundsConfig, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    r = (
        results[~results["variant"].isin(["deep-linear", "fixed-norm"])].copy()
        if "variant" in results
        else results.copy()
    )
    if r.empty:
        return paths
    datasets = [d for d in config.datasets if (r["dataset"] == d).any()]
    deepest, decay0 = max(r["depth"]), min(r["weight_decay"])

    # 1. Sample complexity vs width at fixed depth and weight decay, per data set and model.
    panels = [(d, v) for d in datasets for v in sorted(r["variant"].unique(), key=lambda v: (v != "dense", v))]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 3.8), squeeze=False)
    for ax, (dataset, variant) in zip(axes[0], panels):
        rows = r[
            (r["dataset"] == dataset)
            & (r["variant"] == variant)
            & (r["depth"] == deepest)
            & (r["weight_decay"] == decay0)
        ]
        if rows.empty:
            continue
        means = rows.groupby("width").mean(numeric_only=True)
        for column, label in _families(rows, variant):
            # fixed colours per bound; the stored count dashed with crosses (it overlaps rank-sparse)
            stored = column == "param_factorised_sc"
            ax.plot(
                means.index,
                means[column],
                marker="x" if stored else "o",
                label=label,
                ls="--" if stored else "-",
                color=_COLOURS[column],
                zorder=3 if stored else 2,
            )
        w = np.array(means.index, dtype=float)
        anchor = means["best_rs_sc"].iloc[0]
        ax.plot(w, anchor * w / w[0], ls=":", color="gray", label="∝ W")
        ax.plot(w, anchor * (w / w[0]) ** 2, ls="--", color="gray", label="∝ W²")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("width W")
        ax.set_ylabel(f"sample complexity n* (complexity ≤ {config.sample_target:g})")
        ax.set_title(f"{dataset}, {variant}, L = {deepest}, wd = {decay0:g}", fontsize=9)
        ax.legend(fontsize=6)
    path = save_figure(fig, out_dir / "bound_vs_width.png")
    paths.append(path)

    # 2. Activation rank / width vs hidden layer index, one line per depth (widest width).
    fig, axes = plt.subplots(1, len(datasets), figsize=(5 * len(datasets), 3.6), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        rows = r[(r["dataset"] == dataset) & (r["weight_decay"] == decay0) & (r["variant"] == "dense")]
        if rows.empty:
            continue
        width = rows["width"].max()
        for depth in sorted(rows["depth"].unique()):
            sub = rows[(rows["depth"] == depth) & (rows["width"] == width)]
            ranks = np.array([json.loads(v) for v in sub["activation_ranks"]], dtype=float).mean(0)
            ax.plot(np.arange(1, len(ranks) + 1), ranks / width, marker="o", label=f"L = {depth}")
        ax.set_xlabel("hidden layer index")
        ax.set_ylabel("activation rank / width")
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{dataset}, dense, W = {width}, wd = {decay0:g}", fontsize=10)
        ax.legend(fontsize=7)
    path = save_figure(fig, out_dir / "rank_vs_layer.png")
    paths.append(path)

    # 3. Bound vs measured generalization gap: complexity terms (log) per unit.
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for column, label in (("spectral_complexity", "spectral"), ("pacbayes_complexity", "PAC-Bayes")):
        ax.scatter(r["gap"], r[column], s=12, label=label, alpha=0.7)
    for column, label in SC_FAMILIES:
        if column in ("param_sc", "best_rs_sc") and column in r:
            # covering bounds are clipped at 8 when vacuous: show the 1/√n-equivalent complexity
            ax.scatter(
                r["gap"],
                config.sample_target * np.sqrt(r[column] / r["n_train"]),
                s=12,
                alpha=0.7,
                label=f"{label} (≈ target·√(n*/n))",
            )
    ax.set_yscale("log")
    ax.set_xlabel("measured gap: test error − train error")
    ax.set_ylabel("complexity term at the training n")
    ax.set_title("Bounds vs measured generalization gap", fontsize=10)
    ax.legend(fontsize=7)
    path = save_figure(fig, out_dir / "bound_vs_gap.png")
    paths.append(path)

    # 4. Activation rank during training (mean over hidden layers), widest width per depth.
    fig, axes = plt.subplots(1, len(datasets), figsize=(5 * len(datasets), 3.6), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        rows = r[(r["dataset"] == dataset) & (r["weight_decay"] == decay0) & (r["variant"] == "dense")]
        if rows.empty:
            continue
        width = rows["width"].max()
        for depth in sorted(rows["depth"].unique()):
            sub = rows[(rows["depth"] == depth) & (rows["width"] == width)]
            if sub.empty:
                continue
            history = json.loads(sub.iloc[0]["rank_history"])
            mean_rank = [np.mean(ranks) / width for ranks in history["activation_ranks"]]
            ax.plot(history["epoch"], mean_rank, marker="o", label=f"L = {depth}")
        ax.set_xlabel("epoch")
        ax.set_ylabel("mean activation rank / width")
        ax.set_title(f"{dataset}, dense, W = {width}, wd = {decay0:g}", fontsize=10)
        ax.legend(fontsize=7)
    path = save_figure(fig, out_dir / "rank_during_training.png")
    paths.append(path)
    return paths
