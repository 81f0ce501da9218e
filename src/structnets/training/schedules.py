"""Learning-rate schedules by name, as closed forms of the optimiser step t.

Used by :func:`~structnets.training.fit` and :func:`~structnets.training.train_ensemble`. Step
t = 0, 1, …, T − 1 is the t-th optimiser step, T = epochs × steps per epoch the planned total;
the value is the learning rate that step uses. With a base rate η (the ``lr`` argument, or each
parameter group's initial rate) and a floor η_min (``min_lr``):

* ``"constant"``: η_t = η.
* ``"cosine"``: η_t = η_min + (η − η_min)(1 + cos(π t / T))/2, cosine annealing without restarts
  (Loshchilov & Hutter, *SGDR*, ICLR 2017, eq. 5), the closed form of
  ``torch.optim.lr_scheduler.CosineAnnealingLR(T_max=T, eta_min=η_min)``.
* ``"warmup_cosine"``: η_t = η (t + 1)/W for t < W (linear warm-up over W steps, Goyal et al.
  2017), then η_t = η_min + (η − η_min)(1 + cos(π (t − W)/(T − W)))/2.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .._validation import check_choice, check_int, check_real
from ._adam import FusedAdam

SCHEDULES: tuple[str, ...] = ("constant", "cosine", "warmup_cosine")
"""The named learning-rate schedules."""

SchedulerFactory = Callable[[torch.optim.Optimizer], torch.optim.lr_scheduler.LRScheduler]
"""``optimizer -> LRScheduler``: a custom schedule, stepped once after every optimiser step."""


def cosine_lr(step: int, total_steps: int, lr: float, min_lr: float = 0.0) -> float:
    """η_t = η_min + (η − η_min)(1 + cos(π t/T))/2 (SGDR, Loshchilov & Hutter 2017, eq. 5).

    Args:
        step: t in [0, T − 1] (later steps continue the cosine towards η at t = 2T).
        total_steps: T ≥ 1.
        lr: η.
        min_lr: η_min.

    Returns:
        the learning rate of step t.

    Raises:
        TypeError/ValueError: ``step`` not an int ≥ 0, ``total_steps`` not an int ≥ 1, ``lr`` not
            a finite real > 0 or ``min_lr`` not a finite real in [0, ``lr``] (the message names it).
    """
    step = check_int("step", step, low=0)
    total_steps = check_int("total_steps", total_steps, low=1)
    lr = check_real("lr", lr, low=0.0, low_open=True)
    min_lr = check_real("min_lr", min_lr, low=0.0, high=lr)
    return _cosine_lr(step, total_steps, lr, min_lr)


def _cosine_lr(step: int, total_steps: int, lr: float, min_lr: float) -> float:
    # the closed form of cosine_lr on checked arguments (called once per optimiser step)
    return min_lr + (lr - min_lr) * (1.0 + math.cos(math.pi * step / total_steps)) / 2.0


def warmup_cosine_lr(step: int, total_steps: int, warmup_steps: int, lr: float, min_lr: float = 0.0) -> float:
    """Linear warm-up η(t + 1)/W for t < W, then :func:`cosine_lr` over the remaining T − W steps.

    Args:
        step: t ≥ 0.
        total_steps: T ≥ W.
        warmup_steps: W ≥ 1.
        lr: η, reached at step W − 1.
        min_lr: η_min, the floor of the cosine part.

    Returns:
        the learning rate of step t.

    Raises:
        TypeError/ValueError: ``step`` not an int ≥ 0, ``warmup_steps`` not an int ≥ 1,
            ``total_steps`` not an int ≥ ``warmup_steps``, ``lr`` not a finite real > 0 or
            ``min_lr`` not a finite real in [0, ``lr``] (the message names it).
    """
    step = check_int("step", step, low=0)
    warmup_steps = check_int("warmup_steps", warmup_steps, low=1)
    if isinstance(total_steps, int) and not isinstance(total_steps, bool) and total_steps < warmup_steps:
        raise ValueError(f"`total_steps` must be >= `warmup_steps`={warmup_steps}, got {total_steps}")
    total_steps = check_int("total_steps", total_steps, low=1)
    lr = check_real("lr", lr, low=0.0, low_open=True)
    min_lr = check_real("min_lr", min_lr, low=0.0, high=lr)
    return _warmup_cosine_lr(step, total_steps, warmup_steps, lr, min_lr)


def _warmup_cosine_lr(step: int, total_steps: int, warmup_steps: int, lr: float, min_lr: float) -> float:
    # the closed form of warmup_cosine_lr on checked arguments (called once per optimiser step)
    if step < warmup_steps:
        return lr * ((step + 1) / warmup_steps)  # exactly lr at step W − 1
    return _cosine_lr(step - warmup_steps, max(1, total_steps - warmup_steps), lr, min_lr)


def check_schedule(
    schedule: str | SchedulerFactory,
    warmup_epochs: int | None,
    warmup_steps: int | None,
    min_lr: float,
) -> tuple[str | SchedulerFactory, float]:
    """Validate the schedule arguments of :func:`~structnets.training.fit` before any work.

    Returns:
        ``(schedule, min_lr)`` as validated. Raises ``ValueError``/``TypeError`` naming the argument.
    """
    if isinstance(schedule, str):
        check_choice("schedule", schedule, SCHEDULES)
    elif not callable(schedule):
        raise TypeError(
            f"`schedule` must be one of {sorted(SCHEDULES)} or a callable optimizer -> LRScheduler, got {schedule!r}"
        )
    min_lr = check_real("min_lr", min_lr, low=0.0)
    if warmup_epochs is not None:
        check_int("warmup_epochs", warmup_epochs, low=1)
    if warmup_steps is not None:
        check_int("warmup_steps", warmup_steps, low=1)
    if schedule == "warmup_cosine":
        if (warmup_epochs is None) == (warmup_steps is None):
            raise ValueError(
                "schedule='warmup_cosine' needs exactly one of `warmup_epochs` and `warmup_steps`, "
                f"got warmup_epochs={warmup_epochs}, warmup_steps={warmup_steps}"
            )
    elif warmup_epochs is not None or warmup_steps is not None:
        raise ValueError(
            f"`warmup_epochs`/`warmup_steps` apply only to schedule='warmup_cosine', got schedule={schedule!r}"
        )
    if min_lr != 0.0 and schedule not in ("cosine", "warmup_cosine"):
        raise ValueError(
            f"`min_lr` applies only to the cosine schedules, got min_lr={min_lr} with schedule={schedule!r}"
        )
    return schedule, min_lr


class StepRates:
    """The learning rate of every optimiser step for one named schedule, per parameter group.

    Args:
        schedule: one of :data:`SCHEDULES`.
        base_rates: η of each parameter group (its initial learning rate).
        total_steps: T, the planned number of optimiser steps (≥ 1).
        warmup_steps: W for ``"warmup_cosine"`` (in [1, T]); ignored otherwise.
        min_lr: η_min, at most every base rate.
    """

    def __init__(
        self,
        schedule: str,
        base_rates: list[float],
        total_steps: int,
        warmup_steps: int | None = None,
        min_lr: float = 0.0,
    ) -> None:
        self.schedule = check_choice("schedule", schedule, SCHEDULES)
        self.total_steps = check_int("total_steps", total_steps, low=1)
        if schedule == "warmup_cosine":
            if warmup_steps is None or not 1 <= warmup_steps <= total_steps:
                raise ValueError(
                    f"the warm-up must last between 1 and the {total_steps} planned optimiser steps "
                    f"(epochs × steps per epoch), got {warmup_steps} steps"
                )
        self.warmup_steps = warmup_steps or 0
        if any(min_lr > rate for rate in base_rates):
            raise ValueError(f"`min_lr` must be <= the learning rate {min(base_rates)}, got {min_lr}")
        self.base_rates = list(base_rates)
        self.min_lr = min_lr

    @property
    def constant(self) -> bool:
        """True for ``"constant"``: the rates never change (the loop need not touch the optimiser)."""
        return self.schedule == "constant"

    def rates(self, step: int) -> list[float]:
        """η_t of every parameter group at optimiser step ``step`` (the module docstring's formulas)."""
        if self.schedule == "cosine":
            return [_cosine_lr(step, self.total_steps, lr, self.min_lr) for lr in self.base_rates]
        if self.schedule == "warmup_cosine":
            return [
                _warmup_cosine_lr(step, self.total_steps, self.warmup_steps, lr, self.min_lr) for lr in self.base_rates
            ]
        return list(self.base_rates)


def make_scheduler(factory: SchedulerFactory, optimizer: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LRScheduler:
    """Call a ``schedule`` factory and check that it returns a scheduler of ``optimizer`` that steps without a metric."""
    scheduler = factory(optimizer)
    if not isinstance(scheduler, torch.optim.lr_scheduler.LRScheduler) or isinstance(
        scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau
    ):
        raise TypeError(
            "`schedule` factory must return a torch.optim.lr_scheduler.LRScheduler that steps without a metric "
            f"(not ReduceLROnPlateau), got {type(scheduler).__name__}"
        )
    if scheduler.optimizer is not optimizer:
        raise ValueError("`schedule` factory must return a scheduler of the optimizer it is given")
    return scheduler


def scheduler_for(
    schedule: str | SchedulerFactory,
    opt: torch.optim.Optimizer | FusedAdam,
    total_steps: int,
    warmup_epochs: int | None,
    warmup_steps: int | None,
    steps_per_epoch: int,
    min_lr: float,
) -> tuple[torch.optim.lr_scheduler.LRScheduler | None, StepRates | None]:
    """What a training loop steps: a factory's scheduler, or the closed-form rates of a named schedule, or neither.

    Args:
        schedule: validated by :func:`check_schedule`.
        opt: the optimiser (a ``torch.optim.Optimizer`` when ``schedule`` is a factory).
        total_steps: T = epochs × steps per epoch.
        warmup_epochs, warmup_steps: the warm-up, at most T steps in all.
        steps_per_epoch: optimiser steps per epoch.
        min_lr: η_min.

    Returns:
        ``(scheduler, None)`` for a factory, ``(None, rates)`` for ``"cosine"``/``"warmup_cosine"``,
        ``(None, None)`` for ``"constant"``.
    """
    if callable(schedule):
        if not isinstance(opt, torch.optim.Optimizer):
            raise TypeError(f"a `schedule` factory needs a torch.optim optimizer, got {type(opt).__name__}")
        return make_scheduler(schedule, opt), None
    if schedule == "constant":
        return None, None
    warmup = warmup_steps if warmup_epochs is None else warmup_epochs * steps_per_epoch
    if warmup is not None and warmup > total_steps:
        name = "warmup_steps" if warmup_epochs is None else "warmup_epochs"
        raise ValueError(
            f"`{name}` must give a warm-up of at most the {total_steps} planned optimiser steps "
            f"(epochs × {steps_per_epoch} steps per epoch), got {warmup} steps"
        )
    base = [opt.lr] if isinstance(opt, FusedAdam) else [float(group["lr"]) for group in opt.param_groups]
    return None, StepRates(schedule, base, total_steps, warmup, min_lr)


def apply_rates(opt: torch.optim.Optimizer | FusedAdam, rates: list[float]) -> None:
    """Set the learning rate of every parameter group of ``opt`` (``rates`` from :meth:`StepRates.rates`)."""
    if isinstance(opt, FusedAdam):
        opt.lr = rates[0]
        return
    for group, rate in zip(opt.param_groups, rates, strict=True):
        group["lr"] = rate


__all__ = ["SCHEDULES", "SchedulerFactory", "StepRates", "apply_rates", "check_schedule", "cosine_lr"]
__all__ += ["make_scheduler", "scheduler_for", "warmup_cosine_lr"]
