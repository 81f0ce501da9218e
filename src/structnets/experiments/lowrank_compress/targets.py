"""The two targets of the ``lowrank-compress`` curves (issue 27), decided from the result rows alone.

(i) Calibrated (whitened) SVD is at least as accurate as plain SVD at every budget: per cell
(architecture, budget, fine-tune steps), the paired differences d_s = acc_calibrated − acc_svd
over the seeds s; the cell *holds* when the one-sided (1 − α) lower confidence bound of the mean,
d̄ − t_{1−α, n−1}·s_d/√n, is above −0.75 accuracy points (non-inferiority, the project's "not
worse" margin); it *fails* when the upper bound at the Bonferroni level α/m (m cells),
d̄ + t_{1−α/m, n−1}·s_d/√n, is below −0.75 points (worse beyond the margin somewhere).

(ii) At half the FLOPs without fine-tuning, within 1 point of the uncompressed accuracy on every
model: per architecture, d_s = acc_calibrated(flops = 1/2, 0 steps) − acc_dense; holds when the
one-sided lower bound is above −1 point, fails when the Bonferroni upper bound (over the
architectures) is below −1 point. The judged method (calibrated) is fixed before the run; the
other methods are shown beside it.

The seeds share MNIST's official split, so their differences are independent draws of training
randomness on one test set: the plain paired t (n − 1 degrees of freedom) applies, without the
Nadeau–Bengio term of cross-validation folds. A verdict: every cell holds with ≥ 5 seeds
(:data:`structnets.claims.rules.MIN_SEEDS`) reproduced; some cell fails refuted; else not reproduced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

ALPHA = 0.05
MARGIN_CALIBRATED = 0.0075
"""Non-inferiority margin of target (i): 0.75 accuracy points (the claims' "not worse" margin)."""
MARGIN_DENSE = 0.01
"""Target (ii): within 1 accuracy point of the uncompressed net."""
HALF = 0.5
JUDGED_METHOD = "calibrated"
MIN_SEEDS = 5
"""As :data:`structnets.claims.rules.MIN_SEEDS`: the fewest seeds a trained-network target is decided on."""

HOLDS, FAILS, UNDECIDED = "holds", "fails", "undecided"


@dataclass(frozen=True)
class Cell:
    """One paired comparison: ``a − b`` accuracy (fractions) over ``pairs`` seeds, its bounds and outcome."""

    architecture: str
    budget: float
    steps: int
    pairs: int
    mean: float
    std: float
    lower: float
    upper: float
    outcome: str
    keys: tuple[str, ...] = ()


def curve_rows(results: pd.DataFrame) -> pd.DataFrame:
    """The curve rows of a results table (``stage == "curve"``), or an empty frame."""
    if results.empty or "stage" not in results.columns:
        return results.iloc[0:0]
    return results[results["stage"] == "curve"]


def paired_bounds(differences: np.ndarray, alpha: float, alpha_upper: float) -> tuple[float, float, float, float]:
    """(mean, sd, lower, upper): one-sided (1 − alpha) lower and (1 − alpha_upper) upper t bounds of the mean.

    lower = d̄ − t_{1−alpha, n−1}·s/√n, upper = d̄ + t_{1−alpha_upper, n−1}·s/√n; nan bounds with fewer than 2 pairs.
    """
    d = np.asarray(differences, dtype=float)
    n = d.size
    if n == 0:
        return math.nan, math.nan, math.nan, math.nan
    mean = float(d.mean())
    if n < 2:
        return mean, math.nan, math.nan, math.nan
    sd = float(d.std(ddof=1))
    se = sd / math.sqrt(n)
    return (mean, sd, mean - float(stats.t.ppf(1 - alpha, n - 1)) * se,
            mean + float(stats.t.ppf(1 - alpha_upper, n - 1)) * se)  # fmt: skip


def _outcome(lower: float, upper: float, margin: float) -> str:
    if math.isfinite(lower) and lower > -margin:
        return HOLDS
    if math.isfinite(upper) and upper < -margin:
        return FAILS
    return UNDECIDED


def _pairs(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    columns = ["seed", "accuracy", *(["key"] if "key" in a.columns and "key" in b.columns else [])]
    return a[columns].merge(b[columns], on="seed", suffixes=("_a", "_b")).sort_values("seed")


def _keys(merged: pd.DataFrame) -> tuple[str, ...]:
    if "key_a" not in merged.columns:
        return ()
    return tuple(dict.fromkeys([*map(str, merged["key_a"]), *map(str, merged["key_b"])]))


def calibrated_vs_svd(results: pd.DataFrame) -> list[Cell]:
    """Target (i): one :class:`Cell` (calibrated − svd) per (architecture, budget, steps) with both methods."""
    rows = curve_rows(results)
    if rows.empty:
        return []
    plan = []
    for (architecture, budget, steps), part in rows[rows["method"] != "dense"].groupby(
        ["architecture", "budget", "finetune_steps"], sort=False
    ):
        cal, svd = part[part["method"] == "calibrated"], part[part["method"] == "svd"]
        if not cal.empty and not svd.empty:
            plan.append((str(architecture), float(budget), int(steps), _pairs(cal, svd)))
    level = ALPHA / max(1, len(plan))
    cells = []
    for architecture, budget, steps, merged in plan:
        d = (merged["accuracy_a"] - merged["accuracy_b"]).to_numpy(float)
        mean, sd, lower, upper = paired_bounds(d, ALPHA, level)
        cells.append(Cell(architecture, budget, steps, len(d), mean, sd, lower, upper,
                          _outcome(lower, upper, MARGIN_CALIBRATED), _keys(merged)))  # fmt: skip
    return cells


def half_flops(results: pd.DataFrame, method: str = JUDGED_METHOD) -> list[Cell]:
    """Target (ii): one :class:`Cell` (``method`` at flops = 1/2, 0 steps − dense) per architecture."""
    rows = curve_rows(results)
    if rows.empty:
        return []
    plan = []
    for architecture in dict.fromkeys(rows["architecture"]):
        part = rows[rows["architecture"] == architecture]
        dense = part[part["method"] == "dense"]
        at = part[(part["method"] == method) & np.isclose(part["budget"].astype(float).fillna(-1.0), HALF)
                  & (part["finetune_steps"] == 0)]  # fmt: skip
        if not dense.empty and not at.empty:
            plan.append((str(architecture), _pairs(at, dense)))
    level = ALPHA / max(1, len(plan))
    cells = []
    for architecture, merged in plan:
        d = (merged["accuracy_a"] - merged["accuracy_b"]).to_numpy(float)
        mean, sd, lower, upper = paired_bounds(d, ALPHA, level)
        cells.append(Cell(architecture, HALF, 0, len(d), mean, sd, lower, upper,
                          _outcome(lower, upper, MARGIN_DENSE), _keys(merged)))  # fmt: skip
    return cells


# The claims table's verdict words (structnets.claims.evidence; a test checks they agree), spelled out
# here because experiments must not import claims (claims reads experiments: no import cycle).
REPRODUCED, REFUTED, NOT_REPRODUCED, NOT_TESTED = "reproduced", "refuted", "not reproduced", "not tested"


def verdict(cells: list[Cell]) -> str:
    """``reproduced`` (every cell holds, ≥ :data:`MIN_SEEDS` pairs each), ``refuted`` (a cell fails),
    ``not reproduced`` (otherwise) or ``not tested`` (no cell)."""
    if not cells:
        return NOT_TESTED
    if any(c.outcome == FAILS for c in cells):
        return REFUTED
    if all(c.outcome == HOLDS for c in cells) and min(c.pairs for c in cells) >= MIN_SEEDS:
        return REPRODUCED
    return NOT_REPRODUCED


def rule_text(target: str) -> str:
    """The test of target ``"calibrated"`` (i) or ``"half"`` (ii), in words, for the report and the claims."""
    if target == "calibrated":
        return (
            "per (architecture, budget, fine-tune steps), paired over seeds: d = acc(calibrated) − acc(svd); the cell "
            f"holds when the one-sided {100 * (1 - ALPHA):.0f} % lower t bound of mean d is above −0.75 points "
            "(non-inferiority), fails when the upper bound at α/m (Bonferroni over the m cells) is below −0.75 points; "
            f"every cell holds with ≥ {MIN_SEEDS} seeds reproduced, a cell fails refuted, else not reproduced"
        )
    return (
        "per architecture, paired over seeds: d = acc(calibrated, flops = 1/2, no fine-tune) − acc(dense); holds when "
        f"the one-sided {100 * (1 - ALPHA):.0f} % lower t bound of mean d is above −1 point, fails when the upper "
        f"bound at α/m (Bonferroni over the architectures) is below −1 point; every architecture holds with ≥ "
        f"{MIN_SEEDS} seeds reproduced, one fails refuted, else not reproduced"
    )
