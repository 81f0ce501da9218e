"""Messages for missing data: say where structnets looked and how to get the file."""

from __future__ import annotations

import urllib.error
from pathlib import Path

import pytest

from structnets import data
from structnets.cli import main
from structnets.data import files
from structnets.data.files import DataFileError


def test_a_missing_file_names_every_place_looked_and_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    monkeypatch.delenv(files.ENV_VAR, raising=False)
    with pytest.raises(DataFileError) as caught:
        data.load("iris", download=False)
    message = str(caught.value)
    assert "no existing folder" not in message
    assert f"looked in {files.ENV_VAR} (not set), then the cache {cache} (does not exist yet)" in message
    assert "https://archive.ics.uci.edu/static/public/53/iris.zip" in message
    assert f"point {files.ENV_VAR} at it" in message and "structnets data verify" in message


def test_a_failed_download_names_the_folders_and_the_url(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cache: Path
) -> None:
    def refuse(url: str, *, timeout: float = 120.0) -> bytes:
        raise urllib.error.URLError("network is unreachable")

    monkeypatch.setattr(files, "fetch_url", refuse)
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv(files.ENV_VAR, str(empty))
    with pytest.raises(DataFileError) as caught:
        data.load("abalone")
    message = str(caught.value)
    assert f"looked in {files.ENV_VAR}={empty}, then the cache {cache}" in message
    assert f"Download it yourself from https://archive.ics.uci.edu/static/public/1/abalone.zip into {cache}" in message


def test_verify_says_where_it_looked(monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    monkeypatch.delenv(files.ENV_VAR, raising=False)
    status = data.verify()[0]
    assert not status.ok
    assert status.message.startswith(f"missing: looked in {files.ENV_VAR} (not set), then the cache {cache}")


def test_download_must_be_a_bool(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"`download` must be a bool, got 'False' \(str\)"):
        data.load("iris", data_dir=tmp_path, download="False")  # type: ignore[arg-type]


def test_data_path_of_a_missing_folder_exits_nonzero_and_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(files.ENV_VAR, raising=False)
    assert main(["data", "path"]) == 1
    captured = capsys.readouterr()
    assert captured.out == f"{cache}\n"
    (line,) = captured.err.splitlines()
    assert line.startswith(f"error: the data folder {cache} (the default cache folder) does not exist;")
    assert files.ENV_VAR in line and "download" in line

    monkeypatch.setenv(files.ENV_VAR, str(tmp_path / "typo"))
    assert main(["data", "path"]) == 1
    assert f"{tmp_path / 'typo'} (STRUCTNETS_DATA) does not exist" in capsys.readouterr().err

    monkeypatch.setenv(files.ENV_VAR, str(tmp_path))
    assert main(["data", "path"]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"{tmp_path}\n" and captured.err == ""
