"""The piecewise-linear floor is the exact segmented least-squares optimum and bounds every ReLU net."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from structnets.analysis.piecewise_linear import piecewise_linear_floor, relu_piece_bound


def _affine_rss(x: np.ndarray, y: np.ndarray) -> float:
    if x.size == 0:
        return 0.0
    design = np.stack([x, np.ones_like(x)], axis=1)
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    return float(np.sum((design @ coef - y) ** 2))


def _brute_force_floor(x: np.ndarray, y: np.ndarray, pieces: int, *, keep_ties: bool = False) -> float:
    # Every segmentation of the sorted points into <= `pieces` contiguous runs; with `keep_ties`
    # only cuts between distinct abscissae (the constraint a genuine function imposes).
    order = np.argsort(x, kind="stable")
    xs, ys = x[order], y[order]
    n = xs.size
    cuts = [c for c in range(1, n) if not keep_ties or xs[c] != xs[c - 1]]
    best = np.inf
    for k in range(pieces):
        for chosen in itertools.combinations(cuts, k):
            bounds = (0, *chosen, n)
            best = min(best, sum(_affine_rss(xs[a:b], ys[a:b]) for a, b in zip(bounds[:-1], bounds[1:])))
    return best / n


def _relu_net(widths: list[int], generator: torch.Generator) -> torch.nn.Sequential:
    sizes = [1, *widths, 1]
    layers: list[torch.nn.Module] = []
    for index, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        linear = torch.nn.Linear(fan_in, fan_out, dtype=torch.float64)
        with torch.no_grad():
            linear.weight.copy_(torch.randn(fan_out, fan_in, generator=generator, dtype=torch.float64) * 1.5)
            linear.bias.copy_(torch.randn(fan_out, generator=generator, dtype=torch.float64))
        layers.append(linear)
        if index < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def _network_mse(net: torch.nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    with torch.no_grad():
        out = net(torch.from_numpy(x)[:, None]).squeeze(1).numpy()
    return float(np.mean((out - y) ** 2))


# ---------------------------------------------------------------- exactness of the DP


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dp_equals_brute_force_over_all_segmentations(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.0, 3.0, 9)
    y = rng.normal(size=9) + x**2
    floor = piecewise_linear_floor(x, y, 4)
    for m in range(1, 5):
        assert floor[m - 1] == pytest.approx(_brute_force_floor(x, y, m), rel=1e-12, abs=1e-12)


def test_ties_give_a_floor_below_the_tie_respecting_optimum() -> None:
    # Splitting tied abscissae is a relaxation: the floor may only be lower than the optimum
    # over cuts between distinct x, which itself bounds any function's error.
    rng = np.random.default_rng(3)
    x = np.repeat(rng.uniform(0.0, 1.0, 5), 2)
    y = rng.normal(size=10)
    floor = piecewise_linear_floor(x, y, 4)
    strict_gap = 0.0
    for m in range(1, 5):
        assert floor[m - 1] == pytest.approx(_brute_force_floor(x, y, m), rel=1e-12, abs=1e-12)
        tie_respecting = _brute_force_floor(x, y, m, keep_ties=True)
        assert floor[m - 1] <= tie_respecting + 1e-12
        strict_gap = max(strict_gap, tie_respecting - floor[m - 1])
    assert strict_gap > 1e-3  # the relaxation is visible on this data, so the check is not vacuous


def test_one_piece_is_the_least_squares_line() -> None:
    rng = np.random.default_rng(4)
    x = rng.uniform(-1.0, 1.0, 300)
    y = np.sin(4 * x) + 0.3 * rng.normal(size=300)
    slope, intercept = np.polyfit(x, y, 1)
    expected = np.mean((slope * x + intercept - y) ** 2)
    assert piecewise_linear_floor(x, y, 1)[0] == pytest.approx(expected, rel=1e-12)


def test_non_increasing_in_pieces_and_zero_once_runs_are_pairs() -> None:
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=40), rng.normal(size=40)
    floor = piecewise_linear_floor(x, y, 25)
    assert floor.shape == (25,)
    assert np.all(np.diff(floor) <= 0.0)
    assert np.all(floor[:19] > 0.0)  # 19 runs leave one run of >= 3 generic points
    np.testing.assert_array_equal(floor[19:], 0.0)  # 20 runs of two distinct points fit exactly


def test_more_pieces_than_points_is_clamped_to_zero() -> None:
    floor = piecewise_linear_floor([0.0, 1.0, 2.0], [0.0, 5.0, 1.0], 7)
    assert floor.shape == (7,)
    assert floor[0] > 0.0
    np.testing.assert_array_equal(floor[1:], 0.0)


def test_invariances_order_affine_x_and_y_scale() -> None:
    rng = np.random.default_rng(6)
    x, y = rng.uniform(size=50), rng.normal(size=50)
    base = piecewise_linear_floor(x, y, 8)
    perm = rng.permutation(50)
    np.testing.assert_allclose(piecewise_linear_floor(x[perm], y[perm], 8), base, rtol=1e-10)
    np.testing.assert_allclose(piecewise_linear_floor(-3.0 * x + 7.0, y, 8), base, rtol=1e-10)
    np.testing.assert_allclose(piecewise_linear_floor(x, 4.0 * y - 2.0 + 5.0 * x, 8), 16.0 * base, rtol=1e-9)


# ---------------------------------------------------------------- piecewise-linear data


@pytest.mark.parametrize("pieces", [2, 3, 5])
def test_cpwl_data_with_m_pieces_is_fitted_exactly_by_m_and_not_by_m_minus_one(pieces: int) -> None:
    rng = np.random.default_rng(pieces)
    x = np.linspace(-1.0, 1.0, 61)
    knots = np.linspace(-1.0, 1.0, pieces + 1)[1:-1] + rng.uniform(-0.05, 0.05, pieces - 1)
    kinks = rng.choice([-1.0, 1.0], pieces - 1) * rng.uniform(1.0, 2.0, pieces - 1)
    y = 0.7 * x + 0.2 + sum(c * np.maximum(x - t, 0.0) for c, t in zip(kinks, knots))
    floor = piecewise_linear_floor(x, y, pieces + 2)
    scale = float(np.var(y))
    assert np.all(floor[pieces - 1 :] <= 1e-14 * scale)  # rounding of y only
    assert floor[pieces - 2] > 1e-4 * scale


def test_x_squared_floor_matches_the_closed_form_and_scales_as_m_to_minus_four() -> None:
    # For y = x² on x_i = (i + 1/2)/n the residual of a run of k points depends only on k:
    # δ⁴ k(k² − 1)(k² − 4)/180 with δ = 1/n (translation adds an affine term), convex in k, so
    # the optimum uses equal runs; as k → ∞ the MSE is h⁴/180, h = 1/m.
    n = 2048
    x = (np.arange(n) + 0.5) / n
    floor = piecewise_linear_floor(x, x**2, 32)
    for m in (1, 4, 8, 16, 32):
        k = n // m
        exact = m * k * (k * k - 1.0) * (k * k - 4.0) / 180.0 / n**5
        assert floor[m - 1] == pytest.approx(exact, rel=1e-8)
        assert floor[m - 1] == pytest.approx((1.0 / m) ** 4 / 180.0, rel=2e-3)
    ms = np.arange(4, 33)
    slope = np.polyfit(np.log(ms), np.log(floor[ms - 1]), 1)[0]
    assert abs(slope + 4.0) < 0.15


# ---------------------------------------------------------------- lower bound on ReLU networks


@pytest.mark.parametrize("widths", [[1], [3], [8], [2, 2], [3, 3], [4, 2]])
def test_random_relu_networks_never_beat_the_floor(widths: list[int]) -> None:
    rng = np.random.default_rng(7)
    x = np.sort(rng.uniform(-2.0, 2.0, 150))
    y = np.sin(2.5 * x) + 0.5 * x**2
    floor = piecewise_linear_floor(x, y, 40)
    bound = floor[min(relu_piece_bound(widths), 40) - 1]
    assert bound > 0.0
    generator = torch.Generator().manual_seed(sum(widths))
    for _ in range(50):
        net = _relu_net(widths, generator)
        assert _network_mse(net, x, y) >= bound


@pytest.mark.parametrize("width", [2, 4, 8])
def test_least_squares_fitted_relu_networks_never_beat_the_floor(width: int) -> None:
    # Fix the breakpoints, solve the output layer exactly: the best net with those breakpoints.
    # One unit's breakpoint lies left of the data (it acts as the linear term there).
    rng = np.random.default_rng(width)
    x = np.sort(rng.uniform(-1.0, 1.0, 200))
    y = np.sin(3.0 * x) + np.abs(x) ** 1.5
    floor = piecewise_linear_floor(x, y, 16)
    bound = floor[relu_piece_bound([width]) - 1]
    ratios = []
    for _ in range(40):
        knots = np.concatenate([[-1.5], np.sort(rng.uniform(-1.0, 1.0, width - 1))])
        hidden = torch.nn.Linear(1, width, dtype=torch.float64)
        output = torch.nn.Linear(width, 1, dtype=torch.float64)
        with torch.no_grad():
            hidden.weight.fill_(1.0)
            hidden.bias.copy_(torch.from_numpy(-knots))
            features = torch.relu(hidden(torch.from_numpy(x)[:, None])).numpy()
            design = np.concatenate([features, np.ones((x.size, 1))], axis=1)
            coef, *_ = np.linalg.lstsq(design, y, rcond=None)
            output.weight.copy_(torch.from_numpy(coef[None, :-1]))
            output.bias.fill_(float(coef[-1]))
        mse = _network_mse(torch.nn.Sequential(hidden, torch.nn.ReLU(), output), x, y)
        assert mse >= bound
        ratios.append(mse / bound)
    assert min(ratios) < 20.0  # the floor is not vacuously small: good fits come within this factor


def test_floor_is_attained_on_x_squared_by_a_relu_network() -> None:
    # The least-squares line of x² on [a, a + h] is the chord lowered by h²/6, so every run's
    # residual equals h²/6 at both ends and the optimal discontinuous fit is continuous: a ReLU
    # net 1 -> m -> 1 with knots at the run ends (one left of the data, acting as the linear
    # term) with its output layer solved by least squares attains the m-piece floor.
    n, m = 1024, 16
    x = (np.arange(n) + 0.5) / n
    y = x**2
    floor = piecewise_linear_floor(x, y, m + 1)
    knots = np.arange(m) / m - 1e-9
    design = np.concatenate([np.maximum(x[:, None] - knots[None, :], 0.0), np.ones((n, 1))], axis=1)
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    mse = float(np.mean((design @ coef - y) ** 2))
    assert mse >= floor[relu_piece_bound([m]) - 1]
    assert mse == pytest.approx(floor[m - 1], rel=1e-9)
    assert floor[m - 2] > 1.1 * mse  # one piece fewer cannot reach it


# ---------------------------------------------------------------- piece count


def test_relu_piece_bound_values() -> None:
    assert relu_piece_bound([1]) == 2
    assert relu_piece_bound([7]) == 8
    assert relu_piece_bound([2, 3]) == 12
    assert relu_piece_bound((4, 4, 4)) == 125


@pytest.mark.parametrize("widths", [[5], [3, 3], [2, 4, 2]])
def test_activation_regions_along_the_line_respect_the_piece_bound(widths: list[int]) -> None:
    # Count maximal intervals of constant activation pattern on a dense grid (a net is affine on
    # each), over random nets. One hidden layer attains w + 1 (all breakpoints in the grid).
    generator = torch.Generator().manual_seed(11)
    grid = torch.linspace(-20.0, 20.0, 40001, dtype=torch.float64)[:, None]
    bound = relu_piece_bound(widths)
    most = 0
    for _ in range(20):
        net = _relu_net(widths, generator)
        patterns = []
        h = grid
        with torch.no_grad():
            for layer in net:
                h = layer(h)
                if isinstance(layer, torch.nn.ReLU):
                    patterns.append(h > 0)
        pattern = torch.cat(patterns, dim=1)
        regions = 1 + int((pattern[1:] != pattern[:-1]).any(dim=1).sum())
        assert regions <= bound
        most = max(most, regions)
    if len(widths) == 1:
        assert most == bound


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("x", "y", "max_pieces", "error", "name"),
    [
        (np.zeros((2, 2)), np.zeros(4), 2, ValueError, "`x`"),
        (np.zeros(3), np.zeros((3, 1)), 2, ValueError, "`y`"),
        (np.zeros(0), np.zeros(0), 2, ValueError, "`x`"),
        (np.array([0.0, np.nan]), np.zeros(2), 2, ValueError, "`x`"),
        (np.zeros(2), np.array([np.inf, 0.0]), 2, ValueError, "`y`"),
        (np.zeros(3), np.zeros(2), 2, ValueError, "`x` and `y`"),
        (np.zeros(3), np.zeros(3), 0, ValueError, "`max_pieces`"),
        (np.zeros(3), np.zeros(3), 2.0, TypeError, "`max_pieces`"),
        (np.zeros(3), np.zeros(3), True, TypeError, "`max_pieces`"),
        (["a", "b"], np.zeros(2), 2, TypeError, "`x`"),
    ],
)
def test_floor_rejects_bad_input_naming_the_argument(
    x: object, y: object, max_pieces: object, error: type[Exception], name: str
) -> None:
    with pytest.raises(error, match=name):
        piecewise_linear_floor(x, y, max_pieces)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("widths", "error", "name"),
    [
        ([], ValueError, "`widths`"),
        ([0], ValueError, r"`widths\[0\]`"),
        ([3, -1], ValueError, r"`widths\[1\]`"),
        ([1.5], TypeError, r"`widths\[0\]`"),
        ("12", TypeError, "`widths`"),
        (3, TypeError, "`widths`"),
    ],
)
def test_piece_bound_rejects_bad_widths_naming_the_argument(widths: object, error: type[Exception], name: str) -> None:
    with pytest.raises(error, match=name):
        relu_piece_bound(widths)  # type: ignore[arg-type]
