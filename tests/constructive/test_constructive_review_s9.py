"""Review (session 9) of the constructions: float64 checks of what their docstrings claim."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from structnets.constructive import dlor_network_from_dense, dlor_product
from structnets.constructive.dlor_factor import dense_product
from structnets.models import mlp

F64 = torch.float64


def _sup_error(net: torch.nn.Module, dlor: torch.nn.Module, x: torch.Tensor) -> float:
    with torch.no_grad():
        return float((dlor(x) - net(x)).abs().max())


@pytest.mark.parametrize("activation", ["relu", "softplus", "sigmoid", "swish"])
def test_deep_network_of_a_low_rank_mlp_converges_as_h_falls(activation: str) -> None:
    # A bottleneck MLP has singular hidden weights UV: dlor_product's R has rounding-level pivots
    # (~1e-17), and its pivot shift 2^m (m ~ 56) put every column of R' at 2^m while the first
    # layer shrank its input by 2^{e-m}. The offset c (and σ(c)) of the near-linear regime then
    # rounds the shrunken values away and R' multiplies that rounding by 2^m: at h = 1e-3 the
    # error was 3.6e2 (ReLU, claimed exactly 0), 1.9e8 (softplus), 3e-3 for sigmoid at every h.
    torch.manual_seed(0)
    net = mlp(3, 2, 5, 3, activation=activation, bottleneck=2).to(F64)
    x = torch.rand(200, 3, dtype=F64) * 2 - 1
    errors = [_sup_error(net, dlor_network_from_dense(net, "deep", h=h), x) for h in (1e-2, 1e-3, 1e-4)]
    if activation == "relu":  # h·max|z| < c = 1: λ_h is exact, only rounding (~ε/h) is left
        assert max(errors) < 1e-9, errors
    else:  # O(h) (O(h²) for sigmoid at c = 0): each tenfold step of h cuts the error ≥ 5-fold
        assert errors[1] <= errors[0] / 5 and errors[2] <= errors[1] / 5, errors
        assert errors[2] < 1e-3, errors


def test_dlor_product_of_a_singular_matrix_stays_exact() -> None:
    # The public decomposition keeps its pivot shift (columnwise accuracy): checked here so that the
    # network's unshifted factorisation did not change it.
    torch.manual_seed(1)
    W = torch.randn(6, 2, dtype=F64) @ torch.randn(2, 6, dtype=F64)
    for rank in (1, 2, 5):
        factors = dlor_product(W, rank)
        assert float((dense_product(factors) - W).abs().max()) <= 1e-14 * float(W.abs().max())


@pytest.mark.parametrize("activation", ["swish", "gelu", "softplus", "tanh", "sigmoid", "relu"])
@pytest.mark.parametrize(("offset", "spread", "n"), [(1e4, 1.0, 20), (1e6, 10.0, 30), (-5e5, 1.0, 10)])
def test_rank_one_interpolant_network_meets_the_residual_it_certified(
    activation: str, offset: float, spread: float, n: int
) -> None:
    # The solve used κ(t − β) but the network computes fl(fl(κ·vᵀx) + fl(−κβ)): with inputs far
    # from 0 the two differ by ~ε·κ|t| in every argument, and the returned network missed y by up
    # to 7.7e-8 (sigmoid, offset −5e5) while the solve's residual had passed the 1e-9 check.
    from structnets.constructive import rank_one_interpolant
    from structnets.constructive.rank_one import _allowed_residual

    rng = np.random.default_rng(0)
    x = offset + spread * np.sort(rng.random(n))
    y = rng.standard_normal(n)
    net = rank_one_interpolant(x, y, activation)
    with torch.no_grad():
        out = net(torch.tensor(x)[:, None]).squeeze(-1).numpy()
    ts = torch.tensor(x)
    allowed = _allowed_residual(ts, float(np.diff(x).min()), torch.tensor(y))
    assert np.abs(out - y).max() <= allowed, (np.abs(out - y).max(), allowed)


@pytest.mark.parametrize("offset", [1e5, 1e6, 1e8])
def test_lattice_pieces_1d_far_from_the_origin_represent_the_interpolant(offset: float) -> None:
    # S_k = {j : ℓ_j ≥ ℓ_k at t_k and t_{k+1}} was decided with an absolute slack of 1e-12; a
    # concave neighbour meets ℓ_k at the shared knot with equality, and at |t|, |v| ~ 1e5..1e8 the
    # rounding of m·t + c (~ε·1e6) excluded it: max-min then exceeded the interpolant by 0.14..1.5
    # on walks of unit-order slopes (96 of 300 random walks with offsets 1..1e8).
    from structnets.constructive import evaluate_maxmin, lattice_pieces_1d

    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.integers(3, 12))
        t = offset + np.cumsum(rng.random(n) + 0.1)
        v = offset / 2 + np.concatenate([[0.0], np.cumsum(rng.uniform(-1, 1, n - 1) * np.diff(t))])
        xs = np.concatenate([t, np.linspace(t[0], t[-1], 2001), [t[0] - 3.0, t[-1] + 3.0]])
        got = evaluate_maxmin(lattice_pieces_1d(t, v), xs[:, None])
        slopes = np.diff(v) / np.diff(t)
        want = np.interp(xs, t, v, left=v[0] - 3.0 * slopes[0], right=v[-1] + 3.0 * slopes[-1])
        # the stored pieces round m·t + c at the scale of |t| + |v|: a few ulps of that
        assert np.abs(got - want).max() <= 1e-13 * (offset + abs(v).max()), np.abs(got - want).max()


def test_lattice_pieces_1d_is_the_affine_extension_beyond_the_end_knots() -> None:
    # "the piecewise-linear interpolant ... on ℝ, pieces extended affinely beyond the ends": S_0 and
    # S_{n−1} were decided on [t_0, t_1] and [t_{n−1}, t_n] only, not on the half-lines the end
    # pieces hold, so 85 of 200 random walks were wrong outside the knots (by 0.59 three units past
    # t_n, 39 a hundred units past).
    from structnets.constructive import evaluate_maxmin, lattice_pieces_1d

    rng = np.random.default_rng(3)
    for _ in range(100):
        n = int(rng.integers(3, 12))
        t = np.cumsum(rng.random(n) + 0.1)
        v = np.concatenate([[0.0], np.cumsum(rng.uniform(-1, 1, n - 1) * np.diff(t))])
        slopes = np.diff(v) / np.diff(t)
        steps = np.array([0.5, 3.0, 100.0])
        xs = np.concatenate([t[0] - steps, t[-1] + steps])
        want = np.concatenate([v[0] - steps * slopes[0], v[-1] + steps * slopes[-1]])
        got = evaluate_maxmin(lattice_pieces_1d(t, v), xs[:, None])
        assert np.abs(got - want).max() <= 1e-12, np.abs(got - want).max()


def test_dlor_network_refuses_activations_that_differ_only_in_state() -> None:
    # `mlp` must use one activation throughout; the check compared type and repr, and a Swish's repr
    # shows its initial β: two learnable Swish layers trained to β = 1 and β = 3 passed, and every
    # layer got the first one's β ("summed", claimed exact, was off by 0.10).
    from torch import nn

    from structnets.nn import Swish

    torch.manual_seed(0)
    first, second = Swish(1.0, learnable=True), Swish(1.0, learnable=True)
    with torch.no_grad():
        second.beta.fill_(3.0)
    net = nn.Sequential(nn.Linear(3, 4), first, nn.Linear(4, 4), second, nn.Linear(4, 2)).to(F64)
    with pytest.raises(ValueError, match="one activation"):
        dlor_network_from_dense(net, "summed")
    with torch.no_grad():
        second.beta.fill_(1.0)
    x = torch.randn(100, 3, dtype=F64)
    assert _sup_error(net, dlor_network_from_dense(net, "summed"), x) < 1e-13
