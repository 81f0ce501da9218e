"""smoothness-rates end to end on a tiny grid: package layout, certified floors, report from the table alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from structnets.experiments import get
from structnets.experiments import smoothness_rates as rates
from structnets.experiments.smoothness_rates import SmoothnessRatesConfig

TINY = SmoothnessRatesConfig(
    targets=((1, 1.0),),
    sizes=(20, 40, 80),
    seeds=(0, 1),
    depths=(2,),
    steps=20,
    lbfgs_iters=30,
    separation_cells=(),
    approx_targets=((1, 3.0),),
    approx_parameters=(10, 20, 40),
    approx_steps=20,
    approx_lm_iters=15,
    approx_train=64,
    approx_seeds=(0,),
    levels=4,
    test_points=256,
)


def test_old_names_still_import() -> None:
    import importlib.util

    assert importlib.util.find_spec("structnets.experiments._rates_training") is None  # removed shim
    assert not hasattr(rates, "train_ensemble")  # one name per trainer: rates.fit_rates_ensemble
    assert get("smoothness-rates") is rates.EXPERIMENT
    assert rates._units is rates.make_units and rates._report is rates.report_markdown


def test_smoothness_rates_end_to_end(tmp_path: Path) -> None:
    results = rates.run(TINY, tmp_path / "run")
    parts = results["part"].value_counts().to_dict()
    assert parts == {"estimation": 3, "approximation": 3, "relu-floor": 3}
    estimation = results[results["part"] == "estimation"].sort_values("n")
    # Widths follow the parameter budget N ∝ n^{d/(2s+d)} = n^{1/3}: non-decreasing in n.
    assert list(estimation["width"]) == sorted(estimation["width"])
    for name in ("relu", "tanh", "gelu", "silu"):
        for seed in (0, 1):
            prefix = f"{name}/{seed}"
            # L-BFGS accepts only decreases: the final training MSE is at most Adam's.
            assert (estimation[f"{prefix}/train_mse"] <= estimation[f"{prefix}/adam_train_mse"]).all()
            assert (estimation[f"{prefix}/iterations"] <= TINY.lbfgs_iters).all()
            assert (estimation[f"{prefix}/late_gain"] >= 0).all()
    # Certified: no ReLU network with this depth and width has a test MSE below the floor.
    floors = results[results["part"] == "relu-floor"].set_index("width")
    approx = results[results["part"] == "approximation"].set_index("width")
    for width in floors.index:
        assert floors.loc[width, "pieces"] == width + 1
        assert approx.loc[width, "relu/0/test_mse"] >= floors.loc[width, "floor_mse"] * (1 - 1e-9)
    # The report is a function of the results table (and config) alone: re-rendering it from the
    # saved results.csv gives table.md exactly.
    run_dir = tmp_path / "run"
    saved = pd.read_csv(run_dir / "results.csv")
    table = (run_dir / "table.md").read_text()
    assert rates.report_markdown(saved, TINY).strip() == table.strip()
    assert "| 1 | 1 | 2 | relu | -0.667 |" in table and "(c) The ReLU depth cap, certified" in table
    # Resuming the finished run recomputes nothing and returns the same rows.
    again = rates.run(TINY, run_dir)
    columns = [c for c in results.columns if c.endswith("/test_mse")]
    np.testing.assert_array_equal(
        again.sort_values("key")[columns].to_numpy(), results.sort_values("key")[columns].to_numpy()
    )
    assert {p.name for p in (run_dir / "figures").iterdir()} >= {"estimation.png", "approximation.png"}


def test_device_field_keeps_cpu_params_and_names_bad_values() -> None:
    """``device`` enters a training unit's params only off the CPU (old run folders resume); floors never."""
    import dataclasses

    import pytest

    cpu = rates.make_units(TINY, pd.DataFrame())
    assert all("device" not in unit.params for unit in cpu)
    gpu = rates.make_units(dataclasses.replace(TINY, device="cuda:1"), pd.DataFrame())
    assert [unit.key for unit in gpu] == [unit.key for unit in cpu]
    for unit in gpu:
        expected = {} if unit.params["part"] == "relu-floor" else {"device": "cuda:1"}
        assert {k: v for k, v in unit.params.items() if k == "device"} == expected
    with pytest.raises(ValueError, match="`device`"):
        SmoothnessRatesConfig(device="tpu")


def test_units_equal_the_stored_params_of_a_run_before_the_speed_changes() -> None:
    """The quick preset's units have exactly the params of the stored run folders (resume, no params change)."""
    units = rates.make_units(SmoothnessRatesConfig.quick(), pd.DataFrame())
    unit = next(u for u in units if u.key == "approximation/d=1/s=3/L=2/N=360")
    assert unit.params == {
        "part": "approximation",
        "d": 1,
        "s": 3.0,
        "depth": 2,
        "n": 512,
        "width": 120,
        "noise": 0.0,
        "seeds": [0, 1],
        "steps": 150,
        "lbfgs_iters": 0,
        "lm_iters": 300,
        "activations": ["relu", "tanh", "gelu", "silu"],
        "lr": 0.01,
        "ftol": 1e-9,
        "levels": 8,
        "directions": "dense",
        "test_points": 2048,
        "input_scale": 10.0,
    }


def test_parts_select_units_at_unchanged_keys_and_params() -> None:
    """``parts`` keeps only some kinds of unit, each with the key and params the full grid gives it, so a
    supplementary folder (e.g. the N = 640 end of the earlier approximation grid) matches the full run."""
    import pytest

    full = SmoothnessRatesConfig(approx_parameters=(40, 71, 126, 225, 400, 640))
    every = {u.key: u.params for u in rates.make_units(full, pd.DataFrame())}
    extra = SmoothnessRatesConfig(parts=("approximation", "relu-floor"), approx_parameters=(640,))
    units = rates.make_units(extra, pd.DataFrame())
    assert sorted(u.key for u in units) == sorted(k for k in every if k.endswith("/N=640"))
    assert len(units) == 2 * 2 + 2 and all(every[u.key] == u.params for u in units)
    assert {
        u.params["part"] for u in rates.make_units(SmoothnessRatesConfig(parts=("estimation",)), pd.DataFrame())
    } == {"estimation"}
    assert SmoothnessRatesConfig().parts == ("estimation", "approximation", "relu-floor")
    with pytest.raises(ValueError, match="`parts`"):
        SmoothnessRatesConfig(parts=("approx",))
    with pytest.raises(ValueError, match="`parts`"):
        SmoothnessRatesConfig(parts=())
    # the report of an approximation-only folder has no estimation table rows and does not fail
    report = rates.report_markdown(pd.DataFrame(), extra)
    assert report.startswith("# smoothness-rates")
    assert set(SmoothnessRatesConfig.supplement_fields) >= {"parts", "approx_parameters"}
