"""The rank-bounds experiment: config checks, units, one real unit, report and figures."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from structnets.experiments import get, names
from structnets.experiments.rank_bounds import EXPERIMENT, RankBoundsConfig


def test_registered_and_config_validated() -> None:
    assert "rank-bounds" in names()
    assert get("rank-bounds") is EXPERIMENT
    quick = RankBoundsConfig.quick()
    units = EXPERIMENT.units(quick, pd.DataFrame())
    # data sets × widths × depths × decays × variants, plus deep linear nets (depths × decays), plus the
    # fixed-norm sweep (depths × norms × seeds)
    assert len(units) == 2 * 3 * 2 * 2 * 2 + 3 * 2 + 3 * 2 * 2
    assert len({u.key for u in units}) == len(units)
    # the full preset, sized for two cores, still spans what the issue asks for
    full = RankBoundsConfig()
    assert set(full.datasets) == {"mnist", "rice"}
    assert (min(full.widths), max(full.widths)) == (64, 1024) and (min(full.depths), max(full.depths)) == (2, 8)
    assert len(set(full.weight_decays)) >= 2 and None in full.ranks and full.rank_checkpoints >= 2
    assert len(EXPERIMENT.units(full, pd.DataFrame())) == 2 * 5 * 3 * 3 * 2 + 3 * 3 + 5 * 2 * 3
    assert len(EXPERIMENT.units(replace(full, linear_depths=(), norm_depths=()), pd.DataFrame())) == 2 * 5 * 3 * 3 * 2
    assert {u.key.split("/")[0] for u in EXPERIMENT.units(replace(full, parts=("fixed-norm",)), pd.DataFrame())} == {
        "fixed-norm"
    }
    with pytest.raises(ValueError, match="`depths`"):
        RankBoundsConfig(depths=(1,))
    with pytest.raises(ValueError, match="`datasets`"):
        RankBoundsConfig(datasets=("cifar",))
    with pytest.raises(ValueError, match="`ps`"):
        RankBoundsConfig(ps=(-1.0,))
    with pytest.raises(ValueError, match="`linear_depths`"):
        RankBoundsConfig(linear_depths=(1,))
    with pytest.raises(ValueError, match="`linear_lr`"):
        RankBoundsConfig(linear_lr=0.0)


def test_one_unit_report_and_figures(uci_data: Path, tmp_path: Path) -> None:
    config = replace(
        RankBoundsConfig.quick(),
        datasets=("rice",),
        widths=(16, 32),
        depths=(3,),
        weight_decays=(0.0,),
        ranks=(None, 2),
        n_train=300,
        n_test=200,
        epochs=2,
        probe_size=100,
        rank_checkpoints=2,
        linear_depths=(3,),
        linear_weight_decays=(0.0, 0.05),
        linear_steps=400,
        linear_lr=0.1,
        ps=(0.0, 1.0, 2.0),
        norm_depths=(),
    )
    units = EXPERIMENT.units(config, pd.DataFrame())
    rows = []
    for unit in units:
        row = EXPERIMENT.run_unit(json.loads(json.dumps(unit.params)))
        assert all(not isinstance(v, float) or math.isfinite(v) for v in row.values())
        rows.append({"key": unit.key, **row})
    results = pd.DataFrame(rows)
    linear = results[results["variant"] == "deep-linear"].set_index("weight_decay")
    assert len(linear) == 2
    # Σ‖W_i‖_F² ≥ L‖ΠW_i‖_{S_{2/L}}^{2/L} always; weight decay drives it towards equality
    assert bool((linear["linear_ratio"] >= 1 - 1e-12).all())
    assert linear.loc[0.05, "linear_ratio"] < linear.loc[0.05, "linear_ratio_init"]
    assert linear.loc[0.05, "linear_ratio"] < linear.loc[0.0, "linear_ratio"]
    results = results[results["variant"] != "deep-linear"].copy()
    low = results[results["variant"] == "rank=2"].iloc[0]
    dense = results[(results["variant"] == "dense") & (results["width"] == low["width"])].iloc[0]
    # the stored parameters of the rank-2 net: (in + out)·2 per factorised layer, dense output
    width = int(low["width"])
    assert low["factorised_parameters"] == 2 * (7 + width) + 2 * (2 * width) + 2 * width
    assert low["stored_parameters"] == low["factorised_parameters"]  # bias-free
    assert low["parameters"] == dense["parameters"] == 7 * width + width * width + 2 * width
    assert dense["factorised_parameters"] == dense["parameters"] and dense["param_factorised_sc"] == dense["param_sc"]
    assert low["param_factorised_sc"] < low["param_sc"]
    # the allocated composition never loses to the equal split
    assert bool((results["best_rs_sc"] <= results["best_rs_equal_sc"] * (1 + 1e-12)).all())
    assert bool((results["param_sc"] <= results["param_equal_sc"] * (1 + 1e-12)).all())
    # layers 1 and 2 are exact rank-2 factorisations; the rank class (p = 0) sees it
    assert json.loads(low["weight_ranks"])[:2] == [2, 2]
    assert low["rs0_sc"] < low["param_sc"]
    # the theorem behind the weight-decay claim: Σ‖W_i‖_F² ≥ L ‖Π W_i‖_{S_{2/L}}^{2/L}
    assert bool((results["frobenius_sum"] >= results["end_to_end_schatten"] * (1 - 1e-9)).all())
    # the Maurey-covered tail never loses to truncation alone
    assert bool((results["best_rs_sc"] <= results["best_rs_truncate_sc"] * (1 + 1e-12)).all())
    # every rank-sparse bound is at most the parameter count (it takes the smaller covering)
    for p in config.ps:
        column = "rs" + f"{p:g}".replace(".", "_") + "_sc"
        assert bool((results[column] <= results["param_sc"] * (1 + 1e-9)).all())
    history = json.loads(low["rank_history"])
    assert history["epoch"] == [0, 1, 2]
    text = EXPERIMENT.report(pd.concat([results, pd.DataFrame(rows)[lambda d: d["variant"] == "deep-linear"]]), config)
    assert "| bottleneck rank (dense nets) |" in text and "rank=2" in text
    assert "where theory predicts equality (deep linear nets" in text and "parameter count (as stored)" in text
    assert "Layer allocation of the covering radius" in text
    assert "Maurey-covered tail lowers the best rank-sparse n*" in text
    paths = EXPERIMENT.figures(results, config, tmp_path)
    assert {p.name for p in paths} == {
        "bound_vs_width.png",
        "rank_vs_layer.png",
        "bound_vs_gap.png",
        "rank_during_training.png",
    }
    assert all(p.stat().st_size > 1000 for p in paths)


def test_rank_variant_starts_at_the_dense_layers_scale() -> None:
    """U V of each factorised layer has nn.Linear's entry variance 1/(3·n_in) at initialisation."""
    import torch

    from structnets.experiments.rank_bounds import _model
    from structnets.nn import LowRankLinear

    torch.manual_seed(0)
    model = _model(784, 10, 512, 4, 16)
    factorised = [m for m in model if isinstance(m, LowRankLinear)]
    assert len(factorised) == 3
    for layer in factorised:
        product = (layer.U @ layer.V).double()
        assert product.var().item() == pytest.approx(1.0 / (3 * layer.in_features), rel=0.1)


def test_small_run_end_to_end_writes_table_figures_and_resumes(uci_data: Path, tmp_path: Path) -> None:
    """``run`` on a tiny grid: one row per unit in results.csv, the report from that table alone."""
    from structnets.experiments.rank_bounds import run

    config = replace(
        RankBoundsConfig.quick(), datasets=("rice",), widths=(16, 32), depths=(3,), weight_decays=(0.0,),
        ranks=(None, 2), n_train=200, n_test=100, epochs=2, probe_size=50, rank_checkpoints=1,
        linear_depths=(2,), linear_weight_decays=(0.0, 0.05), linear_steps=200, linear_lr=0.1, ps=(0.0, 2.0),
        norm_depths=(2, 3), norm_seeds=(0,), norm_width=8, norm_rank=2,
    )  # fmt: skip
    results = run(config, tmp_path, jobs=1)
    assert len(results) == 2 * 2 + 2 + 2 * 2
    saved = pd.read_csv(tmp_path / "results.csv")
    assert sorted(saved["key"]) == sorted(u.key for u in EXPERIMENT.units(config, pd.DataFrame()))
    trained = saved[~saved["variant"].isin(["deep-linear", "fixed-norm"])]
    # AM–GM on the singular values: Σ‖W_i‖_F² ≥ L‖ΠW_i‖_{S_{2/L}}^{2/L} in every trained net
    assert bool((trained["frobenius_sum"] >= trained["end_to_end_schatten"] * (1 - 1e-9)).all())
    # the margin is a positive quantile of the training margins; R̂_γ pays at least that fraction
    assert bool((trained["margin"] > 0).all()) and bool((trained["margin_loss"] >= config.margin_quantile).all())
    linear = saved[saved["variant"] == "deep-linear"].set_index("weight_decay")
    assert bool((linear["linear_ratio"] >= 1 - 1e-12).all())
    # gradient flow with weight decay shrinks the imbalance D_i = W_{i+1}ᵀW_{i+1} − W_iW_iᵀ
    assert linear.loc[0.05, "imbalance"] < linear.loc[0.05, "imbalance_init"]
    assert linear.loc[0.05, "flow_factor"] == pytest.approx((1 - 0.1 * 0.05) ** 400, rel=1e-12)
    table = (tmp_path / "table.md").read_text()
    assert table == EXPERIMENT.report(saved, config)
    assert (
        "| bottleneck rank (dense nets) |" in table
        and "| rank-sparse vs other bounds, sample complexity (rank=2) |" in table
    )
    assert "where theory predicts equality (deep linear nets, width 16, depths [2]" in table
    assert "## Depth at a fixed per-layer norm (no training)" in table
    assert {p.name for p in (tmp_path / "figures").iterdir()} == {
        "bound_vs_width.png",
        "rank_vs_layer.png",
        "bound_vs_gap.png",
        "rank_during_training.png",
    }
    # a second call on the same folder resumes: nothing is rerun, the table is unchanged
    again = run(config, tmp_path, jobs=1)
    pd.testing.assert_series_equal(
        again.sort_values("key")["seconds"].reset_index(drop=True),
        results.sort_values("key")["seconds"].reset_index(drop=True),
    )
    assert (tmp_path / "table.md").read_text() == table


def test_ranks_from_one_svd_equal_the_library_functions() -> None:
    """The unit's ranks come from one SVD per matrix; they equal structnets.analysis's, bit for bit."""
    import torch

    from structnets.analysis import effective_rank, numerical_rank, singular_values, stable_rank
    from structnets.experiments.rank_bounds.units import _effective_rank, _numerical_rank, _stable_rank

    g = torch.Generator().manual_seed(0)
    low = torch.randn(40, 3, generator=g) @ torch.randn(3, 30, generator=g)
    for matrix in (torch.randn(40, 30, generator=g), low, low + 1e-3 * torch.randn(40, 30, generator=g), low * 0):
        sigma = singular_values(matrix)
        for rtol in (1e-2, 1e-6):
            assert _numerical_rank(sigma, rtol) == int(numerical_rank(matrix, rtol=rtol))
        assert _stable_rank(sigma) == float(stable_rank(matrix))
        assert _effective_rank(sigma) == float(effective_rank(matrix))
    assert _numerical_rank(singular_values(low), 1e-4) == 3 and _numerical_rank(singular_values(low * 0), 1e-2) == 0


def test_device_field_keeps_cpu_unit_params() -> None:
    """``device`` is checked; CPU units carry no device entry (old run folders resume), others do."""
    with pytest.raises(ValueError, match="`device`"):
        RankBoundsConfig(device="tpu")
    quick = RankBoundsConfig.quick()
    assert quick.device == "cpu"
    assert all("device" not in u.params for u in EXPERIMENT.units(quick, pd.DataFrame()))
    units = EXPERIMENT.units(replace(quick, device="cuda"), pd.DataFrame())
    mlp = [u for u in units if u.params.get("kind") not in ("deep-linear", "fixed-norm")]
    assert mlp and all(u.params["device"] == "cuda" for u in mlp)
    # the deep linear and fixed-norm units run on the CPU whatever the device, with unchanged params
    assert all("device" not in u.params for u in units if u.params.get("kind") in ("deep-linear", "fixed-norm"))
    assert [u.key for u in units] == [u.key for u in EXPERIMENT.units(quick, pd.DataFrame())]


def test_units_run_longest_first_with_the_same_keys() -> None:
    """The full preset's units start with the largest networks and end with the deep linear ones;
    ordering changes no key (old run folders resume)."""
    import itertools

    import pandas as pd

    from structnets.experiments.rank_bounds import RankBoundsConfig
    from structnets.experiments.rank_bounds.units import _units

    config = RankBoundsConfig(norm_depths=())
    units = _units(config, pd.DataFrame())
    grid = itertools.product(config.datasets, config.depths, config.widths, config.weight_decays, config.ranks)
    expected = {
        f"{d}/depth={L}/width={w}/wd={wd:g}/{'dense' if r is None else f'rank={r}'}/seed=0" for d, L, w, wd, r in grid
    }
    expected |= {
        f"linear/depth={L}/wd={wd:g}/seed=0" for L in config.linear_depths for wd in config.linear_weight_decays
    }
    assert {u.key for u in units} == expected and len(units) == len(expected)
    assert units[0].key == "mnist/depth=8/width=1024/wd=0/dense/seed=0"
    assert all(
        u.key.startswith("linear/") for u in units[-len(config.linear_depths) * len(config.linear_weight_decays) :]
    )


def test_fixed_norm_layers_and_unit() -> None:
    """Alike rank-r W×W layers of spectral norm s̄ (the same layers scaled for every s̄), and the bounds on them."""
    import torch

    from structnets.analysis import parameter_count_bound
    from structnets.experiments.rank_bounds.fixed_norm import depth_slopes, fixed_norm_layers

    layers = fixed_norm_layers(12, 3, 2.5, 4, seed=1)
    assert len(layers) == 4 and all(a.shape == (12, 12) and a.dtype == torch.float64 for a in layers)
    for a in layers:
        sigma = torch.linalg.svdvals(a)
        assert float(sigma[0]) == pytest.approx(2.5, rel=1e-12)  # spectral norm s̄ exactly
        assert int((sigma > 1e-10).sum()) == 3  # exactly rank r
        assert bool((sigma[1:3] >= 0.5 * 2.5 * (1 - 1e-12)).all())  # v_j in [0.5, 1]
    ones = fixed_norm_layers(12, 3, 1.0, 4, seed=1)
    assert all(torch.allclose(a, 2.5 * b, rtol=0, atol=1e-13) for a, b in zip(layers, ones))
    assert not torch.allclose(fixed_norm_layers(12, 3, 1.0, 4, seed=2)[0], ones[0])
    params = {
        "kind": "fixed-norm", "depth": 3, "width": 8, "rank": 2, "spectral_norm": 2.0, "seed": 0, "margin": 1.0,
        "n": 1000, "ps": [0.0, 2.0], "delta": 0.05, "sample_target": 0.1,
    }  # fmt: skip
    row = EXPERIMENT.run_unit(params)
    assert row["variant"] == "fixed-norm" and row["spectral_product"] == pytest.approx(8.0, rel=1e-12)
    # K = e·B·Π s̄ (ReLU, inputs of norm 1) and log(1/t(1)) = log(2KL/γ)
    assert row["lipschitz_scale"] == pytest.approx(math.e * 8.0, rel=1e-12)
    assert row["log_inverse_radius"] == pytest.approx(math.log(2 * math.e * 8.0 * 3), rel=1e-12)
    matrices = fixed_norm_layers(8, 2, 2.0, 3, 0)
    count = parameter_count_bound(matrices, n=1000, margin=1.0, input_norm=1.0)
    assert row["param_sc"] == pytest.approx(count.sample_complexity, rel=1e-12)
    # the rank class of exactly rank-2 layers is below the count; p = 2 (a norm class) is at most it
    assert row["rs0_sc"] < row["param_sc"] and row["rs2_sc"] <= row["param_sc"] * (1 + 1e-9)
    # depth_slopes on exact power laws: the norm's share L² and the contrasts
    rows = pd.DataFrame(
        [
            {
                "variant": "fixed-norm", "depth": L, "spectral_norm": s, "seed": seed,
                "rs0_sc": 10.0 * L + 3.0 * L**2 * math.log(s) * (1 + 0.01 * seed), "rs2_sc": 40.0 * L,
                "spectral_sc": 5.0 * L**3, "log_inverse_radius": math.log(2 * math.e * L) + L * math.log(s),
            }
            for L in (2, 4, 8) for s in (1.0, 3.0) for seed in (0, 1)
        ]
    )  # fmt: skip
    found = depth_slopes(rows)
    assert [s.spectral_norm for s in found["norm_share"]] == [3.0]
    assert found["norm_share"][0].slope == pytest.approx(2.0, abs=1e-9)
    assert found["versus_large"][0].slope == pytest.approx(0.0, abs=1e-9)  # s̄ = 1: both ∝ L
    assert found["versus_spectral"][0].slope == pytest.approx(-2.0, abs=1e-9)
    assert found["small"][0].seeds == 2 and found["small"][0].df == 1.0
