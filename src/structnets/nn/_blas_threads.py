"""OpenBLAS on one thread around the compiled kernel's BLAS/LAPACK calls (:mod:`._fused_certify`)."""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator
from typing import Any

_thread_setters: list[Any] | None = None


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
    setters = _openblas_thread_setters()
    previous = [setter(1) for setter in setters]
    try:
        yield
    finally:
        for setter, count in zip(setters, previous, strict=True):
            setter(count)


__all__ = ["single_threaded_blas"]
