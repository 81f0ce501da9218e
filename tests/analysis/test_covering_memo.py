"""The memo of per-layer coverings: a hit is exactly the computation, read-only, and bounded."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from structnets.analysis import covering, rank_sparse_bounds
from structnets.analysis.covering import _compute_log_covering_routes, _log_covering_routes, _RoutesMemo

ROUTES = ("parameter", "truncate", "maurey")


def _radii(size: int = 300) -> np.ndarray:
    return np.logspace(-6, 0.2, size)


def _same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        for x, y in zip(a[name], b[name], strict=True):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)


@pytest.fixture(autouse=True)
def _empty_memo():
    covering._ROUTES_MEMO.clear()
    yield
    covering._ROUTES_MEMO.clear()


@pytest.mark.parametrize(
    ("p", "m", "factor_rank"), [(None, None, None), (0.0, 7.0, None), (0.5, 3.2, 40), (2.0, 11.0, None)]
)
def test_a_hit_returns_exactly_the_computation(p, m, factor_rank) -> None:
    t = _radii()
    fresh = _compute_log_covering_routes(96, 64, t, p, m, factor_rank)
    first = _log_covering_routes(96, 64, t, p, m, factor_rank)
    second = _log_covering_routes(96, 64, t.copy(), p, m, factor_rank)  # equal bytes, another array
    _same(first, fresh)
    _same(second, fresh)
    assert second["parameter"][0] is first["parameter"][0]  # served from the memo
    assert set(first) == ({"parameter"} if p is None else set(ROUTES))


def test_other_arguments_are_other_entries() -> None:
    t = _radii()
    base = _log_covering_routes(96, 64, t, 0.5, 3.2)
    for args in [(64, 96, t, 0.5, 3.2), (96, 64, t, 0.5, 3.3), (96, 64, t, 1.0, 3.2), (96, 64, t, 0.5, 3.2, 20)]:
        _same(_log_covering_routes(*args), _compute_log_covering_routes(*args))
    nudged = t.copy()
    nudged[17] = np.nextafter(nudged[17], 1.0)  # one radius one ulp larger
    again = _log_covering_routes(96, 64, nudged, 0.5, 3.2)
    _same(again, _compute_log_covering_routes(96, 64, nudged, 0.5, 3.2))
    assert again["maurey"][0] is not base["maurey"][0]


def test_returned_arrays_are_read_only_and_the_dict_is_the_callers() -> None:
    t = _radii()
    routes = _log_covering_routes(96, 64, t, 0.5, 3.2)
    for name in ROUTES:
        for array in routes[name]:
            with pytest.raises(ValueError, match="read-only"):
                array[0] = 0
    routes["maurey"] = routes["parameter"]  # the caller's dict: the memo keeps its own
    _same(_log_covering_routes(96, 64, t, 0.5, 3.2), _compute_log_covering_routes(96, 64, t, 0.5, 3.2))


def test_the_memo_stays_within_its_byte_budget() -> None:
    t = _radii(100)
    routes = _compute_log_covering_routes(96, 64, t, 0.5, 3.2)
    size = t.nbytes + sum(array.nbytes for route in routes.values() for array in route)
    memo = _RoutesMemo(max_bytes=2 * size)
    keys = [(96, 64, 0.5, m, None, t.shape, t.tobytes()) for m in (1.0, 2.0, 3.0)]
    for key in keys:
        memo.put(key, routes)
    assert memo.get(keys[0]) is None  # the oldest went first
    assert memo.get(keys[1]) is not None and memo.get(keys[2]) is not None
    small = _RoutesMemo(max_bytes=size - 1)
    small.put(keys[0], routes)  # larger than the whole budget: not kept
    assert small.get(keys[0]) is None


def test_bound_calls_sharing_layers_give_the_numbers_of_fresh_calls() -> None:
    """``rank_sparse_bounds`` with each tail covering and allocation: the memo changes no number."""
    torch.manual_seed(0)
    matrices = [torch.randn(48, 20), torch.randn(48, 48) / 4, torch.randn(3, 48)]
    common = {"n": 2000, "margin": 1.0, "input_norm": 5.0, "empirical_risk": 0.05, "delta": 0.05}
    ps = [0.0, 0.5, 1.0]
    calls = [{}, {"tail_covering": "truncate"}, {"allocation": "equal"}, {}]
    shared = [rank_sparse_bounds(matrices, ps=ps, **common, **extra) for extra in calls]
    for extra, got in zip(calls, shared, strict=True):
        covering._ROUTES_MEMO.clear()
        fresh = rank_sparse_bounds(matrices, ps=ps, **common, **extra)
        assert [dataclasses.asdict(b) for b in got] == [dataclasses.asdict(b) for b in fresh]
