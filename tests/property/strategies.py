"""Generated bad arguments for the public API, and the table of entry points they drive.

Each :class:`Case` is one argument of one public entry point: a call with every other argument
valid, and a strategy that draws only values the documentation rules out for that argument (a
wrong type, a string such as ``"False"`` where a bool goes, NaN/inf, a negative or zero size, a
count too large for memory, a wrong shape, float labels, non-finite arrays). The expected outcome
of every such call is a ``ValueError``/``TypeError`` whose message names the argument.

``NAMING_POLICY`` (in ``cases_more``) is the allow-list of arguments whose refusal names the value or
the entry instead of the argument, by a stated policy; no case is expected to fail.
"""

from __future__ import annotations

import math
import os
import re
import signal
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from torch import nn

import structnets
import structnets.analysis as analysis
import structnets.data as data
import structnets.functional as functional
import structnets.models as models
import structnets.nn as snn
import structnets.training as training
from structnets.estimators import MLPClassifier, MLPRegressor

# -- generic bad values ------------------------------------------------------------------------

HUGE = st.sampled_from([10**12, 2**63, 10**30, 10**400])
"""Counts no machine can hold: each must be refused up front, naming the argument."""

NOT_A_NUMBER = st.one_of(
    st.sampled_from(["1", "2.0", "False", "True", "nan", "", "inf", "ten"]),
    st.text(max_size=4),
    st.none(),
    st.lists(st.integers(0, 3), max_size=2),
    st.just((1, 2)),
    st.just({"a": 1}),
    st.just(1 + 2j),
    st.just(object()),
)
NON_FINITE = st.sampled_from([math.nan, math.inf, -math.inf, np.float64("nan"), np.float32("inf")])


def bad_int(low: int, high: int | None = None, *, huge: bool = True, none_ok: bool = False) -> st.SearchStrategy[Any]:
    """Values that are not ints in [low, high]: below ``low``, above ``high``, floats, bools, text.

    ``huge`` adds counts no machine can hold (for sizes and loop counts); ``none_ok`` leaves out
    None where the documentation allows it.
    """
    parts = [
        st.integers(min_value=low - 10**6, max_value=low - 1),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([2.0, 1.5, np.float64(3.0)]),
        st.booleans(),
        NOT_A_NUMBER,
        NON_FINITE,
    ]
    if high is not None:
        parts.append(st.integers(min_value=high + 1, max_value=high + 10**6))
    if huge:
        parts.append(HUGE)
    strategy = st.one_of(parts)
    return strategy.filter(lambda v: v is not None) if none_ok else strategy


def bad_real(
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> st.SearchStrategy[Any]:
    """Values that are not finite reals in the interval: NaN/inf, out of range, bools, text."""
    parts = [NON_FINITE, st.booleans(), NOT_A_NUMBER, st.sampled_from([1e400, -1e400])]
    if low is not None:
        parts.append(st.floats(max_value=low, exclude_max=not low_open, allow_nan=False, allow_infinity=False))
    if high is not None:
        parts.append(st.floats(min_value=high, exclude_min=not high_open, allow_nan=False, allow_infinity=False))
    return st.one_of(parts)


def bad_bool() -> st.SearchStrategy[Any]:
    """Anything but a bool: the strings "False"/"True" (truthy!), 0/1, None, floats."""
    return st.one_of(
        st.sampled_from(["False", "True", "false", "0", "", "yes"]),
        st.integers(-2, 2),
        st.floats(allow_nan=True),
        st.none(),
        st.just([True]),
    )


def bad_choice(choices: tuple[str, ...]) -> st.SearchStrategy[Any]:
    """Strings outside ``choices`` (including near misses), and non-strings."""
    near = [c.upper() for c in choices] + [c + " " for c in choices] + [c[:-1] for c in choices if len(c) > 1]
    return st.one_of(
        st.text(max_size=8).filter(lambda s: s not in choices),
        st.sampled_from([n for n in near if n not in choices] or ["?"]),
        st.integers(-3, 3),
        st.none(),
        st.floats(allow_nan=True),
        st.just(["swish"]),
    )


def bad_matrix(
    rows: int, cols: int, *, allow_any_shape: bool = False, empty_ok: bool = False
) -> st.SearchStrategy[Any]:
    """Non-finite, non-numeric, empty or wrong-dimensional stand-ins for a (rows, cols) array."""

    def with_bad_entry(value: float) -> np.ndarray:
        array = np.ones((rows, cols))
        array[rows // 2, cols // 2] = value
        return array

    parts = [
        NON_FINITE.map(with_bad_entry),
        NON_FINITE.map(lambda v: torch.from_numpy(with_bad_entry(v))),
        st.sampled_from(["abc", None, 3.0, object()]),
        st.just(np.array([["a"] * cols] * rows)),
        st.just(np.ones((rows, cols), dtype=complex)),
    ]
    if not empty_ok:
        parts.append(st.just(np.empty((0, cols))))
    if not allow_any_shape:
        parts += [st.just(np.ones(rows)), st.just(np.ones((rows, cols, 2))), st.just(np.float64(1.0))]
    return st.one_of(parts)


# -- the table of entry points ----------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One argument of one entry point, driven with generated bad values."""

    entry: str
    arg: str
    call: Callable[[dict[str, Any]], Any]
    valid: dict[str, Any]
    bad: st.SearchStrategy[Any]
    names: tuple[str, ...] = field(default=())

    @property
    def id(self) -> str:
        return f"{self.entry}:{self.arg}"

    def accepted_names(self) -> tuple[str, ...]:
        return self.names or (self.arg,)


def _cases(entry: str, call: Callable[..., Any], valid: dict[str, Any], bad: dict[str, Any], names=None) -> list[Case]:
    names = names or {}
    return [
        Case(entry, arg, lambda kw, call=call: call(**kw), valid, strategy, tuple(names.get(arg, ())))
        for arg, strategy in bad.items()
    ]


def _tiny_regressor() -> nn.Module:
    torch.manual_seed(0)
    return models.mlp(3, 1, 4, 1)


def _tiny_classifier() -> nn.Module:
    torch.manual_seed(0)
    return models.mlp(3, 3, 4, 1)


_RNG = np.random.default_rng(0)
X20 = _RNG.random((20, 3))
Y20 = _RNG.random(20)
LABELS20 = np.arange(20) % 3
REGRESSOR = _tiny_regressor()
CLASSIFIER = _tiny_classifier()
LOGITS = torch.from_numpy(_RNG.standard_normal((10, 3)))


def _seeded(seed: Any) -> None:
    with training.seeded(seed):
        pass


def _sample(n: Any = 5, noise: Any = 0.0, seed: Any = 0) -> Any:
    return data.sine_target(2, 1.5).sample(n, noise, seed)


def _clf_fit(X: Any = X20, y: Any = LABELS20, **params: Any) -> Any:
    return MLPClassifier(epochs=1, width=4, depth=1, **params).fit(X, y)


def _reg_fit(X: Any = X20, y: Any = Y20, **params: Any) -> Any:
    return MLPRegressor(epochs=1, width=4, depth=1, **params).fit(X, y)


NOT_A_MODEL = st.sampled_from([None, "mlp", 3, np.ones((2, 2))])
NOT_CALLABLE = st.sampled_from([None, "mlp", 3, np.ones((2, 2))])

ESTIMATOR_PARAMS: dict[str, Any] = {
    "width": bad_int(1),
    "depth": bad_int(1),
    "bottleneck": st.one_of(
        st.integers(-5, 0),
        st.floats(min_value=1.0001, max_value=1e9),
        NON_FINITE,
        st.booleans(),
        st.sampled_from(["1/3", "", [1]]),
    ),
    "activation": bad_choice(tuple(snn.ACTIVATIONS)),
    "epochs": bad_int(1),
    "batch_size": bad_int(1, huge=False, none_ok=True),
    "lr": bad_real(0.0, low_open=True),
    "weight_decay": bad_real(0.0),
    "optimizer": bad_choice(tuple(training.OPTIMIZERS)),
    "early_stopping": bad_bool(),
    "validation_fraction": bad_real(0.0, 1.0, low_open=True, high_open=True),
    "patience": bad_int(1, huge=False),
    "standardize": bad_bool(),
    "random_state": st.sampled_from(["0", 1.5, [1], "False", math.nan]),
    "dtype": bad_choice(("float32", "float64")),
    "device": st.sampled_from(["gpu0", "cuda:x", 3.5, "", "cpux"]),
}


def build_cases() -> list[Case]:
    cases: list[Case] = []
    add = cases.extend

    # structnets.nn (constructors)
    add(
        _cases(
            "nn.LowRankLinear",
            snn.LowRankLinear,
            {"in_features": 6, "out_features": 5, "rank": 2},
            {"in_features": bad_int(1), "out_features": bad_int(1), "rank": bad_int(1, 5), "bias": bad_bool()},
        )
    )
    add(
        _cases(
            "nn.DLoRLinear",
            snn.DLoRLinear,
            {"features": 6, "rank": 2},
            {"features": bad_int(2), "rank": bad_int(1, 5), "bias": bad_bool(), "alpha": bad_real()},
        )
    )
    add(
        _cases(
            "nn.RankOneLinear",
            snn.RankOneLinear,
            {"in_features": 4, "out_features": 3},
            {"in_features": bad_int(1), "out_features": bad_int(1), "bias": bad_bool()},
        )
    )
    add(_cases("nn.Swish", snn.Swish, {}, {"beta": bad_real(0.0, low_open=True), "learnable": bad_bool()}))
    add(
        _cases(
            "nn.activation",
            snn.activation,
            {"name": "swish"},
            {"name": bad_choice(tuple(snn.ACTIVATIONS))},
            names={"name": ("activation",)},
        )
    )
    dense = nn.Linear(6, 5)
    add(
        _cases(
            "nn.LowRankLinear.from_linear",
            snn.LowRankLinear.from_linear,
            {"linear": dense, "rank": 2},
            {"linear": st.sampled_from([None, "linear", np.ones((5, 6)), nn.ReLU()]), "rank": bad_int(1, 5)},
        )
    )
    square = nn.Linear(6, 6)
    add(
        _cases(
            "nn.DLoRLinear.from_linear",
            snn.DLoRLinear.from_linear,
            {"linear": square, "rank": 2},
            {
                "linear": st.sampled_from([None, "linear", np.ones((6, 6)), nn.ReLU(), dense]),
                "rank": bad_int(1, 5),
                "alpha": bad_real().filter(lambda v: v is not None),
            },
        )
    )
    add(
        _cases(
            "nn.Swish.forward",
            lambda input: snn.Swish()(input),
            {"input": torch.ones(3)},
            {"input": st.sampled_from([None, "x", 3.0, np.ones(3), [1.0, 2.0]])},
        )
    )
    add(
        _cases(
            "nn.MaxMin.forward",
            lambda input: snn.MaxMin(4)(input),
            {"input": torch.ones(2, 4)},
            {"input": st.sampled_from([None, "x", 3.0, np.ones((2, 4)), torch.ones(2, 3), torch.ones(4, 2)])},
        )
    )
    add(_cases("nn.MaxMin", snn.MaxMin, {"features": 4}, {"features": bad_int(1, huge=False)}))
    add(
        _cases(
            "nn.GradientStepResidual",
            snn.GradientStepResidual,
            {"features": 4, "hidden": 3},
            {
                "features": bad_int(1),
                "hidden": bad_int(1),
                "bias": bad_bool(),
                "step": bad_real(0.0, 2.0, low_open=True),
                "learnable_step": bad_bool(),
                "bound": bad_choice(("exact", "power")),
            },
        )
    )
    add(
        _cases(
            "nn.NormConstrainedLinear",
            snn.NormConstrainedLinear,
            {"in_features": 4, "out_features": 3},
            {
                "in_features": bad_int(1),
                "out_features": bad_int(1),
                "bias": bad_bool(),
                "bound": bad_choice(("exact", "power")),
            },
        )
    )

    # structnets.models
    add(
        _cases(
            "models.mlp",
            models.mlp,
            {"in_features": 5, "out_features": 2, "width": 8, "depth": 2},
            {
                "in_features": bad_int(1),
                "out_features": bad_int(1),
                "width": bad_int(1),
                "depth": bad_int(1),
                "activation": bad_choice(tuple(snn.ACTIVATIONS)),
                "bottleneck": st.one_of(
                    st.integers(-5, 0),
                    st.integers(9, 100),
                    st.floats(min_value=1.0001, max_value=1e9),
                    NON_FINITE,
                    st.booleans(),
                    st.sampled_from(["1/3", "", [1]]),
                ),
            },
        )
    )
    add(
        _cases(
            "models.bottleneck_width",
            models.bottleneck_width,
            {"width": 9, "bottleneck": 1 / 3},
            {
                "width": bad_int(1, huge=False),
                "bottleneck": st.one_of(
                    st.integers(-5, 0),
                    st.integers(10, 100),
                    st.floats(min_value=1.0001, max_value=1e9),
                    st.floats(max_value=0.0),
                    NON_FINITE,
                    st.booleans(),
                    NOT_A_NUMBER,
                ),
            },
        )
    )
    add(
        _cases(
            "models.dlor_mlp",
            models.dlor_mlp,
            {"in_features": 2, "out_features": 1, "width": 4, "depth": 2, "rank": 1},
            {
                "in_features": bad_int(1),
                "out_features": bad_int(1),
                "width": bad_int(2),
                "depth": bad_int(1),
                "rank": bad_int(1, 3),
                "mode": bad_choice(("deep", "parallel", "summed")),
                "activation": bad_choice(tuple(snn.ACTIVATIONS)),
            },
        )
    )
    add(
        _cases(
            "models.dlor_mlp[summed]",
            models.dlor_mlp,
            {"in_features": 2, "out_features": 1, "width": 4, "depth": 2, "rank": 1, "mode": "summed"},
            {"branches": bad_int(1), "depth": bad_int(1)},
        )
    )
    add(
        _cases(
            "models.dlor_parameter_count",
            models.dlor_parameter_count,
            {"width": 4, "depth": 2, "rank": 1},
            {
                "width": bad_int(2, huge=False),
                "depth": bad_int(1, huge=False),
                "rank": bad_int(1, 3, huge=False),
                "mode": bad_choice(("deep", "parallel", "summed")),
                "branches": bad_int(1, huge=False),
            },
        )
    )
    add(
        _cases(
            "models.rank_one_mlp",
            models.rank_one_mlp,
            {"in_features": 3, "out_features": 2, "width": 4, "depth": 2},
            {
                "in_features": bad_int(1),
                "out_features": bad_int(1),
                "width": bad_int(1),
                "depth": bad_int(1),
                "activation": bad_choice(tuple(snn.ACTIVATIONS)),
            },
        )
    )
    add(
        _cases(
            "models.lipschitz_resnet",
            models.lipschitz_resnet,
            {"in_features": 2, "out_features": 2, "width": 4, "depth": 2},
            {
                "in_features": bad_int(1),
                "out_features": bad_int(1),
                "width": bad_int(1),
                "depth": bad_int(1),
                "variant": bad_choice(("gradient-step", "fixed-width", "unconstrained")),
                "step": bad_real(0.0, 2.0, low_open=True),
                "learnable_step": bad_bool(),
                "bound": bad_choice(("exact", "power")),
                "maxmin": bad_bool(),
            },
        )
    )

    # structnets.training
    fit_valid = {"model": REGRESSOR, "X": X20, "y": Y20, "epochs": 1}
    add(
        _cases(
            "training.fit",
            training.fit,
            fit_valid,
            {
                "model": NOT_A_MODEL,
                "X": bad_matrix(20, 3),
                "y": st.one_of(
                    bad_matrix(20, 1, allow_any_shape=True), st.just(Y20.reshape(20, 1, 1)), st.just(Y20[:7])
                ),
                "loss": bad_choice(("mse", "cross_entropy")),
                "epochs": bad_int(1),
                "batch_size": bad_int(1, huge=False, none_ok=True),
                "lr": bad_real(0.0, low_open=True),
                "weight_decay": bad_real(0.0),
                "optimizer": bad_choice(("adam", "adamw", "sgd")),
                "validation_fraction": bad_real(0.0, 1.0, high_open=True),
                "patience": bad_int(1, huge=False, none_ok=True),
                "min_delta": bad_real(0.0),
                "seed": bad_int(0, 2**63 - 1, huge=False),
                "callback": st.sampled_from([3, "print", [print]]),
                "validation_data": st.sampled_from(
                    [(X20,), X20, (X20[:, :2], Y20), (X20, Y20.reshape(20, 1, 1)), "xy"]
                ),
            },
        )
    )
    add(
        _cases(
            "training.fit[cross_entropy]",
            training.fit,
            {**fit_valid, "model": CLASSIFIER, "y": LABELS20, "loss": "cross_entropy"},
            {
                "y": st.sampled_from(
                    [
                        LABELS20 + 0.5,
                        LABELS20 + 3,
                        LABELS20 - 1,
                        LABELS20.reshape(20, 1),
                        np.full(20, np.nan),
                        LABELS20.astype(str),
                    ]
                )
            },
        )
    )
    add(
        _cases(
            "training.evaluate",
            training.evaluate,
            {"model": REGRESSOR, "X": X20, "y": Y20},
            {
                "model": NOT_A_MODEL,
                "X": bad_matrix(20, 3),
                "y": st.one_of(
                    bad_matrix(20, 1, allow_any_shape=True), st.just(Y20.reshape(20, 1, 1)), st.just(Y20[:7])
                ),
                "loss": bad_choice(("mse", "cross_entropy")),
            },
        )
    )
    add(
        _cases(
            "training.evaluate[cross_entropy]",
            training.evaluate,
            {"model": CLASSIFIER, "X": X20, "y": LABELS20, "loss": "cross_entropy"},
            {
                "y": st.sampled_from(
                    [LABELS20 + 0.5, LABELS20 + 3, LABELS20 - 1, LABELS20.reshape(20, 1), np.full(20, np.nan)]
                )
            },
        )
    )
    logits = torch.randn(6, 3)
    add(
        _cases(
            "training.cross_entropy",
            training.cross_entropy,
            {"output": logits, "target": torch.arange(6) % 3},
            {
                "output": st.sampled_from([None, np.ones((6, 3)), torch.ones(6), torch.ones(6, 1), torch.ones(5, 3)]),
                "target": st.sampled_from(
                    [
                        None,
                        np.arange(6) % 3,
                        torch.rand(6),
                        torch.arange(6) + 3,
                        -torch.ones(6, dtype=torch.long),
                        torch.zeros(6, 3, dtype=torch.long),
                        torch.arange(4),
                        torch.ones(6, dtype=torch.bool),
                    ]
                ),
            },
        )
    )
    add(
        _cases(
            "training.mse",
            training.mse,
            {"output": torch.ones(6, 1), "target": torch.zeros(6, 1)},
            {
                "output": st.sampled_from([None, np.ones((6, 1)), "x"]),
                "target": st.sampled_from(
                    [None, np.zeros((6, 1)), torch.zeros(6), torch.zeros(6, 6), torch.zeros(5, 1), torch.zeros(6, 1, 1)]
                ),
            },
        )
    )
    add(
        _cases(
            "training.get_loss",
            training.get_loss,
            {"name": "mse"},
            {"name": bad_choice(("mse", "cross_entropy"))},
            names={"name": ("loss", "name")},
        )
    )
    add(_cases("training.seeded", _seeded, {"seed": 0}, {"seed": bad_int(0, 2**63 - 1, huge=False)}))

    # structnets.estimators (parameters checked by fit, as scikit-learn requires)
    add(
        _cases(
            "estimators.MLPClassifier.fit",
            _clf_fit,
            {},
            {
                **ESTIMATOR_PARAMS,
                "X": bad_matrix(20, 3),
                "y": st.sampled_from([np.zeros(20), np.full(20, np.nan), LABELS20[:5], np.ones((20, 2, 2))]),
            },
        )
    )
    add(
        _cases(
            "estimators.MLPRegressor.fit",
            _reg_fit,
            {},
            {
                **ESTIMATOR_PARAMS,
                "standardize_target": bad_bool(),
                "X": bad_matrix(20, 3),
                "y": st.sampled_from([np.full(20, np.nan), np.full(20, np.inf), Y20[:5], np.array(["a"] * 20)]),
            },
        )
    )

    fitted = MLPRegressor(epochs=1, width=4, depth=1).fit(X20, Y20)
    add(
        _cases(
            "estimators.MLPRegressor.predict",
            fitted.predict,
            {"X": X20},
            {"X": st.one_of(bad_matrix(20, 3), st.just(np.ones((5, 4))))},
        )
    )
    fitted_clf = MLPClassifier(epochs=1, width=4, depth=1).fit(X20, LABELS20)
    add(
        _cases(
            "estimators.MLPClassifier.predict_proba",
            fitted_clf.predict_proba,
            {"X": X20},
            {"X": st.one_of(bad_matrix(20, 3), st.just(np.ones((5, 4))))},
        )
    )

    # structnets.data (generators)
    add(
        _cases(
            "data.make_sawtooth",
            data.make_sawtooth,
            {"n": 5},
            {
                "n": bad_int(1),
                "dim": bad_int(1),
                "teeth": st.one_of(bad_int(1, 2**40, huge=False), st.sampled_from([2**63, 10**30])),
                "seed": bad_int(0, huge=False),
                "grid": bad_bool(),
            },
        )
    )
    add(
        _cases(
            "data.make_sawtooth[grid]", data.make_sawtooth, {"n": 5, "grid": True}, {"n": bad_int(1), "dim": bad_int(1)}
        )
    )
    add(
        _cases(
            "data.sawtooth",
            data.sawtooth,
            {"x": X20, "teeth": 2},
            {
                "x": bad_matrix(20, 3, empty_ok=True),
                "teeth": st.one_of(bad_int(1, 2**40, huge=False), st.sampled_from([2**63, 10**30])),
            },
        )
    )
    add(
        _cases(
            "data.make_moons",
            data.make_moons,
            {"n_samples": 40},
            {
                "n_samples": bad_int(4),
                "noise": bad_real(0.0),
                "train_fraction": bad_real(0.0, 1.0, low_open=True, high_open=True),
                "seed": bad_int(0, 2**32 - 1, huge=False),
            },
        )
    )
    add(
        _cases(
            "data.power_target",
            data.power_target,
            {"d": 2, "beta": 1.5},
            {"d": bad_int(1, huge=False), "beta": st.one_of(bad_real(0.0, low_open=True), st.sampled_from([2.0, 4.0]))},
        )
    )
    add(
        _cases(
            "data.sine_target",
            data.sine_target,
            {"d": 2, "beta": 1.5},
            {"d": bad_int(1, huge=False), "beta": bad_real(0.0, low_open=True), "omega": bad_real(0.0, low_open=True)},
        )
    )
    add(
        _cases(
            "data.lacunary_target",
            data.lacunary_target,
            {"d": 2, "s": 1.5},
            {
                "d": bad_int(1),
                "s": bad_real(0.0, low_open=True),
                "levels": bad_int(1),
                "seed": bad_int(0, huge=False),
                "directions": bad_choice(("one", "dense")),
            },
        )
    )
    add(
        _cases(
            "data.SmoothTarget.sample",
            _sample,
            {},
            {"n": bad_int(1), "noise": bad_real(0.0), "seed": bad_int(0, huge=False)},
        )
    )
    add(
        _cases(
            "data.SmoothTarget.__call__",
            lambda x: data.sine_target(2, 1.5)(x),
            {"x": torch.ones(4, 2)},
            {"x": st.sampled_from([None, "x", np.ones((4, 2)), torch.ones(4), torch.ones(4, 3), torch.ones(4, 2, 1)])},
        )
    )
    add(_cases("data.check_finite", data.check_finite, {"X": X20}, {"X": bad_matrix(20, 3)}))
    add(
        _cases(
            "data.load",
            data.load,
            {"name": "iris"},
            {
                "name": st.one_of(st.sampled_from(["IRIS ", "mnist2", "", "../iris"]), st.integers(), st.none()),
                "download": bad_bool(),
            },
        )
    )

    # structnets.analysis
    add(
        _cases(
            "analysis.jacobian_spectral_norms",
            analysis.jacobian_spectral_norms,
            {"model": REGRESSOR, "inputs": X20},
            {"model": NOT_CALLABLE, "inputs": st.one_of(bad_matrix(20, 3), st.just(np.ones((20, 5))))},
        )
    )
    add(
        _cases(
            "analysis.lipschitz_lower_bound",
            analysis.lipschitz_lower_bound,
            {"model": REGRESSOR, "inputs": X20, "steps": 2, "pairs": 4},
            {
                "model": NOT_CALLABLE,
                "inputs": st.one_of(bad_matrix(20, 3), st.just(np.ones((20, 5)))),
                "steps": bad_int(0),
                "lr": bad_real(0.0, low_open=True),
                "pairs": bad_int(1),
                "seed": bad_int(0, 2**63 - 1, huge=False),
            },
        )
    )
    add(
        _cases(
            "analysis.certified_accuracy",
            analysis.certified_accuracy,
            {"logits": LOGITS, "labels": torch.arange(10) % 3, "eps": 0.1},
            {
                "logits": st.one_of(bad_matrix(10, 3, allow_any_shape=True), st.just(np.ones((10, 3, 2)))),
                "labels": st.sampled_from(
                    [
                        torch.rand(10),
                        torch.arange(10) + 3,
                        -torch.ones(10, dtype=torch.long),
                        torch.zeros(10, 2, dtype=torch.long),
                        np.array(["a"] * 10),
                        torch.full((10,), math.nan),
                        torch.arange(4),
                    ]
                ),
                "eps": bad_real(0.0),
                "lipschitz": bad_real(0.0, low_open=True),
            },
        )
    )
    add(
        _cases(
            "analysis.lipschitz_upper_bound",
            analysis.lipschitz_upper_bound,
            {"model": REGRESSOR},
            {"model": NOT_A_MODEL},
        )
    )
    matrix = torch.from_numpy(_RNG.standard_normal((5, 4)))
    add(
        _cases(
            "analysis.schatten_norm",
            analysis.schatten_norm,
            {"matrix": matrix, "p": 2.0},
            {
                "matrix": bad_matrix(5, 4),
                "p": bad_real(0.0, low_open=True).filter(lambda v: v != math.inf),
                "power": bad_bool(),
            },
        )
    )
    for name in ("stable_rank", "effective_rank", "singular_values", "numerical_rank"):
        add(_cases(f"analysis.{name}", getattr(analysis, name), {"matrix": matrix}, {"matrix": bad_matrix(5, 4)}))
    add(
        _cases(
            "analysis.cost",
            analysis.cost,
            {"model": REGRESSOR, "input_shape": (3,)},
            {
                "model": NOT_A_MODEL,
                "input_shape": st.sampled_from([(-1,), (0,), "3", (3.5,), (True,), (), (4,), (10**30,)]),
                "strict": bad_bool(),
            },
        )
    )
    add(
        _cases(
            "analysis.minimax_exponent",
            analysis.minimax_exponent,
            {"s": 1.0, "d": 2},
            {"s": bad_real(0.0, low_open=True), "d": bad_int(1, huge=False)},
        )
    )
    add(
        _cases(
            "analysis.loglog_slope",
            analysis.loglog_slope,
            {"x": [1.0, 2.0, 4.0, 8.0], "y": [1.0, 0.5, 0.25, 0.125], "n_boot": 100},
            {
                "x": st.sampled_from([[1.0, -2.0, 4.0, 8.0], [1.0, math.nan, 4.0, 8.0], "abc", [1.0, 2.0]]),
                "n_boot": bad_int(100),
                "level": bad_real(0.0, 1.0, low_open=True, high_open=True),
                "seed": bad_int(0, huge=False),
            },
        )
    )
    add(
        _cases(
            "analysis.spectral_bound",
            analysis.spectral_bound,
            {"matrices": [matrix], "n": 100, "margin": 1.0, "input_norm": 1.0},
            {
                "n": bad_int(1, huge=False),
                "margin": bad_real(0.0, low_open=True),
                "input_norm": bad_real(0.0, low_open=True),
                "delta": bad_real(0.0, 1.0, low_open=True, high_open=True),
            },
        )
    )

    # structnets.functional
    add(
        _cases(
            "functional.spectral_norm_bound",
            functional.spectral_norm_bound,
            {"weight": matrix},
            {"weight": bad_matrix(5, 4), "method": bad_choice(("exact", "power")), "iters": bad_int(1)},
        )
    )

    # structnets (top level: compress, export)
    def _compress(**kw: Any) -> Any:
        torch.manual_seed(0)
        return structnets.compress(models.mlp(4, 3, 6, 2), **kw)

    not_patterns = st.sampled_from([3, 1.5, True, [1], ["a", 2], (None,), b"enc*", {"a": 1}, object()])
    add(
        _cases(
            "compress",
            _compress,
            {"rank": 1},
            {
                "method": bad_choice(("lowrank", "dlor")),
                "rank": bad_int(1, huge=False, none_ok=True),
                "min_params": bad_int(0, huge=False),
                "include": not_patterns,
                "exclude": not_patterns,
                "inplace": bad_bool(),
            },
        )
    )
    add(
        _cases(
            "compress[ratio]",
            _compress,
            {"ratio": 0.5},
            {"ratio": bad_real(0.0, 1.0, low_open=True).filter(lambda v: v is not None)},
        )
    )
    add(
        _cases(
            "compress[energy]",
            _compress,
            {"energy": 0.9},
            {"energy": bad_real(0.0, 1.0, low_open=True).filter(lambda v: v is not None)},
        )
    )
    add(
        _cases(
            "compress[model]",
            structnets.compress,
            {"model": REGRESSOR, "rank": 1, "min_params": 0},
            {"model": NOT_A_MODEL},
        )
    )
    add(_cases("export", structnets.export, {"model": REGRESSOR}, {"model": NOT_A_MODEL}))

    # structnets.nn.OrthogonalLinear
    add(
        _cases(
            "nn.OrthogonalLinear",
            snn.OrthogonalLinear,
            {"in_features": 4, "out_features": 3},
            {"in_features": bad_int(1), "out_features": bad_int(1), "bias": bad_bool()},
        )
    )

    # structnets.analysis (bound calculators)
    bound_valid = {
        "matrices": [matrix, torch.from_numpy(_RNG.standard_normal((2, 5)))],
        "n": 100,
        "margin": 1.0,
        "input_norm": 1.0,
    }
    bad_matrices = st.sampled_from(
        [
            None,
            "abc",
            3.0,
            [],
            [np.ones((3, 3)), "x"],
            [torch.ones(5)],
            [torch.full((5, 4), math.nan)],
            [matrix, torch.ones(2, 3)],
            [torch.ones(5, 4, 2)],
        ]
    )
    common_bound_args = {
        "matrices": bad_matrices,
        "n": bad_int(2, huge=False),
        "margin": bad_real(0.0, low_open=True),
        "input_norm": bad_real(0.0, low_open=True),
        "empirical_risk": bad_real(0.0, 1.0),
        "delta": bad_real(0.0, 1.0, low_open=True, high_open=True),
        "lipschitz": bad_real(0.0, low_open=True),
        "sample_target": bad_real(0.0, 8.0, low_open=True, high_open=True),
    }
    add(
        _cases(
            "analysis.parameter_count_bound",
            analysis.parameter_count_bound,
            bound_valid,
            {
                **common_bound_args,
                "data_norm": bad_real(0.0, low_open=True).filter(lambda v: v is not None),
                "allocation": bad_choice(("optimal", "equal")),
                "factor_ranks": st.sampled_from(
                    ["1", 3, [1], [None, None, None], [0, None], [1.5, None], [True, None], [-1, None]]
                ),
            },
        )
    )
    add(
        _cases(
            "analysis.rank_sparse_bound",
            analysis.rank_sparse_bound,
            {**bound_valid, "p": 1.0},
            {
                **common_bound_args,
                "p": bad_real(0.0).filter(lambda v: v is not None),
                "data_norm": bad_real(0.0, low_open=True).filter(lambda v: v is not None),
                "tail_covering": bad_choice(("maurey", "truncate")),
                "allocation": bad_choice(("optimal", "equal")),
            },
        )
    )
    pac_args = {k: v for k, v in common_bound_args.items()}
    add(_cases("analysis.pac_bayes_bound", analysis.pac_bayes_bound, bound_valid, pac_args))
    add(
        _cases(
            "analysis.dudley_entropy_bound",
            analysis.dudley_entropy_bound,
            {"log_covering": lambda eps: 1.0, "n": 100},
            {
                "log_covering": st.sampled_from(
                    [None, 3, "log", lambda eps: math.nan, lambda eps: -1.0, lambda eps: "a"]
                ),
                "n": bad_int(1, huge=False),
            },
        )
    )
    add(
        _cases(
            "analysis.schatten_ball_log_covering",
            analysis.schatten_ball_log_covering,
            {"rows": 5, "cols": 4, "relative_radius": 0.5, "p": 1.0, "relative_schatten_power": 2.0},
            {
                "rows": bad_int(1, huge=False),
                "cols": bad_int(1, huge=False),
                "relative_radius": bad_real(0.0, low_open=True),
                "p": bad_real(0.0).filter(lambda v: v is not None),
                "relative_schatten_power": bad_real(0.0, low_open=True).filter(lambda v: v is not None),
                "tail_covering": bad_choice(("maurey", "truncate")),
            },
        )
    )
    add(
        _cases(
            "analysis.schatten_ball_log_covering[p=0]",
            analysis.schatten_ball_log_covering,
            {"rows": 5, "cols": 4, "relative_radius": 0.5, "p": 0.0, "relative_schatten_power": 2},
            {
                "relative_schatten_power": st.one_of(
                    bad_int(0, 4, huge=False).filter(lambda v: v is not None and not isinstance(v, float)),
                    st.sampled_from([math.nan, "2", None]),
                )
            },
        )
    )
    targets10 = torch.arange(10) % 3
    add(
        _cases(
            "analysis.margins",
            analysis.margins,
            {"outputs": LOGITS, "targets": targets10},
            {
                "outputs": st.one_of(bad_matrix(10, 3), st.just(torch.ones(10, 1)), st.just(torch.ones(7, 3))),
                "targets": st.sampled_from(
                    [
                        None,
                        "abc",
                        torch.rand(10),
                        targets10 + 3,
                        -torch.ones(10, dtype=torch.long),
                        torch.zeros(10, 2, dtype=torch.long),
                        torch.arange(4),
                        torch.full((10,), math.nan),
                    ]
                ),
            },
        )
    )
    add(
        _cases(
            "analysis.margin_loss",
            analysis.margin_loss,
            {"margin_values": torch.linspace(-1, 2, 10), "margin": 0.5},
            {
                "margin_values": st.sampled_from(
                    [None, "abc", torch.ones(5, 2), torch.tensor([1.0, math.nan]), torch.empty(0), np.array(["a", "b"])]
                ),
                "margin": bad_real(0.0, low_open=True),
            },
        )
    )
    hidden = torch.from_numpy(_RNG.standard_normal((10, 4)))
    add(
        _cases(
            "analysis.bottleneck_rank",
            analysis.bottleneck_rank,
            {"activations": [hidden, hidden]},
            {
                "activations": st.one_of(
                    bad_matrix(10, 4), st.sampled_from([[], [hidden, "x"], [torch.ones(3)], [None]])
                ),
                "rtol": bad_real(0.0, 1.0, high_open=True),
                "center": bad_bool(),
            },
        )
    )
    add(
        _cases(
            "analysis.spectrum_table",
            analysis.spectrum_table,
            {"source": REGRESSOR},
            {
                "source": st.sampled_from([None, 3, 1.5, np.ones((2, 2)), {"w": "x"}, [REGRESSOR]]),
                "ps": st.sampled_from([None, 2.0, "2", [0.0], [-1.0], [math.nan], [math.inf], ["a"], [True]]),
                "rtol": bad_real(0.0, 1.0, high_open=True),
                "top": bad_int(1, huge=False),
                "as_frame": bad_bool(),
            },
        )
    )
    xs = np.linspace(0.0, 1.0, 12)
    add(
        _cases(
            "analysis.piecewise_linear_floor",
            analysis.piecewise_linear_floor,
            {"x": xs, "y": xs**2, "max_pieces": 3},
            {
                "x": st.sampled_from(
                    [None, "abc", xs[:5], np.ones((12, 2)), np.full(12, math.nan), np.array(["a"] * 12), np.empty(0)]
                ),
                "y": st.sampled_from(
                    [None, "abc", xs[:5], np.ones((12, 2)), np.full(12, math.inf), np.array(["a"] * 12)]
                ),
                "max_pieces": bad_int(1),
            },
        )
    )
    add(
        _cases(
            "analysis.relu_piece_bound",
            analysis.relu_piece_bound,
            {"widths": [3, 4]},
            {"widths": st.sampled_from([None, 3, "34", [], [0], [-1, 2], [1.5], [True], [3, None], ["a"]])},
        )
    )
    for name in ("relu_depth_cap_exponent", "relu_estimation_exponent"):
        add(
            _cases(
                f"analysis.{name}",
                getattr(analysis, name),
                {"s": 2.0, "d": 1, "weight_layers": 2},
                {
                    "s": bad_real(0.0, low_open=True),
                    "d": bad_int(1, huge=False),
                    "weight_layers": bad_int(2, huge=False),
                },
            )
        )
    for name in ("factor_ranks", "stored_parameters", "dense_matrices"):
        add(_cases(f"analysis.{name}", getattr(analysis, name), {"model": REGRESSOR}, {"model": NOT_A_MODEL}))

    # structnets.functional (certified rounding)
    bad_dtype = st.sampled_from([None, "float32", 3, np.float32, torch.int64, torch.bool, torch.complex64])
    add(
        _cases(
            "functional.power_iteration",
            functional.power_iteration,
            {"weight": matrix.clone(), "vector": torch.ones(4, dtype=torch.float64) / 2},
            # non-finite entries are not ruled out (the estimate is for monitoring): only non-matrices here
            {
                "weight": st.sampled_from(
                    [
                        None,
                        "abc",
                        3.0,
                        object(),
                        np.ones((5, 4)),
                        torch.ones(5),
                        torch.ones(5, 4, 2),
                        torch.ones(5, 4, dtype=torch.int64),
                    ]
                ),
                "vector": st.sampled_from(
                    [
                        None,
                        "v",
                        np.ones(4),
                        torch.ones(5, dtype=torch.float64),
                        torch.ones(4, 1, dtype=torch.float64),
                        torch.ones(4, dtype=torch.float32),
                    ]
                ),
                "iters": bad_int(1),
            },
        )
    )
    add(
        _cases(
            "functional.squared_norm_bound",
            functional.squared_norm_bound,
            {"weight": matrix},
            {
                "weight": st.sampled_from(
                    [
                        None,
                        "abc",
                        3.0,
                        np.ones((5, 4)),
                        torch.ones(5),
                        torch.ones(5, 4, 2),
                        torch.ones(5, 4, dtype=torch.int64),
                        torch.ones(5, 4, dtype=torch.complex64),
                    ]
                ),
                "method": bad_choice(functional.BOUNDS),
                "iters": bad_int(1),
            },
        )
    )
    square_q = torch.tensor(4.0, dtype=torch.float64)
    add(
        _cases(
            "functional.tau_round_down",
            functional.tau_round_down,
            {"step": 1.0, "square": square_q, "dtype": torch.float32},
            {
                "step": bad_real(0.0, 2.0),
                "square": st.sampled_from(
                    [None, "q", 4.0, torch.tensor(-1.0, dtype=torch.float64), torch.tensor(4.0, dtype=torch.float32)]
                ),
                "dtype": bad_dtype,
            },
        )
    )
    for name in ("round_up", "round_down"):
        add(
            _cases(
                f"functional.{name}",
                getattr(functional, name),
                {"value": torch.tensor([0.1, 3.0], dtype=torch.float64), "dtype": torch.float32},
                {
                    "value": st.sampled_from(
                        [None, "v", 0.1, np.array([0.1]), torch.tensor([0.1], dtype=torch.float32)]
                        + ([torch.tensor([-1.0], dtype=torch.float64)] if name == "round_down" else [])
                    ),
                    "dtype": bad_dtype,
                },
            )
        )

    not_a_matrix = st.sampled_from(
        [
            None,
            "abc",
            3.0,
            object(),
            np.ones((5, 4)),
            torch.ones(5),
            torch.ones(5, 4, 2),
            torch.ones(5, 4, dtype=torch.int64),
        ]
    )
    add(
        _cases(
            "functional.spectral_norm_exact",
            functional.spectral_norm_exact,
            {"weight": matrix},
            {"weight": not_a_matrix},
        )
    )
    add(
        _cases(
            "functional.top_right_singular_vector",
            functional.top_right_singular_vector,
            {"weight": matrix},
            {"weight": not_a_matrix},
        )
    )
    add(
        _cases(
            "functional.power_estimate",
            functional.power_estimate,
            {"weight": matrix, "vector": torch.ones(4, dtype=torch.float64) / 2},
            {
                "weight": not_a_matrix,
                "vector": st.sampled_from(
                    [None, "v", 3.0, torch.ones(5, dtype=torch.float64), torch.ones(4, 2, dtype=torch.float64)]
                ),
            },
        )
    )
    add(
        _cases(
            "functional.sqrt_round_up",
            functional.sqrt_round_up,
            {"square": square_q, "dtype": torch.float32},
            # a negative float64 square gives NaN, as documented: only wrong types here
            {"square": st.sampled_from([None, "q", 4.0, torch.tensor(4.0, dtype=torch.float32)]), "dtype": bad_dtype},
        )
    )
    add(
        _cases(
            "functional.certificate_method",
            functional.certificate_method,
            {"layer_bound": "exact"},
            {"layer_bound": bad_choice(functional.LAYER_BOUNDS)},
        )
    )
    add(
        _cases(
            "nn.UnconstrainedResidual",
            snn.UnconstrainedResidual,
            {"features": 3, "hidden": 4},
            {"features": bad_int(1), "hidden": bad_int(1)},
        )
    )
    add(
        _cases(
            "models.export_model",
            models.export_model,
            {"model": nn.Sequential(nn.Linear(2, 2))},
            {"model": NOT_A_MODEL},
        )
    )
    add(_cases("analysis.linear_layers", analysis.linear_layers, {"model": REGRESSOR}, {"model": NOT_A_MODEL}))
    add(
        _cases(
            "analysis.hidden_representations",
            analysis.hidden_representations,
            {"model": nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1)), "inputs": torch.ones(5, 3)},
            {"model": NOT_A_MODEL, "inputs": st.sampled_from([None, "x", 3.0, torch.ones(5, 7), torch.ones(5)])},
        )
    )
    add(
        _cases(
            "analysis.rank_sparse_bounds",
            analysis.rank_sparse_bounds,
            bound_valid,
            {
                **common_bound_args,
                "ps": st.sampled_from([None, 2.0, "2", [-1.0], [math.nan], ["a"], [True]]),
                "tail_covering": bad_choice(("maurey", "truncate")),
                "allocation": bad_choice(("optimal", "equal")),
            },
        )
    )
    add(
        _cases(
            "analysis.format_spectrum_table",
            analysis.format_spectrum_table,
            {"table": analysis.spectrum_table(REGRESSOR)},
            {"table": st.sampled_from([None, "abc", 3, [], [1, 2], [None]])},
        )
    )
    add(
        _cases(
            "analysis.register_counter",
            analysis.register_counter,
            {"module_type": nn.Identity, "counter": lambda m, x, y: None},
            {
                "module_type": st.sampled_from([None, "Linear", 3, nn.Linear(2, 2), int]),
                "counter": st.sampled_from([None, "f", 3]),
            },
        )
    )
    add(_cases("data.data_dir", data.data_dir, {"data_dir": None}, {"data_dir": st.sampled_from([3, 1.5, object()])}))
    add(_cases("data.verify", data.verify, {"data_dir": None}, {"data_dir": st.sampled_from([3, 1.5, object()])}))

    # structnets.data (generators)
    add(
        _cases(
            "data.triangle_wave",
            data.triangle_wave,
            {"t": np.linspace(0.0, 2.0, 9)},
            {"t": st.sampled_from([None, "abc", object(), np.array(["a", "b"]), np.ones(3, dtype=complex)])},
        )
    )
    return cases


def _all_cases() -> list[Case]:
    # The later table imports the strategies above, so it is imported only once they exist.
    from .cases_more import build_more_cases

    return build_cases() + build_more_cases()


CASES = _all_cases()

ELSEWHERE = (
    # analysis/lipschitz.py, owned by another helper in this session
    "analysis.lipschitz_upper_bound",
    "analysis.jacobian_spectral_norms",
    "analysis.lipschitz_lower_bound",
    "analysis.certified_accuracy",
)
"""Entry points whose files this suite's authors do not own: ``measure.py`` reports them apart
(with ``cases_more.ELSEWHERE_MORE``; the split ``measure.py`` prints follows it)."""


def elsewhere(case: Case) -> bool:
    from .cases_more import ELSEWHERE_MORE

    return case.entry.startswith(ELSEWHERE + ELSEWHERE_MORE)


def _naming_policy() -> dict[str, str]:
    from .cases_more import NAMING_POLICY

    return dict(NAMING_POLICY)


NAMING_POLICY: dict[str, str] = _naming_policy()
"""``entry:arg`` -> the pattern a refusal names the value or entry by instead of the argument (``cases_more``)."""


# -- running one call and naming its outcome ---------------------------------------------------


EXAMPLES = int(os.environ.get("STRUCTNETS_PROPERTY_EXAMPLES", "30"))
"""Generated values per case; the whole suite draws about ``EXAMPLES × len(CASES)`` bad calls."""

settings.register_profile(
    "bad-input",
    max_examples=EXAMPLES,
    deadline=None,  # a loaded CI machine must not turn a slow call into a failure
    derandomize=True,  # the same values on every run, so CI is reproducible
    database=None,
    # No shrinking: shrinking a refused 10**30 towards smaller counts would try sizes (10**9, ...)
    # that a function without a limit then really allocates; the drawn value is reported as is.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
BAD_INPUT = settings.get_profile("bad-input")

CALL_TIMEOUT_S = 30
"""A call still running after this long counts as a hang (refusal is meant to be immediate)."""


class _Hang(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Hang


def names_argument(message: str, names: tuple[str, ...]) -> bool:
    """Whether ``message`` names one of ``names`` as an argument (`name`, `name[i]`, 'name' or name=)."""
    return any(f"`{n}`" in message or f"`{n}[" in message or f"'{n}'" in message or f"{n}=" in message for n in names)


def outcome(case: Case, value: Any) -> tuple[str, str]:
    """Call ``case`` with ``value`` and classify: clear, unnamed, other-error, accepted or hang."""
    kwargs = {**case.valid, case.arg: value}
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CALL_TIMEOUT_S)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = case.call(kwargs)
    except _Hang:
        return "hang", f"{case.id}={value!r:.80} still running after {CALL_TIMEOUT_S} s"
    except (ValueError, TypeError) as error:
        message = str(error)
        if names_argument(message, case.accepted_names()):
            return "clear", message
        if case.id in NAMING_POLICY and re.search(NAMING_POLICY[case.id], message):
            return "clear", message  # named by its value or entry, by policy
        return "unnamed", f"{case.id}={value!r:.80} raised {type(error).__name__} not naming it: {message[:300]}"
    except Exception as error:  # noqa: BLE001  (any other type is the finding)
        return "other-error", f"{case.id}={value!r:.80} raised {type(error).__name__}: {str(error)[:300]}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return "accepted", f"{case.id}={value!r:.80} was accepted and returned {type(result).__name__}"
