"""The ReLU depth cap of Liu et al. (Theorem 6.1) with the depth convention derived from its statement.

The paper's L counts layers of neurons (input and output included), so L − 1 = our number of weight
layers L_w. The tests check the two facts the derivation rests on: at d = 1 a one-hidden-layer ReLU
network (L_w = 2) provably reaches N^{−2} on a C² target (so a cap N^{−1}, the other reading, would
be false), and the piece count of a network with H hidden layers is at most (4N)^{⌈H/2⌉}, so the
best exponent at d = 1 is 2⌈H/2⌉ ≤ L_w.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from structnets.analysis import loglog_slope, minimax_exponent, piecewise_linear_floor, relu_piece_bound
from structnets.analysis.rates import relu_depth_cap_exponent, relu_estimation_exponent
from structnets.experiments.smoothness_rates import (
    SmoothnessRatesConfig,
    _estimation_cells,
    parameter_count,
    parse_separation_cells,
    width_for_parameters,
)


def test_cap_values_with_weight_layers() -> None:
    assert relu_depth_cap_exponent(3.0, 1, 2) == -2.0  # one hidden layer, d = 1: N^{-2}
    assert relu_depth_cap_exponent(3.0, 2, 2) == -1.0
    assert relu_depth_cap_exponent(3.0, 1, 6) == -3.0  # the cap no longer binds: s < L_w
    assert relu_depth_cap_exponent(1.0, 1, 2) == -1.0
    assert relu_estimation_exponent(3.0, 1, 2) == pytest.approx(-0.8)
    assert relu_estimation_exponent(4.0, 2, 2) == pytest.approx(-2 / 3)
    # No separation where s ≤ L_w: the capped rate is the minimax rate.
    assert relu_estimation_exponent(1.0, 1, 2) == pytest.approx(minimax_exponent(1.0, 1))
    assert relu_estimation_exponent(3.0, 2, 6) == pytest.approx(minimax_exponent(3.0, 2))
    for bad in ({"s": 0.0}, {"d": 0}, {"weight_layers": 1}):
        kwargs = {"s": 1.0, "d": 1, "weight_layers": 2} | bad
        with pytest.raises(ValueError, match=f"`{next(iter(bad))}`"):
            relu_depth_cap_exponent(**kwargs)


def test_one_hidden_layer_reaches_n_to_the_minus_two_so_the_other_convention_is_false() -> None:
    """Certified best error of every one-hidden-layer ReLU net on a C² target (exact DP floor) and the
    free-knot interpolant that attains its order: both fall like N^{−2}, steeper than the N^{−1}
    that reading the paper's L as weight layers (L = 2, min(L − 1, s) = 1) would call a lower bound."""
    x = np.linspace(0.0, 1.0, 1200)
    y = np.sin(2.0 * x) + x**2
    Ns, floors, interp = [], [], []
    for N in (16, 31, 61, 121):
        width = width_for_parameters(N, 1, 2)
        pieces = relu_piece_bound([width])
        Ns.append(parameter_count(1, width, 2))
        floors.append(math.sqrt(piecewise_linear_floor(x, y, pieces)[-1]))
        # A one-hidden-layer ReLU net with `width` units is exactly the linear interpolant at
        # width + 1 equispaced knots (one unit per interior knot + the affine part): its RMSE.
        knots = np.linspace(0.0, 1.0, width + 1)
        interp.append(math.sqrt(np.mean((np.interp(x, knots, np.sin(2.0 * knots) + knots**2) - y) ** 2)))
    floor_fit, interp_fit = loglog_slope(Ns, floors, n_boot=200), loglog_slope(Ns, interp, n_boot=200)
    cap = relu_depth_cap_exponent(3.0, 1, 2)
    # The floor is on 1,200 discrete points (short runs fit exactly), so it is a little flatter.
    assert abs(floor_fit.slope - cap) < 0.25 and abs(interp_fit.slope - cap) < 0.1
    old_reading = -min(2 - 1, 3.0) / 1
    assert interp_fit.slope < old_reading - 0.8  # an attainable N^{-2} refutes a claimed floor N^{-1}
    assert all(f <= i for f, i in zip(floors, interp))


@pytest.mark.parametrize("hidden", [1, 2, 3, 4, 5])
def test_piece_count_in_parameters_gives_exponent_at_most_weight_layers(hidden: int) -> None:
    rng = np.random.default_rng(hidden)
    for _ in range(200):
        widths = [int(w) for w in rng.integers(1, 40, size=hidden)]
        N = 2 * widths[0] + sum(a * b + b for a, b in zip(widths[:-1], widths[1:])) + widths[-1] + 1
        pieces = relu_piece_bound(widths)
        assert pieces <= (4 * N) ** math.ceil(hidden / 2)
    # 2⌈H/2⌉ ≤ H + 1 = L_w, with equality for odd H (even L_w): the cap L − 1 = L_w is reached there.
    assert 2 * math.ceil(hidden / 2) <= hidden + 1
    assert (2 * math.ceil(hidden / 2) == hidden + 1) == (hidden % 2 == 1)


def test_separation_cells_parse_and_add_units_once() -> None:
    assert parse_separation_cells(("1:3:2", "2:4.5:3")) == [(1, 3.0, 2), (2, 4.5, 3)]
    for bad in ("1:3", "0:3:2", "1:-1:2", "1:3:1", "a:b:c", "1:3:2:4"):
        with pytest.raises(ValueError, match="`separation_cells`"):
            SmoothnessRatesConfig(separation_cells=(bad,))
    config = SmoothnessRatesConfig(targets=((1, 3.0),), depths=(2, 6), separation_cells=("1:3:2", "2:4:2"))
    assert _estimation_cells(config) == [(1, 3.0, 2), (1, 3.0, 6), (2, 4.0, 2)]
    only = SmoothnessRatesConfig(targets=(), approx_targets=(), separation_cells=("2:4:2",))
    assert _estimation_cells(only) == [(2, 4.0, 2)]
    with pytest.raises(ValueError, match="`targets`"):
        SmoothnessRatesConfig(targets=(), separation_cells=())


def test_presets_contain_the_separation_cells_and_keep_the_old_unit_keys() -> None:
    from structnets.experiments.smoothness_rates import _units

    quick = _units(SmoothnessRatesConfig.quick(), None)
    keys = [u.key for u in quick]
    assert len(keys) == len(set(keys)) == 30  # 12 + 6 estimation (s = 1 at L = 2, 6; s = 3 at L = 2), 6 + 6
    assert "estimation/d=1/s=3/L=2/n=2000" in keys and "estimation/d=1/s=1/L=6/n=20" in keys
    full = [u.key for u in _units(SmoothnessRatesConfig(), None)]
    assert "estimation/d=2/s=4/L=2/n=5000" in full and "estimation/d=1/s=3/L=6/n=50" not in full
    assert len(full) == 58 + 14  # the previous full preset's 58 units, unchanged keys, + 2 cells × 7 sizes
