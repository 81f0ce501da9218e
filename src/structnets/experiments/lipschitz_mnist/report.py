"""Report of ``lipschitz-mnist``: a function of the results table and the config alone."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..attack_check import attack_lines
from ..presets import not_judged_lines, preset_of
from .config import (
    PUBLISHED,
    TARGET_CERTIFIED,
    TARGET_CLEAN,
    TARGET_QUICK,
    TARGET_RADIUS,
    TIMED_BOUNDS,
    LipschitzMNISTConfig,
)


def report(results: pd.DataFrame, config: LipschitzMNISTConfig) -> str:
    preset = preset_of(config)
    quick = preset == "quick"
    lines = [
        "# lipschitz-mnist: certified robustness of 1-Lipschitz ResNets on MNIST",
        "",
        "Murari, Furuya, Schönlieb, *Approximation theory for 1-Lipschitz ResNets*, NeurIPS 2025 "
        f"(arXiv 2505.12003), MNIST experiment, with the training of published 1-Lipschitz networks. Ours: "
        f"{config.epochs} epochs, Adam + cosine (lr {config.lr:g}; {config.fixed_width_lr:g} for fixed-width), "
        f"batch {config.batch_size}, "
        + ("all 60,000 training rows" if config.max_train is None else f"{config.max_train} training rows")
        + (", all 10,000 test rows" if config.max_test is None else f", {config.max_test} test rows")
        + f", seeds {list(config.seeds)}"
        + (
            f" (the judged gradient-step {config.losses[0]}/{config.lifts[0]} configuration: seeds "
            f"{list(dict.fromkeys((*config.seeds, *config.claim_seeds)))}; its rows are means over seeds)"
            if config.claim_seeds
            else ""
        )
        + ". Losses: `scaled-ce` = CE({config.temperature:g}·z) (the old loss), "
        f"`margin-ce` = CE({config.temperature:g}·(z − {config.margin:g}·e_y)), `hinge` = max(0, {config.margin:g} − margin), "
        f"`hkr` = deel-lip's HKR (α {config.hkr_alpha:g}, margin {config.margin:g}). Lifts/heads: `norm-constrained` "
        "V/max(1, B(V)), `orthogonal` the certified polar factor"
        + (", MaxMin after every block" if config.maxmin else "")
        + ". Certified accuracy at ε: correct with margin ≥ √2·L·ε, L = the row's certified upper bound "
        "(for `unconstrained` and `deel-torchlip` their computed bound, > 1). `L lower`: measured "
        f"(Jacobian norms at 256 test points and {config.ascent_steps} ascent steps on ‖f(x)−f(y)‖/‖x−y‖).",
        "",
    ]
    train = results[results["stage"] == "train"] if "stage" in results else results.iloc[0:0]
    radii = [f"certified_{r:g}" for r in config.radii]
    header = (
        "| source | model | loss | lift/head | depth | width | params | epochs | clean | "
        + " | ".join(f"cert@{r:g}" for r in config.radii)
        + " | L lower | L upper | s/epoch |"
    )
    lines += [header, "|" + "---|" * (header.count("|") - 1)]
    if not train.empty:
        for column, default in (("loss", "scaled-ce"), ("lift", "norm-constrained")):
            if column not in train:
                train = train.assign(**{column: default})
        keys = ["model", "loss", "lift", "depth", "width"]
        for (model, loss, lift, depth, width), rows in train.groupby(keys, sort=False):
            cells = [
                "ours", model, loss, lift, str(int(depth)), str(int(width)), str(int(rows["parameters"].iloc[0])),
                str(int(rows["epochs"].iloc[0])) if "epochs" in rows else str(config.epochs),
                f"{100 * rows['accuracy'].mean():.2f}",
                *[f"{100 * rows[c].mean():.2f}" if c in rows else "—" for c in radii],
                f"{rows['lipschitz_lower'].max():.4f}",
                f"{rows['lipschitz_upper'].max():.7g}",
                f"{rows['seconds_per_epoch'].mean():.1f}",
            ]  # fmt: skip
            lines.append("| " + " | ".join(cells) + " |")
    for index, (method, _, clean, certified) in enumerate(PUBLISHED, start=1):
        cells = [f"published [{index}]", method, "—", "—", "—", "—", "—", "—",
                 "—" if clean is None else f"{clean:.2f}"]  # fmt: skip
        cells += [f"{certified:.2f}" if abs(r - TARGET_RADIUS) < 1e-9 else "—" for r in config.radii]
        cells += ["not re-run", "1 (by design)", "—"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [""] + [f"[{i}] {method}: {source}." for i, (method, source, _, _) in enumerate(PUBLISHED, start=1)]
    lines.append("")
    if "deel-torchlip" in config.models and not train.empty and not (train["model"] == "deel-torchlip").any():
        lines += [
            "deel-torchlip row skipped: no `deel-torchlip` results (its units run only where the optional "
            "package `deel-torchlip` is installed).",
            "",
        ]
    lines += attack_lines(train, config.radii)
    if preset is None:  # another protocol than the presets': no preset's target is judged on it
        lines += not_judged_lines()
    else:
        lines += _target_lines(train, config, quick)
    timing = results[results["stage"] == "timing"] if "stage" in results else results.iloc[0:0]
    if not timing.empty:
        lines += [
            "## Constraint cost: one training step, constrained / unconstrained (median [q1, q3] of interleaved pairs)",
            "",
            "| depth | width | batch | exact bound every step | power estimate (certified at eval) | goal |",
            "|---|---|---|---|---|---|",
        ]
        for _, row in timing.iterrows():
            lines.append(
                f"| {int(row['depth'])} | {int(row['width'])} | {int(row['batch'])} | "
                + "".join(f"{_ratio_cell(row, mode.replace('-', '_'))} | " for mode in TIMED_BOUNDS)
                + "≤ 1.3× |"
            )
        lines.append("")
    lines += _constraint_cost_lines(results)
    return "\n".join(lines)


def _constraint_cost_lines(results: pd.DataFrame) -> list[str]:
    """The constraint-cost unit: fixed-width over gradient-step step time per depth, and the extra time per block."""
    import json

    from ...analysis.cost_growth import cost_growth

    cost = results[results["stage"] == "constraint-cost"] if "stage" in results else results.iloc[0:0]
    if cost.empty:
        return []
    row = cost.iloc[0]
    depths = json.loads(row["cost_depths"])
    fixed, plain = (
        np.asarray(json.loads(row[c]), float) for c in ("step_seconds_fixed_width", "step_seconds_gradient_step")
    )
    decided = cost_growth(fixed, plain, depths)
    lines = [
        f"## Constraint cost in depth: fixed-width (affine maps between the blocks) / gradient-step, one training step "
        f"(width {int(row['width'])}, batch {int(row['batch'])}, lift {row['lift']}, bound {row['bound']}; "
        f"{int(row['rounds'])} interleaved rounds; {row['device']}, {int(row['threads'])} torch thread(s), "
        f"{row['processor']}; other processes' CPU share {float(row['other_load']):.2f})",
        "",
        "| depth | fixed-width step (s, median) | gradient-step step (s, median) | ratio, median [95 % interval] |",
        "|---|---|---|---|",
    ]
    for k, depth in enumerate(depths):
        lines.append(
            f"| {depth} | {np.median(fixed[:, k]):.4g} | {np.median(plain[:, k]):.4g} | {decided.ratio[k]:.3f} "
            f"[{decided.ratio_low[k]:.3f}, {decided.ratio_high[k]:.3f}] |"
        )
    lines += [
        "",
        f"Extra seconds per step per added block (per-round least-squares slope of fixed-width − gradient-step in "
        f"depth, median over rounds [95 % order-statistic interval]): {decided.slope:.4g} "
        f"[{decided.slope_low:.4g}, {decided.slope_high:.4g}]; `claims.rules.cost_growth`: {decided.verdict}.",
        "",
    ]
    return lines


def _target_lines(train: pd.DataFrame, config: LipschitzMNISTConfig, quick: bool) -> list[str]:
    """The certified-accuracy target at ε = 1.58, met or missed by how much, for the best certified model."""
    column = f"certified_{TARGET_RADIUS:g}"
    if train.empty or column not in train:
        return []
    certified = train[(train["model"] != "unconstrained") & (train["model"] != "deel-torchlip")]
    certified = certified[certified["lipschitz_upper"] <= 1.0]
    if certified.empty:
        return ["No model certified ≤ 1 yet.", ""]
    best = certified.loc[certified[column].idxmax()]
    name = f"{best['model']}/{best.get('loss', 'scaled-ce')}/{best.get('lift', 'norm-constrained')}, depth {best['depth']}, width {best['width']}"
    cert, clean = 100 * best[column], 100 * best["accuracy"]
    if quick:
        goal = 100 * TARGET_QUICK
        verdict = "met" if cert >= goal else f"missed by {goal - cert:.2f} points"
        return [f"Target (quick preset): ≥ {goal:.0f}% certified at ε = {TARGET_RADIUS:g}. Best certified model "
                f"({name}): {cert:.2f}% (clean {clean:.2f}%, L ≤ {best['lipschitz_upper']:.7g}): **{verdict}**.", ""]  # fmt: skip
    goal, goal_clean = 100 * TARGET_CERTIFIED, 100 * TARGET_CLEAN
    misses = [f"certified by {goal - cert:.2f} points"] if cert < goal else []
    misses += [f"clean by {goal_clean - clean:.2f} points"] if clean < goal_clean else []
    verdict = "met" if not misses else "missed: " + ", ".join(misses)
    return [f"Target (full preset): ≥ {goal:.0f}% certified at ε = {TARGET_RADIUS:g} with clean ≥ {goal_clean:.0f}% "
            f"and certificate ≤ 1. Best certified model ({name}): {cert:.2f}% certified, {clean:.2f}% clean, "
            f"L ≤ {best['lipschitz_upper']:.7g}: **{verdict}** (best published: GloRo 62.8%).", ""]  # fmt: skip


def _ratio_cell(row: Any, key: str) -> str:
    if f"ratio_{key}" not in row or pd.isna(row[f"ratio_{key}"]):
        return "not measured"
    return f"{row[f'ratio_{key}']:.2f}× [{row[f'ratio_{key}_q1']:.2f}, {row[f'ratio_{key}_q3']:.2f}]"


__all__ = ["report"]
