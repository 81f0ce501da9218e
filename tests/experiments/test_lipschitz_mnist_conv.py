"""lipschitz-mnist-conv end to end on a small config: run → results → report → claims (one core, seconds).

The trained convolutional model must be certified ≤ 1 with its measured lower bound below the
certificate, its certified accuracies must fall with the radius, the report (a function of the
stored table alone) must lay the published results beside ours, and the claims rows must read it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from structnets import runner
from structnets.experiments import get
from structnets.experiments.lipschitz_mnist_conv import LipschitzMNISTConvConfig

SMALL = dataclasses.replace(
    LipschitzMNISTConvConfig.quick(), channels=(2, 4), depths=(0, 1), head_width=8, head_depth=1, epochs=1,
    max_train=128, max_test=64, ascent_steps=2, batch_size=64,
)  # fmt: skip


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    from structnets import data
    from structnets.data.files import DataFileError

    try:
        data.load("mnist")
    except (DataFileError, OSError) as error:  # no copy and no network
        pytest.skip(f"MNIST not available: {error}")
    out = tmp_path_factory.mktemp("mnist-conv") / "run"
    return out, runner.run(get("lipschitz-mnist-conv"), SMALL, out, jobs=1)


def test_the_model_is_certified_and_accuracies_are_ordered(finished: tuple[Path, pd.DataFrame]) -> None:
    _, results = finished
    (row,) = results.itertuples()
    assert row.key == "train/gradient-step-conv/seed=0" and row.n_train == 128 and row.n_test == 64
    assert 0 < row.lipschitz_lower <= row.lipschitz_upper * (1 + 1e-5)
    assert row.lipschitz_upper <= 1.0
    first = results.iloc[0]
    assert 0 <= first["certified_1.58"] <= first["certified_1"] <= first["certified_0.5"] <= first["accuracy"] <= 1


def test_report_is_a_function_of_the_stored_table(finished: tuple[Path, pd.DataFrame]) -> None:
    out, results = finished
    table = (out / "table.md").read_text()
    assert get("lipschitz-mnist-conv").report(pd.read_csv(out / "results.csv"), SMALL).strip() == table.strip()
    assert "| published [1] | GloRo |" in table and "62.80" in table and "57.05" in table
    assert f"| ours | gradient-step-conv (seed 0) | {int(results['parameters'][0])} |" in table
    assert "No target judged" in table and "Target (" not in table  # SMALL is neither preset
    assert (out / "figures" / "mnist_conv.png").stat().st_size > 1000


def test_claims_read_the_run(finished: tuple[Path, pd.DataFrame]) -> None:
    from structnets.claims import REPRODUCED, claims_table

    out, _ = finished
    table = claims_table([out]).set_index("id")
    assert table.loc["004-conv-one-lipschitz", "verdict"] == REPRODUCED
    # 128 training rows: the published-result comparison cannot be reproduced on a small protocol
    assert table.loc["004-conv-mnist-certified", "verdict"] == "not reproduced"


def test_bad_config_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="`depths`"):
        LipschitzMNISTConvConfig(channels=(4, 8), depths=(1,))
    with pytest.raises(ValueError, match="`models`"):
        LipschitzMNISTConvConfig(models=("resnet",))


def _rows(certified: list[float], clean: list[float], upper: list[float] | None = None) -> pd.DataFrame:
    n = len(certified)
    return pd.DataFrame(
        {"model": ["gradient-step-conv"] * n, "seed": list(range(n)), "certified_1.58": certified,
         "accuracy": clean, "lipschitz_upper": upper or [0.9999927] * n}
    )  # fmt: skip


def test_the_target_is_read_from_the_mean_over_seeds_not_the_best_seed() -> None:
    from structnets.experiments.lipschitz_mnist_conv.report import target_lines

    full = LipschitzMNISTConvConfig()
    # the best seed (64 %) meets the target, the configuration's mean (62.6 %) does not
    (line, _) = target_lines(_rows([0.64, 0.62, 0.62, 0.625, 0.625], [0.976] * 5), full, quick=False)
    assert "mean of 5 seed(s): 62.60% certified (seeds 62.00–64.00)" in line
    assert "**missed: certified by 0.40 points**" in line
    (line, _) = target_lines(_rows([0.632, 0.634], [0.976, 0.978]), full, quick=False)
    assert "63.30% certified" in line and "97.70% clean" in line and "**met**" in line
    # a seed whose certificate is above 1 is named as a miss, never dropped silently
    (line, _) = target_lines(_rows([0.64, 0.64], [0.98, 0.98], [0.9999, 1.02]), full, quick=False)
    assert "mean of 1 seed(s)" in line and "seed(s) [1] not certified ≤ 1" in line


def test_the_report_describes_the_models_the_run_has() -> None:
    """A folder of the deel baseline alone is not described as our network (nor ours as deel's)."""
    report = get("lipschitz-mnist-conv").report
    empty = pd.DataFrame()
    deel_only = report(empty, dataclasses.replace(SMALL, models=("deel-torchlip-conv",))).splitlines()[2]
    ours_only = report(empty, SMALL).splitlines()[2]
    both = report(empty, dataclasses.replace(SMALL, models=("gradient-step-conv", "deel-torchlip-conv"))).splitlines()[
        2
    ]
    assert "SpectralConv2d" in deel_only and "lipschitz_convnet" not in deel_only
    assert "lipschitz_convnet" in ours_only and "SpectralConv2d" not in ours_only
    assert "lipschitz_convnet" in both and "SpectralConv2d" in both and "epochs" in both


def test_the_run_attacks_its_certified_points_and_none_breaks(finished: tuple[Path, pd.DataFrame]) -> None:
    out, results = finished
    row = results.iloc[0]
    assert row["attack_points"] == min(SMALL.attack_points, SMALL.max_test)
    for radius in SMALL.radii:
        assert row[f"attack_broken_{radius:g}"] == 0
        # certified ≤ accuracy under attack on the same rows
        assert row[f"attack_certified_{radius:g}"] <= row[f"pgd_{radius:g}"]
    table = (out / "table.md").read_text()
    assert "No certified point was broken by the attack." in table


def test_the_attack_table_names_a_broken_certificate_and_skips_older_rows() -> None:
    from structnets.experiments.attack_check import attack_lines

    rows = _rows([0.6, 0.6], [0.97, 0.97])
    assert attack_lines(rows, (1.58,)) == []  # a run from before the attack: no table, no claim
    rows["attack_points"] = [100.0, 100.0]
    rows["attack_certified_1.58"], rows["pgd_1.58"], rows["attack_broken_1.58"] = [0.6, 0.6], [0.7, 0.55], [0.0, 3.0]
    text = "\n".join(attack_lines(rows, (1.58,)))
    assert "| gradient-step-conv (seed 1) | 100 | 60.0 / 55.0 / **3** |" in text  # no key column: model and seed
    assert "**3 certified point(s) broken by the attack: a certificate is wrong.**" in text


def test_attack_params_are_left_out_when_off() -> None:
    from structnets.experiments.attack_check import attack_options
    from structnets.experiments.lipschitz_mnist_conv.units import units

    off = dataclasses.replace(SMALL, attack_points=0)
    (unit,) = units(off, pd.DataFrame())
    assert not any(key.startswith("attack_") for key in unit.params)
    assert attack_options(unit.params)["attack_points"] == 0
    with pytest.raises(ValueError, match="`attack_steps`"):
        dataclasses.replace(SMALL, attack_steps=0)


def test_the_trained_model_is_saved_and_loads_back_to_the_same_numbers(finished: tuple[Path, pd.DataFrame]) -> None:
    import torch

    from structnets.analysis import certify
    from structnets.experiments.lipschitz_mnist.units import _mnist
    from structnets.experiments.lipschitz_mnist_conv import trained_model

    out, results = finished
    row = results.iloc[0]
    assert row["model_file"].startswith("models/") and (out / row["model_file"]).is_file()
    net = trained_model(out, seed=0)
    _, _, X_test, y_test = _mnist(SMALL.max_train, SMALL.max_test, 0)
    again = certify(net, X_test, y_test, list(SMALL.radii), ascent_steps=0)
    for column in ["accuracy", "lipschitz_upper", *[f"certified_{r:g}" for r in SMALL.radii]]:
        assert again[column] == row[column], column
    # a replaced file is refused, naming it
    path = out / row["model_file"]
    original = path.read_bytes()
    try:
        torch.save({"weight": torch.zeros(1)}, path)
        with pytest.raises(ValueError, match="does not match the SHA-256"):
            trained_model(out, seed=0)
    finally:
        path.write_bytes(original)
    with pytest.raises(KeyError, match="seed=7"):
        trained_model(out, seed=7)
