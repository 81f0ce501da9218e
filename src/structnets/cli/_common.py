"""What every ``structnets`` command shares: exit statuses, the one-line error, argument types, ``-q``/``-v``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE: what a shell reports for a command killed by a closed pipe (``yes | head -1``)."""

Handler = Callable[[argparse.Namespace], int]
"""A command: parsed arguments in, exit status out."""


class _UsageError(Exception):
    """A user error: printed as one ``error: ...`` line, exit status 2."""


def _error(message: str, stream: TextIO | None = None) -> None:
    print(f"error: {' '.join(str(message).split())}", file=stream or sys.stderr)


def _registry() -> Mapping[str, str]:
    """The registered experiments the command line hands the runner (:data:`structnets.experiments.REGISTRY`)."""
    from .. import experiments

    return experiments.REGISTRY


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _path(text: str) -> Path:
    """A file or folder argument; "" is refused (``Path("")`` would be the current folder, e.g. ``--out "$UNSET"``)."""
    if not text:
        raise argparse.ArgumentTypeError("must name a file or folder, got ''")
    return Path(text)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _device_name(text: str) -> str:
    # the configs' own check (N in [0, 127], ASCII, no leading zeros): str.isdigit took "cuda:²", "cuda:01"
    # and "cuda:128", which the runner then met with a ValueError traceback on a machine with a GPU
    from ..training.device import check_device

    try:
        return check_device(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be cpu, cuda, cuda:N (N in 0..127) or auto, got {text!r}") from None


def _verbosity_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """``-q``/``-v`` on the top-level parser and on every command (``structnets run -q ...``)."""
    default: Any = 0 if top else argparse.SUPPRESS
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "-q", "--quiet", action="store_const", const=-1, dest="verbosity", default=default,
        help="print only errors and results (no progress, no notes)",
    )  # fmt: skip
    group.add_argument(
        "-v", "--verbose", action="count", dest="verbosity", default=default,
        help="log what the runner does (-vv: debug)",
    )  # fmt: skip


def _quiet(args: argparse.Namespace) -> bool:
    return getattr(args, "verbosity", 0) < 0


def _note(args: argparse.Namespace, message: str) -> None:
    """An informational line on stderr, unless ``-q``."""
    if not _quiet(args):
        print(message, file=sys.stderr, flush=True)
