"""Run experiments resumably into run folders, locally or on Ray (docs/design.md, "Runner").

Public API:

* :func:`run` — run or resume ``experiment`` with ``config`` into a run folder; returns the results.
* :func:`report` — regenerate ``results.csv``, ``table.md`` and figures of a run folder from its
  ``results.db`` alone.
* :func:`load_results` — ``(experiment, config, results)`` of a run folder.
* :func:`changed_units` — the units of a run folder stored with params the experiment no longer gives
  (a *mixed* folder: ``run`` refuses it unless ``rerun_changed=True``; ``report`` marks it).
* :func:`run_experiment` — the one-call ``run(config) -> DataFrame`` (a temporary folder by default).
* :class:`Unit`, :class:`Experiment` — the protocol experiments implement (:mod:`structnets.protocol`).
* :func:`resolve_experiment` — a registered name or ``"module.path:OBJECT"`` to an experiment.
* :data:`Registry`, :func:`set_default_registry` — the registry of experiments the runner is handed.
* :func:`apply_overrides` — ``--set key=value`` overrides of a config, parsed by field type.
* :func:`validate_config` — the checks every config passes before a run folder is created.
* :func:`compare_runs` — two run folders of one experiment, unit by unit (:class:`RunComparison`).
* :func:`resolve_device` — ``cpu``/``cuda``/``auto`` to the device units train on, checked.
* :func:`describe_config` — a config class's fields, types, defaults and quick preset.

The runner imports nothing from :mod:`structnets.experiments`: every function that finds an experiment by
name takes ``registry`` (names to ``"module.path:OBJECT"`` specs; the command line passes
``structnets.experiments.REGISTRY``). Without one it uses the default registry, empty until
``structnets.experiments.register()`` (or :func:`set_default_registry`) installs one, explicitly.

A run folder's ``results.db`` may only name a registered experiment (by name or spec): :func:`report` and
:func:`load_results` never import a module a run folder names (pass ``experiment=`` for others).
"""

from __future__ import annotations

from ..protocol import Experiment, ProgressCallback, Unit
from .compare import RunComparison, compare_runs
from .config import apply_overrides, config_from_json, config_to_json, describe_config, parse_overrides, validate_config
from .device import resolve_device
from .errors import (
    BackendUnavailableError,
    ChangedUnitsError,
    ConfigMismatchError,
    CorruptStoreError,
    DeviceUnavailableError,
    ExperimentError,
    InvalidConfigError,
    MixedRunWarning,
    RunLockedError,
    RunnerError,
    StoreError,
    UnitFailedError,
    UntrustedExperimentError,
)
from .orchestrate import changed_units, load_results, report, run, run_experiment
from .resolve import Registry, resolve_experiment, set_default_registry

__all__ = [
    "BackendUnavailableError",
    "ChangedUnitsError",
    "ConfigMismatchError",
    "CorruptStoreError",
    "DeviceUnavailableError",
    "Experiment",
    "ExperimentError",
    "InvalidConfigError",
    "MixedRunWarning",
    "ProgressCallback",
    "Registry",
    "RunComparison",
    "RunLockedError",
    "RunnerError",
    "StoreError",
    "Unit",
    "UnitFailedError",
    "UntrustedExperimentError",
    "apply_overrides",
    "changed_units",
    "compare_runs",
    "config_from_json",
    "config_to_json",
    "describe_config",
    "load_results",
    "parse_overrides",
    "report",
    "resolve_device",
    "resolve_experiment",
    "run",
    "run_experiment",
    "set_default_registry",
    "validate_config",
]
