"""Experiment ``lipschitz-moons``: 1-Lipschitz ResNets on two moons, certified.

Reproduces the two-moons experiment of Murari, Furuya, Schönlieb, *Approximation theory for
1-Lipschitz ResNets* (NeurIPS 2025, arXiv 2505.12003): 4000 points, noise 0.1, 20% for training
(and also 80%); a depth sweep at width 5 and a width sweep at depth 10; Adam
with a cosine schedule, batch 256. Every map of our networks (lift, residual blocks, head) is
constrained, so for each trained model we report clean accuracy, certified robust accuracy at
several ℓ₂ radii, the certified upper bound of the Lipschitz constant (product of layer
certificates, ≤ 1) and a measured lower bound (Jacobian norms at test points and gradient ascent
on ‖f(x) − f(y)‖/‖x − y‖). The authors' public code (as described to us), which leaves the lift
unconstrained and clamps τ with an undershooting power-method estimate, gave trained two-moons
models with measured Lipschitz constants of about 19 and 25.

Each unit is one (train fraction, sweep, depth, width, seed); units are pure and seeded. Modules:
:mod:`.config` (the config and the authors' value), :mod:`.units` (units, training, certification
through :func:`structnets.analysis.certify`), :mod:`.report` and :mod:`.figures` (functions of the
results table and the config alone).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ...analysis.certify import certify
from ...protocol import FunctionExperiment
from .. import run_experiment
from . import figures, report, units
from .config import PAPER_LIPSCHITZ_AUTHORS_CODE, LipschitzMoonsConfig
from .units import authors_style, train_classifier

EXPERIMENT = FunctionExperiment(
    name="lipschitz-moons",
    description=(
        "1-Lipschitz ResNets on two moons: depth and width sweeps, certified robust accuracy, "
        "certified and measured Lipschitz constants (Murari, Furuya, Schönlieb, NeurIPS 2025)"
    ),
    config_class=LipschitzMoonsConfig,
    units_fn=units.units,
    run_unit_fn=units.run_unit,
    report_fn=report.report,
    figures_fn=figures.figures,
)


def run(
    config: LipschitzMoonsConfig | None = None, out_dir: str | Path | None = None, **runner_options: Any
) -> pd.DataFrame:
    """Run ``lipschitz-moons`` and return one row per unit; see :func:`structnets.runner.run_experiment`."""
    return run_experiment(EXPERIMENT, config, out_dir, **runner_options)


__all__ = [
    "EXPERIMENT",
    "PAPER_LIPSCHITZ_AUTHORS_CODE",
    "LipschitzMoonsConfig",
    "authors_style",
    "certify",
    "run",
    "train_classifier",
]
