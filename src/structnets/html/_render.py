"""The Jinja2 environment every page is rendered with: package templates, autoescaping always on."""

from __future__ import annotations

import functools
import math
import re
from typing import Any

__all__ = ["LONE_SURROGATE", "HtmlUnavailableError", "check_available", "number", "render"]


class HtmlUnavailableError(RuntimeError):
    """Jinja2, which renders the HTML pages, is not installed."""


@functools.cache
def _environment() -> Any:
    try:
        import jinja2
    except ImportError as e:  # a core dependency; only a broken install lacks it
        raise HtmlUnavailableError(
            f"the HTML report needs Jinja2, which is not installed ({e}); install it with "
            "`pip install -c constraints.txt 'jinja2>=3.1'` or reinstall structnets"
        ) from e
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("structnets.html", "templates"),
        # Every template, whatever its name: a value from a run folder is always text, never markup.
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["number"] = number
    return env


def check_available() -> None:
    """Raise :class:`HtmlUnavailableError` (saying how to install it) when Jinja2 cannot be imported."""
    _environment()


LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""A lone surrogate: a byte of a file name that is not UTF-8, as Python holds it (``os.fsdecode``)."""


def render(template: str, **context: Any) -> str:
    """Render the package template ``template`` with ``context``; every value is HTML-escaped.

    A lone surrogate (how Python holds a byte of a file name that is not UTF-8, e.g. ``--out
    $'run\\xff'``) becomes U+FFFD, as a terminal shows it: UTF-8 cannot encode it, so the page
    could not be written at all.

    Raises:
        HtmlUnavailableError: Jinja2 is not installed.
    """
    return LONE_SURROGATE.sub("\ufffd", str(_environment().get_template(template).render(**context)))


def number(value: Any) -> str:
    """A result cell as text: floats with 6 significant digits, ``None`` as empty, the rest as ``str``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:.6g}"
    return str(value)
