"""Review s10 of the smoothness experiments (smoothness-rates, smooth-constant-depth, swish-construction)."""

from __future__ import annotations

import math
from pathlib import Path

import torch

from structnets.constructive import swish_approximator
from structnets.data import power_target


def _fine_sup(approx: torch.nn.Module, target: object, points: int, extra: list[float]) -> float:
    """Max |net − f| on a fresh uniform grid of ``points`` plus ``extra``, in float64."""
    x = torch.cat([torch.linspace(0, 1, points, dtype=torch.float64), torch.tensor(extra, dtype=torch.float64)])
    x = x.reshape(-1, 1)
    with torch.no_grad():
        return max(float((approx(c) - target(c)).abs().max()) for c in x.split(65536))  # type: ignore[operator]


def test_swish_construction_sup_error_is_a_sup_at_the_kink() -> None:
    """The unit's sup error of |x − c|^0.5 must not under-read the error at the kink c (a grid misses it).

    Before: 2,001 grid points read 0.2433 at M = 8 against 0.2465 at x = c = frac(1/π).
    """
    from structnets.experiments.swish_construction.units import run_unit

    row = run_unit({"target": "power:1:0.5", "sweep": "M", "M": 8, "tau": 40.0, "lam": 1e4, "grid": 2001})
    target = power_target(1, 0.5)
    approx = swish_approximator(target.function, target.derivative, 1, 0.5, 8, tau=40.0, lam=1e4, R=target.R)
    c = (1 / math.pi) % 1.0
    reference = _fine_sup(approx, target, 200_001, [c])
    assert float(row["error"]) >= reference * (1 - 1e-9), (row["error"], reference)
    assert float(row["error"]) <= float(row["bound"])


def test_smooth_constant_depth_sup_error_reads_the_kink() -> None:
    """The constant-depth unit's sup error includes the kink of the power target (before: 0.2371 against 0.2448)."""
    from structnets.constructive import smooth_constant_depth_approximator
    from structnets.experiments.smooth_constant_depth.units import run_unit

    params = {"target": "power:1:0.5", "activation": "gelu", "K": 8, "tau": 8.0, "grid": 4001}
    row = run_unit({**params, "floor_points": 64, "l2_points": 64})
    target = power_target(1, 0.5)
    approx = smooth_constant_depth_approximator(target, 0.5, 8, "gelu", tau=8.0)
    reference = _fine_sup(approx, target, 200_001, [(1 / math.pi) % 1.0])
    assert float(row["error"]) >= reference * (1 - 1e-9), (row["error"], reference)
    assert float(row["error"]) <= float(row["bound"])


def test_smoothness_rates_refuses_levels_whose_dense_target_cannot_be_built() -> None:
    """levels=18 at d = 2 (262,143 dense waves) was accepted and every d = 2 unit failed inside the run."""
    import pytest

    from structnets.experiments.smoothness_rates import SmoothnessRatesConfig

    with pytest.raises(ValueError, match="`levels`=18 cannot build the target for d=2"):
        SmoothnessRatesConfig(targets=((2, 2.0),), separation_cells=(), levels=18)
    SmoothnessRatesConfig(targets=((2, 2.0),), separation_cells=(), levels=18, directions="one")  # 18 waves
    SmoothnessRatesConfig(targets=((1, 1.0),), separation_cells=(), approx_targets=(), levels=18)  # d = 1


def test_smoothness_rates_data_seeded_independent_and_noisy_as_documented() -> None:
    """Training draws differ across seeds, never meet the shared test points, and carry N(0, σ²) noise."""
    import numpy as np

    from structnets.data import lacunary_target
    from structnets.experiments.smoothness_rates.units import test_points

    target = lacunary_target(2, 2.0, levels=6, seed=0, directions="dense")
    X0, y0 = target.sample(4000, noise=0.1, seed=1000)
    X1, _ = target.sample(4000, noise=0.1, seed=1001)
    assert not np.allclose(X0[:10], X1[:10])
    X_test = test_points(4096, 2)
    gaps = np.min(np.abs(X_test[:, None, 0] - X0[None, :512, 0]) + np.abs(X_test[:, None, 1] - X0[None, :512, 1]))
    assert gaps > 0  # no training point is a test point
    residual = y0 - target(torch.from_numpy(X0)).numpy()
    assert abs(residual.mean()) < 4 * 0.1 / np.sqrt(4000) and abs(residual.std() / 0.1 - 1) < 0.05


def test_smoothness_rates_parameter_count_is_the_ensemble_networks() -> None:
    """N in the tables (parameter_count) is the number of parameters each trained member has."""
    from structnets.experiments.smoothness_rates import parameter_count, width_for_parameters
    from structnets.models.ensemble_mlp import EnsembleMLP

    for d in (1, 2, 3):
        for depth in (2, 3, 6):
            for width in (2, 7, 20):
                net = EnsembleMLP(["relu", "tanh"], d, width, depth, generator=torch.Generator().manual_seed(0))
                assert net.P == parameter_count(d, width, depth)
            for N in (40, 126, 400):  # the solved width is the nearest: its neighbours are no closer to N
                w = width_for_parameters(N, d, depth)
                gaps = [abs(parameter_count(d, v, depth) - N) for v in (max(2, w - 1), w, w + 1)]
                assert gaps[1] == min(gaps) or w == 2


def test_lacunary_target_has_zygmund_smoothness_s() -> None:
    """sup_h |Δ^r_h f|/h^s stays bounded as levels K grow (s = 1, 1.5, 3), the Hölder–Zygmund class C^s."""
    from structnets.data import lacunary_target

    x = 0.25 + 0.5 * torch.rand(4000, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    for s, order in ((1.0, 2), (1.5, 2), (3.0, 4)):
        quotients = []
        for levels in (8, 14):
            f = lacunary_target(1, s, levels=levels)
            top = 0.0
            for j in range(2, 13):
                h = 2.0**-j
                diff = sum((-1) ** (order - i) * math.comb(order, i) * f(x + i * h) for i in range(order + 1))
                top = max(top, float(diff.abs().max()) / h**s)
            quotients.append(top)
        assert quotients[1] < 1.3 * quotients[0], (s, quotients)
    # and no better: at exponent s + 0.25 the quotient grows with K (s = 1)
    f8, f14 = lacunary_target(1, 1.0, levels=8), lacunary_target(1, 1.0, levels=14)
    h = 2.0**-12
    q = [float((g(x + 2 * h) - 2 * g(x + h) + g(x)).abs().max()) / h**1.25 for g in (f8, f14)]
    assert q[1] > 2 * q[0]


def test_swish_construction_folder_read_on_the_grid_alone_shows_as_changed(tmp_path: Path) -> None:
    """A folder whose power-target units were measured before the kinks counted is mixed, not silently resumed.

    Such a folder (e.g. the full run with its 0.973 max error/bound) holds grid-only sups; its power units
    must show as changed (claims mark it, run refuses it without --rerun-changed); sine units did not move.
    """
    import dataclasses

    import pandas as pd

    from structnets.experiments import REGISTRY, run_experiment
    from structnets.experiments.swish_construction import EXPERIMENT, SwishConstructionConfig
    from structnets.protocol import Unit
    from structnets.runner import changed_units

    config = SwishConstructionConfig(targets=("power:1:0.5", "sine:1:3"), Ms_1d=(4,), taus=(), lams=(), grid_1d=101)

    def old_units(config: SwishConstructionConfig, finished: pd.DataFrame) -> list[Unit]:
        return [
            dataclasses.replace(u, params={k: v for k, v in u.params.items() if k != "sup_at_kinks"})
            for u in EXPERIMENT.units_fn(config, finished)
        ]

    out = tmp_path / "old"
    run_experiment(dataclasses.replace(EXPERIMENT, units_fn=old_units), config, out)
    assert changed_units(out, registry=REGISTRY) == ["power:1:0.5/M/M=4/tau=40/lam=10000"]


def test_swish_construction_figures_skip_a_sweep_that_did_not_run(tmp_path: Path) -> None:
    """taus=() and lams=() drew empty error_vs_tau/lam.png (matplotlib: 'No artists with labels found')."""
    import pandas as pd

    from structnets.experiments.swish_construction import draw_figures

    row = {"target": "sine:1:3", "sweep": "M", "tau": 40.0, "lam": 1e4, "beta": 3.0, "product": 1e-9}
    results = pd.DataFrame(
        [
            {**row, "M": M, "error": 1.0 / M**3, "bound": 2.0 / M**3, "taylor": 1.5 / M**3, "leakage": 0.0}
            for M in (4, 8)
        ]
    )
    paths = draw_figures(results, None, tmp_path)  # warnings are errors in the test run
    assert [p.name for p in paths] == ["error_vs_M.png"]
