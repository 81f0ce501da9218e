"""lipschitz-density end to end: run → results → report → figures, on a small config (one core, seconds).

The exact max-min networks must reproduce their piecewise-affine targets to rounding, every trained
width-(d + 3) network must be certified ≤ 1 with its measured secant ratio below the certificate,
targets must measure ≤ 1, and the report must be a function of the stored results table alone.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from structnets import runner
from structnets.experiments import get
from structnets.experiments.lipschitz_density import LipschitzDensityConfig

SMALL = dataclasses.replace(
    LipschitzDensityConfig.quick(), depths=(1, 2), seeds=(0, 1), steps=40, train_per_axis_1d=33,
    train_per_axis_2d=9, eval_per_axis_1d=257, eval_per_axis_2d=33,
)  # fmt: skip
TARGETS = {"1d-K4-s0", "2d-G2x2-s0"}


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    out = tmp_path_factory.mktemp("density") / "run"
    return out, runner.run(get("lipschitz-density"), SMALL, out, jobs=1)


def test_every_target_has_its_exact_and_trained_units(finished: tuple[Path, pd.DataFrame]) -> None:
    _, results = finished
    assert set(results["target"]) == TARGETS
    assert len(results) == len(TARGETS) * (1 + len(SMALL.depths))
    trained = results[results["model"] == "trained"]
    assert sorted(trained["depth"].unique()) == list(SMALL.depths)
    assert (trained["width"] == trained["dim"] + 3).all() and (trained["seeds"] == 2).all()
    assert set(trained["best_seed"]) <= set(SMALL.seeds)


def test_exact_construction_reproduces_the_target(finished: tuple[Path, pd.DataFrame]) -> None:
    _, results = finished
    exact = results[results["model"] == "exact"].set_index("target")
    assert (exact["sup_error"] <= 1e-12).all() and (exact["rmse"] <= exact["sup_error"]).all()
    assert (exact["lipschitz_measured"] <= 1 + 1e-12).all()
    # its depth is its number of MaxMin levels: log2 of the padded group size plus log2 of the group count
    assert exact.loc["2d-G2x2-s0", "depth"] == 2
    assert exact.loc["2d-G2x2-s0", "sequential_depth"] == 4 - 1  # pieces − 1


def test_trained_networks_are_certified(finished: tuple[Path, pd.DataFrame]) -> None:
    _, results = finished
    trained = results[results["model"] == "trained"]
    assert (trained["lipschitz_upper"] <= 1.0).all()
    assert (trained["lipschitz_measured"] <= trained["lipschitz_upper"] * (1 + 1e-9)).all()
    assert (trained["rmse"] <= trained["sup_error"]).all()
    assert (trained["sup_error"] <= trained["sup_error_median"]).all()  # best seed ≤ median
    assert (results["target_lipschitz_measured"] <= 1 + 1e-12).all()


def test_report_is_a_function_of_the_stored_table(finished: tuple[Path, pd.DataFrame]) -> None:
    out, results = finished
    table = (out / "table.md").read_text()
    assert get("lipschitz-density").report(pd.read_csv(out / "results.csv"), SMALL).strip() == table.strip()
    assert "| 2d-G2x2-s0 | exact | 2 | 4 |" in table
    assert "(≤ 1)" in table and "NOT ≤ 1" not in table
    largest = results.loc[results["model"] == "trained", "lipschitz_upper"].max()
    assert f"largest `L upper` {largest:.6g} (≤ 1)" in table
    assert "The paper states no rate and no numbers for this" in table


def test_figures_are_written(finished: tuple[Path, pd.DataFrame]) -> None:
    out, _ = finished
    assert (out / "figures" / "density.png").stat().st_size > 1000


def test_resume_recomputes_nothing(finished: tuple[Path, pd.DataFrame]) -> None:
    out, results = finished
    calls: list[str] = []
    again = runner.run(get("lipschitz-density"), SMALL, out, jobs=1, on_unit=lambda record: calls.append(record.key))
    assert calls == []
    pd.testing.assert_frame_equal(
        again.sort_values("key").reset_index(drop=True), results.sort_values("key").reset_index(drop=True)
    )
