"""``rank-bounds`` fixed-norm units: the bounds of alike rank-r W×W layers held at one spectral norm, over depth.

The paper's depth claim (Ledent, Alves, Lei, NeurIPS 2025): for small p the rank-sparse sample complexity
is Õ(W r L²), against Õ(W² L) for the norm end. In every covering bound the depth enters twice: L layers,
each covered at the relative radius t = T(ε)/L with T(ε) = γε/(2K) and K = e ρ^{L−1} B Π_i ‖A_i‖₂
(``docs/bounds.md``, Secs. 3 and 5), so log N(ε) ≈ (L layers) × log(1/t) and log(1/t) = L log s̄ +
log(2eBL/(γε)) for L layers of spectral norm s̄. The L² is L layers times the L log s̄ of the Lipschitz
product; a trained network's norms move with its depth (and its first layer has another size), so its
slope in L measures its norms, not that form. These units hold the form's inputs fixed instead: L alike
W×W layers of exactly rank r, every one of spectral norm s̄ (singular values s̄·(1, v_2, …, v_r) with
v_j ~ U(0.5, 1) drawn per layer and seed, so seeds are replicates), inputs of norm B = 1 and a fixed
margin γ, no training. The same seed and depth give the same layers up to the factor s̄, so the
s̄ = 1 unit is the baseline of every other norm (the part of n* the per-layer norm adds).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ...protocol import JSONScalar, Unit
from .config import RankBoundsConfig, _p_column


def fixed_norm_units(config: RankBoundsConfig) -> list[Unit]:
    """One unit per (depth, spectral norm, seed) of the fixed-norm sweep (none when ``norm_depths`` is empty)."""
    units = []
    for depth in config.norm_depths:
        for norm in config.norm_spectral:
            for seed in config.norm_seeds:
                units.append(
                    Unit(
                        key=f"fixed-norm/depth={depth}/norm={norm:g}/seed={seed}",
                        params={
                            "kind": "fixed-norm",
                            "depth": depth,
                            "width": config.norm_width,
                            "rank": config.norm_rank,
                            "spectral_norm": norm,
                            "seed": seed,
                            "margin": config.norm_margin,
                            "n": config.norm_n,
                            "ps": list(config.ps),
                            "delta": config.delta,
                            "sample_target": config.sample_target,
                        },
                    )
                )
    return units


def fixed_norm_layers(width: int, rank: int, spectral_norm: float, depth: int, seed: int) -> list[Any]:
    """``depth`` float64 W×W matrices of exactly rank ``rank`` and spectral norm ``spectral_norm``.

    Layer i is ``s̄ · U_i diag(1, v_2, …, v_r) V_iᵀ`` with U_i, V_i (W × r) orthonormal columns (QR of a
    Gaussian matrix) and v_j ~ U(0.5, 1) sorted descending; the draws depend on (seed, depth) only, so
    every ``spectral_norm`` gets the same layers scaled.

    Args:
        width: W ≥ 2. rank: r in [1, W]. spectral_norm: s̄ > 0. depth: L ≥ 1. seed: ≥ 0.

    Returns:
        The list ``[A_1, …, A_L]`` (torch tensors, W × W).
    """
    import torch

    generator = torch.Generator().manual_seed(10_007 * int(seed) + int(depth))
    layers = []
    for _ in range(depth):
        U = torch.linalg.qr(torch.randn(width, rank, generator=generator, dtype=torch.float64))[0]
        V = torch.linalg.qr(torch.randn(width, rank, generator=generator, dtype=torch.float64))[0]
        tail = torch.sort(0.5 + 0.5 * torch.rand(rank - 1, generator=generator, dtype=torch.float64), descending=True)
        sigma = torch.cat([torch.ones(1, dtype=torch.float64), tail.values])
        layers.append(float(spectral_norm) * (U * sigma) @ V.T)
    return layers


def run_fixed_norm_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    """Every bound's sample complexity for one fixed-norm network (inputs of norm 1, zero margin loss)."""
    from ...analysis import layer_spectra, pac_bayes_bound, parameter_count_bound, rank_sparse_bounds, spectral_bound

    start = time.perf_counter()
    depth, width, rank = int(params["depth"]), int(params["width"]), int(params["rank"])
    norm, margin = float(params["spectral_norm"]), float(params["margin"])
    matrices = fixed_norm_layers(width, rank, norm, depth, int(params["seed"]))
    common: dict[str, Any] = {
        "spectra": layer_spectra(matrices),
        "n": int(params["n"]),
        "margin": margin,
        "input_norm": 1.0,
        "empirical_risk": 0.0,
        "delta": float(params["delta"]),
        "sample_target": float(params["sample_target"]),
    }
    count = parameter_count_bound(matrices, **common)
    spectral = spectral_bound(matrices, **common)
    pac = pac_bayes_bound(matrices, **common)
    ps = [float(p) for p in params["ps"]]
    sparse = rank_sparse_bounds(matrices, ps=ps, **common)
    row: dict[str, JSONScalar] = {
        "variant": "fixed-norm",
        "depth": depth,
        "width": width,
        "rank": rank,
        "spectral_norm": norm,
        "seed": int(params["seed"]),
        "margin": margin,
        "n_train": int(params["n"]),
        "spectral_product": spectral.spectral_product,
        "lipschitz_scale": count.lipschitz_scale,
        # log(1/t(1)) with t(1) = γ/(2KL): the per-layer log factor at ε = 1 (L log s̄ + log(2eL/γ))
        "log_inverse_radius": math.log(2.0 * count.lipschitz_scale * depth / margin),
        "param_sc": count.sample_complexity,
        "spectral_sc": spectral.sample_complexity,
        "pacbayes_sc": pac.sample_complexity,
        "parameters": count.parameters,
    }
    for p, bound in zip(ps, sparse):
        row[f"{_p_column(p)}_sc"] = bound.sample_complexity
    row["best_rs_sc"] = min(b.sample_complexity for b in sparse)
    row["seconds"] = time.perf_counter() - start
    return row


class DepthSlope(NamedTuple):
    """A log–log slope in depth L over the fixed-norm units: mean over seeds ± se, df = seeds − 1."""

    name: str
    spectral_norm: float
    slope: float
    se: float
    df: float
    seeds: int


def p_columns(rows: pd.DataFrame) -> dict[float, str]:
    """The rank-sparse sample-complexity column of every Schatten p in ``rows``, by p (``rs0_05_sc``: 0.05)."""
    found = {}
    for column in rows.columns:
        # _p_column writes p with :g, so small and large p come in exponent form (rs1e-05, rs3e+20)
        match = re.fullmatch(r"rs(\d+(?:_\d+)?(?:e[+-]\d+)?)_sc", str(column))
        if match:
            found[float(match[1].replace("_", "."))] = column
    return dict(sorted(found.items()))


def _per_seed_slope(values: pd.DataFrame, name: str, norm: float) -> DepthSlope | None:
    """``values``: index depth, one column per seed (positive values); the slope of log value in log L per seed."""
    slopes = []
    for seed in values.columns:
        column = values[seed].dropna()
        column = column[np.isfinite(column) & (column > 0)]
        if column.index.nunique() >= 2:
            slopes.append(float(np.polyfit(np.log(column.index.to_numpy(float)), np.log(column.to_numpy(float)), 1)[0]))
    if not slopes:
        return None
    a = np.asarray(slopes)
    se = float(a.std(ddof=1) / math.sqrt(a.size)) if a.size > 1 else 0.0
    return DepthSlope(name, norm, float(a.mean()), se, float(max(a.size - 1, 1)), int(a.size))


def depth_slopes(rows: pd.DataFrame) -> dict[str, list[DepthSlope]]:
    """The depth exponents of the fixed-norm units, per per-layer spectral norm s̄ (cells).

    With ``small`` the rank-sparse sample complexity at the smallest recorded p and ``large`` the one
    at the largest (= the parameter count on these layers for every p ≥ 0.1 at W = 32, r = 4):

    * ``small``, ``large``, ``spectral``, ``log_inverse_radius``: the slope in log L of each, per s̄;
    * ``norm_share``: per s̄ ≠ 1, the slope of ``small(L, s̄) − small(L, 1)`` (same seed and depth: the
      same layers scaled), the part of n* the per-layer norm adds: L layers × L log s̄ predicts 2;
    * ``versus_large``, ``versus_spectral``: per s̄, the slope of ``small / large`` and of
      ``small / spectral``: Õ(W r L²) against Õ(W² L) predicts 2 − 1 = 1.

    Returns:
        name → one :class:`DepthSlope` per s̄ (empty lists when there are no fixed-norm units).
    """
    out: dict[str, list[DepthSlope]] = {
        k: []
        for k in ("small", "large", "spectral", "log_inverse_radius", "norm_share", "versus_large", "versus_spectral")
    }
    rows = rows[rows["variant"] == "fixed-norm"] if "variant" in rows.columns else rows.iloc[0:0]
    ps = p_columns(rows)
    if rows.empty or not ps:
        return out
    small, large = ps[min(ps)], ps[max(ps)]

    def table(column: str | pd.Series, frame: pd.DataFrame) -> pd.DataFrame:
        values = frame[column] if isinstance(column, str) else column
        return frame.assign(_v=values.astype(float)).pivot_table(index="depth", columns="seed", values="_v")

    norms = sorted(float(v) for v in rows["spectral_norm"].unique())
    base = rows[np.isclose(rows["spectral_norm"].astype(float), 1.0)]
    for norm in norms:
        cell = rows[np.isclose(rows["spectral_norm"].astype(float), norm)]
        for name, series in (
            ("small", cell[small]),
            ("large", cell[large]),
            ("spectral", cell["spectral_sc"]),
            ("log_inverse_radius", cell["log_inverse_radius"]),
            ("versus_large", cell[small].astype(float) / cell[large].astype(float)),
            ("versus_spectral", cell[small].astype(float) / cell["spectral_sc"].astype(float)),
        ):
            found = _per_seed_slope(table(series, cell), name, norm)
            if found is not None:
                out[name].append(found)
        if not np.isclose(norm, 1.0) and not base.empty:
            excess = table(small, cell) - table(small, base).reindex_like(table(small, cell))
            found = _per_seed_slope(excess, "norm_share", norm)
            if found is not None:
                out["norm_share"].append(found)
    return out


def fixed_norm_section(results: pd.DataFrame) -> list[str]:
    """The report's section on the fixed-norm units: n* by (s̄, L), then the depth slopes."""
    rows = results[results["variant"] == "fixed-norm"] if "variant" in results.columns else results.iloc[0:0]
    ps = p_columns(rows)
    if rows.empty or not ps:
        return []
    small, large = min(ps), max(ps)
    first = rows.iloc[0]
    lines = [
        "## Depth at a fixed per-layer norm (no training)",
        "",
        f"L alike {int(first['width'])} × {int(first['width'])} layers of exactly rank {int(first['rank'])}, every one of "
        "spectral norm s̄ (singular values s̄·(1, v_2, …, v_r), v_j ~ U(0.5, 1) per layer and seed), inputs of norm 1, "
        f"margin γ = {float(first['margin']):g}, zero margin loss. Means over seeds of each bound's sample complexity n*; "
        "log(1/t(1)) = log(2KL/γ) is the per-layer log factor at ε = 1.",
        "",
        f"| s̄ | L | n* rank-sparse p = {small:g} | n* rank-sparse p = {large:g} | n* parameter count | n* spectral | "
        "n* PAC-Bayes | log(1/t(1)) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    means = rows.groupby(["spectral_norm", "depth"]).mean(numeric_only=True).reset_index()
    for _, row in means.iterrows():
        lines.append(
            f"| {row['spectral_norm']:g} | {int(row['depth'])} | {row[ps[small]]:.3e} | {row[ps[large]]:.3e} | "
            f"{row['param_sc']:.3e} | {row['spectral_sc']:.3e} | {row['pacbayes_sc']:.3e} | {row['log_inverse_radius']:.2f} |"
        )
    slopes = depth_slopes(rows)
    labels = {
        "small": f"rank-sparse p = {small:g}",
        "large": f"rank-sparse p = {large:g}",
        "spectral": "spectral",
        "log_inverse_radius": "log(1/t(1))",
        "norm_share": f"p = {small:g} minus its s̄ = 1 value (the per-layer norm's share; L² predicts 2)",
        "versus_large": f"p = {small:g} / p = {large:g} (Õ(W r L²) / Õ(W² L) predicts 1)",
        "versus_spectral": f"p = {small:g} / spectral (predicts 1)",
    }
    lines += [
        "",
        "Log–log slopes in L (mean over seeds ± se): "
        + "; ".join(
            f"{labels[name]} at s̄ = {s.spectral_norm:g}: {s.slope:.2f} ± {s.se:.2f}"
            for name, found in slopes.items()
            for s in found
        )
        + ".",
        "",
    ]
    return lines


__all__ = [
    "DepthSlope",
    "depth_slopes",
    "fixed_norm_layers",
    "fixed_norm_section",
    "fixed_norm_units",
    "p_columns",
    "run_fixed_norm_unit",
]
