"""Fixtures for command-line tests: the staged toy experiment, registered as ``toy``, and a per-call log of its units.

The toy (``tests/runner/toy_experiment.py``) lives outside the package: its folder goes on ``sys.path``
(for this process and the worker processes it starts) and on ``PYTHONPATH`` (for ``python -m
structnets.cli`` subprocesses), and every test sees it in the registry the command line hands the runner,
so a run folder of the toy may be reported without ``--experiment``, as one of a paper experiment is.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

TOY_FOLDER = str(Path(__file__).resolve().parents[1] / "runner")
if TOY_FOLDER not in sys.path:
    sys.path.insert(0, TOY_FOLDER)


@pytest.fixture(autouse=True)
def _toy_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """``toy`` in :data:`structnets.experiments.REGISTRY` (this process), and ``toy_experiment`` importable in subprocesses."""
    from structnets import experiments

    monkeypatch.setitem(experiments._MODULES, "toy", "toy_experiment")
    rest = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", TOY_FOLDER + (os.pathsep + rest if rest else ""))


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], Counter[str]]:
    """Make every toy ``run_unit`` call write a file; return a function counting calls per key."""
    log = tmp_path / "calls"
    log.mkdir()
    monkeypatch.setenv("STRUCTNETS_TOY_CALL_LOG", str(log))
    monkeypatch.delenv("STRUCTNETS_TOY_FAIL_KEYS", raising=False)
    return lambda: Counter(p.read_text() for p in log.iterdir())
