"""Covering numbers of the images of a Schatten ball: parameter count, truncation, Maurey tail.

The per-layer log-covering numbers behind the rank-sparse bounds of Ledent, Alves and Lei
(NeurIPS 2025), derived in docs/bounds.md, Sec. 4."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict

import numpy as np

from .._validation import check_int, check_real
from ._bound_setting import _exponent

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


class _RoutesMemo:
    """The last results of :func:`_log_covering_routes`, by exact arguments, within a byte budget.

    The bound calculators of one network ask for the same layer classes at the same radii many
    times (``rank_sparse_bounds`` with each ``tail_covering`` and each ``allocation``: every route is
    computed on every call), and one call costs ~0.1 s at width 1,024. The key holds the radii's
    bytes, so a hit returns exactly what the computation would; the arrays are read-only, so no
    caller can change what a later one gets.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple, tuple[dict[str, _Route], int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: tuple) -> dict[str, _Route] | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return dict(entry[0])

    def put(self, key: tuple, routes: dict[str, _Route]) -> None:
        size = len(key[-1]) + sum(array.nbytes for route in routes.values() for array in route)
        if size > self.max_bytes:
            return
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = (routes, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


_ROUTES_MEMO = _RoutesMemo(max_bytes=64 * 2**20)


def _log_covering_routes(
    rows: int,
    cols: int,
    t: np.ndarray,
    p: float | None,
    m: float | None,
    factor_rank: int | None = None,
) -> dict[str, _Route]:
    """Vectorised :func:`schatten_ball_log_covering` over an array of relative radii t, per route.

    Remembered by exact arguments (:class:`_RoutesMemo`); the returned arrays are read-only.
    """
    t = np.ascontiguousarray(t, dtype=np.float64)
    key = (rows, cols, p, m, factor_rank, t.shape, t.tobytes())
    routes = _ROUTES_MEMO.get(key)
    if routes is None:
        routes = _compute_log_covering_routes(rows, cols, t, p, m, factor_rank)
        for route in routes.values():
            for array in route:
                array.setflags(write=False)
        _ROUTES_MEMO.put(key, routes)
        routes = dict(routes)
    return routes


def _compute_log_covering_routes(
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
    # log(c) − log(t), not log(c/t): c/t overflows for t below ~1e-308 (t = 1e-320 gave the
    # parameter count +inf, so a costlier head split was returned instead of 12·log(3√3/t))
    with np.errstate(divide="ignore"):  # t = 0 (an underflowed budget): log N = +inf, as it should
        log_radius = np.log(t)
    full = rows * cols * (math.log(3.0 * math.sqrt(k_max)) - log_radius)
    full_k = np.full(t.shape, k_max, dtype=np.int64)
    if factor_rank is not None:
        factored = (rows + cols) * factor_rank * (math.log(9.0 * math.sqrt(factor_rank)) - log_radius)
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
    if m is None:
        raise ValueError("a Schatten class needs its size `m` with `p`, got m=None")
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
        # over: a Maurey count ⌈m f²/(λt)²⌉ beyond float64 (t ≲ 1e-154) is +inf, a cover never chosen
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
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
        m: float | None = None
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
