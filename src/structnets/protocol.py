"""What an experiment is: the protocol that :mod:`structnets.experiments` implement and :mod:`structnets.runner` drives.

This module is the one both sides import, and it imports neither (docs/design.md, "Runner"): the runner
never knows what a unit computes, and an experiment never knows where its units run.

An experiment is a module-level object implementing :class:`Experiment`. The runner asks it for units,
runs the unfinished ones (locally or on Ray), commits each result row to ``results.db`` the moment it
finishes, and asks again, so staged experiments (e.g. grid search, then cross-validation at the chosen
architecture) resume too.

Protocol (docs/design.md, "Runner" and convention 7):

* ``config_class``: a frozen dataclass; ``config_class.quick()`` returns the ``--quick`` preset and
  ``config_class()`` the full one. ``--set key=value`` overrides fields (parsed by field type).
* ``units(config, finished)``: every unit that can be run *now*, given the result rows already
  finished (a DataFrame with one row per finished unit, possibly empty, with a ``key`` column
  followed by the columns ``run_unit`` returned). Keys are stable strings, unique within one call,
  so a unit returned again after it finished is skipped; a later stage's units are returned once
  the stage before it is finished. The runner stops when every unit returned is finished.
  It must be a deterministic function of ``(config, finished)``: the runner calls it exactly as an
  uninterrupted run would (first with no rows; then, once all units returned so far are finished,
  with their rows in the order they were first returned), replaying those calls on resume, so a
  resumed run's results, table and figures equal an uninterrupted run's.
* ``run_unit(params)``: a pure, seeded function of the unit's JSON-serialisable ``params`` that
  returns one result row (a flat dict of :data:`JSONScalar`; NumPy scalars are unwrapped; the column
  name ``key`` is reserved). ``params`` arrive after a JSON round trip (tuples become lists), on
  every backend alike. It must not print. It runs in worker processes, so the experiment must be
  reachable there: a registered name, or a module-level object (``"module.path:OBJECT"``).
* ``report(results, config)``: the Markdown text of ``table.md`` (ours beside the paper's).
* ``figures(results, config, out_dir)``: writes ``out_dir/*.png`` through :func:`save_figure` and
  returns their paths.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import numbers
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FIGURE_FORMATS",
    "Experiment",
    "FunctionExperiment",
    "JSONScalar",
    "ProgressCallback",
    "Unit",
    "config_to_dict",
    "current_figure_format",
    "figure_descriptions",
    "figure_format_context",
    "save_figure",
]

JSONScalar = str | int | float | bool | None
"""A value one result column may hold: what JSON stores without loss of type."""

ProgressCallback = Callable[[int, int], None]
"""Called as ``progress(done, total)`` before each round of units and after every finished unit;
``total`` counts the units known so far (it grows as a staged experiment reveals later stages) and
``done`` includes units finished in earlier sessions of a resumed run. The CLI draws the bar."""


@dataclass(frozen=True)
class Unit:
    """One independent, seeded piece of work.

    Attributes:
        key: stable unique id within the run, e.g. ``"cv/iris/lowrank/fold=3/seed=0"``.
        params: JSON-serialisable keyword arguments for the experiment's ``run_unit``.
    """

    key: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not self.key:
            raise TypeError(f"`key` must be a non-empty str, got {self.key!r:.80} ({type(self.key).__name__})")
        if not isinstance(self.params, Mapping):
            raise TypeError(f"`params` must be a mapping of keyword arguments, got {type(self.params).__name__}")


@runtime_checkable
class Experiment(Protocol):
    """The interface every experiment in :mod:`structnets.experiments` implements (see the module docstring).

    ``name``, ``description`` and ``config_class`` are read-only to the runner, so a plain class attribute
    and a frozen dataclass field (as in :class:`FunctionExperiment`) both satisfy them.
    """

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def config_class(self) -> type: ...

    def units(self, config: Any, finished: pd.DataFrame) -> list[Unit]: ...

    def run_unit(self, params: Mapping[str, Any]) -> dict[str, JSONScalar]: ...

    def report(self, results: pd.DataFrame, config: Any) -> str: ...

    def figures(self, results: pd.DataFrame, config: Any, out_dir: Path) -> list[Path]: ...


def config_to_dict(config: Any) -> dict[str, Any]:
    """Return a frozen-dataclass config as a JSON-ready dict (``dataclasses.asdict``, for ``run_info.json``).

    Args:
        config: a dataclass instance.

    Returns:
        Its fields, recursively converted to dicts, lists and scalars.
    """
    if not dataclasses.is_dataclass(config) or isinstance(config, type):
        raise TypeError(f"`config` must be a dataclass instance, got {config!r:.80} ({type(config).__name__})")
    return dataclasses.asdict(config)


@dataclass(frozen=True)
class FunctionExperiment:
    """An :class:`Experiment` assembled from four module-level functions (what every paper
    experiment in :mod:`structnets.experiments` is). Functions pickle by reference, so worker
    processes and Ray tasks can run it.

    Attributes:
        name, description: as shown by ``structnets list``.
        config_class: the frozen config dataclass (with a ``quick()`` preset).
        units_fn, run_unit_fn, report_fn, figures_fn: the protocol's four methods, as functions.
    """

    name: str
    description: str
    config_class: type
    units_fn: Callable[[Any, pd.DataFrame], list[Unit]]
    run_unit_fn: Callable[[Mapping[str, Any]], dict[str, JSONScalar]]
    report_fn: Callable[[pd.DataFrame, Any], str]
    figures_fn: Callable[[pd.DataFrame, Any, Path], list[Path]]

    def units(self, config: Any, finished: pd.DataFrame) -> list[Unit]:
        return self.units_fn(config, finished)

    def run_unit(self, params: Mapping[str, Any]) -> dict[str, JSONScalar]:
        return self.run_unit_fn(params)

    def report(self, results: pd.DataFrame, config: Any) -> str:
        return self.report_fn(results, config)

    def figures(self, results: pd.DataFrame, config: Any, out_dir: Path) -> list[Path]:
        return self.figures_fn(results, config, out_dir)


# -- figures ----------------------------------------------------------------------------------------

FIGURE_FORMATS: tuple[str, ...] = ("png", "pdf", "svg")
"""Formats a run's ``figures/`` can be written in (``--figure-format``)."""

_FORMAT: contextvars.ContextVar[str] = contextvars.ContextVar("structnets_figure_format", default="png")


@contextlib.contextmanager
def figure_format_context(figure_format: str) -> Iterator[None]:
    """Within the block, :func:`save_figure` writes ``figure_format`` files (the runner sets it
    around an experiment's ``figures``, so experiments need not know the format).

    Args:
        figure_format: one of :data:`FIGURE_FORMATS`.

    Raises:
        ValueError: ``figure_format`` is not one of :data:`FIGURE_FORMATS`.
    """
    if figure_format not in FIGURE_FORMATS:
        raise ValueError(f"`figure_format` must be one of {', '.join(FIGURE_FORMATS)}, got {figure_format!r}")
    token = _FORMAT.set(figure_format)
    try:
        yield
    finally:
        _FORMAT.reset(token)


_DESCRIPTIONS: contextvars.ContextVar[tuple[list[dict[str, Any]], bool] | None] = contextvars.ContextVar(
    "structnets_figure_descriptions", default=None
)


@contextlib.contextmanager
def figure_descriptions(*, keep_svg: bool = False) -> Iterator[list[dict[str, Any]]]:
    """Within the block, :func:`save_figure` describes every figure it writes in the yielded list.

    Each entry is ``{"path": Path, "title": str, "axes": [{"title", "xlabel", "ylabel"}, ...]}``
    (the figure's suptitle and each axes' labels, as drawn), so a report can give each figure a
    title and alt text without the experiment saying more than it draws. With ``keep_svg`` each
    entry also holds ``"svg"``: the figure as SVG bytes (the file written, when it is SVG; else one
    more ``savefig`` into memory, after the layout is done), so a page can embed the run's own
    figures without drawing them again.

    Args:
        keep_svg: also keep each figure as SVG bytes.

    Yields:
        The list, filled as figures are saved.
    """
    found: list[dict[str, Any]] = []
    token = _DESCRIPTIONS.set((found, bool(keep_svg)))
    try:
        yield found
    finally:
        _DESCRIPTIONS.reset(token)


def _describe(fig: Any, path: Path) -> dict[str, Any]:
    axes = [
        {"title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel()}
        for ax in fig.axes
        if ax.get_visible() and ax.axison
    ]
    return {"path": path, "title": fig.get_suptitle(), "axes": axes}


def current_figure_format() -> str:
    """The format :func:`save_figure` writes now (``"png"`` outside :func:`figure_format_context`)."""
    return _FORMAT.get()


def save_figure(fig: Any, path: Path, *, dpi: int = 120) -> Path:
    """Lay out ``fig``, write it, close it (figures hold memory) and return the path written.

    The file is written in the current format (:func:`figure_format_context`; PNG by default):
    ``path``'s suffix is replaced by it, so ``save_figure(fig, out / "accuracy.png")`` writes
    ``accuracy.pdf`` in a ``--figure-format pdf`` run.

    Args:
        fig: a matplotlib figure.
        path: where to write it (the suffix is replaced by the current format's).
        dpi: resolution of PNG files (and of raster parts of vector files), an int in [1, 10000].

    Returns:
        The path written.
    """
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        raise TypeError(f"`fig` must be a matplotlib Figure, got {type(fig).__name__}")
    if not isinstance(path, str | os.PathLike) or Path(path).name in ("", ".", ".."):
        raise TypeError(f"`path` must be a str or os.PathLike naming a file, got {path!r:.80}")
    # (checked here, not with structnets._validation: this module imports nothing else of structnets)
    if isinstance(dpi, bool) or not isinstance(dpi, numbers.Integral):
        raise TypeError(f"`dpi` must be an int in [1, 10000], got {dpi!r} ({type(dpi).__name__})")
    if not 1 <= dpi <= 10_000:
        raise ValueError(f"`dpi` must be an int in [1, 10000], got {dpi}")
    dpi = int(dpi)
    figure_format = _FORMAT.get()
    path = Path(path).with_suffix(f".{figure_format}")
    fig.tight_layout()
    collector = _DESCRIPTIONS.get()
    entry = _describe(fig, path) if collector is not None else None
    try:
        fig.savefig(path, dpi=dpi, format=figure_format)
        if collector is not None and entry is not None:
            found, keep_svg = collector
            if keep_svg:
                if figure_format == "svg":
                    entry["svg"] = path.read_bytes()
                else:
                    import io

                    buffer = io.BytesIO()
                    fig.savefig(buffer, dpi=dpi, format="svg")
                    entry["svg"] = buffer.getvalue()
            found.append(entry)
    finally:
        plt.close(fig)
    return path
