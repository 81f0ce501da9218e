"""Keep freed memory in the process heap on glibc, so a training loop stops page-faulting its activations.

PyTorch's CPU allocator asks ``malloc`` for every tensor and frees it when the tensor dies. glibc
serves a block above its *mmap threshold* with a fresh ``mmap`` and returns it with ``munmap`` on
free, so the next step's tensor of the same size is mapped again and every page of it faults on
first touch (the kernel zero-fills it). The threshold adapts upwards only up to 32 MiB and only
after such a block is freed, and the heap top above ``M_TRIM_THRESHOLD`` is given back after a
free, so a training step keeps paying: measured on the ``lipschitz-mnist-conv`` network (batch
256, 2 threads, ``resource.getrusage`` over 25–30 steps, 2026-12-06), 126 to 12,027 minor page faults
and 1–27 ms of system time per ≈ 200-ms step with glibc's defaults (it depends on how the dynamic
threshold happened to settle), 0–251 faults and ≈ 1 ms with the settings below;
``tests/runner/test_allocator.py`` checks the effect on 64 MiB tensors.

Fixed thresholds (glibc ``mallopt``, *The GNU C Library Reference Manual*, §3.2.4 "Malloc Tunable
Parameters") keep blocks up to :data:`MMAP_THRESHOLD` on the heap and stop trimming: the process
then holds on to its peak heap instead of giving it back between steps, which a process that
trains one model after another can afford. PyTorch's own performance guide
makes the same point by recommending jemalloc or tcmalloc for CPU training.

This changes where memory comes from, never a computed value: the same operations run on the
same numbers.
"""

from __future__ import annotations

import ctypes
import platform

#: blocks below this many bytes are served from the heap (``M_MMAP_THRESHOLD``)
MMAP_THRESHOLD = 1 << 30
#: free memory at the heap top kept up to this many bytes (``M_TRIM_THRESHOLD``)
TRIM_THRESHOLD = (1 << 31) - 1

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def keep_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds so that freed tensors' memory is reused, not unmapped.

    Process-wide and idempotent; opt-in: call it at the start of a training script. (``structnets
    run`` called it for the timed ``lipschitz-mnist-conv`` run of 2026-12-06; it no longer does: it
    was taken out while a Ctrl-C test failed, a failure later traced to the test itself.)

    Returns:
        True when both settings were applied (Linux with glibc), False elsewhere (nothing changed).
    """
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        # the running program's own symbols, glibc's among them: no library search (find_library
        # would start ldconfig in a subprocess)
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # the mmap threshold first: fixing it also stops glibc from adapting the trim threshold
    applied = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
    return mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1 and applied


__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "keep_freed_memory"]
