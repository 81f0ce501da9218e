"""dlor-blindspot end to end on a tiny config: exact interpolation, the floor, rank-1 networks blind
along v⊥, a report that is a function of the saved results table, the figure."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from structnets.experiments import dlor_blindspot as blindspot
from structnets.experiments import get, names
from structnets.models import dlor_mlp, rank_one_mlp
from structnets.training import seed_batched


def test_registered_and_old_names_still_import() -> None:
    assert "dlor-blindspot" in names() and get("dlor-blindspot") is blindspot.EXPERIMENT
    assert blindspot.train_vmapped is seed_batched.train_vmapped


def test_blindspot_experiment_end_to_end(tmp_path) -> None:
    config = blindspot.DLoRBlindspotConfig(
        widths=(2, 4), seeds=(0, 1), epochs=10, n_train=64, test_per_axis=10, interpolation_sizes=(3, 20),
        floor_samples=20_000, floor_directions=8, decompose_sizes=(4,), decompose_kinds=("gaussian", "singular"),
    )  # fmt: skip
    results = blindspot.run(config, tmp_path)
    assert len(results) == 1 + 2 + 2 * 2 + 2 * 3  # decompositions at r = 1, 2, 3
    decompose = results[results["stage"] == "decompose"]
    assert (decompose["sum_ratio"] <= 1).all() and (decompose["product_ratio"] <= 1).all()
    assert (decompose["sum_terms"] == decompose["sum_terms_cap"]).all()
    assert (decompose["product_factors"] <= decompose["product_factors_cap"]).all()
    floor = results[results["stage"] == "floor"].iloc[0]
    # 8 directions include θ = π/4 and 3π/4 exactly, where the floor is 4/135 (binned estimate on 20,000 points)
    assert (
        abs(floor["floor_mse"] - 4 / 135) < 0.1 * 4 / 135
        and min(abs(floor["floor_theta"] - np.pi / 4), abs(floor["floor_theta"] - 3 * np.pi / 4)) < 1e-12
    )
    assert abs(floor["variance"] - 1 / 9) < 0.05 / 9
    interp = results[results["stage"] == "interpolate"]
    assert sorted(interp["n"]) == [3, 20]
    assert (interp["max_error_scalar_inputs"] <= 1e-8).all() and (interp["max_error_2d_inputs"] <= 1e-8).all()
    train = results[results["stage"] == "train"]
    for _, row in train.iterrows():
        width = int(row["width"])
        build = rank_one_mlp(2, 1, width, 2, "tanh") if row["model"] == "rank1" else dlor_mlp(2, 1, width, 2, 1)
        assert row["parameters"] == sum(p.numel() for p in build.parameters())
        test = json.loads(row["test_mse"])
        assert len(test) == 2 and row["median_test_mse"] == float(np.median(test))
    # spectra of every DLoR map of every seed, before and after training (none for rank-1 networks)
    for _, row in train.iterrows():
        if row["model"] == "rank1":
            assert pd.isna(row["separation_trained"]) and pd.isna(row["background_maps"])
            continue
        before, after = json.loads(row["separation_init"]), json.loads(row["separation_trained"])
        assert len(before) == len(after) == 2 and all(len(m) == 3 for m in before + after)  # depth 2: 3 maps
        assert min(min(m) for m in before + after) >= 1 - 1e-12  # σ₁ ≥ |α| in any αI + UVᵀ
        assert int(row["background_maps"]) == 2 * 3  # N − 2r singular values at |α| in every map
    # rank-1 networks are exactly blind along v⊥ (float32 rounding only); DLoR ones are not
    assert (train[train["model"] == "rank1"]["max_orthogonal_change"] < 1e-5).all()
    assert (train[train["model"] == "dlor"]["max_orthogonal_change"] > 1e-4).all()
    assert (tmp_path / "figures" / "blindspot.png").exists()
    table = (tmp_path / "table.md").read_text()
    assert "blind-spot floor" in table.lower() and "| 20 |" in table
    assert "| 4 | singular | 1, 2, 3 |" in table and "exact to rounding everywhere" in table
    assert "σ₁/|α| of the DLoR maps" in table
    assert blindspot.report_markdown(pd.read_csv(tmp_path / "results.csv"), config) in table


def test_decomposition_threshold_fails_a_wrong_decomposition(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rounding threshold of the decompose stage is not loose: one term or factor missing is ~1/ε beyond it,
    and a factorisation off by 100·N·ε relative (well above rounding) is beyond it too."""
    import structnets.constructive as constructive
    from structnets.constructive import DLoRFactor
    from structnets.experiments.dlor_blindspot.decompose import EPS, run_decompose

    unit = {"size": 16, "kind": "gaussian", "rank": 4, "seed": 0}

    def ratios() -> tuple[float, float]:
        row = run_decompose(unit)
        return float(row["sum_ratio"] or 0.0), float(row["product_ratio"] or 0.0)

    exact = dict(zip(("sum_ratio", "product_ratio"), ratios()))
    assert exact["sum_ratio"] <= 0.1 and exact["product_ratio"] <= 0.1
    real_sum, real_product = constructive.dlor_sum, constructive.dlor_product
    monkeypatch.setattr(constructive, "dlor_sum", lambda W, r: real_sum(W, r)[:-1])
    monkeypatch.setattr(constructive, "dlor_product", lambda W, r: real_product(W, r)[1:])
    dropped = dict(zip(("sum_ratio", "product_ratio"), ratios()))
    assert dropped["sum_ratio"] > 1e10 and dropped["product_ratio"] > 1e10

    def nudged(factors: list[DLoRFactor]) -> list[DLoRFactor]:
        return [DLoRFactor(f.alpha, f.U * (1 + 100 * 16 * EPS), f.V) for f in factors]

    monkeypatch.setattr(constructive, "dlor_sum", lambda W, r: nudged(real_sum(W, r)))
    monkeypatch.setattr(constructive, "dlor_product", lambda W, r: nudged(real_product(W, r)))
    off = dict(zip(("sum_ratio", "product_ratio"), ratios()))
    assert off["sum_ratio"] > 1 and off["product_ratio"] > 1


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"widths": (1,)}, "widths"),
        ({"epochs": 0}, "epochs"),
        ({"floor_samples": 10}, "floor_samples"),
        ({"decompose_sizes": (1,)}, "decompose_sizes"),
        ({"decompose_kinds": ("circulant",)}, "decompose_kinds"),
    ],
)
def test_bad_config_is_named(kwargs: dict, argument: str) -> None:
    with pytest.raises(ValueError, match=f"`{argument}`"):
        blindspot.DLoRBlindspotConfig(**kwargs)
