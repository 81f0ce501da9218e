"""One torch thread per test here, restored afterwards.

These tests train many tiny models. With several intra-op threads on a loaded 2-core machine
(``pytest -n 2``, other jobs), every small parallel kernel waits for a descheduled OpenMP thread:
a 32-row ``log_softmax`` then takes milliseconds instead of microseconds. The library itself never
changes the thread count; the runner sets it per worker (``structnets.training.set_threads``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from structnets.training import torch_threads


@pytest.fixture(autouse=True)
def _one_torch_thread() -> Iterator[None]:
    with torch_threads(1):
        yield
