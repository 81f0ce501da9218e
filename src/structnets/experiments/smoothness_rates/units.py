"""Units of ``smoothness-rates``: estimation, approximation and certified-floor units, and running one."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...protocol import JSONScalar, Unit
from ...training.device import device_param, unit_device
from .config import SmoothnessRatesConfig, estimation_cells, estimation_width, parameter_count, width_for_parameters
from .training import fit_rates_ensemble


def estimated_seconds(params: Mapping[str, Any]) -> float:
    """A rough single-core time model of one unit, used only to order the units (longest first).

    Per training point and member, a first-order evaluation (Adam step or L-BFGS evaluation)
    costs ~40 ns per hidden activation (the float64 transcendental kernels and their derivatives
    dominate) plus 2·width² flops per hidden-to-hidden layer; a Levenberg–Marquardt iteration adds
    2P² flops for JᵀJ (at ~3·10¹⁰ flop/s). Calibrated on the slowest unit of an earlier full
    preset (d = 1, L = 2, N = 640: ~1,000 s then, almost all JᵀJ); it put that preset's unit time
    at 9,316 s against 3,668–4,282 s measured since, so it orders the units, no more. Floors cost ~0.
    """
    if params["part"] == "relu-floor":
        return 0.0
    d, depth, width, n = int(params["d"]), int(params["depth"]), int(params["width"]), int(params["n"])
    members = len(params["activations"]) * len(params["seeds"])
    P = parameter_count(d, width, depth)
    first_order = (depth - 1) * width * 40e-9 + (depth - 2) * 2 * width * width / 3e10
    evaluations = int(params["steps"]) + int(params["lbfgs_iters"])
    lm = int(params.get("lm_iters", 0)) * (first_order + 2 * P * P / 3e10)
    return members * n * (evaluations * first_order + lm)


def make_units(config: SmoothnessRatesConfig, finished: pd.DataFrame) -> list[Unit]:
    """Every unit of the run, the expected-longest first.

    Keys and params are those of the earlier versions; only the order changed: with ``--jobs N``
    the workers take units in this order, so starting the longest (the largest approximation
    fits) first keeps one long unit from running alone at the end (longest-processing-time-first
    scheduling). The report does not depend on the order of the rows (:func:`.report.long_table`
    sorts them).
    """
    units: list[Unit] = []
    common = {
        "activations": list(config.activations),
        "lr": config.lr,
        "ftol": config.ftol,
        "levels": config.levels,
        "directions": config.directions,
        "test_points": config.test_points,
        "input_scale": config.input_scale,
    }
    for d, s, depth in estimation_cells(config):
        for n in config.sizes:
            width = estimation_width(
                n, d, s, depth, budget=config.budget, min_width=config.min_width, n_min=min(config.sizes)
            )
            units.append(
                Unit(
                    key=f"estimation/d={d}/s={s:g}/L={depth}/n={n}",
                    params={
                        "part": "estimation",
                        "d": d,
                        "s": s,
                        "depth": depth,
                        "n": n,
                        "width": width,
                        "noise": config.noise,
                        "seeds": list(config.seeds),
                        "steps": config.steps,
                        "lbfgs_iters": config.lbfgs_iters,
                        "lm_iters": config.lm_iters,
                        **common,
                        **device_param(config.device),
                    },
                )
            )
    for d, s in config.approx_targets:
        for depth in config.depths:
            for N in config.approx_parameters:
                units.append(
                    Unit(
                        key=f"approximation/d={d}/s={s:g}/L={depth}/N={N}",
                        params={
                            "part": "approximation",
                            "d": d,
                            "s": s,
                            "depth": depth,
                            "n": config.approx_train,
                            "width": width_for_parameters(N, d, depth),
                            "noise": 0.0,
                            "seeds": list(config.approx_seeds),
                            "steps": config.approx_steps,
                            "lbfgs_iters": config.approx_lbfgs_iters,
                            "lm_iters": config.approx_lm_iters,
                            **common,
                            **device_param(config.device),
                        },
                    )
                )
    # The certified ReLU floor (input dimension 1 only): no training, one dynamic programme each.
    for d, s in config.approx_targets:
        if d != 1:
            continue
        for depth in config.depths:
            for N in config.approx_parameters:
                units.append(
                    Unit(
                        key=f"relu-floor/d={d}/s={s:g}/L={depth}/N={N}",
                        params={
                            "part": "relu-floor",
                            "d": d,
                            "s": s,
                            "depth": depth,
                            "width": width_for_parameters(N, d, depth),
                            "levels": config.levels,
                            "directions": config.directions,
                            "test_points": config.test_points,
                            "max_pieces": config.floor_max_pieces,
                        },
                    )
                )
    units = [unit for unit in units if unit.params["part"] in config.parts]
    # Stable: units of equal estimated time keep the order of the earlier versions.
    return sorted(units, key=lambda unit: -estimated_seconds(unit.params))


def test_points(count: int, d: int) -> np.ndarray:
    """The fresh test points every unit of a run shares (seeded, uniform on [0,1]^d)."""
    return np.random.default_rng(999).random((count, d))


def run_floor_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    """Certified lower bound on the test MSE of every ReLU network of this depth and width (d = 1).

    Such a network has at most Π(w + 1) = (w + 1)^{L−1} linear pieces
    (:func:`structnets.analysis.relu_piece_bound`), so on the sorted test points its MSE is at
    least the best segmentation into that many least-squares lines
    (:func:`structnets.analysis.piecewise_linear_floor`), whatever its weights.
    """
    import torch

    from ...analysis import piecewise_linear_floor, relu_piece_bound
    from ...data import lacunary_target

    start = time.perf_counter()
    d, s, depth, width = int(params["d"]), float(params["s"]), int(params["depth"]), int(params["width"])
    target = lacunary_target(
        d, s, levels=int(params["levels"]), seed=0, directions=str(params.get("directions", "one"))
    )
    X_test = test_points(int(params["test_points"]), d)
    f_test = target(torch.from_numpy(X_test)).numpy()
    pieces = relu_piece_bound([width] * (depth - 1))
    n = len(f_test)
    # ≥ n/2 pieces fit every pair of points exactly: the floor is then exactly 0 (vacuous).
    computed = pieces <= int(params["max_pieces"]) and 2 * pieces < n
    floor = float(piecewise_linear_floor(X_test[:, 0], f_test, pieces)[-1]) if computed else 0.0
    return {
        "part": "relu-floor",
        "d": d,
        "s": s,
        "depth": depth,
        "n": n,
        "width": width,
        "parameters": parameter_count(d, width, depth),
        "pieces": pieces,
        "floor_computed": computed,
        "floor_mse": floor,
        "target_variance": float(f_test.var()),
        "seconds": time.perf_counter() - start,
    }


def run_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    from threadpoolctl import threadpool_limits

    from ...training import torch_threads

    # One intra-op thread per unit (units run side by side), for torch and for the BLAS behind
    # NumPy (Levenberg–Marquardt's JᵀJ, levenberg_marquardt.gram); restored for an in-process caller.
    with torch_threads(1), threadpool_limits(limits=1, user_api="blas"):
        if params["part"] == "relu-floor":
            return run_floor_unit(params)
        return _run_fit_unit(params)


def _run_fit_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    import torch

    from ...data import lacunary_target

    start = time.perf_counter()
    d, s, depth, n, width = (
        int(params["d"]),
        float(params["s"]),
        int(params["depth"]),
        int(params["n"]),
        int(params["width"]),
    )
    target = lacunary_target(
        d, s, levels=int(params["levels"]), seed=0, directions=str(params.get("directions", "one"))
    )
    seeds = [int(v) for v in params["seeds"]]
    activations = list(params["activations"])
    Xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    for seed in seeds:
        X_seed, y_seed = target.sample(n, noise=float(params["noise"]), seed=1000 + seed)
        Xs.append(X_seed)
        ys.append(y_seed)
    X_test = torch.from_numpy(test_points(int(params["test_points"]), d))
    f_test = target(X_test)
    members = [(name, k) for name in activations for k in range(len(seeds))]
    X = torch.from_numpy(np.stack([Xs[k] for _, k in members]))
    y = torch.from_numpy(np.stack([ys[k] for _, k in members]))
    fit = fit_rates_ensemble(
        X,
        y,
        X_test,
        f_test,
        [name for name, _ in members],
        width,
        depth,
        steps=int(params["steps"]),
        lr=float(params["lr"]),
        seed=int(sum(seeds) + 7 * n + 13 * width),
        input_scale=float(params["input_scale"]),
        lbfgs_iters=int(params["lbfgs_iters"]),
        ftol=float(params["ftol"]),
        lm_iters=int(params.get("lm_iters", 0)),
        device=unit_device(params),
    )
    # The noise actually drawn: the training MSE of the true f, the level an ERM fits down to.
    noise_mse = float(
        np.mean([np.mean((ys[k] - target(torch.from_numpy(Xs[k])).numpy()) ** 2) for k in range(len(seeds))])
    )
    row: dict[str, JSONScalar] = {
        "part": params["part"],
        "d": d,
        "s": s,
        "depth": depth,
        "n": n,
        "width": width,
        "parameters": parameter_count(d, width, depth),
        "noise": float(params["noise"]),
        "noise_mse": noise_mse,
        "target_variance": float(f_test.var()),
        "steps": int(params["steps"]),
        "lbfgs_iters": int(params["lbfgs_iters"]),
        "lm_iters": int(params.get("lm_iters", 0)),
    }
    for i, (name, k) in enumerate(members):
        prefix = f"{name}/{seeds[k]}"
        row[f"{prefix}/train_mse"] = float(fit.train_mse[i])
        row[f"{prefix}/test_mse"] = float(fit.test_mse[i])
        row[f"{prefix}/adam_train_mse"] = float(fit.adam_train_mse[i])
        row[f"{prefix}/converged"] = bool(fit.converged[i])
        row[f"{prefix}/iterations"] = int(fit.iterations[i])
        row[f"{prefix}/grad_norm"] = float(fit.grad_norm[i])
        row[f"{prefix}/late_gain"] = float(fit.late_gain[i])
    row["seconds"] = time.perf_counter() - start
    return row
