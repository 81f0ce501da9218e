"""lowrank-uci: staging of units, the paired test, and a small end-to-end run."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from structnets.experiments import get, names
from structnets.experiments.lowrank_uci import (
    DATASET_ROWS,
    EXPERIMENT,
    FULL_RUN,
    PAPER,
    LowRankUCIConfig,
    _chosen_architecture,
    _paired_test,
    comparable,
    protocol,
    table,
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
        rows.append(
            {
                "key": f"select/{dataset}/depth={depth}/width={width}",
                "stage": "select",
                "dataset": dataset,
                "depth": depth,
                "width": width,
                "score": score,
                "parameters": parameters,
            }
        )
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
    written = (tmp_path / "run" / "table.md").read_text()
    assert written.rstrip("\n") == table(results).rstrip("\n")  # the table is a function of the results alone
    assert "| iris | ACC | reduced: 120 of 150 rows, 2 folds |" in written
    assert "| real-estate | RMSE | reduced: 120 of 414 rows, 2 folds |" in written
    assert "94.7" in written and "94 / 96 (-1.96)" in written  # the paper's and the full run's values beside ours
    assert "Not comparable with the paper or the full run" in written
    assert (tmp_path / "run" / "figures" / "accuracy.png").stat().st_size > 0


def _cv_rows(dataset, n, folds, task="regression"):
    """CV rows of a K-fold split of n rows (fold sizes as scikit-learn's KFold makes them)."""
    sizes = [n // folds + (1 if i < n % folds else 0) for i in range(folds)]
    rows = []
    for model in ("dense", "lowrank"):
        for fold, size in enumerate(sizes):
            rows.append(
                {
                    "stage": "cv",
                    "dataset": dataset,
                    "task": task,
                    "model": model,
                    "fold": fold,
                    "seed": 0,
                    "n_train": n - size,
                    "n_test": size,
                    "ratio": 1.0 if model == "dense" else 1 / 3,
                    "rank": 10,
                    "depth": 2,
                    "width": 30,
                    "rmse": 0.05 + 0.001 * fold + (model == "lowrank") * 1e-4 * (fold % 3),
                    "accuracy": math.nan,
                    "balanced_accuracy": math.nan,
                }
            )
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    ("dataset", "n", "folds", "expected"),
    [
        ("real-estate", 414, 10, True),  # the paper's protocol
        ("real-estate", 414, 3, False),  # all rows, 3 folds (--quick)
        ("bike-sharing", 2000, 10, False),  # 10 folds of a 2,000-row subsample
    ],
)
def test_protocol_is_read_from_the_rows(dataset, n, folds, expected):
    rows = _cv_rows(dataset, n, folds)
    assert protocol(rows) == (n, DATASET_ROWS[dataset], folds)
    assert comparable(rows) is expected
    text = table(rows)
    assert ("Not comparable with the paper" in text) is not expected
    assert (f"| {dataset} | RMSE | paper's |" in text) is expected


def test_paired_test_of_a_constant_difference_is_certain():
    dense = pd.DataFrame({"fold": range(4), "seed": 0, "rmse": [0.1, 0.2, 0.3, 0.4]})
    low = dense.assign(rmse=dense["rmse"] + 0.25)
    assert _paired_test(low, dense, "rmse") == (math.inf, 0.0, 4)
    assert _paired_test(dense, low, "rmse") == (-math.inf, 0.0, 4)
    assert _paired_test(dense, dense, "rmse") == (0.0, 1.0, 4)


def test_table_needs_cv_rows_and_knows_every_data_set():
    with pytest.raises(ValueError, match="cross-validation"):
        table(pd.DataFrame({"stage": ["select"], "dataset": ["iris"]}))
    assert set(DATASET_ROWS) == set(FULL_RUN) == set(PAPER)
    assert all(low > 1 for low, dense, _ in (FULL_RUN[d] for d in ("iris", "rice", "bank-marketing", "adult")))


def test_paper_like_options_are_validated_by_name():
    with pytest.raises(ValueError, match="early_stopping"):
        LowRankUCIConfig(early_stopping="no")
    with pytest.raises(ValueError, match="categorical"):
        LowRankUCIConfig(categorical="one-hot")


def test_default_protocol_keeps_the_stored_params():
    from structnets.experiments.lowrank_uci import _efficiency_unit, _training_params

    default = _training_params(LowRankUCIConfig())
    assert "early_stopping" not in default and "categorical" not in default  # old run folders resume
    assert "categorical" not in _efficiency_unit(LowRankUCIConfig(), "e", "iris", 2, 6, "chosen").params
    paper_like = _training_params(LowRankUCIConfig(early_stopping=False, categorical="onehot"))
    assert paper_like["early_stopping"] is False and paper_like["categorical"] == "onehot"
    assert {k: v for k, v in paper_like.items() if k not in ("early_stopping", "categorical")} == default


def test_one_hot_codes_replaces_each_coded_column_by_its_indicators():
    from structnets.data.uci import one_hot_codes

    rng = np.random.default_rng(0)
    codes = rng.integers(1, 13, size=50).astype(float)
    codes[:12] = np.arange(1, 13)  # every month present
    X = np.column_stack([rng.normal(size=50), codes, rng.normal(size=50)])
    encoded, names = one_hot_codes(X, ["a", "mnth", "b"], ["mnth"])
    assert encoded.shape == (50, 14)
    assert names[0] == "a" and names[-1] == "b" and names[1:13] == [f"mnth={m}" for m in range(1, 13)]
    block = encoded[:, 1:13]
    assert np.array_equal(block.sum(axis=1), np.ones(50))  # exactly one indicator per row
    assert np.array_equal(np.arange(1, 13)[block.argmax(axis=1)], codes)  # numeric order, 10 after 9
    assert np.array_equal(encoded[:, 0], X[:, 0]) and np.array_equal(encoded[:, -1], X[:, 2])
    with pytest.raises(ValueError, match="columns"):
        one_hot_codes(X, ["a", "mnth", "b"], ["hr"])
    with pytest.raises(ValueError, match="X"):
        one_hot_codes(X[:, :2], ["a", "mnth", "b"], ["mnth"])


def test_paper_like_units_train_fixed_epochs_on_one_hot_codes(uci_data):
    from structnets.experiments.lowrank_uci import _dataset_arrays, _run_cv, _training_params

    X, _, _ = _dataset_arrays("bike-sharing", None, categorical="onehot")
    assert X.shape == (17379, 4 + 1 + 12 + 24 + 1 + 7 + 1 + 4 + 4)  # season, yr, mnth, hr, ..., weathersit, 4 numeric
    assert _dataset_arrays("bike-sharing", None)[0].shape == (17379, 12)
    assert _dataset_arrays("abalone", None, categorical="onehot")[0].shape == (4177, 10)  # nothing coded
    config = LowRankUCIConfig(epochs=3, patience=1, max_rows=300, early_stopping=False, categorical="onehot")
    params = {
        "stage": "cv", "dataset": "bike-sharing", "model": "dense", "bottleneck": None, "depth": 1,
        "width": 6, "folds": 3, "fold": 0, "seed": 0, **_training_params(config),
    }  # fmt: skip
    row = _run_cv(params)
    assert row["epochs_run"] == 3  # no early stop, even with patience 1
    assert row["parameters"] == 58 * 6 + 6 + 6 + 1  # the first layer sees the 58 one-hot columns
    stopped = _run_cv({**params, "early_stopping": True, "epochs": 50})
    assert stopped["n_train"] == row["n_train"] and stopped["epochs_run"] <= 50


def test_training_units_run_on_one_thread_and_restore_the_count(monkeypatch):
    import torch

    from structnets.experiments.lowrank_uci import units

    seen = []
    monkeypatch.setattr(units, "_run_cv", lambda params: seen.append(torch.get_num_threads()) or {})
    monkeypatch.setattr(units, "_run_select", lambda params: seen.append(torch.get_num_threads()) or {})
    previous = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        units._run_unit({"stage": "cv"})
        units._run_unit({"stage": "select"})
        assert seen == [1, 1]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(previous)
