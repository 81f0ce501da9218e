"""Report of ``lipschitz-density``: a function of the results table and the config alone."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from .config import LipschitzDensityConfig


def report(results: pd.DataFrame, config: LipschitzDensityConfig) -> str:
    lines = [
        "# lipschitz-density: fixed-width 1-Lipschitz ResNets against depth",
        "",
        "Murari, Furuya, Schönlieb, *Approximation theory for 1-Lipschitz ResNets*, NeurIPS 2025 "
        "(arXiv 2505.12003): Theorem 4.1 (width d + 3 with norm-constrained affine maps between "
        "blocks is dense in the scalar 1-Lipschitz functions as depth grows) and the exact max-min "
        "representation of piecewise-affine 1-Lipschitz functions. The paper states no rate and no "
        "numbers for this; ours are measurements.",
        "",
        f"Targets on [−1, 1]ᵈ, generator seed {config.target_seed}: 1-D interpolants with K pieces, "
        f"slopes U[−1, 1]; 2-D max of G mins of {config.group_size_2d} pieces, ‖a‖₂ ≤ 1. `exact`: "
        "`maxmin_network` (float64), depth = MaxMin levels, width = its widest layer, `L upper` = its "
        "layer-wise certificate s; `seq. depth` = blocks of a sequential max-min evaluation at width "
        "d + 3 (one min per piece after the first of its group, one max per group after the first: "
        "pieces − 1), counted, not built. `trained`: "
        '`lipschitz_resnet(d, 1, None, L, variant="fixed-width")`, width d + 3, full-batch Adam '
        f"{config.steps} steps, lr {config.lr:g} cosine, initial step s = {config.step:g}, {config.train_per_axis_1d} / {config.train_per_axis_2d}² training "
        "grid points (1-D / 2-D), "
        f"best / median of seeds {list(config.seeds)}. Errors on a grid of "
        f"{config.eval_per_axis_1d} (1-D) / {config.eval_per_axis_2d}² (2-D) points. `L upper`: "
        "`lipschitz_upper_bound` in eval mode (largest over seeds); `L meas.`: largest secant "
        "ratio of the model's outputs on the grid (2-D: a ≤ 33² subgrid).",
        "",
    ]
    if results.empty:
        return "\n".join(lines + ["(no results yet)"])
    header = (
        "| target | model | depth | width | params | sup error | RMSE | median sup | median RMSE "
        "| L upper | L meas. | target L meas. | seq. depth | time (s) |"
    )
    lines += [header, "|" + "---|" * (header.count("|") - 1)]
    ordered = results.sort_values(["dim", "target_pieces", "target", "model", "depth"], kind="stable")
    for _, r in ordered.iterrows():
        seq = r.get("sequential_depth")
        cells = [
            r["target"], r["model"], str(int(r["depth"])), str(int(r["width"])), str(int(r["parameters"])),
            f"{r['sup_error']:.3g}", f"{r['rmse']:.3g}", f"{r['sup_error_median']:.3g}", f"{r['rmse_median']:.3g}",
            f"{r['lipschitz_upper']:.6g}", f"{r['lipschitz_measured']:.6f}", f"{r['target_lipschitz_measured']:.6f}",
            "" if seq is None or (isinstance(seq, float) and math.isnan(seq)) else str(int(seq)),
            f"{r['seconds']:.2f}",
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Summary per target (exact depth against what training reaches):", ""]
    header = (
        f"| target | exact depth (levels) | exact width | exact sup error | exact L upper | seq. depth "
        f"| best trained sup error (depth) | smallest depth with sup ≤ {config.tolerance:g} "
        "| slope of log sup vs log depth | slope of log RMSE vs log depth |"
    )
    lines += [header, "|" + "---|" * (header.count("|") - 1)]
    order = results.sort_values(["dim", "target_pieces", "target"], kind="stable")["target"].unique()
    for name in order:
        rows = results[results["target"] == name]
        exact = rows[rows["model"] == "exact"]
        trained = rows[rows["model"] == "trained"].sort_values("depth")
        e = exact.iloc[0] if not exact.empty else None
        slopes = ["", ""]
        if trained["depth"].nunique() >= 2:
            logs = np.log(trained["depth"].to_numpy(dtype=float))
            slopes = [
                f"{np.polyfit(logs, np.log(trained[c].to_numpy(dtype=float)), 1)[0]:.2f}" for c in ("sup_error", "rmse")
            ]
        if trained.empty:
            best, reached = "", ""
        else:
            b = trained.loc[trained["sup_error"].idxmin()]
            best = f"{b['sup_error']:.3g} ({int(b['depth'])})"
            ok = trained[trained["sup_error"] <= config.tolerance]
            reached = str(int(ok["depth"].min())) if not ok.empty else f"none ≤ {int(trained['depth'].max())}"
        lines.append(
            "| " + " | ".join([
                str(name),
                "" if e is None else str(int(e["depth"])),
                "" if e is None else str(int(e["width"])),
                "" if e is None else f"{e['sup_error']:.2g}",
                "" if e is None else f"{e['lipschitz_upper']:.4g}",
                "" if e is None else str(int(e["sequential_depth"])),
                best,
                reached,
                *slopes,
            ]) + " |"
        )  # fmt: skip
    lines += _unbounded_section(results, config)
    trained = results[results["model"] == "trained"]
    if not trained.empty:
        lines += [
            "",
            f"Every trained model certified: largest `L upper` {trained['lipschitz_upper'].max():.6g} "
            f"({'≤ 1' if (trained['lipschitz_upper'] <= 1 + 1e-12).all() else 'NOT ≤ 1'}); largest measured "
            f"secant ratio {trained['lipschitz_measured'].max():.6f}.",
        ]
    exact = results[results["model"] == "exact"]
    if not exact.empty:
        lines += [
            f"Exact construction: largest sup error {exact['sup_error'].max():.3g}; layer-wise certificate "
            f"s from {exact['lipschitz_upper'].min():.4g} to {exact['lipschitz_upper'].max():.4g} (its head "
            f"scales by s = max(1, ‖A‖₂)); measured secant ratio ≤ {exact['lipschitz_measured'].max():.6f}.",
        ]
        if "lipschitz_lattice" in exact and exact["lipschitz_lattice"].notna().all():
            lattice = exact["lipschitz_lattice"].astype(float)
            lines += [
                f"Lattice certificate of the function each exact network computes (max ‖a‖₂ over its pieces, "
                f"rounded up; max and min keep a Lipschitz constant): largest {lattice.max():.6g} "
                f"({'≤ 1' if (lattice <= 1.0).all() else 'NOT ≤ 1'}).",
            ]
    lines.append("")
    return "\n".join(lines)


def _unbounded_section(results: pd.DataFrame, config: LipschitzDensityConfig) -> list[str]:
    """Theorem 3.1 (width and depth grow together): the median sup error over seeds per (width, depth)."""
    family = results[results["model"] == "gradient-step"]
    if family.empty:
        return []
    pairs = sorted({(int(w), int(d)) for w, d in zip(family["width"], family["depth"])})
    lines = [
        "",
        "Theorem 3.1 (`gradient-step`: lift, gradient-step blocks, head, no maps between the blocks; width and depth "
        f"grow together; seeds {list(config.unbounded_seeds)}, trained as above): median sup error over seeds "
        "(min–max), per (width, depth):",
        "",
        "| target | " + " | ".join(f"({w}, {d})" for w, d in pairs) + " |",
        "|---|" + "---|" * len(pairs),
    ]
    order = family.sort_values(["dim", "target_pieces", "target"], kind="stable")["target"].unique()
    for name in order:
        rows = family[family["target"] == name]
        cells = []
        for w, d in pairs:
            row = rows[(rows["width"] == w) & (rows["depth"] == d)]
            if row.empty:
                cells.append("")
                continue
            r = row.iloc[0]
            spread = ""
            if "sup_errors" in r and isinstance(r["sup_errors"], str):
                values = json.loads(r["sup_errors"])
                spread = f" ({min(values):.2g}–{max(values):.2g})"
            cells.append(f"{r['sup_error_median']:.3g}{spread}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    certified = bool((family["lipschitz_upper"] <= 1 + 1e-12).all())
    lines += [
        "",
        f"Every gradient-step model certified: largest `L upper` {family['lipschitz_upper'].max():.6g} "
        f"({'≤ 1' if certified else 'NOT ≤ 1'}).",
    ]
    return lines


__all__ = ["report"]
