"""Claims of the DLoR paper (seed 001), decided by ``dlor-blindspot``, ``dlor-sawtooth`` and ``dlor-universality``.

Chen, Li, Kim, Lavaei, *Structural Correspondence and Universal Approximation in Diagonal plus
Low-Rank Neural Networks* (arXiv 2605.05659): the rank-1 paradox (rank-1 networks interpolate any
scalar data yet have an orthogonal blind spot, removed by αI), the wide/deep correspondence
(h → 0), universality of deep DLoR networks of width n + m + 2 (Theorems 5–7), and the sawtooth
experiments (deep reaches lower error, succeeds more often and sooner under 5,000 and 50,000 epochs).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from . import rules, rules_trend
from .evidence import NOT_REPRODUCED, REFUTED, REPRODUCED, Claim, Evidence, keys_of, not_tested, rows

PAPER = "DLoR (001)"
BLINDSPOT_FLOOR = 4.0 / 135.0  # min over unit v, g of E(x₁x₂ − g(vᵀx))² on [−1, 1]², at v = (1, 1)/√2
ROUNDING = 1e-8  # "interpolates": the largest training error is at rounding level


def _interpolation(results: pd.DataFrame, config: Any) -> Evidence:
    stage = rows(results, stage="interpolate")
    if stage.empty:
        return not_tested("no interpolate units")
    worst = float(stage["max_error_scalar_inputs"].max())
    verdict = REPRODUCED if worst <= ROUNDING else REFUTED
    return Evidence(
        f"max training error {worst:.2g} over n ∈ {sorted(int(n) for n in stage['n'])}",
        verdict,
        f"largest |f(xᵢ) − yᵢ| of the rank-1 interpolant on scalar data ≤ {ROUNDING:g} (rounding level for targets "
        "of order 1: the construction is exact in exact arithmetic) reproduced, else refuted",
        len(stage),
        keys_of(stage),
    )


def _blind_spot(results: pd.DataFrame, config: Any) -> Evidence:
    train = rows(results, stage="train")
    floor_rows = rows(results, stage="floor")
    if train.empty:
        return not_tested("no train units")
    rank1, dlor = rows(train, model="rank1"), rows(train, model="dlor")
    if rank1.empty or dlor.empty:
        return not_tested("train units lack the rank1 or the dlor model")
    floor = float(floor_rows["floor_mse"].iloc[0]) if not floor_rows.empty else BLINDSPOT_FLOOR
    rank1_best = float(rank1["min_test_mse"].min())
    widest = dlor[dlor["width"] == dlor["width"].max()]
    dlor_median = float(widest["median_test_mse"].iloc[0])
    # rank-1 can never go below the floor (up to the floor estimate's ±3 %); DLoR at the widest width must
    below_floor = rank1_best < 0.97 * floor
    verdict = REFUTED if below_floor else REPRODUCED if dlor_median < floor else NOT_REPRODUCED
    return Evidence(
        f"rank-1 best test MSE {rank1_best:.4f} (floor {floor:.4f}); DLoR r = 1 median {dlor_median:.2e} at width "
        f"{int(widest['width'].iloc[0])}",
        verdict,
        "every rank-1 network ≥ the blind-spot floor (−3 % estimate tolerance), and the widest DLoR network's median below it",
        len(train) + len(floor_rows),
        keys_of(pd.concat([floor_rows, train])),
    )


def _seed_values(row: Any, key: str) -> np.ndarray:
    raw = json.loads(row[key]) if isinstance(row[key], str) else row[key]
    return np.array([np.inf if v is None else float(v) for v in raw], dtype=float)


def _sawtooth_claim(column: str, what: str):
    claimed_sign = 1 if column == "success" else -1  # more successes; lower MSE, fewer epochs

    def evaluate(results: pd.DataFrame, config: Any) -> Evidence:
        from ..experiments.dlor_sawtooth import cell_comparisons
        from ..experiments.dlor_sawtooth.config import deep_depths
        from ..experiments.dlor_sawtooth.stats import stage_rows, train_row

        train = stage_rows(results, "train")
        if train.empty:
            return not_tested("no train units")
        cells = cell_comparisons(results, config)
        if cells.empty:
            return not_tested("no (target, budget) cell with both deep and wide networks trained")
        # The paper's wide networks are the parallel (σ per branch) ones; "summed" is ours.
        paper_wide = cells[cells["wide_mode"] == "parallel"]
        if paper_wide.empty:
            return not_tested("no cell against the paper's parallel wide networks")
        depth = deep_depths(config)["parallel"]
        deep_side, wide_side, names, used = [], [], [], []
        for target, budget in zip(paper_wide["target"], paper_wide["budget"]):
            deep, wide = train_row(train, target, "deep", budget, depth), train_row(train, target, "parallel", budget)
            key = "final_test_mse" if column == "mse" else "epochs_to_threshold"
            used += [deep, wide]
            deep_side.append(_seed_values(deep, key))
            wide_side.append(_seed_values(wide, key))
            names.append(f"{target}@{budget}")
        if column == "success":
            test = rules.stratified_exact(
                [int(np.isfinite(v).sum()) for v in deep_side],
                [len(v) for v in deep_side],
                [int(np.isfinite(v).sum()) for v in wide_side],
                [len(v) for v in wide_side],
            )
            how = "exact stratified (Mantel–Haenszel conditional) test of successes, cells as strata"
        else:
            test = rules.van_elteren(deep_side, wide_side)
            how = f"van Elteren stratified rank-sum test of {'final test MSE' if column == 'mse' else 'epochs to 10⁻³ (never: slowest)'}, cells as strata"
        decided, directions = rules.across_cells(test, claimed_sign=claimed_sign, alpha=config.alpha_level)
        counts = paper_wide[f"verdict_{column}"].value_counts()
        reproduced, reversed_ = int(counts.get("reproduced", 0)), int(counts.get("reversed", 0))
        n = len(paper_wide)
        favour = int(np.sum(claimed_sign * directions > 0))
        seeds = sorted({int(s) for s in paper_wide["n_seeds"]})
        return Evidence(
            f"pooled z = {float(test.z):.2f}, p = {float(test.p):.3g}; deep {what} in direction in {favour} of {n} cells "
            f"("
            + ", ".join(
                f"{name} {'deep' if claimed_sign * d > 0 else 'wide' if claimed_sign * d < 0 else 'tie'}"
                for name, d in zip(names, directions)
            )
            + f"); per cell significant {reproduced}, reversed {reversed_}",
            str(decided),
            f"A beats B across cells: one pooled {how}, over {seeds} seeds per network, two-sided α = "
            f"{config.alpha_level:g}, plus the direction in every cell: pooled significant in deep's favour with no "
            "cell significantly reversed (Holm) reproduced; pooled significant the other way refuted; else not "
            "reproduced. (Requiring significance in every cell of 5 seeds, the replaced rule, could hardly pass: "
            "the exact Fisher p is at best 0.048)",
            2 * n,
            keys_of(pd.DataFrame(used)),
        )

    return evaluate


def _correspondence(results: pd.DataFrame, config: Any) -> Evidence:
    stage = rows(results, stage="correspondence")
    if stage.empty or "curves" not in stage.columns:
        return not_tested("no correspondence units")
    fits = {}
    for mode in ("deep", "parallel"):
        hs, sups, labels = [], [], []
        for i, text in enumerate(stage["curves"]):
            curve = json.loads(text)[mode]
            hs += curve["h"]
            sups += curve["sup_error"]
            labels += [i] * len(curve["h"])
        h, sup, label = np.asarray(hs, float), np.asarray(sups, float), np.asarray(labels)
        keep = sup > 0
        if keep.sum() >= 3 and len(np.unique(h[keep])) >= 2:
            # each curve (target, seed) its own level: one line through all of them put the spread of the
            # levels into the residuals (a truly slower h^0.8 was reproduced 97 % at level sd e^2)
            trend = rules_trend.pooled_trend(np.log(h[keep]), np.log(sup[keep]), label[keep], claimed_sign=1)
            fits[mode] = rules.SlopeTest(np.asarray(trend.slope), np.asarray(trend.se), np.asarray(trend.df))
    if not fits:
        return not_tested("no correspondence curve with three positive errors")
    smallest = {mode: float(stage[f"{mode}_sup_error_min_h"].max()) for mode in fits}
    slope = np.array([float(f.slope) for f in fits.values()])
    se = np.array([float(f.se) for f in fits.values()])
    df = np.array([float(f.df) for f in fits.values()])
    # sup |DLoR − MLP| = O(h): an upper bound with rate 1 in h (in −log h, rate −1)
    decided, slower = rules.upper_bound_rate(-slope, se, df, -1.0, np.zeros(len(fits), dtype=bool))
    return Evidence(
        "; ".join(
            f"{mode}: slope {float(f.slope):.2f} ± {float(f.se):.2f}, sup |DLoR − MLP| at smallest h {smallest[mode]:.2g}"
            for mode, f in fits.items()
        ),
        str(decided),
        "upper-bound rate: sup |DLoR − dense MLP| = O(h) (theory; O(h²) for tanh at c = 0): per mode (deep; "
        "parallel, the paper's wide network), the least-squares slope of log sup error in log h over every seed "
        "and target, each curve its own intercept (± se); one-sided t-test of 'slower than h¹' (slope < 1), Holm over the two modes at α = 0.05: "
        "neither slower reproduced, either slower refuted; a steeper convergence is no miss",
        len(stage),
        keys_of(stage),
    )


def _universality(results: pd.DataFrame, config: Any) -> Evidence:
    if results.empty or "deep_r1_sup" not in results.columns:
        return not_tested("no universality units")
    falling, parts = 0, []
    targets = sorted(results["target"].unique())
    for target in targets:
        group = results[results["target"] == target].sort_values("neurons")
        first, last = float(group["deep_r1_sup"].iloc[0]), float(group["deep_r1_sup"].iloc[-1])
        ok, top_slope = rules.still_falling(group["neurons"].to_numpy(float), group["deep_r1_sup"].to_numpy(float))
        falling += int(ok)
        parts.append(
            f"{target}: {first:.2g} → {last:.2g} (depth {int(group['deep_r1_depth'].iloc[-1])}; upper-half slope "
            f"{top_slope:.2f}{'' if ok else ', not still falling'})"
        )
    saddle = results[results["target"] == "saddle"].sort_values("neurons")
    beats_floor = saddle.empty or float(saddle["deep_r1_rms"].iloc[-1]) ** 2 < BLINDSPOT_FLOOR
    width = sorted({int(w) for w in results["width"]})
    verdict = REPRODUCED if falling == len(targets) and beats_floor else NOT_REPRODUCED
    return Evidence(
        f"width {width}; sup error, fewest → most neurons: " + "; ".join(parts),
        verdict,
        "density (error → 0, no rate): for every target the rank-1 deep network's sup error still falls over the "
        "upper half of the neuron grid (every step down; 'last < first' would pass a curve that stopped falling), "
        f"and on the saddle its MSE ends below the rank-1 blind-spot floor {BLINDSPOT_FLOOR:.4f}: reproduced; else "
        "not reproduced (a density claim has no rate a finite grid could refute)",
        len(results),
        keys_of(results),
    )


def _depth_over_width(results: pd.DataFrame, config: Any) -> Evidence:
    needed = {"target", "neurons", "deep_r2_params", "wide_generic_params"}
    if results.empty or not needed <= set(results.columns):
        return not_tested("no universality units with both the deep and the wide generic network")
    ratios, exact_ratios, parts = [], [], []
    for target in sorted(results["target"].unique()):
        built = results[(results["target"] == target) & results["wide_generic_params"].notna()].sort_values("neurons")
        if built.empty:
            continue
        last = built.iloc[-1]
        ratio = float(last["wide_generic_params"] / last["deep_r2_params"])
        ratios.append(ratio)
        text = f"{target} ×{ratio:.2f}"
        if "wide_exact_params" in results.columns and pd.notna(last.get("wide_exact_params")):
            exact = float(last["wide_exact_params"] / last["deep_r2_params"])
            exact_ratios.append(exact)
            text += f" (direct wide ×{exact:.2f})"
        parts.append(text + f" at J = {int(last['neurons'])}")
    if not ratios:
        return not_tested("no unit where the wide generic network was built")
    against_both = ratios + exact_ratios
    verdict = REPRODUCED if min(against_both) > 1 else REFUTED if max(ratios) < 1 else NOT_REPRODUCED
    return Evidence(
        "wide/deep parameters for the same shallow network g (paper's wide transfer; a wide DLoR network built for "
        "g directly): " + ", ".join(parts),
        verdict,
        "at the largest J where both were built, parameters of each wide (additive) DLoR network over the deep "
        "(multiplicative, rank 2) one evaluating the same g: the paper's transfer and a wide network built for g "
        "directly (depth 1; a claim that depth scales better must beat the best wide construction we have, not one "
        "chosen wide construction): > 1 against both in every target reproduced; < 1 against the paper's transfer "
        "in every target refuted; else not reproduced. Theorem 8's parameter scaling in J is the row "
        "001-parameter-scaling",
        len(results),
        keys_of(results),
    )


def _parameter_scaling(results: pd.DataFrame, config: Any) -> Evidence:
    needed = {"target", "neurons", "deep_r2_params", "shallow_params"}
    if results.empty or not needed <= set(results.columns):
        return not_tested("no universality units with the deep DLoR and the dense network's parameter counts")
    slopes, parts = [], []
    for target in sorted(results["target"].unique()):
        group = results[results["target"] == target].sort_values("neurons")
        if group["shallow_params"].nunique() < 3:
            continue
        fit = rules.ols_slope(
            np.log(group["shallow_params"].to_numpy(float)), np.log(group["deep_r2_params"].to_numpy(float))
        )
        slopes.append(float(fit.slope))
        ratio = (group["deep_r2_params"] / group["shallow_params"]).to_numpy(float)
        parts.append(f"{target}: deep ∝ dense^{float(fit.slope):.3f} (deep/dense ×{ratio.min():.1f}–{ratio.max():.1f})")
    if not slopes:
        return not_tested("fewer than 3 sizes of the dense network")
    decided, _, _ = rules.predicted_exponent(np.array(slopes), 0.0, 1.0, 1.0, tolerance=rules.EXPONENT_TOLERANCE)
    return Evidence(
        "; ".join(parts),
        str(decided),
        "predicted exponent: the deep rank-2 DLoR network built from a dense shallow network g (Theorem 7's "
        "transfer) should need parameters proportional to g's (Theorem 8: the dense parameter complexity, up to "
        "constants), i.e. exponent 1 of the deep count in g's count over J; exact counts (se 0), least-squares "
        f"exponent per target within 1 ± {rules.EXPONENT_TOLERANCE} in every target reproduced, outside it in any "
        "refuted, else not reproduced",
        len(results),
        keys_of(results),
    )


def _decomposition(route: str):
    """Theorem 3 (``route="sum"``) or 4 (``"product"``): every decomposition of the ``decompose`` stage
    within its rounding threshold (the column ``{route}_ratio`` = error / threshold ≤ 1)."""
    from ..experiments.dlor_blindspot.decompose import TEST_RATIO

    column = f"{route}_ratio"
    count = "sum_terms" if route == "sum" else "product_factors"

    def evaluate(results: pd.DataFrame, config: Any) -> Evidence:
        stage = rows(results, stage="decompose")
        if stage.empty or column not in stage.columns:
            return not_tested("no decompose units (dlor-blindspot's Theorem 3–4 stage)")
        ratio = stage[column].to_numpy(float)
        held = int(np.sum(ratio <= 1.0))
        capped = int(np.sum(stage[count] <= stage[f"{count}_cap"]))
        ranked = int(np.sum(stage["max_factor_rank"] <= stage["rank"]))
        worst = stage.iloc[int(np.argmax(ratio))]
        kinds = ", ".join(dict.fromkeys(str(k) for k in stage["kind"]))
        sizes = sorted({int(n) for n in stage["size"]})
        verdict = REPRODUCED if held == len(stage) and ranked == len(stage) else REFUTED
        if route == "sum":
            what = "Σ_k (α_k I + U_k V_kᵀ)"
            threshold = (
                f"‖Σ_k M_k − W‖_F ≤ N·ε·({TEST_RATIO:g}‖W‖_F + √(N − ρ)·σ₁(W − τI)), normwise (the additive "
                "construction is normwise, not entrywise, exact: each term adds τ/K to the diagonal), the second term "
                "its own truncation of the N − ρ singular values of W − τI below N·ε·σ₁"
            )
            cap = "K = ⌈ρ/r⌉ terms"
        else:
            what = "Π_k (α_k I + U_k V_kᵀ)"
            threshold = (
                f"‖(Π_k M_k − W)e_j‖₂ ≤ {TEST_RATIO:g}·N·ε·‖We_j‖₂ for every column j (or every row, where the "
                "construction works on Wᵀ), so graded columns keep their relative accuracy"
            )
            cap = "K ≤ ⌈(2N − 1)/r⌉ factors, every α_k ≠ 0"
            if float(stage["min_abs_alpha_product"].min()) <= 0:
                verdict = REFUTED
        return Evidence(
            f"error / rounding threshold ≤ 1 in {held} of {len(stage)} decompositions (N ∈ {sizes}; {kinds}; ranks "
            f"1, 2, N/4, N − 1); largest {float(ratio.max()):.3g} (N = {int(worst['size'])}, {worst['kind']}, "
            f"r = {int(worst['rank'])}); {cap} in {capped} of {len(stage)}; every factor of rank ≤ r in {ranked}",
            verdict,
            f"exact construction: W = {what} in float64 means within rounding, with a threshold derived from the "
            f"matrix, not a fixed 1e-9: {threshold}; ε = 2⁻⁵², c = {TEST_RATIO:g} the threshold of LAPACK's test "
            "suite for a scaled residual ‖A − QR‖/(N·ε·‖A‖) (THRESH = 30.0 in its dtest.in; a backward-stable factorisation "
            "gives O(1), a wrong one O(1/ε)); the sum or product formed in float64, its rounding inside the error. "
            "Every decomposition within it, each factor αI + UVᵀ of rank ≤ r, reproduced; any beyond refuted. Whose "
            "construction: structnets' (constructive.dlor_sum / dlor_product); the theorem states existence",
            len(stage),
            keys_of(stage),
        )

    return evaluate


def _log_change(initial: str, trained: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per seed: the mean over maps of log(σ₁/|α|) trained minus at initialisation, and the two levels (maps
    with α = 0, stored as None, left out)."""
    before, after = json.loads(initial), json.loads(trained)
    change, start, end = [], [], []
    for b, a in zip(before, after, strict=True):
        pairs = [(x, y) for x, y in zip(b, a, strict=True) if x is not None and y is not None]
        lb, la = np.log([x for x, _ in pairs]), np.log([y for _, y in pairs])
        change.append(float(np.mean(la - lb)))
        start.append(float(np.mean(lb)))
        end.append(float(np.mean(la)))
    return np.asarray(change), np.asarray(start), np.asarray(end)


def _spectral(results: pd.DataFrame, config: Any) -> Evidence:
    from ..experiments.dlor_sawtooth.config import deep_depths
    from ..experiments.dlor_sawtooth.stats import stage_rows

    train = stage_rows(results, "train")
    if train.empty or "separation_trained" not in train.columns or train["separation_trained"].isna().all():
        return not_tested(
            "no train units with every seed's per-map spectra (dlor-sawtooth records σ₁/|α| of every DLoR map of "
            "every seed at initialisation and after training since issue 31; older runs stored seed 0's only)"
        )
    depth = None
    if config is not None and "parallel" in getattr(config, "wide_modes", ()):
        depth = deep_depths(config)["parallel"]
    deep_side, wide_side, names, used, cells = [], [], [], [], []
    for (target, budget), cell in train.groupby(["target", "budget"], sort=True):
        deep = cell[(cell["mode"] == "deep") & ((cell["depth"] == depth) if depth is not None else True)]
        wide = cell[cell["mode"] == "parallel"]
        if len(deep) != 1 or len(wide) != 1:
            continue
        d, w = deep.iloc[0], wide.iloc[0]
        if not isinstance(d["separation_trained"], str) or not isinstance(w["separation_trained"], str):
            continue
        dc, d0, d1 = _log_change(d["separation_init"], d["separation_trained"])
        wc, w0, w1 = _log_change(w["separation_init"], w["separation_trained"])
        deep_side.append(dc)
        wide_side.append(wc)
        names.append(f"{target}@{int(budget)}")
        used += [deep, wide]
        cells.append(
            f"{target}@{int(budget)}: deep {np.exp(np.median(d0)):.2f} → {np.exp(np.median(d1)):.2f}, wide "
            f"{np.exp(np.median(w0)):.2f} → {np.exp(np.median(w1)):.2f}"
        )
    if not deep_side:
        return not_tested("no (target, budget) cell with deep and parallel (wide) networks' per-seed spectra")
    seeds = min(min(len(v) for v in deep_side), min(len(v) for v in wide_side))
    test = rules.van_elteren(deep_side, wide_side)
    decided, directions = rules.across_cells(test, claimed_sign=1)
    verdict = str(decided) if rules.enough_seeds(seeds) else NOT_REPRODUCED
    rows_used = pd.concat(used)
    return Evidence(
        f"σ₁/|α| of the DLoR maps followed by σ (geometric mean over maps, median over {seeds} seeds), "
        f"initialisation → trained: " + "; ".join(cells) + f"; pooled z = {float(test.z):.2f}, p = "
        f"{float(test.p):.3g}; training raised the deep maps' separation more than the wide branches' in "
        f"{int(np.sum(directions > 0))} of {len(names)} cells ("
        + ", ".join(f"{n} {'deep' if e > 0 else 'wide' if e < 0 else 'tie'}" for n, e in zip(names, directions))
        + ")"
        + ("" if rules.enough_seeds(seeds) else f"; {seeds} seed(s) < {rules.MIN_SEEDS}"),
        verdict,
        "the wide half of the spectral claim on dlor-sawtooth's networks (the paper's sawtooth models, the "
        "configuration fixed before the run): per DLoR map followed by σ (deep: each layer's αI + UVᵀ; the "
        "paper's parallel wide network: each branch's α_k I + U_k V_kᵀ) the separation σ₁/|α| of the low-rank "
        "direction above the identity's background; per seed the mean over maps of log(trained/initial). The "
        "change, not the level, is compared: a wide branch starts at α = 1/B (σ₁/|α| ≈ 3.7 against 1.5 for a "
        "deep map at initialisation), so the levels would be decided by the initialisation. A beats B across "
        "cells (target × budget as strata; one pooled van Elteren test, two-sided α = 0.05, plus each cell's "
        "direction): the deep maps' separation raised significantly more with no cell significantly reversed "
        "reproduced; the wide branches' significantly more refuted; else not reproduced; fewer than "
        f"{rules.MIN_SEEDS} seeds not reproduced. The deep half alone is 001-spectral-deep",
        len(rows_used),
        keys_of(rows_used),
    )


def _spectral_deep(results: pd.DataFrame, config: Any) -> Evidence:
    train = rows(rows(results, stage="train"), model="dlor")
    if train.empty or "separation_trained" not in train.columns:
        return not_tested("no trained DLoR units with spectra (dlor-blindspot records them since issue 31)")
    train = train[train["separation_trained"].notna()].sort_values("width")
    if train.empty:
        return not_tested("no trained DLoR units with spectra (dlor-blindspot records them since issue 31)")

    def per_seed(text: str) -> np.ndarray:
        # per seed: the mean over the network's DLoR maps of log(σ₁/|α|)
        return np.array([float(np.mean(np.log(maps))) for maps in json.loads(text)])

    trained = [per_seed(t) for t in train["separation_trained"]]
    initial = [per_seed(t) for t in train["separation_init"]]
    seeds = min(len(v) for v in trained)
    test = rules.van_elteren(trained, initial)
    decided, directions = rules.across_cells(test, claimed_sign=1)
    verdict = str(decided) if rules.enough_seeds(seeds) else NOT_REPRODUCED
    maps = sum(len(m) for t in train["separation_trained"] for m in json.loads(t))
    background = int(train["background_maps"].sum())
    cells = ", ".join(
        f"N = {int(w)}: {float(np.exp(np.median(b))):.2f} → {float(np.exp(np.median(a))):.2f}"
        for w, a, b in zip(train["width"], trained, initial)
    )
    return Evidence(
        f"σ₁/|α| of the trained DLoR maps (geometric mean over maps, median over {seeds} seeds), initialisation → "
        f"trained: {cells}; pooled z = {float(test.z):.2f}, p = {float(test.p):.3g}, up in "
        f"{int(np.sum(directions > 0))} of {len(trained)} widths; ≥ N − 2r singular values at |α| in {background} of "
        f"{maps} trained maps",
        verdict,
        "the trained half of the spectral claim on dlor-blindspot's deep DLoR networks (rank 1, the saddle, "
        "the configuration fixed before the run): the background is structural (N − 2r singular values equal |α| "
        "in any αI + UVᵀ, σ₁ ≥ |α| by interlacing), so what training decides is how far the low-rank direction "
        "stands above it: per seed the mean over maps of log(σ₁/|α|), trained against the same seeds at "
        "initialisation, widths as strata. A beats B across cells (one pooled van Elteren test, two-sided α = "
        f"{rules.ALPHA}, plus each width's direction): trained significantly above initialisation with no width "
        "significantly reversed reproduced; significantly below (training hands the dominant direction to αI) "
        f"refuted; else not reproduced; fewer than {rules.MIN_SEEDS} seeds not reproduced. Not the paper's "
        "networks or target (its sawtooth models: 001-spectral-wide)",
        len(train),
        keys_of(train),
    )


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "001-rank1-interpolation",
        PAPER,
        "A rank-1 network interpolates any finite scalar data set exactly",
        "exact interpolation",
        "dlor-blindspot",
        _interpolation,
    ),
    Claim(
        "001-blind-spot",
        PAPER,
        "Rank-1 networks cannot approximate x₁x₂ below the orthogonal blind-spot floor; adding αI (DLoR, rank 1) removes it",
        "floor 4/135 ≈ 0.0296 for rank 1; DLoR below it",
        "dlor-blindspot",
        _blind_spot,
    ),
    Claim(
        "001-correspondence",
        PAPER,
        "As h → 0 the deep and wide DLoR networks of the correspondence converge to the dense MLP",
        "convergence as h → 0",
        "dlor-sawtooth",
        _correspondence,
    ),
    Claim(
        "001-sawtooth-mse",
        PAPER,
        "Under fixed budgets (5,000 and 50,000 epochs) deep DLoR networks reach lower test error than wide ones",
        "deep lower, consistently",
        "dlor-sawtooth",
        _sawtooth_claim("mse", "lower MSE"),
    ),
    Claim(
        "001-sawtooth-success",
        PAPER,
        "Deep DLoR networks reach the 10⁻³ threshold more often than wide ones",
        "higher success rate",
        "dlor-sawtooth",
        _sawtooth_claim("success", "more successes"),
    ),
    Claim(
        "001-sawtooth-speed",
        PAPER,
        "Deep DLoR networks reach the 10⁻³ threshold in fewer epochs than wide ones",
        "faster",
        "dlor-sawtooth",
        _sawtooth_claim("speed", "faster"),
    ),
    Claim(
        "001-additive-decomposition",
        PAPER,
        "Every dense matrix is exactly a sum of DLoR matrices α_k I + U_k V_kᵀ of any rank r (Theorem 3: the wide network)",
        "W = Σ_k (α_k I + U_k V_kᵀ), exactly",
        "dlor-blindspot",
        _decomposition("sum"),
    ),
    Claim(
        "001-multiplicative-decomposition",
        PAPER,
        "Every dense matrix is exactly a product of DLoR matrices α_k I + U_k V_kᵀ of any rank r (Theorem 4: the deep "
        "network)",
        "W = Π_k (α_k I + U_k V_kᵀ), exactly",
        "dlor-blindspot",
        _decomposition("product"),
    ),
    Claim(
        "001-spectral-deep",
        PAPER,
        "In trained deep DLoR layers the low-rank part takes the dominant singular directions and αI keeps the "
        "background spectrum",
        "qualitative (spectral analysis of trained models)",
        "dlor-blindspot",
        _spectral_deep,
    ),
    Claim(
        "001-spectral-wide",
        PAPER,
        "Wide DLoR networks spread the representation over parallel branches with less spectral separation than "
        "deep ones (the paper's spectral analysis of its sawtooth models)",
        "qualitative (spectral analysis of trained models)",
        "dlor-sawtooth",
        _spectral,
    ),
    Claim(
        "001-universality",
        PAPER,
        "Deep DLoR networks of width n + m + 2 approximate continuous targets as depth grows (Theorems 5–7)",
        "dense in C(K, ℝᵐ)",
        "dlor-universality",
        _universality,
    ),
    Claim(
        "001-depth-over-width",
        PAPER,
        "Multiplicative depth gives a better parameter–expressivity scaling than additive width (Theorem 8)",
        "deep needs fewer parameters than wide",
        "dlor-universality",
        _depth_over_width,
    ),
    Claim(
        "001-parameter-scaling",
        PAPER,
        "Deep DLoR networks inherit the dense networks' parameter complexity (Theorem 8)",
        "O(ε^{−d/s} log(1/ε)), as dense: parameters ∝ the dense network's",
        "dlor-universality",
        _parameter_scaling,
    ),
)
