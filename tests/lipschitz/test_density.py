"""Random 1-Lipschitz piecewise-affine targets, their exact max-min networks, and ``lipschitz-density``.

Targets must be 1-Lipschitz by construction and by measurement (float64 secant ratios), the exact
construction (Murari, Furuya, Schönlieb, NeurIPS 2025) must reproduce them to rounding, and every
trained width-(d + 3) network must be certified ≤ 1.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from structnets.analysis import lipschitz_upper_bound
from structnets.constructive import (
    check_target,
    evaluate_maxmin,
    grid_points,
    max_secant_ratio,
    maxmin_network,
    random_lattice_target_1d,
    random_maxmin_target,
)
from structnets.experiments import get
from structnets.experiments.lipschitz_density import LipschitzDensityConfig
from structnets.experiments.lipschitz_density.fixed_width import (
    _batched_forward,
    _stack,
    fit_errors,
    fit_fixed_width,
)
from structnets.nn import NormConstrainedLinear


def _assert_exact(target, points: np.ndarray) -> None:
    """The exact network reproduces f to 1e-12 up to one known scalar: Π_l max(1, B_l).

    Each selection layer divides by its certified bound B_l ≥ ‖V_l‖₂ = 1, which the float64
    certificate rounds up by ~n²ε (2.9e-11 at 256 → 128); max and min commute with that positive
    scaling, so net = f / Π_l max(1, B_l) up to rounding. Narrow networks (≤ 64 rows) stay within
    1e-12 of f outright.
    """
    net = maxmin_network([[(np.asarray(a), c) for a, c in group] for group in target.pieces]).eval()
    with torch.no_grad():
        out = net(torch.tensor(points, dtype=torch.float64))[:, 0].numpy()
        shrink = float(np.prod([float(m._scale()) for m in net if isinstance(m, NormConstrainedLinear)]))
    f = target(points)
    assert np.abs(out * shrink - f).max() <= 1e-12
    assert shrink - 1.0 <= 1e-10
    if net[0].out_features <= 64:
        assert np.abs(out - f).max() <= 1e-12


# ------------------------------------------------------------------------------------------
# Targets


@pytest.mark.parametrize("pieces", [1, 3, 8, 16])
@pytest.mark.parametrize("seed", range(2))
def test_1d_targets_are_1_lipschitz_interpolants_reproduced_exactly(pieces: int, seed: int) -> None:
    target = random_lattice_target_1d(pieces, seed=seed)
    knots, values = np.array(target.knots), np.array(target.values)
    assert knots[0] == -1.0 and knots[-1] == 1.0 and np.all(np.diff(knots) > 0)
    slopes = np.diff(values) / np.diff(knots)
    assert np.abs(slopes).max() <= 1.0  # by construction, on the stored data
    assert target.lipschitz_by_construction <= 1.0
    x = np.concatenate([np.linspace(-1, 1, 20001), knots])
    f = target(x[:, None])
    np.testing.assert_allclose(f, np.interp(x, knots, values), rtol=0, atol=1e-14)
    measured = max_secant_ratio(x[:, None], f)
    assert measured <= 1.0 + 1e-12
    # the grid contains the knots, so the measured ratio is the steepest slope (to rounding)
    assert abs(measured - np.abs(slopes).max()) <= 1e-9
    _assert_exact(target, x[:, None])


@pytest.mark.parametrize(("groups", "size"), [(1, 1), (2, 3), (4, 3), (8, 3), (3, 5)])
@pytest.mark.parametrize("seed", range(2))
def test_2d_maxmin_targets_are_1_lipschitz_and_reproduced_exactly(groups: int, size: int, seed: int) -> None:
    target = random_maxmin_target(2, groups, size, seed=seed)
    assert target.dim == 2 and target.n_groups == groups and target.n_pieces == groups * size
    assert all(np.linalg.norm(a) <= 1.0 for group in target.pieces for a, _ in group)
    points = grid_points(2, 41)
    f = target(points)
    np.testing.assert_array_equal(f, evaluate_maxmin(target.pieces, points))
    measured = max_secant_ratio(points, f)
    assert 0.3 * 0.5 < measured <= 1.0 + 1e-12  # non-trivial (gradients have norm ≥ 0.3) and ≤ 1
    dense = grid_points(2, 151)
    _assert_exact(target, dense)


def test_2d_targets_use_several_pieces_inside_the_domain() -> None:
    # Anchors in the domain make the pieces cross there: count the pieces attaining f on a grid.
    target = random_maxmin_target(2, 4, 3, seed=0)
    points = grid_points(2, 101)
    f = target(points)
    pieces = [(np.asarray(a), c) for group in target.pieces for a, c in group]
    active = {j for j, (a, c) in enumerate(pieces) if np.any(np.abs(points @ a + c - f) <= 1e-12)}
    assert len(active) >= 4


def test_targets_are_seeded() -> None:
    assert random_lattice_target_1d(6, seed=3) == random_lattice_target_1d(6, seed=3)
    assert random_lattice_target_1d(6, seed=3) != random_lattice_target_1d(6, seed=4)
    assert random_maxmin_target(2, 3, 2, seed=1) == random_maxmin_target(2, 3, 2, seed=1)
    assert random_maxmin_target(2, 3, 2, seed=1).pieces != random_maxmin_target(2, 3, 2, seed=2).pieces


def test_secant_ratio_measures_a_known_constant() -> None:
    points = grid_points(2, 21)
    assert max_secant_ratio(points, points @ np.array([0.6, -0.8])) == pytest.approx(1.0, abs=1e-12)
    assert max_secant_ratio(points, 3.0 * np.abs(points[:, 0])) == pytest.approx(3.0, abs=1e-12)
    x = np.array([0.0, 0.5, 0.2, 1.0])  # unsorted 1-D input
    assert max_secant_ratio(x, np.array([0.0, 1.0, 0.1, 0.0])) == pytest.approx(3.0)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: random_lattice_target_1d(0, seed=0), "n_pieces"),
        (lambda: random_lattice_target_1d(3, seed=0, low=1.0, high=1.0), "low"),
        (lambda: random_lattice_target_1d(3, seed=0, min_cell=1.5), "min_cell"),
        (lambda: random_maxmin_target(0, 2, 2, seed=0), "dim"),
        (lambda: random_maxmin_target(2, 0, 2, seed=0), "n_groups"),
        (lambda: random_maxmin_target(2, 2, 0, seed=0), "group_size"),
        (lambda: random_maxmin_target(2, 2, 2, seed=0, min_slope=2.0), "min_slope"),
        (lambda: grid_points(2, 1), "points_per_axis"),
        (lambda: max_secant_ratio(np.zeros((3, 2)), np.zeros(4)), "points"),
        (lambda: check_target(3.0, 1, -1.0, 1.0), "target"),
        (lambda: check_target(lambda x: np.full(len(x), np.nan), 1, -1.0, 1.0), "target"),
        (lambda: check_target(lambda x: np.zeros(3), 2, -1.0, 1.0), "target"),
    ],
)
def test_bad_target_arguments_name_the_argument(call, name: str) -> None:
    with pytest.raises(ValueError, match=f"`{name}`"):
        call()


# ------------------------------------------------------------------------------------------
# Training width-(d + 3) networks


def test_fit_fixed_width_certified_and_faithful_to_the_library_model() -> None:
    target = random_lattice_target_1d(3, seed=0)
    points = target.grid(513)
    models = fit_fixed_width(target, 1, 2, seeds=(0, 1), steps=30, lr=1e-2, train_per_axis=33, step=1.9)
    assert len(models) == 2 and all(len(m) == 2 * 2 + 2 for m in models)
    assert models[0][0].out_features == 1 + 3  # the theorem's width d + 3
    # the batched trainer computes exactly what the library model computes from the same parameters
    params = _stack(models, 2)
    with torch.no_grad():
        batched = _batched_forward(params, torch.tensor(points).expand(2, -1, -1)).numpy()
    for n, model in enumerate(models):
        assert not model.training
        upper = lipschitz_upper_bound(model)
        assert upper <= 1.0
        sup, rmse, out = fit_errors(model, target, points)
        np.testing.assert_allclose(out, batched[n], rtol=0, atol=1e-12)
        assert max_secant_ratio(points, out) <= upper * (1 + 1e-9)
        assert rmse <= sup
    # vectorising over seeds changes nothing: seed 1 alone trains to the same model
    alone = fit_fixed_width(target, 1, 2, seeds=(1,), steps=30, lr=1e-2, train_per_axis=33, step=1.9)[0]
    for p, q in zip(models[1].parameters(), alone.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-12)


def test_training_reduces_the_error() -> None:
    target = random_maxmin_target(2, 2, 2, seed=0)
    points = target.grid(41)
    before = fit_fixed_width(target, 2, 2, seeds=(0,), steps=1, lr=1e-12, train_per_axis=9, step=1.9)[0]
    after = fit_fixed_width(target, 2, 2, seeds=(0,), steps=120, lr=1e-2, train_per_axis=9, step=1.9)[0]
    assert fit_errors(after, target, points)[1] < 0.5 * fit_errors(before, target, points)[1]
    assert lipschitz_upper_bound(after) <= 1.0


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"target": "abs"}, "target"),
        ({"target": lambda x: np.full(len(x), np.inf)}, "target"),
        ({"target": lambda x: 1 / 0}, "target"),
        (
            {"target": lambda x: np.where(np.abs(x[:, 0] - 1 / 32) < 1e-3, np.nan, 0.0)},
            "target",
        ),  # NaN at a training point only
        ({"depth": 0}, "depth"),
        ({"depth": 2.5}, "depth"),
        ({"width": 0}, "width"),
        ({"seeds": ()}, "seeds"),
        ({"steps": 0}, "steps"),
        ({"lr": 0.0}, "lr"),
        ({"step": 2.0}, "step"),
        ({"dim": 0}, "dim"),
    ],
)
def test_fit_fixed_width_rejects_bad_input(kwargs: dict, name: str) -> None:
    arguments = {"target": lambda x: np.abs(x[:, 0]), "dim": 1, "depth": 1, "steps": 1}
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=f"`{name}`"):
        fit_fixed_width(arguments.pop("target"), arguments.pop("dim"), arguments.pop("depth"), **arguments)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("depths", (0,)),
        ("depths", ()),
        ("width", 0),
        ("pieces_1d", (0,)),
        ("groups_2d", (-1,)),
        ("group_size_2d", 0),
        ("seeds", ()),
        ("steps", 0),
        ("step", 0.0),
        ("tolerance", 0.0),
    ],
)
def test_config_rejects_bad_values(field: str, value) -> None:
    with pytest.raises(ValueError, match=f"`{field}`"):
        dataclasses.replace(LipschitzDensityConfig.quick(), **{field: value})


def test_config_needs_a_target() -> None:
    with pytest.raises(ValueError, match="`pieces_1d`"):
        LipschitzDensityConfig(pieces_1d=(), groups_2d=())


# ------------------------------------------------------------------------------------------
# The report (the experiment end to end: tests/experiments/test_lipschitz_density.py)


def test_report_is_built_from_rows_alone() -> None:
    experiment = get("lipschitz-density")
    config = LipschitzDensityConfig.quick()
    assert "(no results yet)" in experiment.report(pd.DataFrame(), config)
    rows = pd.DataFrame(
        [
            {"target": "t", "dim": 1, "target_pieces": 5, "model": "exact", "depth": 3, "width": 8, "parameters": 10, "sup_error": 1e-15,
             "rmse": 1e-16, "sup_error_median": 1e-15, "rmse_median": 1e-16, "lipschitz_upper": 1.5,
             "lipschitz_measured": 0.9, "target_lipschitz_measured": 0.9, "sequential_depth": 5, "seconds": 0.1},
            {"target": "t", "dim": 1, "target_pieces": 5, "model": "trained", "depth": 4, "width": 4, "parameters": 50, "sup_error": 0.01,
             "rmse": 0.005, "sup_error_median": 0.02, "rmse_median": 0.01, "lipschitz_upper": 0.99,
             "lipschitz_measured": 0.9, "target_lipschitz_measured": 0.9, "sequential_depth": None, "seconds": 1.0},
            {"target": "t", "dim": 1, "target_pieces": 5, "model": "trained", "depth": 8, "width": 4, "parameters": 90, "sup_error": 0.05,
             "rmse": 0.01, "sup_error_median": 0.05, "rmse_median": 0.01, "lipschitz_upper": 1.0,
             "lipschitz_measured": 0.9, "target_lipschitz_measured": 0.9, "sequential_depth": None, "seconds": 2.0},
        ]
    )  # fmt: skip
    table = experiment.report(rows, config)
    assert (
        "| t | 3 | 8 | 1e-15 | 1.5 | 5 | 0.01 (4) | 4 | 2.32 | 1.00 |" in table
    )  # slopes log 5 / log 2 and log 2 / log 2
    assert "largest `L upper` 1 (≤ 1)" in table
