"""``results.db``: the SQLite store of one run's finished units (stdlib ``sqlite3``, WAL mode).

Tables:

* ``meta(name, value)``: ``schema_version``, ``experiment`` (name), ``experiment_ref`` (how to import
  it again, e.g. ``"structnets.runner._toy:EXPERIMENT"``), ``config`` (the resolved config as JSON),
  ``created``.
* ``results(key, params, result, started, finished, worker, host, wall_s)``: one row per finished
  unit; ``params`` and ``result`` are JSON; timestamps are ISO 8601 UTC.
* ``sessions(id, started, finished, status, backend, jobs, host, pid, units_run)``: one row per
  invocation of the runner on this folder (a resumed run has several).

Every row is committed in its own transaction the moment the unit finishes, so a killed run loses at
most the units still in flight. A file that is not SQLite, is damaged, or holds other tables is
refused with :class:`CorruptStoreError` and never written to.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .config import config_differences
from .errors import ConfigMismatchError, CorruptStoreError, StoreError

SCHEMA_VERSION = "1"
_SQLITE_HEADER = b"SQLite format 3\x00"

_SCHEMA: dict[str, tuple[str, ...]] = {
    "meta": ("name", "value"),
    "results": ("key", "params", "result", "started", "finished", "worker", "host", "wall_s"),
    "sessions": ("id", "started", "finished", "status", "backend", "jobs", "host", "pid", "units_run"),
}
_CREATE = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE results (
    key TEXT PRIMARY KEY,
    params TEXT NOT NULL,
    result TEXT NOT NULL,
    started TEXT NOT NULL,
    finished TEXT NOT NULL,
    worker TEXT NOT NULL,
    host TEXT NOT NULL,
    wall_s REAL NOT NULL
);
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY,
    started TEXT NOT NULL,
    finished TEXT,
    status TEXT NOT NULL,
    backend TEXT NOT NULL,
    jobs INTEGER NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    units_run INTEGER NOT NULL DEFAULT 0
);
"""


def utc_now() -> str:
    """The current time as an ISO 8601 UTC string."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def dumps(obj: Any) -> str:
    """Canonical JSON used for params and configs (sorted keys, NaN allowed)."""
    return json.dumps(obj, sort_keys=True, allow_nan=True)


def dumps_row(obj: Any) -> str:
    """JSON of a result row; keeps the column order ``run_unit`` chose."""
    return json.dumps(obj, allow_nan=True)


@dataclass(frozen=True)
class UnitRecord:
    """One finished unit, as a row of ``results``.

    Attributes:
        key: the unit's key.
        params: the JSON params it ran with.
        result: the flat dict ``run_unit`` returned.
        started, finished: ISO 8601 UTC timestamps.
        worker: ``"pid"`` of the process that ran it (``"ray:<task id>"`` on Ray).
        host: hostname of the machine that ran it.
        wall_s: wall-clock seconds of ``run_unit``.
    """

    key: str
    params: Mapping[str, Any]
    result: Mapping[str, Any]
    started: str
    finished: str
    worker: str
    host: str
    wall_s: float


class ResultStore:
    """An open ``results.db``. Create with :meth:`create_or_resume` or :meth:`open_existing`."""

    def __init__(self, path: Path, conn: sqlite3.Connection, meta: dict[str, str]) -> None:
        self.path = path
        self._conn = conn
        self.meta = meta

    # -- opening ---------------------------------------------------------------------------------

    @staticmethod
    def _connect(path: Path, *, create: bool) -> tuple[sqlite3.Connection, bool]:
        """Open and validate ``path``; return the connection and whether the schema is missing."""
        if path.exists():
            if path.is_dir():
                raise CorruptStoreError(path, "it is a directory")
            size = path.stat().st_size
            if size > 0:
                with path.open("rb") as f:
                    header = f.read(len(_SQLITE_HEADER))
                if header != _SQLITE_HEADER:
                    raise CorruptStoreError(path, "the file is not an SQLite database")
        elif not create:
            raise StoreError(f"no results database at {path}: is this a run folder?")
        try:
            # Autocommit: each statement is its own transaction, committed when it returns.
            conn = sqlite3.connect(path, timeout=60.0, isolation_level=None)
        except sqlite3.Error as e:
            raise StoreError(f"cannot open {path}: {e}") from e
        try:
            check = conn.execute("PRAGMA quick_check").fetchall()
            if check != [("ok",)]:
                raise CorruptStoreError(path, f"SQLite integrity check failed: {check[:3]}")
            tables = {
                name: tuple(c[1] for c in conn.execute(f"PRAGMA table_info({name!r})"))
                for (name,) in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
                )
            }
        except CorruptStoreError:
            conn.close()
            raise
        except sqlite3.DatabaseError as e:
            conn.close()
            raise CorruptStoreError(path, f"SQLite error: {e}") from e
        if not tables:
            return conn, True
        if tables != _SCHEMA:
            conn.close()
            found = ", ".join(f"{t}({', '.join(c)})" for t, c in sorted(tables.items()))
            raise CorruptStoreError(path, f"wrong schema: found tables {found}; expected {', '.join(_SCHEMA)}")
        return conn, False

    @staticmethod
    def _read_meta(path: Path, conn: sqlite3.Connection) -> dict[str, str]:
        try:
            meta = dict(conn.execute("SELECT name, value FROM meta").fetchall())
        except sqlite3.DatabaseError as e:
            raise CorruptStoreError(path, f"cannot read meta table: {e}") from e
        missing = {"schema_version", "experiment", "config"} - set(meta)
        if missing:
            raise CorruptStoreError(path, f"meta table lacks {sorted(missing)}")
        if meta["schema_version"] != SCHEMA_VERSION:
            raise CorruptStoreError(
                path, f"schema version {meta['schema_version']!r}, this structnets reads {SCHEMA_VERSION!r}"
            )
        try:
            json.loads(meta["config"])
        except ValueError as e:
            raise CorruptStoreError(path, f"stored config is not JSON: {e}") from e
        return meta

    @classmethod
    def create_or_resume(
        cls, path: Path, *, experiment: str, experiment_ref: str | None, config: Mapping[str, Any]
    ) -> ResultStore:
        """Open ``path`` for a run of ``experiment`` with JSON ``config``, creating it if needed.

        Raises:
            CorruptStoreError: the file exists but is not a structnets results database.
            ConfigMismatchError: it holds a different experiment or config (the message lists the
                differing fields); resuming would mix results of two configurations.
        """
        path = Path(path)
        conn, empty = cls._connect(path, create=True)
        try:
            if empty:
                conn.execute("PRAGMA journal_mode=WAL")
                rows = {
                    "schema_version": SCHEMA_VERSION,
                    "experiment": experiment,
                    "experiment_ref": experiment_ref or "",
                    "config": dumps(dict(config)),
                    "created": utc_now(),
                }
                # Schema and meta in one transaction: a crash leaves either both or an empty file.
                conn.executescript("BEGIN;" + _CREATE)
                conn.executemany("INSERT INTO meta VALUES (?, ?)", rows.items())
                conn.execute("COMMIT")
                meta = rows
            else:
                meta = cls._read_meta(path, conn)
                diffs = []
                if meta["experiment"] != experiment:
                    diffs.append(f"experiment: stored {meta['experiment']!r}, requested {experiment!r}")
                diffs += config_differences(json.loads(meta["config"]), json.loads(dumps(dict(config))))
                if diffs:
                    raise ConfigMismatchError(path, diffs)
                conn.execute("PRAGMA journal_mode=WAL")
            # FULL: a committed unit survives even an OS crash; one fsync per unit is cheap.
            conn.execute("PRAGMA synchronous=FULL")
        except BaseException:
            conn.close()
            raise
        return cls(path, conn, meta)

    @classmethod
    def open_existing(cls, path: Path) -> ResultStore:
        """Open an existing ``results.db`` for reading (used by ``report``).

        Raises:
            StoreError: there is no such file.
            CorruptStoreError: it is not a structnets results database.
        """
        path = Path(path)
        conn, empty = cls._connect(path, create=False)
        if empty:
            conn.close()
            raise CorruptStoreError(path, "it has no tables")
        try:
            meta = cls._read_meta(path, conn)
        except BaseException:
            conn.close()
            raise
        return cls(path, conn, meta)

    # -- reading and writing ---------------------------------------------------------------------

    @property
    def config(self) -> dict[str, Any]:
        """The stored config (JSON dict)."""
        return json.loads(self.meta["config"])

    def records(self) -> dict[str, UnitRecord]:
        """Every finished unit, by key, in the order they were committed."""
        try:
            rows = self._conn.execute(
                "SELECT key, params, result, started, finished, worker, host, wall_s "
                "FROM results ORDER BY rowid"
            ).fetchall()
            return {
                r[0]: UnitRecord(r[0], json.loads(r[1]), json.loads(r[2]), r[3], r[4], r[5], r[6], r[7])
                for r in rows
            }
        except (sqlite3.DatabaseError, ValueError) as e:
            raise CorruptStoreError(self.path, f"cannot read results: {e}") from e

    def add(self, record: UnitRecord) -> bool:
        """Commit one finished unit; return False if its key was already stored (kept as it was)."""
        cur = self._conn.execute(
            "INSERT OR IGNORE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.key,
                dumps(dict(record.params)),
                dumps_row(dict(record.result)),
                record.started,
                record.finished,
                record.worker,
                record.host,
                float(record.wall_s),
            ),
        )
        return cur.rowcount == 1

    def begin_session(self, *, backend: str, jobs: int, host: str, pid: int) -> int:
        """Record the start of a runner invocation; return its session id."""
        cur = self._conn.execute(
            "INSERT INTO sessions (started, status, backend, jobs, host, pid) VALUES (?, 'running', ?, ?, ?, ?)",
            (utc_now(), backend, jobs, host, pid),
        )
        return int(cur.lastrowid or 0)

    def end_session(self, session_id: int, *, status: str, units_run: int) -> None:
        """Record how a runner invocation ended (``finished``, ``interrupted`` or ``failed``)."""
        self._conn.execute(
            "UPDATE sessions SET finished = ?, status = ?, units_run = ? WHERE id = ?",
            (utc_now(), status, units_run, session_id),
        )

    def sessions(self) -> list[dict[str, Any]]:
        """Every runner invocation on this folder, oldest first."""
        cur = self._conn.execute(f"SELECT {', '.join(_SCHEMA['sessions'])} FROM sessions ORDER BY id")
        return [dict(zip(_SCHEMA["sessions"], row, strict=True)) for row in cur.fetchall()]

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._conn.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
