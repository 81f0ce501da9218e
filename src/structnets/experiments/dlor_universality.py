"""Experiment ``dlor-universality``: deep DLoR networks of width n + m + 2 approximate 2-D targets,
error against depth, and the parameters deep and wide DLoR networks need at equal error.

Chen, Li, Kim, Lavaei, *Structural Correspondence and Universal Approximation in Diagonal plus
Low-Rank Neural Networks* (arXiv 2605.05659), Theorems 5–8. One unit per (target, J): a shallow
random-feature approximant g with J neurons (:func:`structnets.constructive.dlor_universality.fit_shallow`),
and from that *same* g every network below, so their errors differ only by their transfer error
and the comparison of parameter counts is at equal error by construction:

* ``deep_r1``, ``deep_r2``: the register network of width N = n + m + 2
  (:func:`~structnets.constructive.dlor_universality.dlor_from_shallow`), rank 1 (depth 2J + m)
  and rank 2 (depth J + 1 + m): the construction behind Theorem 5.
* ``deep_generic``: Theorem 7's generic route, :func:`~structnets.constructive.dlor_network_from_dense`
  (``"deep"``, rank 2) applied to the register network read as a dense MLP of width N.
* ``wide_exact``: the depth-1 DLoR network of width J computing g exactly (rank max(n, m)).
* ``wide_generic``: the paper's wide network, the additive correspondence
  (``dlor_network_from_dense(g, "parallel", rank=2)``, σ per branch), for J ≤ ``generic_max_neurons``.
* ``shallow``: g itself, the dense one-hidden-layer network (reference).

Errors are measured on a test grid of [−1, 1]² against the target (sup and RMS), and against g
(the transfer error). The report reads only the results table.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from ..runner.experiment import FunctionExperiment, JSONScalar, Unit, run_experiment
from ..runner.figures import save_figure
from .dlor_sawtooth import single_thread

F64 = torch.float64


def _saddle(x: torch.Tensor) -> torch.Tensor:
    return x[:, 0] * x[:, 1]


def _cone(x: torch.Tensor) -> torch.Tensor:
    return torch.sqrt(x[:, 0] ** 2 + x[:, 1] ** 2)


def _ripple(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(math.pi * x[:, 0]) * torch.cos(math.pi * x[:, 1])


def _pair(x: torch.Tensor) -> torch.Tensor:
    return torch.stack([_saddle(x), _cone(x)], dim=1)


TARGETS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], str]] = {
    "saddle": (_saddle, "x₁x₂ (the orthogonal blind spot of rank-1 networks)"),
    "ripple": (_ripple, "sin(πx₁)cos(πx₂)"),
    "cone": (_cone, "‖x‖₂ (continuous, not differentiable at 0)"),
    "pair": (_pair, "(x₁x₂, ‖x‖₂), m = 2"),
}
"""2-D targets on [−1, 1]²: name -> (function of a (rows, 2) float64 tensor, description)."""

FAMILIES: tuple[str, ...] = ("shallow", "deep_r1", "deep_r2", "deep_generic", "wide_exact", "wide_generic")

BLINDSPOT_FLOOR = 4.0 / 135.0
"""min over unit v and g of E(x₁x₂ − g(vᵀx))² for x uniform on [−1, 1]² (at v = (1, 1)/√2): no
network whose first weight is rank 1 goes below it (see the ``dlor-blindspot`` experiment)."""


@dataclass(frozen=True)
class DLoRUniversalityConfig:
    """Configuration of ``dlor-universality``; ``DLoRUniversalityConfig()`` is the full run.

    Attributes:
        targets: names from :data:`TARGETS`.
        neurons: shallow neuron counts J (each a unit per target; depth grows linearly in J).
        activation: σ of every network.
        h: register scale of the deep construction (None: its default, 1e-6 for tanh).
        transfer_h: h of the generic routes (``dlor_network_from_dense``, deep and parallel).
        scale, fit_per_axis, ridge, seed: of the random-feature fit (``fit_shallow``).
        test_per_axis: test grid points per axis.
        generic_max_neurons: the wide generic network (width J, ⌈J/2⌉ branches per layer) is
            built only for J up to this (its cost grows as J³).
        thresholds: sup errors ε at which the report compares parameter counts.
    """

    targets: tuple[str, ...] = ("saddle", "ripple", "cone", "pair")
    neurons: tuple[int, ...] = (2, 4, 8, 16, 32, 64, 128, 256)
    activation: str = "tanh"
    h: float | None = None
    transfer_h: float = 1e-4
    scale: float = 4.0
    fit_per_axis: int = 48
    ridge: float = 1e-10
    seed: int = 0
    test_per_axis: int = 101
    generic_max_neurons: int = 128
    thresholds: tuple[float, ...] = (0.3, 0.1, 0.03, 0.01, 0.003, 0.001)

    @classmethod
    def quick(cls) -> DLoRUniversalityConfig:
        """The ``--quick`` preset: saddle and pair, J in {4, 12, 48}, coarser grids."""
        return cls(
            targets=("saddle", "pair"), neurons=(4, 12, 48), fit_per_axis=32, test_per_axis=41, generic_max_neurons=16
        )

    def __post_init__(self) -> None:
        from .._validation import check_choice, check_int, check_real
        from ..constructive.dlor_universality import _activations

        if not self.targets or not self.neurons:
            raise ValueError(f"`targets` and `neurons` must be non-empty, got {self.targets!r}, {self.neurons!r}")
        for target in self.targets:
            check_choice("targets", target, tuple(TARGETS))
        for j in self.neurons:
            check_int("neurons", j, low=1)
        check_choice("activation", self.activation, _activations())
        if self.h is not None:
            check_real("h", self.h, low=0.0, high=1.0, low_open=True)
        check_real("transfer_h", self.transfer_h, low=0.0, high=1.0, low_open=True)
        check_real("scale", self.scale, low=0.0, low_open=True)
        check_int("fit_per_axis", self.fit_per_axis, low=2, high=2000)
        check_real("ridge", self.ridge, low=0.0)
        check_int("seed", self.seed, low=0)
        check_int("test_per_axis", self.test_per_axis, low=2, high=2000)
        check_int("generic_max_neurons", self.generic_max_neurons, low=0)
        for eps in self.thresholds:
            check_real("thresholds", eps, low=0.0, low_open=True)


def _units(config: DLoRUniversalityConfig, finished: pd.DataFrame) -> list[Unit]:
    return [
        Unit(
            f"{target}/J={j}",
            {
                "target": target,
                "neurons": j,
                "activation": config.activation,
                "h": config.h,
                "transfer_h": config.transfer_h,
                "scale": config.scale,
                "fit_per_axis": config.fit_per_axis,
                "ridge": config.ridge,
                "seed": config.seed,
                "test_per_axis": config.test_per_axis,
                "generic": j <= config.generic_max_neurons,
            },
        )
        for target in config.targets
        for j in config.neurons
    ]


def _errors(out: torch.Tensor, reference: torch.Tensor, shallow: torch.Tensor) -> tuple[float, float, float]:
    """(sup |out − f|, RMS of out − f over points and outputs, sup |out − g|)."""
    diff = out - reference
    return float(diff.abs().max()), float(diff.pow(2).mean().sqrt()), float((out - shallow).abs().max())


def _count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def _nonlinear_layers(model: nn.Module) -> int:
    """σ layers of a DLoR network (a DLoRParallel counts once)."""
    from ..models.dlor_mlp import DLoRParallel
    from ..nn import ACTIVATIONS, activation

    kinds = tuple({type(activation(a)) for a in ACTIVATIONS if a != "identity"})
    return sum(1 for m in model if isinstance(m, (DLoRParallel, *kinds)))


def _run_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    with single_thread(), torch.no_grad():
        return _run(params)


def _run(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    from ..constructive import dlor_network_from_dense
    from ..constructive.dlor_universality import dlor_from_shallow, evaluate_target, fit_shallow, grid, wide_dlor_from_shallow

    start = time.perf_counter()
    name, J = params["target"], int(params["neurons"])
    function = TARGETS[name][0]
    shallow = fit_shallow(
        function, 2, J, activation=params["activation"], scale=float(params["scale"]),
        points_per_axis=int(params["fit_per_axis"]), ridge=float(params["ridge"]), seed=int(params["seed"]),
    )  # fmt: skip
    X = grid(2, int(params["test_per_axis"]))
    f = evaluate_target(function, X)
    g = shallow(X)
    m = shallow.out_features
    row: dict[str, JSONScalar] = {"target": name, "neurons": J, "out_features": m, "width": 2 + m + 2}
    networks: dict[str, nn.Module] = {}

    def record(family: str, model: nn.Module | None, out: torch.Tensor, params_: int, depth: int) -> None:
        sup, rms, vs_g = _errors(out, f, g)
        row.update({f"{family}_params": params_, f"{family}_depth": depth, f"{family}_sup": sup, f"{family}_rms": rms, f"{family}_vs_g": vs_g})
        if model is not None:
            networks[family] = model

    record("shallow", None, g, shallow.parameter_count(), 1)
    exact_weights, narrow_gap = True, 0.0
    registers = {}
    for rank in (1, 2):
        built = dlor_from_shallow(shallow, rank=rank, h=params["h"])
        registers[rank] = built
        out = built.network(X)
        record(f"deep_r{rank}", built.network, out, built.parameters, built.depth)
        # Theorem 7's transfer, read weight by weight: each dense weight is αI + UVᵀ exactly.
        layers = [mod for mod in built.network if hasattr(mod, "alpha")]
        linears = [mod for mod in built.narrow if isinstance(mod, nn.Linear)]
        for index, (dlor, linear) in enumerate(zip(layers, linears, strict=True)):
            dense = dlor.to_dense()
            dense = dense[: linear.weight.shape[0], : linear.weight.shape[1]]
            exact_weights &= bool(torch.equal(dense, linear.weight)) and bool(
                torch.equal(dlor.bias[: linear.weight.shape[0]], linear.bias)
            )
        narrow_gap = max(narrow_gap, float((built.narrow(X) - out).abs().max()))
    row["register_h"] = registers[2].h
    row["weights_identical"] = exact_weights
    row["narrow_vs_dlor"] = narrow_gap
    generic = dlor_network_from_dense(registers[2].narrow, "deep", float(params["transfer_h"]), rank=2)
    record("deep_generic", generic, generic(X), _count(generic), _nonlinear_layers(generic))
    wide = wide_dlor_from_shallow(shallow)
    record("wide_exact", wide, wide(X), _count(wide), 1)
    if params["generic"]:
        # rank 2 as the deep network, or 1 where the padded width max(J, n) is 2
        rank = min(2, max(J, 2) - 1)
        parallel = dlor_network_from_dense(shallow.to_dense(), "parallel", float(params["transfer_h"]), rank=rank)
        record("wide_generic", parallel, parallel(X), _count(parallel), _nonlinear_layers(parallel))
    else:  # the same columns in every row (the results store requires it); None: not built
        row.update({f"wide_generic_{k}": None for k in ("params", "depth", "sup", "rms", "vs_g")})
    row["seconds"] = time.perf_counter() - start
    return row


# --------------------------------------------------------------------------------------------
# Report and figures


def _fmt(value: Any, spec: str = ".1e") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return format(value, spec)


def _smallest_at(rows: pd.DataFrame, family: str, eps: float) -> int | None:
    """Fewest parameters of ``family`` among rows whose sup error is ≤ ``eps``."""
    column = f"{family}_sup"
    if column not in rows:
        return None
    hit = rows[rows[column].notna() & (rows[column] <= eps)]
    if hit.empty:
        return None
    return int(hit[f"{family}_params"].min())


def _slope(rows: pd.DataFrame, family: str) -> float:
    """Slope of log(parameters) against log(J) between the two largest J where ``family`` was built."""
    column = f"{family}_params"
    if column not in rows:
        return math.nan
    have = rows[rows[column].notna()].sort_values("neurons")
    if len(have) < 2:
        return math.nan
    (j0, p0), (j1, p1) = have[["neurons", column]].astype(float).to_numpy()[-2:]
    return float(math.log(p1 / p0) / math.log(j1 / j0))


def _reading(results: pd.DataFrame, config: DLoRUniversalityConfig) -> list[str]:
    """The verdict paragraphs, computed from the table."""
    out = []
    dense_ratio, wide_generic, wide_exact, slopes = [], [], [], []
    for target in config.targets:
        rows = results[results["target"] == target].sort_values("neurons")
        if rows.empty:
            continue
        last = rows.iloc[-1]
        dense_ratio.append(last["deep_r2_params"] / last["shallow_params"])
        wide_exact.append(last["wide_exact_params"] / last["deep_r2_params"])
        if "wide_generic_params" in rows:
            have = rows[rows["wide_generic_params"].notna()]
            if not have.empty:
                g = have.iloc[-1]
                wide_generic.append((target, int(g["neurons"]), g["wide_generic_params"] / g["deep_r2_params"]))
                slopes.append((_slope(rows, "wide_generic"), _slope(rows, "deep_r2")))
    if dense_ratio:
        out.append(
            f"Theorem 8 (deep DLoR inherits the dense network's parameter complexity): at the largest J the deep "
            f"network (r = 2) has {min(dense_ratio):.1f}–{max(dense_ratio):.1f}× the parameters of the dense shallow "
            "network g it evaluates, at g's error (plus its transfer error): a constant factor, "
            "(2Nr + 1 + N)/(n + m + 1) per neuron, so whatever rate in ε g achieves, the deep DLoR network "
            "achieves with the same exponent."
        )
    if wide_generic:
        verdict = all(r > 1 for _, _, r in wide_generic)
        out.append(
            "Deep against the paper's wide network (additive correspondence of g) at equal error: wide/deep "
            "parameters "
            + ", ".join(f"{t} {r:.1f}× (J = {j})" for t, j, r in wide_generic)
            + f": deep is {'cheaper in every target' if verdict else 'not cheaper in every target'}."
        )
        finite = [(w, d) for w, d in slopes if math.isfinite(w) and math.isfinite(d)]
        if finite:
            widens = all(w > d + 0.5 for w, d in finite)
            out[-1] += (
                f" Parameter growth with J: wide generic slope {min(w for w, _ in finite):.2f}–{max(w for w, _ in finite):.2f}, "
                f"deep {min(d for _, d in finite):.2f}–{max(d for _, d in finite):.2f}, so the gap "
                + ("widens (quadratic against linear in J)." if widens else "does not clearly widen.")
            )
    if wide_exact:
        cheaper = max(wide_exact) < 1
        out.append(
            f"Deep against a wide DLoR network built for g directly (wide exact, depth 1): wide/deep parameters "
            f"{min(wide_exact):.2f}–{max(wide_exact):.2f}× at the largest J, so "
            + ("this wide network is the cheaper one: the deep-over-wide advantage holds against the generic "
               "additive correspondence, not against every wide DLoR network."
               if cheaper else "deep is not more expensive than it.")
        )
    return out


def _report(results: pd.DataFrame, config: DLoRUniversalityConfig) -> str:
    lines = [
        "# dlor-universality: deep DLoR networks of width n + m + 2 are universal (Theorems 5–8)",
        "",
        "Chen et al. (arXiv 2605.05659): Theorem 5, deep DLoR networks (every weight αI + UVᵀ) of width "
        "N = n + m + 2 are dense in C(K, ℝᵐ); Theorem 7, a dense network's guarantee transfers to DLoR; "
        "Theorem 8, depth's parameter–expressivity scaling. Construction: a shallow random-feature network g "
        f"with J neurons (σ = {config.activation}, least squares on a {config.fit_per_axis}² grid), evaluated "
        "one neuron per layer by a register network of width n + m + 2 whose every weight is DLoR "
        "(rank 2: depth J + 1 + m; rank 1: depth 2J + m). Errors on a "
        f"{config.test_per_axis}² test grid of [−1, 1]²; every network of a row is built from the same g.",
        "",
    ]
    if results.empty:
        return "\n".join(lines + ["No finished units yet."])
    results = results.sort_values(["target", "neurons"])
    lines += [
        "## Error against depth",
        "",
        "Sup error ‖F − f‖_∞ of the deep DLoR network F against the target, beside the shallow network's "
        "‖g − f‖_∞ and the register (transfer) error ‖F − g‖_∞.",
        "",
    ]
    for target in config.targets:
        rows = results[results["target"] == target]
        if rows.empty:
            continue
        width = int(rows["width"].iloc[0])
        lines += [
            f"### {target}: {TARGETS[target][1]}, width N = {width}",
            "",
            "| J | depth r = 1 | depth r = 2 | ‖g − f‖_∞ | ‖F − f‖_∞, r = 1 | ‖F − f‖_∞, r = 2 | RMS, r = 2 | "
            "‖F − g‖_∞ (max r) | params r = 1 / r = 2 |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for _, r in rows.iterrows():
            lines.append(
                f"| {int(r['neurons'])} | {int(r['deep_r1_depth'])} | {int(r['deep_r2_depth'])} | "
                f"{_fmt(r['shallow_sup'])} | {_fmt(r['deep_r1_sup'])} | {_fmt(r['deep_r2_sup'])} | "
                f"{_fmt(r['deep_r2_rms'])} | {_fmt(max(r['deep_r1_vs_g'], r['deep_r2_vs_g']))} | "
                f"{int(r['deep_r1_params']):,} / {int(r['deep_r2_params']):,} |"
            )
        lines.append("")
        if target == "saddle":
            mse = rows["deep_r1_rms"] ** 2
            below = rows[mse < BLINDSPOT_FLOOR]
            first = f"from J = {int(below['neurons'].iloc[0])} on (depth {int(below['deep_r1_depth'].iloc[0])})" if not below.empty else "at no J run"
            lines += [
                f"Blind spot: a rank-1 first weight keeps the test MSE on x₁x₂ ≥ 4/135 ≈ {BLINDSPOT_FLOOR:.4f}. "
                f"The rank-1 DLoR network (r = 1, α ≠ 0) goes below it {first}; its MSE at the largest J is "
                f"{float(mse.iloc[-1]):.1e}.",
                "",
            ]
    identical = bool(results["weights_identical"].all())
    lines += [
        "## The transfer step (Theorem 7), exact",
        "",
        f"Every weight of the narrow dense network equals its DLoR layer's αI + UVᵀ bit for bit in "
        f"{'all' if identical else 'NOT all'} {len(results)} units × 2 ranks; the two networks' outputs differ by at "
        f"most {results['narrow_vs_dlor'].max():.1e} (rounding). The generic route of Theorem 7 "
        "(`dlor_network_from_dense(narrow, \"deep\", rank=2)`, factorising each weight) is "
        f"{float((results['deep_generic_depth'] / results['deep_r2_depth']).median()):.1f}× deeper (median) with "
        f"error against g up to {results['deep_generic_vs_g'].max():.1e} at h = {config.transfer_h:g}; the direct "
        f"register network's ‖F − g‖_∞ is at most {max(results['deep_r1_vs_g'].max(), results['deep_r2_vs_g'].max()):.1e} "
        f"(h = {float(results['register_h'].iloc[0]):g}).",
        "",
        "## Parameters at equal error (Theorem 8: deep against wide)",
        "",
        "Fewest parameters among the built networks whose sup error is ≤ ε (— : none reached ε). deep: register "
        "network, width n + m + 2; wide exact: depth 1, width J, rank max(n, m); wide generic: the paper's "
        f"additive correspondence (σ per branch, rank 2, built for J ≤ {config.generic_max_neurons}); shallow: the "
        "dense g.",
        "",
        "| target | ε | shallow (dense) | deep r = 1 | deep r = 2 | deep generic | wide exact | wide generic |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for target in config.targets:
        rows = results[results["target"] == target]
        if rows.empty:
            continue
        for eps in config.thresholds:
            cells = [_smallest_at(rows, family, eps) for family in FAMILIES]
            if all(c is None for c in cells):
                continue
            lines.append(f"| {target} | {eps:g} | " + " | ".join("—" if c is None else f"{c:,}" for c in cells) + " |")
    lines += [
        "",
        "Growth of the parameter count with J (slope of log params against log J between the two largest J built):",
        "",
        "| target | " + " | ".join(FAMILIES) + " |",
        "|---|" + "---|" * len(FAMILIES),
    ]
    for target in config.targets:
        rows = results[results["target"] == target]
        if rows.empty:
            continue
        lines.append(f"| {target} | " + " | ".join(_fmt(_slope(rows, fam), ".2f") for fam in FAMILIES) + " |")
    for paragraph in _reading(results, config):
        lines += ["", paragraph]
    lines.append("")
    return "\n".join(lines)


def _figures(results: pd.DataFrame, config: DLoRUniversalityConfig, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if results.empty:
        return []
    results = results.sort_values(["target", "neurons"])
    targets = [t for t in config.targets if (results["target"] == t).any()]
    paths = []

    fig, ax = plt.subplots(figsize=(5.6, 3.8))
    colours = dict(zip(TARGETS, ("tab:blue", "tab:orange", "tab:green", "tab:red"), strict=True))
    for target in targets:
        rows = results[results["target"] == target]
        ax.plot(rows["deep_r2_depth"], rows["deep_r2_sup"], marker="o", color=colours[target], label=f"{target}, r = 2")
        ax.plot(rows["deep_r1_depth"], rows["deep_r1_sup"], marker="s", ls="--", color=colours[target], label=f"{target}, r = 1", alpha=0.7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("depth (nonlinear layers), width n + m + 2")
    ax.set_ylabel("sup error ‖F − f‖∞")
    ax.set_title("Deep DLoR networks at width n + m + 2: error against depth", fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    paths.append(save_figure(fig, out_dir / "universality_depth.png"))

    columns = min(2, len(targets))
    grid_rows = math.ceil(len(targets) / columns)
    fig, axes = plt.subplots(grid_rows, columns, figsize=(4.2 * columns, 3.3 * grid_rows), squeeze=False)
    for ax in axes.flat[len(targets):]:
        ax.set_visible(False)
    styles = {
        "shallow": ("black", "dense shallow g"),
        "deep_r2": ("tab:blue", "deep, r = 2"),
        "deep_r1": ("tab:cyan", "deep, r = 1"),
        "deep_generic": ("tab:purple", "deep, generic transfer"),
        "wide_exact": ("tab:green", "wide exact"),
        "wide_generic": ("tab:red", "wide generic (parallel)"),
    }
    for ax, target in zip(axes.flat, targets, strict=False):
        rows = results[results["target"] == target]
        for family, (colour, label) in styles.items():
            if f"{family}_params" not in rows:
                continue
            have = rows[rows[f"{family}_params"].notna()]
            ax.plot(have[f"{family}_params"], have[f"{family}_sup"], marker=".", color=colour, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("parameters")
        ax.set_ylabel("sup error")
        ax.set_title(target, fontsize=9)
    axes.flat[0].legend(fontsize=6)
    fig.suptitle("Parameters at equal error: deep vs wide DLoR (same g per point)", fontsize=10)
    paths.append(save_figure(fig, out_dir / "universality_parameters.png"))
    return paths


EXPERIMENT = FunctionExperiment(
    name="dlor-universality",
    description=(
        "Deep DLoR networks of width n + m + 2 built for 2-D targets: error against depth, exact transfer "
        "from the narrow dense network, parameters of deep vs wide at equal error (Chen et al., Theorems 5–8)"
    ),
    config_class=DLoRUniversalityConfig,
    units_fn=_units,
    run_unit_fn=_run_unit,
    report_fn=_report,
    figures_fn=_figures,
)


def run(config: DLoRUniversalityConfig | None = None, out_dir: str | Path | None = None, **runner_options: Any) -> pd.DataFrame:
    """Run ``dlor-universality`` and return one row per unit; see :func:`structnets.runner.experiment.run_experiment`."""
    return run_experiment(EXPERIMENT, config, out_dir, **runner_options)


__all__ = ["BLINDSPOT_FLOOR", "EXPERIMENT", "FAMILIES", "TARGETS", "DLoRUniversalityConfig", "run"]
