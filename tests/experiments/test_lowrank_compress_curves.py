"""lowrank-compress curves: units, the Tucker FLOP count, budgets met, exactness at full rank, the targets' tests."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from structnets import compress
from structnets.experiments.lowrank_compress import LowRankCompressConfig, all_units, curves, run_unit, targets

TINY = LowRankCompressConfig(
    datasets=(), architectures=("cnn", "vit"), curve_seeds=(0,), budgets=(1 / 2,), curve_epochs=1,
    curve_max_train=300, curve_max_test=200, finetune_steps=3, timing_batch=16, timing_pairs=2,
    calibration_rows=64, batch_size=64,
)  # fmt: skip


def test_units_keys_and_presets():
    keys = [u.key for u in all_units(TINY, pd.DataFrame())]
    tucker = curves.tucker_available()
    cnn_arms = 3 if tucker else 2
    assert len(keys) == len(set(keys)) == (1 + cnn_arms * 2) + (1 + 2 * 2)
    assert keys[:3] == ["curve/cnn/dense/seed=0", "curve/cnn/svd/flops=0.5/steps=0/seed=0",
                        "curve/cnn/svd/flops=0.5/steps=3/seed=0"]  # fmt: skip
    assert ("curve/cnn/tucker/flops=0.5/steps=0/seed=0" in keys) == tucker
    assert not any(k.startswith("curve/vit/tucker") for k in keys)  # Tucker-2 of a matrix is its SVD
    full = LowRankCompressConfig()
    assert full.architectures == ("mlp", "cnn", "vit") and len(full.curve_seeds) >= targets.MIN_SEEDS
    assert full.budgets == (1 / 2, 1 / 3, 1 / 4) and full.finetune_steps > 0
    old = [u.key for u in all_units(full, pd.DataFrame()) if not u.key.startswith("curve/")]
    assert old[0] == "dense/mnist/seed=0" and len(old) == 2 * 3 * (1 + 3 * 5)  # the MLP part's keys unchanged
    with pytest.raises(ValueError, match="architectures"):
        LowRankCompressConfig(architectures=("resnet",))
    with pytest.raises(ValueError, match="budgets"):
        LowRankCompressConfig(budgets=(0.5, 1.5))
    with pytest.raises(ValueError, match="datasets"):
        LowRankCompressConfig(datasets=(), architectures=())


def test_tucker_flops_and_ranks_match_the_layers():
    # 1x1 (c_in -> r_in), kxk (r_in -> r_out), 1x1 (r_out -> c_out) + bias, per output position (stride 1)
    assert curves.tucker_flops(16, 32, 9, 4, 8, True, 1.0) == 2 * (16 * 4 + 4 * 8 * 9 + 8 * 32) + 32
    assert curves.tucker_flops(16, 32, 9, 4, 8, False, 4.0) == 2 * (16 * 4 * 4 + 4 * 8 * 9 + 8 * 32)
    limit = 2 * 16 * 32 * 9 // 2
    r_out, r_in = curves.tucker_ranks(16, 32, 9, True, 1.0, limit)
    assert curves.tucker_flops(16, 32, 9, r_in, r_out, True, 1.0) <= limit
    bigger = (min(32, r_out + 2), min(16, r_in + 1))  # the next step of the grid costs more than the limit
    assert curves.tucker_flops(16, 32, 9, bigger[1], bigger[0], True, 1.0) > limit
    # ... and the FLOP counter agrees with the formula on a real tensorly-torch layer
    tltorch = pytest.importorskip("tltorch")
    conv = torch.nn.Conv2d(16, 32, 3, padding=1, bias=False)
    layer = tltorch.FactorizedConv.from_conv(conv, rank=(8, 4, 3, 3), factorization="tucker",
                                             implementation="factorized")  # fmt: skip
    # per position exactly the formula; the rest (rebuilding the 3x3 core from the Tucker factors on every
    # call) does not grow with the positions
    big, small = (curves.model_flops(layer, torch.randn(1, 16, n, n)) for n in (10, 5))
    assert big - small == (100 - 25) * curves.tucker_flops(16, 32, 9, 4, 8, False, 1.0)


def test_tucker_at_full_rank_is_the_convolution():
    tltorch = pytest.importorskip("tltorch")
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(16, 32, 3, padding=1).double()
    layer = tltorch.FactorizedConv.from_conv(conv, rank=(32, 16, 3, 3), factorization="tucker",
                                             implementation="factorized", decompose_weights=True)  # fmt: skip
    x = torch.randn(2, 16, 9, 9, dtype=torch.float64)
    with torch.no_grad():
        assert torch.allclose(layer(x), conv(x), rtol=0, atol=1e-9)


def test_vit_and_cnn_compress_exactly_at_full_rank_and_meet_the_budget(uci_data):
    for architecture in ("cnn", "vit"):
        params = next(
            u.params for u in all_units(TINY, pd.DataFrame()) if u.key == f"curve/{architecture}/dense/seed=0"
        )
        dense, _ = curves.trained(params)
        X = curves.images(params)[0][:32]
        full = compress(dense, "lowrank", flops=1.0, calibration=X).model
        with torch.no_grad():
            assert torch.allclose(full(X), dense(X), rtol=0, atol=1e-4)
        for method in ("svd", "calibrated"):
            model, columns = curves.compress_arm(dense, method, 0.5, X)
            assert 0.48 <= float(columns["budget_reached"]) <= 0.5  # compress: never above, within 2 %
            assert curves.model_flops(model, X[:1]) < curves.model_flops(dense, X[:1])


def test_curve_units_rows(uci_data):
    units = {u.key: u for u in all_units(TINY, pd.DataFrame())}
    dense = run_unit(units["curve/cnn/dense/seed=0"].params)
    rows = {k: run_unit(u.params) for k, u in units.items() if k.startswith("curve/cnn/") and "dense" not in k}
    assert len({tuple(sorted(row)) for row in rows.values()}) == 1  # the store wants one set of columns per kind
    for key, row in rows.items():
        assert row["stage"] == "curve" and 0 <= row["accuracy"] <= 1
        assert row["flops"] < dense["flops"] and row["parameters_dense"] == dense["parameters"]
        if "/steps=0/" in key:
            assert row["latency_ratio"] > 0 and row["train_seconds"] == 0.0
        else:
            assert row["latency_ratio"] is None
            untuned = rows[key.replace("/steps=3/", "/steps=0/")]
            assert row["flops"] == untuned["flops"] and row["parameters"] == untuned["parameters"]
            assert row["train_seconds"] > 0
    svd = rows["curve/cnn/svd/flops=0.5/steps=0/seed=0"]
    if "curve/cnn/tucker/flops=0.5/steps=0/seed=0" in rows:
        tucker = rows["curve/cnn/tucker/flops=0.5/steps=0/seed=0"]
        assert tucker["tucker_ranks"] and tucker["budget_reached"] <= svd["budget_reached"] + 1e-12
    again = run_unit(units["curve/cnn/calibrated/flops=0.5/steps=3/seed=0"].params)  # pure: the same row
    assert again["accuracy"] == rows["curve/cnn/calibrated/flops=0.5/steps=3/seed=0"]["accuracy"]


def _synthetic(diff_cal: float, diff_half: float, seeds: int = 5, noise: float = 0.002) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    out = []
    for s in range(seeds):
        dense = 0.98 + rng.normal(0, noise)
        out.append(dict(stage="curve", architecture="mlp", method="dense", seed=s, budget=None, finetune_steps=0,
                        accuracy=dense, key=f"d{s}"))  # fmt: skip
        for steps in (0, 10):
            svd = dense - 0.02 + rng.normal(0, noise)
            cal = dense + diff_half + rng.normal(0, noise) if steps == 0 else svd + diff_cal + rng.normal(0, noise)
            for method, acc in (("svd", svd), ("calibrated", cal)):
                out.append(dict(stage="curve", architecture="mlp", method=method, seed=s, budget=0.5,
                                finetune_steps=steps, accuracy=acc, key=f"{method}{steps}{s}"))  # fmt: skip
    return pd.DataFrame(out)


def test_targets_bounds_are_the_one_sided_t_bounds():
    d = np.array([0.01, 0.03, -0.005, 0.02, 0.015])
    mean, sd, lower, upper = targets.paired_bounds(d, 0.05, 0.05 / 3)
    se = d.std(ddof=1) / math.sqrt(5)
    assert lower == pytest.approx(d.mean() - stats.t.ppf(0.95, 4) * se)
    assert upper == pytest.approx(d.mean() + stats.t.ppf(1 - 0.05 / 3, 4) * se)
    # the lower bound is where scipy's one-sided paired test at level 0.05 just rejects
    assert stats.ttest_1samp(d - lower, 0.0, alternative="greater").pvalue == pytest.approx(0.05)
    assert math.isnan(targets.paired_bounds(np.array([0.1]), 0.05, 0.05)[2])


def test_targets_decide_each_way():
    from structnets.claims import NOT_REPRODUCED, REFUTED, REPRODUCED

    good = _synthetic(diff_cal=0.01, diff_half=-0.001)
    assert targets.verdict(targets.calibrated_vs_svd(good)) == REPRODUCED
    assert targets.verdict(targets.half_flops(good)) == REPRODUCED
    bad = _synthetic(diff_cal=-0.05, diff_half=-0.05)
    assert targets.verdict(targets.calibrated_vs_svd(bad)) == REFUTED
    assert targets.verdict(targets.half_flops(bad)) == REFUTED
    few = _synthetic(diff_cal=0.01, diff_half=-0.001, seeds=3)  # holds, but fewer than 5 seeds
    assert all(c.outcome == targets.HOLDS for c in targets.half_flops(few))
    assert targets.verdict(targets.half_flops(few)) == NOT_REPRODUCED
    noisy = _synthetic(diff_cal=-0.0075, diff_half=-0.01, noise=0.02)
    assert targets.verdict(targets.half_flops(noisy)) == NOT_REPRODUCED


def test_the_targets_verdict_words_are_the_claims_tables() -> None:
    from structnets.claims import evidence

    for name in ("REPRODUCED", "REFUTED", "NOT_REPRODUCED", "NOT_TESTED"):
        assert getattr(targets, name) == getattr(evidence, name)
