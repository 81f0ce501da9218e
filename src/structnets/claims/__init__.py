"""Every headline claim of the five papers, decided from run folders' results databases.

:func:`claims_table` reads finished run folders (one per experiment) and returns one row per
claim: the claim, the paper's value, ours (mean ± spread), the test, the evidence (run folder,
experiment, preset, units) and a verdict from :data:`VERDICTS`. Nothing is typed in by hand:
each claim's ``evaluate`` reads the results table of its experiment. ``structnets claims`` prints
:func:`claims_markdown` of it; ``docs/claims.md`` is its output on our runs.

How a verdict is decided. Each claim is decided by one rule of :mod:`structnets.claims.rules`, the
same for every claim of its kind, and its test text states the rule, the tolerance or margin and
whose bound is tested. An upper-bound rate O(·): reproduced unless some cell is significantly
slower (one-sided t-test of the fitted slope, Holm over cells); a slower cell with settled training
refutes, slower cells all optimisation-limited give "not reproduced, optimisation-limited"; steeper
is never a miss. A lower bound: reproduced only by a contrast that could have failed (same-protocol
nets of another class beating the cap, or a certified floor), otherwise "consistent, not tested".
A predicted exponent: two-sided, by TOST against a stated band (± 0.25 unless the claim gives one).
"Not worse" / "keeps accuracy": non-inferiority at a stated margin (0.75 accuracy points, 2.5 % of
the dense RMSE) with the Nadeau–Bengio corrected variance for CV folds; refuted only by a loss
beyond the margin. "A beats B across cells": one pooled stratified test (van Elteren for MSE and
epochs, exact stratified Mantel–Haenszel for successes) plus every cell's direction. A performance
claim: refuted when the interval of the measured ratio lies entirely beyond the claim, hardware
stated. A trained-network claim: the configuration is fixed before the run (never chosen on the
test set) and measured over ≥ 5 seeds; one that beats a published number does so by the one-sided
95 % lower bound of its mean over seeds. A density claim: the error still falls over the upper half
of the grid. Exact constructions: exact inequalities, "exact" meaning within the network's own
float64 rounding bound. **not tested**: no run of the experiment was given, or its run has no unit
that bears on the claim. ``tests/claims/test_rules_simulation.py`` measures each rule's error
rates on simulated results whose right verdict is known. A folder that is missing, unfinished,
unreadable, given twice or holds an experiment no claim uses raises :class:`ClaimsError`
(``structnets claims``: one line, exit 2).
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
