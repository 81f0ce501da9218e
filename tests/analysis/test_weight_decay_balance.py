"""Weight decay and the Schatten-2/L quasi-norm (Ledent, Alves, Lei 2025, Sec. 1): the inequality
Σ‖W_i‖_F² ≥ L‖ΠW_i‖_{S_{2/L}}^{2/L} holds for any matrices, so only the *equality* that theory
predicts for deep linear nets at the weight-decay optimum is evidence."""

from __future__ import annotations

import math

import pytest
import torch

from structnets.analysis import schatten_norm
from structnets.experiments.rank_bounds import train_deep_linear

F64 = torch.float64


def _ratio(matrices: list[torch.Tensor]) -> float:
    product = matrices[0]
    for w in matrices[1:]:
        product = w @ product
    depth = len(matrices)
    return float(sum(w.square().sum() for w in matrices)) / (
        depth * float(schatten_norm(product, 2.0 / depth, power=True))
    )


def test_inequality_holds_for_any_matrices_and_is_tight_on_balanced_factorisations() -> None:
    g = torch.Generator().manual_seed(0)
    for depth in (2, 3, 5):
        for _ in range(5):
            ws = [
                torch.randn(7, 7, generator=g, dtype=F64) * float(torch.rand(1, generator=g) + 0.1)
                for _ in range(depth)
            ]
            assert _ratio(ws) >= 1 - 1e-12  # AM–GM on the singular values: no information about training
        # a balanced factorisation W_i = Q_i Σ^{1/L} Q_{i-1}ᵀ of any matrix attains equality
        target = torch.randn(7, 7, generator=g, dtype=F64)
        u, sigma, vh = torch.linalg.svd(target)
        qs = [vh.T] + [torch.linalg.qr(torch.randn(7, 7, generator=g, dtype=F64))[0] for _ in range(depth - 1)] + [u]
        ws = [qs[i + 1] @ torch.diag(sigma ** (1.0 / depth)) @ qs[i].T for i in range(depth)]
        product = ws[0]
        for w in ws[1:]:
            product = w @ product
        torch.testing.assert_close(product, target, rtol=1e-10, atol=1e-10)
        assert _ratio(ws) == pytest.approx(1.0, abs=1e-10)


def test_weight_decay_drives_deep_linear_nets_to_equality_at_the_predicted_rate() -> None:
    """Gradient descent with weight decay λ: the imbalance D_i = W_{i+1}ᵀW_{i+1} − W_iW_iᵀ decays
    as (1 − ηλ)^{2k} (gradient flow: Ḋ = −2λD, whatever the loss), the iterates reach a critical
    point, which is balanced, and there Σ‖W_i‖_F² = L‖ΠW_i‖_{S_{2/L}}^{2/L}. Without weight decay
    the imbalance is conserved (up to O(η²) per step) and the ratio stays well above 1."""
    decayed = train_deep_linear(3, 6, 0.05, steps=3000, lr=0.1, n=64)
    assert decayed["ratio_init"] > 1.3
    assert decayed["ratio"] == pytest.approx(1.0, abs=1e-9)
    assert decayed["gradient_norm"] < 1e-6  # a critical point of loss + (λ/2)Σ‖W_i‖²
    assert decayed["end_to_end_rank"] == 3  # the teacher's rank
    early = train_deep_linear(3, 6, 0.05, steps=1000, lr=0.1, n=64)
    measured = early["imbalance"] / early["imbalance_init"]
    assert 0.5 * early["flow_factor"] <= measured <= 2.0 * early["flow_factor"]
    assert 1 - 1e-12 <= early["ratio"] < decayed["ratio_init"]
    free = train_deep_linear(3, 6, 0.0, steps=3000, lr=0.1, n=64)
    assert free["flow_factor"] == 1.0
    assert 0.8 <= free["imbalance"] / free["imbalance_init"] <= 1.2
    assert free["ratio"] > 1.3
    # it fits down to the noise floor (1/2)·0.1²·6 = 0.03: the gap from 1 is not under-training
    assert free["loss"] < 0.035
    assert math.isfinite(free["gradient_norm"])
