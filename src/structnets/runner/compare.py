"""Compare two run folders of one experiment: which config fields differ, and how each metric moved.

Units are matched by key, so a metric is compared on exactly the units both runs finished
(e.g. the same fold and seed on CPU and on GPU, or before and after a code change).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import RunnerError, StoreError


@dataclass(frozen=True)
class RunComparison:
    """What :func:`compare_runs` found.

    Attributes:
        experiment: the experiment both runs are of.
        run_a, run_b: the two run folders.
        config_differences: one ``"field: A x, B y"`` line per config field that differs.
        metrics: one row per numeric result column that differs on some shared unit: ``metric``,
            ``units`` (shared units where both values are finite), ``mean_a``, ``mean_b``,
            ``mean_diff`` (mean of B − A), ``max_abs_diff`` (largest |B − A|), ``differing``
            (units where B ≠ A).
        by_unit: one row per (shared unit, differing metric): ``key``, ``metric``, ``a``, ``b``,
            ``diff`` (B − A).
        equal: numeric result columns equal on every shared unit (e.g. seeds, parameter counts).
        text_differences: ``{column: units where it differs}`` for non-numeric result columns.
        only_a, only_b: keys of units finished in one run only.
        shared: number of units both runs finished.
    """

    experiment: str
    run_a: Path
    run_b: Path
    config_differences: list[str]
    metrics: pd.DataFrame
    by_unit: pd.DataFrame
    equal: list[str]
    text_differences: dict[str, int]
    only_a: list[str]
    only_b: list[str]
    shared: int


def _folder(name: str, value: Any) -> Path:
    """``value`` as the Path of a folder argument, or ``TypeError`` naming ``name`` (and ``ValueError`` for "")."""
    if not isinstance(value, str | os.PathLike):
        raise TypeError(f"`{name}` must be a str or os.PathLike folder, got {value!r:.80} ({type(value).__name__})")
    if os.fspath(value) == "":
        raise ValueError(f"`{name}` must name a folder, got ''")
    return Path(value)


def _stored_experiment(run_dir: Path) -> str:
    from .store import ResultStore

    if not run_dir.is_dir():
        raise StoreError(f"`run_dir` {run_dir} is not a directory")
    with ResultStore.open_existing(run_dir / "results.db") as store:
        return str(store.meta["experiment"])


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def compare_runs(
    run_a: str | os.PathLike[str],
    run_b: str | os.PathLike[str],
    *,
    experiment: Any = None,
    registry: Mapping[str, str] | None = None,
) -> RunComparison:
    """Compare the results of two run folders of the same experiment, unit by unit.

    Args:
        run_a, run_b: folders written by :func:`structnets.runner.run` (finished or not).
        experiment: the experiment, for runs of one outside the registry (as in
            :func:`~structnets.runner.load_results`).
        registry: the registered experiments, names to ``"module.path:OBJECT"`` specs (None: the
            default registry, :func:`~structnets.runner.resolve.set_default_registry`).

    Returns:
        a :class:`RunComparison` (differences are B − A).

    Raises:
        RunnerError: the two folders hold different experiments (both are named).
        StoreError: a folder is not a run folder.
    """
    from .config import config_to_json
    from .orchestrate import load_results

    run_a, run_b = _folder("run_a", run_a), _folder("run_b", run_b)
    name_a, name_b = _stored_experiment(run_a), _stored_experiment(run_b)
    if name_a != name_b:
        raise RunnerError(
            f"cannot compare runs of two different experiments: {run_a} holds {name_a!r} and {run_b} holds "
            f"{name_b!r}; compare two runs of the same experiment"
        )
    exp, config_a, frame_a = load_results(run_a, experiment=experiment, registry=registry)
    _, config_b, frame_b = load_results(run_b, experiment=experiment, registry=registry)
    json_a, json_b = config_to_json(config_a), config_to_json(config_b)
    config_diffs = [
        f"{key}: A {json.dumps(json_a.get(key))}, B {json.dumps(json_b.get(key))}"
        for key in sorted(set(json_a) | set(json_b))
        if json_a.get(key) != json_b.get(key)
    ]
    keys_a, keys_b = list(frame_a["key"]), list(frame_b["key"])
    set_a, set_b = set(keys_a), set(keys_b)
    shared_keys = [k for k in keys_a if k in set_b]
    a = frame_a.set_index("key").loc[shared_keys] if shared_keys else frame_a.set_index("key").iloc[0:0]
    b = frame_b.set_index("key").loc[shared_keys] if shared_keys else frame_b.set_index("key").iloc[0:0]
    metric_rows: list[dict[str, Any]] = []
    unit_rows: list[dict[str, Any]] = []
    equal: list[str] = []
    text: dict[str, int] = {}
    for column in [c for c in a.columns if c in b.columns]:
        col_a, col_b = a[column], b[column]
        if _is_numeric(col_a) and _is_numeric(col_b):
            va, vb = col_a.to_numpy(dtype=float), col_b.to_numpy(dtype=float)
            differs = ~((va == vb) | (np.isnan(va) & np.isnan(vb)))
            if not differs.any():
                equal.append(column)
                continue
            both = np.isfinite(va) & np.isfinite(vb)
            diff = vb - va
            metric_rows.append({
                "metric": column,
                "units": int(both.sum()),
                "mean_a": float(va[both].mean()) if both.any() else math.nan,
                "mean_b": float(vb[both].mean()) if both.any() else math.nan,
                "mean_diff": float(diff[both].mean()) if both.any() else math.nan,
                "max_abs_diff": float(np.abs(diff[both]).max()) if both.any() else math.nan,
                "differing": int(differs.sum()),
            })  # fmt: skip
            for key, x, y, d in zip(shared_keys, va, vb, differs, strict=True):
                if d:
                    unit_rows.append({"key": key, "metric": column, "a": x, "b": y, "diff": y - x})
        else:
            count = sum(not _same(x, y) for x, y in zip(col_a, col_b, strict=True))
            if count:
                text[column] = count
    return RunComparison(
        experiment=exp.name,
        run_a=run_a,
        run_b=run_b,
        config_differences=config_diffs,
        metrics=pd.DataFrame(
            metric_rows, columns=["metric", "units", "mean_a", "mean_b", "mean_diff", "max_abs_diff", "differing"]
        ),
        by_unit=pd.DataFrame(unit_rows, columns=["key", "metric", "a", "b", "diff"]),
        equal=equal,
        text_differences=text,
        only_a=[k for k in keys_a if k not in set_b],
        only_b=[k for k in keys_b if k not in set_a],
        shared=len(shared_keys),
    )


__all__ = ["RunComparison", "compare_runs"]
