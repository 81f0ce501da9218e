"""Relative timing that survives a noisy, shared 2-core machine.

Timing A alone then B alone lets drift (other processes, turbo, thermal state) land on one side.
Instead we time A and B in alternating order, pair by pair, and report the median of the per-pair
ratios t_A / t_B with its quartiles: drift slower than one pair cancels in each ratio.

CUDA kernels run asynchronously: a timed call returns when its kernels are queued, not done. Every
timing here therefore synchronises the GPU before starting the clock and before reading it
(:func:`synchronize`), so a sample is the time the work took on the device.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._validation import check_int, check_real


@dataclass(frozen=True)
class TimeRatio:
    """Summary of per-pair time ratios t_A / t_B.

    Attributes:
        median: median of the per-pair ratios (the headline number).
        q1, q3: first and third quartiles of the ratios.
        pairs: number of pairs timed.
        seconds_a, seconds_b: median single-call times of A and of B.
        best: min t_a / min t_b, the ratio of the least disturbed samples.
        repeat: calls per timing sample.
    """

    median: float
    q1: float
    q3: float
    pairs: int
    seconds_a: float
    seconds_b: float
    best: float = float("nan")
    repeat: int = 1


def interleaved_ratio(
    a: Callable[[], object],
    b: Callable[[], object],
    *,
    pairs: int = 30,
    warmup: int = 3,
    repeat: int | None = 1,
    target_seconds: float = 0.01,
    before_pair: Callable[[], object] | None = None,
) -> TimeRatio:
    """Time ``a`` against ``b`` in interleaved pairs and return the median per-pair ratio.

    Pair i runs (a, b) when i is even and (b, a) when odd, so neither always runs second.

    Args:
        a, b: zero-argument callables (e.g. a forward pass); their results are discarded.
        pairs: number of timed pairs (≥ 1).
        warmup: untimed calls of each before timing (allocator, kernel selection, caches).
        repeat: calls per timing sample, for very short callables; None calibrates it so one
            sample of the faster callable lasts about ``target_seconds``.
        target_seconds: sample duration aimed at when ``repeat`` is None (finite, > 0).
        before_pair: called, untimed, before each pair (e.g. to wait for the machine to settle).

    Returns:
        a :class:`TimeRatio` of t_a / t_b.
    """
    for name, fn in (("a", a), ("b", b), ("before_pair", before_pair)):
        if not callable(fn) and not (name == "before_pair" and fn is None):
            raise TypeError(f"`{name}` must be a zero-argument callable, got {type(fn).__name__}")
    pairs = check_int("pairs", pairs, low=1)
    warmup = check_int("warmup", warmup, low=0)
    # checked before any call: a NaN or infinite target reached round() and raised there
    if repeat is None:
        target_seconds = check_real("target_seconds", target_seconds, low=0.0, low_open=True)
    else:
        repeat = check_int("repeat", repeat, low=1)
    for _ in range(warmup):
        a()
        b()
    if repeat is None:
        one_call = min(_seconds(a, 1), _seconds(b, 1))
        repeat = max(1, min(1000, round(target_seconds / max(one_call, 1e-9))))

    def timed(fn: Callable[[], object]) -> float:
        return _seconds(fn, repeat)

    times_a = np.empty(pairs)
    times_b = np.empty(pairs)
    for i in range(pairs):
        if before_pair is not None:
            before_pair()
        if i % 2 == 0:
            times_a[i] = timed(a)
            times_b[i] = timed(b)
        else:
            times_b[i] = timed(b)
            times_a[i] = timed(a)
    ratios = times_a / times_b
    q1, median, q3 = np.quantile(ratios, [0.25, 0.5, 0.75])
    return TimeRatio(
        median=float(median),
        q1=float(q1),
        q3=float(q3),
        pairs=pairs,
        seconds_a=float(np.median(times_a)),
        seconds_b=float(np.median(times_b)),
        best=float(times_a.min() / times_b.min()),
        repeat=repeat,
    )


def synchronize() -> None:
    """Wait for every queued CUDA kernel, when torch has initialised CUDA in this process.

    A no-op on CPU-only runs: torch is not imported for it, and CUDA is not initialised by it.
    """
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def _seconds(fn: Callable[[], object], calls: int) -> float:
    """Mean wall time of ``calls`` back-to-back calls of ``fn`` (GPU work included: synchronised)."""
    synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    synchronize()
    return (time.perf_counter() - start) / calls


def _cpu_ticks() -> tuple[int, int] | None:
    """(total, idle) jiffies of all CPUs from /proc/stat; None where unavailable."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return sum(fields), fields[3] + fields[4]


def other_process_load() -> Callable[[], float | None]:
    """Start measuring the share of all CPUs used by *other* processes; call the result to read it.

    On a small shared machine a timing is only evidence when nothing else ran: benchmarks report
    this share beside every row. Reads /proc/stat (Linux); the reader returns None elsewhere.

    Returns:
        a zero-argument callable giving the share in [0, 1] since the start (or None).
    """
    start, own_start = _cpu_ticks(), sum(os.times()[:2])

    def stop() -> float | None:
        end = _cpu_ticks()
        if start is None or end is None:
            return None
        total, idle = end[0] - start[0], end[1] - start[1]
        own = (sum(os.times()[:2]) - own_start) * os.sysconf("SC_CLK_TCK")
        return max(0.0, (total - idle - own) / max(total, 1))

    return stop


def settle_before_pair(max_wait: float, threshold: float = 0.1) -> Callable[[], None] | None:
    """Return a ``before_pair`` hook that waits (up to ``max_wait`` s) for a quiet 0.2 s window.

    Args:
        max_wait: longest wait in seconds (finite); ≤ 0 disables the hook (returns None).
        threshold: other processes' CPU share (≥ 0) below which the window counts as quiet.

    Returns:
        the hook for :func:`interleaved_ratio`, or None (disabled, or no /proc/stat).
    """
    # a NaN wait or threshold compared False everywhere: the hook then never waited, or always the longest
    max_wait = check_real("max_wait", max_wait)
    threshold = check_real("threshold", threshold, low=0.0)
    if max_wait <= 0 or _cpu_ticks() is None:
        return None

    def settle() -> None:
        deadline = time.perf_counter() + max_wait
        while time.perf_counter() < deadline:
            load = other_process_load()
            time.sleep(0.2)
            if (load() or 0.0) < threshold:
                return

    return settle
