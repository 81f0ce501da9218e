"""The max-min network's derived rounding bound and its up-front memory refusal."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from structnets.constructive.maxmin import (
    evaluate_maxmin,
    lattice_pieces_1d,
    maxmin_network,
    maxmin_network_elements,
    maxmin_rounding_bound,
)


def _walk(knots: int, seed: int) -> list:
    """A legal 1-D target: slopes ±1 between integer knots (the issue's 60-knot case)."""
    steps = np.random.default_rng(seed).choice([-1.0, 1.0], size=knots)
    return lattice_pieces_1d(np.arange(knots + 1.0), np.concatenate([[0.0], np.cumsum(steps)]))


@pytest.mark.parametrize("seed", [0, 1])
def test_the_rounding_bound_holds_where_a_fixed_1e9_does_not(seed: int) -> None:
    pieces = _walk(24, seed)
    net = maxmin_network(pieces)
    x = np.linspace(0.0, 24.0, 801)
    with torch.no_grad():
        out = net(torch.tensor(x[:, None])).numpy().ravel()
    error = float(np.abs(out - evaluate_maxmin(pieces, x)).max())
    bound = maxmin_rounding_bound(net, pieces, 24.0)
    assert error <= bound
    assert bound < 1e-5  # not vacuous: |f| ≤ 24 here
    # the bound grows with the network's scale and max |f|: a single piece (s = 1, |f| ≤ 1) is at rounding level
    one = [[(np.array([1.0]), 0.0)]]
    assert maxmin_rounding_bound(maxmin_network(one), one, 1.0) < 1e-14


def test_the_bound_sees_a_perturbed_lift() -> None:
    pieces = _walk(8, 3)
    net = maxmin_network(pieces)
    clean = maxmin_rounding_bound(net, pieces, 8.0)
    with torch.no_grad():
        net[0].bias.add_(1e-6)
    assert maxmin_rounding_bound(net, pieces, 8.0) > clean + 1e-6


def test_memory_is_counted_and_an_impossible_build_refused_up_front(monkeypatch: pytest.MonkeyPatch) -> None:
    # 4 groups of 3 pieces in 1-D: width 4·4 = 16; selections 16×8, 8×4, 4×2, 2×1, each twice
    assert maxmin_network_elements(4, 3, 1) == 16 + 16 + 2 * (128 + 32 + 8 + 2) + 1
    # K⁴ growth: doubling the pieces multiplies the count by about 16
    assert maxmin_network_elements(128, 128, 1) / maxmin_network_elements(64, 64, 1) == pytest.approx(16, rel=0.01)
    import structnets._validation as validation

    monkeypatch.setattr(validation, "memory_bytes", lambda: 10_000)
    with pytest.raises(ValueError, match=r"`pieces` \(24 groups.*bytes\), more than this machine's memory"):
        maxmin_network(_walk(24, 0))
