"""Units of ``lowrank-uci`` and their bodies: pure, seeded functions of their params (one row each).

Stage 1 (``select``) grid-searches the dense net on one hold-out split; stage 2 (``cv``) runs K-fold
cross-validation of dense, low-rank and the bottleneck sweep at the chosen architecture; stage 3
(``efficiency``) counts parameters and FLOPs and times and measures dense against low-rank. Training
is :class:`structnets.estimators.MLPClassifier` / ``MLPRegressor``, i.e. :func:`structnets.training.fit`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...protocol import JSONScalar, Unit
from ...training import torch_threads
from ...training.device import device_param, unit_device
from .config import LowRankUCIConfig


def _model_variants(config: LowRankUCIConfig) -> dict[str, float | None]:
    """Model name → bottleneck ratio (None = dense). ``lowrank`` is the paper's model."""
    variants: dict[str, float | None] = {"dense": None, "lowrank": config.bottleneck}
    for ratio in config.sensitivity:
        if not math.isclose(ratio, config.bottleneck):
            variants[f"ratio={ratio:.4g}"] = ratio
    return variants


def _training_params(config: LowRankUCIConfig) -> dict[str, Any]:
    return {
        "epochs": config.epochs,
        "batch_size": config.batch_size,
        "lr": config.lr,
        "weight_decay": config.weight_decay,
        "patience": config.patience,
        "validation_fraction": config.validation_fraction,
        "activation": config.activation,
        "max_rows": config.max_rows,
        **device_param(config.device),
        **_protocol_params(config),
    }


def _protocol_params(config: LowRankUCIConfig) -> dict[str, Any]:
    """The paper-like options, only where they differ from the defaults, so that units of the
    default protocol keep the params of runs stored before these options existed (and resume)."""
    params: dict[str, Any] = {}
    if not config.early_stopping:
        params["early_stopping"] = False
    if config.categorical != "ordinal":
        params["categorical"] = config.categorical
    return params


def _units(config: LowRankUCIConfig, finished: pd.DataFrame) -> list[Unit]:
    units: list[Unit] = []
    training = _training_params(config)
    for dataset in config.datasets:
        for depth in config.depths:
            for width in config.widths:
                units.append(
                    Unit(
                        key=f"select/{dataset}/depth={depth}/width={width}",
                        params={
                            "stage": "select",
                            "dataset": dataset,
                            "depth": depth,
                            "width": width,
                            "selection_fraction": config.selection_fraction,
                            **training,
                        },
                    )
                )
        chosen = _chosen_architecture(config, finished, dataset)
        if chosen is None:
            continue  # stage 2 waits for every grid point of this data set
        depth, width = chosen
        for model, ratio in _model_variants(config).items():
            for seed in config.seeds:
                for fold in range(config.folds):
                    units.append(
                        Unit(
                            key=f"cv/{dataset}/{model}/fold={fold}/seed={seed}",
                            params={
                                "stage": "cv",
                                "dataset": dataset,
                                "model": model,
                                "bottleneck": ratio,
                                "depth": depth,
                                "width": width,
                                "folds": config.folds,
                                "fold": fold,
                                "seed": seed,
                                **training,
                            },
                        )
                    )
        units.append(_efficiency_unit(config, f"efficiency/{dataset}", dataset, depth, width, "chosen"))
        if dataset == "adult":
            for extra in config.efficiency_widths:
                units.append(
                    _efficiency_unit(config, f"efficiency/adult/width={extra}", dataset, max(depth, 2), extra, "sweep")
                )
    return units


def _efficiency_unit(config: LowRankUCIConfig, key: str, dataset: str, depth: int, width: int, role: str) -> Unit:
    return Unit(
        key=key,
        params={
            "stage": "efficiency",
            "role": role,
            "dataset": dataset,
            "depth": depth,
            "width": width,
            "bottleneck": config.bottleneck,
            "batch": config.latency_batch,
            "pairs": config.latency_pairs,
            "activation": config.activation,
            **device_param(config.device),
            **({"categorical": config.categorical} if config.categorical != "ordinal" else {}),
        },
    )


def _chosen_architecture(config: LowRankUCIConfig, finished: pd.DataFrame, dataset: str) -> tuple[int, int] | None:
    """Best (depth, width) of the stage-1 grid, or None while a grid point is unfinished.

    Ties (equal validation score) go to the smaller network: fewer parameters, same accuracy.
    """
    if finished.empty or "stage" not in finished:
        return None
    rows = finished[(finished["stage"] == "select") & (finished["dataset"] == dataset)]
    grid = {(d, w) for d in config.depths for w in config.widths}
    done = {(int(d), int(w)) for d, w in zip(rows["depth"], rows["width"])}
    if not grid <= done:
        return None
    rows = rows[[(int(d), int(w)) in grid for d, w in zip(rows["depth"], rows["width"])]]
    ordered = rows.sort_values(["score", "parameters", "depth", "width"], ascending=[False, True, True, True])
    best = ordered.iloc[0]
    return int(best["depth"]), int(best["width"])


# --------------------------------------------------------------------------------------------
# Unit bodies (run in worker processes; pure functions of their params)


def _run_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    stage = params["stage"]
    # Training units fit small nets (width <= a few hundred, batches <= 256): one intra-op thread.
    # A second thread gains nothing there and, on a shared machine, costs up to 20x in OpenMP
    # waits (``--jobs 1`` gives each unit every CPU; docs/lowrank.md). With ``--jobs 2`` on 2
    # CPUs a unit already has one thread, so results are unchanged there.
    if stage == "select":
        with torch_threads(1):
            return _run_select(params)
    if stage == "cv":
        with torch_threads(1):
            return _run_cv(params)
    if stage == "efficiency":
        return _run_efficiency(params)
    raise ValueError(f"`stage` must be one of ['cv', 'efficiency', 'select'], got {stage!r}")


def _dataset_arrays(
    name: str, max_rows: int | None, seed: int = 0, categorical: str = "ordinal"
) -> tuple[np.ndarray, np.ndarray, str]:
    """Load ``name`` and, if asked, one-hot its integer-coded categoricals (``categorical="onehot"``)
    and take a stratified subsample of ``max_rows`` rows."""
    from ... import data
    from ...data.uci import CODED_CATEGORICALS, one_hot_codes

    dataset = data.load(name)
    X, y = dataset.X, dataset.y
    if categorical == "onehot" and name in CODED_CATEGORICALS:
        coded = [column for column in CODED_CATEGORICALS[name] if column in dataset.feature_names]
        X, _ = one_hot_codes(X, dataset.feature_names, coded)  # (a daily table has no hr)
    elif categorical not in ("ordinal", "onehot"):
        raise ValueError(f"`categorical` must be one of 'ordinal', 'onehot', got {categorical!r}")
    if max_rows is not None and len(y) > max_rows:
        from sklearn.model_selection import train_test_split

        stratify = y if dataset.task == "classification" else None
        X, _, y, _ = train_test_split(X, y, train_size=max_rows, random_state=seed, stratify=stratify)
    return np.ascontiguousarray(X), np.ascontiguousarray(y), dataset.task


def batch_size_for(n_train: int, cap: int) -> int:
    """Minibatch size: ``cap``, reduced on small data sets to give ≥ ~10 steps per epoch.

    ``min(cap, max(16, n_train // 10))``: Iris (135 training rows) would otherwise take one
    optimiser step per epoch and stop far from convergence.
    """
    return min(cap, max(16, n_train // 10))


def _estimator(task: str, params: Mapping[str, Any], bottleneck: float | None, random_state: int, n_train: int):
    from ...estimators import MLPClassifier, MLPRegressor

    cls = MLPClassifier if task == "classification" else MLPRegressor
    return cls(
        width=int(params["width"]),
        depth=int(params["depth"]),
        bottleneck=bottleneck,
        activation=params["activation"],
        epochs=int(params["epochs"]),
        batch_size=batch_size_for(n_train, int(params["batch_size"])),
        lr=float(params["lr"]),
        weight_decay=float(params["weight_decay"]),
        early_stopping=bool(params.get("early_stopping", True)),
        validation_fraction=float(params["validation_fraction"]),
        patience=int(params["patience"]),
        standardize=True,
        random_state=random_state,
        device=unit_device(params),
    )


def _categorical(params: Mapping[str, Any]) -> str:
    return str(params.get("categorical", "ordinal"))  # units stored before the option kept codes


def _scores(task: str, estimator: Any, X: np.ndarray, y: np.ndarray) -> dict[str, float]:
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, mean_squared_error

    prediction = estimator.predict(X)
    if task == "classification":
        accuracy = float(accuracy_score(y, prediction))
        return {
            "accuracy": accuracy,
            "balanced_accuracy": float(balanced_accuracy_score(y, prediction)),
            "rmse": math.nan,
            "score": accuracy,
        }
    rmse = float(math.sqrt(mean_squared_error(y, prediction)))
    return {"accuracy": math.nan, "balanced_accuracy": math.nan, "rmse": rmse, "score": -rmse}


def _timed_fit(estimator: Any, X: np.ndarray, y: np.ndarray) -> float:
    """Fit ``estimator`` and return the seconds it took (queued GPU work included)."""
    from ...analysis.timing import synchronize

    synchronize()
    start = time.perf_counter()
    estimator.fit(X, y)
    synchronize()
    return time.perf_counter() - start


def _count_parameters(estimator: Any) -> int:
    return int(sum(p.numel() for p in estimator.model_.parameters()))


def _run_select(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    from sklearn.model_selection import train_test_split

    X, y, task = _dataset_arrays(params["dataset"], params["max_rows"], categorical=_categorical(params))
    stratify = y if task == "classification" else None
    X_train, X_val, y_train, y_val = train_test_split(
        X, y, test_size=float(params["selection_fraction"]), random_state=0, stratify=stratify
    )
    estimator = _estimator(task, params, None, random_state=0, n_train=len(y_train))
    fit_seconds = _timed_fit(estimator, X_train, y_train)
    return {
        "stage": "select",
        "dataset": params["dataset"],
        "task": task,
        "depth": int(params["depth"]),
        "width": int(params["width"]),
        "parameters": _count_parameters(estimator),
        "fit_seconds": fit_seconds,
        "epochs_run": int(estimator.n_iter_),
        **_scores(task, estimator, X_val, y_val),
    }


def _run_cv(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    from sklearn.model_selection import KFold, StratifiedKFold

    from ...models import bottleneck_width

    seed, fold, folds = int(params["seed"]), int(params["fold"]), int(params["folds"])
    X, y, task = _dataset_arrays(params["dataset"], params["max_rows"], categorical=_categorical(params))
    splitter_cls = StratifiedKFold if task == "classification" else KFold
    splitter = splitter_cls(n_splits=folds, shuffle=True, random_state=seed)
    train_index, test_index = list(splitter.split(X, y))[fold]
    bottleneck = params["bottleneck"]
    # The same initialisation seed for every model of a (fold, seed) pair: a paired design.
    estimator = _estimator(task, params, bottleneck, random_state=1000 * seed + fold, n_train=len(train_index))
    fit_seconds = _timed_fit(estimator, X[train_index], y[train_index])
    width = int(params["width"])
    return {
        "stage": "cv",
        "dataset": params["dataset"],
        "task": task,
        "model": params["model"],
        "ratio": 1.0 if bottleneck is None else float(bottleneck),
        "rank": width if bottleneck is None else bottleneck_width(width, bottleneck),
        "depth": int(params["depth"]),
        "width": width,
        "fold": fold,
        "seed": seed,
        "n_train": int(len(train_index)),
        "n_test": int(len(test_index)),
        "parameters": _count_parameters(estimator),
        "fit_seconds": fit_seconds,
        "epochs_run": int(estimator.n_iter_),
        **_scores(task, estimator, X[test_index], y[test_index]),
    }


def _run_efficiency(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    import torch

    from ... import data
    from ...analysis.cost import cost
    from ...analysis.memory import training_memory_bytes
    from ...analysis.timing import interleaved_ratio
    from ...models import bottleneck_width, mlp

    dataset = data.load(params["dataset"])
    d = _dataset_arrays(params["dataset"], None, categorical=_categorical(params))[0].shape[1]
    out = len(dataset.classes) if dataset.task == "classification" and dataset.classes is not None else 1
    depth, width, ratio = int(params["depth"]), int(params["width"]), float(params["bottleneck"])
    batch = int(params["batch"])
    device = unit_device(params)
    # Built and drawn on the CPU, then moved: the same weights and inputs on every device.
    torch.manual_seed(0)
    dense = mlp(d, out, width, depth, params["activation"])
    low = mlp(d, out, width, depth, params["activation"], bottleneck=ratio)
    dense_cost, low_cost = cost(dense, (batch, d)), cost(low, (batch, d))
    inputs = torch.randn(batch, d)
    dense, low, inputs = dense.to(device), low.to(device), inputs.to(device)

    def forward(model: torch.nn.Module):
        def call() -> None:
            with torch.no_grad():
                model(inputs)

        return call

    latency = interleaved_ratio(forward(low), forward(dense), pairs=int(params["pairs"]))
    dense_memory = training_memory_bytes(dense, inputs)
    low_memory = training_memory_bytes(low, inputs)
    return {
        "stage": "efficiency",
        "role": params["role"],
        "dataset": params["dataset"],
        "task": dataset.task,
        "features": d,
        "depth": depth,
        "width": width,
        "rank": bottleneck_width(width, ratio),
        "batch": batch,
        "parameters_dense": dense_cost.parameters,
        "parameters_lowrank": low_cost.parameters,
        "flops_dense": dense_cost.flops,
        "flops_lowrank": low_cost.flops,
        "latency_ratio": latency.median,
        "latency_ratio_q1": latency.q1,
        "latency_ratio_q3": latency.q3,
        "memory_dense": dense_memory,
        "memory_lowrank": low_memory,
        "threads": torch.get_num_threads(),
        "device": device,
    }
