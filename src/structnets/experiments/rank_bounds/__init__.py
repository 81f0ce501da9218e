"""Experiment ``rank-bounds``: bottleneck rank and generalization bounds of trained MLPs.

Reproduces the empirical side of Ledent, Alves and Lei, *Generalization Bounds for Rank-sparse
Neural Networks* (NeurIPS 2025, arXiv 2510.21945): bias-free ReLU MLPs are trained on MNIST and
on one UCI classification data set (Rice) over a grid of widths, depths and weight-decay
strengths. Each unit (data set × depth × width × weight decay × seed) records

* the per-layer numerical rank of the weights and of the hidden activations during training
  (does a *bottleneck rank* appear, and how does it move with depth and weight decay?);
* final train/test error, the generalization gap and the training margin distribution;
* every bound of :mod:`structnets.analysis.bounds`: parameter count, spectral (Bartlett et al.
  2017), PAC-Bayes (Neyshabur et al. 2018) and the rank-sparse Schatten-p family for a grid of p,
  with each bound's *sample complexity* (the n at which its complexity term would reach 0.1).

Networks are bias-free so the bounds apply to exactly the network trained (the papers' bounds
have no biases), and ReLU (ρ = 1, positively homogeneous, as the PAC-Bayes proof needs).

Modules: :mod:`.config` (configuration and the paper's claims), :mod:`.units` (the trained ReLU
MLPs and what each unit measures, by :func:`structnets.training.fit` and
:mod:`structnets.analysis`), :mod:`.deep_linear` (the deep linear units), :mod:`.report` and
:mod:`.figures` (read the results table only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ...protocol import FunctionExperiment
from .. import run_experiment
from .config import DATASETS, PAPER_CLAIMS, RankBoundsConfig
from .config import _p_column as _p_column  # private names kept at their old import path
from .deep_linear import _run_linear_unit as _run_linear_unit
from .deep_linear import train_deep_linear
from .figures import _figures
from .report import SC_FAMILIES, _report
from .units import _arrays as _arrays
from .units import _model as _model
from .units import _run_unit, _units
from .units import _run_unit_body as _run_unit_body

EXPERIMENT = FunctionExperiment(
    name="rank-bounds",
    description=(
        "Bottleneck rank and generalization bounds (parameter count, spectral, PAC-Bayes, "
        "rank-sparse Schatten-p) of MLPs on MNIST and Rice (Ledent, Alves, Lei, NeurIPS 2025)"
    ),
    config_class=RankBoundsConfig,
    units_fn=_units,
    run_unit_fn=_run_unit,
    report_fn=_report,
    figures_fn=_figures,
)


def run(
    config: RankBoundsConfig | None = None, out_dir: str | Path | None = None, **runner_options: Any
) -> pd.DataFrame:
    """Run ``rank-bounds`` and return one row per unit; see :func:`structnets.runner.run_experiment`."""
    return run_experiment(EXPERIMENT, config, out_dir, **runner_options)


__all__ = ["DATASETS", "EXPERIMENT", "PAPER_CLAIMS", "SC_FAMILIES", "RankBoundsConfig", "run", "train_deep_linear"]
