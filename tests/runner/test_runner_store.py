"""``results.db``: schema, WAL, refusal of corrupt files and of mismatched configs."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from toy_experiment import ToyConfig

from structnets.runner import ConfigMismatchError, CorruptStoreError, StoreError, run
from structnets.runner.store import ResultStore, UnitRecord

TOY = "toy_experiment:EXPERIMENT"


def _record(key: str, value: float = 1.0) -> UnitRecord:
    return UnitRecord(key, {"p": 1}, {"value": value, "name": "x"}, "t0", "t1", "pid:1", "host", 0.5)


def _open(path: Path, config: dict | None = None, experiment: str = "toy") -> ResultStore:
    return ResultStore.create_or_resume(path, experiment=experiment, experiment_ref=TOY, config=config or {"a": 1})


def test_new_store_is_wal_and_round_trips_rows(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    with _open(path) as store:
        assert store.add(_record("u1", 2.5))
        assert not store.add(_record("u1", 9.0))  # a finished key is never overwritten
        store.add(_record("u0"))
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    with _open(path) as store:
        records = store.records()
        assert list(records) == ["u1", "u0"]
        assert records["u1"].result == {"value": 2.5, "name": "x"}
        assert records["u1"].params == {"p": 1}
        assert store.config == {"a": 1}


def test_empty_file_is_a_new_store(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    path.write_bytes(b"")
    with _open(path) as store:
        assert store.records() == {}


def test_random_bytes_are_refused_untouched(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    path = out / "results.db"
    garbage = os.urandom(4096)
    path.write_bytes(garbage)
    with pytest.raises(CorruptStoreError) as info:
        run(TOY, ToyConfig.quick(), out)
    assert str(path) in str(info.value) and "not an SQLite database" in str(info.value)
    assert path.read_bytes() == garbage
    assert sorted(p.name for p in out.iterdir()) == ["results.db"]  # nothing written beside it


def test_damaged_sqlite_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    with _open(path) as store:
        for i in range(200):
            store.add(_record(f"u{i}"))
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    data[4096:8192] = os.urandom(4096)  # clobber the second page; the header stays valid
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptStoreError, match="results.db"):
        _open(path).records()
    assert path.read_bytes() == bytes(data)


def test_sqlite_file_with_wrong_schema_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE other (x INTEGER)")
        conn.execute("INSERT INTO other VALUES (1)")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(CorruptStoreError) as info:
        _open(path)
    assert "wrong schema" in str(info.value) and "other(x)" in str(info.value) and str(path) in str(info.value)
    assert path.read_bytes() == before
    with pytest.raises(CorruptStoreError):
        ResultStore.open_existing(path)
    assert path.read_bytes() == before


def test_resume_with_other_config_or_experiment_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    with _open(path, {"a": 1, "b": [1, 2]}) as store:
        store.add(_record("u0"))
    with pytest.raises(ConfigMismatchError) as info:
        _open(path, {"a": 1, "b": [1, 3]})
    assert "b: stored [1, 2], requested [1, 3]" in str(info.value)
    assert "--out" in str(info.value)
    with pytest.raises(ConfigMismatchError, match="experiment: stored 'toy', requested 'other'"):
        _open(path, {"a": 1, "b": [1, 2]}, experiment="other")


def test_a_store_without_units_takes_a_new_config(tmp_path: Path) -> None:
    # E.g. the first unit failed on a bad --set value: nothing finished, so the corrected command
    # may reuse the folder instead of being refused for the config it no longer asks for.
    path = tmp_path / "results.db"
    _open(path, {"a": float("nan")}).close()
    with _open(path, {"a": 2}, experiment="other") as store:
        assert store.config == {"a": 2} and store.meta["experiment"] == "other"
        store.add(_record("u0"))
    with ResultStore.open_existing(path) as store:
        assert store.config == {"a": 2} and store.meta["experiment"] == "other"
    with pytest.raises(ConfigMismatchError):  # now it holds a unit: a third config is refused
        _open(path, {"a": 3}, experiment="other")


def test_open_existing_needs_a_run_folder(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no results database"):
        ResultStore.open_existing(tmp_path / "results.db")
    assert not (tmp_path / "results.db").exists()
