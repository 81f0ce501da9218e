"""lipschitz-mnist end to end: run → results → report → figures, on a small config (one core, seconds).

A certified ResNet must have every certified bound ≤ 1 with the measured lower bound below it, an
unconstrained one must be certified with its own (larger) computed bound, certified accuracy must
fall with the radius and stay below clean accuracy, the timing unit must report positive ratios,
and the report, a function of the stored results table alone, must lay the published results
(GloRo 62.8 %, BCOP 57.05 %, ...) beside ours.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from structnets import runner
from structnets.experiments import get
from structnets.experiments.lipschitz_mnist import PUBLISHED, TIMED_BOUNDS, LipschitzMNISTConfig

SMALL = dataclasses.replace(
    LipschitzMNISTConfig.quick(), depths=(1,), widths=(8,), models=("gradient-step", "unconstrained"),
    losses=("margin-ce",), lifts=("orthogonal",), epochs=1, max_train=256, max_test=128, ascent_steps=2,
    timing_pairs=2, batch_size=64, cost_depths=(1, 2), cost_rounds=2,
)  # fmt: skip


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    from structnets import data
    from structnets.data.files import DataFileError

    try:
        data.load("mnist")
    except (DataFileError, OSError) as error:  # no copy and no network
        pytest.skip(f"MNIST not available: {error}")
    out = tmp_path_factory.mktemp("mnist") / "run"
    return out, runner.run(get("lipschitz-mnist"), SMALL, out, jobs=1)


def test_every_unit_ran(finished: tuple[Path, pd.DataFrame]) -> None:
    _, results = finished
    assert sorted(results["key"]) == [
        "constraint-cost/width=8",
        "timing/depth=1/width=8",
        "train/gradient-step/margin-ce/orthogonal/depth=1/width=8/seed=0",
        "train/unconstrained/scaled-ce/linear/depth=1/width=8/seed=0",
    ]
    train = results[results["stage"] == "train"]
    assert (train["n_train"] == 256).all() and (train["n_test"] == 128).all() and (train["epochs"] == 1).all()


def test_certified_model_is_certified_and_accuracies_are_ordered(finished: tuple[Path, pd.DataFrame]) -> None:
    _, results = finished
    train = results[results["stage"] == "train"].set_index("model")
    ours = train.loc["gradient-step"]
    assert 0 < ours["lipschitz_lower"] <= ours["lipschitz_upper"] * (1 + 1e-5)
    assert ours["lipschitz_upper"] <= 1 + 1e-6 and ours["lipschitz_used"] == ours["lipschitz_upper"]
    unconstrained = train.loc["unconstrained"]
    assert unconstrained["lipschitz_used"] == unconstrained["lipschitz_upper"] > 1.0
    assert unconstrained["lipschitz_lower"] <= unconstrained["lipschitz_upper"] * (1 + 1e-5)
    for _, row in train.iterrows():
        assert 0 <= row["certified_1.58"] <= row["certified_1"] <= row["certified_0.5"] <= row["accuracy"] <= 1
        assert abs(row["accuracy"] * 128 - round(row["accuracy"] * 128)) < 1e-9  # a count over 128 rows


def test_timing_unit_measures_both_bound_modes(finished: tuple[Path, pd.DataFrame]) -> None:
    _, results = finished
    (timing,) = results[results["stage"] == "timing"].itertuples()
    for mode in TIMED_BOUNDS:
        median, q1, q3 = (getattr(timing, f"ratio_{mode}{suffix}") for suffix in ("", "_q1", "_q3"))
        assert 0 < q1 <= median <= q3


def test_constraint_cost_unit_times_both_networks_at_every_depth_in_rounds(
    finished: tuple[Path, pd.DataFrame],
) -> None:
    import json

    import numpy as np

    out, results = finished
    (cost,) = results[results["stage"] == "constraint-cost"].itertuples()
    assert json.loads(cost.cost_depths) == [1, 2] and cost.rounds == 2 and cost.lift == "orthogonal"
    fixed, plain = (
        np.asarray(json.loads(cost.step_seconds_fixed_width)),
        np.asarray(json.loads(cost.step_seconds_gradient_step)),
    )
    assert fixed.shape == plain.shape == (2, 2) and (fixed > 0).all() and (plain > 0).all()
    assert json.loads(cost.cost_ratio_median) == pytest.approx(np.median(fixed / plain, axis=0).tolist(), rel=1e-12)
    assert 0.0 <= cost.other_load <= 1.0 and cost.threads >= 1
    assert "## Constraint cost in depth: fixed-width" in (out / "table.md").read_text()


@pytest.mark.parametrize(
    ("kwargs", "argument"), [({"cost_depths": (5,)}, "cost_depths"), ({"cost_rounds": -1}, "cost_rounds")]
)
def test_bad_constraint_cost_config_is_named(kwargs: dict, argument: str) -> None:
    with pytest.raises(ValueError, match=argument):
        LipschitzMNISTConfig(**kwargs)


def test_report_is_a_function_of_the_stored_table_and_shows_the_published_results(
    finished: tuple[Path, pd.DataFrame],
) -> None:
    out, results = finished
    table = (out / "table.md").read_text()
    assert get("lipschitz-mnist").report(pd.read_csv(out / "results.csv"), SMALL).strip() == table.strip()
    for method, _, clean, certified in PUBLISHED:
        row = next(line for line in table.splitlines() if line.startswith("| published") and method in line)
        assert row.split(" | ")[-4] == f"{certified:.2f}"
        assert clean is None or f"{clean:.2f}" in row
    ours = results[(results["stage"] == "train") & (results["model"] == "gradient-step")].iloc[0]
    assert (
        f"| ours | gradient-step | margin-ce | orthogonal | 1 | 8 | {int(ours['parameters'])} | 1 | "
        f"{100 * ours['accuracy']:.2f} | {100 * ours['certified_0.5']:.2f} |"
    ) in table
    # a configuration other than the presets is not judged against a preset's target
    assert "No target judged" in table and "Target (" not in table and "## Constraint cost" in table


def test_figures_are_written(finished: tuple[Path, pd.DataFrame]) -> None:
    out, _ = finished
    assert (out / "figures" / "mnist.png").stat().st_size > 1000


def test_cuda_on_a_machine_without_one_is_refused_before_any_unit(tmp_path: Path) -> None:
    import torch

    from structnets.runner.errors import DeviceUnavailableError

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(DeviceUnavailableError, match="CUDA is not available"):
        runner.run(get("lipschitz-mnist"), SMALL, tmp_path / "run", jobs=1, device="cuda")
    assert not (tmp_path / "run" / "results.db").exists()
    units = get("lipschitz-mnist").units(SMALL, pd.DataFrame())
    assert all("device" not in unit.params for unit in units)  # CPU params as before the field existed


@pytest.mark.parametrize("bound", ["verified", "verified-batched"])
def test_trains_with_the_certified_every_step_bounds(
    finished: tuple[Path, pd.DataFrame], tmp_path: Path, bound: str
) -> None:
    """``--set bound=verified-batched`` (and ``verified``): every training step certified, the model certified ≤ 1."""
    config = dataclasses.replace(
        SMALL, models=("gradient-step",), bound=bound, timing_pairs=0, cost_rounds=0, depths=(2,), widths=(16,)
    )
    results = runner.run(get("lipschitz-mnist"), config, tmp_path / "run", jobs=1)
    (row,) = results[results["stage"] == "train"].itertuples()
    assert row.bound == bound
    assert 0 < row.lipschitz_lower <= row.lipschitz_upper * (1 + 1e-5) and row.lipschitz_upper <= 1 + 1e-6


def test_unknown_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="bound"):
        dataclasses.replace(SMALL, bound="spectral")


def test_every_trained_network_is_attacked_and_saved(finished: tuple[Path, pd.DataFrame]) -> None:
    import torch

    from structnets.runner.unit_models import load_unit_state

    out, results = finished
    train = results[results["stage"] == "train"]
    for _, row in train.iterrows():
        assert row["attack_points"] == min(SMALL.attack_points, SMALL.max_test)
        for radius in SMALL.radii:
            # the unconstrained network is certified with its own (large) computed L: still a certificate
            assert row[f"attack_broken_{radius:g}"] == 0
            assert row[f"attack_certified_{radius:g}"] <= row[f"pgd_{radius:g}"] <= row["accuracy"] + 1e-12
        params, state = load_unit_state(out, row["key"])
        assert params["model"] == row["model"] and all(isinstance(t, torch.Tensor) for t in state.values())
    assert "No certified point was broken by the attack." in (out / "table.md").read_text()


def test_a_trained_network_loads_back_to_the_same_numbers(finished: tuple[Path, pd.DataFrame]) -> None:
    from structnets.analysis import certify
    from structnets.experiments.lipschitz_mnist import trained_model
    from structnets.experiments.lipschitz_mnist.units import _mnist

    out, results = finished
    row = results.set_index("key").loc["train/gradient-step/margin-ce/orthogonal/depth=1/width=8/seed=0"]
    net = trained_model(out, row.name)
    _, _, X_test, y_test = _mnist(SMALL.max_train, SMALL.max_test, 0)
    again = certify(net, X_test, y_test, list(SMALL.radii), ascent_steps=0)
    for column in ["accuracy", "lipschitz_upper", *[f"certified_{r:g}" for r in SMALL.radii]]:
        assert again[column] == row[column], column
    with pytest.raises(ValueError, match="training unit"):
        trained_model(out, "timing/depth=1/width=8")
