"""Cases for the public names added after the first table: new layers, training helpers and
schedules, certification, balance, constructions, atomic writes, the experiment protocol, claims.

Imported by ``strategies.build_cases`` (after the shared strategies are defined), so every case
here runs in ``test_bad_input.py`` and is counted by ``measure.py`` like the others.
"""

from __future__ import annotations

import atexit
import math
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from hypothesis import strategies as st
from torch import nn

import structnets.analysis as analysis
import structnets.analysis.balance as balance
import structnets.atomic_io as atomic_io
import structnets.claims as claims
import structnets.constructive as constructive
import structnets.data as data
import structnets.models as models
import structnets.nn as snn
import structnets.protocol as protocol
import structnets.runner as runner
import structnets.runner.resolve as resolve
import structnets.training as training
import structnets.training.lbfgs as lbfgs
import structnets.training.levenberg_marquardt as levenberg_marquardt
import structnets.training.seed_batched as seed_batched
from structnets.models.batched_dlor import build_batched
from structnets.models.ensemble_mlp import EnsembleMLP

from .strategies import (
    NOT_A_MODEL,
    Case,
    _cases,
    bad_bool,
    bad_choice,
    bad_int,
    bad_matrix,
    bad_real,
)

_RNG = np.random.default_rng(1)
X12 = _RNG.random((12, 3))
Y12 = _RNG.random(12)
LABELS12 = np.arange(12) % 3
SCRATCH = Path(tempfile.mkdtemp(prefix="structnets-property-"))
"""Folder the atomic writers, the toy run and the checkpoints write into; removed at exit."""
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)

NOT_A_PATH = st.sampled_from([None, 3, 1.5, object(), ["a"], ""])
NOT_A_CALLABLE = st.sampled_from([None, "f", 3, np.ones(2)])
BAD_DTYPE = st.sampled_from([None, "float64", 3, np.float64, torch.int64, torch.bool, torch.complex64])


def _regressor(in_features: int = 3, out_features: int = 1) -> nn.Module:
    torch.manual_seed(0)
    return models.mlp(in_features, out_features, 4, 1)


def _ensemble(**kw: Any) -> Any:
    kw.setdefault("models", [_regressor(), _regressor()])
    return training.train_ensemble(**kw)


def _torch_threads(threads: Any) -> None:
    with training.torch_threads(threads):
        pass


def _set_threads(**kw: Any) -> None:
    previous = torch.get_num_threads()
    try:
        training.set_threads(**kw)
    finally:
        torch.set_num_threads(previous)


def _figure_format(figure_format: Any) -> None:
    with protocol.figure_format_context(figure_format):
        pass


def _quadratic(x: torch.Tensor) -> torch.Tensor:
    return (x**2).sum(-1)


def _fit_shallow(**kw: Any) -> Any:
    return constructive.fit_shallow(
        **{"target": lambda x: x.sum(-1), "in_features": 1, "neurons": 3, "points_per_axis": 8, **kw}
    )


SHALLOW = constructive.fit_shallow(lambda x: x.sum(-1), 1, 3, points_per_axis=8)
PIECES = constructive.lattice_pieces_1d([0.0, 1.0, 2.0], [0.0, 0.5, 0.0])
BAD_PIECES = st.sampled_from(
    [
        None,
        "abc",
        [],
        [[]],
        [[(np.ones(1), 0.0), (np.ones(2), 0.0)]],
        [[(np.array([2.0]), 0.0)]],
        [[(np.array([math.nan]), 0.0)]],
        [[("a", 0.0)]],
        [[3]],
    ]
)


@dataclass(frozen=True)
class _Config:
    seed: int = 0
    widths: tuple[int, ...] = (2, 3)


def _figure() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.figure(figsize=(1, 1))


ELSEWHERE_MORE = (
    "analysis.certify",
    "analysis.certified_radii",
    "constructive.smooth_constant_depth",
    "claims.",
    "models.ensemble_mlp",
    "training.seed_batched",
)
"""Entry points added here whose files this suite's authors did not own when it was written (``measure.py`` splits by it)."""

_EXPERIMENT_BY_VALUE = (
    r"^unknown experiment |^cannot import module .* of experiment spec |^module .* has no attribute .*experiment spec"
    r"|^experiment spec must look like 'module.path:OBJECT'|^experiment is not an experiment: it lacks "
)

NAMING_POLICY: dict[str, str] = {
    # The runner names a bad experiment by its value (`unknown experiment 'nope'; valid names: ...`) and a bad
    # override or saved config by its entry or key (`--set expects key=value, got 'arms'`, `arms` must be an int),
    # not by the Python parameter: these are the messages `structnets run NAME --set KEY=VALUE` and `report`
    # print, and a command-line user never wrote `spec=`, `experiment=` or `assignments=`, so naming what they
    # typed tells them what to fix. Pinned by tests/runner/test_runner_registry.py, tests/runner/test_runner_config.py
    # and tests/cli/test_cli_commands.py. A refusal matching the pattern is clear; any other outcome still fails.
    "runner.resolve_experiment:spec": _EXPERIMENT_BY_VALUE,
    "runner.run:experiment": _EXPERIMENT_BY_VALUE,
    "runner.load_results:experiment": _EXPERIMENT_BY_VALUE,
    "runner.report:experiment": _EXPERIMENT_BY_VALUE,
    "runner.compare_runs:experiment": _EXPERIMENT_BY_VALUE,
    "runner.parse_overrides:assignments": r"^--set expects key=value, got |^`\w+` must |^unknown config key '.*' for \w+",
    "runner.apply_overrides:assignments": r"^--set expects key=value, got |^`\w+` must |^unknown config key '.*' for \w+",
    "runner.config_from_json:data": r"^saved config key '.*' must |^`\w+` must |^saved config has keys .* that \w+ does not",
}
"""``entry:arg`` -> the pattern a refusal's message matches instead of naming the argument, by policy (see above).

An allow-list, not a list of known bugs: every other case must name its argument, and none is expected to fail."""


def _not_3d(value: Any) -> bool:
    # an (n, d, 2) X feeds a model of d inputs (it maps the last axis); the mismatch is then y's
    return not (isinstance(value, np.ndarray) and value.ndim == 3)


def _toy() -> Any:
    """The staged toy experiment of ``tests/runner`` (imported by its folder, as its conftest does)."""
    import sys

    folder = str(Path(__file__).resolve().parents[1] / "runner")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    import toy_experiment

    return toy_experiment


def _set_default_registry(registry: Any) -> None:
    previous = resolve._default_registry
    try:
        runner.set_default_registry(registry)
    finally:
        resolve._default_registry = previous


_RUNS = iter(range(10**9))


def _toy_run(**kw: Any) -> Any:
    kw.setdefault("out_dir", SCRATCH / f"toy-{next(_RUNS)}")
    kw.setdefault("jobs", 1)
    return runner.run(**kw)


def build_more_cases() -> list[Case]:
    cases: list[Case] = []
    add = cases.extend

    # structnets.nn (layers added or moved since the first table)
    add(
        _cases(
            "nn.ZeroPad", snn.ZeroPad, {"in_features": 2, "width": 4}, {"in_features": bad_int(1), "width": bad_int(2)}
        )
    )
    add(
        _cases(
            "nn.ZeroPad.forward",
            lambda input: snn.ZeroPad(2, 4)(input),
            {"input": torch.ones(3, 2)},
            {"input": st.sampled_from([None, "x", 3.0, np.ones((3, 2)), torch.ones(3, 3), torch.ones(2, 3)])},
        )
    )
    add(
        _cases(
            "nn.TakeFirst",
            snn.TakeFirst,
            {"width": 4, "out_features": 2},
            {"width": bad_int(1), "out_features": bad_int(1, 4)},
        )
    )
    add(
        _cases(
            "nn.TakeFirst.forward",
            lambda input: snn.TakeFirst(4, 2)(input),
            {"input": torch.ones(3, 4)},
            {"input": st.sampled_from([None, "x", 3.0, np.ones((3, 4)), torch.ones(3, 3), torch.ones(4, 3)])},
        )
    )
    for name in ("DLoRBranches", "DLoRParallel"):
        extra = {"activation": bad_choice(tuple(snn.ACTIVATIONS))} if name == "DLoRParallel" else {}
        add(
            _cases(
                f"nn.{name}",
                getattr(snn, name),
                {"features": 4, "rank": 1, "branches": 2},
                {
                    "features": bad_int(2),
                    "rank": bad_int(1, 3),
                    "branches": bad_int(1),
                    "bias": bad_bool(),
                    "alpha": bad_real().filter(lambda v: v is not None),
                    **extra,
                },
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
            "nn.PowerClampedResidual",
            snn.PowerClampedResidual,
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
    add(_cases("nn.ResidualExport", snn.ResidualExport, {"body": nn.Linear(2, 2)}, {"body": NOT_A_MODEL}))
    torch.manual_seed(0)
    square_layers = {
        "nn.DLoRBranches.forward": snn.DLoRBranches(4, 1, 2),
        "nn.DLoRParallel.forward": snn.DLoRParallel(4, 1, 2),
        "nn.PowerClampedResidual.forward": snn.PowerClampedResidual(4, 3),
        "nn.UnconstrainedResidual.forward": snn.UnconstrainedResidual(4, 3),
    }
    for entry, layer in square_layers.items():
        add(
            _cases(
                entry,
                lambda input, layer=layer: layer(input),
                {"input": torch.ones(2, 4)},
                {"input": st.sampled_from([None, "x", 3.0, np.ones((2, 4)), torch.ones(2, 3), torch.ones(4, 2)])},
            )
        )

    # structnets.models.ensemble_mlp and structnets.training.seed_batched (seed-batched trainers, public modules)
    ensemble_valid = {
        "activations": ["tanh", "relu"],
        "d": 2,
        "width": 3,
        "depth": 2,
        "generator": torch.Generator().manual_seed(0),
    }
    add(
        _cases(
            "models.ensemble_mlp.EnsembleMLP",
            EnsembleMLP,
            ensemble_valid,
            {
                "activations": st.sampled_from([None, "tanh", [], ["nope"], [3], ("tanh", 3)]),
                "d": bad_int(1),
                "width": bad_int(1),
                "depth": bad_int(2),
                "generator": st.sampled_from([None, 0, "seed", np.random.default_rng(0)]),
                "input_scale": bad_real(0.0, low_open=True),
                "dtype": BAD_DTYPE,
            },
        )
    )
    torch.manual_seed(0)
    batched = build_batched([0, 1], 2, 4, 2, 1, "deep", "tanh")
    Xb, yb = torch.rand(8, 2), torch.rand(8)
    add(
        _cases(
            "training.seed_batched.train_batched",
            seed_batched.train_batched,
            {"net": batched, "X": Xb, "y": yb, "X_test": Xb, "y_test": yb, "epochs": 1, "lr": 0.01, "eval_every": 1},
            {
                "net": NOT_A_MODEL,
                "X": st.one_of(bad_matrix(8, 2), st.just(torch.ones(8, 3))),
                "y": st.sampled_from([None, "y", torch.ones(5), torch.full((8,), math.nan), torch.ones(8, 2)]),
                "X_test": st.one_of(bad_matrix(8, 2), st.just(torch.ones(8, 3))),
                "y_test": st.sampled_from([None, "y", torch.ones(5), torch.full((8,), math.nan)]),
                "epochs": bad_int(1),
                "lr": bad_real(0.0, low_open=True),
                "eval_every": bad_int(1, huge=False),
                "threshold": bad_real(0.0, low_open=True),
                "schedule": bad_choice(("cosine", "constant")),
            },
        )
    )
    add(
        _cases(
            "training.seed_batched.train_dense",
            seed_batched.train_dense,
            {"model": _regressor(2), "X": Xb, "y": yb, "epochs": 1, "lr": 0.01},
            {
                "model": NOT_A_MODEL,
                "X": st.one_of(bad_matrix(8, 2).filter(_not_3d), st.just(torch.ones(8, 3))),
                "y": st.sampled_from([None, "y", torch.ones(5), torch.full((8,), math.nan)]),
                "epochs": bad_int(1),
                "lr": bad_real(0.0, low_open=True),
            },
        )
    )
    add(
        _cases(
            "training.seed_batched.train_vmapped",
            seed_batched.train_vmapped,
            {
                "models": [_regressor(2), _regressor(2)],
                "X": Xb,
                "y": yb,
                "X_test": Xb,
                "y_test": yb,
                "epochs": 1,
                "lr": 0.01,
            },
            {
                "models": st.sampled_from([None, "mlp", [], [None], [_regressor(2), "mlp"]]),
                "X": st.one_of(bad_matrix(8, 2).filter(_not_3d), st.just(torch.ones(8, 3))),
                "y": st.sampled_from([None, "y", torch.ones(5), torch.full((8,), math.nan)]),
                "epochs": bad_int(1),
                "lr": bad_real(0.0, low_open=True),
            },
        )
    )

    # structnets.models.batched_dlor (the seed-batched DLoR builder)
    add(
        _cases(
            "models.batched_dlor.build_batched",
            build_batched,
            {
                "seeds": [0, 1],
                "in_features": 1,
                "width": 4,
                "depth": 2,
                "rank": 1,
                "mode": "deep",
                "activation": "tanh",
            },
            {
                "seeds": st.sampled_from([None, 3, "01", [], [0, "a"], [1.5], [-1], [True]]),
                "in_features": bad_int(1),
                "width": bad_int(2),
                "depth": bad_int(1),
                "rank": bad_int(1, 3),
                "mode": bad_choice(("deep", "parallel", "summed")),
                "activation": bad_choice(tuple(snn.ACTIVATIONS)),
                "branches": bad_int(1),
                "dtype": BAD_DTYPE,
            },
        )
    )

    # structnets.training: fit's schedule arguments, the closed-form schedules, threads, ensembles
    fit_valid = {"model": _regressor(), "X": X12, "y": Y12, "epochs": 2, "batch_size": 4}
    add(
        _cases(
            "training.fit[schedule]",
            training.fit,
            fit_valid,
            {"schedule": st.one_of(bad_choice(tuple(training.SCHEDULES)), st.just(3)), "min_lr": bad_real(0.0)},
        )
    )
    add(
        _cases(
            "training.fit[warmup]",
            training.fit,
            {**fit_valid, "schedule": "warmup_cosine", "warmup_steps": 2},
            {"warmup_steps": bad_int(1, 6, huge=False), "min_lr": bad_real(0.0, 1e-3)},
        )
    )
    add(
        _cases(
            "training.fit[warmup_epochs]",
            training.fit,
            {**fit_valid, "schedule": "warmup_cosine", "warmup_epochs": 1},
            {"warmup_epochs": bad_int(1, 2, huge=False)},
        )
    )
    add(
        _cases(
            "training.cosine_lr",
            training.cosine_lr,
            {"step": 3, "total_steps": 10, "lr": 0.1},
            # a step past T is allowed (the cosine continues towards lr at 2T)
            {
                "step": bad_int(0, huge=False),
                "total_steps": bad_int(1, huge=False),
                "lr": bad_real(0.0, low_open=True),
                "min_lr": bad_real(0.0, 0.1),
            },
        )
    )
    add(
        _cases(
            "training.warmup_cosine_lr",
            training.warmup_cosine_lr,
            {"step": 3, "total_steps": 10, "warmup_steps": 2, "lr": 0.1},
            {
                "step": bad_int(0, huge=False),
                "total_steps": bad_int(2, huge=False),
                "warmup_steps": bad_int(1, 10, huge=False),
                "lr": bad_real(0.0, low_open=True),
                "min_lr": bad_real(0.0, 0.1),
            },
        )
    )
    add(_cases("training.torch_threads", _torch_threads, {"threads": 1}, {"threads": bad_int(1, huge=False)}))
    add(
        _cases(
            "training.set_threads",
            _set_threads,
            {"threads": 1},
            {"threads": bad_int(1, huge=False), "environment": bad_bool()},
        )
    )
    ensemble_valid = {"X": X12, "y": Y12, "epochs": 1, "batch_size": 4}
    add(
        _cases(
            "training.train_ensemble",
            _ensemble,
            ensemble_valid,
            {
                "models": st.sampled_from(
                    [None, "mlp", 3, [], [None], [_regressor(), "mlp"], [_regressor(), _regressor(2)], _regressor()]
                ),
                "X": bad_matrix(12, 3),
                "y": st.one_of(bad_matrix(12, 1, allow_any_shape=True), st.just(Y12[:5])),
                "stacked": bad_bool(),
                "seeds": st.sampled_from(["01", 3, [0], [0, 1, 2], [0, "a"], [0, -1], [0, 1.5], [True, False]]),
                "loss": bad_choice(("mse", "cross_entropy")),
                "epochs": bad_int(1),
                "batch_size": bad_int(1, huge=False, none_ok=True),
                "lr": bad_real(0.0, low_open=True),
                "weight_decay": bad_real(0.0),
                "optimizer": bad_choice(tuple(training.OPTIMIZERS)),
                "validation_fraction": bad_real(0.0, 1.0, high_open=True),
                "patience": bad_int(1, huge=False, none_ok=True),
                "min_delta": bad_real(0.0),
                "schedule": bad_choice(tuple(training.SCHEDULES)),
                "min_lr": bad_real(0.0),
                "callback": st.sampled_from([3, "print", [print]]),
                "validation_data": st.sampled_from([(X12,), X12, (X12[:, :1], Y12), "xy"]),
            },
            names={"models": ("models", "len(models)")},
        )
    )
    add(
        _cases(
            "training.train_ensemble[stacked]",
            _ensemble,
            {**ensemble_valid, "stacked": True, "X": np.stack([X12, X12]), "y": np.stack([Y12, Y12])},
            {
                "X": st.sampled_from([X12, np.stack([X12] * 3), np.ones((2, 12, 5)), np.full((2, 12, 3), math.nan)]),
                "y": st.sampled_from([Y12, np.stack([Y12] * 3), np.stack([Y12[:5]] * 2), np.full((2, 12), math.inf)]),
            },
        )
    )
    add(
        _cases(
            "training.train_ensemble[cross_entropy]",
            _ensemble,
            {**ensemble_valid, "models": [_regressor(3, 3), _regressor(3, 3)], "y": LABELS12, "loss": "cross_entropy"},
            {"y": st.sampled_from([LABELS12 + 0.5, LABELS12 + 3, LABELS12 - 1, np.full(12, np.nan)])},
        )
    )

    # structnets.training.lbfgs and levenberg_marquardt (batched optimisers, public modules)
    x0 = torch.ones(3, 4, dtype=torch.float64)
    add(
        _cases(
            "training.lbfgs.batched_lbfgs",
            lbfgs.batched_lbfgs,
            {"loss_fn": _quadratic, "x": x0, "max_iter": 3},
            {
                "loss_fn": NOT_A_CALLABLE,
                "x": st.sampled_from(
                    [
                        None,
                        "x",
                        np.ones((3, 4)),
                        torch.ones(4, dtype=torch.float64),
                        torch.ones(3, 4, dtype=torch.int64),
                        torch.full((3, 4), math.nan, dtype=torch.float64),
                    ]
                ),
                "max_iter": bad_int(0),
                "history": bad_int(1),
                "ftol": bad_real(0.0),
                "gtol": bad_real(0.0),
                "patience": bad_int(1),
                "c1": bad_real(0.0, 1.0, low_open=True, high_open=True),
                "max_backtracks": bad_int(1),
            },
        )
    )
    add(
        _cases(
            "training.lbfgs.adam_phase",
            lbfgs.adam_phase,
            {"loss_fn": _quadratic, "x": x0, "steps": 2, "lr": 0.1},
            {
                "loss_fn": NOT_A_CALLABLE,
                "x": st.sampled_from([None, "x", np.ones((3, 4)), torch.ones(3, 4, dtype=torch.int64)]),
                "steps": bad_int(0),
                "lr": bad_real(0.0, low_open=True),
            },
        )
    )
    a_matrix = torch.from_numpy(_RNG.standard_normal((5, 4)))
    lm_valid = {
        "residual_fn": lambda x: x @ a_matrix.T - 1.0,
        "jacobian_fn": lambda x: (x @ a_matrix.T - 1.0, a_matrix.expand(x.shape[0], 5, 4)),
        "x": torch.zeros(2, 4, dtype=torch.float64),
        "max_iter": 3,
    }
    add(
        _cases(
            "training.levenberg_marquardt.batched_levenberg_marquardt",
            levenberg_marquardt.batched_levenberg_marquardt,
            lm_valid,
            {
                "residual_fn": NOT_A_CALLABLE,
                "jacobian_fn": NOT_A_CALLABLE,
                "x": st.sampled_from(
                    [
                        None,
                        "x",
                        np.zeros((2, 4)),
                        torch.zeros(4, dtype=torch.float64),
                        torch.zeros(2, 4, dtype=torch.int64),
                        torch.full((2, 4), math.nan, dtype=torch.float64),
                    ]
                ),
                "max_iter": bad_int(0),
                "ftol": bad_real(0.0),
                "gtol": bad_real(0.0),
                "patience": bad_int(1),
                "initial_damping": bad_real(0.0, low_open=True),
                "max_damping": bad_real(0.0, low_open=True),
                "solver": bad_choice(("cholesky", "lstsq")),
            },
        )
    )

    # structnets.analysis: certification, margins for bounds, checkpoints, balance
    torch.manual_seed(0)
    classifier = nn.Linear(2, 3)
    X_test, y_test = torch.rand(10, 2), torch.arange(10) % 3
    add(
        _cases(
            "analysis.certify",
            analysis.certify,
            {
                "model": classifier,
                "X_test": X_test,
                "y_test": y_test,
                "radii": [0.1],
                "ascent_steps": 0,
                "lipschitz": 1.0,
            },
            {
                "model": NOT_A_MODEL,
                "X_test": st.one_of(bad_matrix(10, 2), st.just(torch.ones(10, 5))),
                "y_test": st.sampled_from(
                    [
                        None,
                        "abc",
                        torch.rand(10),
                        y_test + 3,
                        -torch.ones(10, dtype=torch.long),
                        torch.arange(4),
                        torch.zeros(10, 2, dtype=torch.long),
                    ]
                ),
                "radii": st.sampled_from([None, 0.1, "0.1", [], [0.0], [-1.0], [math.nan], [math.inf], ["a"], [True]]),
                "ascent_steps": bad_int(0),
                "probe": bad_int(1),
                "lipschitz": bad_real(0.0, low_open=True).filter(lambda v: v is not None),
            },
        )
    )
    logits = torch.from_numpy(_RNG.standard_normal((10, 3)))
    add(
        _cases(
            "analysis.certified_radii",
            analysis.certified_radii,
            {"logits": logits, "labels": y_test},
            {
                # (n, 1) logits are valid (one logit: class 1 iff f > 0, as documented), so not drawn here;
                # 9 rows against 10 labels are not.
                "logits": st.one_of(
                    bad_matrix(10, 3, allow_any_shape=True), st.just(np.ones((10, 3, 2))), st.just(torch.ones(9, 3))
                ),
                "labels": st.sampled_from(
                    [
                        None,
                        torch.rand(10),
                        y_test + 3,
                        -torch.ones(10, dtype=torch.long),
                        torch.arange(4),
                        torch.zeros(10, 2, dtype=torch.long),
                        np.array(["a"] * 10),
                        torch.full((10,), math.nan),
                    ]
                ),
                "lipschitz": bad_real(0.0, low_open=True),
            },
        )
    )
    add(
        _cases(
            "analysis.margin_for_bounds",
            analysis.margin_for_bounds,
            {"margin_values": torch.linspace(-1, 2, 10), "quantile": 0.1},
            {
                "margin_values": st.sampled_from(
                    [
                        None,
                        "abc",
                        3.0,
                        torch.ones(5, 2),
                        torch.tensor([1.0, math.nan]),
                        torch.empty(0),
                        np.array(["a", "b"]),
                    ]
                ),
                "quantile": bad_real(0.0, 1.0),
                "fallback": bad_real(0.0, low_open=True),
            },
        )
    )
    checkpoint = SCRATCH / "model.pt"
    torch.save(_regressor().state_dict(), checkpoint)
    (SCRATCH / "garbage.pt").write_bytes(b"not a checkpoint")
    torch.save([1, 2, 3], SCRATCH / "list.pt")
    add(
        _cases(
            "analysis.load_state_dict",
            analysis.load_state_dict,
            {"path": checkpoint},
            # (a missing file is the documented FileNotFoundError, not driven)
            {
                "path": st.one_of(
                    NOT_A_PATH.filter(lambda v: v != ""), st.sampled_from([SCRATCH / "garbage.pt", SCRATCH / "list.pt"])
                )
            },
        )
    )
    chain = [torch.from_numpy(_RNG.standard_normal((4, 3))), torch.from_numpy(_RNG.standard_normal((2, 4)))]
    bad_chain = st.sampled_from(
        [
            None,
            "abc",
            3.0,
            [],
            [np.ones((3, 3)), "x"],
            [torch.ones(5)],
            [torch.full((4, 3), math.nan)],
            [chain[0], torch.ones(2, 3)],
            [torch.ones(4, 3, 2)],
        ]
    )
    for name in ("end_to_end", "frobenius_sum", "schatten_end_to_end", "imbalance"):
        add(_cases(f"analysis.balance.{name}", getattr(balance, name), {"matrices": chain}, {"matrices": bad_chain}))

    # structnets.constructive
    W = torch.from_numpy(_RNG.standard_normal((4, 4)))
    for name in ("dlor_product", "dlor_sum"):
        add(
            _cases(
                f"constructive.{name}",
                getattr(constructive, name),
                {"W": W, "rank": 1},
                {
                    "W": st.one_of(bad_matrix(4, 4), st.just(torch.ones(4, 3)), st.just(np.ones((1, 1)))),
                    "rank": bad_int(1, 4),
                },
            )
        )
    dense = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1)).double()
    add(
        _cases(
            "constructive.dlor_network_from_dense",
            constructive.dlor_network_from_dense,
            {"mlp": dense, "mode": "deep"},
            {
                "mlp": st.sampled_from(
                    [None, "mlp", 3, nn.Linear(2, 2), nn.Sequential(), nn.Sequential(nn.Linear(2, 2), nn.ELU())]
                ),
                "mode": bad_choice(("deep", "parallel", "summed")),
                "h": bad_real(0.0, 1.0, low_open=True),
                "rank": bad_int(1, 2),
                "center": bad_real().filter(lambda v: v is not None),
                "dtype": BAD_DTYPE,
            },
        )
    )
    add(
        _cases(
            "constructive.rank_one_interpolant",
            constructive.rank_one_interpolant,
            {"x": [0.0, 0.5, 1.0], "y": [1.0, 0.0, 2.0]},
            {
                "x": st.sampled_from(
                    [None, "abc", [], [0.0, math.nan, 1.0], [0.0, 0.0, 1.0], [[0.0], [0.5]], ["a", "b", "c"]]
                ),
                "y": st.sampled_from(
                    [None, "abc", [1.0, 0.0], [1.0, math.inf, 2.0], ["a", "b", "c"], [[1.0, 2.0]] * 3]
                ),
                "activation": bad_choice(("relu", "tanh", "sigmoid", "swish", "gelu")),
                "dtype": BAD_DTYPE,
            },
        )
    )
    add(
        _cases(
            "constructive.fit_shallow",
            _fit_shallow,
            {},
            {
                "target": st.sampled_from(
                    [None, 3, "f", lambda x: "a", lambda x: x[:, :1] * math.nan, lambda x: torch.ones(2)]
                ),
                "in_features": bad_int(1),
                "neurons": bad_int(1),
                "low": bad_real().filter(lambda v: v is not None),
                "high": st.one_of(bad_real().filter(lambda v: v is not None), st.just(-1.0)),
                "activation": bad_choice(("tanh", "relu", "sigmoid", "swish")),
                "scale": bad_real(0.0, low_open=True),
                "points_per_axis": bad_int(2),
                "ridge": bad_real(0.0),
                "seed": bad_int(0, huge=False),
            },
        )
    )
    add(
        _cases(
            "constructive.dlor_universal_approximator",
            constructive.dlor_universal_approximator,
            {"target": lambda x: x.sum(-1), "in_features": 1, "neurons": 3, "points_per_axis": 8},
            {
                "in_features": bad_int(1),
                "neurons": bad_int(1),
                "rank": bad_int(1, 2),
                "h": bad_real(0.0, 1.0, low_open=True).filter(lambda v: v is not None),
            },
        )
    )
    add(
        _cases(
            "constructive.dlor_from_shallow",
            constructive.dlor_from_shallow,
            {"shallow": SHALLOW},
            {
                "shallow": st.sampled_from([None, "s", 3, nn.Linear(1, 1)]),
                "rank": bad_int(1, 2),
                "h": bad_real(0.0, 1.0, low_open=True).filter(lambda v: v is not None),
                "center": bad_real().filter(lambda v: v is not None),
            },
        )
    )
    add(
        _cases(
            "constructive.wide_dlor_from_shallow",
            constructive.wide_dlor_from_shallow,
            {"shallow": SHALLOW},
            {"shallow": st.sampled_from([None, "s", 3, nn.Linear(1, 1)])},
        )
    )
    add(
        _cases(
            "constructive.grid_points",
            constructive.grid_points,
            {"dim": 2, "points_per_axis": 3},
            {
                "dim": bad_int(1),
                "points_per_axis": bad_int(2),
                "low": bad_real(),
                "high": st.one_of(bad_real(), st.just(-2.0)),
            },
        )
    )
    add(
        _cases(
            "constructive.random_lattice_target_1d",
            constructive.random_lattice_target_1d,
            {"n_pieces": 3, "seed": 0},
            {
                "n_pieces": bad_int(1),
                "seed": bad_int(0, huge=False),
                "low": bad_real(),
                "high": st.one_of(bad_real(), st.just(-2.0)),
                "min_cell": bad_real(0.0, 1.0),
            },
        )
    )
    add(
        _cases(
            "constructive.random_maxmin_target",
            constructive.random_maxmin_target,
            {"dim": 2, "n_groups": 2, "group_size": 2, "seed": 0},
            {
                "dim": bad_int(1),
                "n_groups": bad_int(1),
                "group_size": bad_int(1),
                "seed": bad_int(0, huge=False),
                "low": bad_real(),
                "high": st.one_of(bad_real(), st.just(-2.0)),
                "min_slope": bad_real(0.0, 1.0),
                "height": bad_real(0.0),
            },
        )
    )
    add(
        _cases(
            "constructive.check_target",
            constructive.check_target,
            {"target": lambda x: x.sum(axis=1), "dim": 2, "low": -1.0, "high": 1.0},
            {
                "target": st.sampled_from(
                    [None, 3, "f", lambda x: "a", lambda x: x, lambda x: x.sum(axis=1) * math.nan]
                ),
                "dim": bad_int(1),
                "low": bad_real(),
                "high": st.one_of(bad_real(), st.just(-2.0)),
            },
        )
    )
    points = _RNG.random((6, 2))
    add(
        _cases(
            "constructive.max_secant_ratio",
            constructive.max_secant_ratio,
            {"points": points, "values": points.sum(1)},
            # (1-D points are taken as n points on a line)
            {
                "points": st.one_of(
                    bad_matrix(6, 2).filter(lambda v: not (isinstance(v, np.ndarray) and v.ndim == 1)),
                    st.just(np.ones((5, 2))),
                ),
                "values": st.sampled_from(
                    [None, "abc", np.ones(5), np.full(6, math.nan), np.ones((6, 2)), np.array(["a"] * 6)]
                ),
                "chunk": bad_int(1, huge=False),
            },
        )
    )
    add(
        _cases(
            "constructive.lattice_pieces_1d",
            constructive.lattice_pieces_1d,
            {"knots": [0.0, 1.0, 2.0], "values": [0.0, 0.5, 0.0]},
            {
                "knots": st.sampled_from(
                    [None, "abc", 3.0, [0.0], [1.0, 0.0, 2.0], [0.0, math.nan, 2.0], [[0.0, 1.0, 2.0]], ["a", "b", "c"]]
                ),
                "values": st.sampled_from(
                    [None, "abc", [0.0, 0.5], [0.0, 5.0, 0.0], [0.0, math.inf, 0.0], ["a", "b", "c"]]
                ),
            },
        )
    )
    add(
        _cases(
            "constructive.maxmin_network",
            constructive.maxmin_network,
            {"pieces": PIECES},
            {"pieces": BAD_PIECES, "dtype": BAD_DTYPE},
        )
    )
    add(
        _cases(
            "constructive.evaluate_maxmin",
            constructive.evaluate_maxmin,
            {"pieces": PIECES, "x": np.linspace(0, 2, 5)[:, None]},
            {
                "pieces": BAD_PIECES,
                "x": st.sampled_from([None, "abc", np.ones((5, 2)), np.full((5, 1), math.nan), np.array([["a"]] * 5)]),
            },
        )
    )
    target = data.sine_target(1, 1.5)
    swish_valid = {"f": target.function, "derivatives": target.derivative, "d": 1, "beta": 1.5, "M": 2, "R": target.R}
    add(
        _cases(
            "constructive.swish_approximator",
            constructive.swish_approximator,
            swish_valid,
            {
                "f": NOT_A_CALLABLE,
                "derivatives": NOT_A_CALLABLE,
                "d": bad_int(1),
                "beta": bad_real(0.0, low_open=True),
                "M": bad_int(1),
                "kappa": st.one_of(bad_int(0, huge=False).filter(lambda v: v is not None), st.just(3)),
                "tau": bad_real(0.0, low_open=True),
                "lam": bad_real(0.0, low_open=True),
                "R": bad_real(0.0, low_open=True),
                "f_sup": bad_real(0.0).filter(lambda v: v is not None),
            },
        )
    )
    add(
        _cases(
            "constructive.smooth_constant_depth_approximator",
            constructive.smooth_constant_depth_approximator,
            {"f": target, "s": 1.5, "K": 2},
            {
                "f": st.sampled_from([None, 3, "f", np.ones(3), lambda x: x]),
                "s": bad_real(0.0, low_open=True).filter(lambda v: v is not None),
                "K": bad_int(1),
                "activation": bad_choice(("gelu", "silu", "tanh", "swish", "softplus")),
                "tau": bad_real(0.0, low_open=True),
            },
        )
    )
    # d, derivative and R describe a plain callable (a SmoothTarget carries its own)
    add(
        _cases(
            "constructive.smooth_constant_depth_approximator[callable]",
            constructive.smooth_constant_depth_approximator,
            {"f": target.function, "s": 1.5, "K": 2, "d": 1, "derivative": target.derivative, "R": target.R},
            {
                "d": st.one_of(bad_int(1, 2), st.just(None)),
                "derivative": NOT_A_CALLABLE,
                # R = 0 (and -0.0) is documented: f a polynomial of degree <= kappa, Taylor term 0
                "R": bad_real(0.0).filter(lambda v: not (isinstance(v, float) and v == 0.0)),
            },
            names={"derivative": ("derivative", "derivative(alpha, x)")},
        )
    )

    # structnets.atomic_io
    add(
        _cases(
            "atomic_io.write_bytes",
            atomic_io.write_bytes,
            {"path": SCRATCH / "a.bin", "data": b"abc"},
            # (a missing parent folder with parents=False is a documented OSError, not driven)
            {
                "path": st.one_of(NOT_A_PATH, st.just(SCRATCH)),
                "data": st.sampled_from([None, "abc", 3, [1, 2], 1.5, object()]),
                "parents": bad_bool(),
                "suffix": st.sampled_from([None, 3, "/x", "a/b", "\0"]),
            },
        )
    )
    add(
        _cases(
            "atomic_io.write_text",
            atomic_io.write_text,
            {"path": SCRATCH / "a.txt", "text": "abc"},
            {
                "path": st.one_of(NOT_A_PATH, st.just(SCRATCH)),
                "text": st.sampled_from([None, b"abc", 3, ["a"], 1.5]),
                "parents": bad_bool(),
            },
        )
    )
    # (`obj` is not driven: non-JSON values are documented to go through str)
    add(
        _cases(
            "atomic_io.write_json",
            atomic_io.write_json,
            {"path": SCRATCH / "a.json", "obj": {"a": 1}},
            {"path": st.one_of(NOT_A_PATH, st.just(SCRATCH))},
        )
    )
    add(
        _cases(
            "atomic_io.write_csv",
            atomic_io.write_csv,
            {"path": SCRATCH / "a.csv", "frame": pd.DataFrame({"a": [1, 2]})},
            {
                "path": st.one_of(NOT_A_PATH, st.just(SCRATCH)),
                "frame": st.sampled_from([None, "a,b", 3, {"a": [1]}, [[1, 2]], np.ones((2, 2))]),
            },
        )
    )
    add(_cases("atomic_io.file_mode", atomic_io.file_mode, {"path": SCRATCH / "a.txt"}, {"path": NOT_A_PATH}))

    # structnets.protocol
    add(
        _cases(
            "protocol.config_to_dict",
            protocol.config_to_dict,
            {"config": _Config()},
            {"config": st.sampled_from([None, 3, "abc", [1], object(), _Config])},
        )
    )
    add(
        _cases(
            "protocol.figure_format_context",
            _figure_format,
            {"figure_format": "png"},
            {"figure_format": bad_choice(protocol.FIGURE_FORMATS)},
        )
    )
    add(
        _cases(
            "protocol.save_figure",
            lambda **kw: protocol.save_figure(**{"fig": _figure(), **kw}),
            {"path": SCRATCH / "f.png"},
            {"path": NOT_A_PATH, "dpi": bad_int(1, 10_000, huge=False)},
        )
    )
    add(
        _cases(
            "protocol.save_figure[fig]",
            protocol.save_figure,
            {"path": SCRATCH / "g.png"},
            {"fig": st.sampled_from([None, "fig", 3, np.ones((2, 2))])},
        )
    )
    add(
        _cases(
            "protocol.Unit",
            protocol.Unit,
            {"key": "a"},
            {
                "key": st.sampled_from([None, 3, "", b"a", ["a"]]),
                "params": st.sampled_from([None, 3, "abc", [("a", 1)]]),
            },
        )
    )

    # structnets.runner (the toy experiment of tests/runner: one finished run folder for the readers)
    toy = _toy()
    config = toy.ToyConfig(arms=1, seeds=(0,), repeats=1, plot=False)
    run_dir = SCRATCH / "toy-run"
    runner.run("toy", config, run_dir, jobs=1, registry=toy.REGISTRY)
    not_a_config = st.sampled_from([None, 3, "arms=2", {"arms": 2}, object(), toy.ToyConfig])
    not_a_class = st.sampled_from([None, 3, "ToyConfig", config, dict])
    assignments = st.sampled_from([None, 3, "arms=2", ["arms"], ["arms=x"], ["nope=1"], ["arms=2", 3], [b"arms=2"]])
    add(_cases("runner.validate_config", runner.validate_config, {"config": config}, {"config": not_a_config}))
    add(_cases("runner.config_to_json", runner.config_to_json, {"config": config}, {"config": not_a_config}))
    add(
        _cases(
            "runner.describe_config",
            runner.describe_config,
            {"config_class": toy.ToyConfig},
            {"config_class": not_a_class},
        )
    )
    add(
        _cases(
            "runner.config_from_json",
            runner.config_from_json,
            {"config_class": toy.ToyConfig, "data": {"arms": 2}},
            {
                "config_class": not_a_class,
                "data": st.sampled_from([None, 3, "arms", ["arms"], {"nope": 1}, {"arms": "x"}, {"arms": 0}, {3: 1}]),
            },
        )
    )
    add(
        _cases(
            "runner.parse_overrides",
            runner.parse_overrides,
            {"config_class": toy.ToyConfig, "assignments": ["arms=2"]},
            {"config_class": not_a_class, "assignments": assignments},
        )
    )
    add(
        _cases(
            "runner.apply_overrides",
            runner.apply_overrides,
            {"config": config, "assignments": ["arms=2"]},
            {"config": not_a_config, "assignments": assignments},
        )
    )
    add(
        _cases(
            "runner.resolve_device",
            runner.resolve_device,
            {"device": "cpu"},
            {
                "device": st.sampled_from([None, 3, "", "gpu", "cuda:x", "CPU ", "tpu"]),
                "backend": bad_choice(("local", "ray")),
                "gpus_per_unit": bad_real(0.0, low_open=True).filter(lambda v: v is not None),
            },
        )
    )
    add(
        _cases(
            "runner.resolve_experiment",
            runner.resolve_experiment,
            {"spec": "toy", "registry": toy.REGISTRY},
            {
                "spec": st.sampled_from([None, 3, "", "nope", "toy_experiment:NOPE", "no_such_module:X", ["toy"]]),
                "registry": st.sampled_from([3, "toy", ["toy"], {"toy": 3}]),
            },
        )
    )
    add(
        _cases(
            "runner.set_default_registry",
            _set_default_registry,
            {"registry": toy.REGISTRY},
            {"registry": st.sampled_from([None, 3, "toy", ["toy"]])},
        )
    )
    readers_valid = {"run_dir": run_dir, "registry": toy.REGISTRY}
    # (a missing or non-run folder is the documented StoreError, not driven)
    bad_run_dir = NOT_A_PATH
    add(
        _cases(
            "runner.load_results",
            runner.load_results,
            readers_valid,
            {
                "run_dir": bad_run_dir,
                "experiment": st.sampled_from([3, "nope", ["toy"]]),
                "registry": st.sampled_from([3, "toy", ["toy"]]),
            },
        )
    )
    add(
        _cases(
            "runner.report",
            runner.report,
            readers_valid,
            {
                "run_dir": bad_run_dir,
                "experiment": st.sampled_from([3, "nope", ["toy"]]),
                "figure_format": bad_choice(protocol.FIGURE_FORMATS),
                "registry": st.sampled_from([3, "toy", ["toy"]]),
            },
        )
    )
    add(
        _cases(
            "runner.compare_runs",
            runner.compare_runs,
            {"run_a": run_dir, "run_b": run_dir, "registry": toy.REGISTRY},
            {
                "run_a": bad_run_dir,
                "run_b": bad_run_dir,
                "experiment": st.sampled_from([3, "nope", ["toy"]]),
                "registry": st.sampled_from([3, "toy", ["toy"]]),
            },
        )
    )
    add(
        _cases(
            "runner.run",
            _toy_run,
            {"experiment": "toy", "config": config, "registry": toy.REGISTRY},
            {
                "experiment": st.sampled_from([None, 3, "", "nope", ["toy"]]),
                "config": not_a_config.filter(lambda v: v is not None),  # None: the full default config
                "out_dir": NOT_A_PATH,
                "backend": bad_choice(("local", "ray")),
                "jobs": bad_int(1, huge=False, none_ok=True),
                "progress": st.sampled_from([3, "print", [print]]),
                "device": st.sampled_from([3, "", "gpu", "tpu"]),
                "gpus_per_unit": bad_real(0.0, low_open=True).filter(lambda v: v is not None),
                "on_unit": st.sampled_from([3, "print", [print]]),
                "figure_format": bad_choice(protocol.FIGURE_FORMATS),
                "registry": st.sampled_from([3, "toy", ["toy"]]),
            },
        )
    )

    # structnets.claims
    a = np.array([1.0, 2.0, 3.0, 4.5])
    add(
        _cases(
            "claims.paired_t_test",
            claims.paired_t_test,
            {"a": a, "b": a[::-1].copy()},
            {
                "a": st.sampled_from(
                    [
                        None,
                        "abc",
                        a[:3],
                        np.ones((4, 2)),
                        np.array([1.0, math.nan, 3.0, 4.0]),
                        np.array(["a"] * 4),
                        np.array([1.0]),
                    ]
                ),
                "b": st.sampled_from([None, "abc", a[:3], np.array([1.0, math.inf, 3.0, 4.0]), np.array(["a"] * 4)]),
            },
        )
    )
    add(
        _cases(
            "claims.load_run",
            claims.load_run,
            {"run_dir": SCRATCH},
            {"run_dir": st.one_of(NOT_A_PATH, st.just(SCRATCH / "missing"), st.just(SCRATCH / "a.txt"))},
        )
    )
    # (`claims` is not driven: a valid call needs a finished run folder, too slow to make here)
    add(
        _cases(
            "claims.claims_table",
            claims.claims_table,
            {"run_dirs": [SCRATCH]},
            {"run_dirs": st.sampled_from([None, 3, "runs", [], [3], [SCRATCH / "missing"], [None]])},
        )
    )
    add(
        _cases(
            "claims.claims_markdown",
            claims.claims_markdown,
            {"table": pd.DataFrame(columns=list(claims.COLUMNS))},
            {"table": st.sampled_from([None, 3, "abc", [1, 2], pd.DataFrame({"a": [1]})])},
        )
    )
    return cases
