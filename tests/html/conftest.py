"""Fixtures for the HTML pages: the toy experiment registered as ``toy``, run folders made with the runner's
own store, and one headless Chromium for the whole session.

The browser is Debian's ``chromium`` (``.ci/run`` installs it when missing; ``$STRUCTNETS_CHROMIUM``
names another). Where none is installed the browser tests are skipped, saying so; every other test
here runs without one. Screenshots are kept under pytest's temporary folder
(``pytest --basetemp=DIR`` to choose it), in ``screenshots/``, and their paths are printed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TOY_FOLDER = str(Path(__file__).resolve().parents[1] / "runner")
if TOY_FOLDER not in sys.path:
    sys.path.insert(0, TOY_FOLDER)
HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from browser import Browser, find_chromium  # noqa: E402

HOSTILE = "<script>document.title='pwned';document.body.insertAdjacentHTML('beforeend','<p id=pwned>x</p>')</script>"
"""A config string that, were it markup, would retitle the page and add an element."""

HOSTILE_ERROR = "RuntimeError: bad <img id=pwned-img src=x onerror=\"document.title='pwned'\"> & <b>bold</b>"
"""A failed unit's error message that, were it markup, would add an image and retitle the page."""


@pytest.fixture(autouse=True)
def _toy_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """``toy`` in :data:`structnets.experiments.REGISTRY`, and ``toy_experiment`` importable in subprocesses."""
    from structnets import experiments

    monkeypatch.setitem(experiments._MODULES, "toy", "toy_experiment")
    rest = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", TOY_FOLDER + (os.pathsep + rest if rest else ""))
    monkeypatch.delenv("STRUCTNETS_TOY_FAIL_KEYS", raising=False)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """One headless Chromium for every browser test; skips them, saying why, where none is installed."""
    executable = find_chromium()
    if executable is None:
        pytest.skip(
            "no Chromium installed, so the HTML pages are not checked in a browser: install Debian's chromium "
            "(apt-get install -y chromium; .ci/run does) or name one in STRUCTNETS_CHROMIUM"
        )
    with Browser(executable, width=1280, height=800) as b:
        yield b


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder the browser tests keep their screenshots in (under pytest's temporary folder)."""
    return tmp_path_factory.mktemp("screenshots", numbered=False)
