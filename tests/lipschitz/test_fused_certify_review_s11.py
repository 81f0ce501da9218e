"""Review of the compiled certified kernel (:mod:`structnets.nn._fused_certify`): attempts to break it.

Wherever the kernel says passed, the handed-out value must be certified: a norm bound ≥ ‖W‖₂, a τ
with τ·‖W‖₂² ≤ s. Checked exactly (rational arithmetic) for small Gram matrices at guesses swept
across σ₁², against a float64 SVD (power-of-two rescaled, so exact scaling) on adversarial spectra
at the ends of the tested ranges, on non-finite and overflowing inputs, and through training at
high learning rates. The LAPACK call must factor the symmetric matrix built from the triangle
written and never read the rest of its scratch; a scratch array or flag LAPACK would misread fails
the test instead of certifying another matrix; inputs of any layout give the contiguous result.
"""

from __future__ import annotations

import functools
import math
import re
import warnings
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import numpy as np
import pytest
import torch

from structnets.nn import _fused_certify
from structnets.nn._verified_gram import _precision_for

from .test_fused_certify import _run as _run_group

pytestmark = pytest.mark.skipif(not _fused_certify.AVAILABLE, reason="numba (extra `fast`) is not installed")

F64 = torch.float64


# the exact tests: the guess is the start vector's Rayleigh quotient × margin, no retry
_run = functools.partial(_run_group, iterations=0, retry=1.0)


def _both_kinds(
    weight: np.ndarray, margins: np.ndarray, precision: type, rng: np.random.Generator
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray]:
    """``weight`` as a norm map and as a τ map (random s in the weight dtype), one entry per margin, from its top vector."""
    count, shape = len(margins), weight.shape
    weights = np.ascontiguousarray(np.broadcast_to(weight, (count, *shape)))
    vectors = np.ascontiguousarray(np.broadcast_to(_top_vector(weight).astype(weight.dtype), (count, shape[1])))
    steps = rng.uniform(0.0, 2.0, count).astype(weight.dtype).astype(np.float64)
    norm = _run(weights, vectors, margins, precision=np.dtype(precision))
    tau = _run(weights, vectors, margins, precision=np.dtype(precision), is_tau=True, steps=steps)
    return norm, tau, steps


def _exact_gram(weight: np.ndarray) -> list[list[Fraction]]:
    """The smaller Gram matrix of ``weight``, exactly."""
    w = [[Fraction(float(x)) for x in row] for row in weight]
    if len(w) < len(w[0]):
        w = [list(column) for column in zip(*w, strict=True)]  # WWᵀ = (Wᵀ)ᵀ(Wᵀ)
    n, h = len(w[0]), len(w)
    return [[sum((w[k][i] * w[k][j] for k in range(h)), Fraction(0)) for j in range(n)] for i in range(n)]


def _dominates(bound: Fraction, gram: list[list[Fraction]]) -> bool:
    """Exactly: bound·I − G is positive semi-definite, i.e. bound ≥ λ_max(G) (pivoted LDLᵀ, rational)."""
    n = len(gram)
    a = [[(bound if i == j else Fraction(0)) - gram[i][j] for j in range(n)] for i in range(n)]
    active = list(range(n))
    while active:
        k = max(active, key=lambda i: a[i][i])
        if a[k][k] < 0:
            return False
        if a[k][k] == 0:
            # a zero pivot of a semi-definite matrix has a zero row
            if any(a[k][j] != 0 for j in active):
                return False
            active.remove(k)
            continue
        active.remove(k)
        for i in active:
            factor = a[i][k] / a[k][k]
            for j in active:
                a[i][j] -= factor * a[k][j]
    return True


def _sigma_squared(weight: np.ndarray) -> float:
    """‖W‖₂² by a float64 SVD of W rescaled by a power of 2 (exact), so that no scale under- or overflows."""
    w = np.asarray(weight, dtype=np.float64)
    largest = float(np.abs(w).max())
    if largest == 0 or not math.isfinite(largest):
        return largest
    shift = math.frexp(largest)[1]
    scaled = np.ldexp(w, -shift)
    return math.ldexp(float(np.linalg.norm(scaled, 2)) ** 2, 2 * shift)


def _at_scale(weight: np.ndarray, exponent: int, dtype: type) -> np.ndarray:
    """``weight`` times a power of 2 (exact) so that ‖W‖₂ ∈ [2^(exponent − 1), 2^exponent), in ``dtype``; 0 stays 0."""
    norm = float(np.linalg.norm(weight, 2))
    shift = exponent - math.frexp(norm)[1] if norm > 0 else 0
    return np.ldexp(weight, shift).astype(dtype)


#: ‖W‖₂ exponents: ‖W‖₂² just inside both ends of the tested range ([2^±60] float32, [2^±600] float64)
_ENDS = {np.float32: (1, 29, -29), np.float64: (1, 299, -299)}


def _top_vector(weight: np.ndarray) -> np.ndarray:
    # the top eigenvector of the float64 Gram matrix WᵀW (W rescaled): cheaper than an SVD, as accurate here
    w = np.asarray(weight, dtype=np.float64) / np.abs(weight).max()
    return np.linalg.eigh(w.T @ w)[1][:, -1]


def _spectrum(rows: int, cols: int, kind: str, rng: np.random.Generator) -> np.ndarray:
    a = rng.standard_normal((rows, cols))
    if kind == "random":
        return a
    if kind == "sign":  # an exact Gram matrix: the test's rounding is the factorisation's alone
        return np.where(a >= 0, 1.0, -1.0)
    if kind == "const":  # every square and partial sum rounds, the same way: a biased Gram product
        return np.full((rows, cols), 1.0 + 2.0**-12 + 2.0**-13)
    if kind == "spike":  # one large entry over noise whose products underflow at the small scales
        out = a * 2.0**-40
        out[0, 0] = 1.0
        return out
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    k = min(rows, cols)
    s = {
        "rank1": np.eye(1, k)[0],
        "flat": np.ones(k),
        "cluster": 1.0 - np.arange(k) * 1e-9,
        "illcond": np.logspace(0, -14, k),
        "rankdef": np.where(np.arange(k) < k // 2 + 1, 1.0, 0.0),
    }[kind]
    return (u * s) @ vh


# margins 1 ± 10^-k: guesses swept through σ₁² (from the exact top vector, no Lanczos step)
_OFFSETS = np.concatenate([-np.logspace(-2, -17, 24), [0.0], np.logspace(-17, -2, 24)])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_small_maps_are_certified_exactly_at_guesses_swept_through_the_norm(dtype: type) -> None:
    """Rational truth: every passed norm bound b has b²I − WᵀW ⪰ 0, every passed τ has (s/τ)I − WᵀW ⪰ 0."""
    rng = np.random.default_rng(1101)
    margins = 1.0 + _OFFSETS
    checked = 0
    closest = math.inf
    for shape in ((1, 1), (1, 6), (6, 1), (2, 2), (3, 5), (4, 3)):
        for kind in ("random", "sign", "const", "flat", "rank1"):
            for exponent in _ENDS[dtype]:
                weight = _at_scale(_spectrum(*shape, kind, rng), exponent, dtype)
                gram = _exact_gram(weight)
                norm, tau, steps = _both_kinds(weight, margins, dtype, rng)
                assert norm["flags"][:, 0].any() and not norm["flags"][0, 0]  # 1 − 10⁻² is below the norm
                truth = _sigma_squared(weight)
                for b in np.flatnonzero(norm["flags"][:, 0]):
                    value = Fraction(float(norm["values"][b]))
                    assert _dominates(value * value, gram), (shape, kind, exponent, margins[b])
                    closest = min(closest, float(value) ** 2 / truth)
                    checked += 1
                for b in np.flatnonzero(tau["flags"][:, 0]):
                    value = Fraction(float(tau["values"][b]))
                    assert value > 0 and _dominates(Fraction(steps[b]) / value, gram), (shape, kind, margins[b])
                    checked += 1
    assert checked > 1000 and closest >= 1.0


@pytest.mark.parametrize(
    "dtype, precision", [(np.float64, np.float64), (np.float32, np.float32), (np.float32, np.float64)]
)
def test_adversarial_spectra_at_the_ends_of_the_tested_range_are_certified(dtype: type, precision: type) -> None:
    rng = np.random.default_rng(1102)
    margins = 1.0 + _OFFSETS
    worst_norm, worst_tau, passed = math.inf, 0.0, 0
    for shape in ((9, 1), (1, 9), (7, 7), (5, 12), (40, 30)):
        for kind in ("random", "rank1", "flat", "cluster", "illcond", "rankdef", "sign", "const", "spike"):
            # float32 weights tested in float64: float32's range is the narrower one
            for exponent in _ENDS[dtype]:
                weight = _at_scale(_spectrum(*shape, kind, rng), exponent, dtype)
                truth = _sigma_squared(weight)
                norm, tau, steps = _both_kinds(weight, margins, precision, rng)
                for b in np.flatnonzero(norm["flags"][:, 0]):
                    worst_norm = min(worst_norm, float(norm["values"][b]) ** 2 / truth)
                for b in np.flatnonzero(tau["flags"][:, 0]):
                    worst_tau = max(worst_tau, float(tau["values"][b]) * truth / steps[b])
                passed += int(norm["flags"][:, 0].sum() + tau["flags"][:, 0].sum())
    # the SVD errs by a few units of 2⁻⁵³: the test's rounding factor K ≥ 3·10⁻¹⁵ (float64) is far above
    assert passed > 1000
    assert worst_norm >= 1.0 and worst_tau <= 1.0, (worst_norm, worst_tau)


def test_the_factored_matrix_is_the_upper_triangle_and_the_rest_of_the_scratch_is_never_read() -> None:
    """An asymmetric Ĝ: its upper triangle alone decides; NaN, 0 or 10³⁰ in the lower scratch changes nothing."""
    rng = np.random.default_rng(1103)
    for dtype, single in ((np.float64, False), (np.float32, True)):
        for _ in range(40):
            n = int(rng.integers(2, 7))
            upper = rng.standard_normal((n, n)).astype(dtype)
            gram = np.triu(upper @ upper.T).astype(dtype) + np.tril(rng.standard_normal((n, n)), -1).astype(dtype)
            symmetric = np.triu(gram) + np.triu(gram, 1).T
            top = float(np.linalg.eigvalsh(symmetric.astype(np.float64))[-1])
            exact = [[Fraction(float(x)) for x in row] for row in symmetric]
            for ratio in (0.5, 0.9, 1.1, 2.0):
                guess = dtype(top * ratio)
                expected = _dominates(Fraction(float(guess)), exact)
                for fill in (math.nan, 0.0, 1e30):
                    work = np.full((n, n), fill, dtype=dtype)
                    assert _fused_certify._cholesky_passes(gram, guess, work, single) == expected, (n, ratio, fill)


def test_a_scratch_or_flag_lapack_would_misread_fails_the_test() -> None:
    """Before the fix each of these certified μ below λ_max(Ĝ): LAPACK factored some other matrix."""
    coupled = np.array([[1.0, 0.9], [0.9, 1.0]])  # λ_max = 1.9
    assert not _fused_certify._cholesky_passes(coupled, 1.5, np.zeros((2, 2)), False)
    # Fortran order: the written triangle is the one xPOTRF("L") does not read (it read zeros: passed)
    assert not _fused_certify._cholesky_passes(coupled, 1.5, np.zeros((2, 2), order="F"), False)
    assert not _fused_certify._cholesky_passes(coupled, 1.5, np.zeros((2, 4))[:, ::2], False)
    # float64 bytes factored by spotrf: 1 − (2 + 2⁻³⁰) < 0, yet its low word is a positive float32
    assert not _fused_certify._cholesky_passes(np.array([[2.0 + 2.0**-30]]), 1.0, np.empty((1, 1)), True)
    # float32 bytes factored by dpotrf
    single = np.array([[2.0]], dtype=np.float32)
    assert not _fused_certify._cholesky_passes(single, np.float32(1.0), np.empty((1, 1), np.float32), False)
    # Ĝ of another dtype than the factored one, and a μ the factored dtype cannot hold: not tested
    assert not _fused_certify._cholesky_passes(np.eye(2), 2.0, np.empty((2, 2), np.float32), True)
    assert not _fused_certify._cholesky_passes(
        np.eye(2, dtype=np.float32), 2.0 + 2.0**-40, np.empty((2, 2), np.float32), True
    )
    # the consistent calls still pass
    assert _fused_certify._cholesky_passes(coupled, 2.0, np.empty((2, 2)), False)
    assert _fused_certify._cholesky_passes(
        np.eye(2, dtype=np.float32), np.float32(1.5), np.empty((2, 2), np.float32), True
    )


def test_inputs_of_any_layout_give_the_contiguous_result_without_a_warning() -> None:
    rng = np.random.default_rng(1104)
    weights = rng.standard_normal((4, 6, 5))
    vectors = np.ascontiguousarray(np.linalg.svd(weights)[2][:, 0])
    margins = np.full(4, 1.0078125)  # a float32 number: the float32 copy below is the same margin
    expected = _run(weights, vectors, margins, precision=np.dtype(np.float64), iterations=5, retry=1.15)
    variants = [
        (np.asfortranarray(weights), vectors, margins),
        (np.repeat(weights, 2, axis=2)[:, :, ::2], np.repeat(vectors, 2, axis=1)[:, ::2], np.repeat(margins, 2)[::2]),
        (weights.transpose(0, 2, 1).copy().transpose(0, 2, 1), vectors, margins.astype(np.float32)),
    ]
    for w, v, m in variants:
        assert np.array_equal(w, weights)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numba's NumbaPerformanceWarning on non-contiguous np.dot
            out = _run(w, v, m, precision=np.dtype(np.float64), iterations=5, retry=1.15)
        for key, value in expected.items():
            assert np.array_equal(out[key], value), key


def test_non_finite_overflowing_and_degenerate_inputs_fail_or_stay_certified() -> None:
    rng = np.random.default_rng(1105)
    base = rng.standard_normal((10, 5, 8)).astype(np.float32)
    weights = base.copy()
    weights[1] *= np.float32(2.0**66)  # float32 Gram entries overflow (σ₁² ≈ 2^135)
    weights[2, 0, 0] = np.float32(2.0**65)  # one entry whose square overflows
    weights[3, 2, 3] = np.inf
    weights[4] = 0.0
    weights[5, :, 0] = 0.0  # a zero column: still certified where it passes
    weights[6] = weights[6] * np.float32(2.0**-31)  # σ₁² ≈ 2^-60·10: at the low end, in range
    weights[7] = weights[7] * np.float32(2.0**-40)  # σ₁² below 2^-60: out of range
    weights[8, 1, :4] = np.float32(7e-45)  # subnormal entries: their products underflow, harmlessly
    vectors = np.stack([_top_vector(w) if np.isfinite(w).all() and w.any() else np.ones(8) for w in weights])
    vectors = vectors.astype(np.float32)
    vectors[9] = np.nan  # a NaN power vector
    for is_tau in (False, True):
        out = _run(weights, vectors, np.full(10, 1.01), precision=np.dtype(np.float32), is_tau=is_tau, iterations=5)
        flags = out["flags"][:, 0]
        assert not flags[[1, 2, 3, 4, 7, 9]].any()
        assert flags[[0, 5, 6, 8]].all()
        for b in np.flatnonzero(flags):
            truth = _sigma_squared(weights[b])
            if is_tau:
                assert float(out["values"][b]) * truth <= 1.0
            else:
                assert float(out["values"][b]) ** 2 >= truth
        assert np.isfinite(out["slopes"]).all() and np.isfinite(out["inverses"]).all()


def test_bad_margins_and_steps_fail_rather_than_certify() -> None:
    rng = np.random.default_rng(1106)
    weights = rng.standard_normal((8, 6, 4))
    vectors = np.ascontiguousarray(np.linalg.svd(weights)[2][:, 0])
    margins = np.array([math.nan, -1.0, 0.0, math.inf, 1e300, 1.01, 1.01, 1.01])
    steps = np.array([1.0, 1.0, 1.0, 1.0, 1.0, math.nan, math.inf, 1.0])
    for dtype in (np.float64, np.float32):
        out = _run(
            weights.astype(dtype), vectors.astype(dtype), margins, precision=np.dtype(dtype), is_tau=True, steps=steps
        )
        assert out["flags"][:, 0].tolist() == [False] * 7 + [True]
        assert float(out["values"][7]) * _sigma_squared(weights[7].astype(dtype)) <= 1.0


def test_concurrent_calls_give_the_serial_results() -> None:
    """The kernel runs without the GIL: calls from several threads must not share scratch."""
    rng = np.random.default_rng(1107)
    jobs = []
    for index in range(6):
        weights = rng.standard_normal((8, 30, 20)) * (1 + index)
        vectors = np.linalg.svd(weights)[2][:, 0] + 0.01 * rng.standard_normal((8, 20))
        jobs.append((weights, np.ascontiguousarray(vectors)))

    def call(job: tuple[np.ndarray, np.ndarray]) -> dict[str, np.ndarray]:
        return _run(*job, np.full(8, 1.01), precision=np.dtype(np.float64), is_tau=True, iterations=5, retry=1.15)

    serial = [call(job) for job in jobs]
    with ThreadPoolExecutor(3) as pool:
        for _ in range(5):
            for one, other in zip(serial, pool.map(call, jobs), strict=True):
                for key in one:
                    assert np.array_equal(one[key], other[key]), key


def test_the_test_and_rounding_code_compiles_without_fast_math() -> None:
    """No fast, contract or reassoc flag (and no fused multiply-add) in the shift, the factor test and the rounding."""
    from numba import njit

    for dispatcher in (_fused_certify.certify_flat, _fused_certify._cholesky_passes, _fused_certify._round_tau):
        assert dispatcher.targetoptions.get("fastmath", False) is False
    options = {k: v for k, v in _fused_certify._cholesky_passes.targetoptions.items() if k not in ("cache", "nopython")}
    cell = np.empty(1, np.float32)
    fresh = {
        "cholesky": (
            njit(**options)(_fused_certify._cholesky_passes.py_func),
            (np.eye(2, dtype=np.float32), np.float32(2), np.empty((2, 2), np.float32), True),
        ),
        "tau": (njit(**options)(_fused_certify._round_tau.py_func), (1.0, 3.0, cell, np.float32(3e38))),
        "norm": (njit(**options)(_fused_certify._round_norm.py_func), (3.0, cell)),
    }
    for name, (function, arguments) in fresh.items():
        function(*arguments)
        for ir in function.inspect_llvm().values():
            flags = set(
                re.findall(r"\b(?:fadd|fsub|fmul|fdiv)\s+((?:fast|contract|reassoc|nnan|ninf|nsz|arcp|afn)\b)", ir)
            )
            assert not flags, (name, flags)
            assert "fmuladd" not in ir and "llvm.fma" not in ir, name
    assert _fused_certify._round_norm(3.0, cell) >= math.sqrt(3.0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_training_at_high_learning_rates_hands_out_certified_values(
    dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    from structnets.models import lipschitz_resnet
    from structnets.nn import CertifiedBatch

    from .test_certified_batch import _step_of

    records: list[tuple[str, torch.Tensor, float, float | None]] = []
    original = CertifiedBatch.take

    def take(batch, bound, weight, kind, matrix=False):  # type: ignore[no-untyped-def]
        result = original(batch, bound, weight, kind, matrix)
        if result is not None:
            layer = next(m for m in batch.members if m._bound is bound)
            used = (layer.weight if kind == "tau" else layer.raw_weight).detach().clone()
            step = 1.0
            if kind == "tau":
                step = float(layer.step_size().detach()) if layer.step_logit is not None else layer.step
            handed = result[0].detach()
            if result[2] and kind == "tau":  # the applied matrix −τ·W: its τ
                handed = _step_of(handed, used)
            elif result[2]:  # the applied matrix fl(V/s): checked as ‖A‖₂ ≤ 1
                used, handed = handed.clone(), None
            records.append((kind, used, step, None if handed is None else float(handed.to(F64))))
        return result

    monkeypatch.setattr(CertifiedBatch, "take", take)
    calls = [0]
    kernel = _fused_certify.run_flat

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return kernel(*args, **kwargs)

    monkeypatch.setattr(_fused_certify, "run_flat", counted)
    checked = 0
    for seed, (learning_rate, learnable, step) in enumerate(((0.3, False, 2.0), (1.0, True, 1.0))):
        torch.manual_seed(seed)
        model = lipschitz_resnet(
            12, 4, width=16, depth=2, step=step, learnable_step=learnable, bound="verified-batched", dtype=dtype
        )
        model.train()
        optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
        generator = torch.Generator().manual_seed(seed)
        x = torch.randn(64, 12, generator=generator, dtype=dtype) * 5.0
        y = torch.randint(4, (64,), generator=generator)
        for _ in range(12):
            optimizer.zero_grad()
            out = model(x)
            for kind, used, s, value in records:
                truth = _sigma_squared(used.numpy())
                if value is None:  # an applied matrix fl(V/s)
                    assert truth <= 1.0, (seed, truth)
                elif kind == "tau":
                    assert value * truth <= s, (seed, value * truth, s)
                else:
                    assert value * value >= truth, (seed, value, truth)
                checked += 1
            records.clear()
            torch.nn.functional.cross_entropy(out, y).backward()
            optimizer.step()
        assert model.certified_batch.batched_calls > 0
    assert checked >= 2 * 12 * 4 and calls[0] >= 2 * 12  # the compiled kernel computed them


def test_the_precision_chosen_for_float32_weights_is_float64_for_large_maps() -> None:
    """float32 weights whose float32 K is too large are tested in float64: the kernel takes that precision."""
    assert _precision_for(torch.float32, 100, 2000, True) == torch.float64
    rng = np.random.default_rng(1108)
    weight = rng.standard_normal((1, 2000, 100)).astype(np.float32)
    vector = _top_vector(weight[0]).astype(np.float32)[None]
    out = _run(weight, vector, np.array([1.0 + 1e-6]), precision=np.dtype(np.float64), iterations=2)
    assert out["flags"][0, 0]
    assert float(out["values"][0]) ** 2 >= _sigma_squared(weight[0])
