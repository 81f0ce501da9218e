"""Experiment ``dlor-blindspot``: rank-1 networks interpolate any scalar data set, yet cannot
approximate a 2-D function; adding αI (DLoR, same rank 1) removes the floor.

Chen, Li, Kim, Lavaei, *Structural Correspondence and Universal Approximation in Diagonal plus
Low-Rank Neural Networks* (arXiv 2605.05659), the rank-1 paradox. Target: the saddle
f(x) = x₁x₂ on [−1, 1]² (variance 1/9). Stages, each a set of pure, seeded units:

1. ``interpolate``: :func:`structnets.constructive.rank_one_interpolant` on n random points,
   scalar (1-D inputs) and 2-D inputs with the saddle's values: the maximal training error is
   at rounding level for every n, but the 2-D interpolant's test MSE does not fall with n.
2. ``floor``: the blind-spot floor, min over unit v of min over g of E(f(x) − g(vᵀx))²,
   estimated by the conditional mean of f on 400 bins of vᵀx (400,000 samples, 180 directions;
   the exact value is 4/135 ≈ 0.0296, along v = (1, 1)/√2).
   Every network whose first weight is rank-1 has test MSE ≥ this floor, whatever its width.
3. ``train``: rank-1 networks (:func:`structnets.models.rank_one_mlp`) and rank-1 DLoR networks
   (:func:`structnets.models.dlor_mlp`, r = 1) of growing width, all seeds of one (model, width)
   trained at once with ``torch.func.vmap`` over stacked parameters (full-batch Adam,
   :func:`structnets.training.seed_batched.train_vmapped`).
4. ``decompose``: Theorems 3–4 as matrix identities: seeded dense matrices (Gaussian, at scales
   1e±300, ill-conditioned, singular, column-graded; N = 4, 16, 64; ranks 1, 2, N/4, N − 1)
   decomposed exactly into sums (:func:`structnets.constructive.dlor_sum`) and products
   (:func:`~structnets.constructive.dlor_product`) of DLoR matrices, each reconstruction error
   against a rounding threshold derived from the matrix (:mod:`.decompose`).

Modules: :mod:`.targets` (the saddle and its ridge floor), :mod:`.config`, :mod:`.units`, :mod:`.decompose`,
:mod:`.report` and :mod:`.figures` (read the results table only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ...protocol import FunctionExperiment
from ...training.seed_batched import train_vmapped
from .. import run_experiment
from .config import DLoRBlindspotConfig
from .figures import draw_figures
from .report import report_markdown
from .targets import MODELS, ridge_floor, saddle, saddle_data, saddle_grid
from .units import make_units, run_unit

EXPERIMENT = FunctionExperiment(
    name="dlor-blindspot",
    description=(
        "Rank-1 networks interpolate scalar data exactly but stay at an error floor on a 2-D target; "
        "DLoR networks of the same rank do not (Chen et al., arXiv 2605.05659)"
    ),
    config_class=DLoRBlindspotConfig,
    units_fn=make_units,
    run_unit_fn=run_unit,
    report_fn=report_markdown,
    figures_fn=draw_figures,
)


def run(
    config: DLoRBlindspotConfig | None = None, out_dir: str | Path | None = None, **runner_options: Any
) -> pd.DataFrame:
    """Run ``dlor-blindspot`` and return one row per unit; see :func:`structnets.runner.run_experiment`."""
    return run_experiment(EXPERIMENT, config, out_dir, **runner_options)


__all__ = [
    "EXPERIMENT",
    "MODELS",
    "DLoRBlindspotConfig",
    "ridge_floor",
    "report_markdown",
    "run",
    "saddle",
    "saddle_data",
    "saddle_grid",
    "train_vmapped",
]
