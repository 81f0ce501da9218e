"""``structnets list`` and ``structnets show``: the registered experiments, and one experiment's config."""

from __future__ import annotations

import argparse
from typing import Any

from ._common import EXIT_OK, Handler, _registry, _UsageError, _verbosity_options


def add_commands(sub: Any) -> dict[str, Handler]:
    """Add the ``list`` and ``show`` commands to the subparsers ``sub``; return their handlers."""
    listing = sub.add_parser("list", help="list the experiments", description="List the registered experiments.")
    show = sub.add_parser(
        "show",
        help="show an experiment's config fields, defaults and quick preset",
        description="Print an experiment's config fields with their types, defaults and --quick values.",
    )
    show.add_argument("name", metavar="NAME", help="experiment name (see `structnets list`) or module.path:OBJECT")
    for parser in (listing, show):
        _verbosity_options(parser, top=False)
    return {"list": _cmd_list, "show": _cmd_show}


def _cmd_list(args: argparse.Namespace) -> int:
    from .. import runner

    registry = _registry()
    rows = []
    for name in sorted(registry):
        try:
            description = runner.resolve_experiment(name, registry).description.strip().splitlines()[0]
        except Exception as e:  # noqa: BLE001 - one broken module must not hide the others
            description = f"(cannot be loaded: {type(e).__name__}: {e})"
        rows.append((name, description))
    width = max((len(n) for n, _ in rows), default=0)
    for name, description in rows:
        print(f"{name:<{width}}  {description}")
    return EXIT_OK


# -- show -----------------------------------------------------------------------------------------


def _plain_doc(text: str) -> str:
    """Docstring markup (``code``, :role:`target`) as plain text."""
    import re

    text = re.sub(r":[a-z]+:`~?([^`]*)`", r"\1", text)
    return text.replace("``", "")


def _unsettable(config_class: type, rows: list[dict[str, str]]) -> list[str]:
    """The fields whose default or ``--quick`` cell ``--set`` does not parse back to that value.

    The cells promise ``--set`` syntax; a value ``--set`` cannot write (a sequence nested twice, a type it
    does not parse) is named rather than shown as if it could be set.
    """
    import json

    from ..runner.config import config_to_json, parse_overrides

    presets: dict[str, dict[str, Any]] = {}
    for column, make in (("default", config_class), ("quick", getattr(config_class, "quick", None))):
        try:
            if callable(make):
                presets[column] = config_to_json(make())
        except Exception:  # noqa: BLE001 - a preset that cannot be built shows no values to check
            continue
    bad = []
    for row in rows:
        name = row["field"]
        for column, values in presets.items():
            if name not in values:
                continue
            try:
                parsed = parse_overrides(config_class, [f"{name}={row[column]}"])[name]
                same = json.loads(json.dumps(parsed, default=str)) == values[name]
            except (ValueError, TypeError):
                same = False
            if not same:
                bad.append(name)
                break
    return bad


def _cmd_show(args: argparse.Namespace) -> int:
    from .. import runner
    from ..runner.config import describe_config

    try:
        experiment = runner.resolve_experiment(args.name, _registry())
    except (ValueError, TypeError) as e:
        raise _UsageError(str(e)) from e
    config_class = experiment.config_class
    rows = describe_config(config_class)
    has_quick = callable(getattr(config_class, "quick", None))
    print(f"{experiment.name}: {' '.join(experiment.description.split())}")
    print(
        f"config {config_class.__module__}.{config_class.__qualname__}: set a field with --set FIELD=VALUE "
        "(sequences comma-separated, a sequence of pairs as 1:1.0,2:2.0, none for None)"
    )
    if any(row["field"] == "device" for row in rows):
        print("trains on a chosen device: --device cpu|cuda|auto")
    print()
    header = ["field", "type", "default"] + (["--quick"] if has_quick else [])
    lines = [header, ["---"] * len(header)]
    for row in rows:
        cells = [row["field"], row["type"], row["default"]]
        if has_quick:
            cells.append("=" if row["quick"] == row["default"] else row["quick"])
        lines.append(cells)
    for cells in lines:
        print("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    if has_quick:
        print("\n--quick: = means the same as the default.")
    unsettable = _unsettable(config_class, rows)
    if unsettable:
        print(
            f"\n--set cannot read back the values shown for {', '.join(unsettable)}: build the config in Python "
            "and call structnets.runner.run to change them"
        )
    documented = [row for row in rows if row["doc"]]
    if documented:
        print()
        width = max(len(row["field"]) for row in documented)
        for row in documented:
            print(f"{row['field']:<{width}}  {_plain_doc(row['doc'])}")
    return EXIT_OK
