"""The compiled certificate of :class:`~structnets.nn.CertifiedBatch` on the CPU (numba, optional).

The batched test of ``_verified_gram`` (Gram matrix, Lanczos guess, Cholesky test, a second guess,
rounding of τ or of the norm bound, the power-mode gradient's factors) is a few hundred dispatched
tensor operations per training step, each on a handful of numbers: at MLP sizes their dispatch,
not their arithmetic, is most of a certified step's extra time (issue 26:
``benchmarks/certified_batch_share.py``). Here the same computation runs as plain loops compiled by
numba, with the Gram product, the factorisation and the small eigenproblem handed to SciPy's
BLAS/LAPACK: one call of :func:`certify_flat` for every map of a dtype, whatever their shapes.

The certificate is the same theorem as the tensor path's (:func:`~._verified_gram.verified_ratio`,
Higham 2002, Thm 10.3): the Gram matrix Ĝ is formed in the test precision by one BLAS product (its
error bound γ_{2h} holds for every summation order), fl(μI − Ĝ) is formed in that precision (one
rounding: numba compiles without fast-math, so no reassociation or contraction is allowed) and
factored by LAPACK's xPOTRF, the routine ``torch.linalg.cholesky_ex`` calls; a factorisation that
runs to completion with a finite factor certifies Q = μ(1 + K) rounded up. Only the guesses
(Lanczos in float64) differ from the tensor path in their last bits, and a guess needs no proof.

Used where numba imports, the weights are float32 or float64 on the CPU; everywhere else the tensor
path runs. ``STRUCTNETS_FUSED=0`` switches it off (for comparisons).
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any

import numpy as np

from ._blas_threads import single_threaded_blas  # re-exported: the kernel's callers use it

try:  # an optional extra (``structnets[fast]``): without it the tensor path runs
    import numba
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None  # type: ignore[assignment]

#: Whether the fused path can run in this process.
AVAILABLE = numba is not None and os.environ.get("STRUCTNETS_FUSED", "1") != "0"


# no fastmath: the Cholesky test's error bound needs every operation rounded once, in order;
# error_model="numpy": x/0 is IEEE ±inf or NaN, as in torch, not a ZeroDivisionError
_OPTIONS: dict[str, Any] = {"fastmath": False, "nogil": True, "error_model": "numpy"}
#: The compiled functions: (module globals, name); the entry points last, as they call the others through
#: those globals. ``_fused_applied`` compiles its kernels here too, so that one cache fallback covers both.
_KERNELS: list[tuple[dict[str, Any], str]] = []
#: Whether the kernels were recompiled without numba's disk cache (after it could not be read).
_uncached = False


def _compiled(function: Any) -> Any:
    if numba is None:
        return function
    _KERNELS.append((function.__globals__, function.__name__))
    try:
        return numba.njit(cache=True, **_OPTIONS)(function)
    except RuntimeError:  # nowhere to write a cache (read-only install, no home): compile in each process
        return numba.njit(**_OPTIONS)(function)


def _recompile_without_cache() -> None:
    """Replace every kernel by one compiled without the disk cache (a corrupt or unreadable cache file)."""
    global _uncached
    for namespace, name in _KERNELS:
        namespace[name] = numba.njit(**_OPTIONS)(namespace[name].py_func)
    _uncached = True


@_compiled
def _lanczos_guess(gram: Any, start: Any, iterations: int, out_vector: Any) -> float:
    """Top Ritz value of ``iterations`` Lanczos steps on ``gram`` (float64) from ``start``; its Ritz vector in ``out_vector``.

    The same recurrence as :func:`~._verified_gram._lanczos`, in float64 with BLAS products: NaN
    where Ĝ or the recurrence is not finite (a failed test); a breakdown (β below 64·eps·tr Ĝ)
    leaves the next vectors ≈ 0.
    """
    n = gram.shape[0]
    k = iterations + 1
    basis = np.zeros((k, n))
    alphas = np.zeros(k)
    betas = np.zeros(k)
    floor = max(np.trace(gram) * (64.0 * 2.220446049250313e-16), 2.2250738585072014e-308)
    basis[0] = start / max(math.sqrt(np.dot(start, start)), 2.2250738585072014e-308)
    for step in range(k):
        q = basis[step]
        w = np.dot(gram, q)
        alpha = np.dot(w, q)
        alphas[step] = alpha
        if step == iterations:
            break
        w -= alpha * q
        if step > 0:
            w -= betas[step - 1] * basis[step - 1]
        beta = math.sqrt(np.dot(w, w))
        betas[step] = beta
        basis[step + 1] = w / max(beta, floor)
    tridiagonal = np.diag(alphas)
    for i in range(k - 1):
        tridiagonal[i + 1, i] = betas[i]
        tridiagonal[i, i + 1] = betas[i]
    if not np.all(np.abs(tridiagonal) < math.inf):
        out_vector[:] = start
        return math.nan
    values, vectors = np.linalg.eigh(tridiagonal)
    out_vector[:] = np.dot(vectors[:, k - 1], basis)
    return values[k - 1]


def _scipy_routine(module: str, name: str, arguments: int) -> Any:
    """SciPy's BLAS/LAPACK routine ``name`` (every argument by pointer, Fortran style) for compiled code.

    Declared by symbol name, not as a ctypes pointer, so that the functions calling it can be
    cached on disk (numba refuses to cache code holding a ctypes pointer); the symbol is bound to
    SciPy's routine at import, before any cached code is linked.
    """
    from llvmlite import binding
    from numba import types
    from numba.extending import get_cython_function_address

    symbol = f"structnets_{name}"
    binding.add_symbol(symbol, get_cython_function_address(f"scipy.linalg.{module}", name))
    return types.ExternalFunction(symbol, types.void(*[types.voidptr] * arguments))


# xPOTRF(uplo, n, a, lda, info); xSYRK(uplo, trans, n, k, alpha, a, lda, beta, c, ldc)
_SPOTRF = _scipy_routine("cython_lapack", "spotrf", 5) if numba is not None else None
_DPOTRF = _scipy_routine("cython_lapack", "dpotrf", 5) if numba is not None else None
_SSYRK = _scipy_routine("cython_blas", "ssyrk", 10) if numba is not None else None
_DSYRK = _scipy_routine("cython_blas", "dsyrk", 10) if numba is not None else None


@_compiled
def _gram(w: Any, single: bool) -> Any:
    """The smaller Gram matrix of the C-contiguous ``w`` in its dtype: WWᵀ (rows < cols) or WᵀW, symmetric.

    One xSYRK where W is at least twice as long as wide (half the products of a general product:
    47 against 55 µs for a 50 × 784 W, one thread), else one general product: each entry an inner product of
    length max(rows, cols) in the test precision, the error bound γ_{2h} of
    :func:`~._verified_gram.verified_ratio` for any summation order. The upper triangle is
    computed (a column-major lower one) and mirrored for the Lanczos products; the Cholesky test
    reads the upper one.
    """
    rows, cols = w.shape
    wide = rows < cols
    n = rows if wide else cols
    if not w.flags.c_contiguous or single != (w.itemsize == 4) or max(rows, cols) < 2 * n:
        # the general product: for a near-square W (faster than xSYRK at n ≤ 100, one thread:
        # 3.3 against 5.5 µs at 50 × 50), or where BLAS would read other numbers (a strided W,
        # float64 bytes as float32)
        gram = np.dot(w, w.T) if wide else np.dot(w.T, w)
    else:
        gram = np.zeros((n, n), dtype=w.dtype)
        # row-major W is column-major Wᵀ (cols × rows, lda = cols): WWᵀ = (Wᵀ)ᵀWᵀ is trans 'T', WᵀW is 'N'
        flags = np.array([76, 84 if wide else 78], dtype=np.uint8)  # uplo "L", trans "T" or "N"
        sizes = np.array([n, cols if wide else rows, cols, n], dtype=np.int32)  # n, k, lda, ldc
        scalars = np.array([1.0, 0.0], dtype=w.dtype)  # alpha, beta
        if single:
            _SSYRK(
                flags[0:].ctypes, flags[1:].ctypes, sizes[0:].ctypes, sizes[1:].ctypes, scalars[0:].ctypes,
                w.ctypes, sizes[2:].ctypes, scalars[1:].ctypes, gram.ctypes, sizes[3:].ctypes,
            )  # fmt: skip
        else:
            _DSYRK(
                flags[0:].ctypes, flags[1:].ctypes, sizes[0:].ctypes, sizes[1:].ctypes, scalars[0:].ctypes,
                w.ctypes, sizes[2:].ctypes, scalars[1:].ctypes, gram.ctypes, sizes[3:].ctypes,
            )  # fmt: skip
    # the upper triangle mirrored: exactly symmetric whichever product made it
    for i in range(n):
        for j in range(i):
            gram[i, j] = gram[j, i]
    return gram


@_compiled
def _cholesky_passes(gram: Any, guess: Any, work: Any, single: bool) -> bool:
    """Whether the Cholesky factorisation RᵀR of fl(μI − Ĝ) runs to completion with a finite factor.

    ``work`` (n × n scratch) receives fl(μI − Ĝ) from Ĝ's upper triangle (μ and Ĝ in the test
    precision: the shift is one rounding, the rest exact negations) and is factored in place by
    LAPACK's xPOTRF (``single``: spotrf, else dpotrf; a row-major upper triangle is a column-major
    lower one), the routine the tensor path's ``torch.linalg.cholesky_ex`` calls. Higham 2002,
    Thm 10.3 bounds its backward error for any blocking (:func:`~._verified_gram.verified_ratio`
    doubles the constant for that). Some xPOTF2 test a pivot with ``<= 0``, which NaN passes: the
    factor is read too, so a pivot that is not positive, NaN included, or an overflow fails the test.
    A call that breaks these assumptions (``work`` not C-contiguous, Ĝ or μ not numbers of
    ``work``'s dtype, ``single`` not that dtype) fails: it would factor a matrix other than fl(μI − Ĝ).
    """
    # xPOTRF reads `work` as a column-major n × n array of its own precision: a Fortran-ordered or
    # strided `work` puts the written triangle where LAPACK does not look, and float64 bytes read by
    # spotrf (or float32 by dpotrf) are other numbers; either can pass an indefinite μI − Ĝ
    if not work.flags.c_contiguous or gram.itemsize != work.itemsize or single != (work.itemsize == 4):
        return False
    shift = np.empty(1, dtype=work.dtype)
    shift[0] = guess
    mu = shift[0]
    # μ must be the number subtracted from: a guess rounded on the way in would be another μ
    if not (mu == guess and mu > 0 and mu < math.inf):
        return False
    n = gram.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            work[i, j] = -gram[i, j]
        work[i, i] = mu - gram[i, i]
    uplo = np.array([76], dtype=np.uint8)  # "L"
    sizes = np.array([n, n, 0], dtype=np.int32)  # n, lda, info
    if single:
        _SPOTRF(uplo.ctypes, sizes[0:].ctypes, work.ctypes, sizes[1:].ctypes, sizes[2:].ctypes)
    else:
        _DPOTRF(uplo.ctypes, sizes[0:].ctypes, work.ctypes, sizes[1:].ctypes, sizes[2:].ctypes)
    if sizes[2] != 0:
        return False
    for i in range(n):
        for j in range(i, n):
            if not abs(work[i, j]) < math.inf:
                return False
    return True


@_compiled
def _cast(cell: Any, value: float) -> Any:
    """``value`` rounded to nearest in ``cell``'s dtype (``cell``: a one-entry scratch array)."""
    cell[0] = value
    return cell[0]


@_compiled
def _round_tau(step: float, square: float, cell: Any, largest: float) -> Any:
    """τ = s/Q rounded down in float64, then down to ``cell``'s dtype (:func:`~._verified_gram._tau_values`)."""
    if square > 0:
        square = max(square, 2.0**-1020)
        quotient = min(np.nextafter(step / square, 0.0), largest)
    else:
        quotient = 0.0
    value = _cast(cell, quotient)
    if float(value) > quotient:
        value = np.nextafter(value, _cast(cell, 0.0))
    return value


@_compiled
def _round_norm(square: float, cell: Any) -> Any:
    """√Q rounded up in float64, then up to ``cell``'s dtype (:func:`~._verified_gram._norm_values`)."""
    root = math.sqrt(square)
    if square > 0:
        root = np.nextafter(root, math.inf)
    value = _cast(cell, root)
    if float(value) < root:
        value = np.nextafter(value, _cast(cell, math.inf))
    return value


@_compiled
def _certify_map(
    w: Any,
    wp: Any,
    v: Any,
    margin: float,
    step64: float,
    is_tau: bool,
    ratio: float,
    low: float,
    high: float,
    iterations: int,
    retry: float,
    following: Any,
    left: Any,
) -> tuple[Any, Any, Any, Any, bool, bool, bool]:
    """Certify one map: W (``w``, weight dtype; ``wp`` the same in the test precision), v, 1 + m, s (float64).

    Writes the next power vector to ``following`` and u = Wv/σ̂ to ``left``; returns (value, slope,
    inverse, factor, passed and usable, retried, usable) in the weight dtype (see :func:`certify_flat`).
    """
    rows, cols = w.shape
    n = min(rows, cols)
    single = wp.itemsize == 4
    cell = np.empty(1, dtype=w.dtype)  # rounds a float64 to the weight dtype
    one = _cast(cell, 1.0)
    zero = _cast(cell, 0.0)
    tiny = np.finfo(w.dtype).tiny
    largest = float(np.finfo(w.dtype).max)
    test_cell = np.empty(1, dtype=wp.dtype)
    # σ̂ = ‖Wv‖ and u = Wv/σ̂ in the weight dtype, as the tensor path (a bmm and a vector norm)
    image = np.dot(w, v)
    estimate = np.sqrt(np.dot(image, image))
    left[:] = image / max(estimate, tiny)
    # the smaller Gram matrix in the test precision, and the Lanczos start (v, or Wv for WWᵀ)
    gram = _gram(wp, single)
    start = image.astype(wp.dtype) if rows < cols else v.astype(wp.dtype)  # Wv: the guess's start only
    z = np.empty(n)
    ritz = _lanczos_guess(gram.astype(np.float64), start.astype(np.float64), iterations, z)
    guess = _cast(test_cell, ritz * margin)
    scratch = np.empty((n, n), dtype=gram.dtype)
    passed = low <= guess <= high and _cholesky_passes(gram, guess, scratch, single)
    retried = False
    if not passed and retry > 1.0:
        second = _cast(test_cell, float(guess) * retry)
        if low <= second <= high and _cholesky_passes(gram, second, scratch, single):
            guess, passed, retried = second, True, True
    square = np.nextafter(float(guess) * ratio, math.inf)
    # the next power vector: z (right vectors) or zW (left vectors), kept where not a unit vector
    nxt = np.dot(z.astype(wp.dtype), wp).astype(np.float64) if rows < cols else z
    length = math.sqrt(np.dot(nxt, nxt))
    if length > 0 and length < math.inf:
        following[:] = nxt / length
    else:
        following[:] = v
    # the value and the power-mode gradient's factors (the tensor path's formulas, same dtype)
    factor = _cast(cell, margin)
    if is_tau:
        value = _round_tau(step64, square, cell, largest)
        step = _cast(cell, step64)
        inverse = one / (estimate * estimate * factor)
        surrogate = step * inverse
        slope = _cast(cell, -2.0) * surrogate / estimate
    else:
        value = _round_norm(square, cell)
        root = np.sqrt(factor)
        surrogate = estimate * root
        inverse = zero
        slope = root
    usable = surrogate + (value - surrogate) == value and abs(slope) < math.inf and abs(inverse) < math.inf
    if not usable:
        slope, inverse = zero, zero
    return value, slope, inverse, factor, passed and usable, retried, usable


@_compiled
def _learnable_step(sigmoid: Any, cell: Any) -> tuple[Any, Any]:
    """s = 2·sigmoid(θ) and ds/dθ = s(1 − sigmoid(θ)) in the weight dtype (``cell``'s), as torch forms them."""
    step = _cast(cell, 2.0) * sigmoid
    return step, step * (_cast(cell, 1.0) - sigmoid)


@_compiled
def certify_flat(
    weights: Any,
    tested: Any,
    vectors: Any,
    rows: Any,
    cols: Any,
    active: Any,
    is_tau: Any,
    ratios: Any,
    lows: Any,
    highs: Any,
    margins: Any,
    steps: Any,
    learnable: Any,
    sigmoids: Any,
    iterations: int,
    retry: float,
    values: Any,
    slopes: Any,
    inverses: Any,
    factors: Any,
    flags: Any,
    following: Any,
    left: Any,
    step_slopes: Any,
) -> None:
    """Certify maps of any shapes in one call, each by :func:`_certify_map`: every array flat, map after map.

    Map b's W is the next rows[b]·cols[b] entries of ``weights`` (row-major, the weight dtype; ``tested``
    holds the same numbers in the test precision, the same array where that is the weights' dtype), its v
    the next cols[b] of ``vectors``, its next power vector and u = Wv/σ̂ the next cols[b] of ``following``
    and rows[b] of ``left``. Only the maps with ``active[b]`` are certified (and their outputs written): a
    float32 place whose larger maps are tested in float64 takes two calls, one per test precision, so that
    the float64-tested specialisation compiles only where a model needs it. Per map (B,): ``is_tau``;
    ``ratios``, ``lows``, ``highs`` (the test precision's ratio and range); ``margins`` float64 1 + m_b;
    ``steps`` float64 s_b (1 for norm maps; its cast to the weight dtype is the surrogate's s);
    ``learnable``: s = 2·sigmoid(θ), from ``sigmoids[b]`` (sigmoid(θ_b) in the weight dtype), formed here
    with ds/dθ as torch forms them, s_b written to ``steps`` and ds/dθ to ``step_slopes``. Outputs, written
    in place (weight dtype unless said): ``values`` τ_b or the norm bound; ``slopes`` d surrogate/dσ̂ and
    ``inverses`` d surrogate/ds (0 where the entry is not usable); ``factors`` 1 + m_b; ``flags`` (B, 3)
    bool (passed and usable, retried, usable).
    """
    cell = np.empty(1, dtype=weights.dtype)
    at_w = at_v = at_l = 0
    for b in range(rows.shape[0]):
        r, c = rows[b], cols[b]
        if not active[b]:
            at_w, at_v, at_l = at_w + r * c, at_v + c, at_l + r
            continue
        w = weights[at_w : at_w + r * c].reshape((r, c))
        wp = tested[at_w : at_w + r * c].reshape((r, c))
        v = vectors[at_v : at_v + c]
        if learnable[b]:
            step, step_slopes[b] = _learnable_step(sigmoids[b], cell)
            steps[b] = float(step)
        out = _certify_map(
            w, wp, v, margins[b], steps[b], is_tau[b], ratios[b], lows[b], highs[b], iterations, retry,
            following[at_v : at_v + c], left[at_l : at_l + r],
        )  # fmt: skip
        values[b], slopes[b], inverses[b], factors[b] = out[0], out[1], out[2], out[3]
        flags[b, 0], flags[b, 1], flags[b, 2] = out[4], out[5], out[6]
        at_w, at_v, at_l = at_w + r * c, at_v + c, at_l + r


def certify_arrays(
    weights: np.ndarray,
    vectors: np.ndarray,
    margins: np.ndarray,
    steps: np.ndarray,
    is_tau: bool,
    precision: np.dtype[Any],
    ratio: float,
    tested_range: tuple[float, float],
    iterations: int = 5,
    retry: float = 1.15,
    sigmoids: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """:func:`certify_flat` on one group of equal-shape maps (float32 or float64 weights, any layout), outputs by name.

    ``weights`` (B, rows, cols), ``vectors`` (B, cols); one ``precision``, ``ratio`` and range for all.
    ``sigmoids``: sigmoid(θ_b) of learnable steps s = 2·sigmoid(θ) (then ``steps`` is ignored); the
    outputs then include ``steps`` (s_b, float64) and ``step_slopes`` (ds/dθ, weight dtype).
    """
    # C-contiguous inputs of one dtype: one compiled specialisation, and no NumbaPerformanceWarning
    # (an error under pytest) from np.dot on a strided array
    weights = np.ascontiguousarray(weights)
    count, rows, cols = weights.shape
    dtype = weights.dtype
    learnable = sigmoids is not None
    if learnable:
        sigmoids = np.ascontiguousarray(sigmoids, dtype=dtype).reshape(-1)
        if sigmoids.shape[0] != count:
            raise ValueError(f"`sigmoids` must have one entry per map, got shape {sigmoids.shape}")
    out = {
        "values": np.empty(count, dtype=dtype),
        "slopes": np.empty(count, dtype=dtype),
        "inverses": np.empty(count, dtype=dtype),
        "factors": np.empty(count, dtype=dtype),
        "flags": np.empty((count, 3), dtype=np.bool_),
        "following": np.empty((count, cols), dtype=dtype),
        "left": np.empty((count, rows), dtype=dtype),
        "step_slopes": np.empty(count, dtype=dtype),
    }
    written = np.empty(count) if learnable else np.array(steps, dtype=np.float64).reshape(count)
    tested = weights if precision == dtype else np.ascontiguousarray(weights, dtype=precision)
    each = np.ones(count, dtype=np.bool_)
    low, high = tested_range
    call(
        "certify_flat", weights.reshape(-1), tested.reshape(-1), np.ascontiguousarray(vectors, dtype=dtype).reshape(-1),
        np.full(count, rows, dtype=np.int64), np.full(count, cols, dtype=np.int64), each, each & is_tau,
        np.full(count, ratio), np.full(count, low), np.full(count, high),
        np.array(margins, dtype=np.float64).reshape(count), written, each & learnable,
        sigmoids if learnable else np.empty(count, dtype=dtype), iterations, retry, out["values"], out["slopes"],
        out["inverses"], out["factors"], out["flags"], out["following"].reshape(-1), out["left"].reshape(-1),
        out["step_slopes"],
    )  # fmt: skip
    if learnable:
        out["steps"] = written
    else:
        out["step_slopes"] = out["step_slopes"][:0]
    return out


def run_flat(*arguments: Any) -> None:
    """:func:`certify_flat` (its arguments, C-contiguous arrays of the kinds it names), with numba's cache fallback."""
    call("certify_flat", *arguments)


def call(kernel: str, *arguments: Any) -> Any:
    """Run the compiled ``kernel`` (a name in this module); an unreadable disk cache recompiles once without it."""
    return call_in(globals(), kernel, *arguments)


def call_in(namespace: dict[str, Any], kernel: str, *arguments: Any) -> Any:
    """:func:`call` for a kernel compiled by :func:`_compiled` in another module (``namespace``: its globals)."""
    try:
        return namespace[kernel](*arguments)
    except Exception as error:
        # numba raises whatever its cache files give (a truncated index: UnpicklingError) before
        # running anything: compile once more without them; an error that persists is raised. A
        # compile error of numba's own is not the cache's: raised as it is
        from numba.core.errors import NumbaError

        if _uncached or isinstance(error, NumbaError):
            raise
        _recompile_without_cache()
        warnings.warn(
            f"structnets: numba's disk cache of the verified-batched kernel could not be read "
            f"({type(error).__name__}: {error}); compiled without it in this process",
            RuntimeWarning,
            stacklevel=3,
        )
        return namespace[kernel](*arguments)


__all__ = [
    "AVAILABLE",
    "call",
    "call_in",
    "certify_arrays",
    "certify_flat",
    "run_flat",
    "single_threaded_blas",
]
