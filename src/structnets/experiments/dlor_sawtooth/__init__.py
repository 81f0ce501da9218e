"""Experiment ``dlor-sawtooth``: deep (multiplicative) vs wide (additive) DLoR networks on
sawtooth targets, the h → 0 correspondence with a dense MLP, and the spectra of trained layers.

Chen, Li, Kim, Lavaei, *Structural Correspondence and Universal Approximation in Diagonal plus
Low-Rank Neural Networks* (arXiv 2605.05659), experiments. Targets: the sawtooth family
f_{T,d}(x) = (1/d) Σ_i tri(T·x_i) on [0, 1]^d of :mod:`structnets.data.sawtooth`. Stages (each a
set of pure, seeded units, one result row each):

1. ``train``: one unit per (target, architecture, budget) trains *all seeds at once*: the S
   networks of one architecture are one batched model (:class:`BatchedDLoRNet`, parameters with
   a leading seed axis, batched matmuls; :mod:`structnets.models.batched_dlor`), trained by one
   Adam on the sum of the per-seed losses (:func:`structnets.training.seed_batched.train_batched`).
   Adam is elementwise, so this equals S independent trainings (a test checks it), at the cost
   of about one. Architectures: ``dlor_mlp(d, 1, N, L, r, mode, branches=B)`` for the wide
   forms ``"parallel"`` (the paper's wide network, σ per branch) and ``"summed"`` (branches
   added before σ), and ``"deep"`` with the depth matched to each wide network's parameter
   count. Full-batch Adam, cosine learning-rate decay over the budget; each budget (5,000 and
   50,000 epochs in the full run) is its own run. Reported per seed: final test MSE, whether
   and when (first evaluation epoch) the test MSE reached the threshold 1e-3.
2. ``correspondence``: one unit per (target, seed) trains a dense MLP and evaluates the deep,
   parallel and summed DLoR networks of :func:`structnets.constructive.dlor_network_from_dense`
   at h = 1e-1 … 1e-4: their test MSE and sup-distance to the MLP.

The table compares deep with each wide network per (target, budget) cell with exact tests over
the seeds (:func:`compare_cell`), and calls a claim reproduced only where its test is
significant. The spectral figure reads the singular values of the trained deep layers
(αI + UVᵀ) stored by the ``train`` units of the largest budget (seed 0).

Modules: :mod:`.config` (configuration, matched depths), :mod:`.units` (units of work),
:mod:`.stats` (per-cell tests), :mod:`.report` and :mod:`.figures` (read the results table only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ...models.batched_dlor import BatchedDLoRNet, build_batched
from ...protocol import FunctionExperiment
from ...training.seed_batched import BatchedHistory, train_batched, train_dense
from .. import run_experiment
from .config import (
    CORRESPONDENCE_MODES,
    THRESHOLD,
    WIDE_MODES,
    DLoRSawtoothConfig,
    deep_depths,
    matched_deep_depth,
    parse_target,
    wide_branches,
)
from .figures import draw_figures
from .report import PAPER_CLAIMS, report_markdown
from .stats import cell_comparisons, compare_cell, rank_test, ratio_interval
from .units import make_units, run_unit

EXPERIMENT = FunctionExperiment(
    name="dlor-sawtooth",
    description=(
        "Deep vs wide DLoR networks on sawtooth targets at matched parameter counts, the h → 0 "
        "correspondence with a dense MLP, spectra of trained layers (Chen et al., arXiv 2605.05659)"
    ),
    config_class=DLoRSawtoothConfig,
    units_fn=make_units,
    run_unit_fn=run_unit,
    report_fn=report_markdown,
    figures_fn=draw_figures,
)


def run(
    config: DLoRSawtoothConfig | None = None, out_dir: str | Path | None = None, **runner_options: Any
) -> pd.DataFrame:
    """Run ``dlor-sawtooth`` and return one row per unit; see :func:`structnets.runner.run_experiment`."""
    return run_experiment(EXPERIMENT, config, out_dir, **runner_options)


__all__ = [
    "CORRESPONDENCE_MODES",
    "EXPERIMENT",
    "PAPER_CLAIMS",
    "THRESHOLD",
    "WIDE_MODES",
    "BatchedDLoRNet",
    "BatchedHistory",
    "DLoRSawtoothConfig",
    "build_batched",
    "cell_comparisons",
    "compare_cell",
    "deep_depths",
    "matched_deep_depth",
    "parse_target",
    "rank_test",
    "ratio_interval",
    "report_markdown",
    "run",
    "train_batched",
    "train_dense",
    "wide_branches",
]
