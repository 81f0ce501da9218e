"""Covering-number margin bounds: the parameter count and the rank-sparse Schatten-p family.

Dudley's integral (:mod:`structnets.analysis.dudley`) over a layer-wise covering
(:mod:`structnets.analysis.covering`) composed through the Lipschitz product with the radius
allocated over layers (:mod:`structnets.analysis.allocation`); docs/bounds.md, Sec. 2–4."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .._validation import check_int, check_real
from ._bound_setting import (
    _confidence,
    _exponent,
    _layers_with_tolerance,
    _Setting,
    _setting,
    _smallest_n,
    _spectra,
    _target,
)
from .allocation import _OPTIMISE_FROM, _TAU_PER_DECADE, _allocate, _allocation_choice
from .covering import _log_covering_routes, _tail_choice
from .dudley import _dudley_grid, _dudley_min, _dudley_tails
from .spectral_bound import _default_data_norm, _exp


@dataclass(frozen=True)
class CoveringBound:
    """A margin bound from Dudley's integral over a layer-wise covering, every term listed.

    ``total = empirical_risk + complexity + confidence`` with ``complexity = 2 · rademacher``,
    ``rademacher = min(4, 4 · dudley_alpha + 12/√n · entropy_integral)`` and
    ``confidence = 3 √(ln(2/δ) / (2n))`` (Bartlett et al. 2017, Lemma A.4).

    Attributes:
        name: ``"parameter-count"`` or ``"rank-sparse"``.
        p: the Schatten exponent (None for the parameter count).
        n, margin, delta, input_norm, lipschitz: the setting.
        data_norm: ``‖X‖_F = √(Σ_i ‖x_i‖²)`` of the training inputs (its bound B√n by default).
        tail_covering: ``"maurey"`` or ``"truncate"`` (how the tail beyond the split rank is
            covered; ``"truncate"`` for the parameter count, which has no tail).
        empirical_risk: R̂_γ.
        lipschitz_scale: ``K = e · ρ^{L−1} · (‖X‖_F/√n) · Π_i ‖A_i‖_2``; covering each layer's
            images at relative radius t moves the outputs on the sample by at most
            K·L·t·√n in Frobenius norm (docs/bounds.md, Lemma 1).
        spectral_norms: ``‖A_i‖_2`` per layer.
        schatten_powers: ``‖A_i‖_{S_p}^p`` per layer (empty for the parameter count).
        parameters: Σ_i m_i n_i.
        dudley_alpha: the α attaining the bound (1 when the bound is the trivial 4).
        entropy_integral: ``∫_α^1 √(log N(ε)) dε``.
        log_covering_at_alpha: ``log N(α)`` of the loss class.
        ranks_at_alpha: the split rank k_i(α) of each layer (its min(m_i, n_i) when the
            parameter count is used).
        tail_log_covering_at_alpha: the part of each layer's ``log N_i(α)`` spent on the
            Maurey cover of its tail (0 where truncation or the parameter count is used).
        rademacher, complexity, confidence, total: as above.
        sample_target, sample_complexity: the smallest n at which ``complexity`` (same norms,
            margin) would be ≤ ``sample_target``: the quantity the Õ(·) sample complexities
            of the papers describe (inf if never below 1e60).
        allocation: how the radius budget ``Σ_i t_i ≤ γε/(2K)`` is split over layers:
            ``"equal"`` (t_i = budget/L) or ``"optimal"`` (per scale, the better of the equal
            split and a Lagrangian allocation; docs/bounds.md, Sec. 3).
        layer_radii_at_alpha: the relative radius t_i(α) of each layer (empty when α = 1).
        factor_ranks: for the parameter count, the inner rank r_i of each layer stored as a
            product of two factors (None for a dense layer); ``parameters`` then counts
            ``(m_i + n_i) r_i`` for it. All None for the rank-sparse bounds.
    """

    name: str
    p: float | None
    n: int
    margin: float
    delta: float
    input_norm: float
    data_norm: float
    tail_covering: str
    lipschitz: float
    empirical_risk: float
    lipschitz_scale: float
    spectral_norms: tuple[float, ...]
    schatten_powers: tuple[float, ...]
    parameters: int
    dudley_alpha: float
    entropy_integral: float
    log_covering_at_alpha: float
    ranks_at_alpha: tuple[int, ...]
    tail_log_covering_at_alpha: tuple[float, ...]
    rademacher: float
    complexity: float
    confidence: float
    total: float
    sample_target: float
    sample_complexity: float
    allocation: str = "equal"
    layer_radii_at_alpha: tuple[float, ...] = ()
    factor_ranks: tuple[int | None, ...] = ()


def _covering_bounds(
    matrices: Sequence[torch.Tensor],
    setting: _Setting,
    ps: Sequence[float | None],
    sample_target: float,
    data_norm: float | None,
    tail_covering: str,
    allocation: str = "optimal",
    factor_ranks: Sequence[int | None] | None = None,
    spectra: Sequence[torch.Tensor] | None = None,
) -> list[CoveringBound]:
    """One :class:`CoveringBound` per entry of ``ps`` (None: parameter count), sharing one SVD per layer."""
    if data_norm is None:
        data_norm = _default_data_norm(setting)
    data_norm = check_real("data_norm", data_norm, low=0.0, low_open=True)
    tail_covering = _tail_choice(tail_covering)
    allocation = _allocation_choice(allocation)
    layers = _layers_with_tolerance(matrices)
    depth = len(layers)
    sigmas = _spectra([a for a, _ in layers], spectra)
    spectral = [float(sigma[0]) for sigma in sigmas]
    # singular values at the rounding level of the dtype the layer came in are exact zeros
    # (see structnets.analysis.schatten_norm); they cannot count towards ‖A‖_{S_p}^p or the rank.
    kept = [sigma[sigma > tolerance * sigma[0]] for sigma, (_, tolerance) in zip(sigmas, layers)]
    shapes = [(int(a.shape[0]), int(a.shape[1])) for a, _ in layers]
    factors = _factor_ranks(factor_ranks, shapes, kept)
    grid = _dudley_grid()
    if min(spectral) == 0.0:
        scale, budget = 0.0, None  # a zero layer: the class is the zero function, log N = 0 everywhere
    else:
        # in logarithms: K and γ can each leave float64 (K ≈ e^755 with γ ≈ e^750 is no vacuous
        # bound; a subnormal K lost its digits, and ‖X‖_F/√n could underflow to 0)
        log_scale = (
            1.0
            + (depth - 1) * math.log(setting.lipschitz)
            + math.log(data_norm)
            - 0.5 * math.log(setting.n)
            + sum(math.log(s) for s in spectral)
        )
        scale = _exp(log_scale)
        # loss scale ε (empirical L2) → outputs within γε√n/2 in Frobenius norm (ramp
        # 1/γ-Lipschitz, margin 2-Lipschitz in ℓ2) → layer radii t_i with Σ_i t_i ≤ T(ε) =
        # γε/(2K), capped at 1 so Π(1 + t_i) ≤ e (docs/bounds.md, Sec. 2–3).
        budget = np.exp(np.minimum(math.log(setting.margin) - math.log(2.0) + np.log(grid) - log_scale, 0.0))
    tau = None
    if budget is not None and allocation == "optimal" and depth > 1:
        low = max(float(np.min(budget[grid >= _OPTIMISE_FROM])) * 1e-3, 1e-300)
        decades = max(-math.log10(low), 1e-3)
        tau = np.logspace(math.log10(low), 0.0, max(int(decades * _TAU_PER_DECADE), 2) + 1)
    confidence = _confidence(setting.n, setting.delta)
    results: list[CoveringBound] = []
    for p in ps:
        # the class sizes M_i/s_i^p = Σ_j (σ_j/σ_1)^p, scale free: Σσ^p of a layer × 1e-200 (p = 2)
        # underflowed to 0/0 (ZeroDivisionError), × 1e200 overflowed
        relatives: list[float] = []
        if p is None:
            powers: list[float] = []
        elif p == 0:
            powers = [float(sigma.numel()) for sigma in kept]
        else:
            relatives = [float(((sigma / sigma[0]) ** p).sum()) if sigma.numel() else 0.0 for sigma in kept]
            powers = [_exp(p * math.log(s) + math.log(rel)) if rel > 0 else 0.0 for s, rel in zip(spectral, relatives)]
        total = np.zeros_like(grid)
        ranks = np.zeros((depth, grid.size), dtype=np.int64)
        tails_spent = np.zeros((depth, grid.size))
        radii = np.zeros((depth, grid.size))
        if budget is not None:
            classes = []
            for index, (rows, cols) in enumerate(shapes):
                if p is None:
                    relative = None
                elif p == 0:
                    relative = powers[index]
                else:
                    relative = max(relatives[index], 1.0)
                classes.append((rows, cols, relative))
            # every route is a valid cover of the class, and each is at most the one before it
            # pointwise; taking the best allocation of each keeps that order for the composition
            if p is None:
                names = ["parameter"]
            elif tail_covering == "truncate":
                names = ["parameter", "truncate"]
            else:
                names = ["parameter", "truncate", "maurey"]
            # the equal split t_i = T/L (the sequential cover of Bartlett et al. 2017)
            equal_t = budget / depth
            for index, (rows, cols, relative) in enumerate(classes):
                value, k, spent = _log_covering_routes(rows, cols, equal_t, p, relative, factors[index])[names[-1]]
                total += value
                ranks[index] = k
                tails_spent[index] = spent
                radii[index] = equal_t
            if tau is not None:
                per_layer = [
                    _log_covering_routes(rows, cols, tau, p, relative, factors[index])
                    for index, (rows, cols, relative) in enumerate(classes)
                ]
                active = np.flatnonzero(grid >= _OPTIMISE_FROM)
                for name in names:
                    costs = np.stack([routes[name][0] for routes in per_layer])
                    optimal, chosen = _allocate(costs, tau, budget[active])
                    better = optimal < total[active]
                    rows_better, picks = active[better], chosen[better]
                    total[rows_better] = optimal[better]
                    for index, routes in enumerate(per_layer):
                        _, k, spent = routes[name]
                        ranks[index, rows_better] = k[picks[:, index]]
                        tails_spent[index, rows_better] = spent[picks[:, index]]
                        radii[index, rows_better] = tau[picks[:, index]]
        tails = _dudley_tails(grid, total)
        rademacher, alpha, integral = _dudley_min(grid, tails, setting.n)
        at = min(int(np.searchsorted(grid, alpha)), grid.size - 1)
        complexity = 2.0 * rademacher
        needed = _smallest_n(functools.partial(_complexity_at, grid, tails), sample_target)
        results.append(
            CoveringBound(
                name="parameter-count" if p is None else "rank-sparse",
                p=p,
                n=setting.n,
                margin=setting.margin,
                delta=setting.delta,
                input_norm=setting.input_norm,
                data_norm=data_norm,
                tail_covering="truncate" if p is None else tail_covering,
                lipschitz=setting.lipschitz,
                empirical_risk=setting.empirical_risk,
                lipschitz_scale=scale,
                spectral_norms=tuple(spectral),
                schatten_powers=tuple(powers),
                parameters=sum(
                    (r + c) * f if (p is None and f is not None) else r * c for (r, c), f in zip(shapes, factors)
                ),
                dudley_alpha=alpha,
                entropy_integral=integral,
                log_covering_at_alpha=0.0 if alpha >= 1.0 else float(total[at]),
                ranks_at_alpha=tuple(int(k) for k in ranks[:, at]) if alpha < 1.0 else (0,) * depth,
                tail_log_covering_at_alpha=(
                    tuple(float(v) for v in tails_spent[:, at]) if alpha < 1.0 else (0.0,) * depth
                ),
                rademacher=rademacher,
                complexity=complexity,
                confidence=confidence,
                total=setting.empirical_risk + complexity + confidence,
                sample_target=sample_target,
                sample_complexity=needed,
                allocation=allocation,
                layer_radii_at_alpha=tuple(float(v) for v in radii[:, at]) if alpha < 1.0 else (),
                factor_ranks=tuple(factors) if p is None else (None,) * depth,
            )
        )
    return results


def _complexity_at(grid: np.ndarray, tails: np.ndarray, n: float) -> float:
    """The complexity term ``2 · R̂_n`` of a covering bound at sample size n (same norms and margin)."""
    return 2.0 * _dudley_min(grid, tails, n)[0]


def _factor_ranks(
    factor_ranks: Sequence[int | None] | None, shapes: list[tuple[int, int]], kept: list[torch.Tensor]
) -> list[int | None]:
    """Validate ``factor_ranks``: one entry per layer, None or an int r ≥ the layer's rank."""
    if factor_ranks is None:
        return [None] * len(shapes)
    if (
        isinstance(factor_ranks, str | torch.Tensor)
        or not isinstance(factor_ranks, Sequence)
        or len(factor_ranks) != len(shapes)
    ):
        raise ValueError(
            f"`factor_ranks` must hold one entry (None or an int) per layer matrix ({len(shapes)}), got {factor_ranks!r}"
        )
    out: list[int | None] = []
    for index, (rank, sigma) in enumerate(zip(factor_ranks, kept)):
        if rank is None:
            out.append(None)
            continue
        rank = check_int(f"factor_ranks[{index}]", rank, low=1)
        if sigma.numel() > rank:
            raise ValueError(
                f"`factor_ranks[{index}]` = {rank} but `matrices[{index}]` has numerical rank {sigma.numel()}: "
                "a product of rank-r factors has rank <= r"
            )
        out.append(rank)
    return out


def parameter_count_bound(
    matrices: Sequence[torch.Tensor],
    *,
    n: int,
    margin: float,
    input_norm: float,
    data_norm: float | None = None,
    empirical_risk: float = 0.0,
    delta: float = 0.05,
    lipschitz: float = 1.0,
    sample_target: float = 0.1,
    allocation: str = "optimal",
    factor_ranks: Sequence[int | None] | None = None,
    spectra: Sequence[torch.Tensor] | None = None,
) -> CoveringBound:
    """Parameter-count (VC-style) margin bound: log-covering = #parameters × log(1/ε).

    With probability ≥ 1 − δ over n samples,
    ``P(error) ≤ R̂_γ + 2 inf_α (4α + 12/√n ∫_α^1 √(log N(ε)) dε) + 3 √(ln(2/δ)/(2n))`` with
    ``log N(ε) = min Σ_i m_i n_i log(3 √min(m_i, n_i) / t_i)`` over layer radii with
    ``Σ_i t_i ≤ T(ε) = min(γε/(2K), 1)`` (``t_i = T(ε)/L`` with ``allocation="equal"``) and
    ``K = e ρ^{L−1} (‖X‖_F/√n) Π_i ‖A_i‖_2`` (docs/bounds.md, Sec. 2–4). Its sample complexity is
    Õ(P · L) with P = Σ m_i n_i ≈ W²L parameters, the order of the VC bounds of Bartlett,
    Harvey, Liaw and Mehrabian (JMLR 2019), Õ(W²L²). Spectral norms are fixed in advance (the
    union bound over them is dropped).

    Args:
        matrices: ``[A_1, …, A_L]``, A_i of shape ``(m_i, m_{i−1})`` (e.g. :func:`dense_matrices`).
        n: training samples (≥ 2).
        margin: γ > 0.
        input_norm: B ≥ max_i ‖x_i‖_2 > 0.
        data_norm: ``‖X‖_F = √(Σ_i ‖x_i‖_2²)`` of the training inputs (as in
            :func:`spectral_bound`); defaults to its bound ``input_norm · √n``.
        empirical_risk: R̂_γ in [0, 1] (:func:`margin_loss`).
        delta: confidence parameter in (0, 1).
        lipschitz: ρ > 0, the activation's Lipschitz constant (σ(0) = 0 is assumed).
        sample_target: complexity level in (0, 8) defining ``sample_complexity``.
        allocation: ``"optimal"`` (default): the covering radius budget is split over layers
            per scale (Lagrangian allocation, never worse than the equal split, which it also
            tries); ``"equal"``: every layer gets ``t(ε) = min(γε/(2KL), 1/L)`` (the
            composition of earlier revisions). docs/bounds.md, Sec. 3.
        factor_ranks: None, or one entry per layer: None for a dense layer, or r_i when layer
            i is *stored* as the product of an ``m_i × r_i`` and an ``r_i × n_i`` factor (e.g.
            :class:`structnets.nn.LowRankLinear`, see
            :func:`structnets.analysis.dense_matrices.factor_ranks`). Such a layer is covered by
            counting the factors' parameters, ``log N_i = (m_i + n_i) r_i log(9 √r_i / t)``
            (docs/bounds.md, eq. 4.1f) when that is smaller than ``m_i n_i log(3√k/t)``: the
            parameter count of the network as stored. Each r_i must be at least the layer's
            numerical rank.
        spectra: the layers' singular values from :func:`layer_spectra`, to share one SVD per
            layer between several bounds of one network (the same numbers); None computes them.

    Returns:
        a :class:`CoveringBound` with ``name="parameter-count"``.
    """
    setting = _setting(n, margin, input_norm, empirical_risk, delta, lipschitz)
    return _covering_bounds(
        matrices, setting, [None], _target(sample_target), data_norm, "truncate", allocation, factor_ranks, spectra
    )[0]


def rank_sparse_bound(
    matrices: Sequence[torch.Tensor],
    *,
    p: float,
    n: int,
    margin: float,
    input_norm: float,
    data_norm: float | None = None,
    empirical_risk: float = 0.0,
    delta: float = 0.05,
    lipschitz: float = 1.0,
    sample_target: float = 0.1,
    tail_covering: str = "maurey",
    allocation: str = "optimal",
    spectra: Sequence[torch.Tensor] | None = None,
) -> CoveringBound:
    """Rank-sparse Schatten-p margin bound (Ledent, Alves and Lei, NeurIPS 2025; our derivation).

    Same form as :func:`parameter_count_bound`, but layer i's class is
    ``{A : ‖A‖_2 ≤ s_i, ‖A‖_{S_p}^p ≤ M_i}`` with ``M_i = Σ_j σ_j(A_i)^p``, and each matrix is
    split as rank-k head + tail with k chosen per layer and per ε
    (:func:`schatten_ball_log_covering`, t = t(ε) as there, m × n the layer's shape):

    ``log N_i(ε) = min( m n log(3√min(m,n)/t),
    min_k (m + n + 1) k log(9 √k / (t − u_k))  [truncation, u_k < t],
    min_{k, λ} (m + n + 1) k log(9 √k / ((1−λ)t)) + ⌈m f_k²/(λt)²⌉ log(2mn)  [Maurey tail] )``

    with ``u_k = min(1, (M_i'/(k+1))^{1/p})`` the largest relative σ_{k+1} and ``f_k²`` the
    largest relative tail energy Σ_{j>k} σ_j²/s_i² allowed by ``M_i' = M_i/s_i^p``
    (docs/bounds.md, eq. 4.4). For exactly rank-r layers and p → 0, ``u_r → 0`` and the bound
    tends to the rank class's ``Σ_i (m_i + n_i + 1) r log(9√r/t)``: sample complexity
    Õ(W r L²). At p = 2 and k = 0 the Maurey term is the norm-based
    ``⌈m ‖A_i‖_F²/(s_i t)²⌉ log(2mn)``. The bound never exceeds the parameter count
    (same ``data_norm``), and with ``tail_covering="maurey"`` never exceeds ``"truncate"``.

    Args:
        matrices, n, margin, input_norm, data_norm, empirical_risk, delta, lipschitz: as in
            :func:`parameter_count_bound`.
        p: Schatten exponent in [0, ∞); p = 0 is the limit class ``rank A_i ≤ r_i`` with r_i
            the numerical rank of A_i (singular values above ``max(m, n) · eps · σ_1``).
        tail_covering: ``"maurey"`` (default): the tail beyond the split rank may also be
            covered by Maurey's empirical lemma; ``"truncate"``: only by truncation (a
            data-independent spectral cover).
        allocation: ``"optimal"`` or ``"equal"``, as in :func:`parameter_count_bound`.
        spectra: as in :func:`parameter_count_bound`.

    Returns:
        a :class:`CoveringBound` with ``name="rank-sparse"``.
    """
    p = _exponent(p, "p")
    setting = _setting(n, margin, input_norm, empirical_risk, delta, lipschitz)
    return _covering_bounds(
        matrices, setting, [p], _target(sample_target), data_norm, tail_covering, allocation, spectra=spectra
    )[0]


def rank_sparse_bounds(
    matrices: Sequence[torch.Tensor],
    *,
    ps: Sequence[float] = (0.0, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0),
    n: int,
    margin: float,
    input_norm: float,
    data_norm: float | None = None,
    empirical_risk: float = 0.0,
    delta: float = 0.05,
    lipschitz: float = 1.0,
    sample_target: float = 0.1,
    tail_covering: str = "maurey",
    allocation: str = "optimal",
    spectra: Sequence[torch.Tensor] | None = None,
) -> tuple[CoveringBound, ...]:
    """:func:`rank_sparse_bound` for each p of a grid, in the order given.

    Each bound holds with probability 1 − δ; taking the best over a grid of |ps| values needs
    δ/|ps| each (a union bound), which the caller can pass as ``delta``.

    Args:
        ps: non-empty sequence of exponents in [0, ∞).
        (the rest as in :func:`rank_sparse_bound`)

    Returns:
        one :class:`CoveringBound` per p.
    """
    if isinstance(ps, str) or not isinstance(ps, Sequence) or len(ps) == 0:
        raise ValueError(f"`ps` must be a non-empty sequence of exponents in [0, inf), got {ps!r}")
    exponents = [_exponent(p, f"ps[{index}]") for index, p in enumerate(ps)]
    setting = _setting(n, margin, input_norm, empirical_risk, delta, lipschitz)
    return tuple(
        _covering_bounds(
            matrices, setting, exponents, _target(sample_target), data_norm, tail_covering, allocation, spectra=spectra
        )
    )
