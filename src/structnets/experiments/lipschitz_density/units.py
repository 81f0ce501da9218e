"""Units of ``lipschitz-density``: one (target, model, depth) each, pure and seeded."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...analysis.timing import synchronize
from ...protocol import JSONScalar, Unit
from ...training.device import device_param, unit_device
from .config import LipschitzDensityConfig
from .fixed_width import fit_errors, fit_fixed_width


def make_target(spec: Mapping[str, Any]) -> Any:
    """The :class:`~structnets.constructive.LipschitzTarget` a unit's ``target`` spec describes."""
    from ...constructive import random_lattice_target_1d, random_maxmin_target

    if spec["kind"] == "1d":
        return random_lattice_target_1d(int(spec["pieces"]), seed=int(spec["seed"]))
    return random_maxmin_target(2, int(spec["groups"]), int(spec["group_size"]), seed=int(spec["seed"]))


def _target_specs(config: LipschitzDensityConfig) -> list[dict[str, Any]]:
    specs: list[dict[str, Any]] = [{"kind": "1d", "pieces": k, "seed": config.target_seed} for k in config.pieces_1d]
    specs += [
        {"kind": "2d", "groups": g, "group_size": config.group_size_2d, "seed": config.target_seed}
        for g in config.groups_2d
    ]
    return specs


def _target_name(spec: Mapping[str, Any]) -> str:
    return make_target(spec).name


def units(config: LipschitzDensityConfig, finished: pd.DataFrame) -> list[Unit]:
    """Per target: the exact construction, one trained unit per depth, then one gradient-step unit per (width, depth)."""
    common = {
        "steps": config.steps,
        "lr": config.lr,
        "step": config.step,
        "train_per_axis_1d": config.train_per_axis_1d,
        "train_per_axis_2d": config.train_per_axis_2d,
        "eval_per_axis_1d": config.eval_per_axis_1d,
        "eval_per_axis_2d": config.eval_per_axis_2d,
        "width": config.width,
        "seeds": list(config.seeds),
    }
    result = []
    for spec in _target_specs(config):
        name = _target_name(spec)
        result.append(Unit(key=f"{name}/exact", params={"target": spec, "model": "exact", "depth": 0, **common}))
        for depth in config.depths:
            result.append(
                Unit(
                    key=f"{name}/trained/depth={depth}",
                    params={
                        "target": spec,
                        "model": "trained",
                        "depth": depth,
                        **common,
                        **device_param(config.device),
                    },
                )
            )
        for width, depth in zip(config.unbounded_widths, config.unbounded_depths):
            result.append(
                Unit(
                    key=f"{name}/gradient-step/width={width}/depth={depth}",
                    params={
                        "target": spec,
                        "model": "gradient-step",
                        "depth": depth,
                        **common,
                        "width": width,
                        "seeds": list(config.unbounded_seeds),
                        **device_param(config.device),
                    },
                )
            )
    return result


def _eval_points(target: Any, params: Mapping[str, Any]) -> np.ndarray:
    per_axis = int(params["eval_per_axis_1d"] if target.dim == 1 else params["eval_per_axis_2d"])
    return target.grid(per_axis)


def _secant_points(target: Any, points: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All points in 1-D (neighbour secants); a ≤ 33×33 subgrid in 2-D (all pairs)."""
    if target.dim == 1:
        return points, values
    per_axis = round(len(points) ** 0.5)
    stride = max(1, (per_axis - 1) // 32)
    index = np.arange(len(points)).reshape(per_axis, per_axis)[::stride, ::stride].reshape(-1)
    return points[index], values[index]


def run_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    """Build the exact max-min network or train the seeds' width-(d + 3) networks; measure and certify."""
    from ...training import torch_threads

    # Every tensor here is tiny ((seeds, d + 3, points)): more intra-op threads only add
    # synchronisation, so the unit runs on one and restores the runner's setting after.
    with torch_threads(1):
        return _run_unit_single_thread(params)


def _run_unit_single_thread(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    from ...analysis.lipschitz import lipschitz_upper_bound
    from ...constructive import max_secant_ratio, maxmin_lipschitz_bound, maxmin_network
    from ...constructive.maxmin import maxmin_rounding_bound
    from ...nn import MaxMin

    target = make_target(params["target"])
    points = _eval_points(target, params)
    row: dict[str, JSONScalar] = {
        "target": target.name,
        "dim": target.dim,
        "target_groups": target.n_groups,
        "target_pieces": target.n_pieces,
        "target_lipschitz_measured": max_secant_ratio(*_secant_points(target, points, target(points))),
        "model": params["model"],
        "eval_points": len(points),
    }
    synchronize()
    start = time.perf_counter()
    if params["model"] == "exact":
        exact_pieces = [[(np.asarray(a), c) for a, c in group] for group in target.pieces]
        net = maxmin_network(exact_pieces)
        net.eval()
        sup, rmse, out = fit_errors(net, target, points)
        levels = sum(isinstance(layer, MaxMin) for layer in net)
        row.update(
            depth=levels,
            layers=len(net),
            width=max(int(getattr(layer, "out_features", 0)) for layer in net),
            sup_error=sup,
            # the float64 error bound of this network as built (scale, depth, max |f|): what "exact" means here
            rounding_bound=maxmin_rounding_bound(net, exact_pieces, float(np.abs(np.asarray(points)).max())),
            rmse=rmse,
            sup_error_median=sup,
            rmse_median=rmse,
            lipschitz_upper=lipschitz_upper_bound(net),
            # the lattice certificate max‖a‖₂ of the function the network computes (max/min keep L)
            lipschitz_lattice=maxmin_lipschitz_bound(target.pieces),
            lipschitz_measured=max_secant_ratio(*_secant_points(target, points, out)),
            parameters=sum(p.numel() for p in net.parameters()),
            # blocks of a sequential max-min evaluation at width d + 3 (pair, store, copy of x):
            # one min per piece after the first of its group, one max per group after the first
            sequential_depth=max(1, target.n_pieces - 1),
            seconds=time.perf_counter() - start,
        )
        return row
    depth = int(params["depth"])
    width = params["width"]
    # "trained": Theorem 4.1's fixed width (maps between the blocks); "gradient-step": Theorem 3.1's family
    variant = "gradient-step" if params["model"] == "gradient-step" else "fixed-width"
    models = fit_fixed_width(
        target, target.dim, depth, width=None if width is None else int(width),
        seeds=[int(s) for s in params["seeds"]], steps=int(params["steps"]), lr=float(params["lr"]),
        train_per_axis=int(params["train_per_axis_1d" if target.dim == 1 else "train_per_axis_2d"]), step=float(params["step"]),
        device=unit_device(params), variant=variant,
    )  # fmt: skip
    synchronize()
    seconds = time.perf_counter() - start
    sups, rmses, uppers, measured = [], [], [], []
    for model in models:
        sup, rmse, out = fit_errors(model, target, points)
        sups.append(sup)
        rmses.append(rmse)
        uppers.append(lipschitz_upper_bound(model))
        measured.append(max_secant_ratio(*_secant_points(target, points, out)))
    best = int(np.argmin(sups))
    row.update(
        depth=depth,
        layers=len(models[0]),
        width=target.dim + 3 if width is None else int(width),
        sup_error=sups[best],
        rmse=rmses[best],
        sup_error_median=float(np.median(sups)),
        rmse_median=float(np.median(rmses)),
        # every seed's errors, in the order of ``seeds`` (the replicates of a trend test)
        sup_errors=json.dumps(sups),
        rmses=json.dumps(rmses),
        lipschitz_upper=max(uppers),
        lipschitz_measured=max(measured),
        parameters=sum(p.numel() for p in models[0].parameters()),
        sequential_depth=None,
        seconds=seconds,
        seeds=len(models),
        best_seed=int(params["seeds"][best]),
    )
    return row


__all__ = ["make_target", "run_unit", "units"]
