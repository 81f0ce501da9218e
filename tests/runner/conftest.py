"""Fixtures for runner tests: the staged toy experiment and a per-call log of its units."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], Counter[str]]:
    """Make every toy ``run_unit`` call write a file; return a function counting calls per key."""
    log = tmp_path / "calls"
    log.mkdir()
    monkeypatch.setenv("STRUCTNETS_TOY_CALL_LOG", str(log))
    monkeypatch.delenv("STRUCTNETS_TOY_FAIL_KEYS", raising=False)
    return lambda: Counter(p.read_text() for p in log.iterdir())
