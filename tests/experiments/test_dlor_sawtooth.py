"""dlor-sawtooth end to end on a tiny config: units, result rows, exact correspondences, a report
that is a function of the saved results table, figures."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from structnets.experiments import dlor_sawtooth as sawtooth_exp
from structnets.experiments import get, names
from structnets.models import dlor_parameter_count
from structnets.models.batched_dlor import BatchedDLoRNet, build_batched
from structnets.training import seed_batched


def _tiny() -> sawtooth_exp.DLoRSawtoothConfig:
    return sawtooth_exp.DLoRSawtoothConfig(
        targets=("d1t2", "d2t1"), seeds=(0, 1, 2), budgets=(5, 10), width=4, wide_depth=1, branches=2,
        summed_branches=2, n_train=16, test_points=32, eval_every=5, dense_width=4, dense_epochs=20,
        hs=(1e-1, 1e-3), correspondence_seeds=(0,),
    )  # fmt: skip


def test_registered_and_old_names_still_import() -> None:
    assert "dlor-sawtooth" in names() and get("dlor-sawtooth") is sawtooth_exp.EXPERIMENT
    assert sawtooth_exp.BatchedDLoRNet is BatchedDLoRNet and sawtooth_exp.build_batched is build_batched
    assert sawtooth_exp.train_batched is seed_batched.train_batched
    assert sawtooth_exp.train_dense is seed_batched.train_dense
    assert not hasattr(sawtooth_exp, "single_thread")  # removed: structnets.training.torch_threads(1)


def test_sawtooth_experiment_end_to_end(tmp_path) -> None:
    config = _tiny()
    depths = sawtooth_exp.deep_depths(config)
    assert depths == {"parallel": 3, "summed": 2}  # 48 and 44 parameters: two deep networks
    results = sawtooth_exp.run(config, tmp_path)
    # per target: 4 architectures (deep × 2 depths, parallel, summed) × 2 budgets, + 1 correspondence
    assert len(results) == 2 * (4 * 2 + 1)
    train = results[results["stage"] == "train"]
    assert set(train["mode"]) == {"deep", "parallel", "summed"}
    for _, row in train.iterrows():
        final = json.loads(row["final_test_mse"])
        assert len(final) == 3 and row["n_seeds"] == 3
        assert row["parameters"] == dlor_parameter_count(4, int(row["depth"]), 1, row["mode"], int(row["branches"]))
        assert row["median_test_mse"] == float(np.median(final))
        assert row["min_test_mse"] == min(final) and row["max_test_mse"] == max(final)
        curve = json.loads(row["curve"])
        assert curve["epochs"] == [0, 5, 10][: len(curve["epochs"])] and curve["epochs"][-1] == row["budget"]
        assert curve["test_mse"][-1] == final
        # deep maps αI + UVᵀ with U, V of rank 1 and N = 4: at least N − 2r = 2 singular values equal |α|
        for spectrum in json.loads(row["spectra"]) if row["mode"] == "deep" else []:
            sv = np.asarray(spectrum["singular_values"])
            assert np.sum(np.abs(sv - abs(spectrum["alpha"])) <= 1e-5 * max(1.0, abs(spectrum["alpha"]))) >= 2
    corr = results[results["stage"] == "correspondence"]
    assert len(corr) == 2
    for _, row in corr.iterrows():
        curves = json.loads(row["curves"])
        assert max(curves["summed"]["sup_error"]) < 1e-12  # a linear re-parametrisation: exact at every h
        for mode in ("deep", "parallel"):
            assert curves[mode]["sup_error"][1] < curves[mode]["sup_error"][0]
    cells = sawtooth_exp.cell_comparisons(results, config)
    assert len(cells) == 2 * 2 * 2 and set(cells["wide_mode"]) == {"parallel", "summed"}
    assert set(cells["deep_depth"]) == {2, 3}
    for _, cell in cells.iterrows():
        assert 2 / math.comb(6, 3) - 1e-12 <= cell["p_mse"] <= 1.0  # exact test, 3 seeds against 3
    table = (tmp_path / "table.md").read_text()
    assert "## Fixed budgets" in table and "## h → 0" in table and "## Spectra" in table
    assert "parallel DLoR (sup |DLoR − MLP|)" in table and "reproduced** in a cell only where" in table
    # the report is a function of the saved results table (and the config) alone
    saved = pd.read_csv(tmp_path / "results.csv")
    assert sawtooth_exp.report_markdown(saved, config) in table
    figures = {p.name for p in (tmp_path / "figures").iterdir()}
    assert {"training_curves.png", "h_convergence.png", "spectra.png", "fits.png"} <= figures


def test_quick_presets_are_small_and_keys_unique() -> None:
    quick = sawtooth_exp.DLoRSawtoothConfig.quick()
    assert max(quick.budgets) <= 2000 and len(quick.targets) == 1
    full = sawtooth_exp.DLoRSawtoothConfig()
    assert set(full.budgets) == {5000, 50000} and len(full.seeds) >= 5
    units = sawtooth_exp.EXPERIMENT.units(full, pd.DataFrame())
    assert len({u.key for u in units}) == len(units)
    # 3 targets × (1 deep + 2 wide) × 2 budgets + 3 targets × 3 correspondence seeds
    assert len(units) == 3 * 3 * 2 + 3 * 3


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"wide_modes": ("tall",)}, "wide_modes"),
        ({"wide_modes": ()}, "wide_modes"),
        ({"wide_modes": ("parallel", "parallel")}, "wide_modes"),
        ({"summed_branches": 0}, "summed_branches"),
        ({"alpha_level": 0.0}, "alpha_level"),
        ({"alpha_level": 1.5}, "alpha_level"),
        ({"targets": ("d0t2",)}, "targets"),
        ({"budgets": ()}, "budgets"),
    ],
)
def test_bad_config_is_named(kwargs: dict, argument: str) -> None:
    with pytest.raises(ValueError, match=f"`{argument}`"):
        sawtooth_exp.DLoRSawtoothConfig(**kwargs)


def test_separations_are_sigma1_over_alpha_of_every_map_followed_by_sigma() -> None:
    # against the library models: each deep layer's DLoRLinear, each parallel branch's, the last linear map left out
    import torch

    from structnets.experiments.dlor_sawtooth.units import separations
    from structnets.models.batched_dlor import build_batched
    from structnets.nn import DLoRLinear, DLoRParallel

    for mode, depth, branches in (("deep", 4, 1), ("parallel", 2, 3)):
        net = build_batched([0, 1], 1, 6, depth, 1, mode, "tanh", branches)
        with torch.no_grad():
            net.alpha.mul_(torch.linspace(0.5, 2.0, net.alpha.numel()).reshape(net.alpha.shape))  # distinct α's
        found = separations(net)
        assert len(found) == 2 and all(len(seed) == depth * branches for seed in found)
        for seed, model in zip(found, net.to_models()):
            if mode == "deep":
                maps = [m for m in model if isinstance(m, DLoRLinear)][:-1]
            else:
                maps = [b for layer in model if isinstance(layer, DLoRParallel) for b in layer.branches]
            with torch.no_grad():
                expected = [float(torch.linalg.svdvals(m.to_dense().double())[0] / abs(float(m.alpha))) for m in maps]
            assert seed == pytest.approx(expected, rel=1e-6)
