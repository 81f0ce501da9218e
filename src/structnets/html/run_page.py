"""``RUN/report.html``: one self-contained page of a run folder, read from ``results.db`` and ``run_info.json``.

The page shows the experiment, its config with the ``structnets run ... --set`` command that
reproduces it, progress (units done of those known, failed units with their one-line errors), the
experiment's own table (``table.md``, paper beside ours), every result row of ``results.db``, every
figure, and the environment the run had (versions, git commit, machine, device, times, sessions).

Self-contained: the styles are inline, figures are SVG drawn afresh by the experiment's
``figures()`` (through :func:`structnets.protocol.save_figure`) and embedded as ``data:`` URIs of
``<img>`` elements, so the file opens offline and loads nothing; a Content-Security-Policy forbids
scripts and every fetch. When the experiment cannot draw its figures from the results (an unfinished
run), the PNGs already in ``figures/`` are embedded instead, and the page says so. Every value from
the run folder goes through Jinja2's autoescaping.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import glob
import json
import logging
import math
import os
import re
import shlex
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from . import _markdown
from ._render import LONE_SURROGATE, number, render

logger = logging.getLogger(__name__)

__all__ = ["REPORT_HTML", "FailedUnit", "render_run_page", "unit_anchor", "write_run_page"]

REPORT_HTML = "report.html"
"""The page's file name inside a run folder."""

FAILED_UNITS = "failed_units.json"
"""Failed units recorded by ``structnets run`` (key, one-line error, time), shown until they (or the run) finish."""


def unit_anchor(key: Any) -> str:
    """The ``id`` of result row ``key``'s table row on the run page: ``"unit-" + key``, whitespace as ``_``.

    An HTML ``id`` holds no whitespace, so each whitespace character of the key becomes ``_`` (keys
    that differ only there share an anchor, and a link goes to the first); every other character is
    kept. A link to the row is ``report.html#`` followed by this anchor, percent-encoded (the
    browser decodes the fragment before looking the ``id`` up).
    """
    return "unit-" + re.sub(r"\s", "_", str(key))


@dataclass(frozen=True)
class FailedUnit:
    """A unit whose ``run_unit`` raised: its key, the one-line error and when it was seen (ISO 8601 UTC)."""

    key: str
    error: str
    time: str = ""


@dataclass(frozen=True)
class _Figure:
    title: str
    alt: str
    src: str  # a data: URI
    source: str  # what was embedded, e.g. "SVG" or "PNG from figures/"
    name: str


@dataclass
class _Page:
    experiment: str
    description: str
    run_dir: str
    status: str
    done: int
    total: int | None
    failed: list[FailedUnit]
    missing: int | None
    config: list[tuple[str, str]]
    command: str
    command_note: str
    table: list[_markdown.Block]
    table_note: str
    columns: list[str]
    rows: list[list[str]]
    figures: list[_Figure]
    figure_note: str
    environment: list[tuple[str, str]]
    sessions: list[dict[str, str]]
    generated: str
    row_ids: list[str] = field(default_factory=list)  # unit_anchor of each row's key, in row order


def _one_line(text: Any, limit: int = 400) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _read_info(run_dir: Path) -> dict[str, Any]:
    try:
        info = json.loads((run_dir / "run_info.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def read_failed_units(run_dir: Path) -> list[FailedUnit]:
    """The failed units ``structnets run`` recorded in ``run_dir`` (an unreadable record counts as none)."""
    try:
        raw = json.loads((Path(run_dir) / FAILED_UNITS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(raw, list):
        return []
    return [
        FailedUnit(str(r.get("key", "")), _one_line(r.get("error", "")), str(r.get("time", "")))
        for r in raw
        if isinstance(r, dict) and r.get("key")
    ]


def record_failed_unit(run_dir: Path, failure: FailedUnit) -> None:
    """Add ``failure`` to ``run_dir/failed_units.json`` (atomically; an older entry of its key is replaced)."""
    from .. import atomic_io

    kept = [f for f in read_failed_units(run_dir) if f.key != failure.key]
    kept.append(failure)
    atomic_io.write_json(Path(run_dir) / FAILED_UNITS, [dataclasses.asdict(f) for f in kept[-100:]])


def remove_page_temporaries(run_dir: Path) -> None:
    """Delete what writes of ``report.html`` or ``failed_units.json`` cut short (``kill -9``) left in
    ``run_dir``: their :mod:`~structnets.atomic_io` temporaries ``.report.html.*.tmp`` and
    ``.failed_units.json.*.tmp``. Only called while holding the run lock (another writer's temporary
    is never in flight then)."""
    folder = Path(run_dir)
    for name in (REPORT_HTML, FAILED_UNITS):
        for path in folder.glob(f".{glob.escape(name)}.*.tmp"):
            if path.is_dir() and not path.is_symlink():
                continue
            try:
                path.unlink()
            except OSError as e:  # tidying up never fails a run
                logger.debug("could not remove %s: %s", path, e)


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, allow_nan=True)


def _normal(value: Any) -> Any:
    return json.loads(json.dumps(value, allow_nan=True))


def reproduce_command(
    experiment: Any, config: Any, run_dir: str, *, registry: Mapping[str, str] | None = None
) -> tuple[str, str]:
    """The ``structnets run`` command that gives ``config``: the preset it differs least from, plus ``--set``.

    The experiment is named as ``structnets run`` finds it: its name where ``registry`` (None:
    :data:`structnets.experiments.REGISTRY`, the command line's) holds it, else its ``module:OBJECT`` spec.

    Returns:
        ``(command, note)``: the note names any field that ``--set`` cannot write (empty if none).
    """
    from ..runner import config_to_json, parse_overrides
    from ..runner.config import format_value
    from ..runner.resolve import experiment_ref

    stored = _normal(config_to_json(config))
    config_class = experiment.config_class
    candidates: list[tuple[list[str], dict[str, Any]]] = []
    quick = getattr(config_class, "quick", None)
    for flags, make in ((["--quick"], quick), ([], config_class)):
        if make is None:
            continue
        try:
            preset = _normal(config_to_json(make()))
        except Exception:  # noqa: BLE001 - a preset that cannot be built is not a candidate
            continue
        candidates.append((flags, preset))
    best: tuple[int, list[str], list[str], list[str]] | None = None
    for flags, preset in candidates:
        sets: list[str] = []
        bad: list[str] = []
        for key in sorted(stored):
            if key in preset and preset[key] == stored[key]:
                continue
            assignment = f"{key}={format_value(stored[key])}"
            try:
                parsed = parse_overrides(config_class, [assignment])[key]
                ok = _normal(parsed) == stored[key]
            except (ValueError, TypeError):
                ok = False
            (sets if ok else bad).append(assignment if ok else key)
        score = len(sets) + 100 * len(bad)
        if best is None or score < best[0]:
            best = (score, flags, sets, bad)
    if registry is None:
        from ..experiments import REGISTRY as registry
    try:
        ref = experiment_ref(experiment, registry)
    except Exception:  # noqa: BLE001 - a registry that cannot be read: the name, said to be unsure
        ref = None
    parts = ["structnets", "run", ref or experiment.name]
    note = "" if ref else f"{experiment.name} is neither registered nor importable by a spec: name it yourself"
    if best is None:
        note = "; ".join(
            n for n in (note, "no preset of this config class could be built; every field is listed above") if n
        )
    else:
        _, flags, sets, bad = best
        parts += flags
        if sets:
            parts += ["--set", *sets]
        if bad:
            unset = "--set cannot write " + ", ".join(bad) + " exactly; their stored values are listed above"
            note = "; ".join(n for n in (note, unset) if n)
    parts += ["--out", run_dir]
    return " ".join(shlex.quote(p) for p in parts), note


def _environment(info: Mapping[str, Any], config: Any) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    versions = info.get("versions")
    if isinstance(versions, dict):
        rows += [(str(name), "not installed" if v is None else str(v)) for name, v in versions.items()]
    git = info.get("git")
    if isinstance(git, dict) and git.get("commit"):
        rows.append(("git commit", f"{git['commit']}" + (" (uncommitted changes)" if git.get("dirty") else "")))
    device = getattr(config, "device", None)
    rows.append(("device", str(device) if device is not None else "cpu (the experiment has no device field)"))
    for key in ("backend", "jobs", "gpus_per_unit"):
        if info.get(key) is not None:
            rows.append((key.replace("_", " "), str(info[key])))
    machine = info.get("machine")
    if isinstance(machine, dict):
        for key in ("hostname", "platform", "processor", "cpu_count", "cpus_available"):
            if machine.get(key) is not None:
                rows.append((key.replace("_", " "), str(machine[key])))
        memory = machine.get("memory_bytes")
        if isinstance(memory, int | float):
            rows.append(("memory", f"{memory / 2**30:.1f} GiB"))
    for key in ("started", "finished"):
        if info.get(key):
            rows.append((f"session {key}", str(info[key])))
    if isinstance(info.get("wall_s"), int | float):
        rows.append(("session wall time", f"{info['wall_s']:.1f} s"))
    if isinstance(info.get("total_wall_s"), int | float):
        rows.append(("total wall time (all sessions)", f"{info['total_wall_s']:.1f} s"))
    return rows


def _describe(entry: Mapping[str, Any] | None, name: str, experiment: str) -> tuple[str, str]:
    """A figure's title and alt text from what :func:`save_figure` saw drawn (else its file name)."""
    fallback = Path(name).stem.replace("_", " ")
    if not entry:
        return fallback, f"Figure {fallback} of {experiment}."
    panels = []
    for ax in entry.get("axes", []):
        axis = " against ".join(t for t in (ax.get("ylabel"), ax.get("xlabel")) if t)
        label = "; ".join(t for t in (ax.get("title"), axis) if t)
        if label:
            panels.append(label)
    titles = [ax.get("title") for ax in entry.get("axes", []) if ax.get("title")]
    title = entry.get("title") or (titles[0] if len(titles) == 1 else "") or fallback
    alt = f"Figure {title} of {experiment}"
    if panels:
        alt += f", {len(panels)} panel{'s' if len(panels) != 1 else ''}: " + " | ".join(panels)
    return title, alt + "."


def _data_uri(path: Path, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def _drawn_figures(drawn: Sequence[Mapping[str, Any]], experiment: str) -> list[_Figure]:
    """Figures a run has just drawn, as :func:`structnets.protocol.figure_descriptions` kept them (SVG bytes)."""
    out = []
    for entry in sorted(drawn, key=lambda d: Path(d["path"]).name):
        name = Path(entry["path"]).with_suffix(".svg").name
        title, alt = _describe(entry, name, experiment)
        src = f"data:image/svg+xml;base64,{base64.b64encode(entry['svg']).decode('ascii')}"
        out.append(_Figure(title, alt, src, "SVG, drawn by the run", name))
    return out


def _figures(
    experiment: Any, frame: pd.DataFrame, config: Any, run_dir: Path, draw: bool = True
) -> tuple[list[_Figure], str]:
    """Every figure as SVG, drawn by the experiment now; else the PNGs of ``figures/``, saying so."""
    from ..protocol import figure_descriptions, figure_format_context

    reason = ""
    if not draw:
        reason = (
            "not drawn for this page (the first page of a run, or one that stopped early); the page of a "
            "finished run, or `structnets report RUN --html`, draws them"
        )
    elif len(frame):
        try:
            with (
                tempfile.TemporaryDirectory(prefix="structnets-html-") as tmp,
                figure_format_context("svg"),
                figure_descriptions() as described,
                warnings.catch_warnings(),
            ):
                warnings.simplefilter("ignore")  # partial figures warn (empty legends); the page is best effort
                experiment.figures(frame, config, Path(tmp))
                by_path = {Path(d["path"]).resolve(): d for d in described}
                files = sorted(p for p in Path(tmp).rglob("*") if p.is_file())
                out = []
                for path in files:
                    mime = {".svg": "image/svg+xml", ".png": "image/png"}.get(path.suffix.lower())
                    if mime is None:
                        continue
                    title, alt = _describe(by_path.get(path.resolve()), path.name, experiment.name)
                    source = "SVG" if mime == "image/svg+xml" else "PNG (the experiment wrote no SVG)"
                    out.append(_Figure(title, alt, _data_uri(path, mime), source, path.name))
                return out, ""
        except Exception as e:  # noqa: BLE001 - an unfinished run's rows may not make the figures yet
            reason = (
                f"the experiment cannot draw its figures from these results ({type(e).__name__}: {_one_line(e, 200)})"
            )
            logger.info("%s.figures() for the HTML page: %s", experiment.name, reason)
    else:
        reason = "no unit has finished yet"
    folder = run_dir / "figures"
    pngs = sorted(folder.glob("*.png")) if folder.is_dir() and not folder.is_symlink() else []
    figures = []
    skipped = []
    for path in pngs:
        data = _png_bytes(path)
        if data is None:
            skipped.append(path.name)
            continue
        title, alt = _describe(None, path.name, experiment.name)
        src = f"data:image/png;base64,{base64.b64encode(data).decode('ascii')}"
        figures.append(_Figure(title, alt, src, "PNG from figures/ (no SVG: see above)", path.name))
    if figures:
        reason += f"; showing the {len(figures)} PNG(s) already in figures/ instead (they may predate these results)"
    if skipped:
        reason += "; not shown, as not a readable PNG file of the folder (a link, a folder, other bytes): " + (
            ", ".join(skipped)
        )
    return figures, reason


def _png_bytes(path: Path) -> bytes | None:
    """The bytes of ``path`` when it is a plain file (never a link: a run folder is data) holding a PNG; else None."""
    try:
        if path.is_symlink() or not path.is_file():
            return None
        data = path.read_bytes()
    except OSError:
        return None
    return data if data.startswith(b"\x89PNG\r\n\x1a\n") else None


def _cells(frame: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    columns = [str(c) for c in frame.columns]
    rows = []
    for values in frame.itertuples(index=False, name=None):
        row = []
        for v in values:
            if hasattr(v, "item") and not isinstance(v, str):
                v = v.item()
            if isinstance(v, float) and math.isnan(v):
                v = None  # a column this row does not have (or a stored NaN: both shown blank)
            row.append(number(v))
        rows.append(row)
    return columns, rows


def _table(experiment: Any, frame: pd.DataFrame, config: Any, table: str | None) -> tuple[str, str]:
    if table is not None:
        return table, ""
    try:
        text = experiment.report(frame, config)
        if not isinstance(text, str):
            raise TypeError(f"report() returned {type(text).__name__}, not Markdown text")
        return text, ""
    except Exception as e:  # noqa: BLE001 - the table of an unfinished run may need rows that do not exist yet
        return (
            "",
            f"The experiment's table cannot be made from the units finished so far ({type(e).__name__}: {_one_line(e, 200)}).",
        )


def render_run_page(
    run_dir: str | os.PathLike[str],
    *,
    experiment: Any = None,
    registry: Mapping[str, str] | None = None,
    table: str | None = None,
    progress: tuple[int, int] | None = None,
    status: str | None = None,
    failed: Sequence[FailedUnit] | None = None,
    figures: Sequence[Mapping[str, Any]] | None = None,
    draw_figures: bool = True,
) -> str:
    """The HTML text of ``run_dir``'s page (see the module docstring).

    Args:
        run_dir: a run folder (finished or not).
        experiment: the experiment, when the folder cannot name a registered one (as for
            :func:`structnets.runner.load_results`).
        registry: the registered experiments; None: the runner's default registry.
        table: the Markdown of ``table.md`` when the caller has just made it (``structnets report``);
            None: asked of the experiment now.
        progress: ``(done, total)`` of a live run (``structnets run``); None: from ``run_info.json``.
        status: the run's state to show (e.g. ``"running"``); None: from ``run_info.json``.
        failed: failed units to show; None: those recorded in ``failed_units.json`` and not finished since.
        figures: the figures the run has just drawn, as ``figure_descriptions(keep_svg=True)`` kept
            them, embedded as they are; None: the experiment draws them now (as SVG).
        draw_figures: False: do not draw figures now (embed the PNGs of ``figures/``, saying so).

    Returns:
        The page, one self-contained HTML document.

    Raises:
        StoreError, CorruptStoreError, UntrustedExperimentError: as :func:`structnets.runner.load_results`
            (the one-line errors of ``structnets report``).
        HtmlUnavailableError: Jinja2 is not installed.
    """
    from ..runner import load_results

    folder = Path(run_dir)
    exp, config, frame = load_results(folder, experiment=experiment, registry=registry)
    info = _read_info(folder)
    done = len(frame)
    raw_units = info.get("units")
    units: dict[str, Any] = raw_units if isinstance(raw_units, dict) else {}
    total: int | None
    if progress is not None:
        done, total = progress
    elif isinstance(units.get("total"), int):
        total = max(int(units["total"]), done)
    else:
        total = None
    state = status or str(info.get("status") or "unknown")
    if state == "finished" and total is not None and done < total:
        state = "unfinished"
    finished_keys = set(frame["key"]) if "key" in frame else set()
    # A finished run has no failed unit: a recorded one it never finished is no unit of its config (the
    # folder took another config after a first unit failed).
    recorded = ([] if state == "finished" else read_failed_units(folder)) if failed is None else failed
    failures = [f for f in recorded if f.key not in finished_keys]
    markdown, table_note = _table(exp, frame, config, table)
    if figures is not None and all("svg" in f for f in figures):
        shown, figure_note = _drawn_figures(figures, exp.name), ""
    else:
        shown, figure_note = _figures(exp, frame, config, folder, draw=draw_figures)
    columns, rows = _cells(frame)
    from ..runner import config_to_json

    config_rows = [(str(k), _json_text(v)) for k, v in config_to_json(config).items()]
    command, command_note = reproduce_command(exp, config, str(folder))
    if LONE_SURROGATE.search(str(folder)):
        not_utf8 = "the folder's name holds bytes that are not UTF-8, shown as \ufffd: type its name yourself"
        command_note = "; ".join(n for n in (command_note, not_utf8) if n)
    raw_sessions = info.get("sessions")
    sessions: list[Any] = raw_sessions if isinstance(raw_sessions, list) else []
    session_rows = [
        {
            k: "" if s.get(k) is None else str(s.get(k))
            for k in ("id", "started", "finished", "status", "backend", "jobs", "host", "units_run")
        }
        for s in sessions
        if isinstance(s, dict)
    ]
    page = _Page(
        experiment=exp.name,
        description=str(getattr(exp, "description", "")),
        run_dir=str(folder),
        status=state,
        done=done,
        total=total,
        failed=failures,
        missing=None if total is None else max(total - done, 0),
        config=config_rows,
        command=command,
        command_note=command_note,
        table=_markdown.parse(markdown),
        table_note=table_note,
        columns=columns,
        rows=rows,
        figures=shown,
        figure_note=figure_note,
        environment=_environment(info, config),
        sessions=session_rows,
        generated=datetime.now(UTC).isoformat(timespec="seconds"),
        row_ids=[unit_anchor(key) for key in frame["key"]] if "key" in frame else [],
    )
    return render("run.html.j2", page=page)


def write_run_page(run_dir: str | os.PathLike[str], *, lock: bool = True, **options: Any) -> Path:
    """Write ``run_dir/report.html`` atomically (readers see the old page or the new one); return its path.

    Args:
        run_dir: the run folder.
        lock: hold the folder's run lock while the page is read and written, as ``structnets report``
            does, so a run started meanwhile never has its page replaced by this one (the temporaries
            of a page write cut short are removed then); False for a caller that holds the lock
            already (a run's live page).
        **options: as :func:`render_run_page`.

    Raises:
        As :func:`render_run_page`; StoreError: the page cannot be written into ``run_dir``;
        RunLockedError: (``lock``) a run is writing into ``run_dir`` now (it writes its own page).
    """
    from .. import atomic_io
    from ..runner import StoreError
    from ..runner.lock import run_lock

    folder = Path(run_dir)
    locked = lock and folder.is_dir()
    with run_lock(folder) if locked else contextlib.nullcontext():
        html = render_run_page(folder, **options)
        if locked:
            remove_page_temporaries(folder)
        path = folder / REPORT_HTML
        try:
            atomic_io.write_text(path, html)
        except OSError as e:
            raise StoreError(f"cannot write {path}: {e.strerror or e}; check the permissions of the run folder") from e
    return path
