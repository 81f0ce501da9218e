"""Full-batch Adam for seed-batched models: S networks of one architecture trained at once.

A seed-batched model maps inputs shared by all seeds, (n, d), to (S, n, k): S networks side by
side (e.g. :class:`structnets.models.batched_dlor.BatchedDLoRNet`, whose parameters carry a seed
axis, or S modules stacked and run under ``torch.func.vmap``). Minimising the sum of the per-seed
losses, L(θ) = Σ_s MSE_s(θ_s), gives each seed the gradient of its own loss (∂L/∂θ_s = ∇MSE_s),
and Adam is elementwise, so one run equals S independent full-batch trainings (tests check it
to rounding) at about the cost of one. Used by the DLoR experiments (Chen, Li, Kim, Lavaei,
arXiv 2605.05659; ``docs/dlor.md``).

Every function here is full-batch Adam with, by default, cosine decay of the learning rate from
``lr`` to ``lr``/100 over the T epochs: lr_t = lr/100 + (lr − lr/100)(1 + cos(π t/T))/2.
:func:`train_vmapped` (S modules) is the library's batched-ensemble trainer
:func:`~structnets.training.train_ensemble` and :func:`train_dense` (one module) is
:func:`~structnets.training.fit`. :func:`train_batched` trains a model whose parameters already
carry the seed axis (``torch.optim.Adam`` and ``CosineAnnealingLR`` on its few stacked tensors)
and records the test MSE every few epochs without keeping a best state, which ``train_ensemble``
does not offer; it is also faster on the dlor-sawtooth networks (``benchmarks/dlor_seed_batched.py``:
``train_ensemble`` over the S ``dlor_mlp`` networks took 1.8–4.2× as long per run).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .._validation import MAX_STEPS, check_choice, check_int, check_real

SCHEDULES: tuple[str, ...] = ("cosine", "constant")
"""Learning-rate schedules of :func:`full_batch_adam`."""

DEFAULT_THRESHOLD = 1e-3
"""Test MSE counted as success by :func:`train_batched` unless told otherwise."""


def full_batch_adam(
    parameters: Iterable[torch.Tensor],
    loss_fn: Callable[[], torch.Tensor],
    *,
    epochs: int,
    lr: float,
    schedule: str = "cosine",
    after_step: Callable[[int], None] | None = None,
) -> None:
    """Take ``epochs`` Adam steps on the scalar ``loss_fn()``, optionally with cosine decay.

    Args:
        parameters: the leaf tensors to train (``requires_grad``), updated in place.
        loss_fn: returns the scalar loss of the current parameters (full batch).
        epochs: number of steps, an int in [1, 10⁸].
        lr: initial learning rate (> 0).
        schedule: ``"cosine"`` (decay to lr/100 over ``epochs``: the module docstring's formula)
            or ``"constant"``.
        after_step: called as ``after_step(epoch)`` after step ``epoch`` = 1 … ``epochs``.

    Returns:
        None; the parameters hold the trained values.
    """
    epochs = check_int("epochs", epochs, low=1, high=MAX_STEPS)
    lr = check_real("lr", lr, low=0.0, low_open=True)
    check_choice("schedule", schedule, SCHEDULES)
    optimizer = torch.optim.Adam(parameters, lr=lr)
    scheduler = (
        torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs, eta_min=lr / 100)
        if schedule == "cosine"
        else None
    )
    for epoch in range(1, epochs + 1):
        optimizer.zero_grad(set_to_none=True)
        loss_fn().backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        if after_step is not None:
            after_step(epoch)


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
    """Full-batch Adam on Σ_s MSE_s of a seed-batched ``net``, with periodic test evaluation.

    Args:
        net: maps (n, d) to (S, n, 1); e.g. a :class:`~structnets.models.batched_dlor.BatchedDLoRNet`.
        X, y: (n, d) training inputs and (n,) targets, shared by all seeds.
        X_test, y_test: (n_test, d) and (n_test,) test data.
        epochs: Adam steps (full batch), an int in [1, 10⁸].
        lr: initial learning rate (> 0), decayed as :func:`full_batch_adam` says.
        eval_every: test evaluations at epoch 0, every ``eval_every``-th epoch and the last (≥ 1).
        threshold: test MSE counted as success (> 0); ``epochs_to_threshold`` is the first
            evaluation epoch at or below it.
        schedule: ``"cosine"`` or ``"constant"``.

    Returns:
        a :class:`BatchedHistory`; the trained parameters are in ``net``.
    """
    eval_every = check_int("eval_every", eval_every, low=1)
    threshold = check_real("threshold", threshold, low=0.0, low_open=True)
    start = time.perf_counter()
    y, y_test = y.reshape(1, -1, 1), y_test.reshape(1, -1, 1)
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

    def after_step(epoch: int) -> None:
        if epoch % eval_every == 0 or epoch == epochs:
            evaluate(epoch)

    evaluate(0)
    full_batch_adam(
        net.parameters(), lambda: _per_seed_mse(net(X), y).sum(), epochs=epochs, lr=lr, schedule=schedule,
        after_step=after_step,
    )  # fmt: skip
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
        seconds=time.perf_counter() - start,
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
    """
    from .fit import fit

    fit(model, X, y, epochs=epochs, batch_size=None, lr=lr, schedule="cosine", min_lr=lr / 100)
    with torch.no_grad():
        return float(((model(X) - y.reshape(-1, 1)) ** 2).mean())


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
    """
    from .ensemble import train_ensemble

    if isinstance(models, nn.Module) or not isinstance(models, Sequence) or not models:
        raise ValueError(f"`models` must be a non-empty sequence of modules, got {models!r}")
    trained = [copy.deepcopy(model) for model in models]
    train_ensemble(trained, X, y, epochs=epochs, batch_size=None, lr=lr, schedule="cosine", min_lr=lr / 100)
    target, target_test = y.reshape(-1, 1), y_test.reshape(-1, 1)
    with torch.no_grad():
        test = [float(((model(X_test) - target_test) ** 2).mean()) for model in trained]
        train = [float(((model(X) - target) ** 2).mean()) for model in trained]
    return test, train, trained


__all__ = [
    "DEFAULT_THRESHOLD",
    "SCHEDULES",
    "BatchedHistory",
    "full_batch_adam",
    "train_batched",
    "train_dense",
    "train_vmapped",
]
