"""Re-export of :mod:`structnets.atomic_io`, the package's one atomic writer (kept for old imports)."""

from __future__ import annotations

from ..atomic_io import file_mode, umask, write_bytes, write_csv, write_json, write_text

__all__ = ["file_mode", "umask", "write_bytes", "write_csv", "write_json", "write_text"]
