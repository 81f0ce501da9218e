"""Units of ``swish-construction``: one (target, M, τ, λ) each; build the network, measure its sup error."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from ...protocol import JSONScalar, Unit
from .config import SwishConstructionConfig, parse_target

if TYPE_CHECKING:  # torch is imported inside the unit functions, not at CLI start-up
    import torch

    from ...data import SmoothTarget


def make_units(config: SwishConstructionConfig, finished: pd.DataFrame) -> list[Unit]:
    units: list[Unit] = []
    for spec in config.targets:
        target = parse_target(spec)
        d = target.d
        # a target with kinks has its sup read there too (since s10): the flag makes its units of older
        # folders, read on the grid alone, show as changed (mixed / --rerun-changed), not silently mixed
        kinks = {"sup_at_kinks": True} if target.singular_coordinates else {}
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
                    params={"target": spec, "sweep": sweep, "M": M, "tau": tau, "lam": lam, "grid": grid, **kinks},
                )
            )
    return units


def evaluation_points(target: SmoothTarget, grid: int) -> torch.Tensor:
    """The (n, d) points of the sup error: a uniform grid of ``grid`` points per axis plus the target's kinks.

    The error of the smooth network peaks at the kinks of |x_i − c_i|^β, which a uniform grid misses by up
    to half its spacing h and so under-reads by ~h^β: power β = 0.5, M = 256 read 4.100e-2 on 40,001
    points against 4.415e-2 at the kink (error/bound 0.928 instead of 0.999).
    """
    import torch

    axes = []
    for i in range(target.d):
        extra = target.singular_coordinates[i] if target.singular_coordinates else ()
        axis = torch.linspace(0, 1, grid, dtype=torch.float64)
        axes.append(torch.unique(torch.cat([axis, torch.tensor(extra, dtype=torch.float64)])))
    return torch.cartesian_prod(*axes).reshape(-1, target.d)


def run_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    import torch

    from ...constructive import swish_approximator

    target = parse_target(params["target"])
    start = time.perf_counter()
    approx = swish_approximator(
        target.function,
        target.derivative,
        target.d,
        target.beta,
        int(params["M"]),
        tau=float(params["tau"]),
        lam=float(params["lam"]),
        R=target.R,
    )
    build = time.perf_counter() - start
    points = evaluation_points(target, int(params["grid"]))
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
