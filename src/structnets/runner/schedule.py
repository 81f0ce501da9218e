"""Replaying an experiment's ``units`` the way an uninterrupted run calls it (see :mod:`.orchestrate`).

``units(config, finished)`` is called first with no results, then, once every unit it returned has
finished, with the results of all units returned so far, in the order they were first returned, and so
on until it returns nothing new. On resume the same calls are replayed against ``results.db``.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from typing import Any

import pandas as pd

from .errors import ExperimentError
from .experiment import Experiment, Unit
from .store import UnitRecord, dumps

__all__ = ["Schedule", "results_frame"]


def results_frame(records: list[UnitRecord]) -> pd.DataFrame:
    """One row per record: ``key`` then the result columns (in first-seen order)."""
    if not records:
        return pd.DataFrame({"key": pd.Series([], dtype=object)})
    return pd.DataFrame([{"key": r.key, **r.result} for r in records])


class Schedule:
    """Replays ``experiment.units`` the way an uninterrupted run calls it (see module docstring)."""

    def __init__(self, experiment: Experiment, config: Any) -> None:
        self.experiment = experiment
        self.config = config
        self.order: list[str] = []  # every key returned so far, in first-returned order
        self.params: dict[str, dict[str, Any]] = {}

    def _units(self, records: Mapping[str, UnitRecord]) -> list[Unit]:
        finished = results_frame([records[k] for k in self.order])
        units = self.experiment.units(self.config, finished)
        seen: set[str] = set()
        for unit in units:
            if not isinstance(unit, Unit):
                raise ExperimentError(
                    f"{self.experiment.name}.units() must return Unit objects, got {type(unit).__name__}"
                )
            if not isinstance(unit.key, str) or not unit.key:
                raise ExperimentError(f"{self.experiment.name}.units() returned a unit with key {unit.key!r}")
            if unit.key in seen:
                raise ExperimentError(f"{self.experiment.name}.units() returned the key {unit.key!r} twice")
            seen.add(unit.key)
        return list(units)

    def _canonical(self, unit: Unit) -> dict[str, Any]:
        try:
            return json.loads(dumps(dict(unit.params)))
        except (TypeError, ValueError) as e:
            raise ExperimentError(f"params of unit {unit.key!r} are not JSON-serialisable: {e}") from e

    def advance(self, records: Mapping[str, UnitRecord]) -> list[tuple[str, dict[str, Any]]]:
        """Return the next units to run (those of the current round not in ``records``), or ``[]``.

        Must be called again only after every unit it returned has finished.
        """
        known = set(self.order)
        while True:
            units = self._units(records)
            new = [u for u in units if u.key not in known]
            for unit in new:
                self.order.append(unit.key)
                known.add(unit.key)
                self.params[unit.key] = self._canonical(unit)
                stored = records.get(unit.key)
                if stored is not None and dict(stored.params) != self.params[unit.key]:
                    warnings.warn(
                        f"unit {unit.key!r} is stored with params {dumps(dict(stored.params))} but the "
                        f"experiment now gives {dumps(self.params[unit.key])}; keeping the stored result",
                        RuntimeWarning,
                        stacklevel=3,
                    )
            pending = [
                (u.key, self.params.setdefault(u.key, self._canonical(u))) for u in units if u.key not in records
            ]
            if pending or not new:
                return pending

    def frame(self, records: Mapping[str, UnitRecord]) -> pd.DataFrame:
        """The results frame in canonical order; warns about stored rows no unit claims."""
        stray = [k for k in records if k not in self.params]
        if stray:
            warnings.warn(
                f"{len(stray)} row(s) in results.db belong to no unit of this experiment and are left "
                f"out of the results (e.g. {stray[:3]})",
                RuntimeWarning,
                stacklevel=3,
            )
        return results_frame([records[k] for k in self.order if k in records])
