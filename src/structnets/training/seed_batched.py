"""Training S networks of one architecture at once, for the DLoR experiments; every step is the library's.

A seed-batched model maps inputs shared by all seeds, (n, d), to (S, n, k): S networks side by
side. Minimising the sum of the per-seed losses, L(θ) = Σ_s MSE_s(θ_s), gives each seed the
gradient of its own loss (∂L/∂θ_s = ∇MSE_s), and Adam is elementwise, so one run equals S
independent full-batch trainings (tests check it to rounding) at about the cost of one (Chen,
Li, Kim, Lavaei, arXiv 2605.05659, experiments; ``docs/dlor.md``).

All three functions are full-batch Adam with, by default, cosine decay of the learning rate from
``lr`` to ``lr``/100 over the T epochs, lr_t = lr/100 + (lr − lr/100)(1 + cos(π t/T))/2, run by
the library's trainers: :func:`train_vmapped` (S separate modules) by
:func:`~structnets.training.train_ensemble` (``stack_module_state`` + ``vmap``); :func:`train_dense`
(one module) and :func:`train_batched` (one module whose parameters already carry the seed axis,
e.g. :class:`structnets.models.batched_dlor.BatchedDLoRNet`) by :func:`~structnets.training.fit`,
:func:`train_batched` recording every seed's test MSE every few epochs through ``fit``'s callback.
The dlor-sawtooth networks use the seed-stacked model rather than ``train_ensemble`` over S
``dlor_mlp`` networks, which took 1.8–4.2× as long per run (``benchmarks/dlor_seed_batched.py``)
and records no test curve without restoring a best state.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .._validation import MAX_STEPS, check_choice, check_int, check_real
from ._data import as_tensor, check_rows, device_and_dtype
from .device import synchronized_clock

SCHEDULES: tuple[str, ...] = ("cosine", "constant")
"""Learning-rate schedules of :func:`train_batched`: cosine decay to lr/100, or constant."""

DEFAULT_THRESHOLD = 1e-3
"""Test MSE counted as success by :func:`train_batched` unless told otherwise."""


@dataclass(frozen=True)
class BatchedHistory:
    """What :func:`train_batched` measured, per seed (lists of length S).

    Attributes:
        final_test_mse: test MSE after the last epoch (non-finite values become ``inf``).
        final_train_mse: training MSE after the last epoch.
        best_test_mse: smallest test MSE over the evaluations.
        epochs_to_threshold: first evaluation epoch whose test MSE is ≤ the threshold, or None.
        eval_epochs: the evaluation epochs: 0, every ``eval_every``-th and the last.
        test_curve: test MSE per evaluation and seed, ``[evaluation][seed]``.
        seconds: wall time of the training.
    """

    final_test_mse: list[float]
    final_train_mse: list[float]
    best_test_mse: list[float]
    epochs_to_threshold: list[int | None]
    eval_epochs: list[int]
    test_curve: list[list[float]]
    seconds: float


def _per_seed_mse(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """(S,) mean squared errors of (S, n, k) outputs against a (1, n, k) target."""
    return ((output - target) ** 2).mean(dim=(1, 2))


def _check_module(name: str, value: object) -> nn.Module:
    if not isinstance(value, nn.Module):
        raise TypeError(f"`{name}` must be a torch.nn.Module, got {value!r:.80} ({type(value).__name__})")
    return value


def _check_data(
    model: nn.Module, X: object, y: object, x_name: str, y_name: str, width: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``X`` as an (n, d) tensor and ``y`` as (n,) on ``model``'s device and dtype, finite, n ≥ 1.

    ``width``: the number of columns ``X`` must have (the training inputs' d, for test data).
    Each failure is a ValueError/TypeError naming ``x_name`` or ``y_name``.
    """
    device, dtype = device_and_dtype(model)
    if X is None or isinstance(X, (str, bytes)):
        raise TypeError(f"`{x_name}` must be an (n, d) tensor of inputs, got {X!r:.80}")
    if y is None or isinstance(y, (str, bytes)):
        raise TypeError(f"`{y_name}` must be an (n,) tensor of targets, got {y!r:.80}")
    inputs = as_tensor(X, x_name, dtype, device, "real")
    targets = as_tensor(y, y_name, dtype, device, "real")
    if inputs.ndim != 2:
        raise ValueError(f"`{x_name}` must have shape (n, d), got shape {tuple(inputs.shape)}")
    if width is not None and inputs.shape[1] != width:
        raise ValueError(
            f"`{x_name}` must have the {width} columns of the training inputs, got shape {tuple(inputs.shape)}"
        )
    if not (targets.ndim == 1 or (targets.ndim == 2 and targets.shape[1] == 1)):
        raise ValueError(f"`{y_name}` must have shape (n,) or (n, 1), got shape {tuple(targets.shape)}")
    check_rows(inputs, targets, x_name, y_name)
    return inputs, targets.reshape(-1)


def _first_output(model: nn.Module, X: torch.Tensor, x_name: str, model_name: str) -> torch.Tensor:
    """``model`` on the first row of ``X``, or a ValueError naming ``x_name`` when it cannot take it."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            return model(X[:1])
    except RuntimeError as error:  # e.g. d not the model's input size
        raise ValueError(
            f"`{x_name}` of shape {tuple(X.shape)} cannot be fed to `{model_name}`: {str(error).splitlines()[0]}"
        ) from error
    finally:
        model.train(was_training)


def train_batched(
    net: nn.Module,
    X: torch.Tensor,
    y: torch.Tensor,
    X_test: torch.Tensor,
    y_test: torch.Tensor,
    *,
    epochs: int,
    lr: float,
    eval_every: int,
    threshold: float = DEFAULT_THRESHOLD,
    schedule: str = "cosine",
) -> BatchedHistory:
    """Full-batch Adam on Σ_s MSE_s of a seed-batched ``net`` (:func:`~structnets.training.fit`), with
    periodic test evaluation.

    ``fit`` runs the steps (its fused Adam, the schedule in closed form) and, through its callback,
    this function records every seed's test MSE at epoch 0, every ``eval_every`` epochs and at the
    end, without keeping a best state. Should Σ_s MSE_s become non-finite, ``fit`` stops all seeds
    there and the last evaluation is at that epoch.

    Args:
        net: maps (n, d) to (S, n, 1); e.g. a :class:`~structnets.models.batched_dlor.BatchedDLoRNet`.
        X, y: (n, d) training inputs and (n,) targets, shared by all seeds.
        X_test, y_test: (n_test, d) and (n_test,) test data.
        epochs: Adam steps (full batch), an int in [1, 10⁸].
        lr: initial learning rate (> 0), decayed as the module docstring says.
        eval_every: test evaluations at epoch 0, every ``eval_every``-th epoch and the last (≥ 1).
        threshold: test MSE counted as success (> 0); ``epochs_to_threshold`` is the first
            evaluation epoch at or below it.
        schedule: ``"cosine"`` or ``"constant"``.

    Returns:
        a :class:`BatchedHistory`; the trained parameters are in ``net``.

    Raises:
        TypeError: ``net`` is not a module, data are not numeric, or a number has the wrong type.
        ValueError: data of the wrong shape or with NaN/inf, ``X``/``X_test`` that ``net`` cannot
            take, ``net`` not giving (S, n, 1), or a number out of range (each names the argument).
    """
    from .fit import fit

    net = _check_module("net", net)
    epochs = check_int("epochs", epochs, low=1, high=MAX_STEPS)
    lr = check_real("lr", lr, low=0.0, low_open=True)
    eval_every = check_int("eval_every", eval_every, low=1)
    threshold = check_real("threshold", threshold, low=0.0, low_open=True)
    check_choice("schedule", schedule, SCHEDULES)
    X, y_flat = _check_data(net, X, y, "X", "y")
    out = _first_output(net, X, "X", "net")
    if out.ndim != 3 or tuple(out.shape[1:]) != (1, 1):
        raise ValueError(f"`net` must map (n, d) inputs to (S, n, 1), got output shape {tuple(out.shape)} for n = 1")
    X_test, y_test_flat = _check_data(net, X_test, y_test, "X_test", "y_test", width=X.shape[1])
    start = time.perf_counter()
    y, y_test = y_flat.reshape(1, -1, 1), y_test_flat.reshape(1, -1, 1)
    eval_epochs: list[int] = []
    curve: list[list[float]] = []
    reached: list[int | None] = []

    def evaluate(epoch: int) -> None:
        with torch.no_grad():
            mse = _per_seed_mse(net(X_test), y_test)
        values = [float(v) if math.isfinite(float(v)) else math.inf for v in mse]
        if not reached:
            reached.extend([None] * len(values))
        eval_epochs.append(epoch)
        curve.append(values)
        for s, value in enumerate(values):
            if reached[s] is None and value <= threshold:
                reached[s] = epoch

    def after_epoch(epoch: int, logs: object) -> None:  # fit's epoch is 0-based: epoch + 1 steps done
        if (epoch + 1) % eval_every == 0 or epoch + 1 == epochs:
            evaluate(epoch + 1)

    evaluate(0)
    result = fit(
        net, X, y[0, :, 0], loss=lambda output, target: _per_seed_mse(output, target.reshape(1, -1, 1)).sum(),
        epochs=epochs, batch_size=None, lr=lr, schedule=schedule, min_lr=lr / 100 if schedule == "cosine" else 0.0,
        callback=after_epoch,
    )  # fmt: skip
    if eval_epochs[-1] != result.epochs_run:  # stopped early: the loss became non-finite
        evaluate(result.epochs_run)
    with torch.no_grad():
        train_mse = _per_seed_mse(net(X), y)
    best = np.min(np.asarray(curve), axis=0)
    return BatchedHistory(
        final_test_mse=curve[-1],
        final_train_mse=[float(v) for v in train_mse],
        best_test_mse=[float(v) for v in best],
        epochs_to_threshold=reached,
        eval_epochs=eval_epochs,
        test_curve=curve,
        seconds=synchronized_clock() - start,
    )


def train_dense(model: nn.Module, X: torch.Tensor, y: torch.Tensor, *, epochs: int, lr: float) -> float:
    """Full-batch Adam with cosine decay (lr → lr/100) on the MSE of one model: :func:`~structnets.training.fit`.

    Args:
        model: maps (n, d) to (n, 1); trained in place.
        X, y: (n, d) inputs and (n,) targets.
        epochs: Adam steps, an int in [1, 10⁸].
        lr: initial learning rate (> 0).

    Returns:
        the final training MSE.

    Raises:
        TypeError/ValueError: as :func:`~structnets.training.fit`, naming the argument.
    """
    from .fit import fit

    model = _check_module("model", model)
    lr = check_real("lr", lr, low=0.0, low_open=True)
    fit(model, X, y, epochs=epochs, batch_size=None, lr=lr, schedule="cosine", min_lr=lr / 100)
    inputs, targets = _check_data(model, X, y, "X", "y")  # fit accepted them: the same conversion
    with torch.no_grad():
        return float(((model(inputs) - targets.reshape(-1, 1)) ** 2).mean())


def train_vmapped(
    models: Sequence[nn.Module],
    X: torch.Tensor,
    y: torch.Tensor,
    X_test: torch.Tensor,
    y_test: torch.Tensor,
    *,
    epochs: int,
    lr: float,
) -> tuple[list[float], list[float], list[nn.Module]]:
    """Train copies of S same-architecture models at once with :func:`~structnets.training.train_ensemble`.

    The library's batched-ensemble trainer (``stack_module_state`` + ``vmap``, one Adam over the
    stacked parameters) with full batches and cosine decay to lr/100; each copy equals its own
    full-batch training (module docstring).

    Args:
        models: S ≥ 1 modules with identical parameter names and shapes, each (n, d) → (n, 1);
            left unchanged.
        X, y: (n, d) training inputs and (n,) targets, shared by all models.
        X_test, y_test: (n_test, d) and (n_test,) test data.
        epochs: Adam steps, an int in [1, 10⁸].
        lr: initial learning rate (> 0).

    Returns:
        (final test MSE per model, final training MSE per model, the trained models as copies).

    Raises:
        TypeError/ValueError: as :func:`~structnets.training.train_ensemble`, and test data of the
            wrong type, shape or with NaN/inf (each names the argument).
    """
    from .ensemble import train_ensemble

    if isinstance(models, nn.Module) or not isinstance(models, Sequence) or not models:
        raise ValueError(f"`models` must be a non-empty sequence of modules, got {models!r:.80}")
    for i, model in enumerate(models):
        _check_module(f"models[{i}]", model)
    lr = check_real("lr", lr, low=0.0, low_open=True)
    X_checked, _ = _check_data(models[0], X, y, "X", "y")
    _first_output(models[0], X_checked, "X", "models[0]")
    X_test, y_test_flat = _check_data(models[0], X_test, y_test, "X_test", "y_test", width=X_checked.shape[1])
    trained = [copy.deepcopy(model) for model in models]
    train_ensemble(trained, X, y, epochs=epochs, batch_size=None, lr=lr, schedule="cosine", min_lr=lr / 100)
    X, y_flat = _check_data(trained[0], X, y, "X", "y")  # train_ensemble accepted them: the same conversion
    target, target_test = y_flat.reshape(-1, 1), y_test_flat.reshape(-1, 1)
    with torch.no_grad():
        test = [float(((model(X_test) - target_test) ** 2).mean()) for model in trained]
        train = [float(((model(X) - target) ** 2).mean()) for model in trained]
    return test, train, trained


__all__ = [
    "DEFAULT_THRESHOLD",
    "SCHEDULES",
    "BatchedHistory",
    "train_batched",
    "train_dense",
    "train_vmapped",
]
