"""A unit stored with params the experiment no longer gives is never kept silently.

Each test builds a finished run folder of the toy experiment, then rewrites the stored params of two
stage-1 units as an older version of the code would have given them (an extra ``"old"`` field): the
results of those rows are what that code computed, so keeping them beside new rows would mix two versions
in one table. ``run`` refuses (touching nothing), ``run(rerun_changed=True)`` recomputes exactly those, and
``report``/``load_results``/``changed_units`` mark the folder as mixed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from toy_experiment import REGISTRY, ToyConfig

from structnets.runner import (
    ChangedUnitsError,
    MixedRunWarning,
    UnitFailedError,
    changed_units,
    load_results,
    report,
    run,
)
from structnets.runner.store import SCHEMA_VERSION

OLD = ["stage1/arm=0/seed=1", "stage1/arm=1/seed=0"]
"""The units whose stored params are made old (quick preset: 4 stage-1 units, 2 stage-2 units)."""


def _rows(out: Path) -> dict[str, tuple]:
    with contextlib.closing(sqlite3.connect(out / "results.db", isolation_level=None)) as conn:
        return {row[0]: row for row in conn.execute("SELECT * FROM results ORDER BY key")}


def _reseal(conn: sqlite3.Connection, key: str) -> None:
    """Recompute an edited row's checksum: the row stands for one that other code wrote so."""
    from structnets.runner.store import row_digest

    columns = "key, params, result, started, finished, worker, host, wall_s"
    row = conn.execute(f"SELECT {columns} FROM results WHERE key = ?", (key,)).fetchone()
    conn.execute("UPDATE results SET digest = ? WHERE key = ?", (row_digest(*row), key))


def _make_old(out: Path, keys: list[str]) -> None:
    """Give ``keys`` the params an older version of the experiment would have stored."""
    with contextlib.closing(sqlite3.connect(out / "results.db", isolation_level=None)) as conn:
        for key in keys:
            (params,) = conn.execute("SELECT params FROM results WHERE key = ?", (key,)).fetchone()
            old = {**json.loads(params), "old": True}
            conn.execute("UPDATE results SET params = ? WHERE key = ?", (json.dumps(old, sort_keys=True), key))
            _reseal(conn, key)


def _snapshot(out: Path) -> dict[str, str]:
    """Every file of the run folder, by relative path, to the SHA-256 of its bytes."""
    return {
        str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def mixed(tmp_path: Path, calls: Callable[[], Counter[str]]) -> Path:
    out = tmp_path / "run"
    run("toy", ToyConfig.quick(), out, registry=REGISTRY)
    assert sum(calls().values()) == 6
    _make_old(out, OLD)
    return out


def test_run_folders_record_their_schema_version(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run("toy", ToyConfig.quick(), out, registry=REGISTRY)
    info = json.loads((out / "run_info.json").read_text())
    with contextlib.closing(sqlite3.connect(out / "results.db", isolation_level=None)) as conn:
        (stored,) = conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
    assert info["schema_version"] == stored == SCHEMA_VERSION


def test_run_refuses_a_folder_with_changed_units_and_modifies_nothing(
    mixed: Path, calls: Callable[[], Counter[str]]
) -> None:
    before = _snapshot(mixed)
    with pytest.raises(ChangedUnitsError) as info:
        run("toy", ToyConfig.quick(), mixed, registry=REGISTRY)
    message = str(info.value)
    assert "\n" not in message
    assert "2 unit(s)" in message and repr(OLD[0]) in message and repr(OLD[1]) in message
    assert "--rerun-changed" in message and "--out" in message
    assert info.value.keys == OLD
    assert sum(calls().values()) == 6  # no unit ran
    assert _snapshot(mixed) == before  # results.db, run_info.json, table.md, figures: byte for byte


def test_rerun_changed_recomputes_just_those_units_and_keeps_the_rest(
    mixed: Path, tmp_path: Path, calls: Callable[[], Counter[str]]
) -> None:
    kept = {k: row for k, row in _rows(mixed).items() if k not in OLD}
    frame = run("toy", ToyConfig.quick(), mixed, registry=REGISTRY, rerun_changed=True)
    assert calls() == Counter({k: 2 for k in OLD}) + Counter({k: 1 for k in kept})  # each old unit once more
    rows = _rows(mixed)
    assert {k: row for k, row in rows.items() if k not in OLD} == kept  # same rows, timestamps and all
    assert all("old" not in json.loads(rows[k][1]) for k in OLD)
    assert changed_units(mixed, registry=REGISTRY) == []
    fresh = run("toy", ToyConfig.quick(), tmp_path / "fresh", registry=REGISTRY)
    assert frame.equals(fresh)
    assert (mixed / "table.md").read_text() == (tmp_path / "fresh" / "table.md").read_text()


def test_a_failed_rerun_loses_no_stored_row(
    mixed: Path, calls: Callable[[], Counter[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old row of a changed unit goes only when its new row is committed."""
    monkeypatch.setenv("STRUCTNETS_TOY_FAIL_KEYS", OLD[1])
    before = _rows(mixed)
    with pytest.raises(UnitFailedError):
        run("toy", ToyConfig.quick(), mixed, registry=REGISTRY, rerun_changed=True)
    after = _rows(mixed)
    assert set(after) == set(before)
    assert after[OLD[1]] == before[OLD[1]]  # still the old row, still marked
    assert "old" not in json.loads(after[OLD[0]][1])  # recomputed and committed before the failure
    assert changed_units(mixed, registry=REGISTRY) == [OLD[1]]


def test_report_and_load_results_mark_a_mixed_folder(mixed: Path) -> None:
    assert changed_units(mixed, registry=REGISTRY) == OLD
    table = report(mixed, registry=REGISTRY)
    first = table.splitlines()[0]
    assert first.startswith("> **Mixed run folder of toy**: 2 stored unit(s)")
    assert f"`{OLD[0]}`" in first and "--rerun-changed" in first
    assert (mixed / "table.md").read_text() == table
    with pytest.warns(MixedRunWarning, match="2 unit"):
        _, _, frame = load_results(mixed, registry=REGISTRY)
    assert len(frame) == 6  # the stored rows, as they are: marked, not dropped


def test_a_folder_whose_units_are_current_is_not_marked(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run("toy", ToyConfig.quick(), out, registry=REGISTRY)
    assert changed_units(out, registry=REGISTRY) == []
    assert "Mixed" not in report(out, registry=REGISTRY)
