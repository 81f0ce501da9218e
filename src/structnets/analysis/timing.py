"""Relative timing that survives a noisy, shared 2-core machine.

Timing A alone then B alone lets drift (other processes, turbo, thermal state) land on one side.
Instead we time A and B in alternating order, pair by pair, and report the median of the per-pair
ratios t_A / t_B with its quartiles: drift slower than one pair cancels in each ratio.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._validation import check_int


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
        target_seconds: sample duration aimed at when ``repeat`` is None.
        before_pair: called, untimed, before each pair (e.g. to wait for the machine to settle).

    Returns:
        a :class:`TimeRatio` of t_a / t_b.
    """
    pairs = check_int("pairs", pairs, low=1)
    warmup = check_int("warmup", warmup, low=0)
    for _ in range(warmup):
        a()
        b()
    if repeat is None:
        one_call = min(_seconds(a, 1), _seconds(b, 1))
        repeat = max(1, min(1000, round(target_seconds / max(one_call, 1e-9))))
    repeat = check_int("repeat", repeat, low=1)

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


def _seconds(fn: Callable[[], object], calls: int) -> float:
    """Mean wall time of ``calls`` back-to-back calls of ``fn``."""
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls
