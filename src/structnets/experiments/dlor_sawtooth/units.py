"""Units of ``dlor-sawtooth``: seed-batched training runs and the h → 0 correspondence.

Each unit is pure and seeded and returns one result row. ``train`` units train all seeds of
one (target, architecture, budget) at once (:class:`structnets.models.batched_dlor.BatchedDLoRNet`
trained by :func:`structnets.training.seed_batched.train_batched`); ``correspondence`` units
train a dense MLP and evaluate the DLoR networks of
:func:`structnets.constructive.dlor_network_from_dense` built from it.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import torch

from ...analysis.timing import synchronize
from ...models.batched_dlor import BatchedDLoRNet, build_batched
from ...protocol import JSONScalar, Unit
from ...training import torch_threads
from ...training.device import device_param, unit_device
from ...training.seed_batched import train_batched, train_dense
from .config import CORRESPONDENCE_MODES, DLoRSawtoothConfig, deep_depths, parse_target, wide_branches

# modules of a DLoR network that apply no σ (every other one is σ or a parallel layer with σ inside)
_LINEAR_LAYERS = ("ZeroPad", "TakeFirst", "DLoRLinear", "DLoRBranches")


def _data(
    dim: int, teeth: int, n_train: int, test_points: int, data_seed: int, dtype: torch.dtype
) -> list[torch.Tensor]:
    """Training sample (uniform, ``data_seed``) and test grid of the sawtooth (dim, teeth), as tensors."""
    from ...data import make_sawtooth

    X, y = make_sawtooth(n_train * 4 ** (dim - 1), dim, teeth, seed=data_seed)
    per_axis = max(2, math.ceil(test_points ** (1.0 / dim) - 1e-9))
    X_test, y_test = make_sawtooth(per_axis, dim, teeth, grid=True)
    return [torch.as_tensor(a, dtype=dtype) for a in (X, y, X_test, y_test)]


def _unit_data(params: Mapping[str, Any], dtype: torch.dtype) -> list[torch.Tensor]:
    return _data(
        int(params["dim"]),
        int(params["teeth"]),
        int(params["n_train"]),
        int(params["test_points"]),
        int(params["data_seed"]),
        dtype,
    )


def make_units(config: DLoRSawtoothConfig, finished: pd.DataFrame) -> list[Unit]:
    from ...models import dlor_parameter_count

    depths = deep_depths(config)
    architectures = [("deep", depth, 1) for depth in sorted(set(depths.values()))]
    architectures += [(mode, config.wide_depth, wide_branches(config, mode)) for mode in config.wide_modes]
    common = {
        "width": config.width,
        "rank": config.rank,
        "activation": config.activation,
        "n_train": config.n_train,
        "test_points": config.test_points,
        "data_seed": config.data_seed,
        **device_param(config.device),
    }
    units = []
    for target in config.targets:
        dim, teeth = parse_target(target)
        for mode, depth, branches in architectures:
            for budget in config.budgets:
                units.append(
                    Unit(
                        key=f"train/{target}/{mode}/depth={depth}/branches={branches}/budget={budget}",
                        params={
                            "stage": "train",
                            "target": target,
                            "dim": dim,
                            "teeth": teeth,
                            "mode": mode,
                            "depth": depth,
                            "branches": branches,
                            "parameters": dlor_parameter_count(config.width, depth, config.rank, mode, branches),
                            "budget": budget,
                            "seeds": list(config.seeds),
                            "lr": config.lr,
                            "eval_every": config.eval_every,
                            "threshold": config.threshold,
                            **common,
                        },
                    )
                )
        for seed in config.correspondence_seeds:
            units.append(
                Unit(
                    key=f"correspondence/{target}/seed={seed}",
                    params={
                        "stage": "correspondence",
                        "target": target,
                        "dim": dim,
                        "teeth": teeth,
                        "seed": seed,
                        "dense_width": config.dense_width,
                        "dense_depth": config.dense_depth,
                        "dense_epochs": config.dense_epochs,
                        "dense_lr": config.dense_lr,
                        "hs": list(config.hs),
                        "dlor_rank": config.correspondence_rank,
                        **common,
                    },
                )
            )
    return units


def run_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    with torch_threads(1):
        if params["stage"] == "train":
            return _run_train(params)
        if params["stage"] == "correspondence":
            return _run_correspondence(params)
    raise ValueError(f"`stage` must be one of ['correspondence', 'train'], got {params['stage']!r}")


def _downsample(epochs: list[int], curve: list[list[float]], points: int = 200) -> dict[str, Any]:
    index = np.unique(np.linspace(0, len(epochs) - 1, min(points, len(epochs))).round().astype(int))
    return {"epochs": [epochs[i] for i in index], "test_mse": [curve[i] for i in index]}


def _spectra(net: BatchedDLoRNet, seed_index: int = 0) -> list[dict[str, Any]]:
    """Singular values and α of every DLoR map of one seed (for the spectral figure)."""
    out = []
    with torch.no_grad():
        weights = net.weights()
        for layer in range(weights.shape[0]):
            dense = weights[layer, seed_index].cpu().double()
            out.append(
                {
                    "alpha": float(net.alpha[layer, seed_index].sum()),
                    "singular_values": torch.linalg.svdvals(dense).tolist(),
                }
            )
    return out


def separations(net: BatchedDLoRNet) -> list[list[float | None]]:
    """σ₁(α_k I + U_k V_kᵀ)/|α_k| of every DLoR map followed by σ, per seed (float64 SVD, on the CPU).

    The maps are the individual rank-r DLoR maps α_k I + U_k V_kᵀ of the hidden layers: one per layer of a
    deep network, one per branch k of every layer of a parallel (or summed) one; the last, linear map is
    left out (in a wide network it is the sum of B branches, not one DLoR map). Every such map starts at
    α = 1 with the same initialisation of U and V in every mode, so at initialisation the deep and the wide
    maps' separations have one distribution; after training, how far σ₁ stands above the background |α| (N − 2r
    singular values equal |α| in any αI + UVᵀ, σ₁ ≥ |α| by interlacing) is what the low-rank part took
    (Chen et al.'s spectral analysis: deep layers' low-rank parts take the dominant directions, wide
    networks spread the representation over their branches with less separation).

    Args:
        net: S seeds' networks, L + 1 maps of B branches of rank r each.

    Returns:
        per seed, the L·B separations (layer-major, then branch); None where α_k = 0.
    """
    with torch.no_grad():
        alpha = net.alpha[:-1].detach().cpu().double()  # (L, S, B)
        layers, seeds, branches = alpha.shape
        U = net.U[:-1].detach().cpu().double().reshape(layers, seeds, net.width, branches, net.rank)
        V = net.V[:-1].detach().cpu().double().reshape(layers, seeds, net.width, branches, net.rank)
        low = torch.einsum("lsnbr,lsmbr->lsbnm", U, V)
        eye = torch.eye(net.width, dtype=torch.float64)
        sv = torch.linalg.svdvals(low + alpha[..., None, None] * eye)  # (L, S, B, N)
        top, scale = sv[..., 0], alpha.abs()
    out: list[list[float | None]] = []
    for s in range(seeds):
        values = [
            float(top[layer, s, k] / scale[layer, s, k]) if float(scale[layer, s, k]) > 0 else None
            for layer in range(layers)
            for k in range(branches)
        ]
        out.append(values)
    return out


def _run_train(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    dim, teeth = int(params["dim"]), int(params["teeth"])
    device = unit_device(params)
    X, y, X_test, y_test = (a.to(device) for a in _unit_data(params, torch.float32))
    seeds = [int(s) for s in params["seeds"]]
    # Built and drawn on the CPU from the seeds, then moved: the same start on every device.
    net = build_batched(
        seeds,
        dim,
        int(params["width"]),
        int(params["depth"]),
        int(params["rank"]),
        params["mode"],
        params["activation"],
        int(params["branches"]),
    ).to(device)
    initial = separations(net)
    history = train_batched(
        net,
        X,
        y,
        X_test,
        y_test,
        epochs=int(params["budget"]),
        lr=float(params["lr"]),
        eval_every=int(params["eval_every"]),
        threshold=float(params["threshold"]),
    )
    final = np.asarray(history.final_test_mse)
    reached = [e for e in history.epochs_to_threshold if e is not None]
    prediction = None
    if dim == 1:
        grid = torch.linspace(0, 1, 257)[:, None]
        with torch.no_grad():
            prediction = {"x": grid[:, 0].tolist(), "y": net(grid.to(device))[0, :, 0].cpu().tolist()}
    return {
        "stage": "train",
        "target": params["target"],
        "dim": dim,
        "teeth": teeth,
        "mode": params["mode"],
        "depth": int(params["depth"]),
        "branches": int(params["branches"]),
        "width": int(params["width"]),
        "rank": int(params["rank"]),
        "parameters": net.parameters_per_seed(),
        "budget": int(params["budget"]),
        "n_seeds": len(seeds),
        "median_test_mse": float(np.median(final)),
        "min_test_mse": float(final.min()),
        "max_test_mse": float(final.max()),
        "successes": len(reached),
        "success_rate": len(reached) / len(seeds),
        "median_epochs_to_threshold": float(np.median(reached)) if reached else math.nan,
        "seconds": history.seconds,
        "threads": torch.get_num_threads(),
        "final_test_mse": json.dumps(history.final_test_mse),
        "final_train_mse": json.dumps(history.final_train_mse),
        "best_test_mse": json.dumps(history.best_test_mse),
        "epochs_to_threshold": json.dumps(history.epochs_to_threshold),
        "curve": json.dumps(_downsample(history.eval_epochs, history.test_curve)),
        "spectra": json.dumps(_spectra(net)),
        # per seed, per DLoR map followed by σ (deep: one per layer; wide: one per branch): σ₁/|α|
        "separation_init": json.dumps(initial),
        "separation_trained": json.dumps(separations(net)),
        "prediction": json.dumps(prediction),
    }


def _run_correspondence(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    from ...constructive import dlor_network_from_dense
    from ...models import mlp
    from ...training import seeded

    dim, teeth, seed = int(params["dim"]), int(params["teeth"]), int(params["seed"])
    device = unit_device(params)
    X, y, X_test, y_test = _unit_data(params, torch.float32)
    # Built and drawn on the CPU from the seed, then moved: the same start on every device.
    with seeded(seed):
        dense = mlp(dim, 1, int(params["dense_width"]), int(params["dense_depth"]), params["activation"])
    dense = dense.to(device)
    synchronize()
    start = time.perf_counter()
    train_dense(dense, X.to(device), y.to(device), epochs=int(params["dense_epochs"]), lr=float(params["dense_lr"]))
    synchronize()
    fit_seconds = time.perf_counter() - start
    dense = dense.cpu().double()  # the correspondence is built and checked on the CPU in float64
    X_test, y_test = X_test.double(), y_test.double()
    with torch.no_grad():
        reference = dense(X_test)[:, 0]
    row: dict[str, JSONScalar] = {
        "stage": "correspondence",
        "target": params["target"],
        "dim": dim,
        "teeth": teeth,
        "seed": seed,
        "dense_width": int(params["dense_width"]),
        "dense_depth": int(params["dense_depth"]),
        "dense_parameters": int(sum(p.numel() for p in dense.parameters())),
        "dense_test_mse": float(((reference - y_test) ** 2).mean()),
        "fit_seconds": fit_seconds,
    }
    curves: dict[str, dict[str, list[float]]] = {}
    for mode in CORRESPONDENCE_MODES:
        curves[mode] = {"h": [], "test_mse": [], "sup_error": []}
        for h in params["hs"]:
            network = dlor_network_from_dense(dense, mode, float(h), rank=int(params["dlor_rank"]))
            with torch.no_grad():
                out = network(X_test)[:, 0]
            curves[mode]["h"].append(float(h))
            curves[mode]["test_mse"].append(float(((out - y_test) ** 2).mean()))
            curves[mode]["sup_error"].append(float((out - reference).abs().max()))
        row[f"{mode}_dlor_depth"] = sum(1 for m in network if type(m).__name__ not in _LINEAR_LAYERS)
        row[f"{mode}_dlor_parameters"] = int(sum(p.numel() for p in network.parameters()))
        row[f"{mode}_sup_error_min_h"] = curves[mode]["sup_error"][int(np.argmin(curves[mode]["h"]))]
    row["curves"] = json.dumps(curves)
    return row
