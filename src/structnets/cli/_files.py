"""``structnets data`` and ``structnets analyze``: the data files, and the spectrum table of a saved model."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ._common import EXIT_FAILED, EXIT_OK, Handler, _error, _path, _positive_int, _UsageError, _verbosity_options


def add_commands(sub: Any) -> dict[str, Handler]:
    """Add the ``data`` and ``analyze`` commands to the subparsers ``sub``; return their handlers."""
    data = sub.add_parser("data", help="where data files live, and verify them", description="Data files.")
    data.add_argument(
        "action", choices=("path", "verify"), help="path: print the data folder; verify: check every file's SHA-256"
    )
    data.add_argument(
        "--data-dir", type=_path, default=None, metavar="DIR", help="data folder to use instead of the default"
    )
    analyze = sub.add_parser(
        "analyze",
        help="per-layer spectrum table of a saved model",
        description="Print each layer's norms, Schatten quasi-norms and ranks for a saved state dict "
        "(loaded with torch.load(weights_only=True) only).",
    )
    analyze.add_argument(
        "model", type=_path, metavar="MODEL.pt", help="a file saved with torch.save(model.state_dict())"
    )
    analyze.add_argument(
        "--p", dest="ps", type=float, nargs="+", default=[0.5, 1.0, 2.0], help="Schatten exponents (default 0.5 1 2)"
    )
    analyze.add_argument(
        "--rtol", type=float, default=1e-3, help="relative tolerance of the numerical rank (default 1e-3)"
    )
    analyze.add_argument("--top", type=_positive_int, default=5, help="largest singular values to show (default 5)")
    analyze.add_argument(
        "--format",
        dest="table_format",
        choices=("markdown", "csv"),
        default="markdown",
        help="markdown table (default) or CSV with one column per quantity",
    )
    for parser in (data, analyze):
        _verbosity_options(parser, top=False)
    return {"data": _cmd_data, "analyze": _cmd_analyze}


def _cmd_data(args: argparse.Namespace) -> int:
    try:
        from .. import data
    except ImportError as e:
        raise _UsageError(f"structnets.data cannot be imported: {e}") from e
    if args.action == "path":
        if not hasattr(data, "data_dir"):
            raise _UsageError("structnets.data does not provide data_dir()")
        folder = data.data_dir() if args.data_dir is None else data.data_dir(args.data_dir)
        if folder is None:
            raise _UsageError("no data folder: set STRUCTNETS_DATA or pass --data-dir")
        print(folder)
        if not Path(folder).is_dir():
            source = (
                "--data-dir"
                if args.data_dir is not None
                else "STRUCTNETS_DATA"
                if os.environ.get("STRUCTNETS_DATA")
                else "the default cache folder"
            )
            # a file there is not "missing": saying so sent users looking for a folder they could see
            what = "is not a folder" if Path(folder).exists() else "does not exist"
            _error(
                f"the data folder {folder} ({source}) {what}; set STRUCTNETS_DATA to a folder that holds "
                "the data files, or let structnets download them: a missing file is fetched from the official "
                "archive into ~/.cache/structnets the first time a data set is loaded"
            )
            return EXIT_FAILED
        return EXIT_OK
    if not hasattr(data, "verify"):
        raise _UsageError("structnets.data does not provide verify()")
    try:
        statuses = list(data.verify(data_dir=args.data_dir))
    except ValueError as e:  # --data-dir or STRUCTNETS_DATA is not an existing folder
        raise _UsageError(str(e)) from e
    rows = [
        (s.dataset, s.filename, "ok" if s.ok else "FAIL", s.message or "", "-" if s.path is None else str(s.path))
        for s in statuses
    ]
    header = ("dataset", "file", "status", "message", "path")
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    for row in (header, *rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    bad = sum(1 for s in statuses if not s.ok)
    if bad:
        _error(f"{bad} of {len(statuses)} data files failed verification")
        return EXIT_FAILED
    print(f"{len(statuses)} data files verified", file=sys.stderr)
    return EXIT_OK


# -- analyze --------------------------------------------------------------------------------------


def _cmd_analyze(args: argparse.Namespace) -> int:
    import warnings

    from ..analysis import format_spectrum_table, spectrum_table

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            table = spectrum_table(args.model, ps=tuple(args.ps), rtol=args.rtol, top=args.top)
    except (ValueError, TypeError, FileNotFoundError) as e:  # TypeError: a complex layer matrix
        raise _UsageError(str(e)) from e
    for warning in caught:  # e.g. matrix entries of no known layer kind, left out of the table
        print(f"warning: {warning.message}", file=sys.stderr)
    if args.table_format == "csv":
        import pandas as pd

        print(pd.DataFrame([layer.row() for layer in table]).to_csv(index=False), end="")
    else:
        print(format_spectrum_table(table))
    return EXIT_OK
