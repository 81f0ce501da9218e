"""Experiment ``smooth-constant-depth``: the constant-depth smooth-activation network of
Liu, Wang, Wu, Zhang (arXiv 2602.19691), Theorems 4.1/4.4, built explicitly
(:func:`structnets.constructive.smooth_constant_depth_approximator`) for GELU, SiLU and Tanh on
targets of known smoothness s ∈ {1, 2, 3, 4}, d ∈ {1, 2}: the sup error against the dense
parameter count N at fixed depth, beside the stated bound and the certified best error of any ReLU
network of the same depth and N (Theorem 6.1's cap, shown by construction).

Modules: :mod:`.config`, :mod:`.units`, :mod:`.report` (report and figure read the table only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ...protocol import FunctionExperiment
from .. import run_experiment
from .config import SmoothConstantDepthConfig
from .report import cell_slopes, draw_figures, report_markdown
from .units import curvature_floor, make_units, relu_floor, relu_max_pieces, run_unit

EXPERIMENT = FunctionExperiment(
    name="smooth-constant-depth",
    description=(
        "Constant-depth smooth-activation construction (Taylor patches, sigmoidal partition of unity, "
        "one-layer polynomial gadgets) vs N^{-s/d}, its bound and the certified ReLU floor "
        "(Liu et al., Theorems 4.1/4.4, 6.1)"
    ),
    config_class=SmoothConstantDepthConfig,
    units_fn=make_units,
    run_unit_fn=run_unit,
    report_fn=report_markdown,
    figures_fn=draw_figures,
)


def run(
    config: SmoothConstantDepthConfig | None = None, out_dir: str | Path | None = None, **runner_options: Any
) -> pd.DataFrame:
    """Run ``smooth-constant-depth``; see :func:`structnets.runner.run_experiment`."""
    return run_experiment(EXPERIMENT, config, out_dir, **runner_options)


__all__ = [
    "EXPERIMENT",
    "SmoothConstantDepthConfig",
    "cell_slopes",
    "curvature_floor",
    "draw_figures",
    "make_units",
    "relu_floor",
    "relu_max_pieces",
    "report_markdown",
    "run",
    "run_unit",
]
