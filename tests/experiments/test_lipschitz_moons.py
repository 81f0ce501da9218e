"""lipschitz-moons end to end: run → results → report → figures, on a small config (one core, seconds).

The constrained models must be certified 1-Lipschitz (every certified bound ≤ 1, the measured lower
bound below it), certified accuracy must fall with the radius and stay below clean accuracy, the
authors-style baseline must not be certified, and the report must be a function of the stored
results table alone, with the authors' measured constants (19 and 25) beside ours.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pandas as pd
import pytest

from structnets import runner
from structnets.experiments import get
from structnets.experiments.lipschitz_moons import PAPER_LIPSCHITZ_AUTHORS_CODE, LipschitzMoonsConfig

SMALL = dataclasses.replace(
    LipschitzMoonsConfig.quick(), n_samples=240, train_fractions=(0.5,), depths=(2,), depth_sweep_width=4,
    widths=(5,), width_sweep_depth=2, epochs=4, ascent_steps=4, radii=(0.02, 0.1),
)  # fmt: skip


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    out = tmp_path_factory.mktemp("moons") / "run"
    return out, runner.run(get("lipschitz-moons"), SMALL, out, jobs=1)


def test_every_unit_ran_with_its_key(finished: tuple[Path, pd.DataFrame]) -> None:
    _, results = finished
    assert sorted(results["key"]) == [
        "authors-style/train=0.5/depth=2/width=5/seed=0",
        "depth/train=0.5/depth=2/width=4/seed=0",
        "width/train=0.5/depth=2/width=5/seed=0",
    ]
    assert (results["n_train"] == 120).all() and (results["n_test"] == 120).all()


def test_constrained_models_are_certified_and_certified_accuracy_is_ordered(
    finished: tuple[Path, pd.DataFrame],
) -> None:
    _, results = finished
    ours = results[results["sweep"] != "authors-style"]
    assert len(ours) == 2
    assert (ours["lipschitz_upper"] <= 1 + 1e-6).all()
    assert (ours["lipschitz_used"] == ours["lipschitz_upper"]).all()
    assert (ours["lipschitz_lower"] > 0).all()
    assert (ours["lipschitz_lower"] <= ours["lipschitz_upper"] * (1 + 1e-5)).all()
    for _, row in results.iterrows():
        assert 0 <= row["certified_0.1"] <= row["certified_0.02"] <= row["accuracy"] <= 1
        # accuracies are counts over the test points
        assert math.isclose(row["accuracy"] * row["n_test"], round(row["accuracy"] * row["n_test"]), abs_tol=1e-9)


def test_authors_style_baseline_is_certified_with_its_own_computed_bound(finished: tuple[Path, pd.DataFrame]) -> None:
    # Its lift and head are unconstrained, so nothing caps its bound at 1 (at depth 10, width 10 it
    # exceeds 1: tests/lipschitz/test_experiments.py); certified accuracy uses the computed bound.
    out, results = finished
    (authors,) = results[results["sweep"] == "authors-style"].itertuples()
    assert authors.variant == "authors-style"
    assert authors.lipschitz_used == authors.lipschitz_upper
    assert authors.lipschitz_lower <= authors.lipschitz_upper * (1 + 1e-6)
    assert f"certified upper bound up to {authors.lipschitz_upper:.4g}" in (out / "table.md").read_text()


def test_report_is_a_function_of_the_stored_table(finished: tuple[Path, pd.DataFrame]) -> None:
    out, results = finished
    table = (out / "table.md").read_text()
    stored = pd.read_csv(out / "results.csv")
    assert get("lipschitz-moons").report(stored, SMALL).strip() == table.strip()
    for value in PAPER_LIPSCHITZ_AUTHORS_CODE:
        assert f"{value:g}" in table
    assert "| depth | 0.5 | 2 | 4 |" in table and "| width | 0.5 | 2 | 5 |" in table
    ours_rows = [line for line in table.splitlines() if line.startswith("| depth") or line.startswith("| width")]
    assert len(ours_rows) == 2 and all(line.split(" | ")[-2] == "yes" for line in ours_rows)
    largest = results.loc[results["sweep"] != "authors-style", "lipschitz_upper"].max()
    assert f"largest certified upper bound: {largest:.6f}" in table


def test_figures_are_written(finished: tuple[Path, pd.DataFrame]) -> None:
    out, _ = finished
    figure = out / "figures" / "moons.png"
    assert figure.stat().st_size > 1000


def test_resume_recomputes_nothing(finished: tuple[Path, pd.DataFrame]) -> None:
    out, results = finished
    calls: list[str] = []
    again = runner.run(get("lipschitz-moons"), SMALL, out, jobs=1, on_unit=lambda record: calls.append(record.key))
    assert calls == []
    pd.testing.assert_frame_equal(
        again.sort_values("key").reset_index(drop=True), results.sort_values("key").reset_index(drop=True)
    )


def test_cuda_on_a_machine_without_one_is_refused_before_any_unit(tmp_path: Path) -> None:
    import torch

    from structnets.runner.errors import DeviceUnavailableError

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(DeviceUnavailableError, match="CUDA is not available"):
        runner.run(get("lipschitz-moons"), SMALL, tmp_path / "run", jobs=1, device="cuda")
    assert not (tmp_path / "run" / "results.db").exists()


def test_device_is_a_config_field_that_leaves_cpu_unit_params_unchanged() -> None:
    experiment = get("lipschitz-moons")
    cpu = experiment.units(SMALL, pd.DataFrame())
    assert all("device" not in unit.params for unit in cpu)  # old run folders resume unchanged
    gpu = experiment.units(dataclasses.replace(SMALL, device="cuda"), pd.DataFrame())
    assert [u.key for u in gpu] == [u.key for u in cpu] and all(u.params["device"] == "cuda" for u in gpu)
    with pytest.raises(ValueError, match="`device`"):
        LipschitzMoonsConfig(device="tpu")
