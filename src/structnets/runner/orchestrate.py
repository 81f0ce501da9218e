"""``run`` and ``report``: drive an experiment's units through a backend into a run folder.

Run folder layout (docs/design.md, "Runner")::

    run_info.json   config, versions, git commit, machine, times, backend, sessions
    results.db      SQLite (WAL): one row per finished unit, committed as it finishes
    results.csv     key + result columns, one row per unit
    table.md        experiment.report(results, config)
    figures/*.png   experiment.figures(results, config, ...)
    checkpoints/    while a unit runs: its training checkpoint (fit(checkpoint=...)), deleted once
                    its result is committed; a killed run's unit resumes from it (:mod:`.checkpoints`)
    .structnets.lock  present while a run holds the folder (pid, host, start); see :mod:`.lock`

Order of units. ``units(config, finished)`` is called exactly as an uninterrupted run would call it:
first with no results, then, once every unit it returned has finished, with the results of all units
returned so far, in the order they were first returned, and so on until it returns nothing new. On
resume the runner replays these calls against ``results.db``, running only what is missing. So the
results frame, table and figures of a resumed run equal those of an uninterrupted run, whatever the
backend and whatever order units finished in.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from .. import atomic_io
from .._validation import memory_checks_skipped
from ..protocol import FIGURE_FORMATS, Experiment, ProgressCallback, figure_format_context
from .backends import Backend, make_backend
from .checkpoints import CHECKPOINTS, checkpoint_file, discard, remove_all
from .config import config_from_json, config_to_json, validate_config
from .device import apply_device
from .errors import ChangedUnitsError, CorruptStoreError, MixedRunWarning, RunnerError, StoreError, UnitFailedError
from .info import git_info, machine_info, package_versions, recorded_units
from .lock import run_lock
from .outputs import RESULTS_DB, RUN_INFO, check_own_files, write_outputs
from .resolve import Registry, experiment_ref, get_registry, resolve_experiment, resolve_stored_experiment, worker_spec
from .reuse import load_sources, take_reusable
from .schedule import Schedule, results_frame
from .store import SCHEMA_VERSION, ResultStore, UnitRecord, utc_now
from .unit_models import unbacked_rows

logger = logging.getLogger(__name__)


def _folder(name: str, value: Any) -> Path:
    """``value`` as the Path of a folder argument, or ``TypeError`` naming ``name`` (and ``ValueError`` for "")."""
    if not isinstance(value, str | os.PathLike):
        raise TypeError(f"`{name}` must be a str or os.PathLike folder, got {value!r:.80} ({type(value).__name__})")
    if os.fspath(value) == "":
        raise ValueError(f"`{name}` must name a folder, got ''")
    return Path(value)


def _check_config(experiment: Experiment, config: Any) -> Any:
    if config is None:
        return experiment.config_class()
    if not isinstance(config, experiment.config_class):
        raise TypeError(
            f"`config` must be a {experiment.config_class.__name__} for experiment {experiment.name!r}, "
            f"got {type(config).__name__}"
        )
    return config


@dataclasses.dataclass
class _Session:
    started: str
    t0: float
    backend: str
    jobs: int | None
    gpus_per_unit: float | None = None
    units_run: int = 0
    units_reused: int = 0
    total: int = 0
    done: int = 0
    status: str = "running"


def _run_info(
    experiment: Experiment,
    ref: str | None,
    config_json: dict[str, Any],
    session: _Session,
    store: ResultStore,
    finished: str | None,
) -> dict[str, Any]:
    sessions = store.sessions()
    total_wall = 0.0
    for s in sessions:
        if s["finished"]:
            total_wall += (pd.Timestamp(s["finished"]) - pd.Timestamp(s["started"])).total_seconds()
    return {
        "schema_version": SCHEMA_VERSION,
        "experiment": experiment.name,
        "experiment_ref": ref,
        "description": experiment.description,
        "config": config_json,
        "status": session.status,
        "backend": session.backend,
        "jobs": session.jobs,
        "gpus_per_unit": session.gpus_per_unit,
        "started": session.started,
        "finished": finished,
        "wall_s": None if finished is None else round(time.perf_counter() - session.t0, 3),
        "total_wall_s": round(total_wall, 3),
        "units": {
            "total": session.total,
            "finished": session.done,
            "run_this_session": session.units_run,
            "reused_this_session": session.units_reused,
        },
        "versions": package_versions(),
        "git": git_info(),
        "machine": machine_info(),
        "sessions": sessions,
    }


def run(
    experiment: str | Experiment,
    config: Any,
    out_dir: str | os.PathLike[str],
    *,
    backend: str = "local",
    jobs: int | None = None,
    progress: ProgressCallback | None = None,
    device: str | None = None,
    gpus_per_unit: float | None = None,
    on_unit: Callable[[UnitRecord], None] | None = None,
    figure_format: str = "png",
    registry: Registry | None = None,
    rerun_changed: bool = False,
    reuse: Sequence[str | os.PathLike[str]] = (),
) -> pd.DataFrame:
    """Run (or resume) an experiment into the folder ``out_dir`` and return its results.

    Every finished unit is committed to ``out_dir/results.db`` the moment it finishes. Calling
    ``run`` again with the same experiment, config and ``out_dir`` resumes: finished units are
    skipped, and the outputs equal those of an uninterrupted run. Ctrl-C or ``kill -9`` loses at
    most the units in flight.

    Args:
        experiment: an experiment object, a name in ``registry``, or a ``"module.path:OBJECT"`` spec.
        config: an instance of ``experiment.config_class`` (``None``: the full default config).
        out_dir: the run folder; created if missing.
        backend: ``"local"`` (this machine) or ``"ray"`` (``ray.init()``: local, or the cluster at
            ``RAY_ADDRESS``; needs ``pip install 'structnets[ray]'``).
        jobs: ``local``: worker processes (``None`` or 1: run in this process), each running torch
            with ``cpus // jobs`` threads (:func:`~.backends.threads_per_job`); the command line's
            default is :func:`~.backends.default_jobs`. ``ray``: most tasks in flight (``None``: as
            many as the cluster schedules), one torch thread each.
        progress: called as ``progress(done, total)`` before each round of units and after each
            finished unit. ``total`` counts the units known so far, so it grows when a staged
            experiment reveals its next stage; ``done`` includes units finished in earlier sessions.
        device: ``"cpu"``, ``"cuda"`` (``"cuda:N"``) or ``"auto"`` for an experiment whose config has
            a ``device`` field; it replaces that field, resolved (``auto`` becomes ``cuda`` or
            ``cpu``, see :func:`~.device.resolve_device`) and checked before ``out_dir`` is
            created. ``None`` keeps the config's own value (still resolved and checked). Seeds
            and unit keys do not depend on it.
        gpus_per_unit: ``ray`` only: GPUs each task requests (fractions share a GPU); ``None``:
            none, as before.
        on_unit: called with each unit's :class:`~.store.UnitRecord` right after it is committed
            (before ``progress``), e.g. to log one line per finished unit.
        figure_format: ``"png"`` (default), ``"pdf"`` or ``"svg"``: the format of ``figures/``.
        registry: experiment names to ``"module.path:OBJECT"`` specs (the command line passes
            ``structnets.experiments.REGISTRY``); None: the default registry
            (:func:`~.resolve.set_default_registry`).
        rerun_changed: recompute the stored units whose params differ from what the experiment now
            gives (its code changed since they ran), keeping every other stored unit; each old row
            is replaced only when its new one is committed. Without it such a folder is refused.
        reuse: other run folders of the same experiment: a unit one of them finished with exactly
            the params this run gives it is taken from there instead of run (its stored row, unchanged;
            units are pure and seeded), e.g. to add seeds to an earlier run in a new folder. See
            :mod:`~.reuse`.

    Returns:
        One row per unit: a ``key`` column, then the result columns ``run_unit`` returned.

    Raises:
        InvalidConfigError: a config value is invalid (checked before ``out_dir`` is created);
            also ``device="cuda"`` for an experiment without a ``device`` config field.
        DeviceUnavailableError: ``device`` (or the config's) asks for CUDA and there is none;
            raised before ``out_dir`` is created.
        RunLockedError: another live process is running into ``out_dir`` (its pid is named).
        StoreError: ``out_dir`` cannot be created or written, or ``results.db`` is read-only.
        CorruptStoreError: ``results.db`` exists but is not a structnets results database, or a
            stored row is malformed (the file is left untouched; the row is named).
        ConfigMismatchError: ``out_dir`` holds finished units of another experiment or config (a
            folder without finished units takes the new config).
        ChangedUnitsError: ``out_dir`` holds units stored with params the experiment no longer gives,
            and ``rerun_changed`` is False; raised before anything in the folder is written (or, for a
            later stage, once its units are known; the units finished before stay saved).
        UnitFailedError: a unit raised; units finished before it stay saved.
        ExperimentError: the experiment broke the protocol (e.g. duplicate keys in one ``units`` call).
        KeyboardInterrupt: after recording the interruption; re-running resumes.

    Note:
        With ``backend="local", jobs > 1`` workers are started with ``forkserver`` (or ``spawn``),
        so a script that calls ``run`` must do so under ``if __name__ == "__main__":``, as for any
        :mod:`multiprocessing` program. Workers see the environment as it is when ``run`` starts
        the pool.
    """
    out = _folder("out_dir", out_dir)
    for name, callback in (("progress", progress), ("on_unit", on_unit)):
        if callback is not None and not callable(callback):
            raise TypeError(f"`{name}` must be callable or None, got {callback!r:.80}")
    table = get_registry(registry)
    exp = resolve_experiment(experiment, table)
    ref = experiment if isinstance(experiment, str) else experiment_ref(exp, table)
    config = _check_config(exp, config)
    _check_figure_format(figure_format)
    # The whole config (device included) is checked before the run folder is created or touched.
    config = apply_device(config, device, experiment=exp.name, backend=backend, gpus_per_unit=gpus_per_unit)
    validate_config(config)
    config_json = config_to_json(config)
    # Workers get a spec, never a bare name: they resolve it without a registry.
    worker_ref = None if ref is None else worker_spec(ref, table)
    backend_obj: Backend = make_backend(backend, exp, worker_ref, jobs, gpus_per_unit=gpus_per_unit)
    try:
        sources = load_sources(reuse, exp.name, out)
    except BaseException:
        backend_obj.close()
        raise
    _make_folder(out)
    with run_lock(out), figure_format_context(figure_format):
        return _run_locked(
            exp,
            ref,
            config,
            config_json,
            backend_obj,
            backend,
            out,
            progress,
            on_unit,
            rerun_changed=rerun_changed,
            sources=sources,
        )


def _make_folder(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise StoreError(f"`out_dir` {out} exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(
            f"cannot create the run folder {out}: {e.strerror or e}; choose another output folder (--out)"
        ) from e
    _check_writable(out, "a run writes results.db, results.csv, table.md and figures/ there")
    check_own_files(out)
    db = out / RESULTS_DB
    if db.is_file() and not os.access(db, os.R_OK | os.W_OK):
        raise StoreError(
            f"{db} is read-only, so the run cannot record its units there; fix its permissions or "
            "use another output folder (--out)"
        )


def _run_locked(
    exp: Experiment,
    ref: str | None,
    config: Any,
    config_json: dict[str, Any],
    backend_obj: Backend,
    backend: str,
    out: Path,
    progress: ProgressCallback | None,
    on_unit: Callable[[UnitRecord], None] | None = None,
    rerun_changed: bool = False,
    sources: Sequence[tuple[Path, Mapping[str, UnitRecord]]] = (),
) -> pd.DataFrame:
    store = ResultStore.create_or_resume(
        out / RESULTS_DB, experiment=exp.name, experiment_ref=ref, config=config_json, defaults=_default_json(exp)
    )
    session = _Session(
        started=utc_now(),
        t0=time.perf_counter(),
        backend=backend,
        jobs=backend_obj.jobs,
        gpus_per_unit=getattr(backend_obj, "gpus_per_unit", None),
    )
    try:
        records = store.records()  # checks every stored row before anything is written
        recorded = 0 if records else recorded_units(out)  # run_info.json is read only for an empty store
        if recorded:
            logger.warning(
                "%s holds no finished unit, but %s records %d: it was emptied or replaced; every unit runs again",
                store.path, out / RUN_INFO, recorded,
            )  # fmt: skip
        unbacked = unbacked_rows(out, records)  # a finished unit whose saved model is lost runs again
        for key, problem in unbacked.items():
            logger.warning("%s runs again: the model file its row names %s", key, problem)
            del records[key]
        schedule = Schedule(exp, config, rerun_changed=rerun_changed)
        # The first replay, before anything is written: a folder with changed units is refused untouched.
        pending = schedule.advance(records)
        if schedule.changed and not rerun_changed:
            backend_obj.close()
            raise ChangedUnitsError(out, exp.name, schedule.changed)
        if backend_obj.name == "local":  # a Ray task may run on another machine: no shared folder
            if (out / CHECKPOINTS).exists() and not (out / CHECKPOINTS).is_dir():
                backend_obj.close()
                raise RunnerError(
                    f"{out / CHECKPOINTS} is not a folder: the units' training checkpoints go there; move the file away"
                )
            backend_obj.checkpoints = out / CHECKPOINTS
        session_id = store.begin_session(
            backend=backend, jobs=backend_obj.jobs or 0, host=socket.gethostname(), pid=os.getpid()
        )
        if records:
            logger.info("resuming %s in %s: %d units already finished", exp.name, out, len(records))
        if schedule.changed:
            logger.info("rerunning %d changed units of %s in %s", len(schedule.changed), exp.name, out)
        atomic_io.write_json(out / RUN_INFO, _run_info(exp, ref, config_json, session, store, None))

        def report_progress() -> None:
            if progress is not None:
                progress(session.done, session.total)

        try:
            while True:
                if schedule.changed and not rerun_changed:  # found in a later stage, after this session's units
                    raise ChangedUnitsError(out, exp.name, schedule.changed)
                session.total = len(schedule.order)
                session.done = session.total - len(pending)  # every earlier unit is finished
                pending, taken = take_reusable(pending, sources, store, records)
                for path, count in taken.items():
                    logger.info("took %d finished units from %s (same params)", count, path)
                    session.units_reused += count
                if taken and not pending:  # the round is complete: its results may reveal the next one
                    pending = schedule.advance(records)
                    continue
                session.done = session.total - len(pending)
                report_progress()
                if not pending:
                    break
                failure = None
                if backend_obj.checkpoints is not None:
                    for key, params in pending:
                        if checkpoint_file(backend_obj.checkpoints, key, params).exists():
                            logger.info("%s resumes from its training checkpoint in %s", key, backend_obj.checkpoints)
                for outcome in backend_obj.run(pending):
                    if outcome.record is not None:
                        # A changed unit's old row is replaced in the one transaction that stores the new one.
                        store.add(outcome.record, replace=outcome.key in records or outcome.key in unbacked)
                        discard(backend_obj.checkpoints, outcome.key, outcome.record.params)
                        records[outcome.key] = outcome.record
                        session.units_run += 1
                        session.done += 1
                        if on_unit is not None:
                            on_unit(outcome.record)
                        report_progress()
                    elif failure is None:
                        failure = outcome
                        backend_obj.cancel_pending()
                if failure is not None:
                    error = UnitFailedError(failure.key, failure.error or "", failure.traceback or "")
                    error.finished_units = len(records)
                    raise error
                pending = schedule.advance(records)
            backend_obj.close()
            frame = schedule.frame(records)
            write_outputs(exp, config, frame, out)
            remove_all(out / CHECKPOINTS)
            session.status = "finished"
        except KeyboardInterrupt:
            session.status = "interrupted"
            backend_obj.abort()
            raise
        except BaseException:
            session.status = "failed"
            raise
        finally:
            backend_obj.close()
            _end_session_quietly(store, session_id, session)
            _write_info_quietly(out, exp, ref, config_json, session, store)
        return frame
    finally:
        store.close()


def _default_json(exp: Experiment) -> dict[str, Any] | None:
    """The JSON of the experiment's default config, or None when it has no usable default."""
    try:
        return config_to_json(exp.config_class())
    except Exception:  # noqa: BLE001 - a config class without defaults: fields are compared as stored
        return None


def _end_session_quietly(store: ResultStore, session_id: int, session: _Session) -> None:
    """Record how the session ended; never masks the exception that ended it."""
    try:
        store.end_session(session_id, status=session.status, units_run=session.units_run)
    except StoreError as e:
        logger.warning("could not record the end of the session in %s: %s", store.path, e)


def _write_info_quietly(
    out: Path, exp: Experiment, ref: str | None, config_json: dict[str, Any], session: _Session, store: ResultStore
) -> None:
    """Write ``run_info.json`` at the end of a session; never masks the exception that ended it."""
    try:
        atomic_io.write_json(out / RUN_INFO, _run_info(exp, ref, config_json, session, store, utc_now()))
    except Exception as e:  # noqa: BLE001
        logger.warning("could not update %s: %s", out / RUN_INFO, e)


@dataclasses.dataclass(frozen=True)
class _Loaded:
    experiment: Experiment
    config: Any
    frame: pd.DataFrame
    missing: list[str]  # units known but not finished; empty for a finished run
    changed: list[str]  # units stored with params the experiment no longer gives; empty unless mixed


def _load(run_dir: Path, experiment: str | Experiment | None, registry: Registry | None) -> _Loaded:
    if not run_dir.is_dir():
        raise StoreError(f"`run_dir` {run_dir} is not a directory")
    db = run_dir / RESULTS_DB
    with ResultStore.open_existing(db) as store:
        meta = dict(store.meta)
        stored_config = store.config
        records = store.records()
    if experiment is None:
        # Names in a run folder are data: only registered experiments, checked before any import.
        exp = resolve_stored_experiment(meta["experiment"], meta.get("experiment_ref"), run_dir, registry)
    else:
        exp = resolve_experiment(experiment, registry)
    if exp.name != meta["experiment"]:
        raise RunnerError(f"{run_dir} holds experiment {meta['experiment']!r}, not {exp.name!r}")
    if not isinstance(stored_config, dict):
        raise CorruptStoreError(db, f"its stored config is a JSON {type(stored_config).__name__}, not an object")
    try:
        with memory_checks_skipped():  # read only: the config may come from a machine with more memory
            config = config_from_json(exp.config_class, stored_config)
    except (TypeError, ValueError) as e:
        raise CorruptStoreError(db, f"its stored config is not a valid {exp.config_class.__name__}: {e}") from e
    # Replay until the first round with missing units (an unfinished run) or the end.
    schedule = Schedule(exp, config)
    missing = [key for key, _ in schedule.advance(records)]
    return _Loaded(exp, config, schedule.frame(records), missing, schedule.changed)


def load_results(
    run_dir: str | os.PathLike[str], *, experiment: str | Experiment | None = None, registry: Registry | None = None
) -> tuple[Experiment, Any, pd.DataFrame]:
    """Read a run folder's experiment, config and results frame from ``results.db`` alone.

    The run folder may only name an experiment of ``registry`` (by name or spec): a name stored in a
    run folder is never imported. For an experiment outside the registry, pass it as
    ``experiment`` (you vouch for that code).

    Args:
        run_dir: a folder written by :func:`run` (finished or not).
        experiment: the experiment, when the run folder cannot name a registered one.
        registry: the registered experiments (names to specs); None: the default registry.

    Returns:
        ``(experiment, config, results)``; for an unfinished run, the units finished so far.

    Raises:
        StoreError: no run folder or no ``results.db``; CorruptStoreError: it is unreadable, its
            config does not fit the experiment, or a row is malformed (the row is named).
        UntrustedExperimentError: the folder names an experiment that is not registered.
    """
    loaded = _load(_folder("run_dir", run_dir), experiment, registry)
    if loaded.changed:
        warnings.warn(
            f"{run_dir} is a mixed run folder: {len(loaded.changed)} unit(s) were stored with params that differ "
            f"from what {loaded.experiment.name} now gives (e.g. {loaded.changed[:3]}); see changed_units()",
            MixedRunWarning,
            stacklevel=2,
        )
    return loaded.experiment, loaded.config, loaded.frame


def changed_units(
    run_dir: str | os.PathLike[str], *, experiment: str | Experiment | None = None, registry: Registry | None = None
) -> list[str]:
    """The keys of a run folder's units stored with params that differ from what the experiment now gives.

    A non-empty list means the folder is *mixed*: its results come from two versions of the
    experiment's code. ``report`` marks its table so; ``run`` refuses to resume it unless asked to
    recompute just those units (``rerun_changed=True``, ``structnets run ... --rerun-changed``).

    Args:
        run_dir, experiment, registry: as for :func:`load_results`.

    Returns:
        The changed keys, in unit order (empty for a folder all of whose units are current).

    Raises:
        As :func:`load_results`.
    """
    return _load(_folder("run_dir", run_dir), experiment, registry).changed


def report(
    run_dir: str | os.PathLike[str],
    *,
    experiment: str | Experiment | None = None,
    figure_format: str = "png",
    registry: Registry | None = None,
) -> str:
    """Regenerate ``results.csv``, ``table.md`` and ``figures/`` of a run from ``results.db`` alone.

    Works on unfinished runs too: the table then starts with a notice of how many units are
    finished and which are missing, and shows what the finished units allow. A mixed folder (see
    :func:`changed_units`) gets a notice naming its changed units and how to recompute them.

    Args:
        run_dir: a folder written by :func:`run`.
        experiment: the experiment, when the run folder cannot name a registered one (see
            :func:`load_results`).
        figure_format: ``"png"`` (default), ``"pdf"`` or ``"svg"``.
        registry: the registered experiments (names to specs); None: the default registry.

    Returns:
        The Markdown text written to ``table.md``.

    Raises:
        StoreError: no ``results.db`` in ``run_dir``, or ``run_dir`` is not writable;
            CorruptStoreError: it is unreadable or malformed.
        RunLockedError: a run is writing into ``run_dir`` now (it writes these files when it ends).
        UntrustedExperimentError: the folder names an experiment that is not registered.
        ExperimentError: the experiment's ``report`` or ``figures`` failed on a finished run.
    """
    _check_figure_format(figure_format)
    run_dir = _folder("run_dir", run_dir)
    if not run_dir.is_dir():
        raise StoreError(f"`run_dir` {run_dir} is not a directory")
    _check_writable(run_dir, "report writes results.csv, table.md and figures/ there")
    check_own_files(run_dir)
    # The run lock: a run in progress writes these files itself when it ends (RunLockedError meanwhile).
    with run_lock(run_dir):
        loaded = _load(run_dir, experiment, registry)
        with figure_format_context(figure_format):
            table, _ = write_outputs(
                loaded.experiment, loaded.config, loaded.frame, run_dir, loaded.missing or None, loaded.changed
            )
    return table


def _check_figure_format(figure_format: str) -> None:
    if figure_format not in FIGURE_FORMATS:
        raise ValueError(f"`figure_format` must be one of {', '.join(FIGURE_FORMATS)}, got {figure_format!r}")


def _check_writable(folder: Path, why: str) -> None:
    if not os.access(folder, os.W_OK | os.X_OK):
        raise StoreError(
            f"{folder} is not writable ({why}); copy the run folder somewhere writable, or fix its permissions"
        )


def run_experiment(
    experiment: Experiment, config: Any = None, out_dir: str | Path | None = None, **runner_options: Any
) -> pd.DataFrame:
    """Run ``experiment`` and return one row per unit (docs/design.md, convention 7: ``run(config) -> DataFrame``).

    Args:
        experiment: the experiment object.
        config: defaults to the full preset ``experiment.config_class()``.
        out_dir: the run folder (resumes when it already holds results); a temporary folder if None.
        runner_options: ``backend``, ``jobs``, ``progress``, ``registry``, ... as in :func:`run`.
    """
    config = experiment.config_class() if config is None else config
    if out_dir is None:
        with tempfile.TemporaryDirectory() as tmp:
            return run(experiment, config, Path(tmp), **runner_options)
    return run(experiment, config, Path(out_dir), **runner_options)


__all__ = ["ProgressCallback", "changed_units", "load_results", "report", "results_frame", "run", "run_experiment"]
