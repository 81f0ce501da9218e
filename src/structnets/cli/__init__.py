"""The ``structnets`` command line. The only module of structnets that prints (docs/design.md, convention 6).

Commands::

    structnets list
    structnets show NAME
    structnets run NAME [--quick] [--jobs N] [--backend local|ray] [--out DIR] [--set key=value ...]
                        [--device cpu|cuda|auto] [--gpus-per-unit G] [--figure-format png|pdf|svg]
    structnets report RUN_DIR [--experiment NAME|MODULE:OBJECT] [--figure-format png|pdf|svg]
    structnets compare RUN_A RUN_B [--by-unit]
    structnets claims RUN_DIR ... [--out FILE] [--csv FILE]
    structnets analyze MODEL.pt [--format markdown|csv]
    structnets data path|verify [--data-dir DIR]
    structnets --version

Every command takes ``-q`` (errors and results only) and ``-v`` (log what the runner does; ``-vv``
for debug). ``run`` draws a progress bar on a terminal, and writes one line per finished unit to
stderr when stderr is not a terminal (logs, CI, nohup).

``NAME`` is a registered experiment (``structnets list``) or an importable ``module.path:OBJECT``
spec, e.g. ``mypackage.experiments:MY_EXPERIMENT``. Re-running ``run`` with the same ``--out`` resumes;
a second ``run`` into a folder that a live run holds is refused. ``report`` imports only registered
experiments (a run folder's contents never choose code to import); ``--experiment`` names another.

Exit status: 0 success; 1 a unit failed, ``data verify`` found a bad file or ``data path`` names a missing folder; 2 a usage error
(unknown experiment, bad ``--set``, unreadable or mismatched run folder); 130 interrupted; 141 the reader of the output
went away (``structnets list | head -1``; nothing is printed).

One module per group of commands (``_catalog``: list, show; ``_run``: run; ``_folders``: report,
compare; ``_claims``: claims; ``_files``: data, analyze), each with an ``add_commands(sub)`` that adds its
subparsers and returns its handlers: a new command is a new module added to :data:`_COMMAND_MODULES`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from . import _catalog, _claims, _files, _folders, _run
from ._common import (
    EXIT_BROKEN_PIPE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    Handler,
    _error,
    _UsageError,
    _verbosity_options,
)

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "main"]

_COMMAND_MODULES: tuple[ModuleType, ...] = (_catalog, _run, _folders, _claims, _files)
"""The command groups, in the order ``structnets --help`` lists their commands."""


def _parser() -> tuple[argparse.ArgumentParser, dict[str, Handler]]:
    """The top-level parser, and every command's handler by name."""
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="structnets",
        description="Structured neural networks backed by approximation and generalization theory.",
    )
    parser.add_argument("--version", action="version", version=f"structnets {__version__}")
    parser.add_argument("--traceback", action="store_true", help="show full tracebacks on errors")
    _verbosity_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    handlers: dict[str, Handler] = {}
    for module in _COMMAND_MODULES:
        handlers.update(module.add_commands(sub))
    return parser, handlers


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``structnets`` command line with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    try:
        return _main(argv)
    except BrokenPipeError:
        # the reader went away (`structnets list | head -1`): stop quietly, as a command killed by SIGPIPE
        # does, instead of "error: [Errno 32] Broken pipe" (exit 2) on stderr
        _silence_stdout()
        return EXIT_BROKEN_PIPE


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not fail on the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # a stdout without a file descriptor (tests, notebooks)
        pass


def _show_warning(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None, line: Any = None
) -> None:
    """A library warning as one ``warning: ...`` line on stderr.

    Python's default format named the library file and printed its source line (``compare`` of a mixed run
    folder: ``.../runner/compare.py:117: MixedRunWarning: ...`` then ``exp, config_a, frame_a = load_results(...)``).
    """
    print(f"warning: {' '.join(str(message).split())}", file=sys.stderr if file is None else file)


def _main(argv: Sequence[str] | None) -> int:
    parser, handlers = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, or an argparse usage error (already printed)
        return int(e.code) if isinstance(e.code, int) else EXIT_USAGE
    verbosity = getattr(args, "verbosity", 0)
    level = (
        logging.ERROR
        if verbosity < 0
        else logging.WARNING
        if verbosity == 0
        else logging.INFO
        if verbosity == 1
        else logging.DEBUG
    )
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(name)s: %(message)s")
    logging.getLogger("structnets").setLevel(level)
    from ..runner import RunnerError, UnitFailedError

    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return handlers[args.command](args)
    except (_UsageError, RunnerError) as e:
        if args.traceback:
            raise
        _error(str(e))
        return EXIT_FAILED if isinstance(e, UnitFailedError) else EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        raise  # not an error of the command: main() stops quietly
    except OSError as e:  # a file the command needs cannot be read or written
        if args.traceback:
            raise
        _error(f"{e}")
        return EXIT_USAGE
