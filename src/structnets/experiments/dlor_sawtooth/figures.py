"""Figures of ``dlor-sawtooth``, drawn from the results table only: training curves, fits,
spectra of trained deep layers, and the h → 0 convergence."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from ...protocol import save_figure
from .config import CORRESPONDENCE_MODES, DLoRSawtoothConfig, parse_target
from .stats import stage_rows


def draw_figures(results: pd.DataFrame, config: DLoRSawtoothConfig, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    train, corr = stage_rows(results, "train"), stage_rows(results, "correspondence")
    paths: list[Path] = []
    colours = {"deep": "tab:blue", "parallel": "tab:orange", "summed": "tab:green", "wide": "tab:green"}
    budget = max(config.budgets)

    if not train.empty:
        targets = [t for t in config.targets if not train[train["target"] == t].empty]
        fig, axes = plt.subplots(1, len(targets), figsize=(4.2 * len(targets), 3.4), squeeze=False)
        for ax, target in zip(axes[0], targets):
            rows = train[(train["target"] == target) & (train["budget"] == budget)]
            for _, row in rows.iterrows():
                mode = row["mode"]
                curve = json.loads(row["curve"])
                epochs, values = np.asarray(curve["epochs"]), np.asarray(curve["test_mse"], dtype=float)
                ax.plot(
                    epochs,
                    np.median(values, axis=1),
                    color=colours.get(mode, "gray"),
                    label=f"{mode} ({int(row['parameters'])} params)",
                )
                ax.fill_between(
                    epochs, values.min(axis=1), values.max(axis=1), color=colours.get(mode, "gray"), alpha=0.15
                )
            ax.axhline(config.threshold, color="gray", ls="--", lw=0.8)
            ax.set_yscale("log")
            ax.set_xlabel("epoch")
            ax.set_ylabel("test MSE (median, min–max over seeds)")
            ax.set_title(f"{target}, budget {budget}", fontsize=10)
            ax.legend(fontsize=8)
        paths.append(save_figure(fig, out_dir / "training_curves.png"))

        one_d = [t for t in targets if parse_target(t)[0] == 1]
        if one_d:
            from ...data import sawtooth

            fig, axes = plt.subplots(1, len(one_d), figsize=(4.2 * len(one_d), 3.0), squeeze=False)
            for ax, target in zip(axes[0], one_d):
                grid = np.linspace(0, 1, 513)
                ax.plot(grid, sawtooth(grid[:, None], parse_target(target)[1]), color="black", lw=1, label="target")
                rows = train[(train["target"] == target) & (train["budget"] == budget)]
                for _, row in rows.iterrows():
                    if row["prediction"] in (None, "null"):
                        continue
                    prediction = json.loads(row["prediction"])
                    ax.plot(
                        prediction["x"],
                        prediction["y"],
                        color=colours.get(row["mode"], "gray"),
                        lw=1.2,
                        ls="--",
                        label=f"{row['mode']}, seed 0",
                    )
                ax.set_title(f"{target}: fits after {budget} epochs", fontsize=10)
                ax.legend(fontsize=8)
            paths.append(save_figure(fig, out_dir / "fits.png"))

        fig, axes = plt.subplots(1, len(targets), figsize=(4.2 * len(targets), 3.4), squeeze=False)
        for ax, target in zip(axes[0], targets):
            rows = train[(train["target"] == target) & (train["mode"] == "deep") & (train["budget"] == budget)]
            if rows.empty:
                continue
            spectra = json.loads(rows["spectra"].iloc[0])
            for layer, spectrum in enumerate(spectra):
                s = np.asarray(spectrum["singular_values"])
                ax.scatter(np.full(len(s), layer + 1), s, s=10, color="tab:blue", alpha=0.7)
                ax.scatter([layer + 1], [abs(spectrum["alpha"])], marker="_", s=200, color="tab:red")
            ax.set_yscale("log")
            ax.set_xlabel("deep layer")
            ax.set_ylabel("singular values of αI + UVᵀ")
            ax.set_title(f"{target}: red = |α| (background)", fontsize=10)
        paths.append(save_figure(fig, out_dir / "spectra.png"))

    if not corr.empty:
        targets = [t for t in config.targets if not corr[corr["target"] == t].empty]
        fig, axes = plt.subplots(2, len(targets), figsize=(4.2 * len(targets), 6.2), squeeze=False)
        for column, target in enumerate(targets):
            rows = corr[corr["target"] == target]
            curves = [json.loads(c) for c in rows["curves"]]
            for mode in [m for m in CORRESPONDENCE_MODES if m in curves[0]]:
                h = np.asarray(curves[0][mode]["h"])
                sup = np.mean([c[mode]["sup_error"] for c in curves], axis=0)
                mse = np.mean([c[mode]["test_mse"] for c in curves], axis=0)
                axes[0, column].loglog(h, np.maximum(sup, 1e-17), marker="o", color=colours[mode], label=mode)
                axes[1, column].loglog(h, mse, marker="o", color=colours[mode], label=mode)
            axes[1, column].axhline(rows["dense_test_mse"].mean(), color="black", ls="--", lw=0.8, label="dense MLP")
            axes[0, column].set_title(f"{target}: sup |DLoR − MLP|", fontsize=10)
            axes[1, column].set_title(f"{target}: test MSE", fontsize=10)
            for ax in axes[:, column]:
                ax.set_xlabel("h")
                ax.invert_xaxis()
                ax.legend(fontsize=8)
        paths.append(save_figure(fig, out_dir / "h_convergence.png"))
    return paths
