"""Figures of ``lipschitz-density``, drawn from the results table and the config alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...protocol import save_figure
from .config import LipschitzDensityConfig


def figures(results: pd.DataFrame, config: LipschitzDensityConfig, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    trained = results[results["model"] == "trained"] if not results.empty else results
    if trained.empty:
        return []
    dims = sorted(trained["dim"].unique())
    fig, axes = plt.subplots(1, len(dims), figsize=(5.2 * len(dims), 3.8), squeeze=False)
    exact = results[results["model"] == "exact"]
    for ax, dim in zip(axes[0], dims):
        part = trained[trained["dim"] == dim].sort_values(["target_pieces", "target"], kind="stable")
        for color, name in zip([f"C{i}" for i in range(10)], part["target"].unique()):
            rows = part[part["target"] == name].sort_values("depth")
            ax.plot(rows["depth"], rows["sup_error"], marker="o", color=color, label=f"{name} sup")
            ax.plot(rows["depth"], rows["rmse"], marker=".", ls="--", color=color, label=f"{name} RMSE")
            e = exact[exact["target"] == name]
            if not e.empty:
                ax.axvline(int(e["depth"].iloc[0]), color=color, ls=":", lw=1)
        ax.axhline(config.tolerance, color="gray", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("depth L (residual blocks)")
        ax.set_ylabel("error (best seed)")
        ax.set_title(f"d = {dim}, width d + 3 = {dim + 3}; dotted: exact max-min depth", fontsize=9)
        ax.legend(fontsize=6)
    path = save_figure(fig, out_dir / "density.png")
    return [path]


__all__ = ["figures"]
