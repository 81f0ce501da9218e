"""OpenBLAS on one thread around the compiled kernel's BLAS/LAPACK calls (:mod:`._fused_certify`)."""

from __future__ import annotations

import contextlib
import ctypes
import threading
from collections.abc import Iterator
from typing import Any

_thread_setters: list[Any] | None = None
# The count is OpenBLAS's global (``openblas_set_num_threads_local`` sets it for every thread): the
# first thread in saves it and the last one out restores it, so that overlapping batches from two
# Python threads cannot leave it at 1
_lock = threading.Lock()
_inside = 0
_saved: list[int] = []


def _openblas_thread_setters() -> list[Any]:
    """``openblas_set_num_threads_local`` of every OpenBLAS loaded (SciPy's, which numba's BLAS calls, and NumPy's)."""
    global _thread_setters
    if _thread_setters is None:
        setters = []
        try:
            from threadpoolctl import ThreadpoolController

            for library in ThreadpoolController().select(user_api="blas").lib_controllers:
                if library.internal_api == "openblas":
                    setter = getattr(ctypes.CDLL(library.filepath), "openblas_set_num_threads_local", None)
                    if setter is not None:
                        setter.restype, setter.argtypes = ctypes.c_int, [ctypes.c_int]
                        setters.append(setter)
        except Exception:  # no threadpoolctl, or a library it cannot inspect or open: BLAS threads as they are
            setters = []
        _thread_setters = setters
    return _thread_setters


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run the kernel's BLAS/LAPACK calls on one thread, then restore the previous count.

    OpenBLAS's worker threads busy-wait: beside a loaded core (another worker, another job) one
    100 × 784 Gram product took 15.7 ms on two threads against 0.29 ms on one (2026-12-07). The
    kernel's matrices are small, and a training step's torch threads are the caller's to choose.
    """
    global _inside, _saved
    setters = _openblas_thread_setters()
    with _lock:
        if _inside == 0:
            _saved = [setter(1) for setter in setters]
        _inside += 1
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0:
                for setter, count in zip(setters, _saved, strict=True):
                    setter(count)


__all__ = ["single_threaded_blas"]
