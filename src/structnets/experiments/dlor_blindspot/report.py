"""Report of ``dlor-blindspot``: Markdown computed from the results table (and the run's config) only."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from .config import DLoRBlindspotConfig
from .targets import MODELS


def stage_rows(results: pd.DataFrame, stage: str) -> pd.DataFrame:
    if results.empty or "stage" not in results:
        return results.iloc[0:0]
    return results[results["stage"] == stage]


def report_markdown(results: pd.DataFrame, config: DLoRBlindspotConfig) -> str:
    floor_rows, interp, train = (
        stage_rows(results, "floor"),
        stage_rows(results, "interpolate"),
        stage_rows(results, "train"),
    )
    floor = float(floor_rows["floor_mse"].iloc[0]) if not floor_rows.empty else math.nan
    lines = [
        "# dlor-blindspot: the rank-1 paradox and how αI cures it",
        "",
        "Chen et al. (arXiv 2605.05659): purely rank-1 networks interpolate any scalar data set exactly, "
        "yet are blind to every direction orthogonal to their first projection v, so they cannot "
        "approximate general multivariate functions; DLoR layers αI + UVᵀ of the same rank can. "
        "Target f(x) = x₁x₂ on [−1, 1]² (variance 1/9 ≈ 0.111), test grid "
        f"{config.test_per_axis}², σ = {config.activation}.",
        "",
    ]
    if not floor_rows.empty:
        lines += [
            f"Blind-spot floor (best function of one projection vᵀx, binned estimate): **{floor:.4f}** "
            f"at θ = {math.degrees(float(floor_rows['floor_theta'].iloc[0])):.0f}°. No network with a rank-1 first "
            "layer can go below it.",
            "",
        ]
    if not interp.empty:
        lines += [
            "## Exact interpolation by rank-1 networks (`rank_one_interpolant`, ReLU, width n)",
            "",
            "| n | max error, scalar inputs | max error, 2-D inputs | test MSE of the 2-D interpolant |",
            "|---|---|---|---|",
        ]
        for _, r in interp.sort_values("n").iterrows():
            lines.append(
                f"| {int(r['n'])} | {r['max_error_scalar_inputs']:.1e} | {r['max_error_2d_inputs']:.1e} | "
                f"{r['test_mse_2d']:.4f} |"
            )
        lines.append("")
    if not train.empty:
        lines += [
            f"## Trained networks, depth {config.depth}, {len(config.seeds)} seeds, {config.epochs} epochs",
            "",
            "| width | rank-1 params | rank-1 test MSE median [min, max] | rank-1 max change along v⊥ | "
            "DLoR (r = 1) params | DLoR test MSE median [min, max] | DLoR below floor |",
            "|---|---|---|---|---|---|---|",
        ]
        for width in config.widths:
            cells = [str(width)]
            below = "—"
            for model in MODELS:
                rows = train[(train["model"] == model) & (train["width"] == width)]
                if rows.empty:
                    cells += ["not run"] * (3 if model == "rank1" else 2)
                    continue
                r = rows.iloc[0]
                cells += [
                    str(int(r["parameters"])),
                    f"{r['median_test_mse']:.2e} [{r['min_test_mse']:.2e}, {r['max_test_mse']:.2e}]",
                ]
                if model == "rank1":
                    cells.append(f"{r['max_orthogonal_change']:.1e}")
                elif np.isfinite(floor):
                    below = "yes" if r["median_test_mse"] < floor else "no"
            lines.append("| " + " | ".join(cells + [below]) + " |")
        lines.append("")
    spectra = train[train["model"] == "dlor"] if not train.empty and "separation_trained" in train else train.iloc[0:0]
    spectra = spectra[spectra["separation_trained"].notna()] if not spectra.empty else spectra
    if not spectra.empty:
        lines += [
            "## σ₁/|α| of the DLoR maps, at initialisation and after training (median over seeds and maps)",
            "",
            "αI + UVᵀ acts as αI outside span(U, V): N − 2r singular values equal |α| (the background) and σ₁ ≥ |α|; "
            "how far σ₁ stands above |α| is what the low-rank part carries.",
            "",
            "| width | initialisation | trained | trained maps with the N − 2r background |",
            "|---|---|---|---|",
        ]
        for _, r in spectra.sort_values("width").iterrows():
            before = np.concatenate([np.asarray(m, float) for m in json.loads(r["separation_init"])])
            after = np.concatenate([np.asarray(m, float) for m in json.loads(r["separation_trained"])])
            lines.append(
                f"| {int(r['width'])} | {float(np.median(before)):.2f} | {float(np.median(after)):.2f} | "
                f"{int(r['background_maps'])} of {after.size} |"
            )
        lines.append("")
    decompose = stage_rows(results, "decompose")
    if not decompose.empty:
        lines += _decompose_section(decompose)
    return "\n".join(lines)


def _decompose_section(decompose: pd.DataFrame) -> list[str]:
    """Theorems 3–4 (the ``decompose`` stage): worst error over its threshold per (N, kind)."""
    from .decompose import TEST_RATIO

    lines = [
        "## Theorems 3–4: every dense matrix is a sum and a product of DLoR matrices (`dlor_sum`, `dlor_product`)",
        "",
        f"Error of the stored factors' float64 sum / product over its rounding threshold (≤ 1: exact to rounding): "
        f"additive ‖ΣM_k − W‖_F against N·ε·({TEST_RATIO:g}‖W‖_F + √(N − ρ)·σ₁(W − τI)); multiplicative, column by "
        f"column (or row by row), against {TEST_RATIO:g}·N·ε·‖We_j‖₂. Worst over the ranks tried.",
        "",
        "| N | matrix | ranks | sum: terms | sum: error / threshold | product: factors | product: error / threshold |",
        "|---|---|---|---|---|---|---|",
    ]
    for (size, kind), group in decompose.groupby(["size", "kind"], sort=True):
        ranks = ", ".join(str(int(r)) for r in sorted(group["rank"]))
        lines.append(
            f"| {int(size)} | {kind} | {ranks} | {int(group['sum_terms'].min())}–{int(group['sum_terms'].max())} | "
            f"{float(group['sum_ratio'].max()):.3g} | {int(group['product_factors'].min())}–"
            f"{int(group['product_factors'].max())} | {float(group['product_ratio'].max()):.3g} |"
        )
    worst = max(float(decompose["sum_ratio"].max()), float(decompose["product_ratio"].max()))
    lines += [
        "",
        f"Largest error / threshold over {len(decompose)} decompositions: **{worst:.3g}** "
        f"({'exact to rounding everywhere' if worst <= 1 else 'NOT within rounding somewhere'}).",
        "",
    ]
    return lines
