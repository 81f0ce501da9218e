"""Experiment ``lipschitz-density``: fixed-width density of 1-Lipschitz ResNets, measured against depth.

Murari, Furuya, Schönlieb, *Approximation theory for 1-Lipschitz ResNets* (NeurIPS 2025, arXiv
2505.12003), Theorem 4.1: the networks vᵀ∘Φ_L∘A_{L−1}∘…∘A₁∘Φ₁∘Q of width d + 3, with
norm-constrained affine maps Aᵢ between the gradient-step blocks Φᵢ, are dense in the scalar
1-Lipschitz functions on compacts of ℝᵈ as the depth L grows. The same paper shows every scalar
piecewise-affine 1-Lipschitz function is represented *exactly* through its max-min representation.

We fit random piecewise-affine 1-Lipschitz targets
(:func:`~structnets.constructive.random_lattice_target_1d`,
:func:`~structnets.constructive.random_maxmin_target` in 2-D) two ways:

* ``exact``: :func:`~structnets.constructive.maxmin_network` of the target's max-min pieces, in
  float64; we record its error (0 up to rounding), its depth (number of MaxMin levels and of
  layers), its width, and its layer-wise certified bound (the head's scale s ≥ 1, see
  :mod:`structnets.constructive.maxmin`), beside the measured secant ratio of what it computes.
* ``trained``: ``lipschitz_resnet(d, 1, None, depth, variant="fixed-width")`` (width d + 3),
  trained by full-batch Adam (cosine schedule) on the squared error at a grid of points, for each
  depth; every trained model is certified by
  :func:`~structnets.analysis.lipschitz_upper_bound` in eval mode (≤ 1), and its sup error and RMSE
  are measured against the float64 target on a denser grid.
* ``gradient-step``: Theorem 3.1's family ``lipschitz_resnet(d, 1, width, depth, variant="gradient-step")``
  (no maps between the blocks: dense as width and depth grow), trained the same way at the config's
  (width, depth) pairs growing together, every seed's errors stored (claim ``004-unbounded-density``).

Training is vectorised over seeds: the seeds' parameters are stacked into one seed-batched module
with the library's parametrisation (A = V / max(1, ‖V‖₂), τ = 2·sigmoid(θ)/‖W‖₂²), trained by
:func:`structnets.training.fit`; the trained parameters are then loaded into library models, which
are the ones certified and measured.

Each unit is one (target, model, depth); units are pure and seeded. Modules: :mod:`.config`,
:mod:`.fixed_width` (the seeds' training and the error measures), :mod:`.units`, :mod:`.report`
and :mod:`.figures` (functions of the results table and the config alone).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ...protocol import FunctionExperiment
from .. import run_experiment
from . import figures, report, units
from .config import LipschitzDensityConfig
from .fixed_width import fit_errors, fit_fixed_width
from .units import make_target

EXPERIMENT = FunctionExperiment(
    name="lipschitz-density",
    description=(
        "fixed-width (d + 3) 1-Lipschitz ResNets against depth on random piecewise-affine 1-Lipschitz "
        "targets, beside the exact max-min construction (Murari, Furuya, Schönlieb, NeurIPS 2025, Thm. 4.1)"
    ),
    config_class=LipschitzDensityConfig,
    units_fn=units.units,
    run_unit_fn=units.run_unit,
    report_fn=report.report,
    figures_fn=figures.figures,
)


def run(
    config: LipschitzDensityConfig | None = None, out_dir: str | Path | None = None, **runner_options: Any
) -> pd.DataFrame:
    """Run ``lipschitz-density`` and return one row per unit; see :func:`structnets.runner.run_experiment`."""
    return run_experiment(EXPERIMENT, config, out_dir, **runner_options)


__all__ = ["EXPERIMENT", "LipschitzDensityConfig", "fit_errors", "fit_fixed_width", "make_target", "run"]
