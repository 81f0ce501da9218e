"""``structnets report`` and ``structnets compare``: what is in run folders, read from their ``results.db``."""

from __future__ import annotations

import argparse
from typing import Any

from ._common import EXIT_OK, Handler, _note, _path, _registry, _UsageError, _verbosity_options


def add_commands(sub: Any) -> dict[str, Handler]:
    """Add the ``report`` and ``compare`` commands to the subparsers ``sub``; return their handlers."""
    rep = sub.add_parser(
        "report",
        help="regenerate a run's table and figures",
        description="Regenerate results.csv, table.md and figures/ of a run folder from its results.db, and print the table.",
    )
    rep.add_argument("run_dir", type=_path, metavar="RUN_DIR")
    rep.add_argument(
        "--experiment",
        default=None,
        metavar="NAME|MODULE:OBJECT",
        help="the experiment that wrote the run, for one outside the registry: a run folder may only name "
        "a registered experiment, since its contents are never trusted to choose code to import",
    )
    rep.add_argument(
        "--figure-format",
        choices=("png", "pdf", "svg"),
        default="png",
        help="file format of figures/ (default png)",
    )
    rep.add_argument(
        "--html",
        action="store_true",
        help="also write RUN_DIR/report.html: config, progress, table, results, figures (SVG) and environment in "
        "one offline file to open in a browser",
    )
    compare = sub.add_parser(
        "compare",
        help="compare two runs of one experiment",
        description="Compare two run folders of the same experiment: the config fields that differ, and for each "
        "result column that differs on a unit both runs finished, its mean in A and B and the difference B - A.",
    )
    compare.add_argument("run_a", type=_path, metavar="RUN_A")
    compare.add_argument("run_b", type=_path, metavar="RUN_B")
    compare.add_argument("--by-unit", action="store_true", help="also list every differing value, unit by unit")
    compare.add_argument(
        "--experiment",
        default=None,
        metavar="NAME|MODULE:OBJECT",
        help="the experiment that wrote both runs, for one outside the registry (as for report)",
    )
    for parser in (rep, compare):
        _verbosity_options(parser, top=False)
    return {"report": _cmd_report, "compare": _cmd_compare}


def _cmd_report(args: argparse.Namespace) -> int:
    from .. import runner

    registry = _registry()
    experiment = args.experiment
    if experiment is not None:
        try:
            experiment = runner.resolve_experiment(experiment, registry)
        except (ValueError, TypeError) as e:
            raise _UsageError(f"--experiment: {e}") from e
    if args.html:
        from ..html import HtmlUnavailableError, check_available

        try:
            check_available()  # before anything is written
        except HtmlUnavailableError as e:
            raise _UsageError(str(e)) from None
    table = runner.report(args.run_dir, experiment=experiment, figure_format=args.figure_format, registry=registry)
    print(table, end="" if table.endswith("\n") else "\n")
    if args.html:
        from ..html import write_run_page

        _note(args, f"wrote {write_run_page(args.run_dir, experiment=experiment, registry=registry, table=table)}")
    return EXIT_OK


# -- compare --------------------------------------------------------------------------------------


def _number(value: float) -> str:
    return "nan" if value != value else f"{value:.6g}"


def _cmd_compare(args: argparse.Namespace) -> int:
    from .. import runner
    from ..runner.compare import compare_runs

    registry = _registry()
    experiment = args.experiment
    if experiment is not None:
        try:
            experiment = runner.resolve_experiment(experiment, registry)
        except (ValueError, TypeError) as e:
            raise _UsageError(f"--experiment: {e}") from e
    result = compare_runs(args.run_a, args.run_b, experiment=experiment, registry=registry)
    print(f"# {result.experiment}: A = {result.run_a}, B = {result.run_b}")
    print()
    if result.config_differences:
        print("Config fields that differ:")
        for line in result.config_differences:
            print(f"- {line}")
    else:
        print("Same config.")
    print()
    print(f"{result.shared} units in both runs; {len(result.only_a)} only in A, {len(result.only_b)} only in B.")
    for label, keys in (("only in A", result.only_a), ("only in B", result.only_b)):
        if keys:
            shown = ", ".join(keys[:5]) + (", ..." if len(keys) > 5 else "")
            print(f"- {label}: {shown}")
    print()
    if result.metrics.empty:
        print("No numeric result differs on the shared units.")
    else:
        print("| metric | units | A mean | B mean | mean B − A | max abs(B − A) | units differing |")
        print("|---|---|---|---|---|---|---|")
        for row in result.metrics.itertuples(index=False):
            print(
                f"| {row.metric} | {row.units} | {_number(row.mean_a)} | {_number(row.mean_b)} | "
                f"{_number(row.mean_diff)} | {_number(row.max_abs_diff)} | {row.differing} |"
            )
    if result.equal:
        print(f"\nEqual on every shared unit: {', '.join(result.equal)}.")
    if result.text_differences:
        listed = ", ".join(f"{column} ({count} units)" for column, count in result.text_differences.items())
        print(f"\nText columns that differ: {listed}.")
    if args.by_unit and not result.by_unit.empty:
        print()
        print("| unit | metric | A | B | B − A |")
        print("|---|---|---|---|---|")
        for row in result.by_unit.itertuples(index=False):
            print(f"| {row.key} | {row.metric} | {_number(row.a)} | {_number(row.b)} | {_number(row.diff)} |")
    return EXIT_OK
