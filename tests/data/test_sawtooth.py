"""The sawtooth target family f_{T,d}(x) = (1/d) Σ_i tri(T·x_i)."""

from __future__ import annotations

import numpy as np
import pytest

from structnets.data import make_sawtooth, sawtooth, triangle_wave


def test_triangle_wave_values() -> None:
    t = np.array([0.0, 0.25, 0.5, 0.75, 1.0, 1.5, -0.25, 2.125])
    np.testing.assert_allclose(triangle_wave(t), [0.0, 0.5, 1.0, 0.5, 0.0, 1.0, 0.5, 0.25], atol=1e-15)


@pytest.mark.parametrize("teeth", [1, 2, 4, 7])
def test_one_dimensional_sawtooth_has_t_teeth(teeth: int) -> None:
    x = np.linspace(0, 1, 20001)[:, None]
    y = sawtooth(x, teeth)
    peaks = np.flatnonzero((y[1:-1] > y[:-2]) & (y[1:-1] >= y[2:])) + 1
    assert len(peaks) == teeth
    np.testing.assert_allclose(x[peaks, 0], (np.arange(teeth) + 0.5) / teeth, atol=1e-4)
    assert y.min() == 0.0 and y.max() == 1.0


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_variance_is_one_over_twelve_d(dim: int) -> None:
    _, y = make_sawtooth(200_000, dim, 3, seed=1)
    assert abs(y.var() - 1 / (12 * dim)) < 0.02 / (12 * dim)


def test_grid_and_sample_shapes_and_seeding() -> None:
    X, y = make_sawtooth(5, 2, 1, grid=True)
    assert X.shape == (25, 2) and y.shape == (25,)
    assert X.min() == 0.0 and X.max() == 1.0
    a, b = make_sawtooth(10, 3, seed=4), make_sawtooth(10, 3, seed=4)
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[0], make_sawtooth(10, 3, seed=5)[0])


def test_coordinates_add_as_ridges() -> None:
    X, y = make_sawtooth(50, 2, 3, seed=0)
    np.testing.assert_allclose(y, (triangle_wave(3 * X[:, 0]) + triangle_wave(3 * X[:, 1])) / 2, atol=1e-15)


@pytest.mark.parametrize(
    ("kwargs", "argument", "error"),
    [
        ({"teeth": 0}, "teeth", ValueError),
        ({"dim": 0}, "dim", ValueError),
        ({"n": 0}, "n", ValueError),
        ({"teeth": 2.5}, "teeth", TypeError),
    ],
)
def test_bad_arguments_are_named(kwargs: dict, argument: str, error: type[Exception]) -> None:
    with pytest.raises(error, match=f"`{argument}`"):
        make_sawtooth(**{"n": 10, **kwargs})
