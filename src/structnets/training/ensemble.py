"""Train E copies of one architecture at once: stacked parameters, ``torch.func.vmap``, batched Adam.

The E members (different initialisations, e.g. built under :func:`~structnets.training.seeded`
with E seeds) are stacked with ``torch.func.stack_module_state``: every parameter gains a leading
member axis, and one ``vmap`` of ``torch.func.functional_call`` evaluates all members on their
own minibatches. The loss minimised is the sum of the members' losses,
L(θ₁, …, θ_E) = Σ_e ℓ_e(θ_e), so ∂L/∂θ_e = ∇ℓ_e(θ_e): each member receives exactly its own
gradient. Adam and SGD update elementwise, so one optimiser over the stacked tensors takes, for
every member, the step it would take alone. Member e draws its minibatch order from its own
``torch.Generator`` seeded with ``seeds[e]``, exactly as :func:`~structnets.training.fit` does
with ``seed=seeds[e]``; so member e of :func:`train_ensemble` equals ``fit`` of that member alone,
up to the rounding of batched matrix products (tests: float64, relative 1e-10).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from .._validation import check_int
from ._adam import OptimizerFactory, optimizer_for
from ._data import as_tensor, check_target_against_model, device_and_dtype
from .fit import FitResult, check_training_options
from .losses import LossFn
from .schedules import SchedulerFactory, apply_rates, check_schedule, scheduler_for

MAX_MEMBERS = 100_000
"""Most members one call trains (each is a module built by the caller)."""


@dataclass(frozen=True)
class EnsembleResult:
    """What one call of :func:`train_ensemble` did, per member (tuples of length E).

    Attributes:
        models: the E trained modules (the ones passed in, trained in place), unstacked.
        train_loss: per member, the per-epoch training loss (as in :class:`FitResult`).
        val_loss: per member, the per-epoch validation loss, or ``()`` without a validation set.
        best_epoch: per member, the 0-based epoch of the best monitored loss.
        best_loss: per member, the monitored loss at ``best_epoch``.
        epochs_run: per member, the epochs it trained (a member stops on its own patience).
        stopped_early: per member, True when patience ran out before ``epochs``.
        restored_best: per member, True when its best-epoch weights were restored.
        diverged: per member, True when its training loss became non-finite.
        monitor: ``"val_loss"`` with a validation set, else ``"train_loss"``.
        wall_time: seconds spent in :func:`train_ensemble`.
    """

    models: tuple[nn.Module, ...]
    train_loss: tuple[tuple[float, ...], ...]
    val_loss: tuple[tuple[float, ...], ...]
    best_epoch: tuple[int, ...]
    best_loss: tuple[float, ...]
    epochs_run: tuple[int, ...]
    stopped_early: tuple[bool, ...]
    restored_best: tuple[bool, ...]
    diverged: tuple[bool, ...]
    monitor: str
    wall_time: float

    def member(self, index: int) -> FitResult:
        """Member ``index``'s history as the :class:`FitResult` that ``fit`` would return (wall time shared)."""
        index = check_int("index", index, low=0, high=len(self.models) - 1)
        return FitResult(
            train_loss=self.train_loss[index],
            val_loss=self.val_loss[index],
            best_epoch=self.best_epoch[index],
            best_loss=self.best_loss[index],
            monitor=self.monitor,
            epochs_run=self.epochs_run[index],
            stopped_early=self.stopped_early[index],
            restored_best=self.restored_best[index],
            diverged=self.diverged[index],
            wall_time=self.wall_time,
        )


@dataclass(frozen=True)
class EnsembleEpoch:
    """What a :func:`train_ensemble` callback sees after each epoch.

    Attributes:
        epoch: the 0-based epoch just finished.
        train_loss: per member, this epoch's training loss (NaN for members stopped before it).
        val_loss: per member, this epoch's validation loss, or ``()`` without a validation set.
        active: per member, True while it is still training (after this epoch's stopping rule).
        predict: ``predict(X, stacked=False)`` returns every member's current output, shape
            (E, n, *out), on shared inputs X (n, *) or (``stacked=True``) per-member inputs
            (E, n, *), in eval mode without gradients (e.g. for a test-error curve); the rows of
            members stopped before this epoch are NaN (their final weights are in the result).
    """

    epoch: int
    train_loss: tuple[float, ...]
    val_loss: tuple[float, ...]
    active: tuple[bool, ...]
    predict: Callable[[torch.Tensor], torch.Tensor]


def train_ensemble(
    models: Sequence[nn.Module],
    X: np.ndarray | torch.Tensor,
    y: np.ndarray | torch.Tensor,
    *,
    stacked: bool = False,
    seeds: Sequence[int] | None = None,
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
    schedule: str | SchedulerFactory = "constant",
    warmup_epochs: int | None = None,
    warmup_steps: int | None = None,
    min_lr: float = 0.0,
    callback: Callable[[EnsembleEpoch], Any] | None = None,
) -> EnsembleResult:
    """Train E modules of one architecture together, each as :func:`~structnets.training.fit` would alone.

    Member e sees the minibatches ``fit(models[e], X_e, y_e, seed=seeds[e], ...)`` would: every
    epoch one permutation from its own generator, slices of ``batch_size`` rows. The members'
    parameters are stacked (``torch.func.stack_module_state``) and evaluated with one
    ``vmap(functional_call)`` per step; one optimiser steps all of them (Adam is elementwise,
    so each member takes its own Adam step), on the gradient of Σ_e ℓ_e, whose θ_e-part is ∇ℓ_e.
    Each member keeps its own history, best weights and early stopping: a member whose patience
    runs out (or whose loss diverges) is frozen at that point, the others go on, and the loop ends
    when all have stopped or after ``epochs``.

    Args:
        models: E ≥ 1 distinct modules of one architecture (same type, parameter and buffer
            names, shapes and dtypes; e.g. one builder under E seeds). Trained in place. Their
            forward must run under ``torch.func.vmap``; models whose training forward pass
            changes a buffer (batch-norm statistics, a ``bound="power"`` iteration vector) are
            refused with a ValueError, since the change could not be carried back.
        X: shared inputs (n, *), or with ``stacked=True`` per-member inputs (E, n, *).
        y: targets (n,) / (n, k), or (E, n) / (E, n, k) with ``stacked=True``; converted as in
            ``fit`` (class indices for ``"cross_entropy"``, a 1-D real target becomes (n, 1)).
        stacked: whether ``X``, ``y`` (and ``validation_data``) carry a leading member axis.
        seeds: E ints ≥ 0, the ``seed`` of each member's shuffling and validation split;
            default 0, 1, …, E − 1.
        loss: ``"mse"``, ``"cross_entropy"`` or a callable ``(output, target) -> scalar`` that
            ``torch.func.vmap`` can map over members.
        epochs, batch_size, lr, weight_decay, validation_fraction, patience, min_delta, schedule,
            warmup_epochs, warmup_steps, min_lr: as in :func:`~structnets.training.fit`, for
            every member.
        optimizer: ``"adam"``, ``"adamw"``, ``"sgd"`` or a factory over the stacked tensors
            (it must update elementwise for members to be independent).
        validation_data: ``(X_val, y_val)``, shared or (with ``stacked=True``) per member.
        callback: called as ``callback(info)`` after every epoch with an :class:`EnsembleEpoch`
            (per-member losses, which members still train, and ``info.predict`` for the current
            members' outputs on any inputs).

    Returns:
        an :class:`EnsembleResult`; ``result.member(e)`` is member e's :class:`FitResult`.
    """
    start = time.perf_counter()
    members = _check_models(models)
    count = len(members)
    if not isinstance(stacked, bool):
        raise TypeError(f"`stacked` must be a bool, got {stacked!r}")
    seed_list = _check_seeds(seeds, count)
    loss_fn, target_kind, epochs, batch_size, lr, weight_decay, validation_fraction, patience, min_delta = (
        check_training_options(
            loss, epochs, batch_size, lr, weight_decay, optimizer, validation_fraction, patience, min_delta,
            callback, validation_data,
        )
    )  # fmt: skip
    schedule, min_lr = check_schedule(schedule, warmup_epochs, warmup_steps, min_lr)
    if not callable(optimizer) and min_lr > lr:
        raise ValueError(f"`min_lr` must be <= `lr`={lr}, got {min_lr}")

    device, dtype = device_and_dtype(members[0])
    X_t, y_t = _member_data(X, y, "X", "y", count, stacked, dtype, device, target_kind)
    n = X_t.shape[1]
    generators = [torch.Generator(device="cpu").manual_seed(seed) for seed in seed_list]
    X_val: torch.Tensor | None = None
    y_val: torch.Tensor | None = None
    if validation_data is not None:
        if not (isinstance(validation_data, tuple | list) and len(validation_data) == 2):
            raise TypeError("`validation_data` must be a pair (X_val, y_val)")
        X_val, y_val = _member_data(
            validation_data[0],
            validation_data[1],
            "validation_data[0]",
            "validation_data[1]",
            count,
            stacked,
            dtype,
            device,
            target_kind,
        )
        if X_val.shape[2:] != X_t.shape[2:] or y_val.shape[2:] != y_t.shape[2:]:
            raise ValueError(
                "`validation_data` must have the per-sample shapes of `X` and `y` "
                f"{tuple(X_t.shape[2:])} and {tuple(y_t.shape[2:])}, got "
                f"{tuple(X_val.shape[2:])} and {tuple(y_val.shape[2:])}"
            )
    elif validation_fraction > 0:
        n_val = max(1, round(validation_fraction * n))
        if n - n_val < 1:
            raise ValueError(f"`validation_fraction`={validation_fraction} leaves no training rows out of n={n}")
        order = torch.stack([torch.randperm(n, generator=g) for g in generators]).to(device)
        X_val, y_val = _take(X_t, order[:, :n_val]), _take(y_t, order[:, :n_val])
        X_t, y_t = _take(X_t, order[:, n_val:]), _take(y_t, order[:, n_val:])
        n -= n_val

    for e, member in enumerate(members):
        check_target_against_model(member, X_t[e], y_t[e], target_kind)
        if y_val is not None and target_kind == "index":
            check_target_against_model(
                member, X_t[e], y_val[e], target_kind, "y" if validation_data is None else "validation_data[1]"
            )
    step = batch_size if batch_size is not None and batch_size < n else n
    steps_per_epoch = -(-n // step)
    _check_no_buffer_updates(members[0], X_t[0, :step])

    params, buffers = stack_module_state(list(members))
    trainable = {name for name, p in members[0].named_parameters() if p.requires_grad}
    if not trainable:
        raise ValueError("`models` have no trainable parameters")
    for name, tensor in params.items():
        tensor.requires_grad_(name in trainable)
    opt = optimizer_for(
        optimizer, [params[name] for name in params if name in trainable], lr, weight_decay, public=callable(schedule)
    )
    scheduler, rates = scheduler_for(
        schedule, opt, epochs * steps_per_epoch, warmup_epochs, warmup_steps, steps_per_epoch, min_lr
    )
    base = copy.deepcopy(members[0]).to("meta")

    names = list(params) + list(buffers)
    stacked_state = tuple(params.values()) + tuple(buffers.values())

    def one_member(state: tuple[torch.Tensor, ...], x: torch.Tensor) -> torch.Tensor:
        # A flat tuple, not dicts: vmap's per-call pytree handling is a large part of a small step.
        return functional_call(base, dict(zip(names, state, strict=True)), (x,))

    forward = vmap(one_member)
    member_loss = _member_loss(loss, loss_fn)

    def predict(inputs: torch.Tensor, stacked: bool = False) -> torch.Tensor:
        inputs = torch.as_tensor(inputs).to(device=device, dtype=dtype)
        if not stacked:
            inputs = inputs.expand(count, *inputs.shape)
        elif inputs.ndim < 2 or inputs.shape[0] != count:
            raise ValueError(f"stacked `inputs` must have shape ({count}, n, ...), got {tuple(inputs.shape)}")
        base.eval()
        try:
            with torch.no_grad():
                outputs = forward(stacked_state, inputs)
        finally:
            base.train()
        stopped = torch.tensor(frozen, device=device)
        return outputs.masked_fill(stopped.view(-1, *([1] * (outputs.ndim - 1))), math.nan)

    live = list(stacked_state)
    monitor = "val_loss" if X_val is not None else "train_loss"
    state = _MemberState(count, X_val is not None)
    final: list[list[torch.Tensor] | None] = [None] * count
    arange = torch.arange(count, device=device)[:, None]
    global_step = 0
    base.train()
    frozen = [False] * count  # members stopped before the current epoch: predict() gives NaN for them
    for epoch in range(epochs):
        if step < n:
            perm = torch.stack([torch.randperm(n, generator=g) for g in generators]).to(device)
            X_ep, y_ep = X_t[arange, perm], y_t[arange, perm]
        else:
            X_ep, y_ep = X_t, y_t
        batch_losses = []
        for i in range(0, n, step):
            if rates is not None:
                apply_rates(opt, rates.rates(global_step))
            opt.zero_grad(set_to_none=True)
            losses = _first_losses(member_loss, forward(stacked_state, X_ep[:, i : i + step]), y_ep[:, i : i + step])
            losses.sum().backward()
            opt.step()
            if scheduler is not None:
                scheduler.step()
            global_step += 1
            batch_losses.append(losses.detach())
        train = _epoch_means(batch_losses, n, step)
        val = None
        if X_val is not None and y_val is not None:
            base.eval()
            with torch.no_grad():
                val = member_loss(forward(stacked_state, X_val), y_val).tolist()
            base.train()  # only around evaluation: train() walks every submodule (~0.5 ms a call)
        for e in state.active():
            current = state.record(e, epoch, train[e], None if val is None else val[e])
            improved = state.update(e, epoch, current, min_delta)
            if improved and X_val is not None:
                state.save_best(e, live)
            if state.diverged[e] or (patience is not None and state.stale[e] >= patience):
                state.stop(e, epoch, epochs, patience)
                final[e] = [t[e].detach().clone() for t in live]
        if callback is not None:
            callback(
                EnsembleEpoch(
                    epoch=epoch,
                    train_loss=tuple(t if len(h) == epoch + 1 else math.nan for t, h in zip(train, state.train)),
                    val_loss=()
                    if val is None
                    else tuple(v if len(h) == epoch + 1 else math.nan for v, h in zip(val, state.train)),
                    active=tuple(state.running),
                    predict=predict,
                )
            )
        if not state.active():
            break
        frozen = [not running for running in state.running]

    restored = [False] * count
    for e, member in enumerate(members):
        saved = final[e]
        values = saved if saved is not None else [t[e].detach() for t in live]
        best = state.best_state[e]
        if best is not None and math.isfinite(state.best_loss[e]):
            values, restored[e] = best, True
        _load(member, names, values)
    histories = state.finish()
    return EnsembleResult(
        models=tuple(members),
        train_loss=histories[0],
        val_loss=histories[1],
        best_epoch=tuple(state.best_epoch),
        best_loss=tuple(state.best_loss),
        epochs_run=tuple(len(h) for h in histories[0]),
        stopped_early=tuple(state.stopped_early),
        restored_best=tuple(restored),
        diverged=tuple(state.diverged),
        monitor=monitor,
        wall_time=time.perf_counter() - start,
    )


class _MemberState:
    """Per-member bookkeeping of :func:`train_ensemble`: histories, best loss, patience, stops."""

    def __init__(self, count: int, validation: bool) -> None:
        self.train: list[list[float]] = [[] for _ in range(count)]
        self.val: list[list[float]] = [[] for _ in range(count)]
        self.best_loss = [math.inf] * count
        self.best_epoch = [0] * count
        self.stale = [0] * count
        self.diverged = [False] * count
        self.stopped_early = [False] * count
        self.running = [True] * count
        self.best_state: list[list[torch.Tensor] | None] = [None] * count
        self.validation = validation

    def active(self) -> list[int]:
        return [e for e, running in enumerate(self.running) if running]

    def record(self, e: int, epoch: int, train: float, val: float | None) -> float:
        self.train[e].append(train)
        if val is not None:
            self.val[e].append(val)
        return val if val is not None else train

    def update(self, e: int, epoch: int, current: float, min_delta: float) -> bool:
        """fit's rule: divergence on the training loss, improvement by more than ``min_delta``."""
        if not math.isfinite(self.train[e][-1]):
            self.diverged[e] = True
            return False
        if math.isfinite(current) and current < self.best_loss[e] - min_delta:
            self.best_loss[e], self.best_epoch[e], self.stale[e] = current, epoch, 0
            return True
        self.stale[e] += 1
        return False

    def save_best(self, e: int, live: list[torch.Tensor]) -> None:
        self.best_state[e] = [t[e].detach().clone() for t in live]

    def stop(self, e: int, epoch: int, epochs: int, patience: int | None) -> None:
        self.running[e] = False
        if not self.diverged[e] and patience is not None and self.stale[e] >= patience:
            self.stopped_early[e] = epoch + 1 < epochs

    def finish(self) -> tuple[tuple[tuple[float, ...], ...], tuple[tuple[float, ...], ...]]:
        for e, history in enumerate(self.train):
            if not math.isfinite(self.best_loss[e]):  # diverged in the first epoch, as in fit
                self.best_epoch[e], self.best_loss[e] = len(history) - 1, history[-1]
        return tuple(tuple(h) for h in self.train), tuple(tuple(h) for h in self.val)


def _check_models(models: Any) -> list[nn.Module]:
    if isinstance(models, nn.Module) or not isinstance(models, Sequence):
        raise TypeError(f"`models` must be a sequence of torch.nn.Module, got {type(models).__name__}")
    members = list(models)
    check_int("len(models)", len(members), low=1, high=MAX_MEMBERS)
    for index, member in enumerate(members):
        if not isinstance(member, nn.Module):
            raise TypeError(f"`models[{index}]` must be a torch.nn.Module, got {type(member).__name__}")
    if len({id(m) for m in members}) != len(members):
        raise ValueError("`models` must be distinct modules (the same module appears twice)")
    reference = _signature(members[0])
    for index, member in enumerate(members[1:], start=1):
        if type(member) is not type(members[0]) or _signature(member) != reference:
            raise ValueError(
                f"`models[{index}]` must have the architecture of `models[0]` (same type, parameter and buffer "
                "names, shapes, dtypes, devices and requires_grad)"
            )
    return members


def _signature(module: nn.Module) -> list[tuple[str, tuple[int, ...], torch.dtype, torch.device, bool]]:
    tensors = [*module.named_parameters(), *module.named_buffers()]
    return [(name, tuple(t.shape), t.dtype, t.device, t.requires_grad) for name, t in tensors]


def _check_no_buffer_updates(model: nn.Module, X: torch.Tensor) -> None:
    """Refuse models whose training-mode forward pass changes a buffer (e.g. batch-norm statistics, a
    persistent power-iteration vector): under ``functional_call`` the change would be silently lost."""
    probe = copy.deepcopy(model)
    probe.train()
    before = {name: (buffer, buffer.detach().clone()) for name, buffer in probe.named_buffers()}
    if not before:
        return
    with torch.enable_grad():
        probe(X)
    after = dict(probe.named_buffers())
    changed = [
        name
        for name, (original, copy_) in before.items()
        if after.get(name) is not original or not torch.equal(after[name], copy_)
    ]
    if changed:
        raise ValueError(
            "`models` change buffers in their training forward pass, which the stacked (vmap) training cannot "
            f"carry back: {', '.join(changed[:5])}; train such models one by one with fit"
        )


def _check_seeds(seeds: Sequence[int] | None, count: int) -> list[int]:
    if seeds is None:
        return list(range(count))
    if isinstance(seeds, str | bytes) or not isinstance(seeds, Sequence):
        raise TypeError(f"`seeds` must be a sequence of {count} ints, got {type(seeds).__name__}")
    if len(seeds) != count:
        raise ValueError(f"`seeds` must hold one seed per model ({count}), got {len(seeds)}")
    return [check_int(f"seeds[{i}]", seed, low=0, high=2**63 - 1) for i, seed in enumerate(seeds)]


def _member_data(
    X: Any,
    y: Any,
    x_name: str,
    y_name: str,
    count: int,
    stacked: bool,
    dtype: torch.dtype,
    device: torch.device,
    target_kind: str | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs (E, n, *) and targets (E, n, *) on the models' device, as ``fit`` converts them."""
    X_t = as_tensor(X, x_name, dtype, device, "real")
    lead = 1 if stacked else 0
    # stacked labels are (E, n): their number of dimensions is checked below, with the member axis named
    y_t = as_tensor(y, y_name, dtype, device, target_kind, index_ndim=None)
    if stacked:
        for name, tensor in ((x_name, X_t), (y_name, y_t)):
            if tensor.ndim < 2 or tensor.shape[0] != count:
                raise ValueError(
                    f"`{name}` must be stacked per member, shape ({count}, n, ...), got {tuple(tensor.shape)}"
                )
    if target_kind == "index" and y_t.ndim != 1 + lead:
        raise ValueError(f"`{y_name}` must be class indices of shape {'(E, n)' if stacked else '(n,)'}")
    if target_kind == "real" and y_t.ndim == 1 + lead:  # 1-D real targets train against (n, 1) outputs
        y_t = y_t.unsqueeze(-1)
    if X_t.ndim < 1 + lead or X_t.shape[lead] < 1:
        raise ValueError(f"`{x_name}` must have at least one row, got shape {tuple(X_t.shape)}")
    if y_t.shape[lead] != X_t.shape[lead]:
        raise ValueError(
            f"`{x_name}` and `{y_name}` must have the same number of rows, got {X_t.shape[lead]} and {y_t.shape[lead]}"
        )
    if not stacked:
        X_t = X_t.expand(count, *X_t.shape)
        y_t = y_t.expand(count, *y_t.shape)
    return X_t, y_t


def _take(tensor: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Rows ``index[e]`` of member e: (E, n, *) and (E, m) → (E, m, *)."""
    return tensor[torch.arange(tensor.shape[0], device=tensor.device)[:, None], index]


def _member_loss(loss: str | LossFn, loss_fn: LossFn) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """Per-member batch means (E,) of a loss on (E, b, …) outputs and targets.

    The named losses are written out over the member axis (no ``vmap`` call per step): MSE is the
    mean of the squared differences over each member's entries, cross-entropy the mean of the
    per-row losses; a callable loss is mapped with ``vmap``.
    """
    if loss == "mse":
        return lambda output, target: (output - target).square().flatten(1).mean(1)
    if loss == "cross_entropy":

        def cross_entropy(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
            rows = nn.functional.cross_entropy(output.flatten(0, 1), target.flatten(), reduction="none")
            return rows.view(target.shape[:2]).mean(1)

        return cross_entropy
    return vmap(loss_fn)


def _first_losses(member_loss: Callable[..., torch.Tensor], output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    losses = member_loss(output, target)
    if losses.shape != (output.shape[0],):
        raise ValueError(
            f"`loss` must return a scalar per member (a batch mean), got shape {tuple(losses.shape[1:])} per member"
        )
    return losses


def _epoch_means(batch_losses: list[torch.Tensor], n: int, step: int) -> list[float]:
    # fit's sample-weighted mean, per member: every slice has `step` rows except possibly the last.
    values = torch.stack(batch_losses).double()
    if len(batch_losses) == 1:
        return [float(v) for v in values[0]]
    last = n - step * (len(batch_losses) - 1)
    head = values[:-1].sum(dim=0)
    return [(float(h) * step + float(t) * last) / n for h, t in zip(head, values[-1], strict=True)]


@torch.no_grad()
def _load(member: nn.Module, names: list[str], values: list[torch.Tensor]) -> None:
    tensors = dict(member.named_parameters()) | dict(member.named_buffers())
    for name, value in zip(names, values, strict=True):
        tensors[name].copy_(value)


__all__ = ["EnsembleEpoch", "EnsembleResult", "train_ensemble"]
