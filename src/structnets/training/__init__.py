"""Training: a small, seeded minibatch fit loop and named losses."""

from .fit import OPTIMIZERS, FitResult, evaluate, fit, seeded
from .losses import LOSSES, cross_entropy, get_loss, mse
from .threads import set_threads, torch_threads

__all__ = [
    "LOSSES",
    "OPTIMIZERS",
    "FitResult",
    "cross_entropy",
    "evaluate",
    "fit",
    "get_loss",
    "mse",
    "seeded",
    "set_threads",
    "torch_threads",
]
