"""Every headline claim of the five papers, decided from run folders' results databases.

:func:`claims_table` reads finished run folders (one per experiment) and returns one row per
claim: the claim, the paper's value, ours (mean ± spread), the test, the evidence (run folder,
experiment, preset, units) and a verdict from :data:`VERDICTS`. Nothing is typed in by hand:
each claim's ``evaluate`` reads the results table of its experiment. ``structnets claims`` prints
:func:`claims_markdown` of it; ``docs/claims.md`` is its output on our runs.
"""

from __future__ import annotations

from .evidence import (
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
