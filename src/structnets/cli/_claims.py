"""``structnets claims``: every headline claim of the five papers, decided from run folders."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._common import EXIT_OK, Handler, _path, _registry, _UsageError, _verbosity_options


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
    claims.add_argument("run_dirs", type=_path, nargs="+", metavar="RUN_DIR")
    claims.add_argument(
        "--out", type=_path, default=None, metavar="FILE", help="also write the table to FILE (Markdown)"
    )
    claims.add_argument("--csv", type=_path, default=None, metavar="FILE", help="also write the table to FILE (CSV)")
    claims.add_argument(
        "--html",
        type=_path,
        default=None,
        metavar="FILE",
        help="also write the table to FILE as one offline HTML page, each verdict linked to its run's report.html",
    )
    _verbosity_options(claims, top=False)
    return {"claims": _cmd_claims}


def _mark_mixed(table: Any, run_dirs: list[Path]) -> list[str]:
    """Mark the rows of mixed run folders (units stored with params the experiment no longer gives).

    Their ``preset`` cell gets ``; mixed: N units with old params``, and each folder a notice above the
    table and a line on stderr, so a verdict drawn from two versions of the code is never silent.
    """
    from ..runner import changed_units

    notices = []
    for run_dir in run_dirs:
        changed = changed_units(run_dir, registry=_registry())
        if not changed:
            continue
        shown = ", ".join(f"`{k}`" for k in changed[:3]) + (", ..." if len(changed) > 3 else "")
        rows = table["run"] == str(run_dir)
        table.loc[rows, "preset"] = table.loc[rows, "preset"] + f"; mixed: {len(changed)} units with old params"
        notices.append(
            f"> **Mixed run folder** {run_dir}: {len(changed)} unit(s) ({shown}) were stored with params that "
            "differ from what the experiment now gives; its verdicts mix old and new results. Recompute them with "
            f"`structnets run NAME --out {run_dir} --rerun-changed`.\n\n"
        )
        print(
            f"warning: {run_dir} is a mixed run folder ({len(changed)} units with old params); "
            "its claims are marked (mixed)",
            file=sys.stderr,
        )
    return notices


def _check_outputs(outputs: dict[str, Path | None]) -> None:
    """Refuse an output file that cannot be written, before any claim is decided.

    A folder gave a ValueError traceback (exit 1) once the table was built, and a missing folder an
    error naming the writer's temporary file; two options naming one file kept only the last write.
    """
    seen: dict[Path, str] = {}
    for option, path in outputs.items():
        if path is None:
            continue
        if path.is_dir():
            raise _UsageError(f"{option}: {path} is a folder; name the file to write")
        if not path.parent.is_dir():
            raise _UsageError(f"{option}: cannot write {path}: the folder {path.parent} does not exist")
        target = path.resolve()
        if target in seen:
            raise _UsageError(f"{seen[target]} and {option} both name {path}; give each output its own file")
        seen[target] = option


def _write(option: str, path: Path, write: Callable[[], object]) -> None:
    """Run ``write``; an OSError (a read-only folder, a full disk) names the option and the file, not the
    writer's temporary file."""
    try:
        write()
    except OSError as e:
        raise _UsageError(f"{option}: cannot write {path}: {e.strerror or e}") from None


def _cmd_claims(args: argparse.Namespace) -> int:
    from ..atomic_io import write_csv, write_text
    from ..claims import ClaimsError, claims_markdown, claims_table
    from ..runner import MixedRunWarning

    _check_outputs({"--out": args.out, "--csv": args.csv, "--html": args.html})
    try:
        with warnings.catch_warnings():  # a mixed folder is marked below, in the table itself
            warnings.simplefilter("ignore", MixedRunWarning)
            table = claims_table(args.run_dirs)
    except ClaimsError as e:
        raise _UsageError(str(e)) from None
    notices = _mark_mixed(table, args.run_dirs)
    page = "".join(notices) + claims_markdown(table)
    if args.out is not None:
        _write("--out", args.out, lambda: write_text(args.out, page + "\n"))
    if args.csv is not None:
        _write("--csv", args.csv, lambda: write_csv(args.csv, table))
    if args.html is not None:
        from ..html import HtmlUnavailableError, write_claims_page

        try:
            _write("--html", args.html, lambda: write_claims_page(table, args.html, notes=notices))
        except HtmlUnavailableError as e:
            raise _UsageError(str(e)) from None
    print(page)  # the result: printed under -q too ("only errors and results")
    return EXIT_OK
