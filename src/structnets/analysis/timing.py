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
    """

    median: float
    q1: float
    q3: float
    pairs: int
    seconds_a: float
    seconds_b: float


def interleaved_ratio(
    a: Callable[[], object],
    b: Callable[[], object],
    *,
    pairs: int = 30,
    warmup: int = 3,
    repeat: int = 1,
) -> TimeRatio:
    """Time ``a`` against ``b`` in interleaved pairs and return the median per-pair ratio.

    Pair i runs (a, b) when i is even and (b, a) when odd, so neither always runs second.

    Args:
        a, b: zero-argument callables (e.g. a forward pass); their results are discarded.
        pairs: number of timed pairs (≥ 1).
        warmup: untimed calls of each before timing (allocator, kernel selection, caches).
        repeat: calls per timing sample, for very short callables.

    Returns:
        a :class:`TimeRatio` of t_a / t_b.
    """
    pairs = check_int("pairs", pairs, low=1)
    warmup = check_int("warmup", warmup, low=0)
    repeat = check_int("repeat", repeat, low=1)
    for _ in range(warmup):
        a()
        b()

    def timed(fn: Callable[[], object]) -> float:
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        return (time.perf_counter() - start) / repeat

    times_a = np.empty(pairs)
    times_b = np.empty(pairs)
    for i in range(pairs):
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
    )
