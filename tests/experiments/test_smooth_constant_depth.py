"""smooth-constant-depth end to end on a tiny sweep, and the certified ReLU floor it sets beside it."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from structnets.data import power_target, sine_target
from structnets.experiments import get
from structnets.experiments import smooth_constant_depth as scd
from structnets.experiments.smooth_constant_depth import SmoothConstantDepthConfig

TINY = SmoothConstantDepthConfig(
    targets=("sine:1:3", "sine:2:1", "sine:3:1"),
    activations=("gelu",),
    Ks_1d=(4, 8, 16),
    Ks_2d=(2, 4),
    Ks_3d=(2, 3),
    grid_1d=1001,
    grid_2d=21,
    grid_3d=5,
    floor_points=128,
)


def test_registered_and_quick_preset_is_small() -> None:
    assert get("smooth-constant-depth") is scd.EXPERIMENT
    quick = SmoothConstantDepthConfig.quick()
    assert len(scd.make_units(quick, pd.DataFrame())) == 20
    full = SmoothConstantDepthConfig()
    assert {float(t.split(":")[2]) for t in full.targets} == {1.0, 2.0, 3.0, 4.0}
    assert {int(t.split(":")[1]) for t in full.targets} == {1, 2, 3}


def test_end_to_end(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    results = scd.run(TINY, run_dir)
    assert len(results) == 3 + 2 + 2
    # Theorems 4.1/4.4 as built: measured sup error ≤ stated bound at every N, depth fixed.
    assert (results["error"] <= results["bound"]).all()
    assert np.allclose(results["bound"], results["taylor"] + results["gadgets"] + results["rounding"], rtol=1e-15)
    assert (results["max_weight"] <= results["weight_bound"]).all()
    for d, rows in results.groupby("d"):
        assert set(rows["depth"]) == {3 if int(d) == 1 else 4}
        assert rows.sort_values("K")["parameters"].is_monotonic_increasing
    one = results[results["target"] == "sine:1:3"]
    fit = scd.cell_slopes(one)
    assert abs(fit["Kd_upper"] + 3.0) < 0.3  # N^{−s/d} once N ∝ K^d
    # the floor is a certified lower bound for ReLU nets; every row carries it
    assert (results["relu_floor"] >= 0).all() and (results["relu_pieces"] >= 1).all()
    table = (run_dir / "table.md").read_text()
    saved = pd.read_csv(run_dir / "results.csv")
    assert scd.report_markdown(saved).strip() == table.strip()
    assert "Measured error ≤ bound in 7 of 7 units" in table
    # the L² error (RMS over Sobol points) is at most the true sup error, so below the certified bound
    assert ((results["l2_error"] > 0) & (results["l2_error"] <= results["bound"])).all()
    assert (results["l2_error"] <= results["error"]).all()  # the sup is also taken over the Sobol points
    three = results[results["d"] == 3].sort_values("K")
    assert three["error"].is_monotonic_decreasing and three["parameters"].is_monotonic_increasing
    assert {p.name for p in (run_dir / "figures").iterdir()} >= {
        "error_vs_N_d1.png",
        "error_vs_N_d2.png",
        "error_vs_N_d3.png",
    }


def _params(d: int, widths: tuple[int, ...]) -> int:
    sizes = (d, *widths, 1)
    return sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:]))


@pytest.mark.parametrize("d", [1, 2])
@pytest.mark.parametrize("weight_layers", [2, 3, 4])
def test_max_pieces_bounds_every_width_profile(d: int, weight_layers: int) -> None:
    hidden = weight_layers - 1
    # every width is < N + 1 (one hidden unit costs ≥ 1 parameter); at three hidden layers N ≤ 80
    # keeps the search exhaustive with widths ≤ 40, since any width ≥ 41 then costs ≥ 82
    for N in (10, 37, 120, 400) if hidden < 3 else (10, 37, 80):
        best = 0
        for widths in itertools.product(range(1, N + 1 if hidden < 3 else 41), repeat=hidden):
            if _params(d, widths) <= N:
                best = max(best, math.prod(w + 1 for w in widths))
        bound = scd.relu_max_pieces(N, weight_layers, d)
        assert bound >= best
        if hidden <= 2 and best > 0:
            assert bound == best  # exact for one and two hidden layers


@pytest.mark.parametrize(
    "target", [sine_target(1, 3.0), sine_target(2, 2.0), sine_target(3, 2.0)], ids=["d1", "d2", "d3"]
)
def test_floors_are_below_an_actual_piecewise_linear_fit(target) -> None:
    # the linear interpolant with m pieces is an m-piece function: it can never beat either floor
    t = torch.linspace(0, 1, 20001, dtype=torch.float64)
    y = target(t.reshape(-1, 1).repeat(1, target.d)).numpy()
    for m in (3, 8, 20):
        knots = np.linspace(0, 1, m + 1)
        ky = target(torch.from_numpy(knots).reshape(-1, 1).repeat(1, target.d)).numpy()
        sup = float(np.max(np.abs(np.interp(t.numpy(), knots, ky) - y)))
        curvature = scd.curvature_floor(target, m)
        assert 0 < curvature <= sup
        assert curvature > sup / 40  # and not vacuous
    from structnets.analysis import piecewise_linear_floor

    pts = torch.linspace(0, 1, 200, dtype=torch.float64)
    yy = target(pts.reshape(-1, 1).repeat(1, target.d)).numpy()
    knots = np.linspace(0, 1, 6)
    ky = target(torch.from_numpy(knots).reshape(-1, 1).repeat(1, target.d)).numpy()
    rms = float(np.sqrt(np.mean((np.interp(pts.numpy(), knots, ky) - yy) ** 2)))
    assert math.sqrt(float(piecewise_linear_floor(pts.numpy(), yy, 5)[4])) <= rms


def test_curvature_floor_is_zero_without_a_second_derivative() -> None:
    assert scd.curvature_floor(power_target(1, 1.5), 10) == 0.0


def test_bad_config() -> None:
    with pytest.raises(ValueError, match="`targets`"):
        SmoothConstantDepthConfig(targets=("sine:4:2",))
    with pytest.raises(ValueError, match="`activations`"):
        SmoothConstantDepthConfig(activations=("relu",))
    with pytest.raises(ValueError, match="`K`"):
        SmoothConstantDepthConfig(Ks_1d=(0,))
    with pytest.raises(ValueError, match="`K`"):
        SmoothConstantDepthConfig(Ks_3d=(0,))
    with pytest.raises(ValueError, match="`grid_3d`"):
        SmoothConstantDepthConfig(grid_3d=2)
