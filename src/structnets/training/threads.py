"""Torch's intra-op thread count: one helper to set it, one context manager that restores it.

Small networks (widths of tens, batches of tens) run fastest with one intra-op thread per process
on a shared machine: a pool wider than the idle cores makes every small kernel wait for a
descheduled thread. Parallelism then comes from worker processes (the runner's ``--jobs``). Every
place in structnets that changes the count goes through :func:`set_threads` or
:func:`torch_threads`, so the rule is stated once (``docs/design.md``, Runner).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from .._validation import check_int

THREAD_ENVIRONMENT: tuple[str, ...] = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
"""Variables that size the OpenMP/MKL/BLAS pools of processes started from this one."""

MAX_THREADS = 4096
"""Largest thread count accepted (far above any machine's cores; guards against typos)."""


def set_threads(threads: int, *, environment: bool = False) -> int:
    """Set torch's intra-op thread count to ``threads`` and return the previous count.

    ``torch.set_num_threads`` is only called when the count changes (re-setting an equal count
    still tears down and rebuilds the OpenMP pool on some builds). Use it once per worker process,
    e.g. in a process-pool initializer; inside a process prefer :func:`torch_threads`, which
    restores the count afterwards.

    Args:
        threads: the new intra-op thread count, an int in [1, 4096].
        environment: also set ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS`` and ``OPENBLAS_NUM_THREADS``
            to ``threads``, so child processes started afterwards size their pools the same way.

    Returns:
        ``torch.get_num_threads()`` as it was before the call.
    """
    threads = check_int("threads", threads, low=1, high=MAX_THREADS)
    if not isinstance(environment, bool):
        raise TypeError(f"`environment` must be a bool, got {environment!r} ({type(environment).__name__})")
    if environment:
        for var in THREAD_ENVIRONMENT:
            os.environ[var] = str(threads)
    previous = torch.get_num_threads()
    if previous != threads:
        torch.set_num_threads(threads)
    return previous


@contextmanager
def torch_threads(threads: int) -> Iterator[int]:
    """Run the body with ``threads`` intra-op threads; restore the previous count on exit.

    The previous count is restored however the body ends (normally, by an exception, or by a
    ``return``/``break`` out of a ``with`` inside a loop). Nested uses restore in order::

        with torch_threads(1):
            fit(model, X, y)        # one thread
        # the count from before the block

    Args:
        threads: the intra-op thread count inside the block, an int in [1, 4096].

    Returns:
        a context manager whose ``as`` value is the previous thread count.
    """
    previous = set_threads(threads)
    try:
        yield previous
    finally:
        if torch.get_num_threads() != previous:
            torch.set_num_threads(previous)
