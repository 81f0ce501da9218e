"""Experiment ``swish-construction``: the explicit low-rank Swish network against its error bound.

Li, Li, Wang, Tang, *Approximation to Smooth Functions by Low-Rank Swish Networks* (ICML 2025),
Sec. 4: for f ∈ C^{β,R}([0,1]^d), the network Σ_m P_m φ_m^τ built from Swish bumps and Swish
product sub-networks satisfies |nn − f| ≤ c₄M^{−β} + c₅(M+1)^d τe^{−τ} + c₃(M+1)^d/λ². We build
it (:func:`structnets.constructive.swish_approximator`) in float64 for several targets of known
smoothness, measure the sup error on a dense grid, and sweep M, τ and λ one at a time. Each unit is
one (target, M, τ, λ); rows hold the measured error and the three evaluated bound terms.

Modules: :mod:`.config` (configuration, target specs), :mod:`.units` (units of work),
:mod:`.report` and :mod:`.figures` (read the results table only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ...protocol import FunctionExperiment
from .. import run_experiment
from .config import FAMILIES, SwishConstructionConfig, parse_target
from .figures import draw_figures
from .report import m_slopes, report_markdown
from .units import make_units, run_unit

# The names of the single-module version, kept for callers that import them.
_units = make_units
_run_unit = run_unit
_m_slopes = m_slopes
_report = report_markdown
_figures = draw_figures

EXPERIMENT = FunctionExperiment(
    name="swish-construction",
    description=(
        "Explicit low-rank Swish network (Taylor patches × Swish bumps, Swish products) vs its "
        "three-term error bound, sweeping M, τ, λ (Li et al., ICML 2025, Sec. 4)"
    ),
    config_class=SwishConstructionConfig,
    units_fn=make_units,
    run_unit_fn=run_unit,
    report_fn=report_markdown,
    figures_fn=draw_figures,
)


def run(
    config: SwishConstructionConfig | None = None, out_dir: str | Path | None = None, **runner_options: Any
) -> pd.DataFrame:
    """Run ``swish-construction`` and return one row per unit; see :func:`structnets.runner.run_experiment`."""
    return run_experiment(EXPERIMENT, config, out_dir, **runner_options)


__all__ = [
    "EXPERIMENT",
    "FAMILIES",
    "SwishConstructionConfig",
    "draw_figures",
    "make_units",
    "parse_target",
    "report_markdown",
    "run",
    "run_unit",
]
