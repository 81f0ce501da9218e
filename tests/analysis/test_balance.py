"""analysis.balance: Σ‖A_i‖_F² ≥ L‖ΠA_i‖_{S_{2/L}}^{2/L}, with equality exactly for balanced chains."""

from __future__ import annotations

import pytest
import torch

from structnets.analysis.balance import end_to_end, frobenius_sum, imbalance, schatten_end_to_end

F64 = torch.float64


def _orthogonal(n: int, seed: int) -> torch.Tensor:
    q, _ = torch.linalg.qr(torch.randn(n, n, generator=torch.Generator().manual_seed(seed), dtype=F64))
    return q


def test_balanced_chain_attains_equality() -> None:
    # A_i = Q_i diag(s^{1/L}) Q_{i-1}ᵀ: A_{i+1}ᵀA_{i+1} = Q_i diag(s^{2/L}) Q_iᵀ = A_i A_iᵀ
    depth, s = 3, torch.tensor([8.0, 1.0, 0.125, 0.0], dtype=F64)
    qs = [_orthogonal(4, seed) for seed in range(depth + 1)]
    chain = [qs[i + 1] @ torch.diag(s ** (1 / depth)) @ qs[i].T for i in range(depth)]
    torch.testing.assert_close(end_to_end(chain), qs[-1] @ torch.diag(s) @ qs[0].T, rtol=0, atol=1e-13)
    assert frobenius_sum(chain) == pytest.approx(depth * float((s ** (2 / depth)).sum()), rel=1e-13)
    assert schatten_end_to_end(chain) == pytest.approx(frobenius_sum(chain), rel=1e-12)
    assert imbalance(chain) < 1e-13


def test_unbalanced_chain_is_strictly_above() -> None:
    a = torch.diag(torch.tensor([2.0, 1.0], dtype=F64))
    b = torch.eye(2, dtype=F64)
    # Σ‖·‖_F² = 5 + 2 = 7; end-to-end diag(2, 1): 2 · (2 + 1) = 6 (AM–GM: 4 + 1 ≥ 2·2, 1 + 1 ≥ 2·1)
    assert frobenius_sum([a, b]) == 7.0
    assert schatten_end_to_end([a, b]) == pytest.approx(6.0, rel=1e-14)
    # ‖bᵀb − aaᵀ‖_F / ‖aaᵀ‖_F = ‖diag(−3, 0)‖ / ‖diag(4, 1)‖ = 3/√17
    assert imbalance([a, b]) == pytest.approx(3 / 17**0.5, rel=1e-14)


def test_bad_input_names_the_argument() -> None:
    with pytest.raises(ValueError, match="at least 2 layers"):
        imbalance([torch.eye(2)])
    with pytest.raises(ValueError, match=r"`matrices\[1\]`"):
        end_to_end([torch.eye(2), torch.eye(3)])
    with pytest.raises(ValueError, match=r"`matrices\[0\]` is zero"):
        imbalance([torch.zeros(2, 2), torch.eye(2)])
    with pytest.raises(TypeError, match="`matrices`"):
        frobenius_sum(torch.eye(2))
