"""What an experiment is, to the runner: the protocol (re-exported from :mod:`structnets.protocol`, where it
lives, so that old imports keep working) and :func:`run_experiment`, the one-call ``run(config) -> DataFrame``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..protocol import (
    Experiment,
    FunctionExperiment,
    JSONScalar,
    ProgressCallback,
    Unit,
    config_to_dict,
)

__all__ = [
    "Experiment",
    "FunctionExperiment",
    "JSONScalar",
    "ProgressCallback",
    "Unit",
    "config_to_dict",
    "run_experiment",
]


def run_experiment(
    experiment: Experiment, config: Any = None, out_dir: str | Path | None = None, **runner_options: Any
) -> pd.DataFrame:
    """Run ``experiment`` and return one row per unit (docs/design.md, convention 7: ``run(config) -> DataFrame``).

    Args:
        experiment: the experiment object.
        config: defaults to the full preset ``experiment.config_class()``.
        out_dir: the run folder (resumes when it already holds results); a temporary folder if None.
        runner_options: ``backend``, ``jobs``, ``progress`` as in :func:`structnets.runner.run`.
    """
    import tempfile

    from .orchestrate import run

    config = experiment.config_class() if config is None else config
    if out_dir is None:
        with tempfile.TemporaryDirectory() as tmp:
            return run(experiment, config, Path(tmp), **runner_options)
    return run(experiment, config, Path(out_dir), **runner_options)
