"""The table of ``lowrank-compress``: a function of the results table alone."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .config import DATASETS, closest_ratio

_LABELS = {
    "dense": "dense (trained)",
    "compressed": "compressed, no fine-tune",
    "finetuned": "compressed + fine-tune",
    "scratch": "low-rank from scratch",
}


def metric_of(rows: pd.DataFrame) -> tuple[str, float, int, bool]:
    """(column, scale, digits, higher_is_better) of the rows' task: accuracy in %, or RMSE."""
    if rows["task"].iloc[0] == "classification":
        return "accuracy", 100.0, 2, True
    return "rmse", 1.0, 4, False


def paired_difference(a: pd.DataFrame, b: pd.DataFrame, column: str) -> tuple[float, float, float, float, int]:
    """Paired comparison of ``a − b`` over seeds: (mean, sample std, t, two-sided p, pairs).

    t = mean / (std / √n) with n − 1 degrees of freedom (scipy's ``ttest_rel``); t = 0, p = 1 when
    every difference is equal (no spread), and t = p = nan with fewer than two pairs.
    """
    from scipy import stats

    merged = a[["seed", column]].merge(b[["seed", column]], on="seed", suffixes=("_a", "_b"))
    diff = (merged[f"{column}_a"] - merged[f"{column}_b"]).to_numpy(float)
    n = len(diff)
    if n == 0:
        return math.nan, math.nan, math.nan, math.nan, 0
    mean = float(diff.mean())
    if n < 2:
        return mean, math.nan, math.nan, math.nan, n
    std = float(diff.std(ddof=1))
    if std == 0.0:
        return mean, 0.0, 0.0 if mean == 0.0 else math.copysign(math.inf, mean), 1.0 if mean == 0.0 else 0.0, n
    result = stats.ttest_rel(merged[f"{column}_a"].to_numpy(float), merged[f"{column}_b"].to_numpy(float))
    return mean, std, float(result.statistic), float(result.pvalue), n


def _cell(values: pd.Series, scale: float, digits: int) -> str:
    values = values.dropna().astype(float) * scale
    if values.empty:
        return "—"
    if len(values) == 1:
        return f"{values.iloc[0]:.{digits}f}"
    return f"{values.mean():.{digits}f} ± {values.std(ddof=1):.{digits}f}"


def _verdict(mean: float, p: float, higher_is_better: bool) -> str:
    if math.isnan(p):
        return "one pair only: no test"
    if p >= 0.05:
        return "no significant difference"
    return f"{'better' if (mean > 0) == higher_is_better else 'worse'} (p < 0.05)"


def table(results: pd.DataFrame) -> str:
    """Markdown table of ``lowrank-compress`` from its result rows alone.

    Args:
        results: one row per unit, as :func:`structnets.experiments.lowrank_compress.units.run_unit`
            returns them (columns ``dataset, task, model, ratio, seed, flops, ...``).

    Returns:
        per data set: score (mean ± sample std over seeds), FLOPs and parameters of each model at each
        ratio, and the paired answer to "can the trained model be made about 3 times cheaper?" at the
        ratio nearest 1/3.

        Then the accuracy-versus-FLOPs curves of the MLP, CNN and ViT and their targets
        (:func:`.curves_report.curves_section`), when the results hold curve rows.

    Raises:
        ValueError: ``results`` has no dense row yet (the reference every comparison needs).
    """
    from .curves_report import curves_section

    curves = curves_section(results)
    if "stage" in results.columns:
        results = results[results["stage"] != "curve"]
    if curves and results.empty:
        return "\n".join(curves)
    return "\n".join([*_ratio_part(results), *curves])


def _ratio_part(results: pd.DataFrame) -> list[str]:
    """The original part: dense, compressed, fine-tuned and from-scratch MLPs per data set and ratio."""
    if results.empty or "model" not in results or not (results["model"] == "dense").any():
        raise ValueError("`results` has no trained dense net yet; the comparison needs one per data set")
    first = results.iloc[0]
    method = next((m for m in results["method"] if m != "dense"), "lowrank")
    lines = [
        "# lowrank-compress: compress a trained dense Swish MLP, or train the low-rank net from scratch?",
        "",
        f"A dense Swish MLP (width {int(first['width'])}, {int(first['depth'])} nonlinear layers) is trained for "
        f"{int(first['epochs'])} epochs (Adam), then `structnets.compress(model, {method!r}, ratio=r)` replaces "
        "each hidden weight W by its best rank-k approximation with at most the fraction r of its parameters "
        "(truncated SVD, Eckart–Young; the output layer stays dense unless `compress_output`). We compare, "
        "on the same test rows and seeds: the compressed net as is; the compressed net fine-tuned for "
        f"{int(results['finetune_epochs'].max())} epochs; and the same low-rank architecture trained from a "
        f"fresh initialisation for {int(first['epochs'])} epochs (the dense budget). FLOPs per input row count "
        "2 per multiply-add and 1 per bias add (`structnets.analysis.cost`); 'rel. error' is the mean over "
        "the compressed layers of ‖W − Ŵ‖_F / ‖W‖_F. Scores: mean ± sample standard deviation over seeds. "
        "Li et al. (ICML 2025, Sec. 5) train low-rank nets from scratch; the paper does not compress trained "
        "nets, so no paper numbers stand beside these.",
        "",
    ]
    datasets = [d for d in DATASETS if d in set(results["dataset"])]
    for dataset in datasets:
        rows = results[results["dataset"] == dataset]
        column, scale, digits, higher = metric_of(rows)
        name = "test accuracy %" if column == "accuracy" else "test RMSE (targets in [0, 1])"
        seeds = sorted(int(s) for s in rows["seed"].unique())
        lines += [
            f"## {dataset}: {name}, {int(rows['n_train'].iloc[0])} training / {int(rows['n_test'].iloc[0])} "
            f"test rows, seeds {seeds}",
            "",
            f"| model | ratio r | ranks | FLOPs / row | FLOPs / dense | parameters | {name} | rel. error | seeds |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        dense = rows[rows["model"] == "dense"]
        ordered = [("dense", math.nan)] + [
            (model, ratio) for ratio in sorted(rows["ratio"].dropna().unique(), reverse=True)
            for model in ("compressed", "finetuned", "scratch")
        ]  # fmt: skip
        for model, ratio in ordered:
            part = dense if model == "dense" else rows[(rows["model"] == model) & np.isclose(rows["ratio"], ratio)]
            if part.empty:
                continue
            ranks = "full" if model == "dense" else _ranks(part)
            error = "0" if model == "dense" else _cell(part["relative_error_mean"], 1.0, 3)
            lines.append(
                f"| {_LABELS[model]} | {'1 (dense)' if model == 'dense' else f'{ratio:.3g}'} | {ranks} | "
                f"{int(part['flops'].iloc[0]):,} | {part['flops_ratio'].iloc[0]:.3f} | {int(part['parameters'].iloc[0]):,} | "
                f"{_cell(part[column], scale, digits)} | {error} | {len(part)} |"
            )
        lines.append("")
        lines += _third_question(rows, dense, column, scale, digits, higher)
    return lines


def _ranks(part: pd.DataFrame) -> str:
    low, high = int(part["rank_min"].iloc[0]), int(part["rank_max"].iloc[0])
    return str(low) if low == high else f"{low}–{high}"


def _third_question(
    rows: pd.DataFrame, dense: pd.DataFrame, column: str, scale: float, digits: int, higher: bool
) -> list[str]:
    """Paired comparisons at the ratio nearest 1/3: 'can I make my trained model 1/3 as costly?'."""
    ratios = sorted(rows["ratio"].dropna().unique())
    if not ratios:
        return []
    ratio = closest_ratio(list(ratios), 1 / 3)
    at = rows[np.isclose(rows["ratio"].fillna(-1.0), ratio)]
    models = {m: at[at["model"] == m] for m in ("compressed", "finetuned", "scratch")}
    flops = at["flops_ratio"].iloc[0]
    lines = [
        f"**About 3 times cheaper?** At r = {ratio:.3g} the net costs {flops:.3f} of the dense FLOPs. Paired "
        f"differences over seeds ({'accuracy points' if column == 'accuracy' else 'RMSE'}; a positive "
        f"difference is {'better' if higher else 'worse'}):",
        "",
        "| comparison | mean difference ± std | t | p | pairs | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for a, b in (("finetuned", "dense"), ("compressed", "dense"), ("finetuned", "scratch"), ("scratch", "dense")):
        left = models[a]
        right = dense if b == "dense" else models[b]
        if left.empty or right.empty:
            continue
        mean, std, t, p, n = paired_difference(left, right, column)
        spread = "—" if math.isnan(std) else f"{scale * std:.{digits}f}"
        lines.append(
            f"| {_LABELS[a]} − {_LABELS[b]} | {scale * mean:+.{digits}f} ± {spread} | {t:.2f} | {p:.3g} | {n} | "
            f"{_verdict(mean, p, higher)} |"
        )
    return [*lines, ""]
