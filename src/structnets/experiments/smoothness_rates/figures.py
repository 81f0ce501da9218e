"""Figures of ``smoothness-rates``: error against n and against N, read from the results table only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...protocol import save_figure
from .config import SmoothnessRatesConfig
from .report import floor_rows, long_table


def draw_figures(results: pd.DataFrame, config: SmoothnessRatesConfig, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    from ...analysis import minimax_exponent
    from ...analysis.rates import relu_depth_cap_exponent, relu_estimation_exponent

    out_dir.mkdir(parents=True, exist_ok=True)
    if results.empty:
        return []
    long = long_table(results)
    floors = floor_rows(results)
    paths: list[Path] = []
    colours = {"relu": "tab:red", "tanh": "tab:blue", "gelu": "tab:green", "silu": "tab:purple"}
    for part, x, ylabel in (("estimation", "n", "excess risk ‖f̂ − f‖²"), ("approximation", "parameters", "test RMSE")):
        rows = long[long["part"] == part]
        if rows.empty:
            continue
        panels = sorted({(d, s, L) for d, s, L in zip(rows["d"], rows["s"], rows["depth"])})
        fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.4), squeeze=False)
        for ax, (d, s, depth) in zip(axes[0], panels):
            panel = rows[(rows["d"] == d) & (rows["s"] == s) & (rows["depth"] == depth)]
            for name, group in panel.groupby("activation"):
                values = group["test_mse"] if part == "estimation" else np.sqrt(group["test_mse"])
                medians = values.groupby(group[x]).median()
                ax.loglog(group[x], values, ".", alpha=0.25, color=colours.get(name))
                ax.loglog(medians.index, medians.to_numpy(), "o-", color=colours.get(name), label=name, ms=3)
            xs = np.array(sorted(panel[x].unique()), dtype=float)
            if part == "estimation":
                first = panel[panel[x] == xs[0]]["test_mse"].median()
                ax.loglog(xs, first * (xs / xs[0]) ** minimax_exponent(s, d), "k--", lw=0.8, label="−2s/(2s+d)")
                cap = relu_estimation_exponent(s, d, depth)
                if cap > minimax_exponent(s, d) + 1e-12:
                    relu_first = panel[(panel[x] == xs[0]) & (panel["activation"] == "relu")]["test_mse"].median()
                    ax.loglog(
                        xs, relu_first * (xs / xs[0]) ** cap, ":", color="tab:red", lw=0.9, label=f"ReLU cap {cap:.2f}"
                    )
            else:
                # Reference slopes from the first N: −s/d (smooth), and the ReLU cap −min(L, s)/d
                # (the paper's L − 1 = our weight layers L).
                first = np.sqrt(panel[panel[x] == xs[0]]["test_mse"]).median()
                ax.loglog(xs, first * (xs / xs[0]) ** (-s / d), "k-.", lw=0.8, label=f"−s/d = {-s / d:.2f}")
                cap = relu_depth_cap_exponent(s, d, depth)
                relu_first = np.sqrt(panel[(panel[x] == xs[0]) & (panel["activation"] == "relu")]["test_mse"]).median()
                if np.isfinite(relu_first):
                    ax.loglog(
                        xs,
                        relu_first * (xs / xs[0]) ** cap,
                        ":",
                        color="tab:red",
                        lw=0.9,
                        label=f"ReLU cap −min(L,s)/d = {cap:.2f}",
                    )
            if part == "approximation" and not floors.empty:
                floor = floors[
                    (floors["d"] == d)
                    & (floors["s"] == s)
                    & (floors["depth"] == depth)
                    & floors["floor_computed"].astype(bool)
                ].sort_values("parameters")
                if not floor.empty:
                    ax.loglog(floor["parameters"], floor["floor_rmse"], "k--", lw=1.0, label="ReLU floor (any weights)")
            ax.set_title(f"d={d}, s={s:g}, {depth} weight layers", fontsize=9)
            ax.set_xlabel(x)
            ax.xaxis.set_minor_formatter(NullFormatter())  # minor labels collide on short ranges
        axes[0][0].set_ylabel(ylabel)
        for ax in axes[0]:  # the reference slopes differ per panel
            ax.legend(fontsize=6)
        fig.suptitle(f"smoothness-rates: {part}", fontsize=10)
        paths.append(save_figure(fig, out_dir / f"{part}.png"))
    return paths
