"""Composition of per-layer covers (docs/bounds.md, Sec. 3): the radius budget Σ_i t_i ≤ γε/(2K),
its allocation over layers, and how the composed bound scales with depth at the norm end."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from structnets.analysis import parameter_count_bound, rank_sparse_bound, rank_sparse_bounds
from structnets.analysis.bounds import _allocate

F64 = torch.float64


def _orthogonal(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=F64))
    return q


def _spiked(width: int, floor: float, seed: int) -> torch.Tensor:
    """A full-rank width × width layer with singular values (1, floor, …, floor)."""
    sigma = torch.full((width,), floor, dtype=F64)
    sigma[0] = 1.0
    return _orthogonal(width, seed) @ torch.diag(sigma) @ _orthogonal(width, seed + 1000)


def _slope(x: list[float], y: list[float]) -> float:
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


# ------------------------------------------------------------------ the allocation itself


def test_allocation_of_maurey_costs_attains_the_hoelder_optimum() -> None:
    """min Σ c_i/t_i² s.t. Σ t_i ≤ T is (Σ c_i^{1/3})³/T² (Hölder; t_i ∝ c_i^{1/3}), against
    L² Σ c_i / T² for the equal split; with equal c_i both are L³ c / T² (Jensen)."""
    tau = np.logspace(-6.0, 0.0, 3001)
    budgets = np.array([1e-3, 1e-2, 0.1, 0.5])
    for c in ([1.0, 1.0, 1.0, 1.0], [1000.0, 1.0, 1.0], [5.0, 80.0, 0.3, 2.0, 40.0]):
        c = np.asarray(c)
        depth = c.size
        value, picks = _allocate(c[:, None] / tau[None, :] ** 2, tau, budgets)
        optimum = c.__pow__(1 / 3).sum() ** 3 / budgets**2
        equal = depth**2 * c.sum() / budgets**2
        # a feasible grid allocation can never beat the continuous optimum, and gets within 3% of it
        assert np.all(value >= optimum * (1 - 1e-12))
        assert np.all(value <= optimum * 1.03)
        assert np.all(tau[picks].sum(axis=1) <= budgets * (1 + 1e-12))
        np.testing.assert_allclose(value, np.sum(c[None, :] / tau[picks] ** 2, axis=1), rtol=1e-12)
        if np.all(c == c[0]):
            np.testing.assert_allclose(optimum, equal, rtol=1e-12)  # no allocation removes the L³
        else:
            assert np.all(value < 0.9 * equal)


def test_allocation_of_parametric_costs() -> None:
    """min Σ P_i log(1/t_i) s.t. Σ t_i ≤ T: t_i ∝ P_i, value Σ P_i log(ΣP/(P_i T)); only logs move."""
    tau = np.logspace(-9.0, 0.0, 4001)
    P = np.array([7840.0, 4096.0, 4096.0, 640.0])
    budgets = np.array([1e-4, 1e-2])
    value, _ = _allocate(P[:, None] * np.log(1.0 / tau[None, :]), tau, budgets)
    optimum = np.array([np.sum(P * np.log(P.sum() / (P * T))) for T in budgets])
    equal = np.array([P.sum() * math.log(P.size / T) for T in budgets])
    assert np.all(value >= optimum - 1e-9) and np.all(value <= optimum + P.sum() * 0.01)
    assert np.all(value < equal) and np.all(equal - value < 0.1 * equal)


def test_allocation_value_is_non_increasing_in_the_budget() -> None:
    tau = np.logspace(-7.0, 0.0, 1501)
    rng = np.random.default_rng(0)
    costs = np.stack(
        [
            np.maximum.accumulate((rng.uniform(1, 50) / tau**2 + rng.uniform(0, 9, tau.size))[::-1])[::-1]
            for _ in range(4)
        ]
    )
    budgets = np.logspace(-6.0, 0.0, 400)
    value, picks = _allocate(costs, tau, budgets)
    assert np.all(np.diff(value) <= 0)
    assert np.all(tau[picks].sum(axis=1) <= budgets * (1 + 1e-12))


# --------------------------------------------------------------- Lemma 1 with per-layer radii


def test_per_layer_radii_compose_to_k_sum_t() -> None:
    """Layer-wise perturbations of relative size t_i move the outputs by ≤ K √n Σ t_i (Σ t_i ≤ 1)."""
    g = torch.Generator().manual_seed(3)
    shapes = [(30, 12), (25, 30), (25, 25), (4, 25)]
    layers = [torch.randn(m, c, generator=g, dtype=F64) / math.sqrt(c) for m, c in shapes]
    X = torch.randn(40, 12, generator=g, dtype=F64)
    spectral = [float(torch.linalg.matrix_norm(a, ord=2)) for a in layers]
    K = math.e * float(X.norm()) / math.sqrt(40) * math.prod(spectral)

    def forward(mats: list[torch.Tensor]) -> torch.Tensor:
        z = X
        for i, a in enumerate(mats):
            z = z @ a.T
            if i < len(mats) - 1:
                z = torch.relu(z)
        return z

    for _trial in range(20):
        t = torch.rand(len(layers), generator=g, dtype=F64)
        t = (t / t.sum() * float(torch.rand(1, generator=g, dtype=F64))).tolist()
        perturbed = []
        for a, s, ti in zip(layers, spectral, t):
            d = torch.randn(a.shape, generator=g, dtype=F64)
            perturbed.append(a + ti * s * d / torch.linalg.matrix_norm(d, ord=2))
        error = float((forward(layers) - forward(perturbed)).norm())
        assert error <= K * math.sqrt(40) * sum(t) * (1 + 1e-12)


def test_linear_accumulation_of_layer_errors_is_attained() -> None:
    """The step that costs the L²: per-layer errors add linearly along the chain, and this is
    attained (identity layers, each enlarged by (1 + t_i), positive inputs: the output moves by
    (Π(1 + t_i) − 1)‖X‖ ≥ Σ t_i ‖X‖, not by √(Σ t_i²)‖X‖)."""
    X = torch.rand(10, 6, dtype=F64) + 0.1
    for depth in (2, 4, 8, 16):
        t = [0.5 / depth] * depth
        out, moved = X, X
        for ti in t:
            out, moved = torch.relu(out), torch.relu(moved @ ((1 + ti) * torch.eye(6, dtype=F64)).T)
        error = float((moved - out).norm()) / float(X.norm())
        assert error == pytest.approx(math.prod(1 + ti for ti in t) - 1, rel=1e-12)
        assert sum(t) <= error <= math.e * sum(t)
        assert error > 2 * math.sqrt(sum(ti**2 for ti in t)) if depth >= 4 else True


# ------------------------------------------------------------------ the composed bound


def test_optimal_allocation_never_loses_and_helps_unequal_layers() -> None:
    g = torch.Generator().manual_seed(1)
    shapes = [(64, 200), (64, 64), (64, 64), (10, 64)]
    layers = [torch.randn(m, c, generator=g, dtype=F64) / math.sqrt(c) for m, c in shapes]
    setting = {"n": 5000, "margin": 2.0, "input_norm": 3.0}
    for ps in ((0.0, 0.5, 2.0),):
        optimal = rank_sparse_bounds(layers, ps=ps, **setting)
        equal = rank_sparse_bounds(layers, ps=ps, allocation="equal", **setting)
        for o, e in zip(optimal, equal):
            assert o.sample_complexity <= e.sample_complexity * (1 + 1e-12)
            assert o.allocation == "optimal" and e.allocation == "equal"
    count = parameter_count_bound(layers, **setting)
    count_equal = parameter_count_bound(layers, allocation="equal", **setting)
    # unequal layers (12,800 / 4,096 / 4,096 / 640 parameters): the split t_i ∝ P_i helps, in logs
    assert count.sample_complexity < 0.99 * count_equal.sample_complexity
    assert count.sample_complexity > 0.8 * count_equal.sample_complexity
    with pytest.raises(ValueError, match="`allocation`"):
        rank_sparse_bound(layers, p=1.0, allocation="greedy", **setting)


def test_norm_end_scales_as_l_cubed_through_maurey_and_as_l_through_the_parameter_count() -> None:
    """The depth exponent of the sample complexity on constructed networks (docs/bounds.md, Sec. 5).

    (a) L identical full-rank layers with a spiked spectrum (1, 0.01, …) and a large margin: the
    bound is carried by the norm-based (Maurey) covers, log N ∝ (Σ_i c_i^{1/3})³/T² = L³ c/T², and
    the fitted exponent is ≈ 3 with the optimal allocation as with the equal split.
    (b) L orthogonal layers (flat spectrum, ‖A_i‖₂ = 1, so K does not grow with L): the bound is
    the parameter count, log N = L W² log(·/T): exponent ≈ 1 (plus the logarithm's growth),
    the paper's Õ(W²L); and ≈ 2 in the width.
    """
    width = 32
    setting = {"n": 10**5, "input_norm": 1.0, "data_norm": math.sqrt(10**5)}
    depths = [2, 3, 4]
    norm_route = {"optimal": [], "equal": []}
    for depth in depths:
        layers = [_spiked(width, 0.01, i) for i in range(depth)]
        for allocation in norm_route:
            bound = rank_sparse_bound(layers, p=2.0, margin=200.0, allocation=allocation, **setting)
            norm_route[allocation].append(bound.sample_complexity)
        count = parameter_count_bound(layers, margin=200.0, **setting)
        assert norm_route["optimal"][-1] < count.sample_complexity  # the norm route is what is measured
    np.testing.assert_allclose(norm_route["optimal"], norm_route["equal"], rtol=1e-9)
    assert 2.7 <= _slope(depths, norm_route["optimal"]) <= 3.2

    depths = [2, 4, 8, 16]
    flat = []
    for depth in depths:
        layers = [_orthogonal(width, i) for i in range(depth)]
        bound = rank_sparse_bound(layers, p=2.0, margin=1.0, **setting)
        assert bound.sample_complexity == pytest.approx(
            parameter_count_bound(layers, margin=1.0, **setting).sample_complexity, rel=1e-12
        )
        flat.append(bound.sample_complexity)
    assert 1.0 <= _slope(depths, flat) <= 1.3
    widths = [16, 32, 64]
    by_width = [
        rank_sparse_bound([_orthogonal(w, i) for i in range(4)], p=2.0, margin=1.0, **setting).sample_complexity
        for w in widths
    ]
    assert 2.0 <= _slope(widths, by_width) <= 2.4
