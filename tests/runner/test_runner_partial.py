"""``report`` of a paper experiment stopped after its first unit: what exists, what is missing."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from structnets import data, experiments
from structnets.runner import report
from structnets.runner.backends import execute_unit
from structnets.runner.config import config_to_json
from structnets.runner.store import ResultStore


def test_lowrank_uci_report_after_one_unit(tmp_path: Path) -> None:
    try:
        data.load("iris", download=False)
    except data.DataFileError as e:
        pytest.skip(f"needs the iris data file: {e}")
    exp = experiments.get("lowrank-uci")
    config = exp.config_class.quick()
    units = exp.units(config, pd.DataFrame({"key": pd.Series([], dtype=object)}))
    first = units[0]
    outcome = execute_unit(exp, first.key, dict(first.params))
    assert outcome.record is not None, outcome.error
    with ResultStore.create_or_resume(
        tmp_path / "results.db", experiment=exp.name, experiment_ref=exp.name, config=config_to_json(config)
    ) as store:
        store.add(outcome.record)

    table = report(tmp_path, registry=experiments.REGISTRY)  # its own table needs stage 2, not there yet
    assert table.startswith(f"> **Unfinished run of lowrank-uci**: 1 of {len(units)} units known so far are finished")
    assert f"{len(units) - 1} missing (`{units[1].key}`" in table
    assert "the finished units are in results.csv" in table
    saved = pd.read_csv(tmp_path / "results.csv")
    assert list(saved["key"]) == [first.key] and saved["score"].notna().all()
