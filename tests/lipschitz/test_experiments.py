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


def test_mnist_units_grid_and_report(monkeypatch: pytest.MonkeyPatch) -> None:
    from structnets.experiments.lipschitz_mnist import units as lipschitz_mnist

    experiment = get("lipschitz-mnist")
    config = LipschitzMNISTConfig.quick()
    monkeypatch.setattr(lipschitz_mnist, "deel_torchlip_available", lambda: False)
    keys = [u.key for u in experiment.units(config, pd.DataFrame())]
    assert keys == [
        "train/gradient-step/margin-ce/orthogonal/depth=5/width=100/seed=0",
        "train/gradient-step/margin-ce/norm-constrained/depth=5/width=100/seed=0",
        "train/gradient-step/scaled-ce/orthogonal/depth=5/width=100/seed=0",
        "train/gradient-step/scaled-ce/norm-constrained/depth=5/width=100/seed=0",
        "train/unconstrained/scaled-ce/linear/depth=5/width=100/seed=0",
        "timing/depth=5/width=100",
    ]
    rows = pd.DataFrame(
        [
            {"stage": "train", "model": "cpl", "loss": "margin-ce", "lift": "orthogonal", "depth": 5, "width": 100,
             "parameters": 10, "epochs": 2, "accuracy": 0.9, "certified_0.5": 0.5, "certified_1": 0.2,
             "certified_1.58": 0.1, "lipschitz_lower": 0.5, "lipschitz_upper": 1.0, "seconds_per_epoch": 1.0},
        ]
    )  # fmt: skip
    table = experiment.report(rows, config)
    assert "| ours | cpl | margin-ce | orthogonal | 5 | 100 | 10 | 2 | 90.00 | 50.00 | 20.00 | 10.00 |" in table
    # published results at ε = 1.58 sit in the same table, with their sources
    for method, certified in [("GloRo", "62.80"), ("BCOP-Large", "57.05"), ("784-1024³-10", "54.26"), ("L2-nonexpansive", "36.76")]:
        row = next(line for line in table.splitlines() if line.startswith("| published") and method in line)
        assert row.split(" | ")[-4] == certified
    assert "[2] BCOP-Large: Li, Haque" in table
    assert "missed by 15.00 points" in table  # quick target 25% at 1.58, this row 10%
    assert "deel-torchlip row skipped" in table
    monkeypatch.setattr(lipschitz_mnist, "deel_torchlip_available", lambda: True)
    assert "train/deel-torchlip/margin-ce/spectral/depth=5/width=100/seed=0" in [
        u.key for u in experiment.units(config, pd.DataFrame())
    ]
    full = LipschitzMNISTConfig()
    table = experiment.report(rows.assign(accuracy=0.96, **{"certified_1.58": 0.56}), full)
    assert "missed: clean by 1.00 points" in table  # 56% certified meets 55%, 96% clean misses 97%


def test_mnist_unit_trains_certifies_and_is_seeded() -> None:
    experiment = get("lipschitz-mnist")
    config = dataclasses.replace(
        LipschitzMNISTConfig.quick(), depths=(2,), widths=(12,), models=("cpl",), losses=("margin-ce",),
        lifts=("orthogonal",), epochs=1, max_train=300, max_test=100, ascent_steps=2, timing_pairs=0,
    )  # fmt: skip
    (unit,) = experiment.units(config, pd.DataFrame())
    row = experiment.run_unit(dict(unit.params))
    assert row["lipschitz_lower"] <= row["lipschitz_upper"] <= 1.0
    assert 0 <= row["certified_1.58"] <= row["certified_1"] <= row["certified_0.5"] <= row["accuracy"] <= 1
    assert experiment.run_unit(dict(unit.params))["certified_0.5"] == row["certified_0.5"]


def test_certify_uses_the_computed_bound_of_an_uncertified_model_and_says_so() -> None:
    import torch

    from structnets.analysis import certify

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    with torch.no_grad():
        model.weight.mul_(10.0)
    X, y = torch.randn(50, 4), torch.randint(0, 3, (50,))
    with pytest.warns(UserWarning, match="not certified 1-Lipschitz.*upper bound"):
        row = certify(model, X, y, [0.1], ascent_steps=0)
    assert row["lipschitz_used"] == row["lipschitz_upper"] > 1.0
    with pytest.raises(ValueError, match="`radii`"):
        certify(model, X, y, [0.0], ascent_steps=0)
    with pytest.raises(ValueError, match="`radii`"):
        certify(model, X, y, [-1.0], ascent_steps=0)


@pytest.mark.parametrize(
    "field, value", [("margin", -0.5), ("radii", (0.0,)), ("losses", ("focal",)), ("lifts", ("householder",)), ("temperature", 0.0)]
)
def test_mnist_config_rejects_bad_training_options(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"`{field}`") as info:
        LipschitzMNISTConfig(**{field: value})
    if field == "losses":
        assert "margin-ce" in str(info.value) and "hkr" in str(info.value)


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
