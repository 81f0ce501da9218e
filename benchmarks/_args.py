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
