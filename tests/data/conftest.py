"""Fixtures for the data tests: the verified shared files, an isolated cache, and no network.

The real files come from ``$STRUCTNETS_DATA`` (the Makefile and ``.ci/run`` set it) or, when
that is unset, from ``../shared/data`` beside the repository. Tests that need them are skipped,
saying why, when neither exists. Every test gets its own ``HOME`` (so the cache
``~/.cache/structnets`` is a fresh temporary folder) and a ``fetch_url`` that fails the test on
any URL other than ``file://``.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from structnets.data import files

REPO_ROOT = Path(__file__).resolve().parents[2]


def _find_shared() -> Path | None:
    env = os.environ.get(files.ENV_VAR)
    candidates = [Path(env).expanduser()] if env else []
    candidates.append(REPO_ROOT.parent / "shared" / "data")
    for candidate in candidates:
        if candidate.is_dir():
            return candidate.resolve()
    return None


SHARED = _find_shared()
_REAL_FETCH = files.fetch_url


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    if SHARED is None:
        monkeypatch.delenv(files.ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(files.ENV_VAR, str(SHARED))

    def offline_fetch(url: str, *, timeout: float = 120.0) -> bytes:
        if not url.startswith("file://"):
            pytest.fail(f"a test tried to download {url}")
        return _REAL_FETCH(url, timeout=timeout)

    monkeypatch.setattr(files, "fetch_url", offline_fetch)


@pytest.fixture
def shared_data() -> Path:
    """The folder of verified data files; skips the test when there is none."""
    if SHARED is None:
        pytest.skip(
            f"no data files: set {files.ENV_VAR} or put the verified files in {REPO_ROOT.parent / 'shared' / 'data'}"
        )
    return SHARED


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """The (not yet existing) cache folder of this test's isolated HOME."""
    return tmp_path / "home" / ".cache" / "structnets"


@pytest.fixture
def content_of(shared_data: Path):
    """A function giving the decompressed content of a shared file (stored plain or ``.gz``)."""

    def read(filename: str) -> bytes:
        plain = shared_data / filename
        if plain.is_file():
            return plain.read_bytes()
        packed = shared_data / f"{filename}.gz"
        if not packed.is_file():
            pytest.skip(f"{filename} is not in {shared_data}")
        return gzip.decompress(packed.read_bytes())

    return read
