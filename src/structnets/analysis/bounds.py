"""Margin-based generalization bounds for feed-forward networks, each term listed.

For a classifier ``f(x) = A_L σ(A_{L−1} σ(⋯ σ(A_1 x)))`` with a ρ-Lipschitz activation σ,
σ(0) = 0 (ReLU: ρ = 1; SiLU/Swish: ρ ≈ 1.0998), inputs ``‖x‖_2 ≤ B``, n training samples, margin
γ > 0 and confidence 1 − δ, every calculator bounds the test error
``P(argmax_j f(x)_j ≠ y)`` by ``R̂_γ + complexity (+ confidence)``, where
``R̂_γ = (1/n) #{i : f(x_i)_{y_i} − max_{j≠y_i} f(x_i)_j ≤ γ}`` is the training margin loss.

* :func:`parameter_count_bound`: a covering bound whose log-covering number is the parameter
  count times a logarithm (the VC-style Õ(W²L²) sample complexity);
* :func:`spectral_bound`: Bartlett, Foster and Telgarsky, *Spectrally-normalized margin bounds for
  neural networks* (NeurIPS 2017), Lemma A.8 (the fixed-norm form of Thm 1.1);
* :func:`pac_bayes_bound`: Neyshabur, Bhojanapalli and Srebro, *A PAC-Bayesian approach to
  spectrally-normalized margin bounds for neural networks* (ICLR 2018), Thm 1 with the
  constants of its proof;
* :func:`rank_sparse_bound` / :func:`rank_sparse_bounds`: the Schatten-p family of Ledent, Alves
  and Lei, *Generalization Bounds for Rank-sparse Neural Networks* (NeurIPS 2025), derived from
  the covering argument they sketch (a rank-k head covered by counting its parameters, the tail
  beyond it truncated or covered by Maurey's norm-based empirical lemma, k chosen per layer and
  per scale, composed layer by layer through the Lipschitz product with the covering radius
  allocated over layers per scale); the derivation and every
  constant kept or dropped are in ``docs/bounds.md``.

Biases are not part of these bounds (as in the three papers): apply them to bias-free networks,
or read them as bounds for the network with biases removed. The bounds hold for the class with
the norms of the given matrices fixed in advance; the union bound that makes them hold
simultaneously for all norms (an extra O(√(Σ_i log log(·)/n)) term) is dropped, as stated in
each docstring. Every calculator computes in float64 and refuses empty, non-finite, non-2-D or
non-chaining matrices and out-of-range options with a ``ValueError``/``TypeError`` naming them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .._validation import check_int, check_real
from .spectral import _as_matrix

__all__ = [
    "SWISH_LIPSCHITZ",
    "CoveringBound",
    "PacBayesBound",
    "SpectralBound",
    "dudley_entropy_bound",
    "margin_loss",
    "margins",
    "parameter_count_bound",
    "pac_bayes_bound",
    "rank_sparse_bound",
    "rank_sparse_bounds",
    "schatten_ball_log_covering",
    "spectral_bound",
]

SWISH_LIPSCHITZ = 1.09984
"""An upper bound (rounded up) on sup_x |d/dx x·sigmoid(x)| = 1.0998393…, the Lipschitz constant
of SiLU (Swish with β = 1); pass it as ``lipschitz`` for Swish networks."""

_DUDLEY_GRID = 4000
_DUDLEY_LOW = 1e-12


# --------------------------------------------------------------------------------------------
# Margins


def margins(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Multiclass margins ``M(f(x), y) = f(x)_y − max_{j ≠ y} f(x)_j``.

    Bartlett et al. (2017), Sec. 2: the prediction is correct iff the margin is positive.

    Args:
        outputs: ``(N, k)`` scores, k ≥ 2.
        targets: ``(N,)`` integer class indices in [0, k).

    Returns:
        ``(N,)`` tensor of margins, in the outputs' dtype (float64 for integer outputs).
    """
    outputs = _as_matrix(outputs, "outputs")
    if outputs.ndim != 2 or outputs.shape[1] < 2:
        raise ValueError(f"`outputs` must be a 2-D (N, k) tensor with k >= 2 classes, got shape {tuple(outputs.shape)}")
    if not isinstance(targets, torch.Tensor) or targets.shape != outputs.shape[:1]:
        raise ValueError(
            f"`targets` must be a tensor of shape ({outputs.shape[0]},), one class index per row of `outputs`, got "
            f"{getattr(targets, 'shape', type(targets).__name__)}"
        )
    if targets.is_floating_point() or targets.is_complex():
        raise TypeError(f"`targets` must hold integer class indices, got dtype {targets.dtype}")
    targets = targets.to(torch.int64)
    k = outputs.shape[1]
    if bool(((targets < 0) | (targets >= k)).any()):
        raise ValueError(f"`targets` must be class indices in [0, {k}), got values in [{int(targets.min())}, {int(targets.max())}]")
    true = outputs.gather(1, targets[:, None])[:, 0]
    others = outputs.scatter(1, targets[:, None], float("-inf"))
    return true - others.max(1).values


def margin_loss(margin_values: torch.Tensor, margin: float) -> float:
    """Training margin loss ``R̂_γ = (1/n) #{i : M_i ≤ γ}`` (an upper bound on the ramp loss).

    Args:
        margin_values: ``(n,)`` margins, e.g. from :func:`margins`.
        margin: γ > 0.

    Returns:
        a float in [0, 1].
    """
    margin = check_real("margin", margin, low=0.0, low_open=True)
    if not isinstance(margin_values, torch.Tensor) or margin_values.ndim != 1 or margin_values.numel() == 0:
        raise ValueError(
            f"`margin_values` must be a non-empty 1-D tensor, got {getattr(margin_values, 'shape', type(margin_values).__name__)}"
        )
    if not bool(torch.isfinite(margin_values).all()):
        raise ValueError("`margin_values` must be finite, got NaN/Inf entries")
    return float((margin_values <= margin).double().mean())


# --------------------------------------------------------------------------------------------
# Shared checks


@dataclass(frozen=True)
class _Setting:
    n: int
    margin: float
    input_norm: float
    empirical_risk: float
    delta: float
    lipschitz: float


def _setting(n: int, margin: float, input_norm: float, empirical_risk: float, delta: float, lipschitz: float) -> _Setting:
    return _Setting(
        n=check_int("n", n, low=2),
        margin=check_real("margin", margin, low=0.0, low_open=True),
        input_norm=check_real("input_norm", input_norm, low=0.0, low_open=True),
        empirical_risk=check_real("empirical_risk", empirical_risk, low=0.0, high=1.0),
        delta=check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True),
        lipschitz=check_real("lipschitz", lipschitz, low=0.0, low_open=True),
    )


def _layers(matrices: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Validate a chain ``A_1 (m_1×d), A_2 (m_2×m_1), …`` and return float64 copies."""
    return [layer for layer, _ in _layers_with_tolerance(matrices)]


def _layers_with_tolerance(matrices: Sequence[torch.Tensor]) -> list[tuple[torch.Tensor, float]]:
    """Float64 layers, each with ``max(m, n) · eps`` of the dtype it came in (its rounding level)."""
    if isinstance(matrices, torch.Tensor) or not isinstance(matrices, Sequence):
        raise TypeError(
            f"`matrices` must be a sequence of 2-D tensors [A_1, ..., A_L], got {type(matrices).__name__}"
        )
    if len(matrices) == 0:
        raise ValueError("`matrices` must hold at least one layer matrix, got an empty sequence")
    layers: list[tuple[torch.Tensor, float]] = []
    for index, matrix in enumerate(matrices):
        name = f"matrices[{index}]"
        matrix = _as_matrix(matrix, name)
        if matrix.ndim != 2:
            raise ValueError(f"`{name}` must be a 2-D (out, in) matrix, got shape {tuple(matrix.shape)}")
        if layers and matrix.shape[1] != layers[-1][0].shape[0]:
            raise ValueError(
                f"`{name}` has {matrix.shape[1]} input columns but `matrices[{index - 1}]` has "
                f"{layers[-1][0].shape[0]} output rows; layers must chain as A_L ⋯ A_1"
            )
        tolerance = max(matrix.shape) * torch.finfo(matrix.dtype).eps
        layers.append((matrix.to(torch.float64), tolerance))
    return layers


def _target(sample_target: float) -> float:
    return check_real("sample_target", sample_target, low=0.0, high=8.0, low_open=True, high_open=True)


def _confidence(n: int, delta: float) -> float:
    return 3.0 * math.sqrt(math.log(2.0 / delta) / (2.0 * n))


# --------------------------------------------------------------------------------------------
# Covering numbers and Dudley's entropy integral


_TAIL_SHARES = (0.5, 0.75, 0.9)
"""Fractions of a layer's radius given to the Maurey-covered tail (the rest goes to the rank-k
head); the covering takes the best of them (each is a valid cover, docs/bounds.md Sec. 4)."""

_TAIL_COVERINGS = ("maurey", "truncate")
_CHUNK = 256


def _tail_profile(k_max: int, p: float, m: float) -> tuple[np.ndarray, np.ndarray]:
    """Class-wide tail sizes of ``C = {‖A‖_2 ≤ 1, Σ_j σ_j^p ≤ m}`` (p > 0) or ``{rank A ≤ m}`` (p = 0).

    Returns ``(u, f2)`` of length ``k_max + 1``: ``u[k] ≥ sup_C σ_{k+1}(A)`` and
    ``f2[k] ≥ sup_C Σ_{j>k} σ_j(A)²`` (docs/bounds.md, eq. 4.4), both 0 at ``k = k_max``.
    """
    r = k_max
    ks = np.arange(r + 1, dtype=np.float64)
    u = np.zeros(r + 1)
    f2 = np.zeros(r + 1)
    if p == 0:
        rank = int(m)
        u[:rank] = 1.0
        f2[:rank] = rank - ks[:rank]
        return u, f2
    # the class with Σσ^p ≤ m > r is the class with m = r (σ_j ≤ 1 forces Σσ^p ≤ r)
    m = min(float(m), float(r))
    head = ks[:r]
    log_u = np.minimum(0.0, (math.log(m) - np.log(head + 1.0)) / p)
    log_vc = (math.log(m) - math.log(r)) / p  # where (r − k)v² = v^{2−p}(m − k v^p): v^p = m/r
    u[:r] = np.exp(log_u)
    if p >= 2.0:
        # Hölder: Σ_{j>k} σ_j² ≤ (r−k)^{1−2/p} (m − k v^p)^{2/p}, decreasing in v = σ_{k+1};
        # (r−k)v² increasing; they cross at v_c.
        f2[:r] = (r - head) * math.exp(2.0 * log_vc)
    else:
        with np.errstate(divide="ignore"):
            log_star = np.where(
                head > 0, (np.log((2.0 - p) * m / 2.0) - np.log(head)) / p, np.inf
            )  # argmax of v^{2−p}(m − k v^p)
        log_v = np.clip(log_star, log_vc, log_u)
        f2[:r] = np.exp((2.0 - p) * log_v) * (m - head * np.exp(p * log_v))
    return u, np.maximum(f2, 0.0)


_Route = tuple[np.ndarray, np.ndarray, np.ndarray]


def _log_covering_routes(
    rows: int,
    cols: int,
    t: np.ndarray,
    p: float | None,
    m: float | None,
    factor_rank: int | None = None,
) -> dict[str, _Route]:
    """Vectorised :func:`schatten_ball_log_covering` over an array of relative radii t, per route.

    Returns ``{route: (log N, k, tail)}`` (the bound, the split rank and the Maurey tail's share
    of log N) for ``"parameter"`` (the parameter count, 4.1, or with ``factor_rank`` r the
    smaller of it and the factors' count ``(rows + cols) r log(9 √r / t)``, eq. 4.1f),
    ``"truncate"`` (the best of it and the truncation covers) and ``"maurey"`` (the best of all);
    for ``p`` None only ``"parameter"``. Each route is at most the one before, pointwise.
    """
    k_max = min(rows, cols)
    t = np.asarray(t, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        full = rows * cols * np.log(3.0 * math.sqrt(k_max) / t)
    full_k = np.full(t.shape, k_max, dtype=np.int64)
    if factor_rank is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            factored = (rows + cols) * factor_rank * np.log(9.0 * math.sqrt(factor_rank) / t)
        use = factored < full
        full = np.where(use, factored, full)
        full_k = np.where(use, factor_rank, full_k)
    single = t >= 1.0
    zero = np.zeros(t.shape)

    def finish(value: np.ndarray, k: np.ndarray, tail: np.ndarray) -> _Route:
        return np.where(single, 0.0, value), np.where(single, 0, k), np.where(single, 0.0, tail)

    routes = {"parameter": finish(full, full_k, zero)}
    if p is None:
        return routes
    chosen = {name: [full.copy(), full_k.copy(), zero.copy()] for name in ("truncate", "maurey")}
    u, f2 = _tail_profile(k_max, p, m)
    ks = np.arange(k_max + 1)
    c = ((rows + cols + 1) * ks).astype(np.float64)
    ch = c * np.log(9.0 * np.sqrt(np.maximum(ks, 1)))
    atoms = math.log(2.0 * rows * cols)
    for start in range(0, t.size, _CHUNK):
        window = slice(start, start + _CHUNK)
        tc, log_t = t[window][None, :], np.log(t[window])[None, :]
        # a head of rank k has radius ≤ t, so it costs ≥ c_k (h_k − log t), increasing in k:
        # ranks where that already exceeds the parameter count everywhere cannot win.
        useful = ((ch[:, None] - c[:, None] * log_t) < full[window][None, :]).any(axis=1)
        top = max(int(useful.sum()), 1)
        uk, ck, chk = u[:top, None], c[:top, None], ch[:top, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            # (i) truncation: ‖A − A_k‖_2 ≤ u_k s; the head net gets the rest, t − u_k
            room = tc - uk
            cost = np.where(room > 0, chk - ck * np.log(room), np.inf)
            cost[0] = np.where(room[0] >= 0, 0.0, np.inf)  # k = 0: the zero matrix covers C
            tail_cost = np.zeros_like(cost)
            for name in ("truncate", "maurey"):
                if name == "maurey":
                    energy = rows * f2[:top, None]
                    # (ii) head (k ≥ 1) at radius (1 − λ)t, tail at λt by Maurey's lemma
                    for share in _TAIL_SHARES:
                        maurey = np.where(uk <= share * tc, 0.0, np.ceil(energy / (share * tc) ** 2) * atoms)
                        option = chk - ck * (math.log(1.0 - share) + log_t) + maurey
                        option[0] = np.inf
                        better = option < cost
                        cost = np.where(better, option, cost)
                        tail_cost = np.where(better, maurey, tail_cost)
                    # (iii) k = 0: the whole matrix is tail, covered at the full radius t
                    pure = np.where(u[0] <= tc[0], 0.0, np.ceil(energy[0] / tc[0] ** 2) * atoms)
                    better = pure < cost[0]
                    cost[0] = np.where(better, pure, cost[0])
                    tail_cost[0] = np.where(better, pure, tail_cost[0])
                j = np.argmin(cost, axis=0)
                columns = np.arange(cost.shape[1])
                best = cost[j, columns]
                value, k, tail = chosen[name]
                use = best < value[window]
                value[window] = np.where(use, best, value[window])
                k[window] = np.where(use, j, k[window])
                tail[window] = np.where(use, tail_cost[j, columns], 0.0)
    for name in ("truncate", "maurey"):
        routes[name] = finish(*chosen[name])
    return routes


def _log_covering_grid(
    rows: int,
    cols: int,
    t: np.ndarray,
    p: float | None,
    m: float | None,
    tail_covering: str = "maurey",
    factor_rank: int | None = None,
) -> _Route:
    """Vectorised :func:`schatten_ball_log_covering` over an array of relative radii t.

    Returns ``(log N, k, tail)``: the bound, the split rank and the Maurey tail's share of log N
    (see :func:`_log_covering_routes`).
    """
    routes = _log_covering_routes(rows, cols, t, p, m, factor_rank)
    return routes["parameter" if p is None else tail_covering]


def schatten_ball_log_covering(
    rows: int,
    cols: int,
    relative_radius: float,
    *,
    p: float | None = None,
    relative_schatten_power: float | None = None,
    tail_covering: str = "maurey",
) -> tuple[float, int]:
    """Bound ``log N`` of the images of a Schatten ball, and the split rank used for it.

    The class is ``C = {A ∈ R^{rows×cols} : ‖A‖_2 ≤ s, ‖A‖_{S_p}^p ≤ M}``; the cover is of
    ``{A Z : A ∈ C}`` in Frobenius norm at radius ``ε ‖Z‖_F``, for any ``Z ∈ R^{cols×n}`` (the
    layer's inputs on the sample, one column per sample); the count depends on Z only through
    ``‖Z‖_F``, so it holds for every Z. Everything is relative to s (``t = ε/s``,
    ``relative_schatten_power = M/s^p``), since ``log N`` is scale free. With
    ``k_max = min(rows, cols)`` and ``r = k_max`` (docs/bounds.md, Sec. 4):

    * ``t ≥ 1``: ``log N = 0`` (the zero matrix covers C);
    * *parameter count* (p None): ``C`` lies in the Frobenius ball of radius ``√k_max s`` of
      R^{rows·cols}; the volumetric bound ``(3R/ε)^{dim}`` gives
      ``log N ≤ rows · cols · log(3 √k_max / t)``, k = k_max (a spectral-norm cover of C, hence
      of the images);
    * *rank-sparse* (p given): write ``A = A_k + T_k`` (rank-k truncation + tail). Over C,
      ``σ_{k+1} ≤ u_k := min(1, (M/(k+1))^{1/p})`` and ``‖T_k‖_F² ≤ f_k² `` (eq. 4.4 of the
      docs: the largest tail energy the constraints allow). The head lies in the rank-k matrices
      of Frobenius norm ≤ √k s, which have an η-net of size ``(9 √k s / η)^{(rows+cols+1) k}``
      (Candès and Plan 2011, Lemma 3.1). Minimised over k ∈ [0, k_max]:

      - *truncation*: ``(rows+cols+1) k log(9 √k / (t − u_k))`` when ``u_k < t`` (head net at
        radius ``t − u_k``, tail not covered; 0 for k = 0);
      - *Maurey tail* (``tail_covering="maurey"``): head at ``(1−λ)t`` plus
        ``⌈rows f_k² / (λt)²⌉ log(2 rows cols)`` for the tail (Maurey's empirical lemma, as in
        Bartlett et al. 2017, Lemma 3.2; 0 when ``u_k ≤ λt``), best of λ ∈ {1/2, 3/4, 9/10};
        for k = 0 the whole radius goes to the tail.

      The smaller of this and the parameter count is returned (all are valid covers).
    * *rank* (p = 0, the limit ``‖A‖_{S_p}^p → rank A``): ``C = {rank A ≤ r, ‖A‖_2 ≤ s}``, with
      ``u_k = 1, f_k² = r − k`` for k < r and 0 from k = r on; at k = r this is
      ``(rows + cols + 1) r log(9 √r / t)``.

    Args:
        rows, cols: the matrix shape (≥ 1).
        relative_radius: t = ε/s > 0.
        p: Schatten exponent in [0, ∞) (0: the rank class), or None for the parameter count.
        relative_schatten_power: M/s^p > 0, required with p (≥ 1 for the class to contain a
            matrix of spectral norm s, since σ_1^p ≤ Σ_i σ_i^p; values above min(rows, cols)
            describe the same class as min(rows, cols)); for p = 0 the rank r, an int in
            [0, min(rows, cols)].
        tail_covering: ``"maurey"`` (default) also covers the tail by Maurey's lemma;
            ``"truncate"`` only by truncation (then the cover is also a spectral-norm cover of C
            itself, independent of the data).

    Returns:
        ``(log N, k)``: the bound (natural log) and the split rank of the covering (k_max for
        the parameter count; 0 when a single point covers or the whole matrix is Maurey-covered).
    """
    rows = check_int("rows", rows, low=1)
    cols = check_int("cols", cols, low=1)
    t = check_real("relative_radius", relative_radius, low=0.0, low_open=True)
    tail_covering = _tail_choice(tail_covering)
    if p is None:
        if relative_schatten_power is not None:
            raise ValueError("`relative_schatten_power` needs `p`; got p=None")
        m = None
    else:
        p = _exponent(p, "p")
        if relative_schatten_power is None:
            raise ValueError("`relative_schatten_power` is required with `p`")
        if p == 0:
            m = check_int("relative_schatten_power", relative_schatten_power, low=0, high=min(rows, cols))
        else:
            m = check_real("relative_schatten_power", relative_schatten_power, low=0.0, low_open=True)
    value, k, _ = _log_covering_grid(rows, cols, np.array([t]), p, m, tail_covering)
    return float(value[0]), int(k[0])


def _tail_choice(tail_covering: str) -> str:
    if not isinstance(tail_covering, str) or tail_covering not in _TAIL_COVERINGS:
        raise ValueError(f"`tail_covering` must be one of {list(_TAIL_COVERINGS)}, got {tail_covering!r}")
    return tail_covering


def _dudley_grid() -> np.ndarray:
    return np.logspace(math.log10(_DUDLEY_LOW), 0.0, _DUDLEY_GRID)


def _dudley_tails(grid: np.ndarray, log_covering: np.ndarray) -> np.ndarray:
    """``tails[j]`` ≥ ∫_{grid[j]}^1 √log N: left Riemann sums of a non-increasing integrand."""
    cells = np.sqrt(log_covering[:-1]) * np.diff(grid)
    return np.cumsum(cells[::-1])[::-1]


def _dudley_min(grid: np.ndarray, tails: np.ndarray, n: float) -> tuple[float, float, float]:
    candidates = 4.0 * grid[:-1] + 12.0 / math.sqrt(n) * tails
    j = int(np.argmin(candidates))
    if candidates[j] >= 4.0:
        return 4.0, 1.0, 0.0  # α = 1: the integral is empty
    return float(candidates[j]), float(grid[j]), float(tails[j])


def dudley_entropy_bound(
    log_covering: Callable[[float], float], n: int
) -> tuple[float, float, float]:
    """Dudley's entropy integral bound on the empirical Rademacher complexity of a [0, 1] class.

    ``R̂_n(H) ≤ inf_{α > 0} ( 4α + (12/√n) ∫_α^1 √(log N(H, ε, L2(P_n))) dε )``
    (Bartlett et al. 2017, Lemma A.5, rescaled to the normalised empirical L2 metric).

    The integral is bounded above rigorously by a left Riemann sum on a geometric grid of
    4000 points in [1e-12, 1] (``log N`` is non-increasing in ε, so each left endpoint
    over-estimates its cell) and the infimum is taken over the grid points, so the value
    returned is itself a valid upper bound (at most 4, the value at α = 1).

    Args:
        log_covering: ε ↦ an upper bound on ``log N(H, ε)``, non-increasing, ≥ 0.
        n: number of samples (≥ 1).

    Returns:
        ``(bound, α, integral)``: the minimised value, the minimising α and ``∫_α^1 √log N``.
    """
    if not callable(log_covering):
        raise TypeError(f"`log_covering` must be callable, got {type(log_covering).__name__}")
    n = check_int("n", n, low=1)
    grid = _dudley_grid()
    values = np.array([_covering_value(log_covering, float(eps)) for eps in grid])
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        j = int(np.argmax(bad))
        raise ValueError(f"`log_covering` must return a finite value >= 0, got {values[j]} at eps={grid[j]:g}")
    return _dudley_min(grid, _dudley_tails(grid, values), n)


def _covering_value(log_covering: Callable[[float], float], eps: float) -> float:
    value = log_covering(eps)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(
            f"`log_covering` must return a real number, got {value!r:.80} ({type(value).__name__}) at eps={eps:g}"
        ) from None


def _smallest_n(complexity: Callable[[float], float], target: float) -> float:
    """Smallest real n ≥ 8 with ``complexity(n) ≤ target`` (complexity non-increasing for n ≥ 8)."""
    low, high = 8.0, 1e60
    if complexity(low) <= target:
        return low
    if complexity(high) > target:
        return math.inf
    lo, hi = math.log(low), math.log(high)
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if complexity(math.exp(mid)) <= target:
            hi = mid
        else:
            lo = mid
    return math.exp(hi)


# --------------------------------------------------------------------------------------------
# Covering-number bounds: parameter count and rank-sparse (Schatten-p)


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


_ALLOCATIONS = ("optimal", "equal")
_TAU_PER_DECADE = 250
_OPTIMISE_FROM = 1e-6
"""Loss scales ε below this keep the equal allocation (Dudley's α is far above it in practice;
the equal allocation stays valid there, and the minimum of the two is still non-increasing)."""


def _allocation_choice(allocation: str) -> str:
    if not isinstance(allocation, str) or allocation not in _ALLOCATIONS:
        raise ValueError(f"`allocation` must be one of {list(_ALLOCATIONS)}, got {allocation!r}")
    return allocation


def _lower_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the lower convex hull of the points (x_j, y_j), x increasing (monotone chain)."""
    hull: list[int] = []
    for j in range(x.size):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # drop b if it lies on or above the segment from a to j
            if (y[b] - y[a]) * (x[j] - x[a]) >= (y[j] - y[a]) * (x[b] - x[a]):
                hull.pop()
            else:
                break
        hull.append(j)
    return np.asarray(hull, dtype=np.int64)


def _allocate(costs: np.ndarray, tau: np.ndarray, budgets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Split a radius budget over layers: ``min Σ_i g_i(t_i)`` subject to ``Σ_i t_i ≤ T``.

    ``costs[i, j] = g_i(tau[j])`` (non-increasing in j). For a multiplier λ every layer takes
    ``t_i(λ) = argmin_j g_i(tau_j) + λ tau_j`` (a vertex of the lower convex hull of its points);
    that choice minimises ``Σ g_i`` over the grid among all allocations with
    ``Σ t_i ≤ S(λ) := Σ t_i(λ)`` (a Lagrangian point minimises the objective under its own
    constraint value). The joint choice only changes where λ crosses minus a hull slope of some
    layer, so every breakpoint and one λ between each two consecutive breakpoints give all the
    Lagrangian points. For a budget T the best of them with ``S(λ) ≤ T`` is returned: a valid
    allocation, evaluated exactly, whose value is non-increasing in T.

    Returns ``(value, pick)``: per budget the cost (inf if no candidate fits) and the grid index
    chosen for each layer, ``(len(budgets), L)`` (−1 where none fits).
    """
    depth = costs.shape[0]
    hulls = []
    for i in range(depth):
        hull = _lower_hull(tau, costs[i])
        slopes = np.diff(costs[i][hull]) / np.diff(tau[hull])  # increasing (convex), ≤ 0
        hulls.append((hull, slopes))
    breaks = np.unique(np.concatenate([-slopes for _, slopes in hulls] + [np.zeros(1)]))
    top = breaks[-1] * 2.0 + 1.0
    multipliers = np.concatenate([breaks, 0.5 * (breaks[:-1] + breaks[1:]), [top]])
    picks = np.empty((multipliers.size, depth), dtype=np.int64)
    for i, (hull, slopes) in enumerate(hulls):
        # argmin of g + λ t over the hull: the first vertex whose outgoing slope is ≥ −λ
        picks[:, i] = hull[np.searchsorted(slopes, -multipliers, side="left")] if slopes.size else hull[0]
    spent = tau[picks].sum(axis=1)
    value = costs[np.arange(depth)[None, :], picks].sum(axis=1)
    order = np.argsort(spent, kind="stable")
    spent, value, picks = spent[order], value[order], picks[order]
    running = np.minimum.accumulate(value)
    best_at = np.maximum.accumulate(np.where(value <= running, np.arange(value.size), 0))
    where = np.searchsorted(spent, budgets, side="right") - 1
    fits = where >= 0
    chosen_row = best_at[np.maximum(where, 0)]
    out = np.where(fits, value[chosen_row], np.inf)
    chosen = np.where(fits[:, None], picks[chosen_row], -1)
    return out, chosen


def _covering_bounds(
    matrices: Sequence[torch.Tensor],
    setting: _Setting,
    ps: Sequence[float | None],
    sample_target: float,
    data_norm: float | None,
    tail_covering: str,
    allocation: str = "optimal",
    factor_ranks: Sequence[int | None] | None = None,
) -> list[CoveringBound]:
    """One :class:`CoveringBound` per entry of ``ps`` (None: parameter count), sharing one SVD per layer."""
    if data_norm is None:
        data_norm = setting.input_norm * math.sqrt(setting.n)
    data_norm = check_real("data_norm", data_norm, low=0.0, low_open=True)
    tail_covering = _tail_choice(tail_covering)
    allocation = _allocation_choice(allocation)
    rms = data_norm / math.sqrt(setting.n)
    layers = _layers_with_tolerance(matrices)
    depth = len(layers)
    sigmas = [torch.linalg.svdvals(a) for a, _ in layers]
    spectral = [float(sigma[0]) for sigma in sigmas]
    # singular values at the rounding level of the dtype the layer came in are exact zeros
    # (see structnets.analysis.schatten_norm); they cannot count towards ‖A‖_{S_p}^p or the rank.
    kept = [sigma[sigma > tolerance * sigma[0]] for sigma, (_, tolerance) in zip(sigmas, layers)]
    shapes = [tuple(a.shape) for a, _ in layers]
    factors = _factor_ranks(factor_ranks, shapes, kept)
    grid = _dudley_grid()
    if min(spectral) == 0.0:
        scale, budget = 0.0, None  # a zero layer: the class is the zero function, log N = 0 everywhere
    else:
        log_scale = (
            1.0 + (depth - 1) * math.log(setting.lipschitz) + math.log(rms)
            + sum(math.log(s) for s in spectral)
        )
        if log_scale > 700:
            raise ValueError(
                f"the Lipschitz product e·ρ^(L−1)·(‖X‖_F/√n)·Π‖A_i‖_2 overflows float64 (log = {log_scale:.1f}); "
                "the bound would be vacuous"
            )
        scale = math.exp(log_scale)
        # loss scale ε (empirical L2) → outputs within γε√n/2 in Frobenius norm (ramp
        # 1/γ-Lipschitz, margin 2-Lipschitz in ℓ2) → layer radii t_i with Σ_i t_i ≤ T(ε) =
        # γε/(2K), capped at 1 so Π(1 + t_i) ≤ e (docs/bounds.md, Sec. 2–3).
        budget = np.minimum(setting.margin * grid / (2.0 * scale), 1.0)
    tau = None
    if budget is not None and allocation == "optimal" and depth > 1:
        low = max(float(np.min(budget[grid >= _OPTIMISE_FROM])) * 1e-3, 1e-300)
        decades = max(-math.log10(low), 1e-3)
        tau = np.logspace(math.log10(low), 0.0, max(int(decades * _TAU_PER_DECADE), 2) + 1)
    confidence = _confidence(setting.n, setting.delta)
    results: list[CoveringBound] = []
    for p in ps:
        if p is None:
            powers: list[float] = []
        elif p == 0:
            powers = [float(sigma.numel()) for sigma in kept]
        else:
            powers = [float((sigma.double() ** p).sum()) for sigma in kept]
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
                    relative = max(powers[index] / spectral[index] ** p, 1.0)
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
        needed = _smallest_n(lambda n: 2.0 * _dudley_min(grid, tails, n)[0], sample_target)
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


def _factor_ranks(
    factor_ranks: Sequence[int | None] | None, shapes: list[tuple[int, int]], kept: list[torch.Tensor]
) -> list[int | None]:
    """Validate ``factor_ranks``: one entry per layer, None or an int r ≥ the layer's rank."""
    if factor_ranks is None:
        return [None] * len(shapes)
    if isinstance(factor_ranks, str | torch.Tensor) or not isinstance(factor_ranks, Sequence) or len(factor_ranks) != len(shapes):
        raise ValueError(
            f"`factor_ranks` must hold one entry (None or an int) per layer matrix ({len(shapes)}), got {factor_ranks!r}"
        )
    out: list[int | None] = []
    for index, (rank, (rows, cols), sigma) in enumerate(zip(factor_ranks, shapes, kept)):
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

    Returns:
        a :class:`CoveringBound` with ``name="parameter-count"``.
    """
    setting = _setting(n, margin, input_norm, empirical_risk, delta, lipschitz)
    return _covering_bounds(
        matrices, setting, [None], _target(sample_target), data_norm, "truncate", allocation, factor_ranks
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

    Returns:
        a :class:`CoveringBound` with ``name="rank-sparse"``.
    """
    p = _exponent(p, "p")
    setting = _setting(n, margin, input_norm, empirical_risk, delta, lipschitz)
    return _covering_bounds(
        matrices, setting, [p], _target(sample_target), data_norm, tail_covering, allocation
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
        _covering_bounds(matrices, setting, exponents, _target(sample_target), data_norm, tail_covering, allocation)
    )


def _exponent(p: float, name: str) -> float:
    if isinstance(p, bool) or not isinstance(p, int | float):
        raise TypeError(f"`{name}` must be a real number in [0, inf), got {p!r} ({type(p).__name__})")
    return check_real(name, p, low=0.0)


# --------------------------------------------------------------------------------------------
# Bartlett, Foster and Telgarsky (2017)


@dataclass(frozen=True)
class SpectralBound:
    """Spectrally-normalised margin bound (Bartlett, Foster and Telgarsky 2017), every term listed.

    ``total = empirical_risk + small_term + complexity + confidence``.

    Attributes:
        n, margin, delta, lipschitz: the setting.
        empirical_risk: R̂_γ.
        small_term: 8/n.
        data_norm: ``‖X‖_F = √(Σ_i ‖x_i‖_2²)``.
        width: W, the largest layer dimension (inputs included).
        spectral_norms: ``s_i = ‖A_i‖_2``.
        norm_ratios: ``‖A_iᵀ − M_iᵀ‖_{2,1} / s_i`` (sum of the ℓ2 norms of the rows of A_i − M_i).
        spectral_product: ``Π_i ρ_i s_i`` (ρ_i = ρ for the L−1 hidden activations, 1 at the output).
        spectral_complexity: ``R_A = Π_i ρ_i s_i · (Σ_i (‖A_iᵀ − M_iᵀ‖_{2,1}/s_i)^{2/3})^{3/2}``.
        complexity: ``72 ‖X‖_F ln(2W) ln(n) R_A / (γ n)``.
        confidence: ``3 √(ln(2/δ)/(2n))``.
        total: the bound.
        sample_target, sample_complexity: the smallest n at which ``complexity`` would be
            ≤ ``sample_target`` with ``‖X‖_F = (data_norm/√n_actual) · √n`` (same norms, margin).
    """

    n: int
    margin: float
    delta: float
    lipschitz: float
    empirical_risk: float
    small_term: float
    data_norm: float
    width: int
    spectral_norms: tuple[float, ...]
    norm_ratios: tuple[float, ...]
    spectral_product: float
    spectral_complexity: float
    complexity: float
    confidence: float
    total: float
    sample_target: float
    sample_complexity: float


def spectral_bound(
    matrices: Sequence[torch.Tensor],
    *,
    n: int,
    margin: float,
    input_norm: float,
    data_norm: float | None = None,
    empirical_risk: float = 0.0,
    delta: float = 0.05,
    lipschitz: float = 1.0,
    references: Sequence[torch.Tensor] | None = None,
    sample_target: float = 0.1,
) -> SpectralBound:
    """Bartlett, Foster and Telgarsky (NeurIPS 2017), Lemma A.8 (Thm 1.1 with norms fixed).

    With probability ≥ 1 − δ,
    ``P(error) ≤ R̂_γ + 8/n + 72 ‖X‖_F ln(2W) ln(n) R_A / (γ n) + 3 √(ln(2/δ)/(2n))``,
    ``R_A = (Π_i ρ_i ‖A_i‖_2) (Σ_i (‖A_iᵀ − M_iᵀ‖_{2,1} / ‖A_i‖_2)^{2/3})^{3/2}``.
    Theorem 1.1's union bound over the norms (adding O(√(Σ ln ln)/n)-type terms) is dropped. With
    ‖X‖_F ≤ B√n the complexity term is Õ(B R_A / (γ √n)); for width-W layers
    (‖Aᵀ‖_{2,1}/‖A‖_2)² ≤ W · rank(A), so the sample complexity is Õ(W² L³) at full rank.

    Args:
        matrices, n, margin, input_norm, empirical_risk, delta, lipschitz: as in
            :func:`parameter_count_bound`.
        data_norm: ``‖X‖_F`` of the training inputs; defaults to ``input_norm · √n`` (its bound).
        references: reference matrices M_i of the same shapes (e.g. the initialisation), or None
            for zero.

    Returns:
        a :class:`SpectralBound`.
    """
    setting = _setting(n, margin, input_norm, empirical_risk, delta, lipschitz)
    layers = _layers(matrices)
    if references is None:
        refs = [torch.zeros_like(a) for a in layers]
    else:
        if isinstance(references, torch.Tensor) or len(references) != len(layers):
            raise ValueError(f"`references` must hold {len(layers)} matrices like `matrices`, got {type(references).__name__}")
        refs = []
        for index, (a, ref) in enumerate(zip(layers, references)):
            ref = _as_matrix(ref, f"references[{index}]").to(torch.float64)
            if ref.shape != a.shape:
                raise ValueError(f"`references[{index}]` must have shape {tuple(a.shape)}, got {tuple(ref.shape)}")
            refs.append(ref)
    if data_norm is None:
        data_norm = setting.input_norm * math.sqrt(setting.n)
    data_norm = check_real("data_norm", data_norm, low=0.0, low_open=True)
    spectral = [float(torch.linalg.matrix_norm(a, ord=2)) for a in layers]
    if min(spectral) == 0.0:
        raise ValueError("a layer matrix is zero: the spectral bound's norm ratios ‖A‖_{2,1}/‖A‖_2 are undefined")
    ratios = [float((a - ref).norm(dim=1).sum()) / s for a, ref, s in zip(layers, refs, spectral)]
    depth = len(layers)
    product = setting.lipschitz ** (depth - 1) * math.prod(spectral)
    r_a = product * sum(r ** (2.0 / 3.0) for r in ratios) ** 1.5
    width = max(max(a.shape) for a in layers)
    complexity = 72.0 * data_norm * math.log(2 * width) * math.log(setting.n) * r_a / (setting.margin * setting.n)
    small = 8.0 / setting.n
    confidence = _confidence(setting.n, setting.delta)
    target = _target(sample_target)
    rms = data_norm / math.sqrt(setting.n)
    per_sample = 72.0 * rms * math.log(2 * width) * r_a / setting.margin
    needed = _smallest_n(lambda m: per_sample * math.log(m) / math.sqrt(m), target)
    return SpectralBound(
        n=setting.n,
        margin=setting.margin,
        delta=setting.delta,
        lipschitz=setting.lipschitz,
        empirical_risk=setting.empirical_risk,
        small_term=small,
        data_norm=data_norm,
        width=width,
        spectral_norms=tuple(spectral),
        norm_ratios=tuple(ratios),
        spectral_product=product,
        spectral_complexity=r_a,
        complexity=complexity,
        confidence=confidence,
        total=setting.empirical_risk + small + complexity + confidence,
        sample_target=target,
        sample_complexity=needed,
    )


# --------------------------------------------------------------------------------------------
# Neyshabur, Bhojanapalli and Srebro (2018)


@dataclass(frozen=True)
class PacBayesBound:
    """PAC-Bayes spectral/Frobenius margin bound (Neyshabur et al. 2018), every term listed.

    ``total = empirical_risk + complexity``, ``complexity = 4 √((kl + log_term)/(n − 1))``.

    Attributes:
        n, margin, delta, input_norm, lipschitz: the setting.
        empirical_risk: R̂_γ.
        depth: d, the number of layer matrices.
        width: h, the largest layer dimension (inputs included).
        spectral_product: ``Π_i ρ_i ‖W_i‖_2`` (ρ for the d−1 hidden activations).
        stable_rank_sum: ``Σ_i ‖W_i‖_F² / ‖W_i‖_2²``.
        kl: ``(42² e² / 2) · d² B² h ln(4dh) · spectral_product² · stable_rank_sum / γ²``.
        log_term: ``ln(6 d n² / δ)`` (Lemma 1's ``ln(6n/δ)`` with δ split over ≤ d·n grid
            values of the layer-norm scale β̃).
        complexity: the PAC-Bayes term.
        total: the bound.
        sample_target, sample_complexity: the smallest n at which ``complexity`` would be
            ≤ ``sample_target`` (same norms, margin).
    """

    n: int
    margin: float
    delta: float
    input_norm: float
    lipschitz: float
    empirical_risk: float
    depth: int
    width: int
    spectral_product: float
    stable_rank_sum: float
    kl: float
    log_term: float
    complexity: float
    total: float
    sample_target: float
    sample_complexity: float


def pac_bayes_bound(
    matrices: Sequence[torch.Tensor],
    *,
    n: int,
    margin: float,
    input_norm: float,
    empirical_risk: float = 0.0,
    delta: float = 0.05,
    lipschitz: float = 1.0,
    sample_target: float = 0.1,
) -> PacBayesBound:
    """Neyshabur, Bhojanapalli and Srebro (ICLR 2018), Thm 1, with the constants of its proof.

    With probability ≥ 1 − δ,
    ``P(error) ≤ R̂_γ + 4 √((KL + ln(6 d n²/δ)) / (n − 1))``,
    ``KL = (42² e²/2) · d² B² h ln(4dh) Π_i ‖W_i‖_2² · Σ_i ‖W_i‖_F²/‖W_i‖_2² / γ²``:
    Lemma 1 (``L_0 ≤ L̂_γ + 4 √((KL(Q‖P) + ln(6n/δ))/(n−1))`` when the perturbed network moves by
    < γ/4) with Gaussian prior and posterior of variance
    ``σ = γ / (42 d B √(h ln(4dh)) β̃^{d−1})``, ``β̃^{d−1} ≥ β^{d−1}/e``, after rebalancing the
    layers so that all have spectral norm β = (Π ‖W_i‖_2)^{1/d} (exact for ReLU, ρ = 1; for
    other activations we multiply the product by ρ^{d−1}, an extension the paper does not
    state). Sample complexity Õ(d² h · stable_rank_sum) = Õ(W² L²) at full rank.

    Args:
        matrices, n, margin, input_norm, empirical_risk, delta, lipschitz: as in
            :func:`parameter_count_bound`.

    Returns:
        a :class:`PacBayesBound`.
    """
    setting = _setting(n, margin, input_norm, empirical_risk, delta, lipschitz)
    layers = _layers(matrices)
    spectral = [float(torch.linalg.matrix_norm(a, ord=2)) for a in layers]
    if min(spectral) == 0.0:
        raise ValueError("a layer matrix is zero: the stable rank ‖W‖_F²/‖W‖_2² is undefined")
    stable = sum(float(a.square().sum()) / s**2 for a, s in zip(layers, spectral))
    depth = len(layers)
    width = max(max(a.shape) for a in layers)
    product = setting.lipschitz ** (depth - 1) * math.prod(spectral)
    kl = (
        (42.0**2 * math.e**2 / 2.0) * depth**2 * setting.input_norm**2 * width
        * math.log(4 * depth * width) * product**2 * stable / setting.margin**2
    )
    log_term = math.log(6.0 * depth * setting.n**2 / setting.delta)
    complexity = 4.0 * math.sqrt((kl + log_term) / (setting.n - 1))
    target = _target(sample_target)
    needed = _smallest_n(
        lambda m: 4.0 * math.sqrt((kl + math.log(6.0 * depth * m**2 / setting.delta)) / (m - 1)), target
    )
    return PacBayesBound(
        n=setting.n,
        margin=setting.margin,
        delta=setting.delta,
        input_norm=setting.input_norm,
        lipschitz=setting.lipschitz,
        empirical_risk=setting.empirical_risk,
        depth=depth,
        width=width,
        spectral_product=product,
        stable_rank_sum=stable,
        kl=kl,
        log_term=log_term,
        complexity=complexity,
        total=setting.empirical_risk + complexity,
        sample_target=target,
        sample_complexity=needed,
    )
