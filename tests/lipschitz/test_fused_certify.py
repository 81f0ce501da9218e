"""The compiled kernel behind ``bound="verified-batched"`` on the CPU (:mod:`structnets.nn._fused_certify`).

It must certify exactly as the tensor path does: Q ≥ ‖W‖₂² against a float64 SVD wherever it says
passed, on random and adversarial matrices (rank one, a flat top of the spectrum, ill-conditioned),
in float32 and float64 tests; fail below the norm, on non-finite weights and out of the tested
range; round τ and the norm bound bit for bit as the tensor path; and agree with the tensor path's
verdicts and values where both run in float64.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
import torch

from structnets.nn import _fused_certify
from structnets.nn._certified_batch_fused import fused_place as _fused_place
from structnets.nn._verified_gram import _PRECISION, _norm_values, _tau_values, batched_verified_square, verified_ratio

from .test_certified_batch import _adversarial, _sigma_squared

pytestmark = pytest.mark.skipif(not _fused_certify.AVAILABLE, reason="numba (extra `fast`) is not installed")

F64 = torch.float64
_TORCH = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64}


def _run(
    weights: torch.Tensor | np.ndarray,
    vectors: torch.Tensor | np.ndarray,
    margin: float | torch.Tensor | np.ndarray,
    *,
    precision: torch.dtype | np.dtype,
    is_tau: bool = False,
    steps: torch.Tensor | np.ndarray | None = None,
    iterations: int = 5,
    retry: float = 1.15,
) -> dict[str, np.ndarray]:
    """``certify_arrays`` on one group (tensors or arrays), with its ratio and range for ``precision``."""
    weights, vectors = np.asarray(weights), np.asarray(vectors)
    count, rows, cols = weights.shape
    tested = precision if isinstance(precision, torch.dtype) else _TORCH[np.dtype(precision)]
    margins = np.full(count, margin) if isinstance(margin, float) else np.asarray(margin)
    return _fused_certify.certify_arrays(
        weights,
        vectors,
        margins,
        np.ones(count) if steps is None else np.asarray(steps),
        is_tau,
        np.dtype(np.float32 if tested == torch.float32 else np.float64),
        verified_ratio(min(rows, cols), max(rows, cols), tested),
        _PRECISION[tested][1],
        iterations,
        retry,
    )


@pytest.mark.parametrize("shape", [(7, 7), (5, 12), (12, 5), (1, 9), (30, 40), (1, 1)])
@pytest.mark.parametrize(
    "dtype, precision",
    [(torch.float64, torch.float64), (torch.float32, torch.float32), (torch.float32, torch.float64)],
)
def test_the_kernel_certifies_above_and_fails_below_the_norm(
    shape: tuple[int, int], dtype: torch.dtype, precision: torch.dtype
) -> None:
    weights = _adversarial(*shape, count=8, seed=sum(shape)).to(dtype)
    sigma2 = torch.tensor([_sigma_squared(w) for w in weights], dtype=F64)
    vectors = torch.linalg.svd(weights.to(F64))[2][:, 0].to(dtype)
    gap = 1e-8 if precision == torch.float64 else 1e-4  # float32 Gram products err by ~n·2⁻²⁴
    if dtype == torch.float32:
        gap = max(gap, 1e-5)  # a float32 top vector's Rayleigh quotient is σ₁² to ~1e-7 only
    factor = verified_ratio(min(shape), max(shape), precision)
    for ratio, expect in ((1 + 10 * gap, True), (1 - 10 * gap, False)):
        # from the top vector with no Lanczos step the guess is σ₁²·ratio
        out = _run(weights, vectors, ratio, precision=precision, iterations=0, retry=1.0)
        assert not out["flags"][:, 1].any()  # no retry asked for
        values = torch.from_numpy(out["values"]).to(F64)
        for b in range(8):
            if sigma2[b] == 0:
                continue
            if expect:
                assert out["flags"][b, 0], f"matrix {b}: μ = σ₁²(1 + {10 * gap}) failed"
                # the norm bound √Q rounded up: ≥ σ₁, within the margin and K of it
                assert sigma2[b] <= values[b] ** 2 <= sigma2[b] * ratio * factor * (1 + 1e-5)
            else:
                assert not out["flags"][b, 0], f"matrix {b}: μ = σ₁²(1 − {10 * gap}) passed"


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_tau_times_the_squared_norm_never_exceeds_the_step(dtype: torch.dtype) -> None:
    generator = torch.Generator().manual_seed(8)
    for shape in ((20, 20), (8, 30), (30, 8)):
        weights = _adversarial(*shape, count=12, seed=shape[0] * 7 + shape[1]).to(dtype)
        # warm vectors, as in training (σ̂ far below σ₁ leaves the straight-through value unusable)
        tops = torch.linalg.svd(weights.to(F64))[2][:, 0]
        noise = torch.randn(tops.shape, generator=generator, dtype=F64)
        vectors = torch.nn.functional.normalize(tops + 0.1 * noise, dim=1)
        steps = torch.rand(12, generator=generator, dtype=F64) * 2.0
        if dtype == torch.float32:
            steps = steps.float().double()  # s is the weight dtype's number in the surrogate
        precision = torch.float32 if dtype == torch.float32 else torch.float64
        out = _run(weights, vectors.to(dtype), 1.01, precision=precision, is_tau=True, steps=steps)
        for b in range(12):
            if out["flags"][b, 0]:
                tau = float(out["values"][b])
                assert tau * _sigma_squared(weights[b]) <= float(steps[b]), (shape, b)
        assert out["flags"][:, 0].sum() >= 9  # most pass: Lanczos from a warm vector, and a retry


def test_the_kernel_agrees_with_the_tensor_path_in_float64() -> None:
    """Same verdicts; the same Q to rounding of the Ritz value (both run Lanczos in float64)."""
    generator = torch.Generator().manual_seed(21)
    for shape in ((16, 16), (10, 40), (40, 10)):
        weights = _adversarial(*shape, count=16, seed=shape[0] + 3 * shape[1])
        tops = torch.linalg.svd(weights)[2][:, 0]
        vectors = torch.nn.functional.normalize(tops + 0.05 * torch.randn(tops.shape, generator=generator, dtype=F64))
        margins = 1.0 + torch.rand(16, generator=generator, dtype=F64) * 0.05
        square, passed, following, retried = batched_verified_square(weights, vectors, margins, precision=torch.float64)
        out = _run(weights, vectors, margins, precision=torch.float64)
        assert out["flags"][:, 0].tolist() == passed.tolist()
        assert out["flags"][:, 1].tolist() == retried.tolist()
        expected = _norm_values(square, F64)
        values = torch.from_numpy(out["values"])
        # random matrices (every 4th): the same Ritz value to rounding. Rank one, a flat top and an
        # ill-conditioned spectrum break the recurrence down (no reorthogonalisation), where
        # rounding noise moves the guess, by 1 % here: both values stay certified
        generic = torch.arange(16) % 4 == 0
        assert torch.allclose(values[passed & generic], expected[passed & generic], rtol=1e-12, atol=0)
        sigma2 = torch.tensor([_sigma_squared(w) for w in weights], dtype=F64)
        assert bool((values[passed] ** 2 >= sigma2[passed]).all())
        # the next power vectors: the same top Ritz vector, up to the sign eigh picks
        overlap = (torch.from_numpy(out["following"]) * following).sum(dim=1).abs()
        assert torch.allclose(overlap[generic], torch.ones(4, dtype=F64), atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_kernels_rounding_is_certified_and_the_tensor_paths(dtype: type) -> None:
    generator = torch.Generator().manual_seed(5)
    exponents = torch.randint(-1074, 1024, (300,), generator=generator).to(F64)
    random = torch.rand(300, generator=generator, dtype=F64) * 2.0 ** exponents.clamp(max=1023)
    special = torch.tensor(
        [0.0, 5e-324, 2.0**-1022, 2.0**-1020, 1e-300, 1.0, 2.0, 1e300, torch.finfo(F64).max, math.inf, math.nan],
        dtype=F64,
    )
    squares = torch.cat([random, special])
    steps = torch.rand(len(squares), generator=generator, dtype=F64) * 2.0
    steps[:3] = torch.tensor([0.0, 2.0, 1.0])
    torch_dtype = torch.float32 if dtype == np.float32 else F64
    tau = _tau_values(steps, squares, torch_dtype)
    norm = _norm_values(squares, torch_dtype)
    cell = np.empty(1, dtype=dtype)
    largest = float(np.finfo(dtype).max)
    same_norm = checked = 0
    for index in range(len(squares)):
        square, step = float(squares[index]), float(steps[index])
        got_tau = float(_fused_certify._round_tau(step, square, cell, largest))
        got_norm = float(_fused_certify._round_norm(square, cell))
        want_tau, want_norm = float(tau[index]), float(norm[index])
        assert got_tau == want_tau or (math.isnan(want_tau) and math.isnan(got_tau)), (index, square, step)
        assert float(dtype(got_tau)) == got_tau or math.isnan(got_tau)  # a number of the weight dtype
        if not math.isfinite(square) or not math.isfinite(got_norm):
            assert got_norm == want_norm or (math.isnan(want_norm) and math.isnan(got_norm)), (index, square)
            continue
        # √Q rounded up, checked exactly. torch's CPU float64 sqrt is not always correctly rounded
        # (AVX512 build: 1 ulp high at Q = 8.93e129, 1 ulp low at 5.61e281), the kernel's is: the two
        # may differ by one ulp, each above √Q
        assert Fraction(got_norm) ** 2 >= Fraction(square), (index, square)
        assert float(dtype(got_norm)) == got_norm, (index, square)
        assert np.nextafter(dtype(want_norm), -np.inf) <= got_norm <= np.nextafter(dtype(want_norm), np.inf)
        same_norm += got_norm == want_norm
        checked += 1
    assert checked >= 100 and same_norm >= 0.95 * checked


def test_non_finite_zero_and_out_of_range_weights_fail_and_keep_the_old_vector() -> None:
    generator = torch.Generator().manual_seed(11)
    weights = torch.randn(5, 4, 6, dtype=F64, generator=generator)
    vectors = torch.linalg.svd(weights)[2][:, 0].contiguous()
    weights[1, 0, 0] = math.nan
    weights[2, 1, 2] = math.inf
    weights[3] = 0.0
    weights[4] *= 1e-200  # ‖W‖² ≈ 1e-400: outside the tested range
    for is_tau in (False, True):
        out = _run(weights, vectors, 1.01, precision=torch.float64, is_tau=is_tau)
        assert out["flags"][:, 0].tolist() == [True, False, False, False, False]
        assert np.isfinite(out["following"]).all()
        for b in (1, 2, 3):
            assert np.array_equal(out["following"][b], vectors[b].numpy())
        # an entry whose gradient is undefined gets 0, never NaN (0·∞ in the backward pass)
        assert np.isfinite(out["slopes"]).all() and np.isfinite(out["inverses"]).all()


def test_a_nan_pivot_fails_the_factorisation_test() -> None:
    """Some LAPACK builds pass a NaN pivot (``<= 0`` is False for NaN): the factor is read too."""
    gram = np.eye(3)
    gram[1, 1] = math.nan
    assert not _fused_certify._cholesky_passes(gram, 2.0, np.empty((3, 3)), False)
    assert _fused_certify._cholesky_passes(np.eye(3), 2.0, np.empty((3, 3)), False)
    assert not _fused_certify._cholesky_passes(np.eye(3), 1.0, np.empty((3, 3)), False)  # μI − I is singular
    single = np.eye(3, dtype=np.float32)
    assert _fused_certify._cholesky_passes(single, np.float32(1.5), np.empty((3, 3), np.float32), True)
    assert not _fused_certify._cholesky_passes(single, np.float32(0.999), np.empty((3, 3), np.float32), True)


def test_the_kernel_runs_only_where_it_applies() -> None:
    cpu = torch.device("cpu")
    assert _fused_place(torch.float32, cpu) and _fused_place(torch.float64, cpu)
    assert not _fused_place(torch.bfloat16, cpu) and not _fused_place(torch.float16, cpu)
    assert not _fused_place(torch.float32, torch.device("cuda"))
    code = "from structnets.nn import _fused_certify; print(_fused_certify.AVAILABLE)"
    env = {**os.environ, "STRUCTNETS_FUSED": "0"}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_training_follows_the_same_path_with_either_computation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fused kernel and tensor operations give the same τ's and norm bounds to the Ritz value's rounding."""
    from structnets.analysis import lipschitz_upper_bound
    from structnets.models import lipschitz_resnet

    losses = {}
    for fused in (True, False):
        monkeypatch.setattr(_fused_certify, "AVAILABLE", fused)
        torch.manual_seed(3)
        model = lipschitz_resnet(20, 4, width=16, depth=3, bound="verified-batched", dtype=F64).train()
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        generator = torch.Generator().manual_seed(4)
        x = torch.randn(64, 20, generator=generator, dtype=F64)
        y = torch.randint(4, (64,), generator=generator)
        trace = []
        for _ in range(15):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            trace.append(float(loss.detach()))
        assert lipschitz_upper_bound(model.eval()) <= 1.0
        losses[fused] = trace
    assert np.allclose(losses[True], losses[False], rtol=1e-9, atol=0)


def test_the_kernels_blas_runs_on_one_thread_and_the_count_is_restored() -> None:
    """OpenBLAS's busy-waiting threads beside a loaded core cost 50× (15.7 ms for 0.29 ms): one thread inside."""
    from threadpoolctl import ThreadpoolController

    def openblas_counts() -> list[int]:
        controllers = ThreadpoolController().select(user_api="blas").lib_controllers
        return [c.num_threads for c in controllers if c.internal_api == "openblas"]

    before = openblas_counts()
    if not before:
        pytest.skip("no OpenBLAS loaded: the kernel's BLAS threads are left as they are")
    with _fused_certify.single_threaded_blas():
        assert openblas_counts() == [1] * len(before)
    assert openblas_counts() == before
    with pytest.raises(RuntimeError, match="inside"), _fused_certify.single_threaded_blas():
        raise RuntimeError("inside")
    assert openblas_counts() == before


def test_overlapping_batches_in_two_threads_restore_the_count() -> None:
    """Thread A in, thread B in, A out, B out: OpenBLAS's (global) count is the one before, not B's saved 1."""
    import threading

    from threadpoolctl import ThreadpoolController

    def openblas_counts() -> list[int]:
        controllers = ThreadpoolController().select(user_api="blas").lib_controllers
        return [c.num_threads for c in controllers if c.internal_api == "openblas"]

    before = openblas_counts()
    if not before or max(before) < 2:
        pytest.skip("needs an OpenBLAS with more than one thread")
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen: list[list[int]] = []

    def first() -> None:
        with _fused_certify.single_threaded_blas():
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def second() -> None:
        a_in.wait(10)
        with _fused_certify.single_threaded_blas():
            b_in.set()
            a_out.wait(10)
            seen.append(openblas_counts())  # A has left, B is inside: still one thread

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert seen == [[1] * len(before)]
    assert openblas_counts() == before


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (7, 1), (5, 12), (12, 5), (50, 784), (64, 64)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_gram_product_is_the_smaller_one_symmetric_and_within_its_error_bound(
    shape: tuple[int, int], dtype: type
) -> None:
    """``_gram`` (one xSYRK, mirrored): WWᵀ for wide W, else WᵀW; each entry within γ_h·(|W||W|ᵀ)_ij of the truth."""
    rng = np.random.default_rng(sum(shape))
    w = rng.standard_normal(shape).astype(dtype)
    gram = _fused_certify._gram(w, dtype == np.float32)
    wide = shape[0] < shape[1]
    w64 = w.astype(np.float64)
    truth = w64 @ w64.T if wide else w64.T @ w64
    absolute = np.abs(w64) @ np.abs(w64).T if wide else np.abs(w64).T @ np.abs(w64)
    h = max(shape)
    unit = np.finfo(dtype).eps / 2
    assert gram.shape == (min(shape),) * 2 and gram.dtype == dtype
    assert np.array_equal(gram, gram.T)
    assert np.all(np.abs(gram - truth) <= h * unit / (1 - h * unit) * absolute + 1e-300)
    # ±1 entries: every product and partial sum is an exact small integer
    signs = np.sign(w)
    assert np.array_equal(
        _fused_certify._gram(signs, dtype == np.float32), (signs.T @ signs) if not wide else signs @ signs.T
    )


def test_an_unreadable_disk_cache_is_recompiled_with_a_warning(tmp_path) -> None:
    """A corrupt numba cache file (a truncated index) must not break training: recompile without it, warn once."""
    code = (
        "import warnings, torch\n"
        "from structnets.models import lipschitz_resnet\n"
        "torch.manual_seed(0)\n"
        "m = lipschitz_resnet(6, 2, 5, 1, bound='verified-batched', dtype=torch.float64).train()\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        "    m(torch.randn(4, 6, dtype=torch.float64)).sum().backward()\n"
        "print(m.certified_batch.batched_calls, sum('disk cache' in str(w.message) for w in seen))\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert first.stdout.split() == ["3", "0"]  # lift, block, head; the cache written
    indexes = list(tmp_path.rglob("*.nbi"))
    assert indexes
    for index in indexes:
        index.write_bytes(b"corrupt")
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr[-2000:]
    assert second.stdout.split() == ["3", "1"]


def test_a_compile_error_is_raised_as_it_is_not_taken_for_a_bad_cache() -> None:
    """Integer weights cannot be typed: numba's own error comes out, with no recompilation and no cache warning."""
    from numba.core.errors import NumbaError

    weights = np.ones((1, 2, 2), dtype=np.int64)
    with pytest.raises(NumbaError):
        _run(weights, np.ones((1, 2)), 1.01, precision=torch.float64)
    assert not _fused_certify._uncached


def _flat_inputs(groups: list[tuple[np.ndarray, np.ndarray, bool, bool]], dtype: np.dtype) -> dict[str, object]:
    """certify_flat's arguments for maps given as (W, v, is_tau, learnable), one per map, any shapes."""
    tested = [
        _fused_certify_precision(w.shape, dtype) != np.dtype(dtype) for w, _, _, _ in groups
    ]  # a float32 W tested in float64 where its ratio needs it
    precisions = [torch.float64 if t or dtype == np.float64 else torch.float32 for t in tested]
    count = len(groups)
    return {
        "weights": np.concatenate([w.ravel() for w, _, _, _ in groups]).astype(dtype),
        "vectors": np.concatenate([v for _, v, _, _ in groups]).astype(dtype),
        "rows": np.array([w.shape[0] for w, _, _, _ in groups], dtype=np.int64),
        "cols": np.array([w.shape[1] for w, _, _, _ in groups], dtype=np.int64),
        "is_tau": np.array([t for _, _, t, _ in groups], dtype=np.bool_),
        "tested64": np.array(tested, dtype=np.bool_),
        "ratios": np.array(
            [verified_ratio(min(w.shape), max(w.shape), p) for (w, _, _, _), p in zip(groups, precisions, strict=True)]
        ),
        "lows": np.array([_PRECISION[p][1][0] for p in precisions]),
        "highs": np.array([_PRECISION[p][1][1] for p in precisions]),
        "margins": np.linspace(1.01, 1.05, count),
        "steps": np.array([1.5 if t else 1.0 for _, _, t, _ in groups]),
        "learnable": np.array([s for _, _, _, s in groups], dtype=np.bool_),
        "sigmoids": np.linspace(0.2, 0.9, count).astype(dtype),
    }


def _run_flat(args: dict[str, object], dtype: np.dtype) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """certify_flat on ``_flat_inputs``' arguments, one call per test precision as compute_flat makes them:
    its outputs by name and the steps it wrote."""
    count = len(np.asarray(args["rows"]))
    out = {
        "values": np.empty(count, dtype), "slopes": np.empty(count, dtype), "inverses": np.empty(count, dtype),
        "factors": np.empty(count, dtype), "flags": np.empty((count, 3), np.bool_),
        "following": np.empty(np.asarray(args["vectors"]).shape[0], dtype),
        "left": np.empty(int(np.asarray(args["rows"]).sum()), dtype), "step_slopes": np.empty(count, dtype),
    }  # fmt: skip
    steps = np.asarray(args["steps"]).copy()
    weights, wide = np.asarray(args["weights"]), np.asarray(args["tested64"])
    with _fused_certify.single_threaded_blas():
        for tested, active in ((weights, ~wide), (weights.astype(np.float64), wide)):
            _fused_certify.run_flat(
                weights, tested, args["vectors"], args["rows"], args["cols"], active, args["is_tau"],
                args["ratios"], args["lows"], args["highs"], args["margins"], steps, args["learnable"],
                args["sigmoids"], 5, 1.15, *out.values(),
            )  # fmt: skip
    return out, steps


def _fused_certify_precision(shape: tuple[int, ...], dtype: np.dtype) -> np.dtype:
    from structnets.nn._verified_gram import _precision_for

    torch_dtype = torch.float32 if dtype == np.float32 else torch.float64
    chosen = _precision_for(torch_dtype, min(shape), max(shape), True)
    return np.dtype(np.float32 if chosen == torch.float32 else np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_flat_call_is_the_per_shape_calls_bit_for_bit(dtype: type) -> None:
    """certify_flat on maps of mixed shapes, kinds and steps = each map certified alone, every output (the offsets)."""
    rng = np.random.default_rng(11)
    shapes = [(50, 784), (7, 7), (12, 5), (200, 784), (5, 12), (1, 9), (30, 30), (10, 50)]
    groups = []
    for i, (r, c) in enumerate(shapes):
        w = rng.standard_normal((r, c)) / math.sqrt(c)
        v = np.linalg.svd(w)[2][0] + 0.01 * rng.standard_normal(c)  # a warm power vector, as in training
        groups.append((w, v / np.linalg.norm(v), i % 2 == 1, i % 4 == 1))
    args = _flat_inputs(groups, np.dtype(dtype))
    assert dtype == np.float64 or args["tested64"].any()  # type: ignore[union-attr]  # a float32 W tested in float64
    out, steps = _run_flat(args, np.dtype(dtype))
    at_v = at_l = 0
    for b, ((w, v, is_tau, learnable), (r, c)) in enumerate(zip(groups, shapes, strict=True)):
        precision = torch.float64 if args["tested64"][b] or dtype == np.float64 else torch.float32  # type: ignore[index]
        one = _run(
            w[None].astype(dtype), v[None].astype(dtype), float(args["margins"][b]),  # type: ignore[index]
            precision=precision, is_tau=is_tau,
            steps=np.array([args["steps"][b]]),  # type: ignore[index]
        ) if not learnable else _fused_certify.certify_arrays(
            w[None].astype(dtype), v[None].astype(dtype), np.array([args["margins"][b]]), np.ones(1), is_tau,  # type: ignore[index]
            np.dtype(np.float32 if precision == torch.float32 else np.float64),
            float(args["ratios"][b]), (float(args["lows"][b]), float(args["highs"][b])), 5, 1.15,  # type: ignore[index]
            np.array([args["sigmoids"][b]]),  # type: ignore[index]
        )  # fmt: skip
        for key in ("values", "slopes", "inverses", "factors"):
            assert np.array_equal(out[key][b : b + 1], one[key], equal_nan=True), (b, key)
        assert np.array_equal(out["flags"][b], one["flags"][0]), b
        assert np.array_equal(out["following"][at_v : at_v + c], one["following"][0]), b
        assert np.array_equal(out["left"][at_l : at_l + r], one["left"][0]), b
        if learnable:
            assert steps[b] == one["steps"][0] and out["step_slopes"][b] == one["step_slopes"][0]
            sigmoid = torch.tensor(args["sigmoids"][b])  # type: ignore[index]
            assert steps[b] == float(2.0 * sigmoid) and out["step_slopes"][b] == float(
                (2.0 * sigmoid) * (1.0 - sigmoid)
            )
        at_v, at_l = at_v + c, at_l + r
    assert out["flags"][:, 0].all()  # every map certified: the comparison is of real values


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_compiled_power_mode_gradient_is_the_tensor_formula_bit_for_bit(dtype: torch.dtype) -> None:
    """Without a matrix gradient, ``applied_gradients`` writes (g·slope)·u vᵀ for W and (g·inverse)·ds/dθ for θ,
    rounded as torch rounds them (``_PowerModeGradient``'s products, the tensor path's)."""
    from structnets.nn import _fused_applied

    generator = torch.Generator().manual_seed(4)
    shapes = [(50, 78), (7, 7), (3, 11)]
    count = len(shapes)
    left = [torch.randn(r, generator=generator, dtype=dtype) for r, _ in shapes]
    vectors = [torch.randn(c, generator=generator, dtype=dtype) for _, c in shapes]
    grad, slopes, inverses, step_slopes = (torch.randn(count, generator=generator, dtype=dtype) for _ in range(4))
    learnable = np.array([False, True, True])
    numpy_dtype = grad.numpy().dtype
    total = sum(r * c for r, c in shapes)
    weights = torch.randn(total, generator=generator, dtype=dtype).numpy()
    weight_grads = np.empty(total, dtype=numpy_dtype)
    step_grads = np.zeros(count, dtype=numpy_dtype)
    _fused_applied.call(
        "applied_gradients", grad.numpy(), np.zeros(count, dtype=np.int64), weights, np.full(count, 2.0, dtype=numpy_dtype), np.ones(count, dtype=numpy_dtype),
        np.array([True, False, True]), np.ones(count, dtype=numpy_dtype), slopes.numpy(), inverses.numpy(),
        step_slopes.numpy(), learnable, torch.cat(left).numpy(), torch.cat(vectors).numpy(),
        np.array([r for r, _ in shapes], dtype=np.int64), np.array([c for _, c in shapes], dtype=np.int64),
        weight_grads, step_grads,
    )  # fmt: skip
    at = 0
    for b, (r, c) in enumerate(shapes):
        expected = ((grad[b] * slopes[b]) * left[b]).unsqueeze(1) * vectors[b].unsqueeze(0)
        assert torch.equal(torch.from_numpy(weight_grads[at : at + r * c]).view(r, c), expected), b
        if learnable[b]:
            assert step_grads[b] == float((grad[b] * inverses[b]) * step_slopes[b]), b
        at += r * c


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_flat_places_of_random_maps_never_certify_below_the_norm(dtype: type) -> None:
    """Fuzz: 150 places of 1–9 maps of random shapes, scales (10⁻³⁰–10³⁰), zeros, NaN/inf, cold or warm vectors.

    Wherever the kernel says passed, τ·σ₁² ≤ s (τ maps) and B² ≥ σ₁² (norm maps) against a float64 SVD
    (relative slack 10⁻¹³ for the SVD's own error); a map with a non-finite entry never passes; the
    flags, values and vectors of every map are those of the same map certified alone.
    """
    rng = np.random.default_rng(2026)
    passed = 0
    for _ in range(150):
        groups = []
        for _ in range(int(rng.integers(1, 10))):
            r, c = int(rng.integers(1, 41)), int(rng.integers(1, 41))
            w = rng.standard_normal((r, c)) * 10.0 ** float(rng.choice([-30, -3, 0, 0, 0, 3, 30]))
            kind = rng.integers(0, 10)
            if kind == 0:
                w[:] = 0.0
            elif kind == 1:
                w[rng.integers(r), rng.integers(c)] = rng.choice([np.nan, np.inf, -np.inf])
            warm = np.nan_to_num(np.linalg.svd(np.nan_to_num(w, posinf=1.0, neginf=-1.0))[2][0])
            v = warm + (rng.standard_normal(c) if rng.integers(0, 3) == 0 else 0.0)
            v = v / (np.linalg.norm(v) or 1.0)
            groups.append((w, v, bool(rng.integers(0, 2)), bool(rng.integers(0, 2))))
        groups = [(w, v, t, s and t) for w, v, t, s in groups]  # learnable steps are τ maps' only
        args = _flat_inputs(groups, np.dtype(dtype))
        weights = np.asarray(args["weights"])
        with np.errstate(all="ignore"):
            out, steps = _run_flat(args, np.dtype(dtype))
        at = 0
        for b, (w, _, is_tau, _) in enumerate(groups):
            stored = weights[at : at + w.size].reshape(w.shape).astype(np.float64)  # the dtype's rounding of W
            at += w.size
            if not np.isfinite(stored).all():
                assert not out["flags"][b, 0], b
                continue
            if not out["flags"][b, 0]:
                continue
            passed += 1
            sigma2 = float(np.linalg.svd(stored, compute_uv=False)[0]) ** 2
            value = float(out["values"][b])
            if is_tau:
                assert value * sigma2 <= steps[b] * (1.0 + 1e-13), (b, value, sigma2, steps[b])
            else:
                assert value * value >= sigma2 * (1.0 - 1e-13), (b, value, sigma2)
    assert passed > 300  # the check saw real certificates
