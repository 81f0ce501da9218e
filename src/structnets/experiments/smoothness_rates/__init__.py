"""Experiment ``smoothness-rates``: error vs samples n and vs parameters N at constant depth.

Liu, Wang, Wu, Zhang, *Smoothness Adaptivity in Constant-Depth Neural Networks: Optimal Rates via
Smooth Activations* (arXiv 2602.19691). Claims: at constant depth, smooth activations (GELU,
SiLU/Swish, Tanh) attain the approximation rate N^{−s/d} and the minimax estimation rate
n^{−2s/(2s+d)} (up to log n) for every smoothness s, by growing width alone; fixed-depth ReLU
networks are capped at N^{−min(L−1, s)/d} (Theorem 6.1), where the paper's depth L counts the
layers of neurons, input and output included: L − 1 is our number of weight layers L_w, so a
one-hidden-layer net (L_w = 2) is capped at N^{−min(2, s)/d}
(:func:`structnets.analysis.rates.relu_depth_cap_exponent` derives the convention). Their experiment: two-layer networks with ReLU, Tanh
and GELU on smooth targets; the test error falls faster in n for the smooth activations.

Two parts, each unit one batched ensemble (every activation × every seed trained at once as one
model with a leading ensemble dimension, ``torch.baddbmm`` per layer), trained in float64 by
full-batch Adam with cosine decay and then per-member full-batch L-BFGS
(:mod:`structnets.training.lbfgs`,
:mod:`structnets.models.ensemble_mlp`) until its relative loss change stalls or its budget
runs out. Both optimisers use each member's own quantities only, so the members are independent and
the result equals training them one by one. Every member records whether it converged.

* ``estimation``: y = f(x) + σε on n uniform points, target :func:`structnets.data.lacunary_target`
  of smoothness s; parameter budget N ∝ n^{d/(2s+d)} (the theory's choice; width solved from N at
  the given depth, :func:`estimation_width`); empirical risk minimisation; excess risk ‖f̂ − f‖² on
  fresh test points. Fitted slope of log excess risk on log n (95% t-interval, pure-error variance over seeds)
  beside −2s/(2s+d).
* ``separation_cells``: further estimation cells (d, s, L_w) where the cap predicts a gap in n between
  smooth activations (−2s/(2s+d)) and ReLU (at best −2r/(2r+d), r = min(L_w, s)): d = 1, s = 3,
  L_w = 2 (−0.857 vs −0.8) and d = 2, s = 4, L_w = 2 (−0.8 vs −0.667). The report compares the
  slopes pairwise (same data per seed) and keeps the optimisation-limited flag.
* ``approximation``: noiseless fit on a dense training set, parameter counts N on a log grid (width
  solved per depth), test RMSE vs N; fitted slope beside −s/d (smooth) and the ReLU cap
  −min(L_w, s)/d.

Depth L in this module counts weight layers (L_w; the paper's L − 1): L = 2 is the two-layer (one
hidden layer) network of the paper's experiment.

Modules: :mod:`.config` (configuration, cells, widths), :mod:`.training` (one unit's batched
training, wired to the library's optimisers), :mod:`.units` (units of work), :mod:`.report` and
:mod:`.figures` (read the results table only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ...protocol import FunctionExperiment
from .. import run_experiment
from .config import (
    ACTIVATIONS,
    SMOOTH,
    SmoothnessRatesConfig,
    estimation_cells,
    estimation_width,
    parameter_count,
    parse_separation_cells,
    width_for_parameters,
)
from .figures import draw_figures
from .report import floor_rows, long_table, report_markdown, slope_table
from .training import EnsembleFit, fit_rates_ensemble
from .units import make_units, run_floor_unit, run_unit, test_points

# The names of the single-module version, kept for callers (and old tests) that import them.
_estimation_cells = estimation_cells
_units = make_units
_run_unit = run_unit
_run_floor_unit = run_floor_unit
_test_points = test_points
_long = long_table
_slope_table = slope_table
_floors = floor_rows
_report = report_markdown
_figures = draw_figures

EXPERIMENT = FunctionExperiment(
    name="smoothness-rates",
    description=(
        "Error vs samples n and vs parameters N for ReLU/Tanh/GELU/SiLU at constant depth, fitted "
        "log-log slopes against -2s/(2s+d) (Liu, Wang, Wu, Zhang, arXiv 2602.19691)"
    ),
    config_class=SmoothnessRatesConfig,
    units_fn=make_units,
    run_unit_fn=run_unit,
    report_fn=report_markdown,
    figures_fn=draw_figures,
)


def run(
    config: SmoothnessRatesConfig | None = None, out_dir: str | Path | None = None, **runner_options: Any
) -> pd.DataFrame:
    """Run ``smoothness-rates`` and return one row per unit; see :func:`structnets.runner.run_experiment`."""
    return run_experiment(EXPERIMENT, config, out_dir, **runner_options)


__all__ = [
    "ACTIVATIONS",
    "EXPERIMENT",
    "SMOOTH",
    "EnsembleFit",
    "SmoothnessRatesConfig",
    "draw_figures",
    "estimation_cells",
    "estimation_width",
    "long_table",
    "make_units",
    "parameter_count",
    "parse_separation_cells",
    "report_markdown",
    "run",
    "run_unit",
    "fit_rates_ensemble",
    "width_for_parameters",
]
