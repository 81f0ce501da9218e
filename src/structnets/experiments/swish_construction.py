"""Experiment ``swish-construction``: the explicit low-rank Swish network against its error bound.

Li, Li, Wang, Tang, *Approximation to Smooth Functions by Low-Rank Swish Networks* (ICML 2025),
Sec. 4: for f ∈ C^{β,R}([0,1]^d), the network Σ_m P_m φ_m^τ built from Swish bumps and Swish
product sub-networks satisfies |nn − f| ≤ c₄M^{−β} + c₅(M+1)^d τe^{−τ} + c₃(M+1)^d/λ². We build
it (:func:`structnets.constructive.swish_approximator`) in float64 for several targets of known
smoothness, measure the sup error on a dense grid, and sweep M, τ and λ one at a time. Each unit is
one (target, M, τ, λ); rows hold the measured error and the three evaluated bound terms.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..runner.figures import save_figure
from ..runner.experiment import FunctionExperiment, JSONScalar, Unit

FAMILIES = ("power", "sine", "lacunary")


def parse_target(spec: str):
    """``"family:d:beta"`` → a :class:`structnets.data.SmoothTarget` (e.g. ``"power:1:1.5"``)."""
    from ..data import lacunary_target, power_target, sine_target

    try:
        family, d, beta = spec.split(":")
        d_value, beta_value = int(d), float(beta)
    except ValueError as error:
        raise ValueError(f"`targets` entries must look like 'power:1:1.5', got {spec!r}") from error
    if family not in FAMILIES:
        raise ValueError(f"`targets` family must be one of {list(FAMILIES)}, got {family!r} in {spec!r}")
    if family == "power":
        return power_target(d_value, beta_value)
    if family == "sine":
        return sine_target(d_value, beta_value)
    return lacunary_target(d_value, beta_value, levels=4)


@dataclass(frozen=True)
class SwishConstructionConfig:
    """Configuration of ``swish-construction``; ``SwishConstructionConfig()`` is the full sweep.

    Attributes:
        targets: ``"family:d:beta"`` specs (families: power, sine, lacunary).
        Ms_1d, Ms_2d: grid resolutions M swept for d = 1 and d ≥ 2 (at ``tau``, ``lam``).
        taus: bump sharpness values swept at M = ``sweep_M`` (and ``lam``).
        lams: product scales swept at M = ``sweep_M`` (and ``tau``).
        tau, lam: the fixed values while another parameter is swept.
        sweep_M_1d, sweep_M_2d: M used in the τ and λ sweeps.
        grid_1d, grid_2d: points per axis of the dense evaluation grid.
    """

    targets: tuple[str, ...] = ("power:1:0.5", "power:1:1.5", "sine:1:3", "power:2:1.5", "sine:2:2")
    Ms_1d: tuple[int, ...] = (4, 8, 16, 32, 64, 128, 256)
    Ms_2d: tuple[int, ...] = (4, 8, 16, 32)
    taus: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
    lams: tuple[float, ...] = (4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0)
    tau: float = 40.0
    lam: float = 1e4
    sweep_M_1d: int = 32
    sweep_M_2d: int = 8
    grid_1d: int = 40001
    grid_2d: int = 301

    @classmethod
    def quick(cls) -> SwishConstructionConfig:
        """The ``--quick`` preset: smaller M and coarser grids (about a minute on one core)."""
        return cls(
            Ms_1d=(4, 8, 16, 32, 64),
            Ms_2d=(4, 8, 16),
            taus=(0.5, 2.0, 8.0, 32.0),
            lams=(4.0, 64.0, 1024.0, 16384.0),
            sweep_M_2d=6,
            grid_1d=20001,
            grid_2d=121,
        )

    def __post_init__(self) -> None:
        from .._validation import check_int, check_real

        if not self.targets:
            raise ValueError("`targets` must list at least one target, got ()")
        for spec in self.targets:
            parse_target(spec)
        for M in (*self.Ms_1d, *self.Ms_2d, self.sweep_M_1d, self.sweep_M_2d):
            check_int("M", M, low=1)
        for value in (*self.taus, self.tau):
            check_real("tau", value, low=0.0, low_open=True)
        for value in (*self.lams, self.lam):
            check_real("lam", value, low=0.0, low_open=True)
        check_int("grid_1d", self.grid_1d, low=11)
        check_int("grid_2d", self.grid_2d, low=11)


def _units(config: SwishConstructionConfig, finished: pd.DataFrame) -> list[Unit]:
    units: list[Unit] = []
    for spec in config.targets:
        d = parse_target(spec).d
        Ms = config.Ms_1d if d == 1 else config.Ms_2d
        sweep_M = config.sweep_M_1d if d == 1 else config.sweep_M_2d
        grid = config.grid_1d if d == 1 else max(11, round(config.grid_2d ** (2 / d)))
        points = [("M", M, config.tau, config.lam) for M in Ms]
        points += [("tau", sweep_M, tau, config.lam) for tau in config.taus]
        points += [("lam", sweep_M, config.tau, lam) for lam in config.lams]
        for sweep, M, tau, lam in points:
            units.append(
                Unit(
                    key=f"{spec}/{sweep}/M={M}/tau={tau:g}/lam={lam:g}",
                    params={"target": spec, "sweep": sweep, "M": M, "tau": tau, "lam": lam, "grid": grid},
                )
            )
    return units


def _run_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    import torch

    from ..constructive import swish_approximator

    target = parse_target(params["target"])
    start = time.perf_counter()
    approx = swish_approximator(
        target.function, target.derivative, target.d, target.beta, int(params["M"]),
        tau=float(params["tau"]), lam=float(params["lam"]), R=target.R,
    )
    build = time.perf_counter() - start
    axis = torch.linspace(0, 1, int(params["grid"]), dtype=torch.float64)
    points = torch.cartesian_prod(*[axis] * target.d).reshape(-1, target.d)
    error = 0.0
    with torch.no_grad():
        for chunk in points.split(8192):
            error = max(error, (approx(chunk) - target(chunk)).abs().max().item())
    return {
        "target": params["target"],
        "d": target.d,
        "beta": target.beta,
        "R": target.R,
        "sweep": params["sweep"],
        "M": int(params["M"]),
        "tau": float(params["tau"]),
        "lam": float(params["lam"]),
        "error": error,
        "taylor": approx.bound.taylor,
        "leakage": approx.bound.leakage,
        "product": approx.bound.product,
        "bound": approx.bound.total,
        "width": approx.width,
        "unpadded_width": max(approx.stage_widths),
        "padding": approx.padding,
        "paper_width": approx.paper_width,
        "depth": len(approx.stage_widths),
        "ranks": " ".join(str(r) for r in approx.ranks),
        "parameters": int(sum(p.numel() for p in approx.network.parameters())),
        "grid_points": int(points.shape[0]),
        "build_seconds": build,
        "seconds": time.perf_counter() - start,
    }


def _m_slopes(results: pd.DataFrame, spec: str, taylor_dominated: bool = False) -> tuple[float, float, float, int] | None:
    """Least-squares slope of log error on log M over the M sweep, and its bootstrap 95% interval.

    With ``taylor_dominated``, only the M whose bound is dominated by the Taylor term
    (T ≥ 10·(bump + product)) are used: the regime where the theory predicts slope −β.
    """
    from ..analysis import loglog_slope

    rows = results[(results["target"] == spec) & (results["sweep"] == "M")].sort_values("M")
    if taylor_dominated:
        rows = rows[rows["taylor"] >= 10 * (rows["leakage"] + rows["product"])]
    if len(rows) < 3:
        return None
    fit = loglog_slope(rows["M"].to_numpy(float), rows["error"].to_numpy(float), n_boot=1000)
    return fit.slope, fit.low, fit.high, len(rows)


def _report(results: pd.DataFrame, config: SwishConstructionConfig) -> str:
    lines = [
        "# swish-construction: the explicit low-rank Swish network vs its error bound",
        "",
        "Li, Li, Wang, Tang, *Approximation to Smooth Functions by Low-Rank Swish Networks*, ICML 2025, "
        "Sec. 4. Paper: |nn − f| ≤ c₄M^{−β} (Taylor) + c₅(M+1)^d τe^{−τ} (bump) + c₃(M+1)^d/λ² "
        "(products); width 2C(d+1,d−1) + 4C(d+κ−2,d−1) + 4C(d+κ−1,d−1) + 6(M+1)^d; a bias-free linear "
        "layer of width ≤ 1/3 of the nonlinear width between nonlinear layers. Ours: the network built "
        "in float64, sup error measured on a dense grid, bound terms evaluated with explicit constants "
        "(see `structnets.constructive.swish_approximator`).",
        "",
        "## Error vs M: fitted slope against the Taylor rate −β",
        "",
        f"τ = {config.tau:g}, λ = {config.lam:g}. Slope: least squares on log error vs log M, bootstrap 95% "
        "interval; 'Taylor-dominated' keeps the M whose bound has T ≥ 10·(bump + product), where the "
        "theory predicts −β (beyond it the product floor c₃/λ² takes over and the error flattens).",
        "",
        "| target | d | β | M range | paper slope −β | our slope, all M [95%] | our slope, Taylor-dominated M [95%] (points) | error ≤ bound at every M | max error/bound |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for spec in config.targets:
        rows = results[(results["target"] == spec) & (results["sweep"] == "M")]
        if rows.empty:
            lines.append(f"| {spec} | | | not run | | | | | |")
            continue
        fit = _m_slopes(results, spec)
        slope = "—" if fit is None else f"{fit[0]:.2f} [{fit[1]:.2f}, {fit[2]:.2f}]"
        fit = _m_slopes(results, spec, taylor_dominated=True)
        dominated = "—" if fit is None else f"{fit[0]:.2f} [{fit[1]:.2f}, {fit[2]:.2f}] ({fit[3]})"
        ok = bool((rows["error"] <= rows["bound"]).all())
        lines.append(
            f"| {spec} | {int(rows['d'].iloc[0])} | {rows['beta'].iloc[0]:g} | {int(rows['M'].min())}–{int(rows['M'].max())} | "
            f"{-rows['beta'].iloc[0]:.2f} | {slope} | {dominated} | {'yes' if ok else '**NO**'} | {(rows['error'] / rows['bound']).max():.3f} |"
        )
    lines += ["", "## Every unit: measured sup error and the three bound terms", ""]
    lines += [
        "| target | sweep | M | τ | λ | error | Taylor | bump | product | bound | width (ours) | of which padding | width (paper formula) | ranks H |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in results.sort_values(["target", "sweep", "M", "tau", "lam"]).iterrows():
        lines.append(
            f"| {r['target']} | {r['sweep']} | {int(r['M'])} | {r['tau']:g} | {r['lam']:g} | {r['error']:.3e} | "
            f"{r['taylor']:.3e} | {r['leakage']:.3e} | {r['product']:.3e} | {r['bound']:.3e} | "
            f"{int(r['width'])}{' **(> paper)**' if int(r['width']) > int(r['paper_width']) else ''} | "
            f"{int(r.get('padding', 0) or 0)} | {int(r['paper_width'])} | {r['ranks']} |"
        )
    total = len(results)
    below = int((results["error"] <= results["bound"]).sum()) if total else 0
    above = int((results["width"] > results["paper_width"]).sum()) if total else 0
    padded = int((results["padding"] > 0).sum()) if total and "padding" in results.columns else 0
    lines += [
        "",
        f"Measured error ≤ bound in {below} of {total} units. Our width counts 4 units per bump and per "
        "product and 2 per carried value, and every bias-free linear layer has rank H ≤ width/3 (asserted "
        f"in the tests). Width above the paper's formula in {above} of {total} units here; it is above in "
        "general exactly where the polynomial layers outgrow the bump layer: d = 1 when 4κ + 4 > 10 + 6(M + 1) "
        "(e.g. M = 1, κ ≥ 5: 24 vs 22), d = 2 at M = 1 for κ ≥ 4 (87 vs 66) and M = 2 for κ = 5 (123 vs 104). "
        f"Zero units added to reach H ≤ W/3 (padding): {padded} of {total} units; at d = 1 never (the parallel "
        "Horner schedule gives the 1/3 by construction); at d ≥ 2 only for κ ≥ 2 at small M.",
        "",
        "Reading the τ sweep: the Swish corners add O(M^{−β}/τ) near the breakpoints, but there the trapezoid "
        "weights are small, so the weighted patch error sup_y Σ_k |ψ^τ(y−3k)||y−3k|^β equals the trapezoid's "
        "1.5^β to 4 digits for τ ≥ 8: at d = 1 the measured sup error and the bound do not move with τ beyond "
        "that (the paper's c₅(M+1)^d τe^{−τ} and our earlier 2^β-weighted O(1/τ) term over-estimate it).",
        "",
    ]
    return "\n".join(lines)


def _figures(results: pd.DataFrame, config: SwishConstructionConfig, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    specs = [s for s in config.targets if not results[results["target"] == s].empty]
    if not specs:
        return paths
    for sweep, label in (("M", "M (grid resolution)"), ("tau", "τ (bump sharpness)"), ("lam", "λ (product scale)")):
        fig, axes = plt.subplots(1, len(specs), figsize=(3.2 * len(specs), 3.2), squeeze=False)
        for ax, spec in zip(axes[0], specs):
            rows = results[(results["target"] == spec) & (results["sweep"] == sweep)].sort_values(sweep)
            if rows.empty:
                continue
            x = rows[sweep].to_numpy(float)
            ax.loglog(x, rows["error"], "o-", label="measured sup error", color="black")
            ax.loglog(x, rows["bound"], "s--", label="bound (total)", color="tab:red")
            ax.loglog(x, rows["taylor"], ":", label="Taylor c₄M^{−β}", color="tab:blue")
            ax.loglog(x, rows["leakage"].clip(lower=1e-300), ":", label="bump", color="tab:green")
            if (rows["product"] > 0).any():
                ax.loglog(x, rows["product"].clip(lower=1e-300), ":", label="product c₃/λ²", color="tab:purple")
            if sweep == "M":
                beta = rows["beta"].iloc[0]
                ref = rows["error"].iloc[0] * (x / x[0]) ** (-beta)
                ax.loglog(x, ref, color="gray", lw=0.8, label=f"slope −β = {-beta:g}")
            ax.set_title(spec, fontsize=9)
            ax.set_xlabel(label)
        axes[0][0].set_ylabel("sup error on [0,1]^d")
        axes[0][0].legend(fontsize=6)
        fig.suptitle(f"Low-rank Swish construction: error and bound vs {label}", fontsize=10)
        paths.append(save_figure(fig, out_dir / f"error_vs_{sweep}.png"))
    return paths


EXPERIMENT = FunctionExperiment(
    name="swish-construction",
    description=(
        "Explicit low-rank Swish network (Taylor patches × Swish bumps, Swish products) vs its "
        "three-term error bound, sweeping M, τ, λ (Li et al., ICML 2025, Sec. 4)"
    ),
    config_class=SwishConstructionConfig,
    units_fn=_units,
    run_unit_fn=_run_unit,
    report_fn=_report,
    figures_fn=_figures,
)

__all__ = ["EXPERIMENT", "SwishConstructionConfig", "parse_target"]
