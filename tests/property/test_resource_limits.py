"""Sizes and counts beyond what fits in memory are refused up front, naming the argument.

Each call below would, if it started, allocate without bound (or loop 10³⁰ times); it must raise
``ValueError`` naming the argument before building anything. A SIGALRM guard turns a regression
into a failure instead of a machine that fills its memory; refusal takes milliseconds.
"""

from __future__ import annotations

import signal

import numpy as np
import pytest

import structnets.analysis as analysis
import structnets.data as data
import structnets.models as models
import structnets.nn as snn
import structnets.training as training
from structnets.estimators import MLPClassifier, MLPRegressor

from .strategies import REGRESSOR, X20, Y20

GUARD_S = 60

HUGE_CALLS = {
    "mlp depth": ("depth", lambda: models.mlp(5, 2, width=8, depth=10**30)),
    "mlp depth just above the layer limit": ("depth", lambda: models.mlp(5, 2, width=8, depth=100_001)),
    "mlp width": ("width", lambda: models.mlp(5, 2, width=10**12, depth=2)),
    "mlp width x depth": ("depth", lambda: models.mlp(5, 2, width=10**6, depth=10**4)),
    "mlp in_features": ("in_features", lambda: models.mlp(10**13, 2, width=8, depth=2)),
    "mlp bottleneck": ("width", lambda: models.mlp(5, 2, width=10**9, depth=3, bottleneck=1 / 3)),
    "dlor_mlp depth": ("depth", lambda: models.dlor_mlp(5, 2, 8, 10**30, 2)),
    "dlor_mlp width": ("width", lambda: models.dlor_mlp(5, 2, 10**12, 2, 2)),
    "dlor_mlp branches": ("branches", lambda: models.dlor_mlp(5, 2, 8, 2, 2, mode="parallel", branches=10**30)),
    "dlor_mlp depth x branches": ("branches", lambda: models.dlor_mlp(5, 2, 8, 1000, 2, mode="summed", branches=1000)),
    "rank_one_mlp depth": ("depth", lambda: models.rank_one_mlp(5, 2, 8, 10**30)),
    "rank_one_mlp width": ("width", lambda: models.rank_one_mlp(5, 2, 10**13, 2)),
    "LowRankLinear": ("in_features", lambda: snn.LowRankLinear(10**30, 10**30, 10**20)),
    "DLoRLinear": ("features", lambda: snn.DLoRLinear(10**12, 10**6)),
    "RankOneLinear": ("out_features", lambda: snn.RankOneLinear(4, 10**13)),
    "MLPClassifier depth": ("depth", lambda: MLPClassifier(depth=10**30).fit(X20, np.arange(20) % 2)),
    "MLPRegressor width": ("width", lambda: MLPRegressor(width=10**12, epochs=1).fit(X20, Y20)),
    "MLPRegressor epochs": ("epochs", lambda: MLPRegressor(epochs=10**30).fit(X20, Y20)),
    "fit epochs": ("epochs", lambda: training.fit(REGRESSOR, X20, Y20, epochs=10**30)),
    "make_sawtooth n": ("n", lambda: data.make_sawtooth(10**12)),
    "make_sawtooth grid": ("dim", lambda: data.make_sawtooth(10**4, dim=10**4, grid=True)),
    "make_sawtooth grid 10**30": ("n", lambda: data.make_sawtooth(10**30, dim=10**30, grid=True)),
    "make_moons": ("n_samples", lambda: data.make_moons(10**12)),
    "lacunary levels": ("levels", lambda: data.lacunary_target(2, 1.5, levels=10**30)),
    "lacunary d": ("d", lambda: data.lacunary_target(10**12, 1.5)),
    "sample n": ("n", lambda: data.sine_target(2, 1.5).sample(10**12)),
    "lipschitz_lower_bound pairs": ("pairs", lambda: analysis.lipschitz_lower_bound(REGRESSOR, X20, pairs=10**12)),
    "lipschitz_lower_bound steps": ("steps", lambda: analysis.lipschitz_lower_bound(REGRESSOR, X20, steps=10**30)),
}


class _Hang(Exception):
    pass


def _raise_hang(signum, frame):
    raise _Hang


def _guarded(call, seconds):
    previous = signal.signal(signal.SIGALRM, _raise_hang)
    signal.alarm(seconds)
    try:
        return call()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("name", list(HUGE_CALLS))
def test_size_beyond_memory_is_refused_up_front(name):
    arg, call = HUGE_CALLS[name]
    with pytest.raises(ValueError, match=f"`{arg}`"):
        _guarded(call, GUARD_S)


def test_lipschitz_resnet_huge_depth_is_refused():
    # A short guard: the call is known to run until stopped, and memory grows while it does.
    with pytest.raises(ValueError, match="`depth`"):
        _guarded(lambda: models.lipschitz_resnet(2, 2, 4, depth=10**30), 3)


OTHER_OWNERS_HUGE = {
    "GradientStepResidual features": ("features", lambda: snn.GradientStepResidual(10**30, 3)),
    "NormConstrainedLinear in_features": ("in_features", lambda: snn.NormConstrainedLinear(10**30, 3)),
    "lipschitz_resnet width": ("width", lambda: models.lipschitz_resnet(2, 2, 10**30, 2)),
    "cost input_shape": ("input_shape", lambda: analysis.cost(REGRESSOR, (10**30,))),
}


@pytest.mark.parametrize("name", list(OTHER_OWNERS_HUGE))
def test_size_beyond_memory_is_refused_up_front_elsewhere(name):
    arg, call = OTHER_OWNERS_HUGE[name]
    with pytest.raises(ValueError, match=f"`{arg}`"):
        _guarded(call, GUARD_S)


def test_sizes_that_fit_still_build():
    """The limits refuse only what cannot fit: a deep narrow net and a wide shallow one build."""
    deep = models.mlp(2, 1, width=2, depth=2000)
    assert sum(isinstance(m, snn.Swish) for m in deep) == 2000
    wide = models.mlp(2, 1, width=3000, depth=2, bottleneck=1 / 3)
    assert wide[2].rank == 1000
    assert models.dlor_parameter_count(10**6, 10**30, 3) == (10**30 + 1) * (2 * 10**6 * 3 + 1 + 10**6)
