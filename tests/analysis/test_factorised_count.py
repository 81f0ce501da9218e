"""The parameter count of factorised nets as stored: 2Wr (+ biases) per W × W rank-r layer, not W²
(docs/bounds.md, eq. 4.1f)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from structnets.analysis import parameter_count_bound, rank_sparse_bound, schatten_ball_log_covering
from structnets.analysis.dense_matrices import dense_matrices, factor_ranks, stored_parameters
from structnets.nn import LowRankLinear

F64 = torch.float64


def _model(bias: bool) -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(
        LowRankLinear(10, 40, 3, bias=bias, dtype=F64),
        nn.ReLU(),
        LowRankLinear(40, 40, 3, bias=bias, dtype=F64),
        nn.ReLU(),
        nn.Linear(40, 4, bias=bias, dtype=F64),
    )


def test_factor_ranks_and_stored_parameters() -> None:
    model = _model(bias=False)
    assert factor_ranks(model) == [3, 3, None]
    assert stored_parameters(model) == 3 * (10 + 40) + 3 * (40 + 40) + 40 * 4
    assert stored_parameters(_model(bias=True)) == stored_parameters(model) + 40 + 40 + 4
    with pytest.raises(TypeError, match="`model`"):
        stored_parameters("model")  # type: ignore[arg-type]


def test_factorised_count_bound_counts_the_stored_parameters() -> None:
    model = _model(bias=False)
    mats = dense_matrices(model)
    setting = {"n": 10**9, "margin": 1.0, "input_norm": 2.0}
    dense = parameter_count_bound(mats, **setting)
    stored = parameter_count_bound(mats, factor_ranks=factor_ranks(model), **setting)
    assert dense.parameters == 10 * 40 + 40 * 40 + 40 * 4
    assert stored.parameters == stored_parameters(model) and stored.factor_ranks == (3, 3, None)
    assert stored.sample_complexity < 0.5 * dense.sample_complexity
    # per-layer log N at the radii used: (m + n) r log(9√r/t) for the factorised layers
    radii = stored.layer_radii_at_alpha
    expected = (
        50 * 3 * math.log(9 * math.sqrt(3) / radii[0])
        + 80 * 3 * math.log(9 * math.sqrt(3) / radii[1])
        + 160 * math.log(3 * 2 / radii[2])
    )
    assert stored.log_covering_at_alpha == pytest.approx(expected, rel=1e-9)
    # the rank class pays (m + n + 1) r per layer: never below the stored count on these layers
    rank = rank_sparse_bound(mats, p=0.0, **setting)
    assert rank.sample_complexity >= stored.sample_complexity
    assert schatten_ball_log_covering(40, 40, 1e-3, p=0.0, relative_schatten_power=3)[0] == pytest.approx(
        81 * 3 * math.log(9 * math.sqrt(3) / 1e-3), rel=1e-12
    )
    with pytest.raises(ValueError, match="`factor_ranks`"):
        parameter_count_bound(mats, factor_ranks=[3, 3], **setting)
    with pytest.raises(ValueError, match=r"`factor_ranks\[0\]`"):
        parameter_count_bound(mats, factor_ranks=[2, 3, None], **setting)  # rank 3 > 2


def test_balanced_factor_cover_radius() -> None:
    """Eq. 4.1f: with A = UV, U = PΣ^{1/2}, V = Σ^{1/2}Qᵀ (‖A‖₂ = s), factors moved by at most
    (t/3)√s in Frobenius norm give a product within t·s (t ≤ 1)."""
    g = torch.Generator().manual_seed(5)
    for _ in range(200):
        m, n, r = 12, 9, 3
        a = torch.randn(m, r, generator=g, dtype=F64) @ torch.randn(r, n, generator=g, dtype=F64)
        p_, sigma, qh = torch.linalg.svd(a, full_matrices=False)
        s = float(sigma[0])
        u = p_[:, :r] * sigma[:r].sqrt()
        v = sigma[:r].sqrt()[:, None] * qh[:r]
        t = float(torch.rand(1, generator=g, dtype=F64))
        du = torch.randn(u.shape, generator=g, dtype=F64)
        dv = torch.randn(v.shape, generator=g, dtype=F64)
        du *= (t / 3) * math.sqrt(s) / float(du.norm())
        dv *= (t / 3) * math.sqrt(s) / float(dv.norm())
        assert float(((u + du) @ (v + dv) - a).norm()) <= t * s * (1 + 1e-12)
        assert float(u.norm()) <= math.sqrt(r * s) * (1 + 1e-12)
