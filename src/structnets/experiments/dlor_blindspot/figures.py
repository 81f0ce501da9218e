"""Figure of ``dlor-blindspot`` (test MSE against width beside the floor), from the results table only."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...protocol import save_figure
from .config import DLoRBlindspotConfig
from .report import stage_rows


def draw_figures(results: pd.DataFrame, config: DLoRBlindspotConfig, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    floor_rows, train = stage_rows(results, "floor"), stage_rows(results, "train")
    if train.empty:
        return []
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for model, colour, label in (("rank1", "tab:red", "rank-1 (α = 0)"), ("dlor", "tab:blue", "DLoR, r = 1")):
        rows = train[train["model"] == model].sort_values("width")
        if rows.empty:
            continue
        ax.plot(rows["width"], rows["median_test_mse"], marker="o", color=colour, label=label)
        ax.fill_between(rows["width"], rows["min_test_mse"], rows["max_test_mse"], color=colour, alpha=0.2)
    if not floor_rows.empty:
        ax.axhline(float(floor_rows["floor_mse"].iloc[0]), color="black", ls="--", lw=0.8, label="blind-spot floor")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("width N")
    ax.set_ylabel("test MSE on x₁x₂")
    ax.set_title("Rank-1 networks stay above the floor; DLoR does not", fontsize=10)
    ax.legend(fontsize=8)
    path = save_figure(fig, out_dir / "blindspot.png")
    return [path]
