"""Paper experiments, by name. Each module defines one object implementing
:class:`structnets.runner.experiment.Experiment`; register it in ``_MODULES``."""

from __future__ import annotations

import importlib

from ..runner.experiment import Experiment

# name -> module path; modules are imported on demand so `structnets list` stays fast.
_MODULES: dict[str, str] = {
    "lowrank-uci": "structnets.experiments.lowrank_uci",
    "dlor-blindspot": "structnets.experiments.dlor_blindspot", "dlor-sawtooth": "structnets.experiments.dlor_sawtooth",
    "swish-construction": "structnets.experiments.swish_construction",
    "smoothness-rates": "structnets.experiments.smoothness_rates",
    "lipschitz-moons": "structnets.experiments.lipschitz_moons",
    "lipschitz-mnist": "structnets.experiments.lipschitz_mnist",
    "lipschitz-density": "structnets.experiments.lipschitz_density",
    "rank-bounds": "structnets.experiments.rank_bounds",
    "dlor-universality": "structnets.experiments.dlor_universality",
}


def names() -> list[str]:
    """Names accepted by :func:`get` and ``structnets run``."""
    return sorted(_MODULES)


def get(name: str) -> Experiment:
    """Return the experiment called ``name``; an unknown name lists the valid ones."""
    if name not in _MODULES:
        raise ValueError(f"unknown experiment {name!r}; valid names: {', '.join(names())}")
    return importlib.import_module(_MODULES[name]).EXPERIMENT
