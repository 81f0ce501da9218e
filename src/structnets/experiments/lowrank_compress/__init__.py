"""Experiment ``lowrank-compress``: can a trained dense model be made 3 times cheaper?

Trains a dense Swish MLP (MNIST and a UCI set), compresses it at several ratios with
:func:`structnets.compress` (truncated SVD per layer, Eckart–Young; or DLoR), fine-tunes the
compression briefly, and sets both beside the same low-rank architecture trained from scratch with
the dense budget (the low-rank Swish nets of Li, Li, Wang, Tang, ICML 2025, Sec. 5), against FLOPs
counted by :func:`structnets.analysis.cost`. In the same run folder, accuracy-versus-FLOPs curves
(:mod:`.curves`): an MLP, a CNN and a small vision transformer trained on MNIST, compressed by plain
SVD, calibrated (whitened) SVD and tensorly-torch Tucker at model-wide budgets of 1/2, 1/3, 1/4 of
the compressible layers' FLOPs, with and without a recovery fine-tune, each timed on the CPU against
its uncompressed net; two targets (:mod:`.targets`) are judged in the report and as claims rows
(:mod:`structnets.claims.compression`).

Modules: :mod:`.config` (the frozen config, presets), :mod:`.units` (units and their pure, seeded
bodies; training by :func:`structnets.training.fit`), :mod:`.curves` (the curve units),
:mod:`.targets` (the curves' targets), :mod:`.report` and :mod:`.curves_report` (the table, a
function of the results alone), :mod:`.figures` and :mod:`.curves_figure` (score against FLOPs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ...protocol import FunctionExperiment
from .. import run_experiment
from .config import DATASETS, MODELS, LowRankCompressConfig
from .figures import draw_figures
from .report import paired_difference, table
from .units import all_units, run_unit, scores


def _report(results: pd.DataFrame, config: LowRankCompressConfig) -> str:
    del config  # the table is a function of the results alone
    return table(results)


def _figures(results: pd.DataFrame, config: LowRankCompressConfig, out_dir: Path) -> list[Path]:
    del config
    return draw_figures(results, out_dir)


EXPERIMENT = FunctionExperiment(
    name="lowrank-compress",
    description=(
        "Compress a trained dense Swish MLP (MNIST, a UCI set) at several ratios, fine-tune, and compare "
        "with the low-rank net trained from scratch: score against FLOPs; and accuracy-vs-FLOPs curves of an MLP, "
        "a CNN and a small ViT on MNIST (plain / calibrated SVD, Tucker; budgets 1/2, 1/3, 1/4; ± fine-tune)"
    ),
    config_class=LowRankCompressConfig,
    units_fn=all_units,
    run_unit_fn=run_unit,
    report_fn=_report,
    figures_fn=_figures,
)


def run(
    config: LowRankCompressConfig | None = None, out_dir: str | Path | None = None, **runner_options: Any
) -> pd.DataFrame:
    """Run ``lowrank-compress`` and return one row per unit; see :func:`structnets.runner.run_experiment`."""
    return run_experiment(EXPERIMENT, config, out_dir, **runner_options)


__all__ = [
    "DATASETS", "EXPERIMENT", "MODELS", "LowRankCompressConfig", "all_units", "draw_figures", "paired_difference",
    "run", "run_unit", "scores", "table",
]  # fmt: skip
