"""Claims of the smoothness-adaptivity paper (seed 002), decided by ``smoothness-rates``.

Liu, Wang, Wu, Zhang, *Smoothness Adaptivity in Constant-Depth Neural Networks: Optimal Rates via
Smooth Activations* (arXiv 2602.19691): constant-depth networks with smooth activations reach the
minimax estimation rate n^{−2s/(2s+d)} log n (Theorem 5.1, for the ERM) and the approximation
rate N^{−s/d} at depth 6 or 7 (Theorems 4.1 and 4.4), while ReLU networks of depth L are capped at N^{−min(L−1, s)/d} (Theorem 6.1;
:func:`structnets.analysis.relu_depth_cap_exponent` for the depth convention).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ..analysis import loglog_slope, minimax_exponent
from ..analysis.rates import relu_depth_cap_exponent, relu_estimation_exponent
from .evidence import NOT_REPRODUCED, OPTIMISATION_LIMITED, REFUTED, REPRODUCED, Claim, Evidence, not_tested

PAPER = "smoothness adaptivity (002)"
SMOOTH = ("tanh", "gelu", "silu")
SETTLED_SHARE = 0.8  # a cell is optimisation-limited when fewer of its members settled (the report's rule)


def members(results: pd.DataFrame, settle_tol: float) -> pd.DataFrame:
    """One row per (unit, activation, seed): the smoothness-rates report's ``long_table``.

    A member is *settled* when L-BFGS converged, or when the training MSE it gained in the second
    half of its L-BFGS budget is at most ``settle_tol`` × its test MSE. The rows are in the report's
    canonical order, so the bootstrap intervals below are the report's.
    """
    from ..experiments.smoothness_rates.report import long_table

    return long_table(results, settle_tol) if not results.empty else pd.DataFrame()


def _cells(long: pd.DataFrame, part: str, x: str, y: str, activations: tuple[str, ...]) -> list[dict[str, Any]]:
    """The report's ``slope_table`` rows of ``activations``, with ``limited`` by the report's 80 % rule."""
    from ..experiments.smoothness_rates.report import slope_table

    chosen = long[long["activation"].isin(activations)]
    out = []
    for row in slope_table(chosen, part, x, y):
        out.append({**row, "limited": row["settled"] < SETTLED_SHARE * row["members"]})
    return out


def _verdict_rate(cells: list[dict[str, Any]], rate_of: Callable[[dict[str, Any]], float]) -> tuple[str, str]:
    """A cell reproduces the rate when its bootstrap 95 % interval contains it (the report's 'contains
    paper rate'). A slope significantly steeper is consistent with the theorem's upper bound but is not
    its rate (a pre-asymptotic regime or an easier target), so it does not count as reproduced either;
    where every slower cell is optimisation-limited and none is steeper, the miss is flagged
    optimisation-limited. An asymptotic rate is never refuted by a finite grid."""
    inside = [c for c in cells if c["fit"].contains(rate_of(c))]
    slower = [c for c in cells if c["fit"].low > rate_of(c)]
    steeper = [c for c in cells if c["fit"].high < rate_of(c)]
    text = (
        f"rate inside the interval in {len(inside)} of {len(cells)} cells, steeper in {len(steeper)}, slower in "
        f"{len(slower)}: "
        + "; ".join(
            f"d={c['d']} s={c['s']:g} L_w={c['depth']} {c['activation']} {c['fit'].slope:.2f} "
            f"[{c['fit'].low:.2f}, {c['fit'].high:.2f}] vs {rate_of(c):.2f}"
            + (" (opt.-limited)" if c["limited"] else "")
            for c in cells
        )
    )
    if len(inside) == len(cells):
        return REPRODUCED, text
    if slower and all(c["limited"] for c in slower) and not steeper:
        return OPTIMISATION_LIMITED, text
    return NOT_REPRODUCED, text


def _estimation(results: pd.DataFrame, config: Any) -> Evidence:
    long = members(results, config.settle_tol)
    cells = _cells(long, "estimation", "n", "test_mse", SMOOTH) if not long.empty else []
    if not cells:
        return not_tested("no estimation cell with ≥ 3 sample sizes")
    verdict, text = _verdict_rate(cells, lambda c: minimax_exponent(c["s"], c["d"]))
    return Evidence(
        text,
        verdict,
        "bootstrap 95 % interval of the log–log slope of test MSE in n contains −2s/(2s+d)",
        int((results["part"] == "estimation").sum()),
    )


def _approximation(results: pd.DataFrame, config: Any) -> Evidence:
    long = members(results, config.settle_tol)
    if long.empty:
        return not_tested("no approximation units")
    long = long.assign(rmse=np.sqrt(long["test_mse"]))
    cells = _cells(long, "approximation", "parameters", "rmse", SMOOTH)
    if not cells:
        return not_tested("no approximation cell with ≥ 3 parameter counts")
    verdict, text = _verdict_rate(cells, lambda c: -c["s"] / c["d"])
    return Evidence(
        text,
        verdict,
        "bootstrap 95 % interval of the log–log slope of RMSE in N contains −s/d",
        int((results["part"] == "approximation").sum()),
    )


def _relu_cap(results: pd.DataFrame, config: Any) -> Evidence:
    long = members(results, config.settle_tol)
    if long.empty:
        return not_tested("no approximation units")
    long = long.assign(rmse=np.sqrt(long["test_mse"]))
    cells = [
        c
        for c in _cells(long, "approximation", "parameters", "rmse", ("relu",))
        if relu_depth_cap_exponent(c["s"], c["d"], c["depth"]) > -c["s"] / c["d"] + 1e-12
    ]
    if not cells:
        return not_tested("no ReLU approximation cell with ≥ 3 parameter counts where the cap binds (L_w < s)")
    below = [c for c in cells if c["fit"].high < relu_depth_cap_exponent(c["s"], c["d"], c["depth"])]
    text = "; ".join(
        f"d={c['d']} s={c['s']:g} L_w={c['depth']}: {c['fit'].slope:.2f} [{c['fit'].low:.2f}, {c['fit'].high:.2f}] "
        f"vs cap {relu_depth_cap_exponent(c['s'], c['d'], c['depth']):.2f}"
        for c in cells
    )
    return Evidence(
        text,
        NOT_REPRODUCED if below else REPRODUCED,
        "in every ReLU cell where the cap binds (L_w < s), the bootstrap 95 % interval of the slope of RMSE in N "
        "reaches the cap −min(L_w, s)/d or above, reproduced (corroborated: a lower bound on the error can only be "
        "consistent with measurements); an interval entirely below it, not reproduced (a finite-range slope "
        "steeper than an asymptotic cap with unknown constant does not contradict it)",
        sum(int(c["members"]) for c in cells),
    )


def _separation(results: pd.DataFrame, config: Any) -> Evidence:
    long = members(results, config.settle_tol)
    if long.empty:
        return not_tested("no estimation units")
    rows = long[long["part"] == "estimation"]
    cells = sorted(
        {
            (int(d), float(s), int(L))
            for d, s, L in zip(rows["d"], rows["s"], rows["depth"])
            if relu_estimation_exponent(float(s), int(d), int(L)) > minimax_exponent(float(s), int(d)) + 1e-12
        }
    )
    if not cells:
        return not_tested("no estimation cell where the ReLU cap predicts a gap (L_w < s)")
    # A comparison that fails (smooth not significantly faster) is explained by the optimiser only
    # when one of its two member groups is optimisation-limited; a failure with both settled counts.
    faster, tested, parts = 0, 0, []
    failed_settled, slower_settled, failed_limited = 0, 0, 0
    for d, s, L in cells:
        cell = rows[(rows["d"] == d) & (rows["s"] == s) & (rows["depth"] == L)]
        relu = cell[cell["activation"] == "relu"].set_index(["n", "seed"])
        for name in SMOOTH:
            member = cell[cell["activation"] == name].set_index(["n", "seed"])
            joined = pd.concat([member["test_mse"].rename("smooth"), relu["test_mse"].rename("relu")], axis=1).dropna()
            joined = joined[(joined["smooth"] > 0) & (joined["relu"] > 0)]
            ns = joined.index.get_level_values("n").to_numpy(float)
            if len(np.unique(ns)) < 3:
                continue
            fit = loglog_slope(ns, (joined["smooth"] / joined["relu"]).to_numpy(float), n_boot=1000)
            tested += 1
            limited = bool(member["settled"].mean() < SETTLED_SHARE or relu["settled"].mean() < SETTLED_SHARE)
            if fit.high < 0:
                faster += 1
            elif limited:
                failed_limited += 1
            else:
                failed_settled += 1
                slower_settled += int(fit.low > 0)
            parts.append(
                f"d={d} s={s:g} L_w={L} {name}: {fit.slope:.2f} [{fit.low:.2f}, {fit.high:.2f}]"
                + (" (opt.-limited)" if limited else "")
            )
    if not tested:
        return not_tested("separation cells have fewer than 3 sample sizes")
    if faster == tested:
        verdict = REPRODUCED
    elif slower_settled:
        verdict = REFUTED
    elif failed_settled:
        verdict = NOT_REPRODUCED
    else:
        verdict = OPTIMISATION_LIMITED
    return Evidence(
        f"smooth faster in {faster} of {tested}: " + "; ".join(parts),
        verdict,
        "per estimation cell where the ReLU cap predicts a gap (L_w < s) and smooth activation: log–log slope in n "
        "of smooth/ReLU excess risk (same data per seed), bootstrap 95 % interval (the report's 'smooth faster'): "
        "below 0 in every one reproduced; otherwise above 0 in any whose smooth and ReLU groups both settled "
        "(smooth significantly slower with settled training) refuted; else not below 0 in any with both groups "
        "settled, not reproduced; else (every miss has a group < 80 % settled) optimisation-limited",
        tested,
    )


def _constant_depth(results: pd.DataFrame, config: Any) -> Evidence:
    from ..experiments.smooth_constant_depth.report import TOLERANCE, cell_slopes

    if results.empty or "bound" not in results.columns:
        return not_tested("no construction units")
    held = int((results["error"] <= results["bound"]).sum())
    cells, rate_ok, flat, parts = 0, 0, 0, []
    for (target, activation), group in results.groupby(["target", "activation"], sort=True):
        d, s = int(group["d"].iloc[0]), float(group["s"].iloc[0])
        if group["K"].nunique() < 2:
            continue
        slope = cell_slopes(group)["Kd_upper"]
        cells += 1
        # The report's per-cell verdict: rate within TOLERANCE, error ≤ bound at every K, one depth.
        ok = (
            abs(slope + s / d) <= TOLERANCE * s / d
            and bool((group["error"] <= group["bound"]).all())
            and group["depth"].nunique() == 1
        )
        rate_ok += int(ok)
        flat += int(not slope < 0)
        parts.append(f"{target} {activation}: {slope:.2f} vs {-s / d:.2f}{'' if ok else ' (not reproduced)'}")
    if not cells:
        return not_tested("no cell with two or more K")
    verdict = REPRODUCED if rate_ok == cells else REFUTED if flat else NOT_REPRODUCED
    depths = sorted({int(v) for v in results["depth"]})
    return Evidence(
        f"error ≤ bound in {held} of {len(results)} units; {rate_ok} of {cells} cells reproduced, at depth {depths} "
        "(weight layers); slope in K^d: " + "; ".join(parts),
        verdict,
        "per (target, activation) cell, the smooth-constant-depth report's verdict: the explicit construction's "
        f"log–log slope of sup error in K^d over the larger half of K (the rate in N once N ∝ K^d) within "
        f"{TOLERANCE:.0%} of −s/d, its error never above its computed bound, at one depth; every cell reproduced "
        "reproduced; the error not falling with K in some cell (slope ≥ 0) refuted; else not reproduced (an error "
        "above our computed bound says our bound's constants are wrong, not the paper's rate)",
        len(results),
    )


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "002-estimation-rate",
        PAPER,
        "Constant-depth networks with smooth activations reach the minimax estimation rate (Theorem 5.1)",
        "MSE ∝ n^{−2s/(2s+d)} log n",
        "smoothness-rates",
        _estimation,
    ),
    Claim(
        "002-approximation-rate",
        PAPER,
        "Constant-depth networks with smooth activations approximate at rate N^{−s/d} (Theorems 4.1, 4.4)",
        "error ∝ N^{−s/d}",
        "smoothness-rates",
        _approximation,
    ),
    Claim(
        "002-relu-cap",
        PAPER,
        "ReLU networks of fixed depth cannot beat N^{−min(L−1, s)/d} (Theorem 6.1)",
        "error ≥ N^{−min(L−1, s)/d}",
        "smoothness-rates",
        _relu_cap,
    ),
    Claim(
        "002-separation",
        PAPER,
        "Where the depth cap binds (L − 1 < s), smooth activations learn faster in n than ReLU",
        "error falls markedly faster in n for Tanh/GELU than ReLU (two-layer nets); exponents −2s/(2s+d) vs "
        "−2r/(2r+d), r = min(L−1, s), derived by us from Theorem 6.1",
        "smoothness-rates",
        _separation,
    ),
    Claim(
        "002-constant-depth-construction",
        PAPER,
        "An explicit constant-depth smooth-activation network reaches sup error O(N^{−s/d}) for every s "
        "(Theorem 4.1's construction)",
        "error ∝ N^{−s/d} at fixed depth",
        "smooth-constant-depth",
        _constant_depth,
    ),
)
