"""lipschitz-moons / lipschitz-mnist: registered, units pure and seeded, report and figures from rows."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from structnets.experiments import get, names
from structnets.experiments.lipschitz_mnist import LipschitzMNISTConfig
from structnets.experiments.lipschitz_moons import LipschitzMoonsConfig


def test_registered() -> None:
    assert {"lipschitz-moons", "lipschitz-mnist"} <= set(names())
    assert get("lipschitz-moons").config_class is LipschitzMoonsConfig
    assert get("lipschitz-mnist").config_class is LipschitzMNISTConfig


def test_moons_units_are_seeded_certified_and_reported(tmp_path: Path) -> None:
    experiment = get("lipschitz-moons")
    config = dataclasses.replace(
        LipschitzMoonsConfig.quick(), n_samples=300, depths=(2,), widths=(6,), width_sweep_depth=2,
        train_fractions=(0.5,), epochs=3, ascent_steps=3, authors_baseline=False,
    )
    units = experiment.units(config, pd.DataFrame())
    assert len(units) == 2 and len({u.key for u in units}) == 2
    rows = [experiment.run_unit(dict(u.params)) for u in units]
    again = experiment.run_unit(dict(units[0].params))
    for column in ("accuracy", "lipschitz_upper", "certified_0.1"):
        assert again[column] == rows[0][column]  # pure and seeded
    for row in rows:
        assert row["lipschitz_lower"] <= row["lipschitz_upper"] * (1 + 1e-5) <= 1 + 1e-5
        assert 0 <= row["certified_0.2"] <= row["certified_0.05"] <= row["accuracy"] <= 1
    results = pd.DataFrame(rows)
    table = experiment.report(results, config)
    assert "| depth | 0.5 | 2 | 5 |" in table and "| width | 0.5 | 2 | 6 |" in table and "NO" not in table.split("≤ 1 in fact")[1]
    assert [p.name for p in experiment.figures(results, config, tmp_path)] == ["moons.png"]


def test_moons_quick_includes_authors_style_baseline_which_is_not_certified() -> None:
    experiment = get("lipschitz-moons")
    config = dataclasses.replace(LipschitzMoonsConfig.quick(), train_fractions=(0.2,), n_samples=200, epochs=2)
    units = [u for u in experiment.units(config, pd.DataFrame()) if u.key.startswith("authors-style/")]
    assert [u.key for u in units] == ["authors-style/train=0.2/depth=10/width=10/seed=0"]
    row = experiment.run_unit(dict(units[0].params))
    assert row["lipschitz_lower"] <= row["lipschitz_upper"] * (1 + 1e-6)
    assert row["lipschitz_upper"] > 1.0  # unconstrained lift and head: no certificate of 1


def test_mnist_units_grid_and_report() -> None:
    experiment = get("lipschitz-mnist")
    config = LipschitzMNISTConfig.quick()
    units = experiment.units(config, pd.DataFrame())
    assert [u.key for u in units] == [
        "train/fixed-width/depth=5/width=50/seed=0",
        "train/gradient-step/depth=5/width=50/seed=0",
        "train/cpl/depth=5/width=50/seed=0",
        "train/unconstrained/depth=5/width=50/seed=0",
        "timing/depth=5/width=50",
    ]
    rows = pd.DataFrame(
        [
            {"stage": "train", "model": "cpl", "depth": 5, "width": 50, "parameters": 10, "accuracy": 0.9,
             "certified_0.5": 0.5, "certified_1": 0.2, "certified_1.58": 0.1, "lipschitz_lower": 0.5,
             "lipschitz_upper": 1.0, "seconds_per_epoch": 1.0},
        ]
    )
    assert "| cpl | 5 | 50 | 10 | 90.00 | 50.00 | 20.00 | 10.00 |" in experiment.report(rows, config)


@pytest.mark.parametrize("field, value", [("variant", "dense"), ("train_fractions", (1.5,)), ("epochs", 0)])
def test_moons_config_rejects_bad_values(field: str, value: object) -> None:
    with pytest.raises((ValueError, TypeError), match=f"`{field}`"):
        LipschitzMoonsConfig(**{field: value})


def test_mnist_config_rejects_unknown_model() -> None:
    with pytest.raises(ValueError, match="`models`"):
        LipschitzMNISTConfig(models=("resnet",))


def test_mnist_config_rejects_unknown_bound() -> None:
    with pytest.raises(ValueError, match="`bound`"):
        LipschitzMNISTConfig(bound="frobenius-ish")
