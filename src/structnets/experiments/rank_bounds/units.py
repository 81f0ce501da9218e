"""``rank-bounds`` units: the grid of trained ReLU MLPs, and what each unit measures."""

from __future__ import annotations

import functools
import itertools
import json
import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...protocol import JSONScalar, Unit
from ...training.device import device_param, unit_device
from .config import TRAIN_ROWS, RankBoundsConfig, _p_column
from .deep_linear import _run_linear_unit
from .fixed_norm import fixed_norm_units, run_fixed_norm_unit


def _units(config: RankBoundsConfig, finished: pd.DataFrame) -> list[Unit]:
    shared = {
        "n_train": config.n_train,
        "n_test": config.n_test,
        "epochs": config.epochs,
        "batch_size": config.batch_size,
        "lr": config.lr,
        "rank_checkpoints": config.rank_checkpoints,
        "rank_rtol": config.rank_rtol,
        "probe_size": config.probe_size,
        "margin_quantile": config.margin_quantile,
        "ps": list(config.ps),
        "delta": config.delta,
        "sample_target": config.sample_target,
        **device_param(config.device),
    }
    grid = itertools.product(
        config.datasets, config.depths, config.widths, config.weight_decays, config.ranks, config.seeds
    )
    units = []
    for dataset, depth, width, decay, rank, seed in grid:
        variant = "dense" if rank is None else f"rank={rank}"
        units.append(
            Unit(
                key=f"{dataset}/depth={depth}/width={width}/wd={decay:g}/{variant}/seed={seed}",
                params={
                    "dataset": dataset,
                    "depth": depth,
                    "width": width,
                    "weight_decay": decay,
                    "rank": rank,
                    "seed": seed,
                    **shared,
                },
            )
        )
    for depth, decay, seed in itertools.product(config.linear_depths, config.linear_weight_decays, config.seeds):
        units.append(
            Unit(
                key=f"linear/depth={depth}/wd={decay:g}/seed={seed}",
                params={
                    "kind": "deep-linear",
                    "depth": depth,
                    "weight_decay": decay,
                    "seed": seed,
                    "width": config.linear_width,
                    "steps": config.linear_steps,
                    "lr": config.linear_lr,
                },
            )
        )
    units += fixed_norm_units(config)
    units = [unit for unit in units if _part(unit.params) in config.parts]
    # Longest first (the runner hands units to free workers in this order), so that no large
    # network trains alone at the end of a --jobs N run; the order changes no key, param or number.
    return sorted(units, key=lambda unit: -_training_flops(unit.params))


def _part(params: Mapping[str, Any]) -> str:
    """The :data:`.config.PARTS` entry of a unit: ``mlp`` unless its params name another kind."""
    return str(params.get("kind", "mlp"))


_TRAIN_ROWS = TRAIN_ROWS  # rows of each data set's training split
_IN_FEATURES = {"mnist": 784, "rice": 7}


def _training_flops(params: Mapping[str, Any]) -> float:
    """A rough cost of one unit for ordering only: rows × epochs × multiply-adds of one forward pass."""
    if params.get("kind") == "deep-linear":
        return 0.0  # 16 × 16 matrices: about a second each
    if params.get("kind") == "fixed-norm":
        return 0.0  # no training: the bounds of 32 × 32 matrices, seconds each
    rows = min(_TRAIN_ROWS[params["dataset"]], params["n_train"] or _TRAIN_ROWS[params["dataset"]])
    width, depth, rank = int(params["width"]), int(params["depth"]), params["rank"]
    inner = width * width if rank is None else 2 * width * min(int(rank), width)
    per_row = _IN_FEATURES[params["dataset"]] * width + (depth - 2) * inner + 10 * width
    return float(rows * int(params["epochs"]) * per_row)


@functools.lru_cache(maxsize=4)
def _arrays(
    dataset: str, n_train: int | None, n_test: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.int64]:
    """Float32 train/test arrays; the subsample uses a fixed seed so every unit sees the same rows."""
    from ... import data

    loaded = data.load(dataset)
    rng = np.random.default_rng(12345)
    if dataset == "mnist":
        train_rows = np.flatnonzero(loaded.split == "train")
        test_rows = np.flatnonzero(loaded.split == "test")
        X = loaded.X
    else:
        from sklearn.model_selection import train_test_split

        rows = np.arange(len(loaded.y))
        train_rows, test_rows = train_test_split(rows, test_size=0.2, random_state=0, stratify=loaded.y)
        mean = loaded.X[train_rows].mean(0)
        std = loaded.X[train_rows].std(0)
        X = (loaded.X - mean) / np.where(std > 0, std, 1.0)
    if n_train is not None and n_train < len(train_rows):
        train_rows = np.sort(rng.choice(train_rows, n_train, replace=False))
    if n_test is not None and n_test < len(test_rows):
        test_rows = np.sort(rng.choice(test_rows, n_test, replace=False))
    k = int(loaded.y.max()) + 1
    return (
        X[train_rows].astype(np.float32),
        loaded.y[train_rows].astype(np.int64),
        X[test_rows].astype(np.float32),
        loaded.y[test_rows].astype(np.int64),
        np.int64(k),
    )


def _model(in_features: int, out_features: int, width: int, depth: int, rank: int | None):
    """Bias-free ReLU MLP with ``depth`` weight matrices; rank-r factors for all but the output."""
    import torch
    from torch import nn

    from ...nn import LowRankLinear

    def linear(n_in: int, n_out: int) -> nn.Module:
        if rank is None:
            return nn.Linear(n_in, n_out, bias=False)
        layer = LowRankLinear(n_in, n_out, min(rank, n_in, n_out), bias=False)
        # Each factor gets nn.Linear's default variance 1/(3·fan_in), so the product U V has
        # entry variance 1/(9·n_in): a third of nn.Linear's. Compounded over 7 layers that
        # left depth-8 rank-16 nets untrained (86% training error after 10 epochs on MNIST);
        # scaling U by √3 gives U V the entry variance of the dense layer it stands for.
        with torch.no_grad():
            layer.U.mul_(math.sqrt(3.0))
        return layer

    layers: list[nn.Module] = [linear(in_features, width)]
    for _ in range(depth - 2):
        layers += [nn.ReLU(), linear(width, width)]
    layers += [nn.ReLU(), nn.Linear(width, out_features, bias=False)]
    return nn.Sequential(*layers)


def _run_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    from ...training import torch_threads

    # One intra-op thread: these matrices are small and the units run side by side on shared
    # cores, where extra threads only spin. Restored afterwards, so an in-process caller keeps its own.
    with torch_threads(1):
        if params.get("kind") == "deep-linear":
            return _run_linear_unit(params)
        if params.get("kind") == "fixed-norm":
            return run_fixed_norm_unit(params)
        return _run_unit_body(params)


def _run_unit_body(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    import torch

    from ...analysis import (
        bottleneck_rank,
        dense_matrices,
        hidden_representations,
        layer_spectra,
        margin_for_bounds,
        margin_loss,
        margins,
        pac_bayes_bound,
        parameter_count_bound,
        rank_sparse_bounds,
        singular_values,
        spectral_bound,
    )
    from ...analysis.balance import frobenius_sum, schatten_end_to_end
    from ...analysis.dense_matrices import factor_ranks, stored_parameters
    from ...training import fit
    from ...training.fit import seeded

    start = time.perf_counter()
    dataset, depth, width = params["dataset"], int(params["depth"]), int(params["width"])
    seed, decay, rtol = int(params["seed"]), float(params["weight_decay"]), float(params["rank_rtol"])
    X_train, y_train, X_test, y_test, k = _arrays(dataset, params["n_train"], params["n_test"])
    device = unit_device(params)
    with seeded(seed):  # built on the CPU, then moved: the same initial weights on every device
        rank = None if params["rank"] is None else int(params["rank"])
        model = _model(X_train.shape[1], int(k), width, depth, rank).to(device)
    probe = torch.from_numpy(X_train[: int(params["probe_size"])]).to(device)
    epochs = int(params["epochs"])
    checkpoints = sorted(
        {round(epochs * (i + 1) / int(params["rank_checkpoints"])) - 1 for i in range(int(params["rank_checkpoints"]))}
    )
    history: dict[str, list] = {"epoch": [], "weight_ranks": [], "activation_ranks": []}
    # the singular values of the weights at the last record: the final ones when training ran
    # every epoch (the last epoch is always a checkpoint), so the final ranks reuse that SVD
    recorded: dict[str, Any] = {"epoch": -1, "spectra": []}

    def record(epoch: int) -> None:
        # measured on the CPU (float32 SVDs, as the numbers of CPU runs), whatever the device
        spectra = [singular_values(m.detach().cpu()) for m in dense_matrices(model)]
        recorded["epoch"], recorded["spectra"] = epoch + 1, spectra
        history["epoch"].append(epoch + 1)
        history["weight_ranks"].append([_numerical_rank(sigma, rtol) for sigma in spectra])
        hidden = [h.cpu() for h in hidden_representations(model, probe)]
        history["activation_ranks"].append(bottleneck_rank(hidden, rtol=rtol))

    record(-1)  # at initialisation

    def callback(epoch: int, logs: Mapping[str, float]) -> None:
        if epoch in checkpoints:
            record(epoch)

    result = fit(
        model,
        X_train,
        y_train,
        loss="cross_entropy",
        epochs=epochs,
        batch_size=int(params["batch_size"]),
        lr=float(params["lr"]),
        weight_decay=decay,
        seed=seed,
        callback=callback,
    )
    model = model.cpu()  # measured on the CPU
    with torch.no_grad():
        out_train = model(torch.from_numpy(X_train)).double()
        out_test = model(torch.from_numpy(X_test)).double()
    y_tr, y_te = torch.from_numpy(y_train), torch.from_numpy(y_test)
    train_error = float((out_train.argmax(1) != y_tr).double().mean())
    test_error = float((out_test.argmax(1) != y_te).double().mean())
    margin_values = margins(out_train, y_tr)
    gamma = margin_for_bounds(margin_values, float(params["margin_quantile"]))
    risk = margin_loss(margin_values, gamma)
    n = int(len(y_train))
    input_norm = float(max(np.linalg.norm(X_train, axis=1).max(), np.linalg.norm(X_test, axis=1).max()))
    data_norm = float(np.linalg.norm(X_train.astype(np.float64)))
    matrices = dense_matrices(model)
    common: dict[str, Any] = {
        "spectra": layer_spectra(matrices),  # one float64 SVD per layer for all seven bound calls
        "n": n,
        "margin": gamma,
        "input_norm": input_norm,
        "empirical_risk": risk,
        "delta": float(params["delta"]),
        "sample_target": float(params["sample_target"]),
    }
    # the covering bounds and the spectral bound all use the sample's ‖X‖_F (docs/bounds.md, Sec. 3)
    count = parameter_count_bound(matrices, data_norm=data_norm, **common)
    # the parameters the network stores: 2Wr per W×W rank-r factorised layer, not W²
    # (bias-free nets, so no biases to add); for dense nets the same as `count`
    stored_ranks = factor_ranks(model)
    count_stored = (
        parameter_count_bound(matrices, data_norm=data_norm, factor_ranks=stored_ranks, **common)
        if any(r is not None for r in stored_ranks)
        else count
    )
    spectral = spectral_bound(matrices, data_norm=data_norm, **common)
    pac = pac_bayes_bound(matrices, **common)
    ps = [float(p) for p in params["ps"]]
    sparse = rank_sparse_bounds(matrices, ps=ps, data_norm=data_norm, **common)
    # the earlier composition (every layer at radius budget/L), to measure what the allocation adds
    count_equal = parameter_count_bound(matrices, data_norm=data_norm, allocation="equal", **common)
    sparse_equal = rank_sparse_bounds(matrices, ps=ps, data_norm=data_norm, allocation="equal", **common)
    # the same family with the tail covered by truncation only, to measure what Maurey adds
    truncated = rank_sparse_bounds(matrices, ps=ps, data_norm=data_norm, tail_covering="truncate", **common)

    final_activation = history["activation_ranks"][-1]
    spectra = recorded["spectra"]
    if recorded["epoch"] != result.epochs_run:  # training stopped before its last checkpoint
        spectra = [singular_values(m) for m in matrices]
    weight_ranks = [_numerical_rank(sigma, rtol) for sigma in spectra]
    row: dict[str, JSONScalar] = {
        "dataset": dataset,
        "depth": depth,
        "width": width,
        "weight_decay": decay,
        "variant": "dense" if rank is None else f"rank={rank}",
        "rank": 0 if rank is None else rank,
        "seed": seed,
        "n_train": n,
        "n_test": int(len(y_test)),
        "epochs_run": result.epochs_run,
        "train_loss": float(result.train_loss[-1]),
        "train_error": train_error,
        "test_error": test_error,
        "gap": test_error - train_error,
        "margin": gamma,
        "margin_loss": risk,
        "input_norm": input_norm,
        "weight_ranks": json.dumps(weight_ranks),
        "stable_ranks": json.dumps([round(_stable_rank(sigma), 4) for sigma in spectra]),
        "effective_ranks": json.dumps([round(_effective_rank(sigma), 3) for sigma in spectra]),
        "activation_ranks": json.dumps(final_activation),
        "min_activation_rank": int(min(final_activation)),
        "mean_activation_rank_ratio": float(np.mean(final_activation) / width),
        "mean_hidden_weight_rank_ratio": float(
            np.mean([rank / min(m.shape) for rank, m in zip(weight_ranks[:-1], matrices[:-1])])
        ),
        "rank_history": json.dumps(history),
        "frobenius_sum": frobenius_sum(matrices),
        "end_to_end_schatten": schatten_end_to_end(matrices),
        "spectral_product": spectral.spectral_product,
        "param_total": count.total,
        "param_complexity": count.complexity,
        "param_sc": count.sample_complexity,
        "spectral_total": spectral.total,
        "spectral_complexity": spectral.complexity,
        "spectral_sc": spectral.sample_complexity,
        "pacbayes_total": pac.total,
        "pacbayes_complexity": pac.complexity,
        "pacbayes_sc": pac.sample_complexity,
        "parameters": count.parameters,
        "stored_parameters": stored_parameters(model),
        "factorised_parameters": count_stored.parameters,
        "param_factorised_total": count_stored.total,
        "param_factorised_sc": count_stored.sample_complexity,
        "param_equal_sc": count_equal.sample_complexity,
        "best_rs_equal_sc": min(b.sample_complexity for b in sparse_equal),
        "layer_frobenius": json.dumps([round(float(m.double().square().sum()), 6) for m in matrices]),
    }
    for p, bound in zip(ps, sparse):
        column = _p_column(p)
        row[f"{column}_total"] = bound.total
        row[f"{column}_complexity"] = bound.complexity
        row[f"{column}_sc"] = bound.sample_complexity
    best = min(sparse, key=lambda b: b.sample_complexity)
    row["best_rs_sc"] = best.sample_complexity
    row["best_rs_p"] = best.p
    row["best_rs_truncate_sc"] = min(b.sample_complexity for b in truncated)
    # t(1) = γ/(2KL): each layer's relative covering radius at loss scale ε = 1 (the largest in
    # Dudley's integral); the Maurey tail costs ∝ 1/t², the parameter count ∝ log(1/t)
    row["covering_radius"] = min(gamma / (2.0 * count.lipschitz_scale * depth), 1.0 / depth)
    row["threads"] = torch.get_num_threads()
    row["seconds"] = time.perf_counter() - start
    return row


# The three ranks of structnets.analysis.spectral (numerical_rank, stable_rank, effective_rank),
# evaluated on singular values already computed, so one SVD per weight matrix serves all three
# (tests/experiments/test_rank_bounds.py checks they equal the library's, bit for bit).


def _numerical_rank(sigma: Any, rtol: float) -> int:
    """``#{i : σ_i > rtol · σ_1, σ_i > 0}`` of a descending singular-value vector."""
    return int(((sigma > rtol * sigma[..., :1]) & (sigma > 0)).sum(-1))


def _stable_rank(sigma: Any) -> float:
    """``Σ_i σ_i² / σ_1²`` (0 for a zero matrix)."""
    import torch

    top = sigma[..., 0]
    safe_top = torch.where(top > 0, top, torch.ones_like(top))
    return float(torch.where(top > 0, ((sigma / safe_top.unsqueeze(-1)) ** 2).sum(-1), torch.zeros_like(top)))


def _effective_rank(sigma: Any) -> float:
    """``exp(−Σ_i q_i log q_i)``, ``q_i = σ_i / Σ_j σ_j`` (0 for a zero matrix)."""
    import torch

    total = sigma.sum(-1, keepdim=True)
    safe_total = torch.where(total > 0, total, torch.ones_like(total))
    q = sigma / safe_total
    entropy = -torch.where(q > 0, q * torch.log(torch.where(q > 0, q, torch.ones_like(q))), torch.zeros_like(q)).sum(-1)
    return float(torch.where(total[..., 0] > 0, torch.exp(entropy), torch.zeros_like(entropy)))
