"""The claims page: every headline claim, the paper's value beside ours, the verdict and a link to its run's page.

Rendered from a :func:`structnets.claims.claims_table` (this module decides nothing: the verdicts are
the claims package's). The verdict counts come first, so a 1280-pixel-wide window shows them without
scrolling; then one table per paper. Each verdict is a coloured badge that also says the verdict in
words (and carries a symbol), so colour is never the only cue. Each evidence cell links to the run's
``report.html``, relative to the page's own folder: at the row of the unit the evidence used
(``#unit-KEY``, see :func:`structnets.html.run_page.unit_anchor`) when it used one, else at the
results table, with the units it used listed below the link (collapsed; each a link to its row, the
first :data:`LISTED_UNITS` of them, then how many more).
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from . import _markdown
from ._render import render
from .run_page import REPORT_HTML, unit_anchor

__all__ = ["render_claims_page", "write_claims_page"]

LISTED_UNITS = 20
"""How many of a claim's units its evidence cell lists, each linked to its row; the rest are counted."""

_FRAGMENT_SAFE = "!$&'()*+,;=:@/?-._~"
"""Characters a URL fragment may hold as they are (RFC 3986); the rest are percent-encoded."""


@dataclass(frozen=True)
class _Unit:
    key: str
    href: str


@dataclass(frozen=True)
class _Row:
    id: str
    claim: str
    paper_value: str
    ours: str
    verdict: str
    verdict_class: str
    test: str
    run: str
    experiment: str
    preset: str
    units: str
    href: str | None
    page_exists: bool
    unit_links: tuple[_Unit, ...] = ()  # several units: the first LISTED_UNITS, each linked to its row
    unit_key: str = ""  # one unit: its key (the run link goes to its row)
    more_units: int = 0  # units used but not listed


def verdict_class(verdict: str) -> str:
    """The CSS class of a verdict's badge, e.g. ``v-not-reproduced-optimisation-limited``."""
    return "v-" + "-".join("".join(c if c.isalnum() else " " for c in verdict.lower()).split())


def _run_folder(cell: str) -> Path:
    """The folder a ``run`` cell names: the cell itself, or without a trailing ``" (...)"`` mark
    such as ``structnets claims``' ``(mixed: N units with old params)``."""
    path = Path(cell)
    if not path.is_dir():
        bare = re.sub(r" \([^()]*\)\Z", "", cell)
        if bare != cell and Path(bare).is_dir():
            return Path(bare)
    return path


def _page_address(run: str, page_dir: Path) -> tuple[str, bool]:
    """The address of ``run``'s ``report.html`` from ``page_dir`` (no fragment), and whether it exists.

    Two relative paths are candidates: on the paths as written (symbolic links kept, as a browser
    resolves ``..`` in an address) and on the resolved paths. Of those that reach the page from the
    page's real folder, the one with the fewest ``..`` is taken (the written one on a tie): a run
    folder that is a link to another disk is linked through the link, and a page written through a
    linked project folder links inside the project, so the links keep working when the project
    folder moves with its links.
    """
    target = _run_folder(run) / REPORT_HTML
    real_dir, real_target = page_dir.resolve(), target.resolve()
    try:
        candidates = [
            os.path.relpath(os.path.abspath(target), os.path.abspath(page_dir)),
            os.path.relpath(real_target, real_dir),
        ]
    except ValueError:  # another drive (Windows): an absolute file: address
        return real_target.as_uri(), target.is_file()
    working = [c for c in candidates if (real_dir / c).resolve() == real_target] or candidates[1:]
    relative = min(working, key=lambda c: Path(c).parts.count(".."))
    return urllib.parse.quote(Path(relative).as_posix()), target.is_file()


def _unit_href(page: str, key: str) -> str:
    """``page`` at the row of unit ``key``: ``page#unit-KEY``, the fragment percent-encoded."""
    return f"{page}#{urllib.parse.quote(unit_anchor(key), safe=_FRAGMENT_SAFE)}"


def render_claims_page(
    table: pd.DataFrame, *, page_path: str | os.PathLike[str] | None = None, notes: Sequence[str] = ()
) -> str:
    """The HTML claims page of ``table``.

    Args:
        table: a :func:`structnets.claims.claims_table` result.
        page_path: where the page will be written; links to run pages are made relative to its
            folder (None: the current folder).
        notes: Markdown notices to show above the tables (e.g. ``structnets claims``' mixed-folder notices).

    Returns:
        The page, one self-contained HTML document.

    Raises:
        TypeError, ValueError: ``table`` is not a claims table (as :func:`structnets.claims.claims_markdown`).
        HtmlUnavailableError: Jinja2 is not installed.
    """
    from ..claims import COLUMNS, VERDICTS
    from ..claims.policies import policies_markdown
    from ..claims.table import unit_keys_of, verdict_rules

    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"`table` must be a pandas DataFrame from claims_table, got {type(table).__name__}")
    missing = [c for c in COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"`table` must have the claims_table columns {list(COLUMNS)}; it lacks {missing}")
    page_dir = Path(page_path).parent if page_path is not None else Path.cwd()
    papers: dict[str, list[_Row]] = {}
    for record in table.to_dict("records"):
        run = str(record["run"])
        keys = unit_keys_of(record["unit keys"])
        href: str | None = None
        exists = False
        links: tuple[_Unit, ...] = ()
        if run != "—":
            page, exists = _page_address(run, page_dir)
            href = _unit_href(page, keys[0]) if len(keys) == 1 else f"{page}#results"
            if len(keys) > 1:
                links = tuple(_Unit(key, _unit_href(page, key)) for key in keys[:LISTED_UNITS])
        row = _Row(
            id=str(record["id"]),
            claim=str(record["claim"]),
            paper_value=str(record["paper value"]),
            ours=str(record["ours"]),
            verdict=str(record["verdict"]),
            verdict_class=verdict_class(str(record["verdict"])),
            test=str(record["test"]),
            run=run,
            experiment=str(record["experiment"]),
            preset=str(record["preset"]),
            units=str(record["units"]),
            href=href,
            page_exists=exists,
            unit_links=links,
            unit_key=keys[0] if len(keys) == 1 and href else "",
            more_units=len(keys) - len(links) if len(keys) > 1 and href else 0,
        )
        papers.setdefault(str(record["paper"]), []).append(row)
    counts = table["verdict"].value_counts()
    summary: list[tuple[str, str, int]] = [(v, verdict_class(v), int(counts.get(v, 0))) for v in VERDICTS]
    context: dict[str, Any] = {
        "summary": summary,
        "total": len(table),
        "papers": papers,
        "rules": _markdown.spans(verdict_rules()),
        # the policy table without its heading (the template gives the section its own)
        "policies": _markdown.parse(policies_markdown().split("\n", 1)[1]),
        "generated": datetime.now(UTC).isoformat(timespec="seconds"),
        "notes": [_markdown.parse(note) for note in notes],
        "missing_pages": sorted({r.run for rows in papers.values() for r in rows if r.href and not r.page_exists}),
    }
    return render("claims.html.j2", **context)


def write_claims_page(table: pd.DataFrame, path: str | os.PathLike[str], *, notes: Sequence[str] = ()) -> Path:
    """Write the claims page of ``table`` to ``path`` atomically; return the path (``notes``: as for
    :func:`render_claims_page`).

    Raises:
        As :func:`render_claims_page`; OSError: the file cannot be written.
    """
    from .. import atomic_io

    target = Path(path)
    atomic_io.write_text(target, render_claims_page(table, page_path=target, notes=notes))
    return target
