"""Training: a small, seeded minibatch fit loop and named losses."""

from .fit import OPTIMIZERS, FitResult, evaluate, fit, seeded
from .losses import LOSSES, cross_entropy, get_loss, mse
from .schedules import SCHEDULES, cosine_lr, warmup_cosine_lr
from .threads import set_threads, torch_threads

__all__ = [
    "LOSSES",
    "OPTIMIZERS",
    "SCHEDULES",
    "FitResult",
    "cosine_lr",
    "cross_entropy",
    "evaluate",
    "fit",
    "get_loss",
    "mse",
    "seeded",
    "set_threads",
    "torch_threads",
    "warmup_cosine_lr",
]
