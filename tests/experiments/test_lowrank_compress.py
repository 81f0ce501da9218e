"""lowrank-compress: units, the paired comparison, exact full-rank compression and a small end-to-end run."""

import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from structnets import compress
from structnets.experiments import get, names
from structnets.experiments.lowrank_compress import (
    EXPERIMENT,
    LowRankCompressConfig,
    all_units,
    paired_difference,
    run_unit,
    scores,
    table,
)
from structnets.experiments.lowrank_compress import units as units_module

TINY = LowRankCompressConfig(
    datasets=("iris", "real-estate"),
    ratios=(1 / 2, 1 / 4),
    seeds=(0, 1),
    width=16,
    depth=3,
    epochs=30,
    finetune_epochs=2,
    batch_size=128,  # few optimiser steps: iris is one batch per epoch
    lr=1e-2,
    finetune_lr=1e-3,
    architectures=(),  # the MLP-per-data-set part only; the curves: test_lowrank_compress_curves.py
)


def test_registered_under_its_name():
    assert "lowrank-compress" in names()
    assert get("lowrank-compress") is EXPERIMENT


def test_units_are_dense_then_each_ratio_per_dataset_and_seed():
    keys = [u.key for u in all_units(TINY, pd.DataFrame())]
    assert len(keys) == len(set(keys)) == 2 * 2 * (1 + 3 * 2)
    assert keys[:7] == [
        "dense/iris/seed=0",
        "compressed/iris/ratio=0.5/seed=0", "finetuned/iris/ratio=0.5/seed=0", "scratch/iris/ratio=0.5/seed=0",
        "compressed/iris/ratio=0.25/seed=0", "finetuned/iris/ratio=0.25/seed=0", "scratch/iris/ratio=0.25/seed=0",
    ]  # fmt: skip
    full = LowRankCompressConfig()
    assert full.datasets == ("mnist", "bike-sharing") and len(full.seeds) >= 3 and 1 / 3 in full.ratios
    assert {u.key.split("/")[2] for u in all_units(full, pd.DataFrame()) if "ratio" in u.key} == {
        "ratio=1",
        "ratio=0.5",
        "ratio=0.3333",
        "ratio=0.25",
        "ratio=0.125",
    }


def test_bad_config_names_the_field():
    with pytest.raises(ValueError, match="datasets"):
        LowRankCompressConfig(datasets=("mnist", "mnist-typo"))
    with pytest.raises(ValueError, match="ratios"):
        LowRankCompressConfig(ratios=(0.5, 1.5))
    with pytest.raises(ValueError, match="ratios"):
        LowRankCompressConfig(ratios=(0.5, 0.50001))
    with pytest.raises(ValueError, match="method"):
        LowRankCompressConfig(method="svd")
    with pytest.raises(ValueError, match="seeds"):
        LowRankCompressConfig(seeds=())


def test_paired_difference_matches_scipy_and_pairs_by_seed():
    rng = np.random.default_rng(0)
    b = pd.DataFrame({"seed": range(6), "accuracy": rng.random(6)})
    a = b.assign(accuracy=b["accuracy"] + rng.normal(0.02, 0.01, 6)).iloc[::-1]  # shuffled order
    mean, std, t, p, n = paired_difference(a, b, "accuracy")
    diff = a.sort_values("seed")["accuracy"].to_numpy() - b["accuracy"].to_numpy()
    expected = stats.ttest_rel(a.sort_values("seed")["accuracy"], b["accuracy"])
    assert n == 6 and math.isclose(mean, diff.mean()) and math.isclose(std, diff.std(ddof=1))
    assert math.isclose(t, expected.statistic) and math.isclose(p, expected.pvalue)
    assert math.isclose(t, mean / (std / math.sqrt(6)))
    same = paired_difference(b, b, "accuracy")
    assert same[:4] == (0.0, 0.0, 0.0, 1.0)


def _dense_flops(d: int, out: int, width: int, depth: int) -> int:
    return 2 * (d * width + (depth - 1) * width * width + width * out) + (depth * width + out)


def _lowrank_flops(d: int, out: int, width: int, depth: int, ratio: float) -> int:
    """FLOPs of the compressed net from compress's rank rule: the largest k with k(m + n) ≤ r·m·n, ≥ 1."""
    k_first = max(1, min(math.floor(ratio * d * width / (d + width) + 1e-9), min(d, width)))
    k_hidden = max(1, math.floor(ratio * width * width / (2 * width) + 1e-9))
    macs = k_first * (d + width) + (depth - 1) * k_hidden * 2 * width + width * out
    return 2 * macs + (depth * width + out)


def test_full_rank_compression_reproduces_the_dense_net(uci_data):
    params = all_units(TINY, pd.DataFrame())[0].params  # dense/iris/seed=0
    dense, _ = units_module._trained_dense(params)
    X_train, y_train, X_test, y_test, task, _ = units_module._data(params)
    full = compress(dense, "lowrank", rank=TINY.width).model  # every layer at its largest rank
    assert all(layer.rank == min(layer.in_features, layer.out_features)
               for layer in compress(dense, "lowrank", rank=TINY.width).layers)  # fmt: skip
    with torch.no_grad():
        for X in (X_train, X_test):
            assert torch.allclose(full(X), dense(X), rtol=0, atol=1e-4)
            assert torch.equal(full(X).argmax(1), dense(X).argmax(1))
    assert scores(full, X_test, y_test, task) == pytest.approx(scores(dense, X_test, y_test, task), nan_ok=True)
    assert scores(dense, X_test, y_test, task)["accuracy"] > 0.8  # it learned (3 classes: chance is 1/3)


def test_small_end_to_end_run(tmp_path, uci_data):
    from structnets import runner

    results = runner.run(EXPERIMENT, TINY, tmp_path / "run")
    assert len(results) == 2 * 2 * 7
    assert results.groupby(["dataset", "model"]).size().to_dict() == {
        (d, m): 2 if m == "dense" else 4 for d in TINY.datasets for m in ("dense", "compressed", "finetuned", "scratch")
    }
    for dataset, d, outputs in (("iris", 4, 3), ("real-estate", 6, 1)):  # README.md, "Data"
        rows = results[results["dataset"] == dataset]
        dense = rows[rows["model"] == "dense"]
        assert (dense["flops"] == _dense_flops(d, outputs, 16, 3)).all()
        assert (dense["flops_ratio"] == 1.0).all() and (dense["relative_error_max"] == 0.0).all()
        previous = _dense_flops(d, outputs, 16, 3)
        for ratio in (0.5, 0.25):  # FLOPs fall with the ratio, exactly as compress's rank rule says
            at = rows[np.isclose(rows["ratio"], ratio)]
            assert (at["flops"] == _lowrank_flops(d, outputs, 16, 3, ratio)).all()  # same for all three models
            assert at["flops"].iloc[0] < previous
            previous = at["flops"].iloc[0]
        compressed = rows[rows["model"] == "compressed"].sort_values(["seed", "ratio"])
        # Eckart–Young: a lower ratio keeps a lower rank, so every layer's error can only grow.
        for _, seed_rows in compressed.groupby("seed"):
            errors = seed_rows["relative_error_max"].to_numpy()
            assert 0 < errors[1] <= errors[0] < 1  # sorted by ratio: 0.25 first
        assert rows[rows["model"] == "scratch"]["relative_error_mean"].isna().all()
    iris = results[results["dataset"] == "iris"]
    assert iris["accuracy"].between(0, 1).all() and iris["rmse"].isna().all()
    estate = results[results["dataset"] == "real-estate"]
    assert (estate["rmse"] > 0).all() and estate["accuracy"].isna().all()
    # The compressed unit retrains its dense net; the retrained net is bit-identical (CPU), so the row is too.
    key = "compressed/real-estate/ratio=0.25/seed=1"
    unit = next(u for u in all_units(TINY, pd.DataFrame()) if u.key == key)
    units_module._trained_dense_cached.cache_clear()
    again = run_unit(unit.params)
    stored = results.set_index("key").loc[key]
    assert again["rmse"] == stored["rmse"] and again["relative_error_mean"] == stored["relative_error_mean"]
    written = (tmp_path / "run" / "table.md").read_text()
    assert written.rstrip("\n") == table(results).rstrip("\n")  # the table is a function of the results alone
    assert "About 3 times cheaper?" in written and "| low-rank from scratch | 0.25 |" in written
    assert (tmp_path / "run" / "figures" / "accuracy_vs_flops.png").stat().st_size > 0


def test_report_needs_a_dense_row():
    with pytest.raises(ValueError, match="dense"):
        table(pd.DataFrame({"model": ["scratch"], "dataset": ["iris"]}))
