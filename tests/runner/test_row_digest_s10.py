"""``results.db`` row checksums: a value changed after the run wrote it is refused by name (session 10).

Before the ``digest`` column, a number edited in ``results.db`` (by hand, or a byte damaged inside a
value, which ``PRAGMA quick_check`` does not see) went into every table and verdict unnoticed.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import stat
from pathlib import Path

import pytest
from toy_experiment import REGISTRY, ToyConfig

from structnets.runner import run
from structnets.runner.errors import CorruptStoreError
from structnets.runner.store import ResultStore, row_digest

COLUMNS = "key, params, result, started, finished, worker, host, wall_s"


def _run(out: Path) -> dict[str, dict]:
    run("toy", ToyConfig.quick(), out, registry=REGISTRY)
    with ResultStore.open_existing(out / "results.db") as store:
        return {key: dict(record.result) for key, record in store.records().items()}


def _sql(out: Path, statement: str, args: tuple = ()) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(out / "results.db", isolation_level=None)) as conn:
        rows = conn.execute(statement, args).fetchall()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return rows


def _first_number(result: dict) -> str:
    return next(c for c, v in result.items() if isinstance(v, float))


def test_a_number_edited_in_results_db_is_refused_naming_the_row(tmp_path: Path) -> None:
    out = tmp_path / "run"
    results = _run(out)
    key = sorted(results)[0]
    column = _first_number(results[key])
    _sql(out, f"UPDATE results SET result = json_set(result, '$.{column}', 0.123) WHERE key = ?", (key,))
    with ResultStore.open_existing(out / "results.db") as store, pytest.raises(CorruptStoreError) as caught:
        store.records()
    assert key in str(caught.value) and "checksum" in str(caught.value)
    # a run on the folder refuses it too, before writing anything
    with pytest.raises(CorruptStoreError, match="checksum"):
        run("toy", ToyConfig.quick(), out, registry=REGISTRY)


@pytest.mark.parametrize(
    "edit",
    [
        "UPDATE results SET digest = NULL WHERE key = ?",
        "UPDATE results SET digest = 'abc' WHERE key = ?",
        "UPDATE results SET wall_s = wall_s + 1 WHERE key = ?",
        "UPDATE results SET started = '2000-01-01T00:00:00.000+00:00' WHERE key = ?",
        "UPDATE results SET params = json_set(params, '$.seed', 99) WHERE key = ?",
        "UPDATE results SET wall_s = 'fast' WHERE key = ?",
    ],
)
def test_every_column_is_covered(tmp_path: Path, edit: str) -> None:
    out = tmp_path / "run"
    key = sorted(_run(out))[-1]
    _sql(out, edit, (key,))
    with ResultStore.open_existing(out / "results.db") as store, pytest.raises(CorruptStoreError, match=key):
        store.records()


def test_the_digest_is_of_the_stored_values(tmp_path: Path) -> None:
    out = tmp_path / "run"
    _run(out)
    rows = _sql(out, f"SELECT {COLUMNS}, digest FROM results")
    assert rows and all(row[8] == row_digest(*row[:8]) for row in rows)
    assert len({row[8] for row in rows}) == len(rows)


def _make_legacy(out: Path) -> None:
    """The folder as a version before the digest column wrote it."""
    _sql(out, "ALTER TABLE results DROP COLUMN digest")


def test_a_folder_from_before_the_column_is_read_and_gains_it_on_resume(tmp_path: Path) -> None:
    out = tmp_path / "run"
    results = _run(out)
    _make_legacy(out)
    with ResultStore.open_existing(out / "results.db") as store:
        assert {k: dict(r.result) for k, r in store.records().items()} == results  # read as before
    # read-only: still readable, nothing written
    db = out / "results.db"
    db.chmod(stat.S_IRUSR)
    out.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        with ResultStore.open_existing(db) as store:
            assert set(store.records()) == set(results)
    finally:
        out.chmod(stat.S_IRWXU)
        db.chmod(stat.S_IRUSR | stat.S_IWUSR)
    # resumed: every row gets its digest, computed from the row as it is; the table is unchanged
    run("toy", ToyConfig.quick(), out, registry=REGISTRY)
    rows = _sql(out, f"SELECT {COLUMNS}, digest FROM results")
    assert rows and all(row[8] == row_digest(*row[:8]) for row in rows)
    with ResultStore.open_existing(db) as store:
        assert {k: dict(r.result) for k, r in store.records().items()} == results
    key = sorted(results)[0]
    _sql(out, "UPDATE results SET result = ? WHERE key = ?", (json.dumps({**results[key], "extra": 1}), key))
    with ResultStore.open_existing(db) as store, pytest.raises(CorruptStoreError, match="checksum"):
        store.records()


def test_a_resume_adds_rows_with_their_digests(tmp_path: Path) -> None:
    """A killed run's folder resumed: the rows written by the second invocation are checked like the first's."""
    out = tmp_path / "run"
    results = _run(out)
    keys = sorted(results)
    _sql(out, "DELETE FROM results WHERE key = ?", (keys[0],))  # as if killed before that unit finished
    assert _run(out) == results
    rows = _sql(out, f"SELECT {COLUMNS}, digest FROM results")
    assert len(rows) == len(results) and all(row[8] == row_digest(*row[:8]) for row in rows)
