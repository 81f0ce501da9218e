"""The two experiments of the smooth-activation issue, run end to end on tiny configurations."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from structnets import runner
from structnets.experiments import get, names
from structnets.experiments.smoothness_rates import (
    SmoothnessRatesConfig,
    fit_rates_ensemble,
    parameter_count,
    width_for_parameters,
)
from structnets.experiments.swish_construction import SwishConstructionConfig, parse_target
from structnets.models import mlp


def test_registered() -> None:
    assert {"swish-construction", "smoothness-rates"} <= set(names())


def test_swish_construction_runs_and_every_error_is_below_its_bound(tmp_path: Path) -> None:
    config = SwishConstructionConfig(
        targets=("power:1:1.5", "sine:2:2"),
        Ms_1d=(4, 8, 16),
        Ms_2d=(3, 6),
        taus=(4.0,),
        lams=(64.0,),
        sweep_M_1d=8,
        sweep_M_2d=3,
        grid_1d=2001,
        grid_2d=41,
    )
    results = runner.run(get("swish-construction"), config, tmp_path / "run")
    assert len(results) == 2 * (3 + 1 + 1) - 1  # (target × sweeps) − the 2-D M sweep has 2 points
    assert (results["error"] <= results["bound"]).all()
    assert (results["width"] <= results["paper_width"]).all()
    assert (results[results["d"] == 1]["padding"] == 0).all()  # d = 1: the 1/3 bottleneck by construction
    assert (results["width"] == results["unpadded_width"] + results["padding"]).all()
    table = (tmp_path / "run" / "table.md").read_text()
    assert "paper slope −β" in table and "power:1:1.5" in table
    assert (tmp_path / "run" / "figures" / "error_vs_M.png").exists()


def test_parse_target_rejects_bad_specs() -> None:
    assert parse_target("power:2:1.5").d == 2
    with pytest.raises(ValueError, match="`targets`"):
        parse_target("cosine:1:1")
    with pytest.raises(ValueError, match="`targets`"):
        parse_target("power-1-1")


@pytest.mark.parametrize(("d", "depth"), [(1, 2), (1, 6), (4, 3)])
def test_width_solves_the_parameter_budget(d: int, depth: int) -> None:
    for N in (20, 100, 1000, 5000):
        width = width_for_parameters(N, d, depth)
        model = mlp(d, 1, width, depth - 1)
        assert parameter_count(d, width, depth) == sum(p.numel() for p in model.parameters())
        neighbours = [parameter_count(d, w, depth) for w in (width - 1, width, width + 1) if w >= 2]
        assert min(abs(v - N) for v in neighbours) == abs(parameter_count(d, width, depth) - N) or width == 2


def test_ensemble_members_train_independently_and_learn() -> None:
    torch.manual_seed(0)
    X = torch.rand(3, 200, 1, dtype=torch.float64)
    y = torch.sin(3 * X[..., 0])
    X_test = torch.rand(500, 1, dtype=torch.float64)
    f_test = torch.sin(3 * X_test[:, 0])
    activations = ["tanh", "relu", "tanh"]
    fit = fit_rates_ensemble(X, y, X_test, f_test, activations, 16, 2, steps=300, lr=1e-2, seed=1, lbfgs_iters=50)
    train, test = fit.train_mse, fit.test_mse
    y_changed = y.clone()
    y_changed[2] = -y_changed[2]  # another member's data must not move member 0 or 1
    fit2 = fit_rates_ensemble(
        X, y_changed, X_test, f_test, activations, 16, 2, steps=300, lr=1e-2, seed=1, lbfgs_iters=50
    )
    train2, test2 = fit2.train_mse, fit2.test_mse
    np.testing.assert_allclose(train[:2], train2[:2], rtol=1e-6)
    np.testing.assert_allclose(test[:2], test2[:2], rtol=1e-6)
    assert test2[2] > 0.3  # member 2 learned −sin, far from f
    assert np.all(train < 5e-3) and np.all(test[:2] < 5e-3)  # each fits its own data


def test_smoothness_rates_runs_and_reports_slopes(tmp_path: Path) -> None:
    config = SmoothnessRatesConfig(
        targets=((1, 1.0),),
        sizes=(20, 40, 80),
        seeds=(0, 1),
        depths=(2,),
        steps=30,
        lbfgs_iters=20,
        approx_targets=((1, 3.0),),
        approx_parameters=(10, 20, 40),
        approx_steps=30,
        approx_lbfgs_iters=20,
        approx_lm_iters=20,
        approx_train=64,
        approx_seeds=(0,),
        levels=4,
        test_points=256,
        separation_cells=("1:3:2",),
    )
    results = runner.run(get("smoothness-rates"), config, tmp_path / "run")
    assert len(results) == 12  # 3 + 3 estimation (s = 1; separation cell s = 3), 3 approximation, 3 floors
    # The certified floor is a lower bound for every ReLU network of that depth and width, so the
    # trained ReLU networks of the approximation part (same test points) can never beat it.
    floors = results[results["part"] == "relu-floor"].set_index("width")
    approx = results[results["part"] == "approximation"].set_index("width")
    assert sorted(floors.index) == sorted(approx.index)
    assert floors["floor_computed"].all() and (floors["floor_mse"] > 0).all()
    for width in floors.index:
        assert approx.loc[width, "relu/0/test_mse"] >= floors.loc[width, "floor_mse"] * (1 - 1e-9)
        assert floors.loc[width, "pieces"] == width + 1
    assert approx["lm_iters"].eq(20).all()
    columns = [c for c in results.columns if c.endswith("/test_mse")]
    assert len(columns) == 4 * 2  # activations × seeds (approximation rows use seed 0 only)
    table = (tmp_path / "run" / "table.md").read_text()
    assert "−2s/(2s+d)" in table and "| 1 | 1 | 2 | relu | -0.667 |" in table
    assert "settled (converged) / members" in table
    assert "(c) The ReLU depth cap, certified" in table and "Slope of the certified floor" in table
    # The cap with the paper's L − 1 = weight layers: −min(2, 3)/1 = −2 for ReLU at 2 weight layers.
    assert "| 1 | 3 | 2 | relu | -2.000 |" in table
    assert "(a′) Where the ReLU cap predicts separation" in table and "| 1 | 3 | 2 | -0.857 | -0.800 |" in table
    assert {"relu/0/converged", "relu/0/late_gain", "relu/0/adam_train_mse"} <= set(results.columns)
    assert (tmp_path / "run" / "figures" / "estimation.png").exists()
    with pytest.raises(ValueError, match="`activations`"):
        SmoothnessRatesConfig(activations=("swishy",))
    with pytest.raises(ValueError, match="`lbfgs_iters`"):
        SmoothnessRatesConfig(lbfgs_iters=-1)
    with pytest.raises(ValueError, match="`approx_parameters`"):
        SmoothnessRatesConfig(approx_parameters=(4,))
    with pytest.raises(ValueError, match="`approx_lm_iters`"):
        SmoothnessRatesConfig(approx_lm_iters=-1)
    with pytest.raises(ValueError, match="`floor_max_pieces`"):
        SmoothnessRatesConfig(floor_max_pieces=0)


def test_upper_half_slope_separates_a_small_n_artefact_from_the_rate() -> None:
    """Excess risk ∝ n^{−1/2} from n = 400 on, inflated at the two smallest n: the slope over all n
    is steeper than −1/2, the slope over the largest half of the grid recovers −1/2 exactly."""
    from structnets.experiments.smoothness_rates import _slope_table

    sizes = [25, 50, 100, 200, 400, 800, 1600]
    records = []
    for n in sizes:
        for seed in range(3):
            risk = n**-0.5 * (5.0 if n <= 50 else 1.0)
            records.append(
                {
                    "part": "estimation",
                    "d": 1,
                    "s": 1.0,
                    "depth": 2,
                    "activation": "tanh",
                    "n": n,
                    "seed": seed,
                    "test_mse": risk,
                    "train_mse": 0.01,
                    "adam_train_mse": 0.02,
                    "noise_mse": 0.01,
                    "settled": True,
                    "converged": True,
                }
            )
    (row,) = _slope_table(pd.DataFrame.from_records(records), "estimation", "n", "test_mse")
    assert row["fit"].slope < -0.7
    assert row["upper_fit"].slope == pytest.approx(-0.5, abs=1e-12)
    assert row["upper_fit"].n_levels == 4  # 200, 400, 800, 1600


def test_non_finite_and_zero_errors_are_left_out_of_the_slope_and_counted() -> None:
    """A diverged member (NaN, +inf) or an exact 0 cannot enter a log-log fit: the slope is that of the other
    members, and the row and the report's table say how many were left out (they were dropped silently before,
    and +inf entered the fit)."""
    from structnets.experiments.smoothness_rates import _slope_table
    from structnets.experiments.smoothness_rates.report import _members_cell

    records = []
    for n in (100, 200, 400, 800):
        for seed in range(3):
            risk = 2.0 * n**-0.5
            if (n, seed) == (200, 0):
                risk = math.nan
            elif (n, seed) == (400, 1):
                risk = math.inf
            elif (n, seed) == (800, 2):
                risk = 0.0
            records.append(
                {
                    "part": "estimation", "d": 1, "s": 1.0, "depth": 2, "activation": "tanh", "n": n, "seed": seed,
                    "test_mse": risk, "train_mse": 0.01, "adam_train_mse": 0.02, "noise_mse": 0.01, "settled": True,
                    "converged": True,
                }
            )  # fmt: skip
    (row,) = _slope_table(pd.DataFrame.from_records(records), "estimation", "n", "test_mse")
    assert row["fit"].slope == pytest.approx(-0.5, abs=1e-12)
    assert row["left_out"] == 3 and row["members"] == 12
    assert _members_cell(row) == "12 (12) / 12, 3 not in the fit (error not finite and positive)"
    clean = [r | {"test_mse": 2.0 * r["n"] ** -0.5} for r in records]
    (row,) = _slope_table(pd.DataFrame.from_records(clean), "estimation", "n", "test_mse")
    assert row["left_out"] == 0 and _members_cell(row) == "12 (12) / 12"
