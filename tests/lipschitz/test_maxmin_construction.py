"""maxmin_network: exact on a dense grid (float64), built only from certified layers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from structnets.analysis import lipschitz_lower_bound, lipschitz_upper_bound
from structnets.constructive import evaluate_maxmin, lattice_pieces_1d, maxmin_network
from structnets.nn import MaxMin, NormConstrainedLinear


def _random_pieces(rng: np.random.Generator, dim: int, groups: int, max_size: int) -> list:
    def piece() -> tuple[np.ndarray, float]:
        a = rng.normal(size=dim)
        return a / np.linalg.norm(a) * rng.uniform(0.1, 1.0), float(rng.normal())

    return [[piece() for _ in range(rng.integers(1, max_size + 1))] for _ in range(groups)]


@pytest.mark.parametrize("seed", range(4))
def test_exact_on_dense_grid_2d(seed: int) -> None:
    rng = np.random.default_rng(seed)
    pieces = _random_pieces(rng, 2, groups=int(rng.integers(1, 7)), max_size=5)
    net = maxmin_network(pieces)
    grid = np.stack(np.meshgrid(np.linspace(-4, 4, 301), np.linspace(-4, 4, 301)), -1).reshape(-1, 2)
    with torch.no_grad():
        out = net(torch.tensor(grid))[:, 0].numpy()
    assert np.abs(out - evaluate_maxmin(pieces, grid)).max() <= 1e-6
    kinds = {type(m) for m in net[:-1]}
    assert kinds <= {NormConstrainedLinear, MaxMin}
    assert all(m.lipschitz_bound() <= 1.0 for m in net[:-1])
    assert lipschitz_lower_bound(net, torch.tensor(grid[::97]), steps=20) <= 1 + 1e-9


@pytest.mark.parametrize("seed", range(3))
def test_piecewise_linear_interpolant_in_1d_is_exact(seed: int) -> None:
    rng = np.random.default_rng(seed)
    knots = np.sort(rng.uniform(-3, 3, 15))
    values = np.concatenate([[0.0], np.cumsum(rng.uniform(-1, 1, 14) * np.diff(knots))])
    pieces = lattice_pieces_1d(knots, values)
    net = maxmin_network(pieces)
    x = np.linspace(knots[0], knots[-1], 5001)
    with torch.no_grad():
        out = net(torch.tensor(x)[:, None])[:, 0].numpy()
    assert np.abs(out - np.interp(x, knots, values)).max() <= 1e-6


def test_orthonormal_pieces_give_certified_bound_one() -> None:
    # Orthonormal piece gradients give ‖A‖₂ = 1, so s = 1 and the layer-wise certificate is exactly 1.
    pieces = [[(np.array([1.0, 0.0]), 0.5)], [(np.array([0.0, 1.0]), -0.25)]]
    net = maxmin_network(pieces)
    assert lipschitz_upper_bound(net) <= 1.0 + 1e-12
    x = np.random.default_rng(0).normal(size=(100, 2))
    with torch.no_grad():
        torch.testing.assert_close(net(torch.tensor(x))[:, 0], torch.tensor(np.maximum(x[:, 0] + 0.5, x[:, 1] - 0.25)))


@pytest.mark.parametrize(
    "pieces",
    [
        [],
        [[]],
        [[(np.array([2.0, 0.0]), 0.0)]],
        [[(np.array([0.5]), 0.0), (np.array([0.1, 0.2]), 1.0)]],
        [[(np.array([np.nan]), 0.0)]],
        "abc",
    ],
    ids=["empty", "empty-group", "steep", "dim-mismatch", "nan", "string"],
)
def test_bad_pieces_are_named(pieces: object) -> None:
    with pytest.raises(ValueError, match="`pieces"):
        maxmin_network(pieces)  # type: ignore[arg-type]


def test_lattice_rejects_steep_or_unsorted_data() -> None:
    with pytest.raises(ValueError, match="`values`"):
        lattice_pieces_1d([0.0, 1.0], [0.0, 2.0])
    with pytest.raises(ValueError, match="`knots`"):
        lattice_pieces_1d([1.0, 0.0], [0.0, 0.5])


def test_lattice_bound_certifies_what_the_layerwise_product_cannot() -> None:
    """max ‖a‖₂ bounds the Lipschitz constant of max/min of affine pieces; on random 1-Lipschitz
    targets it is ≤ 1 while the exact network's layer-wise certificate is s > 1, and the measured
    secant ratio of the network never exceeds it."""
    from structnets.constructive import maxmin_lipschitz_bound
    from structnets.constructive.lipschitz_targets import random_maxmin_target

    above_one = 0
    for seed in range(4):
        target = random_maxmin_target(2, 3, 3, seed=seed)
        bound = maxmin_lipschitz_bound(target.pieces)
        assert bound <= 1.0
        net = maxmin_network(target.pieces)
        above_one += lipschitz_upper_bound(net) > 1.0
        x = torch.as_tensor(np.random.default_rng(seed).uniform(-1, 1, size=(400, 2)))
        with torch.no_grad():
            y = net(x)[:, 0]
        dx = torch.cdist(x, x)
        dy = (y[:, None] - y[None, :]).abs()
        mask = dx > 1e-6
        assert float((dy[mask] / dx[mask]).max()) <= bound * (1 + 1e-9)
    assert above_one > 0  # the layer-wise product alone would not certify these networks


def test_lattice_bound_rounds_up_and_names_bad_pieces() -> None:
    from fractions import Fraction

    from structnets.constructive import maxmin_lipschitz_bound

    pieces = [[(np.array([0.6, 0.8]), 0.0)], [(np.array([0.3, -0.1]), 1.0), (np.array([1e-3, 0.0]), 2.0)]]
    bound = maxmin_lipschitz_bound(pieces)
    exact = Fraction(0.6) ** 2 + Fraction(0.8) ** 2
    assert Fraction(bound) ** 2 >= exact > Fraction(np.nextafter(bound, 0.0)) ** 2
    assert maxmin_lipschitz_bound([[(np.array([0.0, 1.0]), 0.0)]]) == 1.0
    with pytest.raises(ValueError, match="`pieces`"):
        maxmin_lipschitz_bound([])
