"""Schatten norms and ranks against hand-computed singular values and proven inequalities."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from structnets.analysis import (
    bottleneck_rank,
    effective_rank,
    numerical_rank,
    schatten_norm,
    singular_values,
    stable_rank,
)


def _with_singular_values(values: list[float], rows: int, cols: int, seed: int = 0) -> torch.Tensor:
    """P diag(values) Qᵀ with random orthogonal P, Q (float64): known singular values."""
    g = torch.Generator().manual_seed(seed)
    p, _ = torch.linalg.qr(torch.randn(rows, rows, generator=g, dtype=torch.float64))
    q, _ = torch.linalg.qr(torch.randn(cols, cols, generator=g, dtype=torch.float64))
    d = torch.zeros(rows, cols, dtype=torch.float64)
    for i, v in enumerate(values):
        d[i, i] = v
    return p @ d @ q.T


A = _with_singular_values([4.0, 3.0, 0.0], 3, 5)


def test_schatten_norms_of_known_spectrum() -> None:
    assert schatten_norm(A, 1).item() == pytest.approx(7.0, rel=1e-12)
    assert schatten_norm(A, 2).item() == pytest.approx(5.0, rel=1e-12)
    assert schatten_norm(A, math.inf).item() == pytest.approx(4.0, rel=1e-12)
    assert schatten_norm(A, 0.5).item() == pytest.approx((2.0 + math.sqrt(3.0)) ** 2, rel=1e-12)
    assert schatten_norm(A, 0.5, power=True).item() == pytest.approx(2.0 + math.sqrt(3.0), rel=1e-12)
    # p → 0: Σ σ_i^p → rank = 2 (the rounding-level third singular value is an exact zero)
    assert schatten_norm(A, 1e-9, power=True).item() == pytest.approx(2.0, rel=1e-6)
    # large p does not overflow and tends to σ_1
    assert schatten_norm(A * 1e10, 500.0).item() == pytest.approx(4e10, rel=1e-3)


def test_schatten_matches_numpy_and_dtype_is_kept() -> None:
    g = torch.Generator().manual_seed(1)
    m = torch.randn(7, 4, generator=g, dtype=torch.float64)
    ref = m.numpy()
    assert schatten_norm(m, 1).item() == pytest.approx(np.linalg.norm(ref, "nuc"), rel=1e-12)
    assert schatten_norm(m, 2).item() == pytest.approx(np.linalg.norm(ref, "fro"), rel=1e-12)
    assert schatten_norm(m, math.inf).item() == pytest.approx(np.linalg.norm(ref, 2), rel=1e-12)
    assert schatten_norm(m, 1).dtype == torch.float64
    assert schatten_norm(m.float(), 1).dtype == torch.float32
    assert schatten_norm(torch.eye(3, dtype=torch.int64), 1).item() == pytest.approx(3.0)


def test_batched_shapes() -> None:
    batch = torch.stack([A, 2 * A]).reshape(2, 1, 3, 5)
    assert schatten_norm(batch, 2).shape == (2, 1)
    assert schatten_norm(batch, 2)[1, 0].item() == pytest.approx(10.0)
    assert numerical_rank(batch).tolist() == [[2], [2]]
    assert stable_rank(batch).shape == (2, 1)
    assert effective_rank(batch).shape == (2, 1)
    assert singular_values(batch).shape == (2, 1, 3)


def test_quasi_norm_inequalities_hold() -> None:
    """McCarthy/Rotfel'd: ‖A+B‖_p^p ≤ ‖A‖_p^p + ‖B‖_p^p for p ≤ 1; ‖A‖_q ≤ ‖A‖_p for p ≤ q."""
    g = torch.Generator().manual_seed(2)
    for _ in range(20):
        a = torch.randn(6, 5, generator=g, dtype=torch.float64)
        b = torch.randn(6, 5, generator=g, dtype=torch.float64) * torch.rand(1, generator=g, dtype=torch.float64)
        for p in (0.25, 0.5, 1.0):
            lhs = schatten_norm(a + b, p, power=True)
            assert lhs <= schatten_norm(a, p, power=True) + schatten_norm(b, p, power=True) + 1e-10
        norms = [schatten_norm(a, p).item() for p in (0.3, 0.7, 1.0, 2.0, 5.0, math.inf)]
        assert all(x >= y - 1e-10 for x, y in zip(norms, norms[1:]))


def test_ranks_of_known_spectrum() -> None:
    assert numerical_rank(A).item() == 2
    assert numerical_rank(_with_singular_values([1.0, 1e-2, 1e-5], 3, 3), rtol=1e-3).item() == 2
    assert numerical_rank(torch.zeros(3, 4)).item() == 0
    assert stable_rank(A).item() == pytest.approx(25.0 / 16.0, rel=1e-12)
    q = torch.tensor([4 / 7, 3 / 7], dtype=torch.float64)
    assert effective_rank(A).item() == pytest.approx(math.exp(-(q * q.log()).sum().item()), rel=1e-12)
    assert effective_rank(_with_singular_values([2.0, 2.0, 2.0], 3, 4)).item() == pytest.approx(3.0, rel=1e-12)
    assert stable_rank(torch.zeros(2, 2)).item() == 0.0
    assert effective_rank(torch.zeros(2, 2)).item() == 0.0
    # 1 ≤ erank, srank ≤ rank for random matrices
    g = torch.Generator().manual_seed(3)
    m = torch.randn(10, 6, 4, generator=g, dtype=torch.float64)
    assert bool((stable_rank(m) >= 1 - 1e-12).all() and (stable_rank(m) <= 4 + 1e-12).all())
    assert bool((effective_rank(m) >= 1 - 1e-12).all() and (effective_rank(m) <= 4 + 1e-12).all())


def test_bottleneck_rank_of_constructed_activations() -> None:
    g = torch.Generator().manual_seed(4)
    z = torch.randn(200, 3, generator=g, dtype=torch.float64)
    h = z @ torch.randn(3, 32, generator=g, dtype=torch.float64) + torch.randn(32, generator=g, dtype=torch.float64)
    wide = torch.randn(200, 16, generator=g, dtype=torch.float64)
    assert bottleneck_rank([h, wide]) == [3, 16]
    assert bottleneck_rank(h, center=False) == [4]  # the mean adds one direction
    assert bottleneck_rank(torch.ones(5, 4)) == [0]


@pytest.mark.parametrize("p", [0, -1.0, float("nan")])
def test_bad_p_is_a_value_error(p: float) -> None:
    with pytest.raises(ValueError, match="`p`"):
        schatten_norm(A, p)


def test_bad_inputs_raise_naming_the_argument() -> None:
    with pytest.raises(TypeError, match="`p`"):
        schatten_norm(A, "2")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="power=True"):
        schatten_norm(A, math.inf, power=True)
    bad = A.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="`matrix` must be finite"):
        schatten_norm(bad, 1)
    bad[0, 0] = float("inf")
    with pytest.raises(ValueError, match="finite"):
        stable_rank(bad)
    with pytest.raises(ValueError, match="non-empty"):
        numerical_rank(torch.zeros(0, 3))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        effective_rank(torch.ones(3))
    with pytest.raises(TypeError, match="torch.Tensor"):
        schatten_norm(np.eye(2), 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`rtol`"):
        numerical_rank(A, rtol=1.5)
    with pytest.raises(ValueError, match="activations\\[1\\]"):
        bottleneck_rank([torch.ones(3, 2), torch.ones(2, 3, 4)])
    with pytest.raises(ValueError, match="empty"):
        bottleneck_rank([])


def test_weight_decay_equals_schatten_quasi_norm_for_linear_factorisations() -> None:
    """Σ_i ‖W_i‖_F² ≥ L ‖W_L⋯W_1‖_{S_{2/L}}^{2/L}, with equality for the balanced factorisation."""
    g = torch.Generator().manual_seed(5)
    for depth in (2, 3, 4):
        factors = [torch.randn(6, 6, generator=g, dtype=torch.float64) for _ in range(depth)]
        product = factors[0]
        for w in factors[1:]:
            product = w @ product
        lhs = sum(float(w.square().sum()) for w in factors)
        assert lhs >= depth * schatten_norm(product, 2.0 / depth, power=True).item() * (1 - 1e-12)
        sigma = torch.tensor([3.0, 1.0, 0.25], dtype=torch.float64)
        balanced = [torch.diag(sigma ** (1.0 / depth)) for _ in range(depth)]
        lhs = sum(float(w.square().sum()) for w in balanced)
        assert lhs == pytest.approx(depth * schatten_norm(torch.diag(sigma), 2.0 / depth, power=True).item(), rel=1e-12)
