"""Experiment ``lipschitz-mnist``: certified robust accuracy of 1-Lipschitz ResNets on MNIST.

MNIST experiment of Murari, Furuya, Schönlieb, *Approximation theory for 1-Lipschitz ResNets*
(NeurIPS 2025, arXiv 2505.12003), with every map constrained (the authors' code leaves the stem
and head unconstrained), and the training choices that published 1-Lipschitz networks use to
reach high certified accuracy. Models, at each depth × width of the grid:

* ``fixed-width``: lift, [GradientStepResidual, NormConstrainedLinear] × depth, head;
* ``gradient-step``: lift, GradientStepResidual × depth (learnable step s ∈ (0, 2)), head;
* ``cpl``: as ``gradient-step`` with the fixed step τ = 2/‖W‖₂² of CPL (Meunier et al. 2022),
  certified here (exact bound) instead of CPL's power-method estimate;
* ``unconstrained``: the same ResNet with plain ``Linear`` maps and residuals x + Uσ(Wx + b);
* ``deel-torchlip`` (only when the optional ``deel-torchlip`` package is installed): its
  ``SpectralLinear`` + ``GroupSort2`` MLP with ``depth`` hidden layers of ``width``, trained with
  the same loss and epochs; its certificate is our certified product of its exported layers' norms.

Each constrained model is trained with every loss of ``losses`` (:data:`structnets.training.losses.
CERTIFIED_LOSSES`: the old CE(T·z) ``scaled-ce`` against the margin cross-entropy ``margin-ce``, …)
and every lift/head kind of ``lifts`` (``norm-constrained`` V/max(1, B(V)) against the certified
``orthogonal`` polar factor). The report lays the published MNIST results at ε = 1.58 beside ours
(:data:`PUBLISHED`). Per model: clean accuracy, certified accuracy at ℓ₂ radii 0.5, 1.0, 1.58
(margin ≥ √2·L·ε with L = the model's certified upper bound), measured lower and certified upper
bound of the Lipschitz constant, seconds per epoch. A ``timing`` unit per (depth, width) measures
the cost of the constraint: interleaved training steps of the constrained model against the
unconstrained one, median of per-pair ratios (goal ≤ 1.3×), for each of :data:`TIMED_BOUNDS`.
The ``constraint-cost`` unit times the fixed-width network (norm-constrained affine maps between the
blocks) against the gradient-step one at several depths in interleaved rounds (claim
``004-affine-constraint-cost``).

Modules: :mod:`.config` (config, :data:`MODELS`, :data:`PUBLISHED`, targets), :mod:`.units`
(training through :func:`structnets.training.fit`, certification through
:func:`structnets.analysis.certify`, timing), :mod:`.report` and :mod:`.figures` (functions of the
results table and the config alone).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ...protocol import FunctionExperiment
from .. import run_experiment
from . import figures, report, units
from .config import MODELS, PUBLISHED, TIMED_BOUNDS, LipschitzMNISTConfig
from .units import build, deel_torchlip_available, trained_model

EXPERIMENT = FunctionExperiment(
    name="lipschitz-mnist",
    description=(
        "1-Lipschitz ResNets on MNIST: losses (margin CE vs CE) × lifts (orthogonal vs norm-constrained), "
        "CPL-style, unconstrained and deel-torchlip baselines, published results at ε = 1.58; certified "
        "robust accuracy, Lipschitz bounds, constraint cost"
    ),
    config_class=LipschitzMNISTConfig,
    units_fn=units.units,
    run_unit_fn=units.run_unit,
    report_fn=report.report,
    figures_fn=figures.figures,
)


def run(
    config: LipschitzMNISTConfig | None = None, out_dir: str | Path | None = None, **runner_options: Any
) -> pd.DataFrame:
    """Run ``lipschitz-mnist`` and return one row per unit; see :func:`structnets.runner.run_experiment`."""
    return run_experiment(EXPERIMENT, config, out_dir, **runner_options)


__all__ = [
    "EXPERIMENT",
    "MODELS",
    "PUBLISHED",
    "TIMED_BOUNDS",
    "LipschitzMNISTConfig",
    "build",
    "deel_torchlip_available",
    "run",
    "trained_model",
]
