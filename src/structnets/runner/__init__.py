"""Run experiments resumably into run folders, locally or on Ray (DESIGN.md, "Runner").

Public API:

* :func:`run` — run or resume ``experiment`` with ``config`` into a run folder; returns the results.
* :func:`report` — regenerate ``results.csv``, ``table.md`` and figures of a run folder from its
  ``results.db`` alone.
* :func:`load_results` — ``(experiment, config, results)`` of a run folder.
* :class:`Unit`, :class:`Experiment` — the protocol experiments implement (:mod:`.experiment`).
* :func:`resolve_experiment` — a registered name or ``"module.path:OBJECT"`` to an experiment.
* :func:`apply_overrides` — ``--set key=value`` overrides of a config, parsed by field type.
* :func:`validate_config` — the checks every config passes before a run folder is created.

A run folder's ``results.db`` may only name a registered experiment: :func:`report` and
:func:`load_results` never import a module a run folder names (pass ``experiment=`` for others).
"""

from __future__ import annotations

from .config import apply_overrides, config_from_json, config_to_json, parse_overrides, validate_config
from .errors import (
    BackendUnavailableError,
    ConfigMismatchError,
    CorruptStoreError,
    ExperimentError,
    InvalidConfigError,
    RunLockedError,
    RunnerError,
    StoreError,
    UnitFailedError,
    UntrustedExperimentError,
)
from .experiment import Experiment, Unit
from .orchestrate import ProgressCallback, load_results, report, run
from .resolve import resolve_experiment

__all__ = [
    "BackendUnavailableError",
    "ConfigMismatchError",
    "CorruptStoreError",
    "Experiment",
    "ExperimentError",
    "InvalidConfigError",
    "ProgressCallback",
    "RunLockedError",
    "RunnerError",
    "StoreError",
    "Unit",
    "UnitFailedError",
    "UntrustedExperimentError",
    "apply_overrides",
    "config_from_json",
    "config_to_json",
    "load_results",
    "parse_overrides",
    "report",
    "resolve_experiment",
    "run",
    "validate_config",
]
