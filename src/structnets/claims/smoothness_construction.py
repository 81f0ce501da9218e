"""Claims of paper 002 decided by the explicit construction (``smooth-constant-depth``): its rate in N
in the sup norm and in L², its error against our bound, at constant depth.

Liu, Wang, Wu, Zhang, *Smoothness Adaptivity in Constant-Depth Neural Networks* (arXiv 2602.19691),
Theorems 4.1/4.4. The rows themselves are listed in :data:`structnets.claims.smoothness.CLAIMS`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from . import rules
from .evidence import NOT_REPRODUCED, REPRODUCED, Evidence, keys_of, not_tested


def constant_depth(results: pd.DataFrame, config: Any) -> Evidence:
    from ..experiments.smooth_constant_depth.report import TOLERANCE, cell_slopes, rate_holds

    if results.empty or "bound" not in results.columns:
        return not_tested("no construction units")
    held = int((results["error"] <= results["bound"]).sum())
    cells, rate_ok, parts = 0, 0, []
    slopes, rates, bounded, one_depth = [], [], [], []
    for (target, activation), group in results.groupby(["target", "activation"], sort=True):
        d, s = int(group["d"].iloc[0]), float(group["s"].iloc[0])
        if group["K"].nunique() < 2:
            continue
        fit = cell_slopes(group)
        slope = fit["N_upper"]
        cells += 1
        ok = (
            rate_holds(slope, s, d) and bool((group["error"] <= group["bound"]).all()) and group["depth"].nunique() == 1
        )
        rate_ok += int(ok)
        slopes.append(slope)
        rates.append(-s / d)
        bounded.append(bool((group["error"] <= group["bound"]).all()))
        one_depth.append(group["depth"].nunique() == 1)
        parts.append(
            f"{target} {activation}: {slope:.2f} vs {-s / d:.2f} (in K^d {fit['Kd_upper']:.2f})"
            + ("" if ok else " (not reproduced)")
        )
    if not cells:
        return not_tested("no cell with two or more K")
    rate = np.array(rates)
    decided, slower = rules.upper_bound_rate(
        np.array(slopes), 0.0, 1.0, rate, np.zeros(cells, dtype=bool), tolerance=TOLERANCE * np.abs(rate)
    )
    verdict = str(decided)
    if verdict == REPRODUCED and not (all(bounded) and all(one_depth)):
        verdict = NOT_REPRODUCED
    depths = sorted({int(v) for v in results["depth"]})
    dims = sorted({int(v) for v in results["d"]})
    return Evidence(
        f"d ∈ {dims}; error ≤ our bound in {held} of {len(results)} units; {rate_ok} of {cells} cells reproduced, "
        f"at depth {depths} (weight layers); slope in N over the larger half of K: " + "; ".join(parts),
        verdict,
        "upper-bound rate of an exact construction. Whose bound: the rate is the paper's (Theorem 4.1's "
        "O(N^{−s/d}), an O(·) whose constant the paper does not give, so the rate alone is tested, in N, the "
        "dense parameter count, not in K^d, since N = aK^d + bK^{d−1} + … is not yet ∝ K^d); the error is also "
        "checked against structnets' own certified bound T + G + ρ (not a number of the paper). Per (target, "
        "activation) "
        "cell, the least-squares slope of log sup error in log N (every weight and bias of the dense layers) over "
        f"the larger half of K, as the smooth-constant-depth report: at most −s/d + {TOLERANCE:.0%} of s/d in "
        "every cell, the error never above our bound and one depth per cell reproduced; a cell slower than that "
        "refuted (a construction has no optimiser to blame); the rate met but an error above our bound or two "
        "depths not reproduced (our bound's constants, not the paper's rate, are then wrong)",
        len(results),
        keys_of(results),
    )


def _construction_norm(results: pd.DataFrame, config: Any, column: str, norm: str) -> Evidence:
    """The rate O(N^{−s/d}) of the construction's ``column`` error (``norm``: "L∞" or "L²") in N."""
    from ..experiments.smooth_constant_depth.report import TOLERANCE, cell_slopes

    if results.empty or "error" not in results.columns:
        return not_tested("no construction units")
    if column not in results.columns:
        return not_tested(
            f"this run records no {column} column (runs before the L² error was recorded); rerun smooth-constant-depth"
        )
    slopes, rates, parts, used = [], [], [], []
    for (target, activation), group in results.groupby(["target", "activation"], sort=True):
        group = group.sort_values("K")
        if group["K"].nunique() < 2:
            continue
        d, s = int(group["d"].iloc[0]), float(group["s"].iloc[0])
        slope = cell_slopes(group)["N_upper" if column == "error" else "L2_upper"]
        slopes.append(slope if np.isfinite(slope) else np.inf)
        rates.append(-s / d)
        used.append(group)
        parts.append(f"{target} {activation} (d={d}): {slope:.2f} vs {-s / d:.2f}")
    if not slopes:
        return not_tested("no cell with two or more K")
    rate = np.array(rates)
    decided, slower = rules.upper_bound_rate(
        np.array(slopes), 0.0, 1.0, rate, np.zeros(len(rate), dtype=bool), tolerance=TOLERANCE * np.abs(rate)
    )
    rows_used = pd.concat(used)
    dims = sorted({int(v) for v in rows_used["d"]})
    measured = (
        "sup error over a uniform grid, every knot and cell boundary and 4,096 Sobol points (a lower estimate of the true sup)"
        if norm == "L∞"
        else "L² error = RMS over scrambled Sobol points (a quasi-Monte Carlo estimate of ‖net − f‖_{L²([0,1]^d)})"
    )
    elsewhere = (
        "smoothness-rates records only test MSE (an L² estimate) for trained networks, so the L∞ form is decided "
        "here, on the construction alone (the same sup errors as 002-constant-depth-construction, judged on the "
        "rate alone)"
        if norm == "L∞"
        else "the trained networks' L² form is 002-approximation-rate (smoothness-rates, RMSE on fresh points)"
    )
    return Evidence(
        f"d ∈ {dims}; slower than −s/d by more than {TOLERANCE:.0%} of s/d in {int(slower.sum())} of {len(rate)} "
        "cells; slope in N over the larger half of K: " + "; ".join(parts),
        str(decided),
        f"upper-bound rate, {norm} form of Theorems 4.1/4.4, on the explicit constant-depth construction: {measured}; "
        "per (target, activation) cell the least-squares slope of log error in log N (N = every weight and bias of "
        "the dense layers) over the larger half of K; whose bound: the paper's O(N^{−s/d}) (constant not given), "
        f"with the smooth-constant-depth report's tolerance: at most −s/d + {TOLERANCE:.0%} of s/d in every cell "
        "reproduced, a cell slower refuted (a construction has no optimiser to blame), steeper never a miss; "
        + elsewhere,
        len(rows_used),
        keys_of(rows_used),
    )


def construction_linf(results: pd.DataFrame, config: Any) -> Evidence:
    return _construction_norm(results, config, "error", "L∞")


def construction_l2(results: pd.DataFrame, config: Any) -> Evidence:
    return _construction_norm(results, config, "l2_error", "L²")


__all__ = ["constant_depth", "construction_l2", "construction_linf"]
