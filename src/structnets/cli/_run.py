"""``structnets run``: run or resume an experiment into a run folder, with a progress bar or progress lines."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from ._common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    Handler,
    _device_name,
    _error,
    _note,
    _path,
    _positive_float,
    _positive_int,
    _quiet,
    _registry,
    _UsageError,
    _verbosity_options,
)


def add_commands(sub: Any) -> dict[str, Handler]:
    """Add the ``run`` command to the subparsers ``sub``; return its handler."""
    parser = sub.add_parser(
        "run",
        help="run or resume an experiment",
        description="Run an experiment into a run folder; re-running with the same --out resumes it.",
    )
    parser.add_argument("name", metavar="NAME", help="experiment name (see `structnets list`) or module.path:OBJECT")
    parser.add_argument("--quick", action="store_true", help="use the experiment's quick preset")
    parser.add_argument(
        "--jobs",
        type=_positive_int,
        default=None,
        metavar="N",
        help="local: worker processes, each with torch threads = CPUs / N (default: one per CPU, at most 8; "
        "1 runs units in this process); ray: most tasks in flight (default: no cap)",
    )
    parser.add_argument("--backend", choices=("local", "ray"), default="local", help="where units run (default local)")
    parser.add_argument(
        "--out", type=_path, default=None, metavar="DIR", help="run folder (default runs/NAME-YYYYmmdd-HHMMSS)"
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="extend",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field, parsed by its type; sequences are comma-separated (e.g. --set seeds=0,1,2)",
    )
    parser.add_argument(
        "--rerun-changed",
        action="store_true",
        help="recompute the stored units whose params differ from what the experiment now gives (its code "
        "changed since they ran), keeping every other unit; without it such a folder is refused",
    )
    parser.add_argument(
        "--reuse",
        dest="reuse",
        action="append",
        type=_path,
        default=[],
        metavar="DIR",
        help="take each unit that the run folder DIR (same experiment) finished with exactly this run's params "
        "instead of running it (repeatable), e.g. to add seeds to an earlier run in a new folder",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar or progress lines")
    parser.add_argument(
        "--no-html",
        action="store_true",
        help="do not write RUN/report.html (by default it is refreshed as units finish, to watch in a browser)",
    )
    parser.add_argument(
        "--device",
        type=_device_name,
        default=None,
        metavar="cpu|cuda|cuda:N|auto",
        help="where units train, for experiments whose config has a `device` field (see `structnets show NAME`); "
        "auto: cuda when available, else cpu. Checked before any unit runs (default: the config's value, cpu)",
    )
    parser.add_argument(
        "--gpus-per-unit",
        type=_positive_float,
        default=None,
        metavar="G",
        help="ray backend: GPUs each unit's task requests (a fraction shares a GPU); needed for --device cuda on ray",
    )
    parser.add_argument(
        "--figure-format",
        choices=("png", "pdf", "svg"),
        default="png",
        help="file format of figures/ (default png)",
    )
    _verbosity_options(parser, top=False)
    return {"run": _cmd_run}


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

    def __init__(
        self,
        desc: str,
        mode: str,
        out: Path,
        quiet: bool = False,
        stream: TextIO | None = None,
        reused_from: Sequence[Path] = (),
    ) -> None:
        self.desc = desc
        self.mode = mode
        self.out = out
        self.quiet = quiet
        # a folder without results.db yet: units done at the start were taken from these (--reuse), not resumed
        self.reused_from = list(reused_from)
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
                if self.reused_from:
                    where = ", ".join(str(p) for p in self.reused_from)
                    text = f"{done} finished units taken from --reuse {where}"
                else:
                    text = f"resuming run in {self.out}: {done} units already finished"
                print(text, file=self.stream, flush=True)
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
                total=total,
                initial=done,
                desc=self.desc,
                unit="unit",
                file=self.stream,
                dynamic_ncols=True,
                disable=None,
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
    from ..runner import apply_overrides

    config_class = experiment.config_class
    if quick:
        preset = getattr(config_class, "quick", None)
        if preset is None:
            raise _UsageError(f"experiment {experiment.name!r} has no --quick preset")
        config = preset()
    else:
        config = config_class()
    _check_distinct_keys(overrides)
    try:
        config = apply_overrides(config, overrides)
    except (ValueError, TypeError) as e:
        raise _UsageError(f"--set: {e}" if not str(e).startswith("--set") else str(e)) from e
    from ..runner.config import validate_config

    try:
        validate_config(config)
    except ValueError as e:
        raise _UsageError(f"{'--set' if overrides else 'config'}: {e}") from e
    return config


def _check_distinct_keys(overrides: Sequence[str]) -> None:
    """Refuse a key given twice: the last value would win silently (``--set seeds=0,1 ... seeds=2`` ran seed 2)."""
    seen: dict[str, str] = {}
    for assignment in overrides:
        key, sep, _ = assignment.partition("=")
        key = key.strip()  # as apply_overrides reads it; a malformed assignment is its to refuse
        if not sep or not key:
            continue
        if key in seen:
            raise _UsageError(f"--set: `{key}` is given twice ({seen[key]!r} and {assignment!r}); give each key once")
        seen[key] = assignment


def _resume_hint(config_class: type, config: Any, stored: dict[str, Any] | None) -> str | None:
    """The ``--set`` that makes ``config`` the folder's ``stored`` config, or None if none can.

    Only when every differing field can be written as ``--set`` and parses back to the stored
    value (e.g. after a preset's default changed, an old folder resumes with the old value).
    """
    import json

    from ..runner.config import config_to_json, format_value, parse_overrides

    if stored is None:
        return None
    requested = json.loads(json.dumps(config_to_json(config)))
    if set(stored) - set(requested):
        return None  # a field the config class no longer has
    assignments = []
    for key in sorted(stored):
        if stored[key] == requested[key]:
            continue
        assignment = f"{key}={format_value(stored[key])}"
        try:
            parsed = parse_overrides(config_class, [assignment])[key]
        except (ValueError, TypeError):
            return None
        if json.loads(json.dumps(parsed)) != stored[key]:
            return None
        assignments.append(assignment)
    if not assignments:
        return None
    return "to resume it as stored, pass --set " + " ".join(assignments)


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
    from .. import runner
    from ..runner.device import apply_device, has_device_field

    registry = _registry()
    try:
        experiment = runner.resolve_experiment(args.name, registry)
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
    out: Path = args.out or _new_default_out(experiment.name)
    made_here = args.out is None  # an empty default folder is removed again if the runner refuses the run
    jobs = args.jobs
    if jobs is None and args.backend == "local":
        from ..runner.backends import default_jobs

        jobs = min(default_jobs(), _first_units(experiment, config))
    fresh = not (out / "results.db").is_file()
    bar = _Progress(
        experiment.name, _progress_mode(args, sys.stderr), out=out, quiet=_quiet(args),
        reused_from=args.reuse if fresh else (),
    )  # fmt: skip
    live = None
    if not args.no_html:
        from ..html import LiveReport

        live = LiveReport(out, experiment=experiment, registry=registry)
    outcome: tuple[str, tuple[str, str] | None] = ("failed", None)  # how the run ended, for the page
    t0 = time.perf_counter()
    try:
        with _sigterm_as_interrupt(), live.capture() if live is not None else contextlib.nullcontext():
            frame = runner.run(
                args.name,
                config,
                out,
                backend=args.backend,
                jobs=jobs,
                progress=bar if live is None else live.tee(bar),
                on_unit=bar.unit,
                gpus_per_unit=args.gpus_per_unit,
                figure_format=args.figure_format,
                registry=registry,
                rerun_changed=args.rerun_changed,
                reuse=args.reuse,
            )
        outcome = ("finished", None)
    except runner.ConfigMismatchError as e:
        bar.close()
        hint = _resume_hint(experiment.config_class, config, e.stored_config)
        if hint is None:
            raise
        raise _UsageError(f"{e}; {hint}") from e
    except KeyboardInterrupt:
        outcome = ("interrupted", None)
        bar.close()
        print(f"interrupted: finished units are saved in {out}; rerun the same command to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    except runner.UnitFailedError as e:
        outcome = ("failed", (e.key, e.error))
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
        if live is not None:
            live.finish(*outcome)  # never raises: a page that cannot be written is logged
        if made_here:
            with contextlib.suppress(OSError):
                out.rmdir()  # only while still empty: the runner refused before writing anything
    table = (out / "table.md").read_text(encoding="utf-8")
    print(table, end="" if table.endswith("\n") else "\n")
    _note(args, f"{len(frame)} units in {time.perf_counter() - t0:.1f} s")
    print(f"run folder: {out}")
    return EXIT_OK


def _new_default_out(name: str) -> Path:
    """Create and return a new folder ``runs/NAME-YYYYmmdd-HHMMSS`` (``-2``, ``-3``, ... when that is taken).

    Created here, atomically: runs started in the same second (``for s in 0 1 2; do structnets run ... &``)
    shared one folder, so all but one were refused as "in use" or as a changed config, or a finished
    one's folder was silently resumed.
    """
    stamp = f"{name}-{datetime.now():%Y%m%d-%H%M%S}"
    for n in range(1, 10_000):
        out = Path("runs") / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            out.mkdir(parents=True)
            return out
        except FileExistsError:
            continue
        except OSError as e:
            raise _UsageError(f"cannot create the run folder {out}: {e.strerror or e}; choose one with --out") from e
    raise _UsageError(f"cannot create a new run folder for {stamp} in runs; choose one with --out")


def _first_units(experiment: Any, config: Any) -> int:
    """How many units the experiment lists before any result (its first stage), at least 1.

    The default ``--jobs`` is one single-threaded worker per CPU; a run whose first stage has fewer
    units than CPUs would leave CPUs idle (``lipschitz-mnist-conv``'s one full unit trained on one
    thread of two: 65.7 s an epoch against 37.6), so it gets that many workers, each with
    ``cpus // workers`` threads. Later stages then run on those workers.
    """
    from ..runner.schedule import results_frame

    try:
        return max(1, len(experiment.units(config, results_frame([]))))
    except Exception:  # noqa: BLE001 - the run itself reports a failing unit list
        return 1_000_000
