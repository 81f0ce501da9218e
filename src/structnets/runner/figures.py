"""Saving experiment figures: one place for layout, resolution, file format and releasing the figure."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FIGURE_FORMATS: tuple[str, ...] = ("png", "pdf", "svg")
"""Formats a run's ``figures/`` can be written in (``--figure-format``)."""

_FORMAT: contextvars.ContextVar[str] = contextvars.ContextVar("structnets_figure_format", default="png")


@contextlib.contextmanager
def figure_format_context(figure_format: str) -> Iterator[None]:
    """Within the block, :func:`save_figure` writes ``figure_format`` files (the runner sets it
    around an experiment's ``figures``, so experiments need not know the format).

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


def current_figure_format() -> str:
    """The format :func:`save_figure` writes now (``"png"`` outside :func:`figure_format_context`)."""
    return _FORMAT.get()


def save_figure(fig: Any, path: Path, *, dpi: int = 120) -> Path:
    """Lay out ``fig``, write it, close it (figures hold memory) and return the path written.

    The file is written in the current format (:func:`figure_format_context`; PNG by default):
    ``path``'s suffix is replaced by it, so ``save_figure(fig, out / "accuracy.png")`` writes
    ``accuracy.pdf`` in a ``--figure-format pdf`` run. ``dpi`` applies to PNG (and to raster
    parts of vector files).
    """
    import matplotlib.pyplot as plt

    figure_format = _FORMAT.get()
    path = Path(path).with_suffix(f".{figure_format}")
    fig.tight_layout()
    fig.savefig(path, dpi=dpi, format=figure_format)
    plt.close(fig)
    return path
