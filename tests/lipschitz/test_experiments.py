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
        LipschitzMoonsConfig.quick(),
        n_samples=300,
        depths=(2,),
        widths=(6,),
        width_sweep_depth=2,
        train_fractions=(0.5,),
        epochs=3,
        ascent_steps=3,
        authors_baseline=False,
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
    assert (
        "| depth | 0.5 | 2 | 5 |" in table
        and "| width | 0.5 | 2 | 6 |" in table
        and "NO" not in table.split("≤ 1 in fact")[1]
    )
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
        "constraint-cost/width=100",
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
    for method, certified in [
        ("GloRo", "62.80"),
        ("BCOP-Large", "57.05"),
        ("784-1024³-10", "54.26"),
        ("L2-nonexpansive", "36.76"),
    ]:
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


def test_mnist_unit_trains_certifies_and_is_seeded(uci_data: Path) -> None:
    experiment = get("lipschitz-mnist")
    config = dataclasses.replace(
        LipschitzMNISTConfig.quick(), depths=(2,), widths=(12,), models=("cpl",), losses=("margin-ce",),
        lifts=("orthogonal",), epochs=1, max_train=300, max_test=100, ascent_steps=2, timing_pairs=0, cost_rounds=0,
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
    "field, value",
    [("margin", -0.5), ("radii", (0.0,)), ("losses", ("focal",)), ("lifts", ("householder",)), ("temperature", 0.0)],
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


def test_certified_radii_are_the_margin_over_root_two_lipschitz() -> None:
    import math

    import torch

    from structnets.analysis import certified_accuracy, certified_radii

    logits = torch.tensor([[3.0, 1.0, 0.0], [0.0, 2.0, 2.0], [1.0, 4.0, 0.5], [0.2, 0.1, 0.0]], dtype=torch.float64)
    labels = torch.tensor([0, 1, 0, 0])
    radii = certified_radii(logits, labels, lipschitz=0.5)
    # margins 2, 0 (a tie), −3 (wrong), 0.1; radius m/(√2·L) when m > 0, else 0
    expected = [2.0 / (math.sqrt(2.0) * 0.5), 0.0, 0.0, 0.1 / (math.sqrt(2.0) * 0.5)]
    assert radii.dtype == torch.float64 and radii.tolist() == expected
    # one logit: class 1 iff f > 0, radius |f|/L when the sign is right
    single = certified_radii(
        torch.tensor([0.3, -0.3, 0.0], dtype=torch.float64), torch.tensor([1, 1, 0]), lipschitz=2.0
    )
    assert single.tolist() == [0.3 / 2.0, 0.0, 0.0]
    # the fraction of radii ≥ ε is the certified accuracy at ε (away from rounding ties)
    generator = torch.Generator().manual_seed(0)
    z, y = (
        torch.randn(500, 10, generator=generator, dtype=torch.float64),
        torch.randint(10, (500,), generator=generator),
    )
    r = certified_radii(z, y, lipschitz=0.8)
    for eps in (0.0123, 0.1, 0.37, 1.0):
        assert (r - eps).abs().min() > 1e-9
        assert float((r >= eps).double().mean()) == certified_accuracy(z, y, eps, lipschitz=0.8)


def test_certified_radius_is_tight_for_a_linear_classifier() -> None:
    import math

    import torch

    from structnets.analysis import certified_radii, lipschitz_upper_bound

    # f(x) = Wx with rows w₀ = (c, 0), w₁ = (−c, 0): ‖W‖₂ = c√2 and ‖w₀ − w₁‖ = 2c = √2·‖W‖₂, so the
    # bound m/(√2·L) is the exact distance to the decision boundary x₁ = 0.
    c = 0.75
    model = torch.nn.Linear(2, 2, bias=False).double()
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[c, 0.0], [-c, 0.0]]))
    L = lipschitz_upper_bound(model)
    assert c * math.sqrt(2) <= L <= c * math.sqrt(2) * (1 + 1e-12)
    x = torch.tensor([[0.4, -1.0], [1.3, 2.0]], dtype=torch.float64)
    y = torch.tensor([0, 0])
    radius = certified_radii(model(x), y, lipschitz=L)
    torch.testing.assert_close(radius, x[:, 0], rtol=1e-12, atol=0)
    with torch.no_grad():
        inside = model(x - (1 - 1e-9) * radius[:, None] * torch.tensor([1.0, 0.0], dtype=torch.float64))
        outside = model(x - (1 + 1e-9) * radius[:, None] * torch.tensor([1.0, 0.0], dtype=torch.float64))
    assert (inside.argmax(1) == 0).all() and (outside.argmax(1) == 1).all()


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda c, m, X, y: c(m, X, y, [0.1], ascent_steps=-1), "ascent_steps"),
        (lambda c, m, X, y: c(m, X, y, [0.1], ascent_steps=0, probe=0), "probe"),
        (lambda c, m, X, y: c(m, X, y, [0.1], ascent_steps=0, lipschitz=0.0), "lipschitz"),
        (lambda c, m, X, y: c(m, X, y, 0.1, ascent_steps=0), "radii"),
        (lambda c, m, X, y: c(lambda x: x, X, y, [0.1], ascent_steps=0), "model"),
    ],
)
def test_certify_names_the_bad_argument(call, name: str) -> None:
    import torch

    from structnets.analysis import certify

    model, X, y = torch.nn.Linear(3, 2), torch.randn(8, 3), torch.randint(0, 2, (8,))
    with pytest.raises((ValueError, TypeError), match=f"`{name}`"):
        call(certify, model, X, y)


def test_certified_radii_names_the_bad_argument() -> None:
    import torch

    from structnets.analysis import certified_radii

    with pytest.raises(ValueError, match="`lipschitz`"):
        certified_radii(torch.zeros(3, 2), torch.zeros(3, dtype=torch.long), lipschitz=-1.0)
    with pytest.raises(ValueError, match="`labels`"):
        certified_radii(torch.zeros(3, 2), torch.tensor([0, 2, 1]))
    with pytest.raises(ValueError, match="`logits`"):
        certified_radii(torch.full((2, 2), float("nan")), torch.tensor([0, 1]))
