"""Experiment ``dlor-universality``: deep DLoR networks of width n + m + 2 approximate 2-D targets,
error against depth, and the parameters deep and wide DLoR networks need at equal error.

Chen, Li, Kim, Lavaei, *Structural Correspondence and Universal Approximation in Diagonal plus
Low-Rank Neural Networks* (arXiv 2605.05659), Theorems 5–8. One unit per (target, J): a shallow
random-feature approximant g with J neurons (:func:`structnets.constructive.dlor_universality.fit_shallow`),
and from that *same* g every network below, so their errors differ only by their transfer error
and the comparison of parameter counts is at equal error by construction:

* ``deep_r1``, ``deep_r2``: the register network of width N = n + m + 2
  (:func:`~structnets.constructive.dlor_universality.dlor_from_shallow`), rank 1 (depth 2J + m)
  and rank 2 (depth J + 1 + m): the construction behind Theorem 5.
* ``deep_generic``: Theorem 7's generic route, :func:`~structnets.constructive.dlor_network_from_dense`
  (``"deep"``, rank 2) applied to the register network read as a dense MLP of width N.
* ``wide_exact``: the depth-1 DLoR network of width J computing g exactly (rank max(n, m)).
* ``wide_generic``: the paper's wide network, the additive correspondence
  (``dlor_network_from_dense(g, "parallel", rank=2)``, σ per branch), for J ≤ ``generic_max_neurons``.
* ``shallow``: g itself, the dense one-hidden-layer network (reference).

Errors are measured on a test grid of [−1, 1]² against the target (sup and RMS), and against g
(the transfer error). The report reads only the results table.

Modules: :mod:`.config` (targets and configuration), :mod:`.units` (one unit per (target, J)),
:mod:`.report` and :mod:`.figures` (read the results table only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ...protocol import FunctionExperiment
from .. import run_experiment
from .config import BLINDSPOT_FLOOR, FAMILIES, TARGETS, DLoRUniversalityConfig
from .figures import draw_figures
from .report import report_markdown
from .units import make_units, run_unit

EXPERIMENT = FunctionExperiment(
    name="dlor-universality",
    description=(
        "Deep DLoR networks of width n + m + 2 built for 2-D targets: error against depth, exact transfer "
        "from the narrow dense network, parameters of deep vs wide at equal error (Chen et al., Theorems 5–8)"
    ),
    config_class=DLoRUniversalityConfig,
    units_fn=make_units,
    run_unit_fn=run_unit,
    report_fn=report_markdown,
    figures_fn=draw_figures,
)


def run(
    config: DLoRUniversalityConfig | None = None, out_dir: str | Path | None = None, **runner_options: Any
) -> pd.DataFrame:
    """Run ``dlor-universality`` and return one row per unit; see :func:`structnets.runner.run_experiment`."""
    return run_experiment(EXPERIMENT, config, out_dir, **runner_options)


__all__ = ["BLINDSPOT_FLOOR", "EXPERIMENT", "FAMILIES", "TARGETS", "DLoRUniversalityConfig", "report_markdown", "run"]
