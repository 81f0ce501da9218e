"""The table of every headline claim, built from run folders' results databases alone."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from . import bounds, compression, dlor, lipschitz, lipschitz_conv, lowrank, smoothness
from .evidence import NOT_TESTED, VERDICTS, Claim, Evidence
from .policies import policies_markdown

CLAIMS: tuple[Claim, ...] = (
    *lowrank.CLAIMS,
    *dlor.CLAIMS,
    *smoothness.CLAIMS,
    *bounds.CLAIMS,
    *lipschitz.CLAIMS,
    *lipschitz_conv.CLAIMS,
    *compression.CLAIMS,
)
"""Every headline claim, in paper order (000–004), then our own compression targets (000-compress-*, issue 27)."""

COLUMNS: tuple[str, ...] = (
    "id",
    "paper",
    "claim",
    "paper value",
    "ours",
    "verdict",
    "test",
    "run",
    "experiment",
    "preset",
    "units",
    "unit keys",
)
"""The claims table's columns. ``unit keys`` is a tuple of the result keys of the rows the evidence used
(:attr:`Evidence.unit_keys`; empty when the evaluator does not name them)."""


class ClaimsError(ValueError):
    """A run folder cannot serve as evidence: missing, unfinished, unreadable, or given twice."""


@dataclass(frozen=True)
class Run:
    """A finished run folder: its experiment, typed config, results table and preset name."""

    path: Path
    experiment: str
    config: Any
    results: pd.DataFrame
    preset: str


def load_run(run_dir: str | os.PathLike[str]) -> Run:
    """Read a finished run folder for the claims table.

    Args:
        run_dir: the run folder (``structnets run NAME --out RUN_DIR``), a str or path.

    Returns:
        The folder's :class:`Run`: experiment name, typed config, results table and preset.

    Raises:
        TypeError: ``run_dir`` is not a str or ``os.PathLike``.
        ClaimsError: ``run_dir`` is empty or does not exist, has no readable ``run_info.json``,
            its run is not finished (the message says how many units are finished and how to
            finish it), or its ``results.db`` is missing or unreadable (the message says how to
            replace it).
    """
    return _load_run(run_dir, "run_dir")


def _load_run(run_dir: Any, name: str) -> Run:
    """:func:`load_run`, its messages naming the argument as ``name`` (``run_dir`` or ``run_dirs[i]``)."""
    from ..experiments import REGISTRY
    from ..runner import RunnerError, load_results

    if not isinstance(run_dir, (str, os.PathLike)):
        raise TypeError(f"`{name}` must be a run folder path (str or os.PathLike), got {run_dir!r:.80}")
    if isinstance(run_dir, str) and not run_dir.strip():
        raise ClaimsError(f"`{name}` must name a run folder, got the empty path {run_dir!r}")
    path = Path(run_dir)
    if not path.is_dir():
        raise ClaimsError(f"run folder {str(path)!r} (`{name}`) does not exist or is not a folder")
    info_path = path / "run_info.json"
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ClaimsError(
            f"{path} (`{name}`) has no run_info.json: not a run folder (or a run that never started)"
        ) from None
    except (OSError, ValueError) as e:
        raise ClaimsError(f"{info_path} (`{name}`) is unreadable: {e}") from None
    if not isinstance(info, dict):
        raise ClaimsError(f"{info_path} (`{name}`) is not a JSON object")
    status = info.get("status")
    raw_units = info.get("units")
    units: dict[str, Any] = raw_units if isinstance(raw_units, dict) else {}
    if status != "finished":
        raise ClaimsError(
            f"{path} (`{name}`) is an incomplete run (status {status!r}, {units.get('finished', '?')} of "
            f"{units.get('total', '?')} units known so far finished); finish it with `structnets run "
            f"{info.get('experiment', 'NAME')} --out {path}` or leave it out"
        )
    try:
        experiment, config, results = load_results(path, registry=REGISTRY)
    except RunnerError as e:
        raise ClaimsError(
            f"{path} (`{name}`): {e}; re-run the experiment into a new folder (`structnets run "
            f"{info.get('experiment', 'NAME')} --out NEW_DIR`) or leave this folder out"
        ) from None
    return Run(path, experiment.name, config, results, _preset(experiment.config_class, config))


def supplement_fields(config: Any) -> tuple[str, ...]:
    """The config fields in which a supplementary run folder of this experiment may differ (its config
    class's ``supplement_fields``; none when it has no such attribute)."""
    return tuple(getattr(type(config), "supplement_fields", ()))


def _supplement_mismatch(a: Run, b: Run) -> str:
    """Why ``b`` cannot supplement ``a`` (same experiment), or ``""`` when it can.

    A supplementary folder extends a run's grid with more units: its config may differ only in the
    fields its config class names in ``supplement_fields`` (e.g. ``parts`` and a grid), and no unit key
    may be in both folders (the same unit twice would count twice).
    """
    allowed = supplement_fields(a.config)
    if not allowed:
        return f"this experiment has none ({type(a.config).__name__} names no `supplement_fields`)"
    first, second = dataclasses.asdict(a.config), dataclasses.asdict(b.config)
    differing = sorted(k for k in first if k not in allowed and first[k] != second.get(k))
    if differing:
        return f"differs only in {list(allowed)} (these differ in {differing})"
    if "key" in a.results.columns and "key" in b.results.columns:
        shared = sorted(set(a.results["key"]) & set(b.results["key"]))
        if shared:
            return f"shares no unit key ({len(shared)} shared, e.g. {shared[0]!r})"
    return ""


def _union(values: Any, more: Any) -> tuple[Any, ...]:
    """Both sequences' entries once each, in order; sorted when they are all numbers (a grid)."""
    merged = tuple(dict.fromkeys([*values, *more]))
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in merged):
        return tuple(sorted(merged))
    return merged


def _merge_runs(a: Run, b: Run) -> Run:
    """One :class:`Run` of both folders' results: the one with more rows is the run (its path and preset
    first), the other a supplement named in ``preset``; the config is the larger one's with every
    supplement field the union of both (so an evaluator sees the grid the rows span)."""
    base, extra = (a, b) if len(a.results) >= len(b.results) else (b, a)
    changes = {
        name: _union(getattr(base.config, name), getattr(extra.config, name))
        for name in supplement_fields(base.config)
        if getattr(base.config, name) != getattr(extra.config, name)
    }
    config = dataclasses.replace(base.config, **changes) if changes else base.config
    results = pd.concat([base.results, extra.results], ignore_index=True, sort=False)
    preset = f"{base.preset}; with {extra.path} ({extra.preset})"
    return Run(base.path, base.experiment, config, results, preset)


def _preset(config_class: Any, config: Any) -> str:
    """``"full"`` or ``"quick"`` when ``config`` equals that preset, else ``"custom"``."""
    as_dict = dataclasses.asdict(config)
    if as_dict == dataclasses.asdict(config_class()):
        return "full"
    if hasattr(config_class, "quick") and as_dict == dataclasses.asdict(config_class.quick()):
        return "quick"
    return "custom"


def claims_table(run_dirs: Sequence[str | os.PathLike[str]], claims: Sequence[Claim] = CLAIMS) -> pd.DataFrame:
    """One row per claim: the paper's value beside ours, the test and the verdict, from ``run_dirs``.

    Each claim is decided by the run of its experiment among ``run_dirs``; a claim whose
    experiment has no run is ``not tested``. Nothing is typed in: every "ours" value and verdict
    is computed from the runs' results databases.

    Args:
        run_dirs: finished run folders, one per experiment, or with supplementary folders of it: a folder
            whose config differs from the run's only in the fields its config class names in
            ``supplement_fields`` (e.g. smoothness-rates' ``parts`` and ``approx_parameters``), with no
            unit key in both, is merged into it (results concatenated, grids united; the row's *preset*
            names the supplement).
        claims: the claims to decide (default: all of :data:`CLAIMS`).

    Returns:
        A DataFrame with columns :data:`COLUMNS`, one row per claim, in the order of ``claims``.

    Raises:
        TypeError: ``run_dirs`` is a single path (a str or ``os.PathLike``) or not a sequence, or
            one of its entries is not a path.
        ClaimsError: no run folder given, a folder is missing or unfinished, two folders hold one
            experiment and the second cannot supplement the first, or a folder holds an experiment no
            claim uses.
    """
    if isinstance(run_dirs, (str, bytes, os.PathLike)):
        raise TypeError(
            f"`run_dirs` must be a sequence of run folders, got the single path {run_dirs!r:.80}; pass [{run_dirs!r:.80}]"
        )
    if not isinstance(run_dirs, Sequence):
        raise TypeError(f"`run_dirs` must be a sequence (list or tuple) of run folders, got {run_dirs!r:.80}")
    if not run_dirs:
        raise ClaimsError("`run_dirs` is empty: give at least one run folder (`structnets claims RUN_DIR ...`)")
    for i, run_dir in enumerate(run_dirs):
        if not isinstance(run_dir, (str, os.PathLike)):
            raise TypeError(f"`run_dirs[{i}]` must be a run folder path (str or os.PathLike), got {run_dir!r:.80}")
    runs: dict[str, Run] = {}
    given: dict[str, int] = {}
    used = {claim.experiment for claim in claims}
    for i, run_dir in enumerate(run_dirs):
        loaded = _load_run(run_dir, f"run_dirs[{i}]")
        if loaded.experiment not in used:
            raise ClaimsError(
                f"{loaded.path} (`run_dirs[{i}]`) holds {loaded.experiment!r}, which no claim uses; claims use: "
                f"{', '.join(sorted(used))}"
            )
        if loaded.experiment in runs:
            earlier = runs[loaded.experiment]
            why = _supplement_mismatch(earlier, loaded)
            if why:
                raise ClaimsError(
                    f"two runs of {loaded.experiment!r} given ({earlier.path} as "
                    f"`run_dirs[{given[loaded.experiment]}]` and {loaded.path} as `run_dirs[{i}]`); pass one per "
                    f"experiment, or a supplementary folder that {why}"
                )
            runs[loaded.experiment] = _merge_runs(earlier, loaded)
            continue
        given[loaded.experiment] = i
        runs[loaded.experiment] = loaded
    records = []
    for claim in claims:
        run = runs.get(claim.experiment)
        if run is None:
            evidence = Evidence("—", NOT_TESTED, f"no run of {claim.experiment} given", 0)
        else:
            evidence = claim.evaluate(run.results, run.config)
        records.append(
            {
                "id": claim.id,
                "paper": claim.paper,
                "claim": claim.statement,
                "paper value": claim.paper_value,
                "ours": evidence.ours,
                "verdict": evidence.verdict,
                "test": evidence.test,
                "run": "—" if run is None else str(run.path),
                "experiment": claim.experiment,
                "preset": "—" if run is None else run.preset,
                "units": evidence.units,
                "unit keys": evidence.unit_keys,
            }
        )
    return pd.DataFrame.from_records(records, columns=list(COLUMNS))


def unit_keys_of(cell: Any) -> tuple[str, ...]:
    """The ``unit keys`` cell of a claims table row as a tuple of keys.

    A tuple or list (as :func:`claims_table` stores it) gives its entries; a missing value (None,
    NaN, ``""``, ``"—"``) gives ``()``; any other string is one key.
    """
    if isinstance(cell, str):
        return () if cell.strip() in ("", "—") else (cell,)
    if isinstance(cell, (tuple, list)):
        return tuple(str(key) for key in cell)
    if hasattr(cell, "tolist"):  # a numpy array
        listed = cell.tolist()
        if isinstance(listed, list):
            return tuple(str(key) for key in listed)
    return () if cell is None or pd.isna(cell) else (str(cell),)


def _named_units(keys: tuple[str, ...], shown: int = 2) -> str:
    """``"unit `k`"``, ``"units `a`, `b`"`` or ``"units `a`, `b`, +N more"``: the keys, readably few."""
    if not keys:
        return ""
    if len(keys) == 1:
        return f"unit `{keys[0]}`"
    named = ", ".join(f"`{key}`" for key in keys[:shown])
    return f"units {named}" + (f", +{len(keys) - shown} more" if len(keys) > shown else "")


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def verdict_rules() -> str:
    """The package docstring's paragraph on how each verdict is decided, as one line of Markdown."""
    import re
    import sys

    # The package is imported before this module; reading its docstring needs no import back into it.
    doc = sys.modules[__name__.rpartition(".")[0]].__doc__

    marker = "How a verdict is decided."
    if marker not in (doc or ""):  # docstrings stripped (python -OO)
        return "How a verdict is decided: see the test column."
    text = (doc or "").split(marker, 1)[1].split("\n\n", 1)[0]
    text = re.sub(r":\w+:`([^`]+)`", r"`\1`", " ".join(text.split()))
    return f"{marker} {text.replace('``', '`')}"


def claims_markdown(table: pd.DataFrame) -> str:
    """The Markdown page of a :func:`claims_table`: a verdict count, then one table per paper.

    Args:
        table: a :func:`claims_table` result (a DataFrame with every column of :data:`COLUMNS`).

    Returns:
        The page: a title, how verdicts are decided, the verdict counts, then per paper a table of
        claim, paper value, ours, verdict, test and evidence (the run, and the keys of the units the
        evidence used: one, or the first two and how many more).

    Raises:
        TypeError: ``table`` is not a DataFrame.
        ValueError: ``table`` lacks some of :data:`COLUMNS`.
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(
            f"`table` must be a pandas DataFrame from claims_table, got {type(table).__name__}: {table!r:.80}"
        )
    missing = [column for column in COLUMNS if column not in table.columns]
    if missing:
        raise ValueError(
            f"`table` must have the claims_table columns {list(COLUMNS)}; it lacks {missing} "
            f"(has {[str(c) for c in table.columns][:12]})"
        )
    counts = table["verdict"].value_counts()
    lines = [
        "# Every headline claim, paper beside ours",
        "",
        "Generated by `structnets claims` from run folders' results databases; no value below is typed by hand. "
        "*preset* says which configuration the evidence comes from (`quick` runs are small and their verdicts "
        "weaker than a `full` run's).",
        "",
        verdict_rules(),
        "",
        policies_markdown(),
        "",
        "Verdicts: " + "; ".join(f"{verdict}: {int(counts.get(verdict, 0))}" for verdict in VERDICTS) + ".",
        "",
    ]
    for paper, group in table.groupby("paper", sort=False):
        lines += [
            f"## {paper}",
            "",
            "| claim | paper | ours | verdict | test | evidence |",
            "|---|---|---|---|---|---|",
        ]
        for _, row in group.iterrows():
            named = _named_units(unit_keys_of(row.get("unit keys")))
            evidence = (
                "—"
                if row["run"] == "—"
                else f"`{row['run']}` ({row['experiment']}, {row['preset']}, {row['units']} units)"
                + (f": {named}" if named else "")
            )
            lines.append(
                f"| **{row['id']}**: {_cell(row['claim'])} | {_cell(row['paper value'])} | {_cell(row['ours'])} | "
                f"**{row['verdict']}** | {_cell(row['test'])} | {_cell(evidence)} |"
            )
        lines.append("")
    return "\n".join(lines)
