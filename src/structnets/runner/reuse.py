"""Finished units taken over from other run folders (``structnets run --reuse DIR``).

Units are pure and seeded: a unit's result is a function of its params. So a unit that another run
folder of the same experiment already finished *with exactly the params this run gives it* need not
run again; its stored row (timestamps, worker, host and wall time of the run that computed it, all
unchanged) is committed to this run's ``results.db`` instead. This is how a run with more seeds
builds on an earlier one (``--set seeds=0,1,2,3,4 --reuse runs/seed0``). A unit whose params differ
in anything (another epoch count, bound, code that changed its params) is never taken: it runs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import StoreError
from .outputs import RESULTS_DB
from .store import ResultStore, UnitRecord, dumps
from .unit_models import copy_unit_model, model_problem


def load_sources(
    paths: Sequence[str | os.PathLike[str]], experiment: str, out: Path
) -> list[tuple[Path, dict[str, UnitRecord]]]:
    """Read every finished unit of each folder in ``paths`` (checked: a run of ``experiment``, not ``out``).

    Raises:
        StoreError: a folder has no ``results.db``, is ``out`` itself, is given twice, or holds a
            run of another experiment (named); CorruptStoreError: its database is unreadable.
    """
    if isinstance(paths, (str, os.PathLike)):
        raise TypeError(
            f"`reuse` must be a sequence of run folders, got the single path {str(paths)!r}: pass [{str(paths)!r}]"
        )
    sources: list[tuple[Path, dict[str, UnitRecord]]] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        where = path.resolve()
        if where == out.resolve():
            raise StoreError(f"`reuse` folder {path} is the output folder itself; a run resumes its own units anyway")
        if where in seen:
            raise StoreError(f"`reuse` folder {path} is given twice")
        seen.add(where)
        db = path / RESULTS_DB
        if not db.is_file():
            raise StoreError(
                f"`reuse` folder {path} has no {RESULTS_DB}: it must be a run folder (structnets run --out)"
            )
        with ResultStore.open_existing(db) as store:
            stored = store.meta.get("experiment")
            if stored != experiment:
                raise StoreError(f"`reuse` folder {path} holds a run of {stored!r}, not of {experiment!r}")
            sources.append((path, store.records()))
    return sources


def _canonical(params: Mapping[str, Any]) -> Any:
    return json.loads(dumps(dict(params)))


def take_reusable(
    pending: Sequence[tuple[str, dict[str, Any]]],
    sources: Sequence[tuple[Path, Mapping[str, UnitRecord]]],
    store: ResultStore,
    records: dict[str, UnitRecord],
) -> tuple[list[tuple[str, dict[str, Any]]], dict[Path, int]]:
    """Commit, for each pending unit, the first source row of its key stored with exactly its params.

    ``pending`` holds (key, canonical params) as :meth:`~.schedule.Schedule.advance` returns them. A
    taken row is added to ``store`` (replacing a stored row of that key, as a rerun would) and to
    ``records``. Returns the units still to run, and how many rows were taken from each folder.
    """
    left: list[tuple[str, dict[str, Any]]] = []
    taken: dict[Path, int] = {}
    for key, params in pending:
        for path, rows in sources:
            row = rows.get(key)
            # a row whose saved model is gone or altered in its folder is not taken: the unit runs here
            if row is not None and _canonical(row.params) == params and model_problem(path, row.result) is None:
                # the model file first: a kill between the two then leaves no row without its file
                copy_unit_model(path, store.path.parent, row.result)
                # replace: a pending key not in ``records`` may still be stored, as a row whose model is lost
                store.add(row, replace=True)
                records[key] = row
                taken[path] = taken.get(path, 0) + 1
                break
        else:
            left.append((key, params))
    return left, taken


__all__ = ["load_sources", "take_reusable"]
