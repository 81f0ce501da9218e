"""Training: one seeded minibatch loop, its schedules, one batched-ensemble trainer, one thread helper.

Every experiment trains through these names (``docs/design.md``, Layout: ``training/``).

``fit(model, X, y, *, loss="mse", epochs=100, batch_size=128, lr=1e-3, weight_decay=0.0,
optimizer="adam", validation_fraction=0.0, validation_data=None, patience=None, min_delta=0.0,
seed=0, callback=None, schedule="constant", warmup_epochs=None, warmup_steps=None, min_lr=0.0,
checkpoint=None) -> FitResult``
    Trains ``model`` in place. Each epoch: one permutation of the rows from a generator seeded
    with ``seed``, one optimiser step per slice of ``batch_size`` rows. ``loss``: ``"mse"``,
    ``"cross_entropy"`` or any ``(output, target) -> scalar``. ``optimizer``: ``"adam"``,
    ``"adamw"``, ``"sgd"`` or ``params -> torch.optim.Optimizer``. ``schedule``: ``"constant"``,
    ``"cosine"`` (η_t = η_min + (η − η_min)(1 + cos(πt/T))/2 over the T = epochs × steps-per-epoch
    optimiser steps), ``"warmup_cosine"`` (η(t + 1)/W for the first W = ``warmup_steps`` or
    ``warmup_epochs`` × steps-per-epoch steps, then the cosine over T − W), or
    ``optimizer -> torch.optim.lr_scheduler.LRScheduler``, stepped after every optimiser step.
    With a validation set the best epoch's weights are restored; ``patience`` stops early.
    ``checkpoint``: a file the whole training state is saved to after every epoch and resumed
    from (:mod:`structnets.training.checkpoint`): a killed run, called again, ends with the
    weights of an uninterrupted one, bit for bit on the CPU.
    ``evaluate(model, X, y, loss=...)`` gives the mean loss; ``seeded(seed)`` seeds a block
    (model construction) and restores the global RNG. Closed forms: ``cosine_lr``,
    ``warmup_cosine_lr`` (:mod:`structnets.training.schedules`).

``train_ensemble(models, X, y, *, stacked=False, seeds=None, **fit_options) -> EnsembleResult``
    Trains E modules of one architecture (e.g. one builder under E ``seeded`` blocks) at once:
    ``torch.func.stack_module_state`` + ``vmap(functional_call)``, one optimiser over the
    stacked tensors (Adam is elementwise, so each member takes its own step). ``X``/``y`` are
    shared, (n, …), or per member with ``stacked=True``, (E, n, …). Member e is shuffled with
    ``seeds[e]`` (default e) and equals ``fit(models[e], X_e, y_e, seed=seeds[e], **fit_options)``
    to rounding, including its own early stopping and best-state restore. It takes the options
    of ``fit`` except ``seed``; its ``callback(info)`` gets an ``EnsembleEpoch`` (per-member
    losses, ``active``, and ``info.predict(X)``: the current members' outputs, e.g. for a test
    curve). The trained weights are loaded back into
    ``models``; ``result.member(e)`` is member e's ``FitResult``, ``result.train_loss[e]`` its
    history. Forward passes must be ``vmap``-able (no in-place buffer updates).

``torch_threads(n)``
    Context manager: torch's intra-op threads set to ``n`` inside, the previous count restored on
    exit (also on exceptions). ``set_threads(n, environment=False) -> previous`` sets it once,
    e.g. in a worker initializer (``environment=True`` also sets OMP/MKL/OpenBLAS variables for
    child processes).

``check_device(device, name="device") -> str``, ``device_param(device) -> dict``, ``unit_device(params) -> str``
    An experiment's ``device`` field: the config's check (ValueError naming ``name``), the
    unit-param entry (``{}`` on the CPU, so CPU params stay as before) and the unit's torch device
    (absent: ``"cpu"``; ``"auto"`` resolved) (:mod:`structnets.training.device`).
    ``synchronized_clock()`` is the clock the trainers stop with: it waits for queued CUDA work.
"""

from .device import check_device, device_param, synchronized_clock, unit_device
from .ensemble import EnsembleEpoch, EnsembleResult, train_ensemble
from .fit import OPTIMIZERS, FitResult, evaluate, fit, seeded
from .lbfgs import LBFGSResult, adam_phase, batched_lbfgs  # noqa: F401
from .losses import LOSSES, cross_entropy, get_loss, mse
from .schedules import SCHEDULES, cosine_lr, warmup_cosine_lr
from .threads import set_threads, torch_threads

__all__ = [
    "LOSSES",
    "OPTIMIZERS",
    "EnsembleEpoch",
    "EnsembleResult",
    "SCHEDULES",
    "FitResult",
    "check_device",
    "cosine_lr",
    "cross_entropy",
    "device_param",
    "evaluate",
    "fit",
    "get_loss",
    "mse",
    "seeded",
    "set_threads",
    "synchronized_clock",
    "torch_threads",
    "train_ensemble",
    "unit_device",
    "warmup_cosine_lr",
]
