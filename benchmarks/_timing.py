"""Interleaved A/B timing: the median of per-pair time ratios.

Timing on a shared 2-core machine is noisy: other processes, frequency changes and cache state drift
over seconds. Comparing two medians measured minutes apart mixes that drift into the answer. Here A
and B are timed back to back, in alternating order (A B, B A, A B, ...), so each pair sees nearly
the same machine state, and the statistic is the median of the per-pair ratios ``t_B / t_A``
with its interquartile range.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class RatioStats:
    """Summary of per-pair ratios ``t_candidate / t_baseline``."""

    median: float
    q25: float
    q75: float
    pairs: int
    baseline_seconds: float  # median time of one baseline call
    candidate_seconds: float  # median time of one candidate call
    best_ratio: float  # min candidate time / min baseline time: the least disturbed samples

    @property
    def iqr(self) -> float:
        return self.q75 - self.q25


def _time(fn: Callable[[], object], inner: int) -> float:
    start = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - start) / inner


def calibrate_inner(fn: Callable[[], object], target_seconds: float = 0.01, max_inner: int = 1000) -> int:
    """Number of back-to-back calls so that one timing sample lasts about ``target_seconds``."""
    one = _time(fn, 1)
    return max(1, min(max_inner, round(target_seconds / max(one, 1e-9))))


def interleaved_ratio(
    baseline: Callable[[], object],
    candidate: Callable[[], object],
    *,
    pairs: int = 21,
    warmup: int = 3,
    inner: int | None = None,
    target_seconds: float = 0.01,
    before_pair: Callable[[], object] | None = None,
) -> RatioStats:
    """Time ``candidate`` against ``baseline`` in alternating pairs; return ratio statistics.

    Args:
        baseline, candidate: zero-argument callables doing one unit of work each.
        pairs: number of (baseline, candidate) pairs; order alternates every pair.
        warmup: untimed calls of each before measuring (allocator, kernel selection, caches).
        inner: calls per timing sample; by default calibrated so a sample lasts ``target_seconds``
            (the slower of the two sets it, so both sides use the same count).
        target_seconds: duration of one sample when ``inner`` is None.
        before_pair: called (untimed) before each pair, e.g. to wait for the machine to settle.

    Returns:
        :class:`RatioStats` over the ``pairs`` ratios ``t_candidate / t_baseline``.
    """
    for _ in range(warmup):
        baseline()
        candidate()
    if inner is None:
        inner = min(calibrate_inner(baseline, target_seconds), calibrate_inner(candidate, target_seconds))
    ratios: list[float] = []
    t_base: list[float] = []
    t_cand: list[float] = []
    for i in range(pairs):
        if before_pair is not None:
            before_pair()
        if i % 2 == 0:
            a = _time(baseline, inner)
            b = _time(candidate, inner)
        else:
            b = _time(candidate, inner)
            a = _time(baseline, inner)
        t_base.append(a)
        t_cand.append(b)
        ratios.append(b / a)
    q = statistics.quantiles(ratios, n=4, method="inclusive") if len(ratios) > 1 else [ratios[0]] * 3
    return RatioStats(
        median=statistics.median(ratios),
        q25=q[0],
        q75=q[2],
        pairs=pairs,
        baseline_seconds=statistics.median(t_base),
        candidate_seconds=statistics.median(t_cand),
        best_ratio=min(t_cand) / min(t_base),
    )
