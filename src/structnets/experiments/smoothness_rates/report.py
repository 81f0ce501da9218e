"""Report of ``smoothness-rates``: Markdown computed from the results table (and the run's config) only."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .config import SMOOTH, SmoothnessRatesConfig


def long_table(results: pd.DataFrame, settle_tol: float = 0.1) -> pd.DataFrame:
    """One row per (unit, activation, seed): errors, optimisation diagnostics and ``settled``.

    A member is settled when L-BFGS converged, or when the training MSE it gained in the second
    half of its L-BFGS budget (``late_gain``) is at most ``settle_tol`` × its measured error
    ``test_mse``: more of the same optimisation would then move that error by a small fraction.
    """
    records = []
    for _, r in results.iterrows():
        for column, value in r.items():
            if not isinstance(column, str) or not column.endswith("/test_mse") or pd.isna(value):
                continue
            name, seed, _ = column.split("/")

            def member(field: str, default: float = float("nan"), r: Any = r, prefix: str = f"{name}/{seed}") -> float:
                v = r.get(f"{prefix}/{field}", default)
                return default if v is None or pd.isna(v) else float(v)

            converged = bool(member("converged", 0.0))
            late_gain = member("late_gain")
            records.append(
                {
                    "part": r["part"],
                    "d": int(r["d"]),
                    "s": float(r["s"]),
                    "depth": int(r["depth"]),
                    "n": int(r["n"]),
                    "width": int(r["width"]),
                    "parameters": int(r["parameters"]),
                    "activation": name,
                    "seed": int(seed),
                    "test_mse": float(value),
                    "train_mse": member("train_mse"),
                    "adam_train_mse": member("adam_train_mse"),
                    "noise": float(r["noise"]),
                    "noise_mse": float(r.get("noise_mse", r["noise"] ** 2)),
                    "converged": converged,
                    "iterations": member("iterations"),
                    "late_gain": late_gain,
                    "settled": converged or (np.isfinite(late_gain) and late_gain <= settle_tol * float(value)),
                }
            )
    long = pd.DataFrame.from_records(records)
    if long.empty:
        return long
    # Canonical order (stable: seeds keep their column order), so slopes and intervals do
    # not depend on the order in which the units ran: within each (cell, activation), ascending n or N.
    return long.sort_values(["part", "d", "s", "depth", "activation", "n", "parameters"], kind="stable")


def slope_table(long: pd.DataFrame, part: str, x: str, y: str) -> list[dict[str, Any]]:
    from ...analysis import loglog_slope

    out = []
    rows = long[long["part"] == part]
    for (d, s, depth, name), group in rows.groupby(["d", "s", "depth", "activation"]):
        values = group[y].to_numpy(float)
        xs = group[x].to_numpy(float)
        # a log-log fit needs finite positive errors: the others (a diverged fit's NaN or inf, an exact 0)
        # are left out of the fit and counted in the row, not dropped silently
        keep = np.isfinite(values) & (values > 0)
        if len(np.unique(xs[keep])) < 3:
            continue
        fit = loglog_slope(xs[keep], values[keep], n_boot=1000)
        # The rate is asymptotic: the slope over the largest half of the grid should agree with it
        # too. A slope carried by the small-x end (e.g. over-parametrised fits at small n) does not.
        levels = np.unique(xs[keep])
        upper = keep & (xs >= levels[len(levels) // 2])
        upper_fit = loglog_slope(xs[upper], values[upper], n_boot=1000) if len(np.unique(xs[upper])) >= 3 else None
        out.append(
            {
                "d": d,
                "s": s,
                "depth": depth,
                "activation": name,
                "fit": fit,
                "upper_fit": upper_fit,
                "train": float(group["train_mse"].median()),
                "adam": float(group["adam_train_mse"].median()),
                "train_ratio": float((group["train_mse"] / group["noise_mse"]).median())
                if part == "estimation"
                else float("nan"),
                "settled": int(group["settled"].sum()),
                "converged": int(group["converged"].sum()),
                "members": len(group),
                "left_out": int((~keep).sum()),  # members whose error is not finite and positive (not in the fit)
                "largest": float(group[y][group[x] == xs.max()].median()),
            }
        )
    return out


def _members_cell(row: dict[str, Any]) -> str:
    """settled (converged) / members, and how many members' errors the fit left out (not finite and positive)."""
    cell = f"{row['settled']} ({row['converged']}) / {row['members']}"
    return cell + (f", {row['left_out']} not in the fit (error not finite and positive)" if row["left_out"] else "")


def _upper_cell(row: dict[str, Any]) -> str:
    fit = row["upper_fit"]
    return "—" if fit is None else f"{fit.slope:.3f} [{fit.low:.3f}, {fit.high:.3f}]"


def _limited(row: dict[str, Any], share: float = 0.8) -> str:
    return "yes" if row["settled"] < share * row["members"] else "no"


def separation_section(long: pd.DataFrame, config: SmoothnessRatesConfig) -> list[str]:
    """Pairwise slope differences smooth − ReLU in the estimation cells where the cap predicts a gap."""
    from ...analysis import loglog_slope, minimax_exponent
    from ...analysis.rates import relu_estimation_exponent

    rows = long[long["part"] == "estimation"]
    cells = sorted(
        {
            (int(d), float(s), int(L))
            for d, s, L in zip(rows["d"], rows["s"], rows["depth"])
            if relu_estimation_exponent(float(s), int(d), int(L)) > minimax_exponent(float(s), int(d)) + 1e-12
        }
    )
    if not cells:
        return []
    lines = [
        "",
        "## (a′) Where the ReLU cap predicts separation in n (L < s)",
        "",
        "Each smooth member and the ReLU member of the same seed see the same data, so the slope of "
        "log(smooth excess risk / ReLU excess risk) in log n is the slope difference, with a stratified "
        "95% t-interval (pure-error variance over seeds). *Smooth faster* = the interval lies below 0. Predicted difference: "
        "−2s/(2s+d) − (−2r/(2r+d)), r = min(L, s).",
        "",
        "| d | s | L | smooth rate −2s/(2s+d) | ReLU cap rate −2r/(2r+d) | predicted difference | activation | slope | ReLU slope | difference [95%] | smooth faster | largest-n ratio smooth/ReLU | optimisation-limited (smooth / ReLU) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for d, s, L in cells:
        cell = rows[(rows["d"] == d) & (rows["s"] == s) & (rows["depth"] == L)]
        relu = cell[cell["activation"] == "relu"].set_index(["n", "seed"])["test_mse"]
        if relu.empty:
            continue
        smooth_rate, relu_rate = minimax_exponent(s, d), relu_estimation_exponent(s, d, L)
        relu_summary = {r["activation"]: r for r in slope_table(cell, "estimation", "n", "test_mse")}
        for name in SMOOTH:
            member = cell[cell["activation"] == name].set_index(["n", "seed"])["test_mse"]
            joined = pd.concat([member.rename("smooth"), relu.rename("relu")], axis=1).dropna()
            joined = joined[(joined["smooth"] > 0) & (joined["relu"] > 0)]
            if joined.empty or joined.index.get_level_values("n").nunique() < 3:
                continue
            ns = joined.index.get_level_values("n").to_numpy(float)
            diff = loglog_slope(ns, (joined["smooth"] / joined["relu"]).to_numpy(float), n_boot=1000)
            largest = joined.loc[joined.index.get_level_values("n") == ns.max()]
            ratio = float(largest["smooth"].median() / largest["relu"].median())
            own, base = relu_summary.get(name), relu_summary.get("relu")
            lines.append(
                f"| {d} | {s:g} | {L} | {smooth_rate:.3f} | {relu_rate:.3f} | {smooth_rate - relu_rate:.3f} | {name} | "
                f"{own['fit'].slope:.3f} | {base['fit'].slope:.3f} | {diff.slope:.3f} [{diff.low:.3f}, {diff.high:.3f}] | "
                f"{'yes' if diff.high < 0 else 'no'} | {ratio:.2f} | {_limited(own)} / {_limited(base)} |"
                if own is not None and base is not None
                else f"| {d} | {s:g} | {L} | {smooth_rate:.3f} | {relu_rate:.3f} | {smooth_rate - relu_rate:.3f} | {name} | — | — | "
                f"{diff.slope:.3f} [{diff.low:.3f}, {diff.high:.3f}] | {'yes' if diff.high < 0 else 'no'} | {ratio:.2f} | — |"
            )
    return lines


def report_markdown(results: pd.DataFrame, config: SmoothnessRatesConfig) -> str:
    from ...analysis import minimax_exponent
    from ...analysis.rates import relu_depth_cap_exponent, relu_estimation_exponent

    long = long_table(results, config.settle_tol) if not results.empty else pd.DataFrame()
    lines = [
        "# smoothness-rates: error vs samples and parameters at constant depth",
        "",
        "Liu, Wang, Wu, Zhang, *Smoothness Adaptivity in Constant-Depth Neural Networks*, arXiv 2602.19691. "
        "Paper: smooth activations (GELU, SiLU, Tanh) reach the minimax rate n^{−2s/(2s+d)} (log factors aside) "
        "and the approximation rate N^{−s/d} at constant depth; fixed-depth ReLU is capped at N^{−min(L−1,s)/d} "
        "(Theorem 6.1; the paper's L counts layers of neurons including input and output, so L − 1 = our weight "
        "layers and the cap is −min(L, s)/d in this table's L); "
        "in their two-layer experiment the test error falls markedly faster with n for the smooth activations. "
        f"Ours: lacunary targets of exact smoothness s (K = {config.levels} levels, {config.directions} directions), noise σ = {config.noise:g}, "
        f"budget N ∝ n^{{d/(2s+d)}} (c_N = {config.budget:g}, min width {config.min_width}), float64, "
        f"full-batch Adam ({config.steps} steps, cosine from lr {config.lr:g}, first-layer init scale "
        f"{config.input_scale:g}) then per-member full-batch L-BFGS (≤ {config.lbfgs_iters} iterations, stops on "
        f"relative loss change ≤ {config.ftol:g})"
        + (f" then ≤ {config.lm_iters} Levenberg–Marquardt iterations" if config.lm_iters else "")
        + f"; approximation part {config.approx_steps} Adam steps"
        + (f" + ≤ {config.approx_lbfgs_iters} L-BFGS iterations" if config.approx_lbfgs_iters else "")
        + (
            f" + ≤ {config.approx_lm_iters} per-member Levenberg–Marquardt iterations (exact Gauss–Newton curvature)"
            if config.approx_lm_iters
            else ""
        )
        + f"; seeds {list(config.seeds)}; slopes by least squares on "
        "log–log with 95% t-intervals (pure-error variance over seeds; analysis.loglog_slope). L = number of weight layers (the paper's L − 1).",
        "",
        f"*Settled* member: L-BFGS converged, or the training MSE it gained in the second half of its L-BFGS budget "
        f"is ≤ {config.settle_tol:g} × its measured error. A row is *optimisation-limited* when fewer than 80% of its "
        "members (all sizes × seeds) are settled.",
        "",
    ]
    if long.empty:
        return "\n".join(lines + ["No results yet.", ""])
    lines += [
        "## (a) Estimation: excess risk ‖f̂ − f‖² vs n",
        "",
        "Train MSE / σ̂²: final training MSE over the mean squared noise actually drawn (≈ 1 − N/n for an "
        "empirical risk minimiser that fits f well; > 1 means bias or underfitting).",
        "",
        "| d | s | L | activation | paper rate −2s/(2s+d) | ReLU cap rate −2r/(2r+d), r = min(L, s) | our slope [95%] | contains paper rate | slope over the largest half of n [95%] | median train MSE after Adam | median train MSE final | train MSE / σ̂² | settled (converged) / members | optimisation-limited | median excess risk at largest n |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in slope_table(long, "estimation", "n", "test_mse"):
        rate = minimax_exponent(row["s"], row["d"])
        cap = relu_estimation_exponent(row["s"], row["d"], row["depth"])
        fit = row["fit"]
        lines.append(
            f"| {row['d']} | {row['s']:g} | {row['depth']} | {row['activation']} | {rate:.3f} | {cap:.3f} | "
            f"{fit.slope:.3f} [{fit.low:.3f}, {fit.high:.3f}] | {'yes' if fit.contains(rate) else 'no'} | "
            f"{_upper_cell(row)} | {row['adam']:.2e} | {row['train']:.2e} | {row['train_ratio']:.2f} | "
            f"{_members_cell(row)} | {_limited(row)} | {row['largest']:.2e} |"
        )
    lines += separation_section(long, config)
    lines += [
        "",
        "## (b) Approximation: test RMSE vs parameters N (noiseless fit)",
        "",
        "| d | s | L | activation | paper rate (smooth: −s/d; ReLU cap: −min(L, s)/d, L = weight layers) | our slope of RMSE [95%] | slope over the largest half of N [95%] | median train MSE after Adam | median train MSE final | settled (converged) / members | optimisation-limited | median RMSE at largest N |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    approx = long[long["part"] == "approximation"].copy()
    if not approx.empty:
        approx["rmse"] = np.sqrt(approx["test_mse"])
        for row in slope_table(approx, "approximation", "parameters", "rmse"):
            d, s, depth = row["d"], row["s"], row["depth"]
            rate = -s / d if row["activation"] in SMOOTH else relu_depth_cap_exponent(s, d, depth)
            fit = row["fit"]
            lines.append(
                f"| {d} | {s:g} | {depth} | {row['activation']} | {rate:.3f} | {fit.slope:.3f} "
                f"[{fit.low:.3f}, {fit.high:.3f}] | {_upper_cell(row)} | {row['adam']:.2e} | {row['train']:.2e} | "
                f"{_members_cell(row)} | {_limited(row)} | {row['largest']:.2e} |"
            )
    lines += floor_section(long, results)
    lines += [
        "",
        "## Where optimisation, not approximation, limits the slope",
        "",
        "Measured errors are approximation + estimation + *optimisation* error; the theory's rates are for the "
        "empirical risk minimiser. Each network is trained to a stationary point where the budget allows "
        "(Adam, then L-BFGS and/or Levenberg–Marquardt until the relative loss change stalls), and every member records whether it got "
        "there (converged) or how much the last half of its budget still gained. Rows flagged optimisation-limited "
        "are evidence about the optimiser at this budget, not about the function class; a stationary point "
        "may still be a poor local minimum, which no per-member test here can rule out.",
        "",
    ]
    return "\n".join(lines)


def floor_rows(results: pd.DataFrame) -> pd.DataFrame:
    """The certified ReLU floor rows (part ``relu-floor``) with their RMSE."""
    if "part" not in results.columns:
        return pd.DataFrame()
    floors = results[results["part"] == "relu-floor"].copy()
    if not floors.empty:
        floors["floor_rmse"] = np.sqrt(floors["floor_mse"].astype(float))
    return floors


def floor_section(long: pd.DataFrame, results: pd.DataFrame) -> list[str]:
    """Table (c): the certified ReLU floor against the trained networks of the same depth and size."""
    from ...analysis import loglog_slope

    floors = floor_rows(results)
    if floors.empty:
        return []
    lines = [
        "",
        "## (c) The ReLU depth cap, certified (d = 1)",
        "",
        "A ReLU network ℝ → ℝ with L weight layers of width w has at most (w + 1)^{L−1} linear pieces, so on "
        "the sorted test points its MSE is at least that of the best segmentation into that many "
        "least-squares lines (exact dynamic programme). The floor holds for **every** ReLU network of this "
        "depth and width, however trained; a smooth network of the same size below it beats all of them. "
        "Floor 0 with pieces ≥ n/2 (or above `floor_max_pieces`) is vacuous. At L = 2 the floor is the paper's "
        "cap N^{−min(L−1, s)/d} with the paper's L = 3 (layers of neurons): −2 for s ≥ 2 at d = 1.",
        "",
        "| d | s | L | N | width | pieces ≤ | certified ReLU floor RMSE | trained ReLU RMSE (median) | ReLU ≥ floor | best smooth activation: RMSE (median) | smooth below floor |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    approx = long[long["part"] == "approximation"] if not long.empty else pd.DataFrame()
    for _, row in floors.sort_values(["d", "s", "depth", "parameters"]).iterrows():
        d, s, depth, width = int(row["d"]), float(row["s"]), int(row["depth"]), int(row["width"])
        trained = (
            approx[(approx["d"] == d) & (approx["s"] == s) & (approx["depth"] == depth) & (approx["width"] == width)]
            if not approx.empty
            else pd.DataFrame()
        )
        relu = (
            np.sqrt(trained[trained["activation"] == "relu"]["test_mse"])
            if not trained.empty
            else pd.Series(dtype=float)
        )
        smooth = trained[trained["activation"].isin(SMOOTH)] if not trained.empty else pd.DataFrame()
        floor = float(row["floor_rmse"])
        relu_cell = f"{relu.median():.2e}" if len(relu) else "—"
        # Rounding in the dynamic programme can put the floor ~1e-9 relative above the true value.
        relu_ok = ("yes" if bool((relu >= floor * (1 - 1e-6)).all()) else "**no**") if len(relu) else "—"
        if len(smooth):
            medians = np.sqrt(smooth.groupby("activation")["test_mse"].median())
            best = medians.idxmin()
            smooth_cell = f"{best} {medians[best]:.2e}"
            below = "yes" if medians[best] < floor else "no"
        else:
            smooth_cell, below = "—", "—"
        floor_cell = f"{floor:.2e}" if bool(row["floor_computed"]) else "0 (vacuous)"
        lines.append(
            f"| {d} | {s:g} | {depth} | {int(row['parameters'])} | {width} | {int(row['pieces'])} | "
            f"{floor_cell} | {relu_cell} | {relu_ok} | {smooth_cell} | {below} |"
        )
    slopes = []
    for (d, s, depth), group in floors.groupby(["d", "s", "depth"]):
        group = group[group["floor_computed"].astype(bool) & (group["floor_mse"] > 0)]
        if len(group) >= 3:
            fit = loglog_slope(group["parameters"].to_numpy(float), group["floor_rmse"].to_numpy(float), n_boot=200)
            cap = -min(float(depth), float(s)) / d
            slopes.append(f"d = {d}, s = {s:g}, L = {depth}: {fit.slope:.2f} (cap −min(L, s)/d = {cap:.2f})")
    if slopes:
        lines += ["", "Slope of the certified floor's RMSE in N (the cap itself, measured): " + "; ".join(slopes) + "."]
    return lines
