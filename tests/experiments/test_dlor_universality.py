"""dlor-universality end to end on its quick preset: exact transfer, error against depth, a report that
is a function of the saved results table, figures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from structnets.experiments import dlor_universality as experiment
from structnets.experiments import get, names


def test_quick_preset_end_to_end(tmp_path) -> None:
    assert "dlor-universality" in names() and get("dlor-universality") is experiment.EXPERIMENT
    config = experiment.DLoRUniversalityConfig.quick()
    results = experiment.run(config, tmp_path)
    assert isinstance(results, pd.DataFrame) and len(results) == len(config.targets) * len(config.neurons)
    assert bool(results["weights_identical"].all())
    assert float(results["narrow_vs_dlor"].max()) < 1e-10
    for target in config.targets:
        rows = results[results["target"] == target].sort_values("neurons")
        J = rows["neurons"].to_numpy()
        m = rows["out_features"].to_numpy()
        assert np.all(np.diff(rows["deep_r2_sup"].to_numpy()) < 0)
        assert np.all(rows["deep_r2_vs_g"] < 1e-8)
        assert np.all(rows["width"] == 2 + m + 2)
        # depths of the register networks: rank 2, J + 1 + m; rank 1, 2J + m
        assert np.array_equal(rows["deep_r2_depth"].to_numpy(), J + 1 + m)
        assert np.array_equal(rows["deep_r1_depth"].to_numpy(), 2 * J + m)
        # built from the same g: the exact wide network has g's error
        np.testing.assert_allclose(rows["wide_exact_sup"], rows["shallow_sup"], rtol=1e-9, atol=1e-12)
        built = rows[rows["wide_generic_params"].notna()]
        assert len(built) == sum(j <= config.generic_max_neurons for j in config.neurons)
    saddle = results[results["target"] == "saddle"].sort_values("neurons")
    assert float(saddle["deep_r1_rms"].iloc[-1]) ** 2 < experiment.BLINDSPOT_FLOOR  # below the rank-1 floor
    table = (tmp_path / "table.md").read_text()
    assert "## Parameters at equal error" in table and "bit for bit in all" in table
    assert experiment.report_markdown(pd.read_csv(tmp_path / "results.csv"), config) in table
    assert {p.name for p in (tmp_path / "figures").iterdir()} == {
        "universality_depth.png",
        "universality_parameters.png",
    }


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [({"targets": ("nope",)}, "targets"), ({"neurons": (0,)}, "neurons"), ({"transfer_h": 0.0}, "transfer_h")],
)
def test_bad_config_is_named(kwargs: dict, argument: str) -> None:
    with pytest.raises(ValueError, match=f"`{argument}`"):
        experiment.DLoRUniversalityConfig(**kwargs)
