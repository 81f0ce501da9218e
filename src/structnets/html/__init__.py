"""HTML pages of run folders and of the claims table: one self-contained, offline file each.

* :func:`write_run_page` writes ``RUN/report.html`` (``structnets report RUN --html``; ``structnets
  run`` refreshes it as units finish, see :class:`LiveReport`).
* :func:`write_claims_page` writes the claims page (``structnets claims ... --html FILE``).

Pages are rendered from Jinja2 templates shipped with the package, with autoescaping on for every
template, so any value from a run folder (a config string, an error message, a result cell) shows as
text. Styles are inline and figures are embedded SVG ``data:`` URIs; a Content-Security-Policy
forbids every script and fetch, so a page opens offline and runs nothing.
"""

from __future__ import annotations

from ._render import HtmlUnavailableError, check_available
from .claims_page import render_claims_page, write_claims_page
from .live import LiveReport
from .run_page import REPORT_HTML, FailedUnit, record_failed_unit, render_run_page, write_run_page

__all__ = [
    "REPORT_HTML",
    "FailedUnit",
    "HtmlUnavailableError",
    "LiveReport",
    "check_available",
    "record_failed_unit",
    "render_claims_page",
    "render_run_page",
    "write_claims_page",
    "write_run_page",
]
