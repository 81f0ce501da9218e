"""Figure of ``lipschitz-mnist-conv``: certified accuracy against the radius, from the results table alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...protocol import save_figure
from .config import PUBLISHED, TARGET_RADIUS, LipschitzMNISTConvConfig


def figures(results: pd.DataFrame, config: LipschitzMNISTConvConfig, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if results.empty:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    radii = [0.0, *config.radii]
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for _, row in results.iterrows():
        values = [row["accuracy"], *[row[f"certified_{r:g}"] for r in config.radii]]
        ax.plot(radii, 100 * np.asarray(values, float), marker="o", label=f"{row['model']} (seed {int(row['seed'])})")
    for (method, _, _, certified), marker in zip(PUBLISHED[:2], "*P"):
        ax.scatter([TARGET_RADIUS], [certified], marker=marker, s=50, color="black", label=f"{method} (published)")
    ax.set_xlabel("ℓ₂ radius ε")
    ax.set_ylabel("certified accuracy (%)")
    ax.set_title("Convolutional 1-Lipschitz ResNets on MNIST", fontsize=10)
    ax.legend(fontsize=6)
    return [save_figure(fig, out_dir / "mnist_conv.png")]


__all__ = ["figures"]
