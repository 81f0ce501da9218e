"""The empirical check of a certified MNIST unit: its test rows attacked, the columns and the report table.

Certified accuracy is a lower bound of the robust accuracy; accuracy under an attack
(:func:`structnets.analysis.pgd_l2`) an upper one, and a certified point the attack breaks is a
wrong certificate. ``lipschitz-mnist`` and ``lipschitz-mnist-conv`` attack the first
``attack_points`` test rows of every trained network through :func:`structnets.analysis.certify`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..analysis.certify import certify


def attack_params(config: Any) -> dict[str, int]:
    """The attack's unit params (none when ``attack_points`` is 0, so that such units keep their earlier keys)."""
    if not config.attack_points:
        return {}
    return {
        "attack_points": config.attack_points,
        "attack_steps": config.attack_steps,
        "attack_targets": config.attack_targets,
    }


def attack_options(params: Mapping[str, Any]) -> dict[str, int]:
    """``certify``'s attack keywords from a unit's params (a unit without them is not attacked)."""
    return {
        "attack_points": int(params.get("attack_points", 0)),
        "attack_steps": int(params.get("attack_steps", 50)),
        "attack_targets": int(params.get("attack_targets", 2)),
    }


def certify_unit(model: Any, X_test: Any, y_test: Any, radii: list[float], params: Mapping[str, Any]) -> dict[str, Any]:
    """``certify`` with the unit's ascent steps and attack."""
    attack = attack_options(params)
    return certify(
        model, X_test, y_test, radii, ascent_steps=int(params["ascent_steps"]),
        attack_points=attack["attack_points"], attack_steps=attack["attack_steps"],
        attack_targets=attack["attack_targets"],
    )  # fmt: skip


def attack_lines(results: pd.DataFrame, radii: tuple[float, ...]) -> list[str]:
    """The empirical check of the certificates: accuracy under ℓ₂ PGD beside certified accuracy, same rows.

    Certified accuracy is a lower bound of the robust accuracy and accuracy under an attack an upper
    one; a certified point the attack breaks is a counterexample to the certificate and is named
    in bold. Rows of units run without the attack (older runs, ``attack_points`` 0) are left out.
    """
    if results.empty or "attack_points" not in results:
        return []
    attacked = results[results["attack_points"].notna() & (results["attack_points"] > 0)]
    if attacked.empty:
        return []
    header = ["unit", "rows attacked"] + [f"{r:g}: certified % / PGD % / broken" for r in radii]
    lines = [
        "Empirical check: ℓ₂ PGD on the margin (Madry et al. 2018; one untargeted and targeted runs against the "
        "highest-scoring other classes, step 2.5ε/steps, no clipping to [0, 1]: a certificate covers the whole "
        "ball) on the first test rows. Certified ≤ robust ≤ accuracy under attack; a certified point the attack "
        "breaks would be a wrong certificate.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    broken_total = 0
    order = [c for c in ("model", "seed", "key") if c in attacked.columns]
    for _, row in attacked.sort_values(order).iterrows():
        label = row["key"] if "key" in attacked.columns else f"{row['model']} (seed {int(row['seed'])})"
        cells = [f"{label}", f"{int(row['attack_points'])}"]
        for r in radii:
            broken = int(row[f"attack_broken_{r:g}"])
            broken_total += broken
            mark = f"**{broken}**" if broken else "0"
            cells.append(f"{100 * row[f'attack_certified_{r:g}']:.1f} / {100 * row[f'pgd_{r:g}']:.1f} / {mark}")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    if broken_total:
        lines += [f"**{broken_total} certified point(s) broken by the attack: a certificate is wrong.**", ""]
    else:
        lines += ["No certified point was broken by the attack.", ""]
    return lines


def attack_counts(rows: pd.DataFrame) -> tuple[int, int]:
    """Certified points the run's attack broke (all radii) and rows attacked (summed over models)."""
    if "attack_points" not in rows.columns:
        return 0, 0
    attacked = rows[rows["attack_points"].fillna(0) > 0]
    broken = sum(int(attacked[c].fillna(0).sum()) for c in attacked.columns if c.startswith("attack_broken_"))
    return broken, int(attacked["attack_points"].sum()) if not attacked.empty else 0


__all__ = ["attack_counts", "attack_lines", "attack_options", "attack_params", "certify_unit"]
