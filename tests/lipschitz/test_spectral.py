"""Certified spectral-norm bounds: never below the SVD value, tight where claimed."""

from __future__ import annotations

import math

import pytest
import torch

from structnets.functional import power_iteration, spectral_norm_bound, spectral_norm_exact


def _matrices() -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    mats = [torch.randn(m, n, generator=g, dtype=torch.float64) for m, n in [(1, 1), (3, 7), (9, 4), (30, 30)]]
    q, _ = torch.linalg.qr(torch.randn(12, 12, generator=g, dtype=torch.float64))
    mats.append(q)  # all singular values equal: the worst case for Gram iteration
    mats.append(
        torch.outer(torch.randn(5, generator=g, dtype=torch.float64), torch.randn(8, generator=g, dtype=torch.float64))
    )
    mats.append(1e-3 * torch.randn(6, 6, generator=g).float())
    mats.append(1e3 * torch.randn(40, 20, generator=g).float())
    return mats


@pytest.mark.parametrize("method", ["exact", "gram", "frobenius"])
def test_bound_is_never_below_the_true_norm(method: str) -> None:
    for w in _matrices():
        sigma = spectral_norm_exact(w)
        bound = spectral_norm_bound(w, method)
        assert bound.dtype == w.dtype
        assert float(bound) >= float(sigma) * (1 - 1e-15), (method, tuple(w.shape))


def test_exact_bound_is_tight_and_gram_bound_obeys_its_rank_factor() -> None:
    for w in _matrices():
        sigma = float(spectral_norm_exact(w))
        exact = float(spectral_norm_bound(w.double(), "exact"))
        assert exact <= sigma * (1 + 1e-9)
        rank = min(w.shape)
        for iters in (1, 3, 6):
            gram = float(spectral_norm_bound(w.double(), "gram", iters=iters))
            # Schatten-p norm with p = 2^{t+1}: at most rank^{1/p} · σ₁.
            assert gram <= sigma * rank ** (1 / 2 ** (iters + 1)) * (1 + 1e-8)
        frob = float(spectral_norm_bound(w.double(), "frobenius"))
        assert frob <= sigma * math.sqrt(rank) * (1 + 1e-12)


def test_exact_bound_gradient_is_top_singular_pair() -> None:
    w = torch.randn(5, 7, dtype=torch.float64, requires_grad=True)
    spectral_norm_bound(w).backward()
    u, s, vh = torch.linalg.svd(w.detach())
    torch.testing.assert_close(w.grad, torch.outer(u[:, 0], vh[0]) * (w.grad.norm() / 1.0), rtol=1e-8, atol=1e-8)
    assert torch.autograd.gradcheck(lambda m: spectral_norm_bound(m), (w.detach().clone().requires_grad_(),))


def test_power_iteration_undershoots_and_converges() -> None:
    # seeded, with a known spectrum (σ₂/σ₁ = 0.8: 200 steps converge far below 1e-8 from any start;
    # an unseeded Gaussian W sometimes had too small a gap and failed)
    generator = torch.Generator().manual_seed(7)
    left = torch.linalg.qr(torch.randn(20, 10, dtype=torch.float64, generator=generator))[0]
    right = torch.linalg.qr(torch.randn(10, 10, dtype=torch.float64, generator=generator))[0]
    w = (
        left
        @ torch.diag(torch.linspace(5.0, 0.5, 10, dtype=torch.float64).index_fill(0, torch.tensor([1]), 4.0))
        @ right.T
    )
    v = torch.randn(10, dtype=torch.float64, generator=generator)
    v /= v.norm()
    sigma = float(spectral_norm_exact(w))
    assert sigma == pytest.approx(5.0, rel=1e-12)
    estimates = [float(power_iteration(w, v)) for _ in range(200)]
    assert all(e <= sigma * (1 + 1e-12) for e in estimates)
    assert estimates[-1] == pytest.approx(sigma, rel=1e-8)


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="`method`"):
        spectral_norm_bound(torch.eye(2), "power")
    with pytest.raises(ValueError, match="`weight`"):
        spectral_norm_bound(torch.ones(2, 2, 2))
    with pytest.raises(ValueError, match="`iters`"):
        spectral_norm_bound(torch.eye(2), "gram", iters=0)
