"""What a claim is, what evidence for it looks like, and the statistics the verdicts use.

A claim of one of the five papers is checked against the results table of one experiment run.
Each claim has an ``evaluate(results, config)`` function that reads that table alone (never a
typed-in number of ours) and returns :class:`Evidence`: our value as mean ± spread, the test it
applied and a verdict from :data:`VERDICTS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

REPRODUCED = "reproduced"
REFUTED = "refuted"
NOT_REPRODUCED = "not reproduced"
OPTIMISATION_LIMITED = "not reproduced, optimisation-limited"
CONSISTENT = "consistent, not tested"
NOT_TESTED = "not tested"
VERDICTS: tuple[str, ...] = (REPRODUCED, REFUTED, NOT_REPRODUCED, OPTIMISATION_LIMITED, CONSISTENT, NOT_TESTED)
"""The verdicts, strongest first.

* reproduced: our measurement supports the claim, by the test named beside it.
* refuted: our measurement contradicts the claim, by that test (e.g. a significant effect in the
  opposite direction, or a certified bound that fails).
* not reproduced: the test is inconclusive or misses the claim without contradicting it.
* not reproduced, optimisation-limited: as above, and our training did not settle, so the miss may
  be the optimiser's rather than the claim's.
* consistent, not tested: a lower bound whose measurements agree with it, where no contrast that
  could have failed was available (:func:`structnets.claims.rules.lower_bound`).
* not tested: no run of the experiment was given, or the run has no unit that bears on the claim.
"""


@dataclass(frozen=True)
class Evidence:
    """What a results table says about one claim.

    Attributes:
        ours: our value, e.g. ``"94.9 ± 1.2 (10 pairs)"``.
        verdict: one of :data:`VERDICTS`.
        test: the test or criterion applied, e.g. ``"paired t = 0.41, p = 0.69"``.
        units: how many result rows (units) the evidence uses.
        unit_keys: the ``key`` column of the result rows the evaluator used, in the order it used
            them (at most ``units`` of them, no repeats); the claims page links each to its row
            (``report.html#unit-<key>``) of the run's report. Empty (the default) when the evaluator
            does not name them; a list is stored as a tuple.
    """

    ours: str
    verdict: str
    test: str
    units: int
    unit_keys: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"`verdict` must be one of {', '.join(VERDICTS)}, got {self.verdict!r}")
        if self.units < 0:
            raise ValueError(f"`units` must be ≥ 0, got {self.units}")
        if isinstance(self.unit_keys, (str, bytes)) or not isinstance(self.unit_keys, (tuple, list)):
            raise TypeError(f"`unit_keys` must be a tuple of result keys (str), got {self.unit_keys!r:.80}")
        keys = tuple(self.unit_keys)
        for key in keys:
            if not isinstance(key, str) or not key:
                raise TypeError(f"`unit_keys` must hold non-empty strings (result keys), got {key!r:.80}")
        if len(set(keys)) != len(keys):
            repeated = next(k for k in keys if keys.count(k) > 1)
            raise ValueError(f"`unit_keys` must not repeat a key, got {repeated!r} more than once")
        if len(keys) > self.units:
            raise ValueError(f"`unit_keys` must name at most `units` = {self.units} rows, got {len(keys)} keys")
        object.__setattr__(self, "unit_keys", keys)


Evaluate = Callable[[pd.DataFrame, Any], Evidence]
"""``(results, config) -> Evidence``: ``config`` is the run's typed config (a dataclass) or ``None``."""


@dataclass(frozen=True)
class Claim:
    """One headline claim of a paper, and how a results table decides it.

    Attributes:
        id: stable identifier, ``"<paper number>-<slug>"``, e.g. ``"000-uci-iris"``.
        paper: the paper's short name, e.g. ``"low-rank Swish (000)"``.
        statement: the claim in one sentence, as the paper makes it.
        paper_value: the paper's number or statement of result.
        experiment: the registered experiment whose results decide it.
        evaluate: ``(results, config) -> Evidence``; ``config`` is the run's stored config.
    """

    id: str
    paper: str
    statement: str
    paper_value: str
    experiment: str
    evaluate: Evaluate


def not_tested(why: str) -> Evidence:
    """Evidence for a claim the run has no unit for; ``why`` says what is missing."""
    return Evidence(ours="—", verdict=NOT_TESTED, test=why, units=0)


def mean_spread(values: np.ndarray | pd.Series, *, scale: float = 1.0, digits: int = 3) -> str:
    """``"mean ± sd (n)"`` of finite values (sample sd, ddof = 1), or ``"—"`` when there are none."""
    array = np.asarray(values, dtype=float) * scale
    array = array[np.isfinite(array)]
    if array.size == 0:
        return "—"
    sd = float(array.std(ddof=1)) if array.size > 1 else 0.0
    return f"{array.mean():.{digits}f} ± {sd:.{digits}f} (n = {array.size})"


@dataclass(frozen=True)
class PairedTest:
    """A two-sided paired t-test of a − b: statistic, p-value, number of pairs and mean difference."""

    t: float
    p: float
    pairs: int
    mean_difference: float

    def significant(self, alpha: float = 0.05) -> bool:
        return self.pairs >= 2 and math.isfinite(self.p) and self.p < alpha

    def describe(self) -> str:
        if self.pairs < 2:
            return f"paired t-test needs ≥ 2 pairs, have {self.pairs}"
        return f"paired t = {self.t:.2f}, p = {self.p:.3g}, {self.pairs} pairs"


def _sample(value: Any, name: str) -> np.ndarray:
    """``value`` as a 1-D float64 array of finite reals, or a ValueError/TypeError naming ``name``."""
    if value is None or isinstance(value, (str, bytes)):
        raise TypeError(f"`{name}` must be a 1-D array of real numbers, got {value!r:.80}")
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as e:  # ragged nested sequences
        raise TypeError(f"`{name}` must be a 1-D array of real numbers, got {value!r:.80} ({e})") from None
    if raw.dtype.kind not in "biufO":
        raise TypeError(f"`{name}` must hold real numbers, got an array of dtype {raw.dtype}: {value!r:.80}")
    try:
        array = raw.astype(float)
    except (TypeError, ValueError) as e:
        raise TypeError(f"`{name}` must hold real numbers, got {value!r:.80} ({e})") from None
    if array.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D (one value per pair), got shape {array.shape}")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(f"`{name}` must be finite, got {array[bad[0]]} at index {int(bad[0])}")
    return array


def paired_t_test(a: np.ndarray, b: np.ndarray) -> PairedTest:
    """Two-sided paired t-test of ``a − b`` (scipy's ``ttest_rel``); identical samples give t = 0, p = 1.

    With ``d = a − b`` over ``n`` pairs, ``t = mean(d) / (sd(d) / √n)`` (sample sd, ddof = 1) and
    ``p = 2 · P(T_{n−1} > |t|)``. A constant nonzero difference gives ``t = ±∞``, p = 0; fewer than
    two pairs give ``t = p = NaN``.

    Args:
        a: one finite value per pair (1-D).
        b: the paired values, the same shape as ``a``.

    Returns:
        :class:`PairedTest` (t, p, number of pairs, mean of ``a − b``).

    Raises:
        TypeError: ``a`` or ``b`` is not an array of real numbers.
        ValueError: ``a`` or ``b`` is not 1-D, holds NaN/inf, or their shapes differ.
    """
    from scipy import stats

    a, b = _sample(a, "a"), _sample(b, "b")
    if a.shape != b.shape:
        raise ValueError(f"`a` and `b` must have one shape, got {a.shape} and {b.shape}")
    n = int(a.size)
    if n < 2:
        return PairedTest(math.nan, math.nan, n, math.nan if n == 0 else float(a[0] - b[0]))
    difference = a - b
    if np.all(difference == difference[0]):
        # A constant difference has zero variance: t is ±∞ unless the difference is 0.
        if difference[0] == 0:
            return PairedTest(0.0, 1.0, n, 0.0)
        return PairedTest(math.copysign(math.inf, float(difference[0])), 0.0, n, float(difference[0]))
    result = stats.ttest_rel(a, b)
    return PairedTest(float(result.statistic), float(result.pvalue), n, float(difference.mean()))


def keys_of(used: pd.DataFrame) -> tuple[str, ...]:
    """The ``key`` column of the result rows ``used``, for :attr:`Evidence.unit_keys` (in row order,
    repeats dropped; ``()`` when the frame has no ``key`` column, as a synthetic table may not)."""
    if "key" not in used.columns:
        return ()
    return tuple(dict.fromkeys(str(key) for key in used["key"] if isinstance(key, str) and key))


def rows(results: pd.DataFrame, **equal: Any) -> pd.DataFrame:
    """The rows of ``results`` whose columns equal the given values (a missing column: no rows)."""
    mask = pd.Series(True, index=results.index)
    for column, value in equal.items():
        if column not in results.columns:
            return results.iloc[0:0]
        mask &= results[column] == value
    return results[mask]
