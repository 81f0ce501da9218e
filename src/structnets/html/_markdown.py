"""The Markdown an experiment's ``report()`` writes, parsed into blocks a template renders (never into HTML text).

``table.md`` uses a small part of Markdown: ATX headings, paragraphs, ``>`` notices, ``-`` lists, pipe
tables (``\\|`` for a literal bar), fenced code, and inline ``**bold**``, ``*italic*``, ``code`` and
``[text](target)``. :func:`parse` turns that into :class:`Block` objects whose text is a list of
:class:`Span` (kind and plain text); the Jinja2 template escapes every span, so nothing in a run
folder can become markup. Anything else stays plain text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["MAX_QUOTE_DEPTH", "Block", "Span", "parse", "spans"]


@dataclass(frozen=True)
class Span:
    """A run of inline text: ``kind`` is ``text``, ``strong``, ``em``, ``code`` or ``link`` (``href`` set)."""

    kind: str
    text: str
    href: str | None = None


@dataclass
class Block:
    """One block of the page.

    Attributes:
        kind: ``heading`` (``level`` 1–6), ``paragraph``, ``quote`` (``children``: blocks), ``list``
            (``items``), ``table`` (``header``, ``rows``: cells as span lists) or ``code`` (``text``).
    """

    kind: str
    spans: list[Span] = field(default_factory=list)
    level: int = 0
    children: list[Block] = field(default_factory=list)
    items: list[list[Span]] = field(default_factory=list)
    header: list[list[Span]] = field(default_factory=list)
    rows: list[list[list[Span]]] = field(default_factory=list)
    text: str = ""


_INLINE = re.compile(
    # A code span opens and closes with backtick runs of one length, each a whole run (as in CommonMark):
    # one opening per run, so a long run of backticks is read in linear time, not by trying its splits.
    r"(?<!`)(?P<code>`+)(?!`)(?P<code_text>.+?)(?<!`)(?P=code)(?!`)"
    r"|\*\*(?P<strong>\S(?:.*?\S)?)\*\*"
    r"|(?<![\w*])\*(?P<em>[^\s*](?:[^*]*?[^\s*])?)\*(?![\w*])"
    r"|\[(?P<link_text>[^\]]+)\]\((?P<href>[^)\s]+)\)"
)
_SAFE_HREF = re.compile(r"(?:https?://|#|\.{0,2}/?[\w.-])[^\s]*\Z")


def _href(target: str) -> str | None:
    """``target`` if it is a relative path, an anchor or an http(s) address; ``None`` (no link) else."""
    if ":" in target.split("/", 1)[0] and not target.startswith(("http://", "https://")):
        return None  # javascript:, data:, file: ...
    return target if _SAFE_HREF.match(target) else None


def spans(text: str) -> list[Span]:
    """``text``'s inline Markdown as spans (unknown markup stays literal text)."""
    out: list[Span] = []
    pos = 0
    for m in _INLINE.finditer(text):
        if m.start() > pos:
            out.append(Span("text", text[pos : m.start()]))
        if m.group("code") is not None:
            out.append(Span("code", m.group("code_text").strip() or m.group("code_text")))
        elif m.group("strong") is not None:
            out.append(Span("strong", m.group("strong")))
        elif m.group("em") is not None:
            out.append(Span("em", m.group("em")))
        else:
            href = _href(m.group("href"))
            out.append(Span("link", m.group("link_text"), href) if href else Span("text", m.group(0)))
        pos = m.end()
    if pos < len(text):
        out.append(Span("text", text[pos:]))
    return out


def _cells(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    cells, current, i = [], [], 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body) and body[i + 1] == "|":
            current.append("|")
            i += 2
            continue
        if body[i] == "|":
            cells.append("".join(current).strip())
            current = []
        else:
            current.append(body[i])
        i += 1
    cells.append("".join(current).strip())
    return cells


_RULE = re.compile(r"\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*\Z")
_HEADING = re.compile(r"(#{1,6})\s+(.*?)\s*#*\s*\Z")
_ITEM = re.compile(r"\s{0,3}[-*+]\s+(.*)\Z")


MAX_QUOTE_DEPTH = 8
"""Quotes nest this deep at most; a deeper ``>`` stays text (each level is a recursion of the reader
and of the template, so a line of thousands of ``>`` would otherwise make no page at all)."""


def parse(markdown: str, *, _depth: int = 0) -> list[Block]:
    """The blocks of ``markdown`` (see the module docstring for what is understood).

    Args:
        markdown: the text of a ``table.md``.

    Returns:
        Its blocks, in order.
    """
    lines = markdown.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped:
            i += 1
            continue
        if stripped.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith("```"):
                j += 1
            blocks.append(Block("code", text="\n".join(lines[i + 1 : j])))
            i = j + 1
            continue
        heading = _HEADING.match(stripped)
        if heading:
            blocks.append(Block("heading", spans(heading.group(2)), level=len(heading.group(1))))
            i += 1
            continue
        if stripped.startswith(">") and _depth < MAX_QUOTE_DEPTH:
            j = i
            quoted = []
            while j < len(lines) and lines[j].strip().startswith(">"):
                quoted.append(lines[j].strip()[1:].removeprefix(" "))
                j += 1
            blocks.append(Block("quote", children=parse("\n".join(quoted), _depth=_depth + 1)))
            i = j
            continue
        if stripped.startswith("|") and i + 1 < len(lines) and _RULE.match(lines[i + 1]):
            header = [spans(c) for c in _cells(line)]
            rows = []
            j = i + 2
            while j < len(lines) and lines[j].strip().startswith("|"):
                rows.append([spans(c) for c in _cells(lines[j])])
                j += 1
            blocks.append(Block("table", header=header, rows=rows))
            i = j
            continue
        if _ITEM.match(line):
            items = []
            j = i
            while j < len(lines) and lines[j].strip():
                item = _ITEM.match(lines[j])
                if item:
                    items.append(item.group(1))
                elif items:  # a continuation line of the item before
                    items[-1] += " " + lines[j].strip()
                j += 1
            blocks.append(Block("list", items=[spans(t) for t in items]))
            i = j
            continue
        j = i
        paragraph = []
        while j < len(lines) and lines[j].strip():
            nxt = lines[j].strip()
            if j > i and (nxt.startswith(("#", ">", "```", "|")) or _ITEM.match(lines[j])):
                break
            paragraph.append(nxt)
            j += 1
        blocks.append(Block("paragraph", spans(" ".join(paragraph))))
        i = j
    return blocks
