"""Paper experiments, by name. Each module defines one object ``EXPERIMENT`` implementing
:class:`structnets.protocol.Experiment`; register it in ``_MODULES``.

:data:`REGISTRY` is the registry the runner is handed (names to ``"module.path:EXPERIMENT"`` specs): the
command line and :mod:`structnets.claims` pass it to every runner call, and :func:`run_experiment` (what
each experiment's ``run(config)`` calls) passes it too. Importing this package changes nothing in the
runner: :func:`register` makes :data:`REGISTRY` the runner's default, explicitly, for callers that want
``structnets.runner.report(folder)`` without ``registry=``. The runner itself imports nothing from here.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any

from ..protocol import Experiment

# name -> module path; modules are imported on demand so `structnets list` stays fast.
_MODULES: dict[str, str] = {
    "lowrank-uci": "structnets.experiments.lowrank_uci",
    "lowrank-compress": "structnets.experiments.lowrank_compress",
    "dlor-blindspot": "structnets.experiments.dlor_blindspot",
    "dlor-sawtooth": "structnets.experiments.dlor_sawtooth",
    "swish-construction": "structnets.experiments.swish_construction",
    "smoothness-rates": "structnets.experiments.smoothness_rates",
    "smooth-constant-depth": "structnets.experiments.smooth_constant_depth",
    "lipschitz-moons": "structnets.experiments.lipschitz_moons",
    "lipschitz-mnist": "structnets.experiments.lipschitz_mnist",
    "lipschitz-mnist-conv": "structnets.experiments.lipschitz_mnist_conv",
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


class _Registry(Mapping[str, str]):
    """A live read-only view of ``_MODULES`` as names to ``"module.path:EXPERIMENT"`` specs."""

    def __getitem__(self, name: str) -> str:
        return f"{_MODULES[name]}:EXPERIMENT"

    def __iter__(self) -> Iterator[str]:
        return iter(_MODULES)

    def __len__(self) -> int:
        return len(_MODULES)

    def __repr__(self) -> str:
        return f"structnets.experiments.REGISTRY({dict(self)!r})"


REGISTRY: Mapping[str, str] = _Registry()
"""Every registered experiment: its name to the ``"module.path:EXPERIMENT"`` spec of its object."""


def register() -> None:
    """Make :data:`REGISTRY` the runner's default registry (:func:`structnets.runner.set_default_registry`).

    Explicit, never a side effect of importing this package: until it is called, a runner call
    without ``registry=`` knows no experiment by name.
    """
    from ..runner import set_default_registry

    set_default_registry(REGISTRY)


def run_experiment(experiment: Experiment, config: Any = None, out_dir: Any = None, **runner_options: Any) -> Any:
    """:func:`structnets.runner.run_experiment` handed :data:`REGISTRY` (each experiment's ``run(config)``).

    The run folder then names the experiment by its registered name, so ``structnets report`` and
    ``structnets claims`` trust it. ``runner_options`` as for :func:`structnets.runner.run`.
    """
    from ..runner import run_experiment as run

    runner_options.setdefault("registry", REGISTRY)
    return run(experiment, config, out_dir, **runner_options)
