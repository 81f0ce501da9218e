"""Experiment ``lowrank-uci``: dense vs low-rank Swish MLPs on 8 UCI data sets.

Reproduces Section 5 of Li, Li, Wang, Tang, *Approximation to Smooth Functions by Low-Rank Swish
Networks* (ICML 2025). Stages, each a set of pure, seeded units (one result row each):

1. ``select``: grid search over (depth, width) for the *dense* Swish net on one stratified
   hold-out split (80/20) of each data set; the best validation score picks the architecture.
   The split is shared by dense and low-rank, so the later comparison stays paired and fair.
2. ``cv``: K-fold cross-validation (10 folds in the paper) at the chosen depth and nonlinear width,
   dense against low-rank (bottleneck H = width/3), plus the sensitivity sweep of the bottleneck
   ratio; the same folds, seeds and initialisation seeds for every model, so differences are paired.
3. ``efficiency``: parameters, FLOPs, forward latency ratio (interleaved pairs, median of per-pair
   ratios) and training memory of dense vs low-rank at the chosen architecture.

Features are standardised inside each training fold by the estimator (``standardize=True``);
regression targets come min-max scaled to [0, 1] from :func:`structnets.data.load`, so RMSE is on
the paper's scale.

Modules: :mod:`.config` (config, presets, the paper's and our full run's numbers), :mod:`.units`
(units and their bodies), :mod:`.report` (the table, a function of the results alone) and
:mod:`.figures`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ...protocol import FunctionExperiment
from .. import run_experiment
from .config import ALL_DATASETS, DATASET_ROWS, FULL_RUN, PAPER, PAPER_NOTES, LowRankUCIConfig
from .figures import figures as _draw
from .report import _agreement, _mean_std, _paired_test, comparable, protocol, table
from .units import (
    _chosen_architecture,
    _dataset_arrays,
    _efficiency_unit,
    _estimator,
    _model_variants,
    _run_cv,
    _run_efficiency,
    _run_select,
    _run_unit,
    _scores,
    _training_params,
    _units,
    batch_size_for,
)


def _report(results: pd.DataFrame, config: LowRankUCIConfig) -> str:
    del config  # the table is a function of the results alone
    return table(results)


def _figures(results: pd.DataFrame, config: LowRankUCIConfig, out_dir: Path) -> list[Path]:
    del config
    return _draw(results, out_dir)


EXPERIMENT = FunctionExperiment(
    name="lowrank-uci",
    description=(
        "Low-rank vs dense Swish MLPs on 8 UCI data sets: grid search, K-fold CV, paired t-tests, "
        "efficiency, bottleneck sensitivity (Li et al., ICML 2025)"
    ),
    config_class=LowRankUCIConfig,
    units_fn=_units,
    run_unit_fn=_run_unit,
    report_fn=_report,
    figures_fn=_figures,
)


def run(
    config: LowRankUCIConfig | None = None, out_dir: str | Path | None = None, **runner_options: Any
) -> pd.DataFrame:
    """Run ``lowrank-uci`` and return one row per unit; see :func:`structnets.runner.run_experiment`."""
    return run_experiment(EXPERIMENT, config, out_dir, **runner_options)


__all__ = [
    "ALL_DATASETS", "DATASET_ROWS", "EXPERIMENT", "FULL_RUN", "PAPER", "PAPER_NOTES", "LowRankUCIConfig",
    "batch_size_for", "comparable", "protocol", "run", "table",
]  # fmt: skip
# Private names kept importable from the old single-module path (tests and scripts import them).
_PRIVATE = (
    _agreement,
    _chosen_architecture,
    _dataset_arrays,
    _efficiency_unit,
    _estimator,
    _mean_std,
    _model_variants,
    _paired_test,
    _run_cv,
    _run_efficiency,
    _run_select,
    _scores,
    _training_params,
)
