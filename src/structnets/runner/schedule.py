"""Replaying an experiment's ``units`` the way an uninterrupted run calls it (see :mod:`.orchestrate`).

``units(config, finished)`` is called first with no results, then, once every unit it returned has
finished, with the results of all units returned so far, in the order they were first returned, and so
on until it returns nothing new. On resume the same calls are replayed against ``results.db``.

A stored unit whose params differ from those the experiment now gives (the code changed since it ran) is
*changed*: :attr:`Schedule.changed` lists them. It is never kept silently: the run refuses
(:class:`~.errors.ChangedUnitsError`) unless asked to rerun them (``rerun_changed``), and ``report`` marks
the folder as mixed.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..protocol import Experiment, Unit
from .errors import ExperimentError
from .store import UnitRecord, dumps

__all__ = ["Schedule", "results_frame"]


def results_frame(records: list[UnitRecord]) -> pd.DataFrame:
    """One row per record: ``key`` then the result columns (in first-seen order)."""
    if not records:
        return pd.DataFrame({"key": pd.Series([], dtype=object)})
    return pd.DataFrame([{"key": r.key, **r.result} for r in records])


class Schedule:
    """Replays ``experiment.units`` the way an uninterrupted run calls it (see module docstring).

    Args:
        experiment: the experiment whose ``units`` are replayed.
        config: its config.
        rerun_changed: a changed unit (stored with other params) is returned to be run again;
            otherwise its stored result counts as finished and it is only listed in :attr:`changed`.
    """

    def __init__(self, experiment: Experiment, config: Any, *, rerun_changed: bool = False) -> None:
        self.experiment = experiment
        self.config = config
        self.rerun_changed = rerun_changed
        self.order: list[str] = []  # every key returned so far, in first-returned order
        self.params: dict[str, dict[str, Any]] = {}
        self.changed: list[str] = []  # stored with params other than the experiment's now, in order

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

        With ``rerun_changed``, a changed unit is returned too (until a record with its current params
        replaces the stored one); without it, changed units are appended to :attr:`changed` and count
        as finished. Must be called again only after every unit it returned has finished.
        """
        known = set(self.order)
        while True:
            units = self._units(records)
            new = [u for u in units if u.key not in known]
            for unit in new:
                self.order.append(unit.key)
                known.add(unit.key)
                self.params[unit.key] = self._canonical(unit)
                if self._stale(records.get(unit.key)):
                    self.changed.append(unit.key)
            pending = [
                (u.key, self.params.setdefault(u.key, self._canonical(u)))
                for u in units
                if u.key not in records or (self.rerun_changed and self._stale(records[u.key]))
            ]
            if pending or not new:
                return pending

    def _stale(self, stored: UnitRecord | None) -> bool:
        """Whether ``stored`` ran with other params than the experiment gives its key now."""
        return stored is not None and json.loads(dumps(dict(stored.params))) != self.params[stored.key]

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
