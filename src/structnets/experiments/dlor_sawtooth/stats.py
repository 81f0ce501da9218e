"""Per-cell statistics of ``dlor-sawtooth``: deep against each wide network, pure functions of the
per-seed values in the results table (exact rank tests, Fisher's exact test, Welch intervals)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .config import DLoRSawtoothConfig, deep_depths


def rank_test(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the exact permutation (Mann–Whitney) test that a and b come from one
    distribution: the statistic is the rank sum of a (mid-ranks for ties; ±inf allowed, so a
    seed that never reached a threshold counts as slowest); the p-value is the fraction of the
    C(n_a + n_b, n_a) relabellings whose rank sum is at least as far from its mean. Exact, so
    valid for 5 seeds (the smallest two-sided p for 5 against 5 is 2/252 ≈ 0.008); above 10⁶
    relabellings the normal approximation of :func:`scipy.stats.mannwhitneyu` is used."""
    import itertools

    from scipy import stats

    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(xa) == 0 or len(xb) == 0:
        raise ValueError(f"`a` and `b` must be non-empty, got {len(xa)} and {len(xb)} values")
    pooled = np.concatenate([xa, xb])
    ranks = stats.rankdata(pooled)
    centre = len(xa) * (len(pooled) + 1) / 2
    observed = abs(ranks[: len(xa)].sum() - centre)
    if math.comb(len(pooled), len(xa)) > 1_000_000:
        return float(stats.mannwhitneyu(xa, xb, alternative="two-sided", method="asymptotic").pvalue)
    sums = np.array([ranks[list(c)].sum() for c in itertools.combinations(range(len(pooled)), len(xa))])
    return float(np.mean(np.abs(sums - centre) >= observed - 1e-9))


def ratio_interval(deep: Sequence[float], wide: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """Geometric-mean ratio wide/deep of positive values (e.g. final test MSEs) and its Welch
    ``level`` confidence interval, computed on log10 values: 10^(Δ ± t·se) with Δ the difference
    of mean logs, se² = s_w²/n_w + s_d²/n_d and Welch–Satterthwaite degrees of freedom.
    (nan, nan, nan) when a value is not finite or positive or a side has fewer than 2 values."""
    from scipy import stats

    d, w = np.asarray(deep, dtype=float), np.asarray(wide, dtype=float)
    if (
        len(d) < 2
        or len(w) < 2
        or not (np.all(np.isfinite(d)) and np.all(np.isfinite(w)))
        or d.min() <= 0
        or w.min() <= 0
    ):
        return math.nan, math.nan, math.nan
    ld, lw = np.log10(d), np.log10(w)
    diff = lw.mean() - ld.mean()
    vd, vw = ld.var(ddof=1) / len(ld), lw.var(ddof=1) / len(lw)
    se = math.sqrt(vd + vw)
    if se == 0.0:
        return 10**diff, 10**diff, 10**diff
    dof = (vd + vw) ** 2 / (vd**2 / (len(ld) - 1) + vw**2 / (len(lw) - 1))
    half = float(stats.t.ppf(0.5 + level / 2, dof)) * se
    return 10**diff, 10 ** (diff - half), 10 ** (diff + half)


def compare_cell(deep: Mapping[str, Any], wide: Mapping[str, Any], alpha_level: float = 0.05) -> dict[str, Any]:
    """Deep against wide in one (target, budget) cell, from the per-seed values of two ``train`` rows.

    Three claims of the paper, each with its own test at two-sided level ``alpha_level``:
    lower final test MSE (exact rank test; effect: :func:`ratio_interval`), more successes
    (Fisher's exact test on successes/seeds), faster to the threshold (exact rank test on the
    epochs to threshold, a seed that never reached it counting as slowest). A verdict is
    ``"reproduced"`` only when the test is significant in deep's favour, ``"reversed"`` when it
    is significant the other way, else ``"not significant"``.
    """
    from scipy import stats

    def values(row: Mapping[str, Any], key: str) -> list[float]:
        raw = json.loads(row[key]) if isinstance(row[key], str) else row[key]
        return [math.inf if v is None else float(v) for v in raw]

    def verdict(p: float, deep_better: bool, wide_better: bool) -> str:
        if p < alpha_level and deep_better:
            return "reproduced"
        if p < alpha_level and wide_better:
            return "reversed"
        return "not significant"

    d_mse, w_mse = values(deep, "final_test_mse"), values(wide, "final_test_mse")
    d_ep, w_ep = values(deep, "epochs_to_threshold"), values(wide, "epochs_to_threshold")
    ratio, low, high = ratio_interval(d_mse, w_mse, 1 - alpha_level)
    p_mse = rank_test(d_mse, w_mse)
    d_rank = stats.rankdata(d_mse + w_mse)[: len(d_mse)].mean() - (len(d_mse) + len(w_mse) + 1) / 2
    d_success, w_success = sum(math.isfinite(e) for e in d_ep), sum(math.isfinite(e) for e in w_ep)
    p_success = float(
        stats.fisher_exact([[d_success, len(d_ep) - d_success], [w_success, len(w_ep) - w_success]]).pvalue
    )
    p_speed = rank_test(d_ep, w_ep)
    e_rank = stats.rankdata(d_ep + w_ep)[: len(d_ep)].mean() - (len(d_ep) + len(w_ep) + 1) / 2
    d_rate, w_rate = d_success / len(d_ep), w_success / len(w_ep)
    return {
        "ratio": ratio,
        "ratio_low": low,
        "ratio_high": high,
        "p_mse": p_mse,
        "verdict_mse": verdict(p_mse, d_rank < 0, d_rank > 0),
        "p_success": p_success,
        "verdict_success": verdict(p_success, d_rate > w_rate, d_rate < w_rate),
        "p_speed": p_speed,
        "verdict_speed": verdict(p_speed, e_rank < 0, e_rank > 0),
    }


def stage_rows(results: pd.DataFrame, stage: str) -> pd.DataFrame:
    if results.empty or "stage" not in results:
        return results.iloc[0:0]
    return results[results["stage"] == stage]


def train_row(train: pd.DataFrame, target: str, mode: str, budget: int, depth: int | None = None) -> Any:
    rows = train[(train["target"] == target) & (train["mode"] == mode) & (train["budget"] == budget)]
    if depth is not None:
        rows = rows[rows["depth"] == depth]
    return None if rows.empty else rows.iloc[0]


def cell_comparisons(results: pd.DataFrame, config: DLoRSawtoothConfig) -> pd.DataFrame:
    """One row per (target, budget, wide form) with both networks run: :func:`compare_cell`
    of the deep network (matched depth) against that wide network, plus medians and counts."""
    train = stage_rows(results, "train")
    depths = deep_depths(config)
    rows = []
    for target in config.targets:
        for budget in config.budgets:
            for mode in config.wide_modes:
                deep = train_row(train, target, "deep", budget, depths[mode])
                wide = train_row(train, target, mode, budget)
                if deep is None or wide is None:
                    continue
                rows.append(
                    {
                        "target": target,
                        "budget": budget,
                        "wide_mode": mode,
                        "deep_depth": int(deep["depth"]),
                        "deep_parameters": int(deep["parameters"]),
                        "wide_parameters": int(wide["parameters"]),
                        "deep_median": float(deep["median_test_mse"]),
                        "deep_min": float(deep["min_test_mse"]),
                        "deep_max": float(deep["max_test_mse"]),
                        "wide_median": float(wide["median_test_mse"]),
                        "wide_min": float(wide["min_test_mse"]),
                        "wide_max": float(wide["max_test_mse"]),
                        "deep_successes": int(deep["successes"]),
                        "wide_successes": int(wide["successes"]),
                        "n_seeds": int(deep["n_seeds"]),
                        "deep_epochs": float(deep["median_epochs_to_threshold"]),
                        "wide_epochs": float(wide["median_epochs_to_threshold"]),
                        **compare_cell(deep, wide, config.alpha_level),
                    }
                )
    return pd.DataFrame(rows)
