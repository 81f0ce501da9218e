"""Units of ``dlor-blindspot``: the floor estimate, exact rank-1 interpolation, and seed-batched training."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from typing import Any, cast

import numpy as np
import pandas as pd
import torch
from torch import nn

from ...analysis.timing import synchronize
from ...protocol import JSONScalar, Unit
from ...training import torch_threads
from ...training.device import device_param, unit_device
from ...training.seed_batched import train_vmapped
from .config import DLoRBlindspotConfig
from .decompose import ranks_for, run_decompose
from .targets import MODELS, ridge_floor, saddle_data, saddle_grid


def make_units(config: DLoRBlindspotConfig, finished: pd.DataFrame) -> list[Unit]:
    units = [Unit("floor", {"stage": "floor", "samples": config.floor_samples, "directions": config.floor_directions})]
    for n in config.interpolation_sizes:
        units.append(
            Unit(f"interpolate/n={n}", {"stage": "interpolate", "n": n, "test_per_axis": config.test_per_axis})
        )
    for size in config.decompose_sizes:
        for kind in config.decompose_kinds:
            for rank in ranks_for(size):
                units.append(
                    Unit(
                        f"decompose/N={size}/{kind}/r={rank}",
                        {"stage": "decompose", "size": size, "kind": kind, "rank": rank, "seed": config.decompose_seed},
                    )
                )
    for model in MODELS:
        for width in config.widths:
            units.append(
                Unit(
                    f"train/{model}/width={width}",
                    {
                        "stage": "train",
                        "model": model,
                        "width": width,
                        "depth": config.depth,
                        "seeds": list(config.seeds),
                        "activation": config.activation,
                        "epochs": config.epochs,
                        "lr": config.lr,
                        "n_train": config.n_train,
                        "test_per_axis": config.test_per_axis,
                        "data_seed": config.data_seed,
                        **device_param(config.device),
                    },
                )
            )
    return units


def _build(model: str, width: int, depth: int, activation: str, seed: int) -> nn.Module:
    from ...models import dlor_mlp, rank_one_mlp
    from ...training import seeded

    with seeded(seed):
        if model == "rank1":
            return rank_one_mlp(2, 1, width, depth, activation)
        return dlor_mlp(2, 1, width, depth, 1, "deep", activation)


def run_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    with torch_threads(1):
        stage = params["stage"]
        if stage == "floor":
            X, y = saddle_data(int(params["samples"]), seed=2024)
            floor, theta = ridge_floor(X, y, directions=int(params["directions"]))
            return {"stage": "floor", "floor_mse": floor, "floor_theta": theta, "variance": float(y.var())}
        if stage == "interpolate":
            return _run_interpolate(params)
        if stage == "train":
            return _run_train(params)
        if stage == "decompose":
            return run_decompose(params)
    raise ValueError(f"`stage` must be one of ['decompose', 'floor', 'interpolate', 'train'], got {stage!r}")


def _run_interpolate(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    from ...constructive import rank_one_interpolant

    n = int(params["n"])
    rng = np.random.default_rng(n)
    x1 = rng.uniform(-1.0, 1.0, n)
    y1 = rng.normal(size=n)
    net1 = rank_one_interpolant(x1, y1)
    X2, y2 = saddle_data(n, seed=n + 1)
    net2 = rank_one_interpolant(X2, y2)
    X_test, y_test = saddle_grid(int(params["test_per_axis"]))
    with torch.no_grad():
        error1 = float((net1(torch.as_tensor(x1)[:, None])[:, 0] - torch.as_tensor(y1)).abs().max())
        error2 = float((net2(torch.as_tensor(X2))[:, 0] - torch.as_tensor(y2)).abs().max())
        test = float(((net2(torch.as_tensor(X_test))[:, 0] - torch.as_tensor(y_test)) ** 2).mean())
    return {
        "stage": "interpolate",
        "n": n,
        "max_error_scalar_inputs": error1,
        "max_error_2d_inputs": error2,
        "test_mse_2d": test,
    }


def _run_train(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    model, width, depth = params["model"], int(params["width"]), int(params["depth"])
    seeds = [int(s) for s in params["seeds"]]
    X, y, X_test, y_test = (
        torch.as_tensor(a, dtype=torch.float32)
        for a in (
            *saddle_data(int(params["n_train"]), int(params["data_seed"])),
            *saddle_grid(int(params["test_per_axis"])),
        )
    )
    device = unit_device(params)
    # Built and drawn on the CPU from the seeds, then moved: the same start on every device.
    models = [_build(model, width, depth, params["activation"], seed).to(device) for seed in seeds]
    X, y, X_test, y_test = (a.to(device) for a in (X, y, X_test, y_test))
    synchronize()
    start = time.perf_counter()
    test, train, trained = train_vmapped(
        models, X, y, X_test, y_test, epochs=int(params["epochs"]), lr=float(params["lr"])
    )
    synchronize()
    seconds = time.perf_counter() - start
    # The blind spot, measured: how much the output moves along the direction orthogonal to
    # the first layer's v (exactly 0 for rank-1 networks, whatever training did).
    invariance = []
    for net in trained:
        first: Any = next(m for m in cast(nn.Sequential, net) if hasattr(m, "v") or hasattr(m, "V"))
        if hasattr(first, "v"):
            v = first.v.detach()
            w = torch.stack([-v[1], v[0]]) / torch.linalg.vector_norm(v)
        else:
            w = torch.tensor([1.0, -1.0], device=X_test.device) / math.sqrt(2.0)
        with torch.no_grad():
            invariance.append(float((net(X_test + 0.25 * w) - net(X_test)).abs().max()))
    spectra = _spectral_separation(models, trained) if model == "dlor" else None
    return {
        "stage": "train",
        "model": model,
        "width": width,
        "depth": depth,
        "parameters": int(sum(p.numel() for p in models[0].parameters())),
        "n_seeds": len(seeds),
        "median_test_mse": float(np.median(test)),
        "min_test_mse": float(np.min(test)),
        "max_test_mse": float(np.max(test)),
        "median_train_mse": float(np.median(train)),
        "max_orthogonal_change": float(np.max(invariance)),
        "test_mse": json.dumps(test),
        # per seed, per DLoR map: σ₁(αI + UVᵀ)/|α| before and after training (None for rank-1 nets)
        "separation_init": None if spectra is None else json.dumps(spectra[0]),
        "separation_trained": None if spectra is None else json.dumps(spectra[1]),
        "background_maps": None if spectra is None else spectra[2],
        "seconds": seconds,
    }


def _spectral_separation(
    initial: list[nn.Module], trained: list[nn.Module]
) -> tuple[list[list[float]], list[list[float]], int]:
    """σ₁(αI + UVᵀ)/|α| of every DLoR map of every seed, at initialisation and after training, and how many
    trained maps have at least N − 2r singular values at |α| (within 1e-6·max(1, |α|), float64 SVD).

    The identity part contributes |α| to every direction outside span(U, V), so N − 2r singular values
    equal |α| in any DLoR matrix (structural) and σ₁ ≥ |α| (interlacing); how far σ₁ stands above the
    background, and whether training moves it, is what the low-rank part has learned (Chen et al.'s
    spectral analysis: the low-rank part takes the dominant directions)."""
    from ...nn import DLoRLinear

    def maps(net: nn.Module) -> list[tuple[float, torch.Tensor]]:
        with torch.no_grad():
            return [
                (abs(float(m.alpha)), torch.linalg.svdvals(m.to_dense().detach().cpu().double()))
                for m in net.modules()
                if isinstance(m, DLoRLinear)
            ]

    def separation(net: nn.Module) -> list[float]:
        return [float(sv[0]) / alpha if alpha > 0 else math.inf for alpha, sv in maps(net)]

    background = 0
    for net in trained:
        for m, (alpha, sv) in zip((m for m in net.modules() if isinstance(m, DLoRLinear)), maps(net)):
            near = int(torch.sum(torch.abs(sv - alpha) <= 1e-6 * max(1.0, alpha)))
            background += int(near >= m.features - 2 * m.rank)
    return [separation(net) for net in initial], [separation(net) for net in trained], background
