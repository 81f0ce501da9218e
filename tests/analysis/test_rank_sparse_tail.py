"""Rank-sparse covering with a Maurey-covered tail (docs/bounds.md, Sec. 4): hand-computed cases,
a scalar reference implementation, the tail profile (eq. 4.4), limits, monotonicity and orderings."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from structnets.analysis import (
    pac_bayes_bound,
    parameter_count_bound,
    rank_sparse_bound,
    rank_sparse_bounds,
    schatten_ball_log_covering,
    spectral_bound,
)
from structnets.analysis.bounds import _tail_profile

F64 = torch.float64
SHARES = (0.5, 0.75, 0.9)


# ------------------------------------------------------------------------ a scalar reference


def _profile(r: int, p: float, m: float) -> tuple[list[float], list[float]]:
    """Eq. (4.4), written out scalar by scalar."""
    if p == 0:
        return [1.0 if k < m else 0.0 for k in range(r + 1)], [float(max(m - k, 0)) for k in range(r + 1)]
    m = min(m, r)
    u, f2 = [], []
    for k in range(r):
        top = min(1.0, (m / (k + 1)) ** (1 / p))
        crossing = (m / r) ** (1 / p)
        u.append(top)
        if p >= 2:
            f2.append((r - k) * crossing**2)
            continue
        peak = math.inf if k == 0 else ((2 - p) * m / (2 * k)) ** (1 / p)
        v = min(max(peak, crossing), top)
        f2.append(v ** (2 - p) * (m - k * v**p))
    return u + [0.0], f2 + [0.0]


def _reference(rows: int, cols: int, t: float, p: float | None, m: float | None, maurey: bool = True) -> float:
    if t >= 1:
        return 0.0
    r = min(rows, cols)
    best = rows * cols * math.log(3 * math.sqrt(r) / t)
    if p is None:
        return best
    u, f2 = _profile(r, p, m)
    atoms = math.log(2 * rows * cols)
    for k in range(r + 1):
        c = (rows + cols + 1) * k
        if k == 0 and u[0] <= t:
            best = 0.0
        if k > 0 and u[k] < t:
            best = min(best, c * math.log(9 * math.sqrt(k) / (t - u[k])))
        if not maurey:
            continue
        if k == 0:
            best = min(best, 0.0 if u[0] <= t else math.ceil(rows * f2[0] / t**2) * atoms)
            continue
        for share in SHARES:
            tail = 0.0 if u[k] <= share * t else math.ceil(rows * f2[k] / (share * t) ** 2) * atoms
            best = min(best, c * math.log(9 * math.sqrt(k) / ((1 - share) * t)) + tail)
    return best


# ---------------------------------------------------------------------- the tail profile (4.4)


@pytest.mark.parametrize("p", [0.1, 0.5, 1.0, 1.5, 2.0, 3.0, 6.0])
def test_tail_profile_is_the_supremum_of_its_relaxation(p: float) -> None:
    """f_k² = max_{0 ≤ v ≤ u_k} min(g(v), (r − k) v²) with g the p-dependent tail bound."""
    r = 9
    for m in (1.0, 2.6, 6.3):
        u, f2 = _tail_profile(r, p, m)
        assert np.allclose(u, _profile(r, p, m)[0], rtol=1e-13) and np.allclose(f2, _profile(r, p, m)[1], rtol=1e-12)
        for k in range(r):
            v = np.linspace(0.0, u[k], 400_001)
            g = v ** (2 - p) * (m - k * v**p) if p <= 2 else (r - k) ** (1 - 2 / p) * (m - k * v**p) ** (2 / p)
            relaxed = np.minimum(g, (r - k) * v**2).max()
            assert relaxed * (1 - 1e-12) <= f2[k] <= relaxed * (1 + 1e-4)
        assert u[r] == 0.0 and f2[r] == 0.0


def test_tail_profile_bounds_every_class_member_and_is_attained() -> None:
    rng = np.random.default_rng(0)
    r = 12
    for p in (0.2, 0.7, 1.0, 2.0, 4.0):
        for m in (1.0, 2.5, 7.0):
            u, f2 = _tail_profile(r, p, m)
            for _ in range(500):
                s = np.sort(rng.random(r) ** rng.uniform(0.2, 8.0))[::-1]
                s = s / s[0] * rng.uniform(0.2, 1.0)
                s = s * min(1.0, (m / (s**p).sum()) ** (1 / p))  # now σ_1 ≤ 1, Σσ^p ≤ m
                for k in range(r):
                    assert s[k] <= u[k] * (1 + 1e-12)
                    assert (s[k:] ** 2).sum() <= f2[k] * (1 + 1e-12)
    # attained: p ≥ 2 by the flat spectrum (m/r)^{1/p}; k = 0, p < 2 by m ones (m an integer)
    for p in (2.0, 3.0):
        flat = np.full(r, (5.0 / r) ** (1 / p))
        assert np.allclose(_tail_profile(r, p, 5.0)[1][:r], [(flat[k:] ** 2).sum() for k in range(r)], rtol=1e-12)
    assert _tail_profile(r, 0.5, 5.0)[1][0] == pytest.approx(5.0, rel=1e-12)
    # p = 0 (rank ≤ 3): σ_{k+1} ≤ 1 and tail energy ≤ 3 − k while k < 3, nothing after
    u, f2 = _tail_profile(r, 0.0, 3)
    assert u.tolist() == [1.0] * 3 + [0.0] * 10 and f2.tolist() == [3.0, 2.0, 1.0] + [0.0] * 10


# ---------------------------------------------------------------------- per-layer covering


def test_covering_by_hand() -> None:
    # pure tail (k = 0) at p = 2: ⌈m f_0²/t²⌉ log(2mn), f_0² = M' = ‖A‖_F²/s²; beats the
    # parameter count 100 log(3√10/0.6) = 275.6, truncation and every head + tail split
    value, k = schatten_ball_log_covering(10, 10, 0.6, p=2.0, relative_schatten_power=1.3)
    assert math.ceil(10 * 1.3 / 0.36) == 37
    assert (value, k) == (pytest.approx(37 * math.log(200), rel=1e-12), 0)
    # head + Maurey tail: p = 1/2, M' = 2, t = 0.01, best at k = 13, tail share 0.9:
    # f_13² = v^{3/2}(2 − 13 v^{1/2}) at v^{1/2} = (3/2)·2/(2·13) = 3/26, i.e. (3/26)³/2
    f2 = (3 / 26) ** 3 / 2
    tail = math.ceil(100 * f2 / 0.009**2) * math.log(20_000)
    head = 201 * 13 * math.log(9 * math.sqrt(13) / 0.001)
    value, k = schatten_ball_log_covering(100, 100, 0.01, p=0.5, relative_schatten_power=2.0)
    assert (value, k) == (pytest.approx(head + tail, rel=1e-12), 13)
    # truncation only: u_k = (2/(k+1))², head net at radius t − u_k; best at k = 21
    value, k = schatten_ball_log_covering(100, 100, 0.01, p=0.5, relative_schatten_power=2.0, tail_covering="truncate")
    assert (value, k) == (pytest.approx(201 * 21 * math.log(9 * math.sqrt(21) / (0.01 - 1 / 121)), rel=1e-12), 21)
    # and both are below the earlier half/half truncation: k + 1 ≥ 2 (2/t)^{1/2} → k = 28
    assert value < 201 * 28 * math.log(18 * math.sqrt(28) / 0.01)


def test_covering_matches_the_scalar_reference() -> None:
    cases = [(6, 9), (12, 5), (30, 30), (1, 7)]
    radii = [1e-6, 1e-3, 0.02, 0.1, 0.3, 0.55, 0.9, 1.0, 2.0]
    for rows, cols in cases:
        r = min(rows, cols)
        classes = [(None, None), (0.0, 0), (0.0, r), (0.0, max(r // 2, 1))]
        classes += [(p, m) for p in (0.05, 0.3, 1.0, 2.0, 5.0) for m in (0.4, 1.0, 2.2, r + 3.0)]
        for p, m in classes:
            for t in radii:
                for maurey in (True, False):
                    if p is None and not maurey:
                        continue
                    kwargs = {} if p is None else {"p": p, "relative_schatten_power": m}
                    value, _ = schatten_ball_log_covering(
                        rows, cols, t, tail_covering="maurey" if maurey else "truncate", **kwargs
                    )
                    assert value == pytest.approx(_reference(rows, cols, t, p, m, maurey), rel=1e-12, abs=1e-9)


def test_covering_orderings_and_monotonicity() -> None:
    radii = np.geomspace(1e-8, 0.99, 60)
    rows, cols = 40, 25
    for p in (0.0, 0.1, 0.5, 1.0, 2.0, 4.0):
        masses = (1, 3, 10, 25) if p == 0 else (1.0, 1.5, 4.0, 12.0, 25.0)
        previous_mass = None
        for m in masses:
            args = {"p": p, "relative_schatten_power": m}
            maurey = np.array([schatten_ball_log_covering(rows, cols, t, **args)[0] for t in radii])
            truncate = np.array(
                [schatten_ball_log_covering(rows, cols, t, tail_covering="truncate", **args)[0] for t in radii]
            )
            count = np.array([schatten_ball_log_covering(rows, cols, t)[0] for t in radii])
            assert np.all(maurey <= truncate + 1e-9) and np.all(truncate <= count + 1e-9)
            # non-increasing in the radius (Dudley's left Riemann sum relies on it)
            assert np.all(np.diff(maurey) <= 1e-9) and np.all(np.diff(truncate) <= 1e-9)
            # a larger Schatten budget is a larger class: never a smaller covering number
            if previous_mass is not None:
                assert np.all(maurey >= previous_mass - 1e-9)
            previous_mass = maurey


# -------------------------------------------------------------------------- network level


def _rank_r(rows: int, cols: int, rank: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    p, _ = torch.linalg.qr(torch.randn(rows, rank, generator=g, dtype=F64))
    q, _ = torch.linalg.qr(torch.randn(cols, rank, generator=g, dtype=F64))
    return p @ torch.diag(torch.linspace(1.0, 0.5, rank, dtype=F64)) @ q.T


def test_one_layer_pure_tail_is_the_norm_based_covering() -> None:
    """Dense (full-rank) 200×200 with a fast-decaying spectrum: at p = 2 the whole matrix is
    Maurey-covered, log N(α) = ⌈m ‖A‖_F²/(s t)²⌉ log(2mn), and the bound beats the parameter count."""
    width = 200
    a = torch.diag(torch.tensor([1.0, 0.5] + [1e-3] * (width - 2), dtype=F64))
    setting = {"n": 10**5, "margin": 10.0, "input_norm": 1.0}
    bound = rank_sparse_bound([a], p=2.0, **setting)
    frobenius2 = 1.0 + 0.25 + (width - 2) * 1e-6
    assert bound.schatten_powers == (pytest.approx(frobenius2, rel=1e-12),)
    assert bound.lipschitz_scale == pytest.approx(math.e, rel=1e-12)  # K = e · (‖X‖_F/√n) · s, ‖X‖_F = B√n
    t = 10.0 * bound.dudley_alpha / (2 * math.e)
    expected = math.ceil(width * frobenius2 / t**2) * math.log(2 * width * width)
    assert bound.ranks_at_alpha == (0,)
    assert bound.log_covering_at_alpha == pytest.approx(expected, rel=1e-12)
    assert bound.tail_log_covering_at_alpha == (pytest.approx(expected, rel=1e-12),)
    count = parameter_count_bound([a], **setting)
    truncated = rank_sparse_bound([a], p=2.0, tail_covering="truncate", **setting)
    assert bound.total < truncated.total < count.total - 0.5
    assert bound.sample_complexity < 0.9 * truncated.sample_complexity
    assert bound.sample_complexity < count.sample_complexity / 5


def test_two_layer_log_covering_is_the_sum_of_the_layers() -> None:
    a1 = torch.diag(torch.tensor([2.0, 1.0, 0.5, 0.25, 0.125, 0.0625], dtype=F64))
    a2 = torch.tensor([[1.0, 0.5, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.1, 0.0, 0.0, 0.0]], dtype=F64)
    setting = {"n": 5000, "margin": 3.0, "input_norm": 2.0, "data_norm": 70.0, "lipschitz": 1.5}
    for p, allocation in itertools.product((0.0, 0.5, 1.0, 2.0), ("equal", "optimal")):
        bound = rank_sparse_bound([a1, a2], p=p, allocation=allocation, **setting)
        s1, s2 = 2.0, float(torch.linalg.matrix_norm(a2, ord=2))
        scale = math.e * 1.5 * (70.0 / math.sqrt(5000)) * s1 * s2
        assert bound.lipschitz_scale == pytest.approx(scale, rel=1e-12)
        assert bound.data_norm == 70.0 and bound.tail_covering == "maurey" and bound.allocation == allocation
        if bound.dudley_alpha >= 1.0:
            continue
        budget = min(3.0 * bound.dudley_alpha / (2 * scale), 1.0)  # Σ_i t_i ≤ γα/(2K), capped at 1
        radii = bound.layer_radii_at_alpha
        if allocation == "equal":
            assert radii == (pytest.approx(budget / 2, rel=1e-12),) * 2
        assert sum(radii) <= budget * (1 + 1e-12)
        if p == 0:
            masses = [6, 2]
        else:
            masses = [
                float((torch.linalg.svdvals(a) ** p).sum() / torch.linalg.matrix_norm(a, ord=2) ** p) for a in (a1, a2)
            ]
        expected = sum(
            schatten_ball_log_covering(*a.shape, t, p=p, relative_schatten_power=mass)[0]
            for a, mass, t in zip((a1, a2), masses, radii)
        )
        assert bound.log_covering_at_alpha == pytest.approx(expected, rel=1e-9)


def test_small_p_tends_to_the_rank_bound_on_exactly_low_rank_layers() -> None:
    layers = [_rank_r(60, 30, 3, 0), _rank_r(60, 60, 3, 1), _rank_r(5, 60, 3, 2)]
    setting = {"n": 10**7, "margin": 0.5, "input_norm": 3.0}
    rank = rank_sparse_bound(layers, p=0, **setting)
    near = rank_sparse_bound(layers, p=1e-3, **setting)
    assert rank.ranks_at_alpha == (3, 3, 3)
    assert near.ranks_at_alpha == (3, 3, 3)
    assert near.total == pytest.approx(rank.total, rel=1e-9)
    assert near.sample_complexity == pytest.approx(rank.sample_complexity, rel=1e-9)
    # for p = 0 at small radii only the rank-r net is cheaper than the parameter count
    t = 1e-9
    assert schatten_ball_log_covering(60, 60, t, p=0, relative_schatten_power=3)[0] == pytest.approx(
        121 * 3 * math.log(9 * math.sqrt(3) / t), rel=1e-12
    )


def test_dense_fast_decaying_spectra_beat_the_parameter_count() -> None:
    """Full-rank diagonal layers σ_j = 2^{−j}: the Maurey tail lowers the bound below truncation
    for the larger p, and below the parameter count where truncation alone equals it."""
    width = 100
    a1 = torch.diag(0.5 ** torch.arange(width, dtype=F64))
    a2 = torch.cat([torch.diag(0.5 ** torch.arange(10, dtype=F64)), torch.zeros(10, width - 10, dtype=F64)], 1)
    setting = {"n": 10**5, "margin": 1.0, "input_norm": 1.0}
    count = parameter_count_bound([a1, a2], **setting)
    ps = (0.1, 0.5, 1.0, 2.0)
    maurey = rank_sparse_bounds([a1, a2], ps=ps, **setting)
    truncate = rank_sparse_bounds([a1, a2], ps=ps, tail_covering="truncate", **setting)
    for m, tr in zip(maurey, truncate):
        assert m.sample_complexity <= tr.sample_complexity * (1 + 1e-12) <= count.sample_complexity * (1 + 1e-12)
    assert maurey[2].sample_complexity < 0.95 * truncate[2].sample_complexity  # p = 1
    assert min(b.sample_complexity for b in maurey) < 0.7 * count.sample_complexity


def test_rank_sparse_with_maurey_still_beats_norm_bounds_when_rank_is_small() -> None:
    width, rank = 256, 2
    layers = [_rank_r(width, 100, rank, 0), _rank_r(width, width, rank, 1), _rank_r(10, width, rank, 2)]
    setting = {"n": 60_000, "margin": 0.5, "input_norm": 10.0}
    spectral = spectral_bound(layers, **setting)
    pac = pac_bayes_bound(layers, **setting)
    count = parameter_count_bound(layers, **setting)
    for p in (0.0, 0.02, 0.05):
        bound = rank_sparse_bound(layers, p=p, **setting)
        assert bound.sample_complexity < min(
            spectral.sample_complexity, pac.sample_complexity, count.sample_complexity / 10
        )


def test_data_norm_and_tail_covering_options() -> None:
    a = [_rank_r(20, 8, 2, 0), _rank_r(3, 20, 2, 1)]
    setting = {"n": 1000, "margin": 0.5, "input_norm": 2.0}
    default = rank_sparse_bound(a, p=0.5, **setting)
    explicit = rank_sparse_bound(a, p=0.5, data_norm=2.0 * math.sqrt(1000), **setting)
    assert default.total == explicit.total and default.data_norm == pytest.approx(2.0 * math.sqrt(1000))
    smaller = rank_sparse_bound(a, p=0.5, data_norm=10.0, **setting)
    assert smaller.lipschitz_scale == pytest.approx(default.lipschitz_scale * 10.0 / (2.0 * math.sqrt(1000)), rel=1e-12)
    assert smaller.sample_complexity <= default.sample_complexity
    count = parameter_count_bound(a, data_norm=10.0, **setting)
    assert count.lipschitz_scale == pytest.approx(smaller.lipschitz_scale, rel=1e-12)
    assert count.tail_covering == "truncate"
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="`data_norm`"):
            rank_sparse_bound(a, p=0.5, data_norm=bad, **setting)
        with pytest.raises(ValueError, match="`data_norm`"):
            parameter_count_bound(a, data_norm=bad, **setting)
    for bad_choice in ("norm", None, 1):
        with pytest.raises(ValueError, match="`tail_covering`"):
            rank_sparse_bound(a, p=0.5, tail_covering=bad_choice, **setting)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="`tail_covering`"):
            schatten_ball_log_covering(4, 4, 0.1, p=1.0, relative_schatten_power=2.0, tail_covering=bad_choice)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`p`"):
        schatten_ball_log_covering(4, 4, 0.1, p=float("nan"), relative_schatten_power=2.0)
    with pytest.raises(ValueError, match="`relative_schatten_power`"):
        schatten_ball_log_covering(4, 4, 0.1, p=1.0, relative_schatten_power=float("inf"))
