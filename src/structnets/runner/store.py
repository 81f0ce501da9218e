"""``results.db``: the SQLite store of one run's finished units (stdlib ``sqlite3``, WAL mode).

Tables:

* ``meta(name, value)``: ``schema_version``, ``experiment`` (name), ``experiment_ref`` (how to find
  it again: a registered name such as ``"lowrank-uci"``, or a ``"module.path:OBJECT"`` spec), ``config`` (the resolved config as JSON),
  ``created``.
* ``results(key, params, result, started, finished, worker, host, wall_s, digest)``: one row per
  finished unit; ``params`` and ``result`` are JSON; timestamps are ISO 8601 UTC; ``digest`` is the
  SHA-256 of the other eight values (:func:`row_digest`), so a value changed after the run wrote it
  (a hand edit, a damaged byte inside a value, which SQLite's own checks do not see) is refused by
  name. Folders written before the column existed are read without it and gain it, computed from
  their rows as they are, when a run resumes them.
* ``sessions(id, started, finished, status, backend, jobs, host, pid, units_run)``: one row per
  invocation of the runner on this folder (a resumed run has several).

Every row is committed in its own transaction the moment the unit finishes, so a killed run loses at
most the units still in flight. A file that is not SQLite, is damaged, or holds other tables is
refused with :class:`CorruptStoreError` and never written to.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
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
    "results": ("key", "params", "result", "started", "finished", "worker", "host", "wall_s", "digest"),
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
    wall_s REAL NOT NULL,
    digest TEXT
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


#: ``results`` as written before the ``digest`` column (read without it; given it on resume)
_LEGACY_SCHEMA = {**_SCHEMA, "results": _SCHEMA["results"][:-1]}


def row_digest(
    key: str, params: str, result: str, started: str, finished: str, worker: str, host: str, wall_s: float
) -> str:
    """SHA-256 (hex) of one ``results`` row's stored values, as stored (the JSON texts, not their objects)."""
    wall = float(wall_s)
    # repr round-trips a float exactly; NaN/inf (never written by the runner) get a name of their own
    text = json.dumps(
        [key, params, result, started, finished, worker, host, repr(wall) if math.isfinite(wall) else str(wall)],
        ensure_ascii=False,
    )
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


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
        # read once: create_or_resume has given a writable store its digest column before this point
        self._digests = _has_digests(conn)

    # -- opening ---------------------------------------------------------------------------------

    @staticmethod
    def _connect(path: Path, *, create: bool, read_only: bool = False) -> tuple[sqlite3.Connection, bool]:
        """Open and validate ``path``; return the connection and whether the schema is missing.

        ``read_only``: open it without writing anything beside it (see :func:`_read_only_uri`); tried
        by :meth:`open_existing` where a normal open fails for lack of write access (SQLite's WAL
        mode creates ``results.db-shm``), so a finished run in a read-only folder can still be read.
        """
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
        if path.exists() and not os.access(path, os.R_OK):
            raise StoreError(f"cannot read {path}: permission denied; fix its permissions")
        try:
            # Autocommit: each statement is its own transaction, committed when it returns.
            if read_only:
                conn = sqlite3.connect(_read_only_uri(path), timeout=60.0, isolation_level=None, uri=True)
            else:
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
        except UnicodeDecodeError as e:  # a garbled byte in SQLite's own message (e.g. of a damaged schema)
            conn.close()
            raise CorruptStoreError(path, f"SQLite error with text that is not UTF-8: {e}") from e
        except sqlite3.DatabaseError as e:
            conn.close()
            if _is_access_error(e) and not create and not read_only:
                return ResultStore._connect(path, create=False, read_only=True)
            if _is_access_error(e):
                unsaved = " (it holds units not yet merged from its -wal file)" if read_only else ""
                raise StoreError(
                    f"cannot open {path}: {e}{unsaved}; check the permissions of the file and of its folder, "
                    "or copy the run folder somewhere writable"
                ) from e
            if _is_device_error(e):
                raise _device_error(path, e, "open") from e
            raise CorruptStoreError(path, f"SQLite error: {e}") from e
        if not tables:
            return conn, True
        if tables not in (_SCHEMA, _LEGACY_SCHEMA):
            conn.close()
            found = ", ".join(f"{t}({', '.join(c)})" for t, c in sorted(tables.items()))
            raise CorruptStoreError(path, f"wrong schema: found tables {found}; expected {', '.join(_SCHEMA)}")
        return conn, False

    @staticmethod
    def _read_meta(path: Path, conn: sqlite3.Connection) -> dict[str, str]:
        try:
            meta = dict(conn.execute("SELECT name, value FROM meta").fetchall())
        except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
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
        cls,
        path: Path,
        *,
        experiment: str,
        experiment_ref: str | None,
        config: Mapping[str, Any],
        defaults: Mapping[str, Any] | None = None,
    ) -> ResultStore:
        """Open ``path`` for a run of ``experiment`` with JSON ``config``, creating it if needed.

        ``defaults``: the JSON of the config class's defaults; a field missing from the stored
        config then matches its default (see :func:`~.config.config_differences`).

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
                diffs += config_differences(
                    json.loads(meta["config"]),
                    json.loads(dumps(dict(config))),
                    None if defaults is None else json.loads(dumps(dict(defaults))),
                )
                conn.execute("PRAGMA journal_mode=WAL")
                if diffs:
                    (stored_units,) = conn.execute("SELECT COUNT(*) FROM results").fetchone()
                    if stored_units:
                        same = meta["experiment"] == experiment
                        raise ConfigMismatchError(path, diffs, json.loads(meta["config"]) if same else None)
                    # No unit finished (e.g. the first one failed on a bad value): nothing can be
                    # mixed, so the folder takes the new experiment and config.
                    meta = {
                        **meta,
                        "experiment": experiment,
                        "experiment_ref": experiment_ref or "",
                        "config": dumps(dict(config)),
                    }
                    conn.execute("BEGIN")
                    conn.executemany(
                        "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                        [(k, meta[k]) for k in ("experiment", "experiment_ref", "config")],
                    )
                    conn.execute("COMMIT")
            if not empty:
                _add_digests(conn)
            # FULL: a committed unit survives even an OS crash; one fsync per unit is cheap.
            conn.execute("PRAGMA synchronous=FULL")
        except sqlite3.Error as e:
            conn.close()
            raise _store_error(path, e) from e
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
        """Every finished unit, by key, in the order they were committed.

        Raises:
            CorruptStoreError: a row cannot be read, is not a flat JSON row, lacks a column that
                every other row of its kind has, or holds a value of another type than theirs
                (the row and column are named).
        """
        try:
            digests = self._digests
            columns = ", ".join(_SCHEMA["results"] if digests else _LEGACY_SCHEMA["results"])
            rows = self._conn.execute(f"SELECT {columns} FROM results ORDER BY rowid").fetchall()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
            raise CorruptStoreError(self.path, f"cannot read results: {e}") from e
        records: dict[str, UnitRecord] = {}
        for r in rows:
            if digests and not _digest_matches(r):
                raise _bad_row(
                    self.path,
                    str(r[0]),
                    "was changed after the run wrote it: its values do not match their checksum (the digest column)"
                    if r[8] is not None
                    else "has no checksum (its digest column is empty)",
                )
            try:
                params, result = json.loads(r[1]), json.loads(r[2])
            except (TypeError, ValueError) as e:
                raise CorruptStoreError(self.path, f"row {_shown(r[0])} is not JSON ({e})") from e
            records[r[0]] = UnitRecord(r[0], params, result, r[3], r[4], r[5], r[6], r[7])
        check_records(self.path, records)
        return records

    def add(self, record: UnitRecord, *, replace: bool = False) -> bool:
        """Commit one finished unit; return False if its key was already stored (kept as it was).

        ``replace``: a stored row of the same key is replaced instead (a unit rerun because its params
        changed); the old row goes in the same transaction that commits the new one, so a crash keeps
        one of them, never neither.
        """
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        values = (
            record.key,
            dumps(dict(record.params)),
            dumps_row(dict(record.result)),
            record.started,
            record.finished,
            record.worker,
            record.host,
            float(record.wall_s),
        )
        if self._digests:
            cur = self._execute(
                f"{verb} INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (*values, row_digest(*values))
            )
        else:  # a legacy store opened without resuming (create_or_resume adds the column)
            cur = self._execute(f"{verb} INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?)", values)
        return cur.rowcount == 1

    def _execute(self, sql: str, args: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        try:
            return self._conn.execute(sql, args)
        except sqlite3.Error as e:
            raise _store_error(self.path, e) from e

    def begin_session(self, *, backend: str, jobs: int, host: str, pid: int) -> int:
        """Record the start of a runner invocation; return its session id."""
        cur = self._execute(
            "INSERT INTO sessions (started, status, backend, jobs, host, pid) VALUES (?, 'running', ?, ?, ?, ?)",
            (utc_now(), backend, jobs, host, pid),
        )
        return int(cur.lastrowid or 0)

    def end_session(self, session_id: int, *, status: str, units_run: int) -> None:
        """Record how a runner invocation ended (``finished``, ``interrupted`` or ``failed``)."""
        self._execute(
            "UPDATE sessions SET finished = ?, status = ?, units_run = ? WHERE id = ?",
            (utc_now(), status, units_run, session_id),
        )

    def sessions(self) -> list[dict[str, Any]]:
        """Every runner invocation on this folder, oldest first."""
        cur = self._execute(f"SELECT {', '.join(_SCHEMA['sessions'])} FROM sessions ORDER BY id")
        return [dict(zip(_SCHEMA["sessions"], row, strict=True)) for row in cur.fetchall()]

    def close(self) -> None:
        """Close the connection (idempotent)."""
        self._conn.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _has_digests(conn: sqlite3.Connection) -> bool:
    return "digest" in {c[1] for c in conn.execute("PRAGMA table_info('results')")}


def _digest_matches(row: tuple[Any, ...]) -> bool:
    digest = row[8]
    try:
        return isinstance(digest, str) and digest == row_digest(*row[:8])
    except (TypeError, ValueError):  # a value of the wrong SQL type (edited): it cannot match
        return False


def _add_digests(conn: sqlite3.Connection) -> None:
    """Give a legacy ``results`` table its ``digest`` column, each row's computed from it as it is, in one transaction."""
    if _has_digests(conn):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("ALTER TABLE results ADD COLUMN digest TEXT")
        columns = ", ".join(_LEGACY_SCHEMA["results"])
        rows = conn.execute(f"SELECT rowid, {columns} FROM results").fetchall()
        conn.executemany("UPDATE results SET digest = ? WHERE rowid = ?", [(row_digest(*r[1:]), r[0]) for r in rows])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _read_only_uri(path: Path) -> str:
    """The URI that opens ``path`` for reading only, writing nothing beside it.

    Without a ``-wal`` file (a run that ended closes it and merges it into the file), the file is
    all there is: ``immutable=1`` reads it with no lock and no ``-shm``. With one (a run was killed,
    or is running), ``mode=ro`` reads the WAL too, which needs its ``-shm`` beside it.
    """
    wal = path.with_name(path.name + "-wal")
    immutable = not wal.exists() or wal.stat().st_size == 0
    return f"{path.resolve().as_uri()}?mode=ro" + ("&immutable=1" if immutable else "")


def _is_access_error(e: sqlite3.Error) -> bool:
    text = str(e).lower()
    return "readonly" in text or "read-only" in text or "unable to open" in text or "permission" in text


def _is_device_error(e: sqlite3.Error) -> bool:
    """A full disk or a failing read/write (``SQLITE_FULL``, ``SQLITE_IOERR_*``): the file may be sound."""
    name = str(getattr(e, "sqlite_errorname", "") or "")
    text = str(e).lower()
    return name.startswith(("SQLITE_FULL", "SQLITE_IOERR")) or "disk is full" in text or "disk i/o error" in text


def _device_error(path: Path, e: sqlite3.Error, what: str) -> StoreError:
    return StoreError(
        f"cannot {what} {path}: {e}; the disk that holds it may be full (or failing): free space and rerun "
        "the same command to resume (the units committed before are kept)"
    )


def _store_error(path: Path, e: sqlite3.Error) -> StoreError:
    if _is_device_error(e):
        return _device_error(path, e, "write to")
    if _is_access_error(e):
        return StoreError(
            f"cannot write to {path}: {e}; check the permissions of the file and of its folder, "
            "or use another output folder (--out)"
        )
    if isinstance(e, sqlite3.OperationalError) and "locked" in str(e).lower():
        return StoreError(
            f"{path} is locked by another process ({e}); wait for it, or use another output folder (--out)"
        )
    return CorruptStoreError(path, f"SQLite error: {e}")


def _shown(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


_SAFE_KEY = re.compile(r"[\w./=:,+@-]{1,200}")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "str"


def _bad_row(path: Path, key: str, problem: str) -> CorruptStoreError:
    if _SAFE_KEY.fullmatch(key):
        fix = f"delete that row to recompute it (sqlite3 {path} \"DELETE FROM results WHERE key='{key}'\") and rerun"
    else:
        fix = "delete that row to recompute it and rerun"
    return CorruptStoreError(path, f"row {_shown(key)} {problem}; {fix}")


#: Result columns a row may lack where the other rows of its kind have them: the saved model's file and
#: checksum (:mod:`.unit_models`) came with a later version, and a folder may hold rows from before
#: (resumed, or taken with ``--reuse``).
OPTIONAL_COLUMNS = frozenset({"model_file", "model_sha256"})


def check_records(path: Path, records: Mapping[str, UnitRecord]) -> None:
    """Refuse malformed stored rows, naming the row and the column.

    Every row must hold a JSON object of params and a flat JSON object of scalars as its result
    (what the runner writes). Rows of the same kind (keys equal up to their ``name=value`` parts,
    e.g. ``cv/iris/lowrank/fold=*/seed=*``) come from the same code, so they must have the same
    columns with values of the same type (number, string or bool; null fits any): a row lacking a
    column that every other row of its kind has, or holding a string where they hold numbers, was
    damaged or edited after the run.

    Raises:
        CorruptStoreError: naming the first bad row.
    """
    groups: dict[str, list[UnitRecord]] = {}
    for key, record in records.items():
        if not isinstance(record.params, dict):
            raise _bad_row(path, key, f"has params of JSON type {type(record.params).__name__}, not an object")
        if not isinstance(record.result, dict):
            raise _bad_row(path, key, f"has a result of JSON type {type(record.result).__name__}, not an object")
        for column, value in record.result.items():
            if column == "key":
                raise _bad_row(path, key, "has a result column named 'key', which is reserved")
            if value is not None and not isinstance(value, (str, int, float, bool)):
                raise _bad_row(
                    path, key, f"holds a JSON {type(value).__name__} in column {_shown(column)}, not a scalar"
                )
        groups.setdefault(re.sub(r"=[^/]*", "=*", key), []).append(record)
    for kind_key, group in groups.items():
        if len(group) < 2:
            continue
        counts: dict[str, int] = {}
        kinds: dict[str, dict[str, list[str]]] = {}
        for record in group:
            for column, value in record.result.items():
                counts[column] = counts.get(column, 0) + 1
                kind = _kind(value)
                if kind != "null":
                    kinds.setdefault(column, {}).setdefault(kind, []).append(record.key)
        for record in group:
            for column, count in counts.items():
                if count == len(group) - 1 and column not in record.result and column not in OPTIONAL_COLUMNS:
                    raise _bad_row(
                        path,
                        record.key,
                        f"lacks the column {_shown(column)} that the other {count} rows of its kind "
                        f"({_shown(kind_key)}) have",
                    )
        for column, by_kind in kinds.items():
            if len(by_kind) < 2:
                continue
            ranked = sorted(by_kind.items(), key=lambda kv: -len(kv[1]))
            usual, _ = ranked[0]
            odd_kind, odd_keys = ranked[-1]
            value = records[odd_keys[0]].result[column]
            raise _bad_row(
                path,
                odd_keys[0],
                f"holds {_shown(value)} ({odd_kind}) in column {_shown(column)}, where the other rows of "
                f"its kind ({_shown(kind_key)}) hold {usual} values",
            )
