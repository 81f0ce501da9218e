"""Figures of ``lipschitz-moons``, drawn from the results table and the config alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...protocol import save_figure
from .config import PAPER_LIPSCHITZ_AUTHORS_CODE, LipschitzMoonsConfig


def figures(results: pd.DataFrame, config: LipschitzMoonsConfig, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    if results.empty:
        return []
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for ax, (sweep, column) in zip(axes[:2], [("depth", "depth"), ("width", "width")]):
        rows = results[results["sweep"] == sweep]
        for fraction, part in rows.groupby("train_fraction"):
            means = part.groupby(column)[["accuracy", *[f"certified_{r:g}" for r in config.radii]]].mean()
            ax.plot(means.index, 100 * means["accuracy"], marker="o", label=f"clean, train {fraction:g}")
            for r in config.radii:
                ax.plot(
                    means.index,
                    100 * means[f"certified_{r:g}"],
                    marker=".",
                    ls="--",
                    label=f"cert ε={r:g}, train {fraction:g}",
                )
        ax.set_xscale("log", base=2)
        ax.set_xlabel(column)
        ax.set_ylabel("test accuracy (%)")
        fixed = config.depth_sweep_width if sweep == "depth" else config.width_sweep_depth
        ax.set_title(f"{sweep} sweep ({'width' if sweep == 'depth' else 'depth'} {fixed})", fontsize=10)
        ax.legend(fontsize=6)
    ax = axes[2]
    ours = results[results["sweep"] != "authors-style"]
    authors = results[results["sweep"] == "authors-style"]
    ax.scatter(ours["lipschitz_lower"], ours["lipschitz_upper"], s=14, label="ours (each model)")
    if not authors.empty:
        ax.scatter(
            authors["lipschitz_lower"],
            authors["lipschitz_upper"],
            s=14,
            marker="x",
            color="red",
            label="authors-style (ours, re-implemented)",
        )
    ax.legend(fontsize=7)
    ax.axhline(1.0, color="gray", ls="--", lw=0.8)
    ax.axvline(1.0, color="gray", ls="--", lw=0.8)
    for value in PAPER_LIPSCHITZ_AUTHORS_CODE:
        ax.axvline(value, color="red", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("measured lower bound (red: authors' code ~19, ~25)")
    ax.set_ylabel("certified upper bound")
    ax.set_title("Lipschitz constant: measured vs certified", fontsize=10)
    path = save_figure(fig, out_dir / "moons.png")
    return [path]


__all__ = ["figures"]
