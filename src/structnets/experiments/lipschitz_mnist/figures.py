"""Figures of ``lipschitz-mnist``, drawn from the results table and the config alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...protocol import save_figure
from .config import PUBLISHED, TARGET_RADIUS, LipschitzMNISTConfig


def figures(results: pd.DataFrame, config: LipschitzMNISTConfig, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    train = results[results["stage"] == "train"] if "stage" in results else results.iloc[0:0]
    if train.empty:
        return []
    radii = [0.0, *config.radii]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    train = train.assign(kind=[
        f"{m}/{loss}/{h}" for m, loss, h in zip(train["model"], train.get("loss", "scaled-ce"), train.get("lift", "norm-constrained"))
    ])  # fmt: skip
    for kind, rows in train.groupby("kind", sort=False):
        best = rows.sort_values("accuracy").iloc[-1]
        values = [best["accuracy"], *[best[f"certified_{r:g}"] for r in config.radii]]
        axes[0].plot(
            radii, 100 * np.asarray(values, float), marker="o", label=f"{kind} (d={best['depth']}, w={best['width']})"
        )
    for (method, _, _, certified), marker in zip(PUBLISHED, "*PXD"):
        axes[0].scatter([TARGET_RADIUS], [certified], marker=marker, s=50, color="black", label=f"{method} (published)")
    axes[0].set_xlabel("ℓ₂ radius ε")
    axes[0].set_ylabel("certified accuracy (%)")
    axes[0].set_title("Certified robust accuracy (best model per kind)", fontsize=10)
    axes[0].legend(fontsize=5)
    ax = axes[1]
    for kind, rows in train.groupby("kind", sort=False):
        ax.scatter(rows["lipschitz_lower"], rows["lipschitz_upper"], label=kind, s=16)
    ax.axhline(1.0, color="gray", ls="--", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured Lipschitz lower bound")
    ax.set_ylabel("certified upper bound")
    ax.set_title("Lipschitz constants of trained models", fontsize=10)
    ax.legend(fontsize=7)
    path = save_figure(fig, out_dir / "mnist.png")
    return [path]


__all__ = ["figures"]
