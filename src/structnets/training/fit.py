"""A small, pure, seeded minibatch fit loop for ``nn.Module``s.

Built for many small models on a few CPU cores (grid search × 10-fold CV in the low-rank Swish
UCI reproduction, Li et al., ICML 2025, Sec. 5): data become tensors once, each epoch draws one
index permutation from its own ``torch.Generator`` and gathers the data once, minibatches are
contiguous slices of that gather (no ``DataLoader``), evaluation runs under ``torch.no_grad``, and
the loop never touches global RNG or thread settings.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from .._validation import MAX_STEPS, check_choice, check_int, check_real
from . import checkpoint as _checkpoint
from ._adam import (  # re-exported: benchmarks and tests reach them here
    OPTIMIZERS,
    OptimizerFactory,
    make_optimizer,
)
from ._adam import (
    FusedAdam as _FusedAdam,
)
from ._adam import (
    fast_adam_verified as _fast_adam_verified,
)
from ._adam import (
    private_kernel as _private_kernel,
)
from ._adam import (
    public_adam as _public_adam,
)
from ._data import (
    as_target,
    as_tensor,
    check_rows,
    check_target_against_model,
    device_and_dtype,
    epoch_mean,
    evaluate_loss,
)
from .device import synchronized_clock
from .losses import _UNCHECKED, TARGET_KIND, LossFn, get_loss
from .schedules import SchedulerFactory, apply_rates, check_schedule, scheduler_for

Callback = Callable[[int, Mapping[str, float]], Any]


@dataclass(frozen=True)
class FitResult:
    """What one call of :func:`fit` did.

    Attributes:
        train_loss: per-epoch training loss, the sample-weighted mean of that epoch's minibatch
            losses (taken while the weights move, as in every minibatch loop).
        val_loss: per-epoch loss on the validation set at the end of each epoch, or ``()`` when
            there was no validation set.
        best_epoch: 0-based index into the histories of the best monitored loss.
        best_loss: the monitored loss at ``best_epoch``.
        monitor: ``"val_loss"`` when a validation set was used, else ``"train_loss"``.
        epochs_run: number of epochs actually run (``len(train_loss)``).
        stopped_early: True when patience ran out before ``epochs`` epochs.
        restored_best: True when the weights of ``best_epoch`` were copied back into the model
            (always, when there is a validation set).
        diverged: True when the training loss became non-finite and the loop stopped.
        wall_time: seconds spent in :func:`fit`.
    """

    train_loss: tuple[float, ...]
    val_loss: tuple[float, ...]
    best_epoch: int
    best_loss: float
    monitor: str
    epochs_run: int
    stopped_early: bool
    restored_best: bool
    diverged: bool
    wall_time: float

    @property
    def history(self) -> dict[str, list[float]]:
        """The per-epoch losses as ``{"train_loss": [...], "val_loss": [...]}``."""
        return {"train_loss": list(self.train_loss), "val_loss": list(self.val_loss)}


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run the body with the CPU torch RNG seeded to ``seed``, restoring the outer RNG state after.

    Use it around model construction so initial weights depend only on ``seed``::

        with seeded(0):
            model = mlp(10, 1, width=64, depth=3)

    Args:
        seed: an int in [0, 2**63 − 1].

    Returns:
        a context manager. The global RNG state seen after the block equals the one before it.
        (CUDA generators are forked only when CUDA is already initialised.)
    """
    seed = check_int("seed", seed, low=0, high=2**63 - 1)
    devices: list[int] | None = None if torch.cuda.is_available() and torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


def check_training_options(
    loss: Any,
    epochs: Any,
    batch_size: Any,
    lr: Any,
    weight_decay: Any,
    optimizer: Any,
    validation_fraction: Any,
    patience: Any,
    min_delta: Any,
    callback: Any,
    validation_data: Any,
) -> tuple[LossFn, Any, int, int | None, float, float, float, int | None, float]:
    """The options :func:`fit` and :func:`~structnets.training.train_ensemble` share, checked with
    named errors: ``(loss_fn, target_kind, epochs, batch_size, lr, weight_decay,
    validation_fraction, patience, min_delta)``."""
    loss_fn = _UNCHECKED.get(loss, get_loss(loss)) if isinstance(loss, str) else get_loss(loss)
    target_kind = TARGET_KIND.get(loss) if isinstance(loss, str) else None
    epochs = check_int("epochs", epochs, low=1, high=MAX_STEPS)
    if batch_size is not None:
        batch_size = check_int("batch_size", batch_size, low=1)
    lr = check_real("lr", lr, low=0.0, low_open=True)
    weight_decay = check_real("weight_decay", weight_decay, low=0.0)
    if not callable(optimizer):
        check_choice("optimizer", optimizer, OPTIMIZERS)
    validation_fraction = check_real("validation_fraction", validation_fraction, low=0.0, high=1.0, high_open=True)
    if patience is not None:
        patience = check_int("patience", patience, low=1)
    min_delta = check_real("min_delta", min_delta, low=0.0)
    if callback is not None and not callable(callback):
        raise TypeError(f"`callback` must be callable or None, got {callback!r}")
    if validation_data is not None and validation_fraction > 0:
        raise ValueError(
            "pass either `validation_fraction` > 0 or `validation_data`, not both "
            f"(got validation_fraction={validation_fraction})"
        )
    return loss_fn, target_kind, epochs, batch_size, lr, weight_decay, validation_fraction, patience, min_delta


def fit(
    model: nn.Module,
    X: np.ndarray | torch.Tensor,
    y: np.ndarray | torch.Tensor,
    *,
    loss: str | LossFn = "mse",
    epochs: int = 100,
    batch_size: int | None = 128,
    lr: float = 1e-3,
    weight_decay: float = 0.0,
    optimizer: str | OptimizerFactory = "adam",
    validation_fraction: float = 0.0,
    validation_data: tuple[Any, Any] | None = None,
    patience: int | None = None,
    min_delta: float = 0.0,
    seed: int = 0,
    callback: Callback | None = None,
    schedule: str | SchedulerFactory = "constant",
    warmup_epochs: int | None = None,
    warmup_steps: int | None = None,
    min_lr: float = 0.0,
    checkpoint: str | os.PathLike[str] | None = None,
) -> FitResult:
    """Train ``model`` in place by minibatch gradient descent on ``loss``; return the history.

    Each epoch draws a permutation of the training rows from a ``torch.Generator`` seeded with
    ``seed`` and takes one optimiser step per slice of ``batch_size`` rows (the last slice may be
    smaller); ``batch_size=None`` or ``>= n`` is full-batch gradient descent. With a validation
    set (``validation_fraction > 0`` or ``validation_data``) the loss on it is computed after every
    epoch under ``torch.no_grad``, the best weights are kept, and they are copied back into
    ``model`` at the end, so the returned model's validation loss is ``result.best_loss``.
    Training stops early once the monitored loss (validation if any, else training) has not
    improved by more than ``min_delta`` for ``patience`` epochs. Given the same initial model and
    ``seed``, two calls on CPU produce bit-identical weights.

    The learning rate of optimiser step t (0-based, T = ``epochs`` × steps per epoch planned)
    follows ``schedule`` (closed forms in :mod:`structnets.training.schedules`):
    ``"constant"`` η; ``"cosine"`` η_min + (η − η_min)(1 + cos(πt/T))/2 (SGDR, Loshchilov &
    Hutter 2017); ``"warmup_cosine"`` η(t + 1)/W for the first W steps, then the cosine over the
    remaining T − W. Early stopping cuts the schedule short; it does not rescale it.

    Args:
        model: the module to train; data are moved to the device and floating dtype of its first
            parameter.
        X: (n, *) inputs, a numpy array or tensor; finite (NaN/inf are refused, as by the
            estimators).
        y: (n,) or (n, k) finite targets whose per-sample shape matches the model's output. For
            ``loss="cross_entropy"``: (n,) class indices in [0, K) for a model of (n, K ≥ 2) logits;
            for ``"mse"``: real values, a 1-D ``y`` is trained against output (n, 1). For a callable
            loss: integer ``y`` becomes int64, other ``y`` the model's dtype, shape unchanged.
        loss: ``"mse"``, ``"cross_entropy"`` or any callable ``(output, target) -> scalar`` that
            averages over the batch (a 0-d tensor; anything else is refused at the first step).
        epochs: maximum number of passes over the training rows, in [1, 10⁸].
        batch_size: rows per step (>= 1), or None for full batch.
        lr: learning rate η (> 0); with a schedule, its peak.
        weight_decay: L2 penalty coefficient (>= 0); decoupled for ``"adamw"``.
        optimizer: ``"adam"``, ``"adamw"``, ``"sgd"`` (momentum 0.9), or a factory
            ``params -> torch.optim.Optimizer`` (then ``lr``/``weight_decay`` are not used, and a
            named schedule starts from each parameter group's own rate).
            Adam/AdamW are ``torch.optim.Adam``/``AdamW(fused=True)`` (``foreach`` where fused
            cannot run); on CPU the same fused kernel is called without ``torch.optim``'s per-step
            overhead once a self-check finds it bit-identical (see ``_FusedAdam``).
        validation_fraction: fraction in [0, 1) of rows held out (at random, seeded) to monitor;
            at least one row is held out when it is > 0.
        validation_data: an explicit ``(X_val, y_val)`` instead; excludes ``validation_fraction``.
        patience: epochs without improvement before stopping (>= 1), or None to run all epochs.
        min_delta: improvement below this (>= 0) does not count as improvement.
        seed: seeds shuffling and the validation split (an int >= 0). Seed model initialisation
            separately, e.g. with :func:`seeded`.
        callback: called as ``callback(epoch, logs)`` after each epoch, with the 0-based epoch and
            ``{"train_loss": ..., "val_loss": ...}`` (``val_loss`` only with a validation set).
        schedule: ``"constant"`` (default), ``"cosine"``, ``"warmup_cosine"``, or a factory
            ``optimizer -> torch.optim.lr_scheduler.LRScheduler`` whose ``step()`` is called after
            every optimiser step (give it T_max etc. in steps; the optimiser is then always a
            ``torch.optim`` one, with the same updates).
        warmup_epochs: W = ``warmup_epochs`` × steps per epoch, for ``"warmup_cosine"`` (>= 1).
        warmup_steps: W in optimiser steps instead (>= 1); exactly one of the two, W <= T.
        min_lr: η_min, the floor of the cosine schedules, in [0, η].
        checkpoint: a file to save the training state to after every epoch, and to resume from
            when it exists (:mod:`structnets.training.checkpoint`): the same call after a kill
            continues at the first unfinished epoch and ends, on the CPU and with the same number
            of threads, with the weights of an uninterrupted run, bit for bit. ``callback`` is not called again for the epochs
            already done; ``wall_time`` adds the time the earlier calls recorded. A file of another
            training (data, model shapes, bound modes or options differ) is refused (ValueError);
            the initial weights are not compared (a resumed call may pass a freshly built model or
            the partly trained object a kill interrupted), so give each training its own file. An
            unreadable one is reported by a ``RuntimeWarning`` and training starts from the first
            epoch; an optimiser or scheduler whose state cannot be saved and read back (a lambda, a
            NumPy scalar) is refused before the first step. Before the first epoch ends there is
            nothing to resume: a retry then starts from the model's weights as they are. The
            file is left in place (a finished checkpoint trains no further epoch); delete it to
            start afresh. A resumed call sets torch's global RNG to its state at the end of the
            saved epoch (for models that draw from it, such as dropout).

    Returns:
        a :class:`FitResult`; the trained weights are in ``model`` (its train/eval mode is left
        as it was on entry).
    """
    start = time.perf_counter()
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be a torch.nn.Module, got {type(model).__name__}")
    loss_fn, target_kind, epochs, batch_size, lr, weight_decay, validation_fraction, patience, min_delta = (
        check_training_options(
            loss, epochs, batch_size, lr, weight_decay, optimizer, validation_fraction, patience, min_delta,
            callback, validation_data,
        )
    )  # fmt: skip
    seed = check_int("seed", seed, low=0, high=2**63 - 1)
    checkpoint_path = _checkpoint.check_checkpoint_path(checkpoint)
    schedule, min_lr = check_schedule(schedule, warmup_epochs, warmup_steps, min_lr)
    if not callable(optimizer) and min_lr > lr:
        raise ValueError(f"`min_lr` must be <= `lr`={lr}, got {min_lr}")

    device, dtype = device_and_dtype(model)
    X_t = as_tensor(X, "X", dtype, device, "real")
    y_t = as_target(y, "y", dtype, device, target_kind)
    n = check_rows(X_t, y_t, "X", "y")

    generator = torch.Generator(device="cpu")
    generator.manual_seed(seed)
    X_val: torch.Tensor | None
    y_val: torch.Tensor | None
    if validation_data is not None:
        if not (isinstance(validation_data, tuple | list) and len(validation_data) == 2):
            raise TypeError("`validation_data` must be a pair (X_val, y_val)")
        X_val = as_tensor(validation_data[0], "validation_data[0]", dtype, device, "real")
        y_val = as_target(validation_data[1], "validation_data[1]", dtype, device, target_kind)
        check_rows(X_val, y_val, "validation_data[0]", "validation_data[1]")
        if tuple(X_val.shape[1:]) != tuple(X_t.shape[1:]) or tuple(y_val.shape[1:]) != tuple(y_t.shape[1:]):
            raise ValueError(
                "`validation_data` must have the per-sample shapes of `X` and `y` "
                f"{tuple(X_t.shape[1:])} and {tuple(y_t.shape[1:])}, got "
                f"{tuple(X_val.shape[1:])} and {tuple(y_val.shape[1:])}"
            )
    elif validation_fraction > 0:
        n_val = max(1, round(validation_fraction * n))
        if n - n_val < 1:
            raise ValueError(f"`validation_fraction`={validation_fraction} leaves no training rows out of n={n}")
        order = torch.randperm(n, generator=generator).to(device)
        X_val, y_val = X_t[order[:n_val]], y_t[order[:n_val]]
        X_t, y_t = X_t[order[n_val:]], y_t[order[n_val:]]
        n -= n_val
    else:
        X_val = y_val = None

    check_target_against_model(model, X_t, y_t, target_kind)
    if y_val is not None and target_kind == "index":
        check_target_against_model(
            model, X_t, y_val, target_kind, "y" if validation_data is None else "validation_data[1]"
        )
    step = batch_size if batch_size is not None and batch_size < n else n
    steps_per_epoch = -(-n // step)
    opt = make_optimizer(optimizer, model, lr, weight_decay, public=callable(schedule))
    scheduler, rates = scheduler_for(
        schedule, opt, epochs * steps_per_epoch, warmup_epochs, warmup_steps, steps_per_epoch, min_lr
    )

    monitor = "val_loss" if X_val is not None else "train_loss"
    # read at every use: a layer may replace a buffer (a power vector) by a new tensor in its forward,
    # and a list taken now would then copy into, and restore, the old one
    best_state = [t.detach().clone() for t in model.state_dict().values()] if X_val is not None else None
    best_loss, best_epoch, stale = math.inf, 0, 0
    train_hist: list[float] = []
    val_hist: list[float] = []
    stopped_early = diverged = False
    check_scalar = target_kind is None  # a callable loss: check its first value is a scalar
    global_step = 0

    first_epoch, elapsed = 0, 0.0
    identity: dict[str, Any] = {}
    if checkpoint_path is not None:
        identity = _checkpoint.fingerprint(
            model, data=_checkpoint.data_digest(X_t, y_t, X_val, y_val), loss=loss, epochs=epochs,
            batch_size=step, lr=lr, weight_decay=weight_decay, optimizer=optimizer, schedule=schedule,
            warmup_epochs=warmup_epochs, warmup_steps=warmup_steps, min_lr=min_lr, seed=seed,
            patience=patience, min_delta=min_delta,
        )  # fmt: skip
        saved = _load_checkpoint(checkpoint_path, identity)
        # what cannot be saved, or read back, must fail now, not after the first epoch
        _checkpoint.check_round_trip(
            {"optimizer": opt.state_dict(), "scheduler": None if scheduler is None else scheduler.state_dict()}
        )
        if saved is not None:
            model.load_state_dict(saved["model"])
            _checkpoint.load_training_state(model, saved["training_state"])
            opt.load_state_dict(saved["optimizer"])
            if scheduler is not None:
                scheduler.load_state_dict(saved["scheduler"])
            generator.set_state(saved["generator"])
            torch.set_rng_state(saved["torch_rng"])
            if device.type == "cuda" and saved.get("cuda_rng") is not None:
                torch.cuda.set_rng_state(saved["cuda_rng"], device)
            train_hist, val_hist = list(saved["train_loss"]), list(saved["val_loss"])
            best_loss, best_epoch, stale = float(saved["best_loss"]), int(saved["best_epoch"]), int(saved["stale"])
            if best_state is not None:
                with torch.no_grad():
                    for mine, theirs in zip(best_state, saved["best_state"], strict=True):
                        mine.copy_(theirs)
            stopped_early, diverged = bool(saved["stopped_early"]), bool(saved["diverged"])
            global_step, elapsed = int(saved["global_step"]), float(saved["elapsed"])
            first_epoch = epochs if saved["finished"] else int(saved["next_epoch"])

    was_training = model.training
    model.train()
    for epoch in range(first_epoch, epochs):
        if step < n:
            perm = torch.randperm(n, generator=generator).to(device)
            X_ep, y_ep = X_t[perm], y_t[perm]
        else:
            X_ep, y_ep = X_t, y_t
        batch_losses = []
        for i in range(0, n, step):
            xb, yb = X_ep[i : i + step], y_ep[i : i + step]
            if rates is not None:
                apply_rates(opt, rates.rates(global_step))
            opt.zero_grad(set_to_none=True)
            batch_loss = loss_fn(model(xb), yb)
            if check_scalar:
                _check_scalar_loss(batch_loss)
                check_scalar = False
            batch_loss.backward()
            opt.step()
            if scheduler is not None:
                scheduler.step()
            global_step += 1
            batch_losses.append(batch_loss.detach())
        train_loss = epoch_mean(batch_losses, n, step)
        train_hist.append(train_loss)
        logs = {"train_loss": train_loss}
        if X_val is not None and y_val is not None:
            val_loss = evaluate_loss(model, loss_fn, X_val, y_val)
            val_hist.append(val_loss)
            logs["val_loss"] = val_loss
        current = logs[monitor]
        if not math.isfinite(train_loss):
            diverged = True
        elif math.isfinite(current) and current < best_loss - min_delta:
            best_loss, best_epoch, stale = current, epoch, 0
            if best_state is not None:
                with torch.no_grad():
                    for saved, tensor in zip(best_state, model.state_dict().values(), strict=True):
                        saved.copy_(tensor)
        else:
            stale += 1
        if callback is not None:
            callback(epoch, logs)
        stop = diverged or (patience is not None and stale >= patience)
        if patience is not None and stale >= patience and not diverged:
            stopped_early = epoch + 1 < epochs
        if checkpoint_path is not None:
            _checkpoint.save(
                checkpoint_path,
                {
                    "fingerprint": identity, "next_epoch": epoch + 1, "finished": stop or epoch + 1 == epochs,
                    "global_step": global_step, "model": model.state_dict(),
                    "training_state": _checkpoint.training_state(model), "optimizer": opt.state_dict(),
                    "scheduler": None if scheduler is None else scheduler.state_dict(),
                    "generator": generator.get_state(), "torch_rng": torch.get_rng_state(),
                    "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
                    "train_loss": train_hist, "val_loss": val_hist, "best_loss": best_loss,
                    "best_epoch": best_epoch, "stale": stale, "best_state": best_state,
                    "stopped_early": stopped_early, "diverged": diverged,
                    "elapsed": elapsed + synchronized_clock() - start,
                },
            )  # fmt: skip
        if stop:
            break

    restored = False
    if best_state is not None and math.isfinite(best_loss):
        with torch.no_grad():
            for tensor, saved in zip(model.state_dict().values(), best_state, strict=True):
                tensor.copy_(saved)
        restored = True
    if not math.isfinite(best_loss):  # diverged in the first epoch: nothing better was seen
        best_epoch, best_loss = len(train_hist) - 1, train_hist[-1]
    model.train(was_training)
    return FitResult(
        train_loss=tuple(train_hist),
        val_loss=tuple(val_hist),
        best_epoch=best_epoch,
        best_loss=best_loss,
        monitor=monitor,
        epochs_run=len(train_hist),
        stopped_early=stopped_early,
        restored_best=restored,
        diverged=diverged,
        wall_time=elapsed + synchronized_clock() - start,
    )


def _load_checkpoint(path: Any, identity: dict[str, Any]) -> dict[str, Any] | None:
    """The saved state for this training, None (no file, or an unusable one: warned), or ValueError (another training's)."""
    try:
        saved = _checkpoint.load(path)
    except _checkpoint.CheckpointUnusable as e:
        warnings.warn(f"`checkpoint`: {e}; training starts from the first epoch", RuntimeWarning, stacklevel=3)
        return None
    if saved is None:
        return None
    if saved["fingerprint"] != identity:
        theirs = saved["fingerprint"]
        differ = sorted(k for k in set(theirs) | set(identity) if theirs.get(k) != identity.get(k))
        raise ValueError(
            f"`checkpoint`={str(path)!r} was written by another training (differs in: {', '.join(differ)}); "
            "delete it or give another path"
        )
    return saved


def evaluate(
    model: nn.Module,
    X: np.ndarray | torch.Tensor,
    y: np.ndarray | torch.Tensor,
    *,
    loss: str | LossFn = "mse",
) -> float:
    """Return the mean ``loss`` of ``model`` on ``(X, y)``, computed under ``torch.no_grad``.

    Args:
        model: the module; data move to its device and dtype.
        X: (n, *) inputs.
        y: (n,) or (n, k) targets, converted as in :func:`fit`.
        loss: as in :func:`fit`.

    Returns:
        the loss as a Python float (the model's train/eval mode is restored).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be a torch.nn.Module, got {type(model).__name__}")
    loss_fn = _UNCHECKED.get(loss, get_loss(loss)) if isinstance(loss, str) else get_loss(loss)
    target_kind = TARGET_KIND.get(loss) if isinstance(loss, str) else None
    device, dtype = device_and_dtype(model)
    X_t = as_tensor(X, "X", dtype, device, "real")
    y_t = as_target(y, "y", dtype, device, target_kind)
    check_rows(X_t, y_t, "X", "y")
    check_target_against_model(model, X_t, y_t, target_kind)
    return evaluate_loss(model, loss_fn, X_t, y_t)


def _check_scalar_loss(value: Any) -> None:
    if not isinstance(value, torch.Tensor) or value.dim() != 0:
        got = f"shape {tuple(value.shape)}" if isinstance(value, torch.Tensor) else type(value).__name__
        raise ValueError(f"`loss` must return a scalar (0-d) tensor averaged over the batch, got {got}")
    if not value.requires_grad:
        raise ValueError("`loss` must return a tensor that depends on the model's output (it has no gradient)")


__all__ = ["OPTIMIZERS", "FitResult", "evaluate", "fit", "seeded"]
__all__ += ["_FusedAdam", "_fast_adam_verified", "_private_kernel", "_public_adam"]  # for benchmarks and tests
