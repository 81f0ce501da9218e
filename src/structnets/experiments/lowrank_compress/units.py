"""Units of ``lowrank-compress``: train a dense MLP, compress it, fine-tune it, train its twin from scratch.

Every unit is a pure, seeded function of its params (one result row). The compressed and
fine-tuned units need the trained dense net of their (data set, seed): they retrain it, which on
the CPU gives bit-identical weights (:func:`structnets.training.fit`), so a worker process keeps the
last trained dense net in memory and reuses it instead (:func:`_trained_dense`); the numbers are
the same either way. With a ``device`` param the nets train there and come back to the CPU
after every :func:`structnets.training.fit` (:func:`_train`); everything else runs on the CPU.
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from ...protocol import JSONScalar, Unit
from ...training.device import device_param, unit_device
from .config import LowRankCompressConfig, ratio_key

_DENSE_FIELDS: tuple[str, ...] = (
    "dataset", "seed", "width", "depth", "activation", "epochs", "batch_size", "lr", "weight_decay",
    "max_train", "max_test", "test_fraction",
)  # fmt: skip


def all_units(config: LowRankCompressConfig, finished: pd.DataFrame) -> list[Unit]:
    """Every unit of ``config`` (one stage: the dense net is retrained where needed, see the module docstring).

    First the curve units (:func:`.curves.curve_units`, keyed ``curve/...``); then the MLP-per-data-set
    units, ordered (data set, seed) first, dense before its compressions, so one worker reuses each dense net.
    """
    from .curves import curve_units

    del finished  # a single stage: every unit is known from the start
    out: list[Unit] = curve_units(config)
    for dataset in config.datasets:
        for seed in config.seeds:
            dense = {
                "dataset": dataset, "seed": seed, "width": config.width, "depth": config.depth,
                "activation": config.activation, "epochs": config.epochs, "batch_size": config.batch_size,
                "lr": config.lr, "weight_decay": config.weight_decay, "max_train": config.max_train,
                "max_test": config.max_test, "test_fraction": config.test_fraction,
                **device_param(config.device),
            }  # fmt: skip
            out.append(Unit(key=f"dense/{dataset}/seed={seed}", params={"model": "dense", **dense}))
            for ratio in config.ratios:
                for model in ("compressed", "finetuned", "scratch"):
                    params = {
                        "model": model, "ratio": ratio, "method": config.method,
                        "compress_output": config.compress_output, **dense,
                    }  # fmt: skip
                    if model == "finetuned":
                        params |= {"finetune_epochs": config.finetune_epochs, "finetune_lr": config.finetune_lr}
                    key = f"{model}/{dataset}/ratio={ratio_key(ratio)}/seed={seed}"
                    if config.allocation != "uniform":  # the original keys and params stay as they were
                        params |= {"allocation": config.allocation}
                        if config.allocation == "calibrated":
                            params |= {"calibration_rows": config.calibration_rows}
                        key += f"/allocation={config.allocation}"
                    out.append(Unit(key=key, params=params))
    return out


# --------------------------------------------------------------------------------------------
# Data and models


@functools.lru_cache(maxsize=2)
def _arrays(
    dataset: str, seed: int, max_train: int | None, max_test: int | None, test_fraction: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, str, int]:
    """(X_train, y_train, X_test, y_test, task, outputs): float32 features, standardised by the
    training rows' mean and standard deviation (MNIST: pixels in [0, 1], left as they are)."""
    from sklearn.model_selection import train_test_split

    from ... import data

    loaded = data.load(dataset)
    X, y, task = loaded.X, loaded.y, loaded.task
    stratify = y if task == "classification" else None
    if loaded.split is not None:
        split = np.asarray(loaded.split)
        train, test = np.flatnonzero(split == "train"), np.flatnonzero(split == "test")
    else:
        train, test = train_test_split(np.arange(len(y)), test_size=test_fraction, random_state=seed, stratify=stratify)
    rng = np.random.default_rng(seed)
    if max_train is not None and max_train < len(train):
        train = np.sort(rng.choice(train, size=max_train, replace=False))
    if max_test is not None and max_test < len(test):
        test = np.sort(rng.choice(test, size=max_test, replace=False))
    X_train, X_test = X[train], X[test]
    if loaded.split is None:  # UCI: standardise inside the training rows
        mean, std = X_train.mean(axis=0), X_train.std(axis=0)
        std[std == 0] = 1.0
        X_train, X_test = (X_train - mean) / std, (X_test - mean) / std
    y_dtype = torch.int64 if task == "classification" else torch.float32
    outputs = len(loaded.classes) if loaded.classes is not None else 1
    return (
        torch.as_tensor(X_train, dtype=torch.float32), torch.as_tensor(y[train], dtype=y_dtype),
        torch.as_tensor(X_test, dtype=torch.float32), torch.as_tensor(y[test], dtype=y_dtype), task, outputs,
    )  # fmt: skip


def _data(params: Mapping[str, Any]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, str, int]:
    return _arrays(
        str(params["dataset"]), int(params["seed"]), _optional_int(params["max_train"]),
        _optional_int(params["max_test"]), float(params["test_fraction"]),
    )  # fmt: skip


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _fresh_dense(params: Mapping[str, Any], features: int, outputs: int) -> nn.Sequential:
    from ...models import mlp
    from ...training.fit import seeded

    with seeded(int(params["seed"])):
        return mlp(features, outputs, int(params["width"]), int(params["depth"]), str(params["activation"]))


def _train(model: nn.Module, params: Mapping[str, Any], X: torch.Tensor, y: torch.Tensor, task: str,
           *, epochs: int, lr: float) -> float:  # fmt: skip
    """Train ``model`` in place with :func:`structnets.training.fit` (Adam, fixed budget); return seconds.

    The model (built on the CPU) trains on the unit's device and is back on the CPU afterwards.
    ``fit``'s wall time reads every epoch's loss as a Python float, so it includes the GPU's work.
    """
    from ...training.fit import fit

    device = unit_device(params)
    model.to(device)
    result = fit(
        model, X.to(device), y.to(device), loss="cross_entropy" if task == "classification" else "mse",
        epochs=epochs, batch_size=int(params["batch_size"]), lr=lr, weight_decay=float(params["weight_decay"]),
        seed=int(params["seed"]),
    )  # fmt: skip
    model.to("cpu")
    return result.wall_time


@functools.lru_cache(maxsize=1)
def _trained_dense_cached(key: str) -> tuple[nn.Sequential, float]:
    params = json.loads(key)
    X_train, y_train, _, _, task, outputs = _data(params)
    model = _fresh_dense(params, X_train.shape[1], outputs)
    seconds = _train(model, params, X_train, y_train, task, epochs=int(params["epochs"]), lr=float(params["lr"]))
    return model.eval(), seconds


def _trained_dense(params: Mapping[str, Any]) -> tuple[nn.Sequential, float]:
    """The trained dense net of ``params`` and its training seconds (never modify the net: it is shared)."""
    fields = (*_DENSE_FIELDS, "device") if "device" in params else _DENSE_FIELDS
    return _trained_dense_cached(json.dumps({k: params[k] for k in fields}, sort_keys=True))


def _compress(model: nn.Module, params: Mapping[str, Any]) -> Any:
    """:func:`structnets.compress` at the unit's ratio; the output layer stays dense unless asked.

    ``allocation`` ``"uniform"`` (absent: the original units): ``ratio=r`` in every layer;
    ``"budget"``: ``flops=r`` allocated model-wide; ``"calibrated"``: the same with
    ``calibration=`` the first ``calibration_rows`` training rows (whitened truncation).
    """
    from ...compression import compress

    names = [name for name, module in model.named_modules() if isinstance(module, nn.Linear)]
    exclude = None if bool(params["compress_output"]) else names[-1]
    allocation = str(params.get("allocation", "uniform"))
    ratio = float(params["ratio"])
    if allocation == "uniform":
        return compress(model, str(params["method"]), ratio=ratio, exclude=exclude)
    calibration = None
    if allocation == "calibrated":
        X_train = _data(params)[0]
        calibration = X_train[: int(params["calibration_rows"])]
    return compress(model, str(params["method"]), flops=ratio, exclude=exclude, calibration=calibration)


def _reinitialise(model: nn.Module, seed: int) -> nn.Module:
    """Draw fresh weights for every layer of ``model`` (its own ``reset_parameters``), seeded."""
    from ...training.fit import seeded

    with seeded(seed):
        for module in model.modules():
            reset = getattr(module, "reset_parameters", None)
            if module is not model and callable(reset):
                reset()
    return model


@torch.no_grad()
def scores(model: nn.Module, X: torch.Tensor, y: torch.Tensor, task: str) -> dict[str, float]:
    """Test accuracy (fraction correct, argmax of the logits) or RMSE of ``model`` on ``(X, y)``.

    Args:
        model: maps (n, d) to (n, classes) logits or (n, 1) predictions.
        X: (n, d) inputs; y: (n,) class indices or targets.
        task: ``"classification"`` or ``"regression"``.

    Returns:
        ``{"accuracy": a, "rmse": nan}`` or ``{"accuracy": nan, "rmse": √(mean (ŷ − y)²)}``.
    """
    was_training = model.training
    model.eval()
    output = model(X)
    model.train(was_training)
    if task == "classification":
        return {"accuracy": float((output.argmax(dim=1) == y).double().mean()), "rmse": math.nan}
    error = output.reshape(-1).double() - y.double()
    return {"accuracy": math.nan, "rmse": float(error.square().mean().sqrt())}


# --------------------------------------------------------------------------------------------
# The unit body


def run_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    """One row: the test score, parameters and FLOPs of one of the four models (see ``MODELS``), or a
    curve row (params ``stage="curve"``: :func:`.curves.run_curve_unit`)."""
    from ...analysis.cost import cost

    if params.get("stage") == "curve":
        from .curves import run_curve_unit

        return run_curve_unit(params)

    model_name = str(params["model"])
    if model_name not in ("dense", "compressed", "finetuned", "scratch"):
        raise ValueError(f"`model` must be one of ['compressed', 'dense', 'finetuned', 'scratch'], got {model_name!r}")
    X_train, y_train, X_test, y_test, task, outputs = _data(params)
    features = X_train.shape[1]
    dense, dense_seconds = _trained_dense(params) if model_name != "scratch" else (None, math.nan)
    dense_cost = cost(_fresh_dense(params, features, outputs), (1, features))
    row: dict[str, JSONScalar] = {
        "dataset": str(params["dataset"]), "task": task, "model": model_name,
        "ratio": None if model_name == "dense" else float(params["ratio"]), "seed": int(params["seed"]),
        "method": "dense" if model_name == "dense" else str(params["method"]),
        "width": int(params["width"]), "depth": int(params["depth"]), "n_train": len(y_train), "n_test": len(y_test),
        "epochs": int(params["epochs"]), "finetune_epochs": int(params.get("finetune_epochs", 0)),
    }  # fmt: skip
    if "allocation" in params:
        row["allocation"] = str(params["allocation"])
    if model_name == "dense":
        assert dense is not None
        final: nn.Module = dense
        row |= {"relative_error_mean": 0.0, "relative_error_max": 0.0, "rank_min": None, "rank_max": None,
                "layers_replaced": 0, "train_seconds": dense_seconds}  # fmt: skip
    else:
        start = time.perf_counter()
        if dense is None and "allocation" in params:  # allocated ranks depend on the trained weights
            dense = _trained_dense(params)[0]
        template = dense if dense is not None else _fresh_dense(params, features, outputs)
        report = _compress(template, params)
        seconds = time.perf_counter() - start
        replaced = [layer for layer in report.layers if layer.replaced]
        ranks = [int(layer.rank) for layer in replaced if layer.rank is not None]
        errors = [layer.relative_error for layer in replaced]
        final = report.model
        row |= {
            "relative_error_mean": float(np.mean(errors)) if model_name != "scratch" else None,
            "relative_error_max": float(np.max(errors)) if model_name != "scratch" else None,
            "rank_min": min(ranks), "rank_max": max(ranks), "layers_replaced": len(replaced),
        }  # fmt: skip
        if model_name == "finetuned":
            seconds = _train(final, params, X_train, y_train, task, epochs=int(params["finetune_epochs"]),
                             lr=float(params["finetune_lr"]))  # fmt: skip
        elif model_name == "scratch":
            # The compressed architecture (same ranks, same FLOPs) from a fresh draw, with the dense budget.
            final = _reinitialise(final, 10_000 + int(params["seed"]))
            seconds = _train(
                final, params, X_train, y_train, task, epochs=int(params["epochs"]), lr=float(params["lr"])
            )
        row["train_seconds"] = seconds
    counted = cost(final, (1, features))
    return {
        **row,
        "parameters": counted.parameters,
        "flops": counted.flops,
        "parameters_ratio": counted.parameters / dense_cost.parameters,
        "flops_ratio": counted.flops / dense_cost.flops,
        **scores(final, X_test, y_test, task),
    }
