"""``structnets claims``: every headline claim of the five papers, decided from run folders."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ._common import EXIT_OK, Handler, _UsageError, _verbosity_options


def add_commands(sub: Any) -> dict[str, Handler]:
    """Add the ``claims`` command to the subparsers ``sub``; return its handler."""
    claims = sub.add_parser(
        "claims",
        help="the table of every paper claim, ours beside the paper's",
        description="Decide every headline claim of the five papers from finished run folders (one per experiment; "
        "a claim whose experiment has no run is 'not tested') and print the Markdown table: the claim, the paper's "
        "value, ours, the test, the evidence and the verdict. Only the runs' results.db are read. A folder that is "
        "missing, unfinished, unreadable, given twice or of an experiment no claim uses is an error (one line, exit "
        "status 2).",
    )
    claims.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR")
    claims.add_argument(
        "--out", type=Path, default=None, metavar="FILE", help="also write the table to FILE (Markdown)"
    )
    claims.add_argument("--csv", type=Path, default=None, metavar="FILE", help="also write the table to FILE (CSV)")
    _verbosity_options(claims, top=False)
    return {"claims": _cmd_claims}


def _cmd_claims(args: argparse.Namespace) -> int:
    from ..atomic_io import write_csv, write_text
    from ..claims import ClaimsError, claims_markdown, claims_table

    try:
        table = claims_table(args.run_dirs)
    except ClaimsError as e:
        raise _UsageError(str(e)) from None
    page = claims_markdown(table)
    if args.out is not None:
        write_text(args.out, page + "\n")
    if args.csv is not None:
        write_csv(args.csv, table)
    print(page)  # the result: printed under -q too ("only errors and results")
    return EXIT_OK
