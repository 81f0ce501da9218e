"""The ``structnets`` command line. The only module of structnets that prints (docs/design.md, convention 6).

Commands::

    structnets list
    structnets show NAME
    structnets run NAME [--quick] [--jobs N] [--backend local|ray] [--out DIR] [--set key=value ...]
                        [--device cpu|cuda|auto] [--gpus-per-unit G] [--figure-format png|pdf|svg]
    structnets report RUN_DIR [--experiment NAME|MODULE:OBJECT] [--figure-format png|pdf|svg]
    structnets compare RUN_A RUN_B [--by-unit]
    structnets analyze MODEL.pt [--format markdown|csv]
    structnets data path|verify [--data-dir DIR]
    structnets --version

Every command takes ``-q`` (errors and results only) and ``-v`` (log what the runner does; ``-vv``
for debug). ``run`` draws a progress bar on a terminal, and writes one line per finished unit to
stderr when stderr is not a terminal (logs, CI, nohup).

``NAME`` is a registered experiment (``structnets list``) or an importable ``module.path:OBJECT``
spec, e.g. ``structnets.runner._toy:EXPERIMENT``. Re-running ``run`` with the same ``--out`` resumes;
a second ``run`` into a folder that a live run holds is refused. ``report`` imports only registered
experiments (a run folder's contents never choose code to import); ``--experiment`` names another.

Exit status: 0 success; 1 a unit failed, ``data verify`` found a bad file or ``data path`` names a missing folder; 2 a usage error
(unknown experiment, bad ``--set``, unreadable or mismatched run folder); 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class _UsageError(Exception):
    """A user error: printed as one ``error: ...`` line, exit status 2."""


def _error(message: str, stream: TextIO | None = None) -> None:
    print(f"error: {' '.join(str(message).split())}", file=stream or sys.stderr)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _device_name(text: str) -> str:
    if text in ("cpu", "cuda", "auto") or (text.startswith("cuda:") and text[5:].isdigit()):
        return text
    raise argparse.ArgumentTypeError(f"must be cpu, cuda, cuda:N or auto, got {text!r}")


def _verbosity_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """``-q``/``-v`` on the top-level parser and on every command (``structnets run -q ...``)."""
    default: Any = 0 if top else argparse.SUPPRESS
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "-q", "--quiet", action="store_const", const=-1, dest="verbosity", default=default,
        help="print only errors and results (no progress, no notes)",
    )
    group.add_argument(
        "-v", "--verbose", action="count", dest="verbosity", default=default,
        help="log what the runner does (-vv: debug)",
    )


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="structnets",
        description="Structured neural networks backed by approximation and generalization theory.",
    )
    parser.add_argument("--version", action="version", version=f"structnets {__version__}")
    parser.add_argument("--traceback", action="store_true", help="show full tracebacks on errors")
    _verbosity_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    commands: list[argparse.ArgumentParser] = []

    commands.append(sub.add_parser("list", help="list the experiments", description="List the registered experiments."))

    show = sub.add_parser(
        "show", help="show an experiment's config fields, defaults and quick preset",
        description="Print an experiment's config fields with their types, defaults and --quick values.",
    )
    show.add_argument("name", metavar="NAME", help="experiment name (see `structnets list`) or module.path:OBJECT")
    commands.append(show)

    run = sub.add_parser(
        "run",
        help="run or resume an experiment",
        description="Run an experiment into a run folder; re-running with the same --out resumes it.",
    )
    run.add_argument("name", metavar="NAME", help="experiment name (see `structnets list`) or module.path:OBJECT")
    run.add_argument("--quick", action="store_true", help="use the experiment's quick preset")
    run.add_argument(
        "--jobs", type=_positive_int, default=None, metavar="N",
        help="local: worker processes, each with torch threads = CPUs / N (default: one per CPU, at most 8; "
        "1 runs units in this process); ray: most tasks in flight (default: no cap)",
    )
    run.add_argument("--backend", choices=("local", "ray"), default="local", help="where units run (default local)")
    run.add_argument("--out", type=Path, default=None, metavar="DIR", help="run folder (default runs/NAME-YYYYmmdd-HHMMSS)")
    run.add_argument(
        "--set", dest="overrides", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
        help="override a config field, parsed by its type; sequences are comma-separated (e.g. --set seeds=0,1,2)",
    )
    run.add_argument("--no-progress", action="store_true", help="no progress bar or progress lines")
    run.add_argument(
        "--device", type=_device_name, default=None, metavar="cpu|cuda|cuda:N|auto",
        help="where units train, for experiments whose config has a `device` field (see `structnets show NAME`); "
        "auto: cuda when available, else cpu. Checked before any unit runs (default: the config's value, cpu)",
    )
    run.add_argument(
        "--gpus-per-unit", type=_positive_float, default=None, metavar="G",
        help="ray backend: GPUs each unit's task requests (a fraction shares a GPU); needed for --device cuda on ray",
    )
    run.add_argument(
        "--figure-format", choices=("png", "pdf", "svg"), default="png", help="file format of figures/ (default png)",
    )
    commands.append(run)

    rep = sub.add_parser(
        "report", help="regenerate a run's table and figures",
        description="Regenerate results.csv, table.md and figures/ of a run folder from its results.db, and print the table.",
    )
    rep.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    rep.add_argument(
        "--experiment", default=None, metavar="NAME|MODULE:OBJECT",
        help="the experiment that wrote the run, for one outside the registry: a run folder may only name "
        "a registered experiment, since its contents are never trusted to choose code to import",
    )
    rep.add_argument(
        "--figure-format", choices=("png", "pdf", "svg"), default="png", help="file format of figures/ (default png)",
    )
    commands.append(rep)

    compare = sub.add_parser(
        "compare", help="compare two runs of one experiment",
        description="Compare two run folders of the same experiment: the config fields that differ, and for each "
        "result column that differs on a unit both runs finished, its mean in A and B and the difference B - A.",
    )
    compare.add_argument("run_a", type=Path, metavar="RUN_A")
    compare.add_argument("run_b", type=Path, metavar="RUN_B")
    compare.add_argument("--by-unit", action="store_true", help="also list every differing value, unit by unit")
    compare.add_argument(
        "--experiment", default=None, metavar="NAME|MODULE:OBJECT",
        help="the experiment that wrote both runs, for one outside the registry (as for report)",
    )
    commands.append(compare)

    data = sub.add_parser("data", help="where data files live, and verify them", description="Data files.")
    data.add_argument("action", choices=("path", "verify"), help="path: print the data folder; verify: check every file's SHA-256")
    data.add_argument("--data-dir", type=Path, default=None, metavar="DIR", help="data folder to use instead of the default")
    commands.append(data)

    analyze = sub.add_parser(
        "analyze", help="per-layer spectrum table of a saved model",
        description="Print each layer's norms, Schatten quasi-norms and ranks for a saved state dict "
        "(loaded with torch.load(weights_only=True) only).",
    )
    analyze.add_argument("model", type=Path, metavar="MODEL.pt", help="a file saved with torch.save(model.state_dict())")
    analyze.add_argument("--p", dest="ps", type=float, nargs="+", default=[0.5, 1.0, 2.0], help="Schatten exponents (default 0.5 1 2)")
    analyze.add_argument("--rtol", type=float, default=1e-3, help="relative tolerance of the numerical rank (default 1e-3)")
    analyze.add_argument("--top", type=_positive_int, default=5, help="largest singular values to show (default 5)")
    analyze.add_argument(
        "--format", dest="table_format", choices=("markdown", "csv"), default="markdown",
        help="markdown table (default) or CSV with one column per quantity",
    )
    commands.append(analyze)
    for command in commands:
        _verbosity_options(command, top=False)
    return parser


# -- list -----------------------------------------------------------------------------------------


def _cmd_list(args: argparse.Namespace) -> int:
    from . import experiments

    rows = []
    for name in experiments.names():
        try:
            description = experiments.get(name).description.strip().splitlines()[0]
        except Exception as e:  # noqa: BLE001 - one broken module must not hide the others
            description = f"(cannot be loaded: {type(e).__name__}: {e})"
        rows.append((name, description))
    width = max((len(n) for n, _ in rows), default=0)
    for name, description in rows:
        print(f"{name:<{width}}  {description}")
    return EXIT_OK


# -- run ------------------------------------------------------------------------------------------


def _quiet(args: argparse.Namespace) -> bool:
    return getattr(args, "verbosity", 0) < 0


def _note(args: argparse.Namespace, message: str) -> None:
    """An informational line on stderr, unless ``-q``."""
    if not _quiet(args):
        print(message, file=sys.stderr, flush=True)


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


class _Progress:
    """Shows the runner's progress: a tqdm bar on a terminal, else one line per finished unit.

    ``mode``: ``"bar"``, ``"lines"`` (for logs, CI, nohup: stderr is not a terminal) or ``"off"``.
    The runner calls :meth:`unit` with each committed unit, then the object itself as its
    ``progress(done, total)`` callback.
    """

    def __init__(self, desc: str, mode: str, out: Path, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.desc = desc
        self.mode = mode
        self.out = out
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self.started = False
        self.bar: Any = None
        self.t0 = time.perf_counter()
        self.run_here = 0  # units finished in this session (for the rate estimate)
        self.last: Any = None  # the record of the unit that finished last

    def unit(self, record: Any) -> None:
        self.run_here += 1
        self.last = record

    def __call__(self, done: int, total: int) -> None:
        if not self.started:
            self.started = True
            if done and not self.quiet:
                print(f"resuming run in {self.out}: {done} units already finished", file=self.stream, flush=True)
        if self.mode == "lines":
            self._line(done, total)
        elif self.mode == "bar":
            self._bar(done, total)
        self.last = None

    def _line(self, done: int, total: int) -> None:
        record, self.last = self.last, None
        if record is None:
            return  # a new round of units, not a finished unit
        elapsed = time.perf_counter() - self.t0
        left = ""
        if total > done and self.run_here:
            left = f", ~{_duration(elapsed / self.run_here * (total - done))} left for the {total - done} known units"
        width = len(str(total))
        print(
            f"{self.desc}: [{done:>{width}}/{total}] {record.key} finished in {record.wall_s:.1f} s "
            f"(elapsed {_duration(elapsed)}{left})",
            file=self.stream, flush=True,
        )  # fmt: skip

    def _bar(self, done: int, total: int) -> None:
        if self.bar is None:
            from tqdm.auto import tqdm

            # initial=done: units resumed from an earlier session do not inflate the rate estimate.
            self.bar = tqdm(
                total=total, initial=done, desc=self.desc, unit="unit", file=self.stream,
                dynamic_ncols=True, disable=None,
            )
            return
        if total != self.bar.total:
            self.bar.total = total
            self.bar.refresh()
        if done > self.bar.n:
            self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _progress_mode(args: argparse.Namespace, stream: TextIO) -> str:
    if args.no_progress or _quiet(args):
        return "off"
    try:
        interactive = stream.isatty()
    except (AttributeError, ValueError):
        interactive = False
    return "bar" if interactive else "lines"


def _make_config(experiment: Any, quick: bool, overrides: Sequence[str]) -> Any:
    from .runner import apply_overrides

    config_class = experiment.config_class
    if quick:
        preset = getattr(config_class, "quick", None)
        if preset is None:
            raise _UsageError(f"experiment {experiment.name!r} has no --quick preset")
        config = preset()
    else:
        config = config_class()
    try:
        config = apply_overrides(config, overrides)
    except (ValueError, TypeError) as e:
        raise _UsageError(f"--set: {e}" if not str(e).startswith("--set") else str(e)) from e
    from .runner.config import validate_config

    try:
        validate_config(config)
    except ValueError as e:
        raise _UsageError(f"{'--set' if overrides else 'config'}: {e}") from e
    return config


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM (e.g. from a cluster scheduler) like Ctrl-C, so the session is recorded."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _cmd_run(args: argparse.Namespace) -> int:
    from . import runner
    from .runner.device import apply_device, has_device_field

    try:
        experiment = runner.resolve_experiment(args.name)
    except (ValueError, TypeError) as e:
        raise _UsageError(str(e)) from e
    config = _make_config(experiment, args.quick, args.overrides)
    if args.gpus_per_unit is not None and args.backend != "ray":
        raise _UsageError(
            f"--gpus-per-unit applies to --backend ray only (local units see every GPU of this machine), "
            f"got --gpus-per-unit {args.gpus_per_unit:g} with --backend {args.backend}"
        )
    # Resolved and checked here, before the run folder exists and before any unit runs.
    requested = config.device if args.device is None and has_device_field(config) else args.device
    config = apply_device(
        config, args.device, experiment=experiment.name, backend=args.backend, gpus_per_unit=args.gpus_per_unit
    )
    if has_device_field(config) and (requested == "auto" or getattr(args, "verbosity", 0) > 0):
        _note(args, f"device: {config.device}" + (" (auto)" if requested == "auto" else ""))
    elif args.device == "auto":
        _note(args, f"device: cpu (auto; {experiment.name} has no `device` config field, its units run on the CPU)")
    out: Path = args.out or Path("runs") / f"{experiment.name}-{datetime.now():%Y%m%d-%H%M%S}"
    jobs = args.jobs
    if jobs is None and args.backend == "local":
        from .runner.backends import default_jobs

        jobs = default_jobs()
    bar = _Progress(experiment.name, _progress_mode(args, sys.stderr), out=out, quiet=_quiet(args))
    t0 = time.perf_counter()
    try:
        with _sigterm_as_interrupt():
            frame = runner.run(
                args.name, config, out, backend=args.backend, jobs=jobs, progress=bar, on_unit=bar.unit,
                gpus_per_unit=args.gpus_per_unit, figure_format=args.figure_format,
            )
    except KeyboardInterrupt:
        bar.close()
        print(f"interrupted: finished units are saved in {out}; rerun the same command to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    except runner.UnitFailedError as e:
        bar.close()
        if args.traceback and e.traceback:
            print(e.traceback, file=sys.stderr, end="" if e.traceback.endswith("\n") else "\n")
        if e.finished_units == 0:
            advice = (
                f"no unit has finished, so {out} holds no results yet: fix the cause (e.g. a --set value) and "
                "rerun; the same --out may be used with a changed config"
            )
        else:
            n = "" if e.finished_units is None else f"{e.finished_units} "
            advice = (
                f"the {n}finished units are saved in {out}: fix the cause and rerun the same command to resume "
                "(a run with a changed config needs another --out)"
            )
        _error(f"{e}; {advice}")
        return EXIT_FAILED
    finally:
        bar.close()
    table = (out / "table.md").read_text(encoding="utf-8")
    print(table, end="" if table.endswith("\n") else "\n")
    _note(args, f"{len(frame)} units in {time.perf_counter() - t0:.1f} s")
    print(f"run folder: {out}")
    return EXIT_OK


# -- report ---------------------------------------------------------------------------------------


def _cmd_report(args: argparse.Namespace) -> int:
    from . import runner

    experiment = args.experiment
    if experiment is not None:
        try:
            experiment = runner.resolve_experiment(experiment)
        except (ValueError, TypeError) as e:
            raise _UsageError(f"--experiment: {e}") from e
    table = runner.report(args.run_dir, experiment=experiment, figure_format=args.figure_format)
    print(table, end="" if table.endswith("\n") else "\n")
    return EXIT_OK


# -- show -----------------------------------------------------------------------------------------


def _plain_doc(text: str) -> str:
    """Docstring markup (``code``, :role:`target`) as plain text."""
    import re

    text = re.sub(r":[a-z]+:`~?([^`]*)`", r"\1", text)
    return text.replace("``", "")


def _cmd_show(args: argparse.Namespace) -> int:
    from . import runner
    from .runner.config import describe_config

    try:
        experiment = runner.resolve_experiment(args.name)
    except (ValueError, TypeError) as e:
        raise _UsageError(str(e)) from e
    config_class = experiment.config_class
    rows = describe_config(config_class)
    has_quick = callable(getattr(config_class, "quick", None))
    print(f"{experiment.name}: {' '.join(experiment.description.split())}")
    print(
        f"config {config_class.__module__}.{config_class.__qualname__}: set a field with --set FIELD=VALUE "
        "(sequences comma-separated, none for None)"
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
    documented = [row for row in rows if row["doc"]]
    if documented:
        print()
        width = max(len(row["field"]) for row in documented)
        for row in documented:
            print(f"{row['field']:<{width}}  {_plain_doc(row['doc'])}")
    return EXIT_OK


# -- compare --------------------------------------------------------------------------------------


def _number(value: float) -> str:
    return "nan" if value != value else f"{value:.6g}"


def _cmd_compare(args: argparse.Namespace) -> int:
    from . import runner
    from .runner.compare import compare_runs

    experiment = args.experiment
    if experiment is not None:
        try:
            experiment = runner.resolve_experiment(experiment)
        except (ValueError, TypeError) as e:
            raise _UsageError(f"--experiment: {e}") from e
    result = compare_runs(args.run_a, args.run_b, experiment=experiment)
    print(f"# {result.experiment}: A = {result.run_a}, B = {result.run_b}")
    print()
    if result.config_differences:
        print("Config fields that differ:")
        for line in result.config_differences:
            print(f"- {line}")
    else:
        print("Same config.")
    print()
    print(
        f"{result.shared} units in both runs; {len(result.only_a)} only in A, {len(result.only_b)} only in B."
    )
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


# -- data -----------------------------------------------------------------------------------------


def _cmd_data(args: argparse.Namespace) -> int:
    try:
        from . import data
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
                "--data-dir" if args.data_dir is not None
                else "STRUCTNETS_DATA" if os.environ.get("STRUCTNETS_DATA")
                else "the default cache folder"
            )
            _error(
                f"the data folder {folder} ({source}) does not exist; set STRUCTNETS_DATA to a folder that holds "
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

    from .analysis import format_spectrum_table, spectrum_table

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            table = spectrum_table(args.model, ps=tuple(args.ps), rtol=args.rtol, top=args.top)
    except (ValueError, FileNotFoundError) as e:
        raise _UsageError(str(e)) from e
    for warning in caught:  # e.g. matrix entries of no known layer kind, left out of the table
        print(f"warning: {warning.message}", file=sys.stderr)
    if args.table_format == "csv":
        import pandas as pd

        print(pd.DataFrame([layer.row() for layer in table]).to_csv(index=False), end="")
    else:
        print(format_spectrum_table(table))
    return EXIT_OK


_COMMANDS = {
    "list": _cmd_list,
    "show": _cmd_show,
    "run": _cmd_run,
    "compare": _cmd_compare,
    "report": _cmd_report,
    "data": _cmd_data,
    "analyze": _cmd_analyze,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``structnets`` command line with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, or an argparse usage error (already printed)
        return int(e.code) if isinstance(e.code, int) else EXIT_USAGE
    verbosity = getattr(args, "verbosity", 0)
    level = logging.ERROR if verbosity < 0 else logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(name)s: %(message)s")
    logging.getLogger("structnets").setLevel(level)
    from .runner import RunnerError, UnitFailedError

    try:
        return _COMMANDS[args.command](args)
    except (_UsageError, RunnerError) as e:
        if args.traceback:
            raise
        _error(str(e))
        return EXIT_FAILED if isinstance(e, UnitFailedError) else EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as e:  # a file the command needs cannot be read or written
        if args.traceback:
            raise
        _error(f"{e}")
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
