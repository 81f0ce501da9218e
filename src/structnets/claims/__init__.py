"""Every headline claim of the five papers, decided from run folders' results databases.

:func:`claims_table` reads finished run folders (one per experiment) and returns one row per
claim: the claim, the paper's value, ours (mean ± spread), the test, the evidence (run folder,
experiment, preset, units) and a verdict from :data:`VERDICTS`. Nothing is typed in by hand:
each claim's ``evaluate`` reads the results table of its experiment. ``structnets claims`` prints
:func:`claims_markdown` of it; ``docs/claims.md`` is its output on our runs.

How a verdict is decided. Each claim has one stated test on its experiment's results table,
printed beside the verdict in the *test* column with its threshold and why that threshold: a
two-sided paired t-test at α = 0.05 (Bonferroni within a family of data sets and ratios), a
bootstrap 95 % interval of a log–log slope against the paper's exponent, an exact inequality
(a certified bound, a construction's error against its computed bound, float64 rounding for
"exact"), or a share of units. **reproduced**: the test supports the claim. **refuted**: the
measurement contradicts it: a significant effect in the opposite direction, a certificate that
fails, an error that does not fall at all where the claim says it converges; an asymptotic rate
or a lower bound is never refuted by a finite grid. **not reproduced**: the test is inconclusive
or misses without contradicting, including every result from a smaller protocol than the
paper's (e.g. fewer rows or folds) where the claim is about the paper's numbers.
**not reproduced, optimisation-limited**: a trained-network claim missed where the experiment
records that training did not settle (fewer than 80 % of a cell's members converged or stopped
gaining), so the miss may be the optimiser's. **not tested**: no run of the experiment was
given, or its run has no unit that bears on the claim. Where an experiment's own report judges
the same claim, the test reuses the report's function or rule, and any deliberate difference is
stated in the test text. A folder that is missing, unfinished, unreadable, given twice or holds
an experiment no claim uses raises :class:`ClaimsError` (``structnets claims``: one line, exit 2).
"""

from __future__ import annotations

from .evidence import (
    CONSISTENT,
    NOT_REPRODUCED,
    NOT_TESTED,
    OPTIMISATION_LIMITED,
    REFUTED,
    REPRODUCED,
    VERDICTS,
    Claim,
    Evidence,
    PairedTest,
    paired_t_test,
)
from .table import CLAIMS, COLUMNS, ClaimsError, Run, claims_markdown, claims_table, load_run

__all__ = [
    "CLAIMS",
    "CONSISTENT",
    "COLUMNS",
    "NOT_REPRODUCED",
    "NOT_TESTED",
    "OPTIMISATION_LIMITED",
    "REFUTED",
    "REPRODUCED",
    "VERDICTS",
    "Claim",
    "ClaimsError",
    "Evidence",
    "PairedTest",
    "Run",
    "claims_markdown",
    "claims_table",
    "load_run",
    "paired_t_test",
]
