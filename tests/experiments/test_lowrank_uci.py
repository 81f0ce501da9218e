"""lowrank-uci: staging of units, the paired test, and a small end-to-end run."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from structnets.experiments import get, names
from structnets.experiments.lowrank_uci import (
    EXPERIMENT,
    LowRankUCIConfig,
    _chosen_architecture,
    _paired_test,
)

TINY = LowRankUCIConfig(
    datasets=("iris", "real-estate"),
    folds=2,
    depths=(1, 2),
    widths=(6,),
    sensitivity=(0.5,),
    epochs=4,
    batch_size=64,
    patience=2,
    max_rows=120,
    latency_batch=64,
    latency_pairs=2,
)


def _select_rows(config, scores):
    rows = []
    for (dataset, depth, width), (score, parameters) in scores.items():
        rows.append({"key": f"select/{dataset}/depth={depth}/width={width}", "stage": "select",
                     "dataset": dataset, "depth": depth, "width": width, "score": score,
                     "parameters": parameters})
    return pd.DataFrame(rows)


def test_registered_under_its_name():
    assert "lowrank-uci" in names()
    assert get("lowrank-uci") is EXPERIMENT


def test_first_stage_is_the_dense_grid_only():
    units = EXPERIMENT.units(TINY, pd.DataFrame())
    assert sorted(u.key for u in units) == sorted(
        f"select/{d}/depth={depth}/width=6" for d in TINY.datasets for depth in (1, 2)
    )
    assert all(u.params["stage"] == "select" for u in units)


def test_cv_stage_waits_for_the_whole_grid_and_uses_the_best_architecture():
    partial = _select_rows(TINY, {("iris", 1, 6): (0.9, 50)})
    assert _chosen_architecture(TINY, partial, "iris") is None
    full = _select_rows(TINY, {("iris", 1, 6): (0.9, 50), ("iris", 2, 6): (0.95, 92)})
    assert _chosen_architecture(TINY, full, "iris") == (2, 6)
    units = EXPERIMENT.units(TINY, full)
    cv = [u for u in units if u.params["stage"] == "cv"]
    # dense, low-rank (1/3) and the 1/2 sweep point, 2 folds, 1 seed; only for iris.
    assert len(cv) == 3 * 2
    assert {u.params["dataset"] for u in cv} == {"iris"}
    assert {u.params["depth"] for u in cv} == {2}
    assert {u.params["model"] for u in cv} == {"dense", "lowrank", "ratio=0.5"}
    assert [u.key for u in units if u.params["stage"] == "efficiency"] == ["efficiency/iris"]


def test_ties_go_to_the_smaller_network():
    tied = _select_rows(TINY, {("iris", 1, 6): (0.9, 50), ("iris", 2, 6): (0.9, 92)})
    assert _chosen_architecture(TINY, tied, "iris") == (1, 6)


def test_paired_test_matches_scipy_and_pairs_by_fold_and_seed():
    rng = np.random.default_rng(0)
    dense = pd.DataFrame({"fold": range(10), "seed": 0, "rmse": rng.random(10)})
    low = dense.assign(rmse=dense["rmse"] + rng.normal(0.05, 0.02, 10)).iloc[::-1]  # shuffled order
    t, p, pairs = _paired_test(low, dense, "rmse")
    expected = stats.ttest_rel(low.sort_values("fold")["rmse"], dense["rmse"])
    assert pairs == 10
    assert math.isclose(t, expected.statistic) and math.isclose(p, expected.pvalue)
    assert t > 0


def test_bad_config_names_the_field():
    with pytest.raises(ValueError, match="datasets"):
        LowRankUCIConfig(datasets=("iris", "mnist-typo"))
    with pytest.raises(ValueError, match="folds"):
        LowRankUCIConfig(folds=1)
    with pytest.raises(ValueError, match="bottleneck"):
        LowRankUCIConfig(bottleneck=0.0)


def test_small_end_to_end_run_writes_table_and_figures(tmp_path, uci_data):
    from structnets import runner

    results = runner.run(EXPERIMENT, TINY, tmp_path / "run")
    stages = results["stage"].value_counts().to_dict()
    assert stages == {"select": 4, "cv": 2 * 3 * 2, "efficiency": 2}
    cv = results[results["stage"] == "cv"]
    iris = cv[cv["dataset"] == "iris"]
    assert iris["accuracy"].between(0, 1).all() and iris["balanced_accuracy"].between(0, 1).all()
    estate = cv[cv["dataset"] == "real-estate"]
    assert (estate["rmse"] > 0).all() and (estate["rmse"] < 1).all()
    # Every test row is used exactly once per model across the folds.
    assert iris.groupby("model")["n_test"].sum().eq(120).all()
    low = cv[cv["model"] == "lowrank"]
    assert (low["rank"] == 2).all()  # round(6 / 3)
    efficiency = results[results["stage"] == "efficiency"].set_index("dataset")
    assert (efficiency["flops_lowrank"] <= efficiency["flops_dense"]).all()
    table = (tmp_path / "run" / "table.md").read_text()
    assert "| iris | ACC |" in table and "| real-estate | RMSE |" in table
    assert "94.7" in table  # the paper's value sits beside ours
    assert (tmp_path / "run" / "figures" / "accuracy.png").stat().st_size > 0
