"""Saving experiment figures (re-exported from :mod:`structnets.protocol`, where they live, so old imports work)."""

from __future__ import annotations

from ..protocol import FIGURE_FORMATS, current_figure_format, figure_format_context, save_figure

__all__ = ["FIGURE_FORMATS", "current_figure_format", "figure_format_context", "save_figure"]
