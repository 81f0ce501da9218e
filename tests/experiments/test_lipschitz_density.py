"""lipschitz-density end to end: run → results → report → figures, on a small config (one core, seconds).

The exact max-min networks must reproduce their piecewise-affine targets to rounding, every trained
width-(d + 3) network must be certified ≤ 1 with its measured secant ratio below the certificate,
targets must measure ≤ 1, and the report must be a function of the stored results table alone.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from structnets import runner
from structnets.experiments import get
from structnets.experiments.lipschitz_density import LipschitzDensityConfig

SMALL = dataclasses.replace(
    LipschitzDensityConfig.quick(), depths=(1, 2), seeds=(0, 1), steps=40, train_per_axis_1d=33,
    train_per_axis_2d=9, eval_per_axis_1d=257, eval_per_axis_2d=33, unbounded_widths=(2, 3, 4),
    unbounded_depths=(1, 2, 3), unbounded_seeds=(0, 1),
)  # fmt: skip
TARGETS = {"1d-K4-s0", "2d-G2x2-s0"}


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    out = tmp_path_factory.mktemp("density") / "run"
    return out, runner.run(get("lipschitz-density"), SMALL, out, jobs=1)


def test_every_target_has_its_exact_and_trained_units(finished: tuple[Path, pd.DataFrame]) -> None:
    _, results = finished
    assert set(results["target"]) == TARGETS
    assert len(results) == len(TARGETS) * (1 + len(SMALL.depths) + len(SMALL.unbounded_widths))
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


def test_gradient_step_units_are_theorem_31s_family_and_certified(finished: tuple[Path, pd.DataFrame]) -> None:
    import json

    _, results = finished
    family = results[results["model"] == "gradient-step"]
    for target in TARGETS:
        rows = family[family["target"] == target].sort_values("depth")
        assert list(zip(rows["width"], rows["depth"])) == [(2, 1), (3, 2), (4, 3)]
        # lift, L blocks, head: no norm-constrained maps between the blocks (those are Theorem 4.1's)
        assert list(rows["layers"]) == [d + 2 for d in rows["depth"]]
        dim = int(rows["dim"].iloc[0])
        width, depth = rows["width"].to_numpy(), rows["depth"].to_numpy()
        # lift W (w × d) + b, per block W (w × w) + b + step logit, head (1 × w) + b
        assert list(rows["parameters"]) == list(width * dim + width + depth * (width * width + width + 1) + width + 1)
    assert (family["seeds"] == 2).all() and (family["lipschitz_upper"] <= 1.0).all()
    assert (family["lipschitz_measured"] <= family["lipschitz_upper"] * (1 + 1e-9)).all()
    for _, row in family.iterrows():
        sups = json.loads(row["sup_errors"])
        assert len(sups) == 2 and min(sups) == row["sup_error"] and float(np.median(sups)) == row["sup_error_median"]


def test_the_gradient_step_variant_trains_the_library_model_it_returns() -> None:
    # the seed-batched training without maps between the blocks computes what the returned library model computes
    import torch

    from structnets.experiments.lipschitz_density.fixed_width import _batched_forward, _stack, fit_fixed_width

    target = lambda x: np.abs(x[:, 0]) - 0.5  # noqa: E731 - 1-Lipschitz
    models = fit_fixed_width(target, 1, 3, width=4, seeds=[0, 1], steps=5, train_per_axis=9, variant="gradient-step")
    assert len(models[0]) == 5  # lift, 3 blocks, head
    x = torch.linspace(-1, 1, 11, dtype=torch.float64)[:, None]
    batched = _batched_forward(
        {k: v.detach() for k, v in _stack(models, 3, between=False).items()}, x.expand(2, -1, -1)
    )
    with torch.no_grad():
        for i, model in enumerate(models):
            torch.testing.assert_close(batched[i], model(x)[:, 0], rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="`width`"):
        fit_fixed_width(target, 1, 2, width=None, variant="gradient-step")
    with pytest.raises(ValueError, match="`variant`"):
        fit_fixed_width(target, 1, 2, variant="dense")


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"unbounded_widths": (2, 3), "unbounded_depths": (1,)}, "unbounded_widths"),
        ({"unbounded_widths": (3, 2), "unbounded_depths": (1, 2)}, "grow"),
        ({"unbounded_widths": (2, 2), "unbounded_depths": (1, 1)}, "distinct"),
        ({"unbounded_seeds": ()}, "unbounded_seeds"),
        ({"unbounded_widths": (0,), "unbounded_depths": (1,)}, "unbounded_widths"),
    ],
)
def test_bad_unbounded_grid_is_named(kwargs: dict, argument: str) -> None:
    with pytest.raises(ValueError, match=argument):
        LipschitzDensityConfig(**kwargs)


def test_report_is_a_function_of_the_stored_table(finished: tuple[Path, pd.DataFrame]) -> None:
    out, results = finished
    table = (out / "table.md").read_text()
    assert get("lipschitz-density").report(pd.read_csv(out / "results.csv"), SMALL).strip() == table.strip()
    assert "| 2d-G2x2-s0 | exact | 2 | 4 |" in table
    assert "(≤ 1)" in table and "NOT ≤ 1" not in table
    largest = results.loc[results["model"] == "trained", "lipschitz_upper"].max()
    assert f"largest `L upper` {largest:.6g} (≤ 1)" in table
    assert "The paper states no rate and no numbers for this" in table
    assert "Theorem 3.1 (`gradient-step`" in table and "| (2, 1) | (3, 2) | (4, 3) |" in table


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
