"""Locating, verifying and downloading data files (never over the network)."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import os
import urllib.error
import zipfile
from pathlib import Path

import numpy as np
import pytest

import structnets.data as data
from structnets import atomic_io
from structnets.data import DataFileError, files

IRIS_SHA = "0fed2a99db77ec533a62dc66894d3ec6df3b58b6a8f3cf4a6b47e4086b7f97dc"


def _sha(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for name, content in members.items():
            bundle.writestr(name, content)
    return path


def _point(monkeypatch: pytest.MonkeyPatch, dataset: str, *urls: str) -> None:
    """Make every file of ``dataset`` download from ``urls`` instead of the official archive."""
    specs = tuple(dataclasses.replace(spec, urls=urls) for spec in files.FILES[dataset])
    monkeypatch.setitem(files.FILES, dataset, specs)


def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No shared folder: only the (empty) cache is searched."""
    monkeypatch.delenv(files.ENV_VAR, raising=False)


# --- verification of local copies -------------------------------------------------------------


def test_verify_reports_every_shared_file_ok(shared_data: Path) -> None:
    statuses = data.verify()
    assert [(s.dataset, s.filename) for s in statuses] == [
        (spec.dataset, spec.filename) for specs in files.FILES.values() for spec in specs
    ]
    assert len(statuses) == 14 and {s.dataset for s in statuses} == set(data.names())
    for status in statuses:
        assert status.ok, status.message
        assert status.actual_sha256 == status.expected_sha256
        assert status.path is not None and shared_data in status.path.parents


def test_plain_and_gzipped_copies_both_verify(tmp_path: Path, content_of) -> None:
    content = content_of("bezdekIris.data")
    (tmp_path / "bezdekIris.data").write_bytes(content)
    plain = data.load("iris", data_dir=tmp_path)
    packed_dir = tmp_path / "packed"
    packed_dir.mkdir()
    (packed_dir / "bezdekIris.data.gz").write_bytes(gzip.compress(content, mtime=0))
    packed = data.load("iris", data_dir=packed_dir)
    np.testing.assert_array_equal(plain.X, packed.X)
    status = next(s for s in data.verify(tmp_path) if s.filename == "bezdekIris.data")
    assert status.ok and status.path == tmp_path / "bezdekIris.data"


def test_altered_copy_is_an_error_naming_file_and_both_digests(tmp_path: Path, content_of) -> None:
    content = content_of("bezdekIris.data")
    altered = content.replace(b"5.1,3.5,1.4,0.2", b"5.1,3.5,1.4,0.3", 1)
    assert altered != content
    path = tmp_path / "bezdekIris.data.gz"
    path.write_bytes(gzip.compress(altered))
    # the data_dir copy comes before STRUCTNETS_DATA's good copy, and a bad copy is never skipped
    with pytest.raises(DataFileError) as caught:
        data.load("iris", data_dir=tmp_path)
    message = str(caught.value)
    assert "bezdekIris.data" in message and str(path) in message
    assert IRIS_SHA in message and _sha(altered) in message
    assert caught.value.expected_sha256 == IRIS_SHA and caught.value.actual_sha256 == _sha(altered)
    assert isinstance(caught.value, ValueError)
    status = next(s for s in data.verify(tmp_path) if s.filename == "bezdekIris.data")
    assert not status.ok and status.actual_sha256 == _sha(altered) and status.path == path


def test_truncated_gzip_is_an_error_naming_file(tmp_path: Path, shared_data: Path) -> None:
    source = shared_data / "adult.test.gz"
    if not source.is_file():
        pytest.skip("adult.test.gz is not in the shared folder")
    stored = source.read_bytes()
    (tmp_path / "adult.test.gz").write_bytes(stored[: len(stored) // 2])
    with pytest.raises(DataFileError, match=r"adult\.test.*truncated") as caught:
        data.load("adult", data_dir=tmp_path)
    assert caught.value.filename == "adult.test"
    status = next(s for s in data.verify(tmp_path) if s.filename == "adult.test")
    assert not status.ok and status.actual_sha256 is None and "adult.test" in status.message


def test_missing_file_with_failing_download_names_file(monkeypatch, tmp_path: Path, cache) -> None:
    _offline(monkeypatch)

    def refuse(url: str, *, timeout: float = 120.0) -> bytes:
        raise urllib.error.URLError("network is unreachable")

    monkeypatch.setattr(files, "fetch_url", refuse)
    with pytest.raises(DataFileError, match=r"abalone\.data.*network is unreachable") as caught:
        data.load("abalone", data_dir=tmp_path)
    assert caught.value.filename == "abalone.data"
    assert "https://archive.ics.uci.edu/static/public/1/abalone.zip" in str(caught.value)
    assert not cache.exists() or not any(cache.rglob("*"))


def test_download_disabled_never_fetches(monkeypatch, tmp_path: Path) -> None:
    _offline(monkeypatch)
    monkeypatch.setattr(files, "fetch_url", lambda *a, **k: pytest.fail("fetch_url was called"))
    with pytest.raises(DataFileError, match=r"winequality-red\.csv.*downloading is disabled"):
        data.load("wine-quality", data_dir=tmp_path, download=False)


def test_verify_without_files_reports_each_missing(monkeypatch) -> None:
    _offline(monkeypatch)
    statuses = data.verify()
    assert len(statuses) == 14
    for status in statuses:
        assert not status.ok and status.path is None and status.actual_sha256 is None
        assert status.message.startswith("missing") and "http" in status.message


# --- download ---------------------------------------------------------------------------------


def test_download_from_file_url_writes_atomically_and_verifies(
    monkeypatch, tmp_path: Path, cache: Path, content_of
) -> None:
    _offline(monkeypatch)
    content = content_of("bezdekIris.data")
    archive = _zip(tmp_path / "iris.zip", {"iris.names": b"about iris\n", "bezdekIris.data": content})
    _point(monkeypatch, "iris", archive.as_uri())
    replaced: list[tuple[Path, Path]] = []
    real_replace = os.replace

    def spy(source, target) -> None:
        source, target = Path(source), Path(target)
        # at the moment of the rename the temporary file is complete and beside the target
        assert source.parent == target.parent and source != target
        assert source.read_bytes() == content and not target.exists()
        replaced.append((source, target))
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", spy)
    ds = data.load("iris")
    target = cache / "bezdekIris.data"
    assert replaced and replaced[0][1] == target
    assert target.read_bytes() == content
    assert sorted(p.name for p in cache.iterdir()) == ["bezdekIris.data"]  # no temporary left
    # as open() would create it (mkstemp alone gives 0o600)
    assert target.stat().st_mode & 0o7777 == 0o666 & ~atomic_io.umask()
    assert ds.X.shape == (150, 4) and np.bincount(ds.y).tolist() == [50, 50, 50]
    # the second load uses the cache and does not fetch again
    monkeypatch.setattr(files, "fetch_url", lambda *a, **k: pytest.fail("fetched twice"))
    again = data.load("iris")
    np.testing.assert_array_equal(again.X, ds.X)
    assert next(s for s in data.verify() if s.filename == "bezdekIris.data").ok


def test_download_with_wrong_content_writes_nothing(monkeypatch, tmp_path, cache, content_of) -> None:
    _offline(monkeypatch)
    altered = content_of("bezdekIris.data").replace(b"Iris-setosa", b"Iris-setosb", 1)
    archive = _zip(tmp_path / "iris.zip", {"bezdekIris.data": altered})
    _point(monkeypatch, "iris", archive.as_uri())
    with pytest.raises(DataFileError) as caught:
        data.load("iris")
    message = str(caught.value)
    assert "bezdekIris.data" in message and IRIS_SHA in message and _sha(altered) in message
    assert archive.as_uri() in message
    assert not cache.exists() or not any(cache.rglob("*"))


def test_download_falls_back_to_the_next_mirror(monkeypatch, tmp_path, cache, content_of) -> None:
    _offline(monkeypatch)
    archive = _zip(tmp_path / "iris.zip", {"bezdekIris.data": content_of("bezdekIris.data")})
    missing = (tmp_path / "absent.zip").as_uri()
    _point(monkeypatch, "iris", missing, archive.as_uri())
    assert data.load("iris").X.shape == (150, 4)
    assert (cache / "bezdekIris.data").is_file()


def test_download_fetches_a_shared_archive_once(monkeypatch, tmp_path, cache, content_of) -> None:
    _offline(monkeypatch)
    archive = _zip(
        tmp_path / "adult.zip",
        {"adult.data": content_of("adult.data"), "adult.test": content_of("adult.test")},
    )
    _point(monkeypatch, "adult", archive.as_uri())
    calls: list[str] = []
    fetch = files.fetch_url

    def counting(url: str, *, timeout: float = 120.0) -> bytes:
        calls.append(url)
        return fetch(url, timeout=timeout)

    monkeypatch.setattr(files, "fetch_url", counting)
    ds = data.load("adult")
    assert calls == [archive.as_uri()]
    assert ds.X.shape == (48842, 108)
    assert sorted(p.name for p in cache.iterdir()) == ["adult.data", "adult.test"]


def test_download_extracts_from_a_nested_zip(monkeypatch, tmp_path, cache, content_of) -> None:
    _offline(monkeypatch)
    content = content_of("bank-full.csv")
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("bank-names.txt", b"names\n")
        bundle.writestr("bank-full.csv", content)
    archive = _zip(
        tmp_path / "bank+marketing.zip",
        {"bank-additional.zip": b"PK", "bank.zip": inner.getvalue()},
    )
    _point(monkeypatch, "bank-marketing", archive.as_uri())
    paths = files.resolve("bank-marketing")
    assert paths == [cache / "bank-full.csv"] and paths[0].read_bytes() == content


def test_download_converts_the_real_estate_workbook(monkeypatch, tmp_path, cache, shared_data) -> None:
    workbook = shared_data / "real_estate_valuation_data_set.xlsx"
    if not workbook.is_file():
        pytest.skip("the original workbook is not in the shared folder")
    expected = data.load("real-estate")  # from the derived CSV in the shared folder
    _offline(monkeypatch)
    archive = _zip(tmp_path / "real+estate.zip", {"Real estate valuation data set.xlsx": workbook.read_bytes()})
    _point(monkeypatch, "real-estate", archive.as_uri())
    downloaded = data.load("real-estate")
    # the CSV made from the workbook has the pinned digest of the derived CSV
    written = (cache / "real_estate_valuation.csv").read_bytes()
    assert _sha(written) == files.FILES["real-estate"][0].sha256
    np.testing.assert_array_equal(downloaded.X, expected.X)
    np.testing.assert_array_equal(downloaded.y, expected.y)


def test_mnist_download_keeps_the_gzip(monkeypatch, tmp_path, cache, shared_data) -> None:
    mirror = shared_data / "mnist"
    names = [Path(spec.filename).name for spec in files.FILES["mnist"]]
    if not all((mirror / f"{name}.gz").is_file() for name in names):
        pytest.skip("the gzipped MNIST files are not in the shared folder")
    _offline(monkeypatch)
    _point_mnist = tuple(
        dataclasses.replace(spec, urls=((mirror / f"{Path(spec.filename).name}.gz").as_uri(),))
        for spec in files.FILES["mnist"]
    )
    monkeypatch.setitem(files.FILES, "mnist", _point_mnist)
    paths = files.resolve("mnist")
    assert paths == [cache / "mnist" / f"{name}.gz" for name in names]
    for path, name in zip(paths, names):
        assert path.read_bytes() == (mirror / f"{name}.gz").read_bytes()


# --- where files are looked for ---------------------------------------------------------------


def test_data_dir_precedence(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv(files.ENV_VAR, str(tmp_path / "env"))
    assert data.data_dir(tmp_path / "arg") == tmp_path / "arg"
    assert data.data_dir() == tmp_path / "env"
    monkeypatch.delenv(files.ENV_VAR)
    assert data.data_dir() == tmp_path / "home" / ".cache" / "structnets" == data.cache_dir()


def test_nonexistent_folders_are_errors(monkeypatch, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"`data_dir` must be an existing folder.*nowhere"):
        data.load("iris", data_dir=tmp_path / "nowhere")
    with pytest.raises(TypeError, match=r"`data_dir` must be a str or path, got 3"):
        data.load("iris", data_dir=3)
    monkeypatch.setenv(files.ENV_VAR, str(tmp_path / "typo"))
    with pytest.raises(ValueError, match=r"STRUCTNETS_DATA must name an existing folder.*typo"):
        data.verify()
