"""Which preset a run's configuration is, so that a report judges a preset's target only on that preset.

The MNIST reports set targets for their presets (the quick preset's smoke target, the full preset's
published-result target). A configuration changed in any field other than its repetitions (``seeds``) and
its placement (``device``) is another protocol: two epochs of the full preset are neither preset, and its
report must not call a target met or missed (before 2026-12-07 the reports guessed "quick" from
``epochs <= 3``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

#: Fields a preset may change and stay that preset.
FREE_FIELDS = ("seeds", "device")


def preset_of(config: Any) -> str | None:
    """``"full"`` or ``"quick"`` where ``config`` is that preset of its class up to :data:`FREE_FIELDS`, else None."""
    cls = type(config)
    presets = [("full", cls())] + ([("quick", cls.quick())] if hasattr(cls, "quick") else [])
    names = {field.name for field in dataclasses.fields(config)}
    for name, preset in presets:
        loose = {field: getattr(preset, field) for field in FREE_FIELDS if field in names}
        if dataclasses.replace(config, **loose) == preset:
            return name
    return None


def not_judged_lines() -> list[str]:
    """The report's lines where the configuration is neither preset: no target is judged on it."""
    return [
        "No target judged: the targets are set for the quick and full presets, and this configuration differs "
        f"from both in more than its {' and '.join(FREE_FIELDS)}.",
        "",
    ]


__all__ = ["FREE_FIELDS", "not_judged_lines", "preset_of"]
