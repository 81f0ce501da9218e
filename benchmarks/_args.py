"""Argument types shared by the benchmark scripts."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def int_at_least(low: int) -> Callable[[str], int]:
    """argparse type: an int ≥ ``low``, with an error naming the bound and the value."""

    def parse(text: str) -> int:
        value = int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an int >= {low}, got {text!r}")
        return value

    return parse


def positive_ints(text: str) -> tuple[int, ...]:
    """argparse type: comma-separated positive ints such as ``100,256``."""
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive ints such as 100,256, got {text!r}")
    return values
