"""What an experiment is, to the runner.

An experiment is a module-level object implementing :class:`Experiment`. The runner never knows
what a unit computes: it asks the experiment for units, runs the unfinished ones (locally or on Ray),
commits each result row to ``results.db`` the moment it finishes, and asks again, so staged
experiments (e.g. grid search, then cross-validation at the chosen architecture) resume too.

Protocol (DESIGN.md, "Runner" and convention 7):

* ``config_class``: a frozen dataclass; ``config_class.quick()`` returns the ``--quick`` preset and
  ``config_class()`` the full one. ``--set key=value`` overrides fields (parsed by field type).
* ``units(config, finished)``: every unit that can be run *now*, given the result rows already
  finished (a DataFrame with one row per finished unit, possibly empty, with a ``key`` column).
  Keys are stable strings, so a unit returned again after it finished is skipped; a later stage's
  units are returned once the stage before it is finished. The runner stops when every unit
  returned is finished.
* ``run_unit(params)``: a pure, seeded function of the unit's JSON-serialisable ``params`` that
  returns one result row (a flat dict of JSON scalars). It must not print. It runs in worker
  processes, so it must be importable at module level.
* ``report(results, config)``: the Markdown text of ``table.md`` (ours beside the paper's).
* ``figures(results, config, out_dir)``: writes ``out_dir/*.png`` and returns their paths.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pandas as pd

JSONScalar = str | int | float | bool | None


@dataclass(frozen=True)
class Unit:
    """One independent, seeded piece of work.

    Attributes:
        key: stable unique id within the run, e.g. ``"cv/iris/lowrank/fold=3/seed=0"``.
        params: JSON-serialisable keyword arguments for the experiment's ``run_unit``.
    """

    key: str
    params: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Experiment(Protocol):
    """The interface every experiment in :mod:`structnets.experiments` implements."""

    name: str
    description: str
    config_class: type

    def units(self, config: Any, finished: pd.DataFrame) -> list[Unit]: ...

    def run_unit(self, params: Mapping[str, Any]) -> dict[str, JSONScalar]: ...

    def report(self, results: pd.DataFrame, config: Any) -> str: ...

    def figures(self, results: pd.DataFrame, config: Any, out_dir: Path) -> list[Path]: ...


def config_to_dict(config: Any) -> dict[str, Any]:
    """Return a frozen-dataclass config as a JSON-ready dict (for ``run_info.json``)."""
    return dataclasses.asdict(config)


ProgressCallback = Callable[[int, int], None]
"""Called as ``progress(done, total)`` after every finished unit; the CLI draws the bar."""
