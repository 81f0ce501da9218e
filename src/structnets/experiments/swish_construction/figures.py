"""Figures of ``swish-construction``: error and bound terms against M, τ and λ, from the results table alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...protocol import save_figure
from .config import SwishConstructionConfig


def draw_figures(results: pd.DataFrame, config: SwishConstructionConfig | None, out_dir: Path) -> list[Path]:
    """Write ``error_vs_M.png``, ``error_vs_tau.png`` and ``error_vs_lam.png`` (one panel per target) from ``results``.

    Args:
        results: the results table; config: unused (the figures read the table alone); out_dir: target folder.

    Returns:
        the paths written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    specs = list(dict.fromkeys(results["target"])) if "target" in results.columns else []
    if not specs:
        return paths
    for sweep, label in (("M", "M (grid resolution)"), ("tau", "τ (bump sharpness)"), ("lam", "λ (product scale)")):
        if not (results["sweep"] == sweep).any():  # taus=() or lams=(): no such figure (was empty, legend warning)
            continue
        fig, axes = plt.subplots(1, len(specs), figsize=(3.2 * len(specs), 3.2), squeeze=False)
        for ax, spec in zip(axes[0], specs):
            rows = results[(results["target"] == spec) & (results["sweep"] == sweep)].sort_values(sweep)
            if rows.empty:
                continue
            x = rows[sweep].to_numpy(float)
            ax.loglog(x, rows["error"], "o-", label="measured sup error", color="black")
            ax.loglog(x, rows["bound"], "s--", label="bound (total)", color="tab:red")
            ax.loglog(x, rows["taylor"], ":", label="Taylor c₄M^{−β}", color="tab:blue")
            ax.loglog(x, rows["leakage"].clip(lower=1e-300), ":", label="bump", color="tab:green")
            if (rows["product"] > 0).any():
                ax.loglog(x, rows["product"].clip(lower=1e-300), ":", label="product c₃/λ²", color="tab:purple")
            if sweep == "M":
                beta = rows["beta"].iloc[0]
                ref = rows["error"].iloc[0] * (x / x[0]) ** (-beta)
                ax.loglog(x, ref, color="gray", lw=0.8, label=f"slope −β = {-beta:g}")
            ax.set_title(spec, fontsize=9)
            ax.set_xlabel(label)
        axes[0][0].set_ylabel("sup error on [0,1]^d")
        axes[0][0].legend(fontsize=6)
        fig.suptitle(f"Low-rank Swish construction: error and bound vs {label}", fontsize=10)
        paths.append(save_figure(fig, out_dir / f"error_vs_{sweep}.png"))
    return paths
