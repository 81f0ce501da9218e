"""Saving experiment figures: one place for layout, resolution and releasing the figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def save_figure(fig: Any, path: Path, *, dpi: int = 120) -> Path:
    """Lay out ``fig``, write it to ``path`` as PNG, close it (figures hold memory) and return ``path``."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
