"""The one atomic writer, :mod:`structnets.atomic_io`: content, permissions, cleanup on failure."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pandas as pd
import pytest

from structnets import atomic_io


def test_bytes_round_trip_and_no_temporary_left(tmp_path: Path) -> None:
    target = tmp_path / "a.bin"
    payload = bytes(range(256)) * 3
    atomic_io.write_bytes(target, payload)
    assert target.read_bytes() == payload
    atomic_io.write_bytes(target, bytearray(b"xy"))
    assert target.read_bytes() == b"xy"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin"]


def test_text_keeps_newlines_and_utf8(tmp_path: Path) -> None:
    target = tmp_path / "t.txt"
    atomic_io.write_text(target, "α\r\nβ\n")
    assert target.read_bytes() == "α\r\nβ\n".encode()


def test_json_and_csv(tmp_path: Path) -> None:
    atomic_io.write_json(tmp_path / "x.json", {"b": 1, "a": [1.5, None]})
    assert (tmp_path / "x.json").read_text(encoding="utf-8") == json.dumps({"b": 1, "a": [1.5, None]}, indent=2) + "\n"
    atomic_io.write_csv(tmp_path / "x.csv", pd.DataFrame({"u": [1, 2], "v": ["a", "b"]}))
    assert (tmp_path / "x.csv").read_bytes() == b"u,v\n1,a\n2,b\n"


def test_parents_are_made_only_on_request(tmp_path: Path) -> None:
    deep = tmp_path / "p" / "q" / "f.bin"
    with pytest.raises(FileNotFoundError):
        atomic_io.write_bytes(deep, b"1")
    atomic_io.write_bytes(deep, b"1", parents=True)
    assert deep.read_bytes() == b"1"


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_new_file_mode_is_0666_less_umask(mask: int, tmp_path: Path) -> None:
    old = os.umask(mask)
    try:
        assert atomic_io.umask() == mask
        atomic_io.write_text(tmp_path / "n.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "n.txt").st_mode) == 0o666 & ~mask


def test_rewrite_keeps_existing_mode(tmp_path: Path) -> None:
    target = tmp_path / "k.txt"
    target.write_text("old", encoding="utf-8")
    os.chmod(target, 0o640)
    atomic_io.write_text(target, "new")
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert target.read_text(encoding="utf-8") == "new"


def test_failure_leaves_target_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "keep.txt"
    target.write_text("old", encoding="utf-8")

    class Boom(Exception):
        pass

    def fail(*args: object) -> None:
        raise Boom

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(atomic_io.os, "replace", fail)
        with pytest.raises(Boom):
            atomic_io.write_text(target, "new")
    assert target.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_bad_types_name_the_argument(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="`data` must be bytes"):
        atomic_io.write_bytes(tmp_path / "a", "text")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="`text` must be a str"):
        atomic_io.write_text(tmp_path / "a", b"bytes")  # type: ignore[arg-type]
