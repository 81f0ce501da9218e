"""Argument checks shared by every public constructor and function.

Each raises ``ValueError``/``TypeError`` naming the argument, the constraint and the value
(DESIGN.md, convention 2), so callers never see a bare ``assert``.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any


def check_int(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an int in ``[low, high]`` or raise naming ``name``.

    ``bool`` is rejected: ``True`` is an ``int`` to Python but never a width or a rank.
    """
    bounds = _bounds_text(low, high)
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"`{name}` must be an int{bounds}, got {value!r} ({type(value).__name__})")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"`{name}` must be an int{bounds}, got {value}")
    return value


def check_real(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite float within the given (open or closed) bounds."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"`{name}` must be a real number, got {value!r} ({type(value).__name__})")
    value = float(value)
    left = "(" if low_open else "["
    right = ")" if high_open else "]"
    interval = f" in {left}{'-inf' if low is None else low}, {'inf' if high is None else high}{right}"
    if not math.isfinite(value):
        raise ValueError(f"`{name}` must be finite{interval}, got {value}")
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        raise ValueError(f"`{name}` must be a real number{interval}, got {value}")
    return value


def check_choice(name: str, value: Any, choices: tuple[str, ...] | list[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise listing them."""
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {sorted(choices)}, got {value!r}")
    return value


def _bounds_text(low: int | None, high: int | None) -> str:
    if low is None and high is None:
        return ""
    if high is None:
        return f" >= {low}"
    if low is None:
        return f" <= {high}"
    return f" in [{low}, {high}]"
