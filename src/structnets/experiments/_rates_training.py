"""Old home of the batched ensemble training of ``smoothness-rates``; the code now lives in the library.

:class:`EnsembleMLP` and ``ACTIVATION_FUNCTIONS`` are in :mod:`structnets.models.ensemble_mlp`;
:func:`adam_phase`, :func:`batched_lbfgs` and :class:`LBFGSResult` in
:mod:`structnets.training.lbfgs`, beside :mod:`structnets.training.levenberg_marquardt`. This module
re-exports them so that existing imports keep working.
"""

from __future__ import annotations

from ..models.ensemble_mlp import ACTIVATION_FUNCTIONS, EnsembleMLP
from ..training.lbfgs import LBFGSResult, adam_phase, batched_lbfgs

__all__ = ["ACTIVATION_FUNCTIONS", "EnsembleMLP", "LBFGSResult", "adam_phase", "batched_lbfgs"]
