"""Where units run: in this process, in local worker processes, or on a Ray cluster.

A backend takes ``(key, params)`` pairs and yields one :class:`Outcome` per unit as units finish,
in completion order. The runner (not the workers) commits each outcome to ``results.db``. A unit
that raises becomes a failed outcome carrying its traceback; the runner then calls
:meth:`Backend.cancel_pending` so that no new unit starts, and drains the ones in flight.
"""

from __future__ import annotations

import abc
import json
import logging
import multiprocessing
import os
import select
import signal
import socket
import threading
import time
import traceback as tb
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..protocol import Experiment
from .checkpoints import checkpoint_file, checkpointing
from .errors import BackendUnavailableError, ExperimentError
from .info import available_cpus
from .store import UnitRecord, dumps, dumps_row, utc_now
from .unit_models import MODELS, model_file, saving_models

logger = logging.getLogger(__name__)

BACKENDS = ("local", "ray")

ExperimentRef = Any
"""A ``"module.path:OBJECT"`` spec (or a name of the default registry) for
:func:`~structnets.runner.resolve.resolve_experiment`, or a picklable experiment."""


@dataclass(frozen=True)
class Outcome:
    """What running one unit gave: a record, or an error with the worker's traceback."""

    key: str
    record: UnitRecord | None = None
    error: str | None = None
    traceback: str | None = None

    @property
    def ok(self) -> bool:
        return self.record is not None


def clean_result(key: str, result: Any) -> dict[str, Any]:
    """Check that ``run_unit`` returned a flat dict of JSON scalars; unwrap NumPy scalars.

    Raises:
        ExperimentError: naming the unit and the offending column.
    """
    if not isinstance(result, Mapping):
        raise ExperimentError(f"run_unit must return a dict for unit {key!r}, got {type(result).__name__}")
    out: dict[str, Any] = {}
    for column, value in result.items():
        if not isinstance(column, str):
            raise ExperimentError(f"run_unit returned a non-string column name {column!r} for unit {key!r}")
        if column == "key":
            raise ExperimentError(f"run_unit returned a column named 'key' for unit {key!r}; 'key' is reserved")
        if hasattr(value, "item") and getattr(value, "shape", None) == ():  # NumPy / torch scalars
            value = value.item()
        if value is not None and not isinstance(value, (str, int, float, bool)):
            raise ExperimentError(
                f"run_unit returned {type(value).__name__} in column {column!r} for unit {key!r}; "
                "results must be JSON scalars (str, int, float, bool or None)"
            )
        out[column] = value
    # Round-trip now, in the worker: a fresh run then holds exactly what a resumed one reads back.
    return json.loads(dumps_row(out))


def execute_unit(
    experiment: Experiment, key: str, params: Mapping[str, Any], checkpoints: Path | None = None
) -> Outcome:
    """Run one unit and time it; never raises for errors inside ``run_unit``.

    ``checkpoints``: the run folder's checkpoint folder; the unit then finds its own file there
    through :func:`~structnets.runner.checkpoints.unit_checkpoint`, and its model file in the run
    folder's ``models/`` through :func:`~structnets.runner.unit_models.unit_model_file`.
    """
    started = utc_now()
    t0 = time.perf_counter()
    path = None if checkpoints is None else checkpoint_file(checkpoints, key, params)
    # the trained model's file, beside the checkpoints in the same run folder (kept after the run)
    saved = None if checkpoints is None else model_file(checkpoints.parent / MODELS, key, params)
    try:
        # A fresh copy, so that run_unit sees exactly what a worker process would.
        with checkpointing(path), saving_models(saved):
            result = clean_result(key, experiment.run_unit(json.loads(dumps(dict(params)))))
    except Exception as e:  # noqa: BLE001 - reported to the runner with its traceback
        return Outcome(key, error=f"{type(e).__name__}: {e}", traceback=tb.format_exc())
    wall = time.perf_counter() - t0
    record = UnitRecord(
        key=key,
        params=params,
        result=result,
        started=started,
        finished=utc_now(),
        worker=f"pid:{os.getpid()}",
        host=socket.gethostname(),
        wall_s=wall,
    )
    return Outcome(key, record=record)


_WORKER_CACHE: dict[str, Experiment] = {}


MAX_DEFAULT_JOBS = 8
"""The default ``jobs`` is one per available CPU, at most this many (each worker holds torch)."""


def default_jobs() -> int:
    """The ``jobs`` a run uses when none is given on the command line: one per available CPU, at most
    :data:`MAX_DEFAULT_JOBS`.

    Each worker then runs torch with ``cpus // jobs`` threads (usually 1). Single-threaded workers
    are what stays fast on a shared machine: a torch thread pool wider than the idle cores makes
    every operation wait for a busy core (a fit measured 200x slower with 2 threads and one busy core).
    """
    return max(1, min(available_cpus(), MAX_DEFAULT_JOBS))


def threads_per_job(jobs: int | None) -> int:
    """Torch threads for each of ``jobs`` concurrent units: ``max(1, cpus // jobs)``."""
    return max(1, available_cpus() // max(1, jobs or 1))


def set_threads(threads: int) -> int:
    """Set torch's intra-op threads (and the OpenMP/MKL/BLAS variables children inherit) to ``threads``.

    The one place the runner sizes thread pools, for every backend; the rule is
    :func:`structnets.training.set_threads` with ``environment=True``. Returns the previous torch
    thread count, so that an in-process run can restore it.
    """
    from ..training.threads import set_threads as set_torch_threads

    return set_torch_threads(threads, environment=True)


def worker_execute(
    ref: ExperimentRef,
    key: str,
    params: Mapping[str, Any],
    threads: int | None = None,
    checkpoints: Path | None = None,
) -> Outcome:
    """Entry point in worker processes: find the experiment from ``ref`` and run one unit.

    ``threads``: torch threads for this unit (Ray tasks, which share no initializer); ``None``
    leaves them as the pool's initializer set them.
    """
    if threads is not None:
        set_threads(threads)
    if isinstance(ref, str):
        experiment = _WORKER_CACHE.get(ref)
        if experiment is None:
            from .resolve import resolve_experiment

            experiment = _WORKER_CACHE[ref] = resolve_experiment(ref)
    else:
        experiment = ref
    return execute_unit(experiment, key, params, checkpoints)


class Backend(abc.ABC):
    """Runs units and yields outcomes as they finish."""

    name: str
    jobs: int | None
    #: the run folder's checkpoint folder (set by the runner; None: units keep no checkpoint)
    checkpoints: Path | None = None

    @abc.abstractmethod
    def run(self, units: Sequence[tuple[str, Mapping[str, Any]]]) -> Iterator[Outcome]:
        """Yield one outcome per unit that ran, as each finishes (cancelled units yield nothing)."""

    @abc.abstractmethod
    def cancel_pending(self) -> None:
        """Start no further unit of the current :meth:`run`; the ones in flight still finish."""

    def abort(self) -> None:
        """Stop now (Ctrl-C): drop queued units and stop units in flight."""
        self.cancel_pending()

    def close(self) -> None:  # noqa: B027 - optional: backends without workers have nothing to release
        """Release workers (idempotent)."""


class InProcessBackend(Backend):
    """``local`` with one job: units run one after another in this process, with torch using
    :func:`threads_per_job` ``(1)`` threads (restored when the backend closes)."""

    name = "local"

    def __init__(self, experiment: Experiment) -> None:
        self.jobs = 1
        self._experiment = experiment
        self._cancelled = False
        self._previous: tuple[int, dict[str, str | None]] | None = None

    def run(self, units: Sequence[tuple[str, Mapping[str, Any]]]) -> Iterator[Outcome]:
        self._cancelled = False
        if self._previous is None:
            saved = {v: os.environ.get(v) for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
            self._previous = (set_threads(threads_per_job(1)), saved)
        for key, params in units:
            if self._cancelled:
                return
            yield execute_unit(self._experiment, key, params, self.checkpoints)

    def cancel_pending(self) -> None:
        self._cancelled = True

    def close(self) -> None:
        previous, self._previous = self._previous, None
        if previous is None:
            return
        threads, environ = previous
        set_threads(threads)
        for var, value in environ.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value


def _exit_when_gone(pid: int) -> None:
    """Block until process ``pid`` exits, then end this process at once (watchdog thread body)."""
    pidfd = None
    if hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            os._exit(1)
        except OSError:  # e.g. a kernel without pidfd: fall back to polling
            pidfd = None
    if pidfd is not None:
        select.select([pidfd], [], [])  # a pidfd becomes readable when its process exits
        os._exit(1)
    while True:
        time.sleep(1.0)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            os._exit(1)
        except OSError:
            pass


def watch_parent(pid: int) -> None:
    """Make this worker exit when the run's process ``pid`` dies, even by ``kill -9``.

    A worker's parent is the fork server, not the run, and a worker blocked on the task queue never
    sees the run die (it holds the queue's write end itself), so without this a killed run leaves
    its workers, the fork server and the resource tracker alive for good.
    """
    threading.Thread(target=_exit_when_gone, args=(pid,), name="structnets-parent-watchdog", daemon=True).start()


def _init_worker(threads: int, environ: dict[str, str], parent: int | None = None) -> None:
    """Worker initializer: leave Ctrl-C to the parent, share the CPUs between workers, and exit
    with the parent (``parent``: the run's pid).

    Workers are forked from a fork server started earlier, so they get the parent's environment as
    it is now (``environ``), not as it was when the fork server started.
    """
    if parent is not None:
        watch_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for var in set(os.environ) - set(environ):
        del os.environ[var]
    os.environ.update(environ)
    set_threads(threads)


def _mp_context() -> multiprocessing.context.BaseContext:
    """``forkserver`` where available (fork after importing torch is unsafe), else ``spawn``.

    The fork server imports structnets (and so torch) once; each worker is then forked from it
    before any torch thread pool exists, which is cheaper than a fresh interpreter per worker.
    """
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload([__name__])
        return ctx
    return multiprocessing.get_context("spawn")


class ProcessPoolBackend(Backend):
    """``local`` with ``jobs > 1``: a pool of worker processes on this machine.

    Each worker runs torch with :func:`threads_per_job` threads so that workers do not
    oversubscribe the CPUs, and exits when the run's process dies (:func:`watch_parent`). The pool
    starts on the first unit and is reused across stages.
    """

    name = "local"

    def __init__(self, ref: ExperimentRef, jobs: int) -> None:
        self.jobs = jobs
        self._ref = ref
        self._pool: ProcessPoolExecutor | None = None
        self._futures: list[Future[Outcome]] = []

    def _ensure_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=self.jobs,
                mp_context=_mp_context(),
                initializer=_init_worker,
                initargs=(threads_per_job(self.jobs), dict(os.environ), os.getpid()),
            )
        return self._pool

    def run(self, units: Sequence[tuple[str, Mapping[str, Any]]]) -> Iterator[Outcome]:
        pool = self._ensure_pool()
        keys: dict[Future[Outcome], str] = {}
        for key, params in units:
            keys[pool.submit(worker_execute, self._ref, key, dict(params), None, self.checkpoints)] = key
        self._futures = list(keys)
        for future in as_completed(keys):
            if future.cancelled():
                continue
            exc = future.exception()
            if exc is None:
                yield future.result()
            elif isinstance(exc, BrokenProcessPool):
                yield Outcome(
                    keys[future],
                    error=(
                        "a worker process died (killed, out of memory, or a script calling run(jobs>1) "
                        f"without an `if __name__ == '__main__':` guard): {exc}"
                    ),
                    traceback="",
                )
            else:
                yield Outcome(
                    keys[future],
                    error=f"{type(exc).__name__}: {exc}",
                    traceback="".join(tb.format_exception(exc)),
                )
        self._futures = []

    def cancel_pending(self) -> None:
        for future in self._futures:
            future.cancel()

    def abort(self) -> None:
        self.cancel_pending()
        pool, self._pool = self._pool, None
        if pool is None:
            return
        processes = list(getattr(pool, "_processes", {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:  # units in flight are lost; they rerun on resume
            if process.is_alive():
                process.terminate()
        for process in processes:
            process.join(timeout=10)

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


class RayBackend(Backend):
    """``ray``: one Ray task per unit, on a local Ray instance or the cluster at ``RAY_ADDRESS``.

    Workers look the experiment up from its reference (a registry name or ``module:OBJECT``), so
    structnets must be importable on every node. ``jobs`` caps the tasks in flight (``None``: Ray's
    scheduler decides, one CPU per task); each task runs torch with one thread (its one CPU).
    ``gpus_per_unit`` makes every task request that many GPUs (``num_gpus``; a fraction lets
    tasks share one); Ray then shows each task its GPUs through ``CUDA_VISIBLE_DEVICES``.
    """

    name = "ray"

    def __init__(self, ref: ExperimentRef, jobs: int | None, gpus_per_unit: float | None = None) -> None:
        try:
            import ray
        except ImportError as e:
            raise BackendUnavailableError(
                "the 'ray' backend needs Ray, which is not installed: pip install 'structnets[ray]'"
            ) from e
        self.jobs = jobs
        self.gpus_per_unit = gpus_per_unit
        self._ray = ray
        self._ref = ref
        self._started_here = False
        self._remote: Any = None
        self._in_flight: dict[Any, str] = {}
        self._cancelled = False

    def _ensure_ray(self) -> Any:
        ray = self._ray
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
            if not os.environ.get("RAY_ADDRESS"):
                kwargs["include_dashboard"] = False
            ray.init(**kwargs)  # reads RAY_ADDRESS itself; otherwise starts a local instance
            self._started_here = True
        if self._remote is None:
            options: dict[str, Any] = {"num_cpus": 1}
            if self.gpus_per_unit:
                available = float(ray.cluster_resources().get("GPU", 0))
                if available < self.gpus_per_unit:
                    raise BackendUnavailableError(
                        f"`gpus_per_unit`={self.gpus_per_unit:g} but the Ray cluster has {available:g} GPU(s); "
                        "no unit was started"
                    )
                options["num_gpus"] = self.gpus_per_unit
            self._remote = ray.remote(**options)(worker_execute)
        return self._remote

    def run(self, units: Sequence[tuple[str, Mapping[str, Any]]]) -> Iterator[Outcome]:
        remote = self._ensure_ray()
        ray = self._ray
        queue = list(units)[::-1]
        self._cancelled = False
        self._in_flight = {}
        while queue or self._in_flight:
            while queue and not self._cancelled and (self.jobs is None or len(self._in_flight) < self.jobs):
                key, params = queue.pop()
                self._in_flight[remote.remote(self._ref, key, dict(params), 1)] = key
            if not self._in_flight:
                return
            ready, _ = ray.wait(list(self._in_flight), num_returns=1)
            for ref in ready:
                key = self._in_flight.pop(ref)
                try:
                    yield ray.get(ref)
                except Exception as e:  # noqa: BLE001 - task or worker failure, reported per unit
                    yield Outcome(key, error=f"{type(e).__name__}: {e}", traceback="".join(tb.format_exception(e)))

    def cancel_pending(self) -> None:
        self._cancelled = True

    def abort(self) -> None:
        self._cancelled = True
        for ref in list(self._in_flight):
            try:
                self._ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - best effort while stopping
                pass
        self._in_flight = {}

    def close(self) -> None:
        if self._started_here and self._ray.is_initialized():
            self._ray.shutdown()
        self._started_here = False


def make_backend(
    backend: str,
    experiment: Experiment,
    ref: ExperimentRef | None,
    jobs: int | None,
    *,
    gpus_per_unit: float | None = None,
) -> Backend:
    """Build the backend called ``backend`` (``"local"`` or ``"ray"``).

    Args:
        gpus_per_unit: GPUs each Ray task requests (a float > 0; ``ray`` only).

    Raises:
        ValueError: an unknown backend name, a bad ``jobs`` or ``gpus_per_unit``, or
            ``gpus_per_unit`` with the local backend (whose units see every GPU of the machine).
        BackendUnavailableError: ``"ray"`` without Ray installed.
    """
    if backend not in BACKENDS:
        raise ValueError(f"`backend` must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ValueError(f"`jobs` must be a positive int or None, got {jobs!r}")
    if gpus_per_unit is not None:
        if (
            isinstance(gpus_per_unit, bool)
            or not isinstance(gpus_per_unit, (int, float))
            or not (0 < gpus_per_unit < float("inf"))
        ):
            raise ValueError(f"`gpus_per_unit` must be a finite number > 0 or None, got {gpus_per_unit!r}")
        if backend != "ray":
            raise ValueError(
                f"`gpus_per_unit` applies to the ray backend only (local units see every GPU of this machine), "
                f"got gpus_per_unit={gpus_per_unit!r} with backend={backend!r}"
            )
    target = ref if ref is not None else experiment
    if backend == "ray":
        return RayBackend(target, jobs, gpus_per_unit)
    if jobs is None or jobs == 1:
        return InProcessBackend(experiment)
    return ProcessPoolBackend(target, jobs)
