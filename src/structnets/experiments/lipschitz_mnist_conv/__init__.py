"""Experiment ``lipschitz-mnist-conv``: certified robust accuracy of convolutional 1-Lipschitz ResNets on MNIST.

The convolutional step the 1-Lipschitz ResNet paper (Murari, Furuya, Schönlieb, NeurIPS 2025,
arXiv 2505.12003) names as next: :func:`structnets.models.lipschitz_convnet` — a norm-constrained
convolutional lift, gradient-step convolutional blocks x − τWᵀReLU(Wx + b) with τ‖W‖_op² ≤ 2
certified on the convolution operator, invertible down-sampling, a flattened dense 1-Lipschitz
head — trained with the margin cross-entropy of ``lipschitz-mnist`` and certified by
:func:`structnets.analysis.certify` (clean accuracy, certified accuracy at ε = 0.5, 1.0, 1.58,
certified and measured Lipschitz bounds). Compared with deel-torchlip's convolutional network
(``SpectralConv2d`` + ``GroupSort2``, when the optional package is installed) and the published
results of GloRo (62.8 % at 1.58) and BCOP-Large (57.05 %, clean 98.77 %).

Modules: :mod:`.config`, :mod:`.units`, :mod:`.report`, :mod:`.figures`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ...protocol import FunctionExperiment
from .. import run_experiment
from . import figures, report, units
from .config import MODELS, LipschitzMNISTConvConfig
from .units import trained_model

EXPERIMENT = FunctionExperiment(
    name="lipschitz-mnist-conv",
    description=(
        "Convolutional 1-Lipschitz ResNets on MNIST (gradient-step convolutions certified on the operator norm): "
        "clean and certified accuracy at ε = 0.5, 1, 1.58 beside deel-torchlip and GloRo/BCOP"
    ),
    config_class=LipschitzMNISTConvConfig,
    units_fn=units.units,
    run_unit_fn=units.run_unit,
    report_fn=report.report,
    figures_fn=figures.figures,
)


def run(
    config: LipschitzMNISTConvConfig | None = None, out_dir: str | Path | None = None, **runner_options: Any
) -> pd.DataFrame:
    """Run ``lipschitz-mnist-conv``; see :func:`structnets.runner.run_experiment`."""
    return run_experiment(EXPERIMENT, config, out_dir, **runner_options)


__all__ = ["EXPERIMENT", "MODELS", "LipschitzMNISTConvConfig", "run", "trained_model"]
