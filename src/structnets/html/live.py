"""Refreshing ``RUN/report.html`` while ``structnets run`` works, so a long run can be watched in a browser tab.

The page is a convenience, never a reason for a run to fail or slow down: every render is wrapped so
that an error is logged (a warning the first time, then at debug level) and the run goes on, and
renders are throttled so that rendering takes at most ``budget`` of the wall time (the next render
waits ``max(min_interval, last render time / budget)``). The page is always rendered once more when
the run ends, whatever ended it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .run_page import FAILED_UNITS, FailedUnit, record_failed_unit, remove_page_temporaries, write_run_page

logger = logging.getLogger(__name__)

__all__ = ["LiveReport"]


class LiveReport:
    """Renders ``run_dir/report.html`` from a run's progress callbacks, throttled, never raising.

    Args:
        run_dir: the run folder.
        experiment: the experiment object (so an experiment outside the registry renders too).
        registry: the registered experiments, as handed to the runner.
        min_interval: fewest seconds between two renders during the run.
        budget: the largest share of wall time rendering may take, in (0, 1].
        clock: a monotonic clock in seconds (tests pass a fake).

    Use ``progress(done, total)`` as (part of) the runner's progress callback, and call
    :meth:`finish` once the run has ended.
    """

    def __init__(
        self,
        run_dir: str | Path,
        *,
        experiment: Any = None,
        registry: Mapping[str, str] | None = None,
        min_interval: float = 30.0,
        budget: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 < budget <= 1:
            raise ValueError(f"`budget` must be in (0, 1], got {budget!r}")
        if not min_interval >= 0:
            raise ValueError(f"`min_interval` must be >= 0, got {min_interval!r}")
        self.run_dir = Path(run_dir)
        self.experiment = experiment
        self.registry = registry
        self.min_interval = float(min_interval)
        self.budget = float(budget)
        self.clock = clock
        self.renders = 0  # pages written
        self.failures = 0  # renders that failed (logged)
        self._next: float | None = None  # clock time before which no render starts (None: render now)
        self._progress: tuple[int, int] | None = None
        self._drawn: list[dict[str, Any]] | None = None  # the figures the runner drew, kept as SVG

    @contextlib.contextmanager
    def capture(self) -> Iterator[None]:
        """Around the runner's call: keep the figures it draws at the end as SVG, so the last page
        embeds them instead of drawing them again (one extra ``savefig`` per figure, not a redraw)."""
        from ..protocol import figure_descriptions

        with figure_descriptions(keep_svg=True) as drawn:
            self._drawn = drawn
            yield

    def progress(self, done: int, total: int) -> None:
        """Record ``(done, total)``; render the page when the throttle allows."""
        first = self._progress is None
        self._progress = (int(done), int(total))
        if done >= total:
            return  # nothing left in this round: the next round's call or the last page follows at once
        now = self.clock()
        if self._next is not None and now < self._next:
            return
        # The first page comes before any unit of this session finished: figures/ as it is will do.
        self._render(status="running", draw_figures=not first)

    def tee(self, first: Callable[[int, int], None]) -> Callable[[int, int], None]:
        """A progress callback that calls ``first(done, total)``, then :meth:`progress`."""

        def progress(done: int, total: int) -> None:
            first(done, total)
            self.progress(done, total)

        return progress

    def finish(self, status: str, failure: tuple[str, str] | None = None) -> None:
        """Render the page a last time with the run's final ``status``; record ``failure`` ``(key, error)``.

        Call it once :func:`structnets.runner.run` has returned (or raised): the page is written
        holding the folder's run lock, as the runner wrote the folder, so a second ``structnets run``
        or ``report`` of the folder that started meanwhile is never overwritten by this run's last
        page (that one is then not written: the other process owns the folder and its page). The
        temporaries a write of the page cut short left in the folder (``kill -9``) are removed.
        Nothing is written when the run never reached its first progress call (e.g. a folder it refused).
        """
        if self._progress is None:
            return
        from ..runner.errors import RunLockedError
        from ..runner.lock import run_lock

        try:
            with run_lock(self.run_dir):
                self._finish_locked(status, failure)
        except RunLockedError as e:
            logger.info("%s not refreshed: %s", self.run_dir / "report.html", e)
        except Exception as e:  # noqa: BLE001 - the page is a convenience: log, never raise
            self.failures += 1
            logger.warning("could not write the last %s: %s: %s", self.run_dir / "report.html", type(e).__name__, e)

    def _finish_locked(self, status: str, failure: tuple[str, str] | None) -> None:
        remove_page_temporaries(self.run_dir)
        if failure is not None:
            try:
                when = datetime.now(UTC).isoformat(timespec="seconds")
                record_failed_unit(self.run_dir, FailedUnit(failure[0], " ".join(failure[1].split()), when))
            except Exception as e:  # noqa: BLE001 - the page is a convenience: log, never raise
                logger.warning("could not record the failed unit in %s: %s", self.run_dir, e)
        # The runner's own run_info.json now holds the final status and unit counts. A finished run's
        # figures were drawn by the runner (kept by capture()); a stopped run's are not drawn, so
        # that Ctrl-C or a failure ends the command at once.
        finished = status == "finished"
        if finished:  # every unit finished: a failure on record is over (or of a config the folder left)
            with contextlib.suppress(OSError):
                (self.run_dir / FAILED_UNITS).unlink(missing_ok=True)
        self._render(
            status=None if finished else status,
            final=True,
            figures=self._drawn if finished else None,
            draw_figures=finished,
        )

    def _render(
        self,
        *,
        status: str | None,
        final: bool = False,
        figures: list[dict[str, Any]] | None = None,
        draw_figures: bool = True,
    ) -> None:
        if not (self.run_dir / "results.db").is_file():
            return  # the run failed before it made its folder: nothing to show
        start = self.clock()
        try:
            write_run_page(
                self.run_dir,
                lock=False,  # the runner holds it, or finish() does
                experiment=self.experiment,
                registry=self.registry,
                progress=None if final else self._progress,
                status=status,
                figures=figures,
                draw_figures=draw_figures,
            )
            self.renders += 1
        except KeyboardInterrupt:
            if not final:
                raise
            logger.info("refreshing %s interrupted", self.run_dir / "report.html")
        except Exception as e:  # noqa: BLE001 - the page is a convenience: log, never raise
            self.failures += 1
            log = logger.warning if self.failures == 1 else logger.debug
            log("could not refresh %s (the run goes on): %s: %s", self.run_dir / "report.html", type(e).__name__, e)
        finally:
            elapsed = self.clock() - start
            self._next = self.clock() + max(self.min_interval, elapsed / self.budget)
