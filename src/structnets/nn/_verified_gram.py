"""The certified Gram test behind ``bound="verified"`` and ``"verified-batched"``: a guess, one Cholesky factorisation.

For a batch of matrices W_b: the smaller Gram matrix Ĝ_b (one ``bmm``), a guess μ_b of λ_max(Ĝ_b)
from a few Lanczos steps started at the maps' warm power vectors, and one batched Cholesky
factorisation of μ_bI − Ĝ_b whose completion certifies Q_b = μ_b(1 + K) ≥ ‖W_b‖₂²
(:func:`verified_ratio`, Higham 2002, Thm 10.3). Pure functions of tensors; the layers' bounds
(``_spectral``) and :class:`~structnets.nn.CertifiedBatch` (``_certified_batch``) call them.
"""

from __future__ import annotations

import functools
import math

import torch

from .._float32_precision import float32_matmul_is_ieee
from ..functional import _straight_through, power_estimate, verified_square_bound

_U = 2.0**-53
#: Per compute dtype: unit round-off u, the range of μ that is tested (outside it the exact bound is
#: taken: inside it nothing in the Gram matrix or the factorisation overflows, and underflow errs by
#: far less than the slack × μ), and the relative slack added to K.
_PRECISION: dict[torch.dtype, tuple[float, tuple[float, float], float]] = {
    torch.float64: (2.0**-53, (2.0**-600, 2.0**600), 1e-15),
    torch.float32: (2.0**-24, (2.0**-60, 2.0**60), 1e-6),
}
#: The test runs in float32 (half the cost of float64 for the Gram product, a third for the
#: factorisation at n = 200) for weights that are not float64, where its rounding factor K stays
#: below this; otherwise in float64.
FLOAT32_MAX_K = 0.02


#: The largest float32 Gram size factored as upper triangular (see :func:`_cholesky_test`).
_UPPER_MAX_SIZE = 128


def _up(value: float) -> float:
    return math.nextafter(value, math.inf) if math.isfinite(value) else value


def _gamma(k: int, unit: float = _U) -> float:
    """γ_k = k·u/(1 − k·u), rounded up (Higham, *Accuracy and Stability*, 2002, §3.1)."""
    ku = k * unit
    return _up(ku / (1.0 - ku))


@functools.lru_cache(maxsize=4096)  # a pure function of its arguments, read at every batched step
def verified_ratio(n: int, inner: int, dtype: torch.dtype = torch.float64) -> float:
    """1 + K with K(n, h) data-free: a passed Cholesky test of μ certifies Q = μ(1 + K) ≥ ‖W‖₂².

    Let Ĝ be the computed n × n Gram matrix of W (inner dimension h) in ``dtype`` (float64 or float32,
    unit round-off u) and Ã = fl(μI − Ĝ), μ a number of that dtype.
    If the Cholesky factorisation of Ã runs to completion, R̂ᵀR̂ = Ã + ΔÃ with
    |ΔÃ| ≤ γ_c|R̂ᵀ||R̂| (Higham, *Accuracy and Stability of Numerical Algorithms*, 2002, Thm 10.3;
    c = 2(n + 1), twice the textbook constant for blocked orderings), so λ_min(Ã) ≥ −γ_c‖R̂‖_F² and
    ‖R̂‖_F² ≤ tr(Ã)/(1 − γ_c) ≤ nμ/(1 − γ_c) (each ãᵢᵢ = fl(μ − ĝᵢᵢ) ≤ μ, since ĝᵢᵢ ≥ 0):

        λ_max(Ĝ) ≤ μ + c_A + u(μ + D),   c_A = γ_c·nμ/(1 − γ_c),

    where ĝᵢᵢ ≤ D = μ + c_A/(1 − u) because (R̂ᵀR̂)ᵢᵢ ≥ 0 forces ãᵢᵢ ≥ −c_A. Forming Ĝ errs by
    ‖Ĝ − WᵀW‖₂ ≤ γ_{2h}‖W‖_F² ≤ γ_{2h}·nD/(1 − γ_{2h}). Every term is μ times a function of (n, h)
    alone; a slack (10⁻¹⁵ in float64, 10⁻⁶ in float32) covers the rounding of K, of μ(1 + K) and every
    underflow (< 2⁻¹⁰⁰⁰ absolute for μ ≥ 2⁻⁶⁰⁰ in float64, < 2⁻¹⁴⁰·(nh + n³) for μ ≥ 2⁻⁶⁰ in float32). The result differs from :func:`~structnets.functional.verified_square_bound`'s
    only in bounding tr(Ĝ) and max ĝᵢᵢ by D instead of reading them: no host read is needed.

    Args:
        n: the Gram matrix's size min(rows, cols).
        inner: the inner dimension max(rows, cols).
        dtype: the dtype of the Gram matrix and the factorisation (float64 or float32).

    Returns:
        1 + K, rounded up (≈ 1 + 4·10⁻¹² at n = h = 100 in float64, 1 + 5·10⁻³ in float32).
    """
    unit, _, slack = _PRECISION[dtype]
    g_c, g_h = _gamma(2 * (n + 1), unit), _gamma(2 * inner, unit)
    k_a = _up(_up(g_c * n) / (1.0 - g_c))
    d = _up(1.0 + _up(k_a / (1.0 - unit)))
    total = 1.0
    for term in (k_a, _up(unit * _up(1.0 + d)), _up(_up(_up(g_h * n) * d) / (1.0 - g_h)), slack):
        total = _up(total + term)
    return total


def _cholesky_test(shifted: torch.Tensor, guess: torch.Tensor) -> torch.Tensor:
    """(B,) bool: the Cholesky factorisation of ``shifted`` = fl(μ_bI − Ĝ_b) ran to completion with a finite factor, μ_b in range."""
    # R with RᵀR = Ã (upper) or LLᵀ = Ã (lower): the same factorisation, the same error bound (Higham
    # Thm 10.3). MKL 2024.2 factors float32 batches of n ≤ 128 25–30 % faster as upper, n ≥ 160 1.6–1.8×
    # slower (one thread, 2026-12-06); float64 within ±10 % either way
    upper = shifted.dtype == torch.float32 and shifted.shape[-1] <= _UPPER_MAX_SIZE
    factor, info = torch.linalg.cholesky_ex(shifted, upper=upper)
    # OpenBLAS's potf2 tests a pivot with `<= 0`, which a NaN passes: read the factor too (a
    # finite sum means every entry is finite; an overflowing one only fails the test; |x| < ∞ is
    # torch.isfinite in 2 dispatched operations instead of 5)
    passed = (info == 0) & (factor.sum(dim=(-2, -1)).abs() < math.inf)
    low, high = _PRECISION[shifted.dtype][1]
    return passed & (guess >= low) & (guess <= high)


def _set_shift(shifted: torch.Tensor, diagonal: torch.Tensor, guess: torch.Tensor) -> None:
    """Write fl(μ_b − ĝ_ii) on the diagonal of ``shifted`` (whose off-diagonal entries are −ĝ_ij, exact)."""
    shifted.diagonal(dim1=-2, dim2=-1).copy_(guess.unsqueeze(-1) - diagonal)


@functools.lru_cache(maxsize=4096)
def _precision_for(weight_dtype: torch.dtype, n: int, inner: int, ieee: bool = True) -> torch.dtype:
    """float64 for float64 weights; else float32 where its rounding factor K ≤ :data:`FLOAT32_MAX_K`, else float64.

    ``ieee``: whether float32 products on the weights' device run in IEEE float32 now
    (:func:`~structnets._float32_precision.float32_matmul_is_ieee`). K is proved for u = 2⁻²⁴; under
    TF32 (u = 2⁻¹¹) or bfloat16 products the float32 test would certify nothing, so it runs in float64.
    """
    small = ieee and weight_dtype != torch.float64 and verified_ratio(n, inner, torch.float32) <= 1.0 + FLOAT32_MAX_K
    return torch.float32 if small else torch.float64


def _gram_and_start(
    weights: torch.Tensor, vectors: torch.Tensor, precision: torch.dtype, out: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(W in ``precision``, the smaller Gram matrix Ĝ (B, n, n), the power iteration's start (B, 1, n), a row).

    Ĝ = WWᵀ when W has fewer rows than columns (iterate on left vectors u ∝ Wv), else WᵀW; written
    into ``out`` when given (a (B, n, n) block of a larger batch: no copy). Call with gradients and
    autocast off.
    """
    w = weights.detach().to(precision)
    v = vectors.detach().to(precision).unsqueeze(1)
    # torch.bmm, not matmul: the same product without matmul's broadcasting views (dispatch-bound sizes)
    left, right, start = (w, w.mT, torch.bmm(v, w.mT)) if w.shape[-2] < w.shape[-1] else (w.mT, w, v)
    if out is None:
        return w, torch.bmm(left, right), start
    torch.bmm(left, right, out=out)
    return w, out, start


def _lanczos(gram: torch.Tensor, start: torch.Tensor, iterations: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(λ̂_b (B,), the top Ritz vector (B, 1, n)) of Lanczos on the symmetric Ĝ_b from the rows ``start``.

    The Krylov space K = span{v, vĜ, …, vĜ^k} (k = ``iterations``) gives the tridiagonal T_b = QᵀĜ_bQ;
    its largest eigenvalue λ̂_b (a Rayleigh–Ritz value: ≤ λ_max(Ĝ_b) in exact arithmetic) is the
    best estimate K holds, where the power iteration's Rayleigh quotient uses its last vector only.
    The difference matters when the top of the spectrum has no gap (σ₂ ≈ σ₁, wide random-like
    layers): in 400 Adam steps of 10 blocks of width 100 (2026-12-06), 6 Lanczos vectors left the
    first guesses low 3.9 % of the time, with margins of 1–6 % (mostly 1–3 %), where 5 power products
    left them low 18 % of the time with margins of 4–8 % (the last minibatch's loss 1.86 against 1.95,
    one seed).
    No reorthogonalisation: in so few steps lost orthogonality can only repeat converged Ritz
    values, and the guess needs no more (the Cholesky test certifies whatever μ it is handed). A
    breakdown (β ≈ 0, the start in an invariant subspace) leaves the next vectors ≈ 0, which add
    Ritz values ≈ 0. A non-finite Ĝ_b gives λ̂_b = NaN (a failed test).

    z is a row, zĜ = (Ĝz)ᵀ: a batched (1 × n)(n × n) product runs 4–5× faster on CPU than
    (n × n)(n × 1) at n = 100–200 (float32 and float64, one thread, 2026-12-06).
    """
    precision = gram.dtype
    tiny = torch.finfo(precision).tiny
    # below this β is a breakdown: relative to tr(Ĝ) ≥ λ_max (Ĝ is positive semi-definite up to rounding)
    floor = (gram.diagonal(dim1=-2, dim2=-1).sum(-1) * (64 * torch.finfo(precision).eps)).clamp_min(tiny)
    floor = floor[:, None, None]
    q = start / torch.linalg.vector_norm(start, dim=(1, 2), keepdim=True).clamp_min(tiny)
    basis, alphas, betas = [q], [], []
    previous: torch.Tensor | None = None
    beta = floor
    for step in range(iterations + 1):
        w = torch.bmm(q, gram)
        alpha = torch.bmm(w, q.mT)
        alphas.append(alpha)
        if step == iterations:
            break
        w = torch.addcmul(w, alpha, q, value=-1.0)
        if previous is not None:
            w = torch.addcmul(w, beta, previous, value=-1.0)
        beta = torch.linalg.vector_norm(w, dim=2, keepdim=True)
        betas.append(beta)
        previous, q = q, w / torch.clamp_min(beta, floor)
        basis.append(q)
    tridiagonal = torch.diag_embed(torch.cat(alphas, dim=1).squeeze(-1))  # (B, k + 1, k + 1)
    if betas:
        # eigh reads the lower triangle only
        tridiagonal = tridiagonal + torch.diag_embed(torch.cat(betas, dim=1).squeeze(-1), -1)
    # eigh refuses non-finite input: those entries get T = 0 and λ̂ = NaN (|t| < ∞ is False for ±∞
    # and NaN: torch.isfinite in 2 dispatched operations instead of 5)
    finite = (tridiagonal.abs() < math.inf).flatten(1).all(dim=1)
    tridiagonal = torch.where(finite[:, None, None], tridiagonal, torch.zeros((), dtype=precision, device=gram.device))
    values, vectors = torch.linalg.eigh(tridiagonal)
    ritz = torch.where(finite, values[:, -1], torch.full((), math.nan, dtype=precision, device=gram.device))
    top = torch.bmm(vectors[:, :, -1:].mT, torch.cat(basis, dim=1))
    return ritz, top


def _certify_grams(
    gram: torch.Tensor,
    start: torch.Tensor,
    margins: torch.Tensor,
    ratios: torch.Tensor,
    iterations: int,
    retry: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Guess μ_b from ``iterations`` Lanczos steps on Ĝ_b (:func:`_lanczos`), test it by one batched Cholesky, Q_b = μ_b·ratio_b.

    ``gram`` is overwritten (by fl(μ_bI − Ĝ_b), factored in place of a copy). It may hold Gram
    matrices of different sizes zero-padded at the end to one size N: the padded matrix is
    diag(μI − Ĝ_b, μI) exactly, its factor diag(R̂_b, √μ I) with every entry outside the leading
    block an exact 0, and each entry of R̂_b comes from inner products whose extra terms are exact
    zeros (adding 0 rounds nothing). So R̂_b satisfies the backward-error bound of the unpadded size
    n_b, in whatever order the padded factorisation sums, and ratio_b = :func:`verified_ratio` of
    the unpadded sizes certifies it (the verdict at μ_b within rounding of λ_max may differ from
    the unpadded run's; each is sound). A zero-padded start vector keeps its padding 0.

    Returns:
        (Q (B,) float64, passed (B,) bool, the top Ritz vector (B, 1, n), a row, retried (B,) bool).
    """
    precision = gram.dtype
    ritz, z = _lanczos(gram, start, iterations)
    # μ is the number of `precision` the factorisation subtracts from: the certificate is for it
    guess = (ritz.to(torch.float64) * margins).to(precision)
    diagonal = gram.diagonal(dim1=-2, dim2=-1).clone()
    shifted = gram.neg_()  # −ĝ_ij exactly; the diagonal is set to fl(μ − ĝ_ii) as before
    _set_shift(shifted, diagonal, guess)
    passed = _cholesky_test(shifted, guess)
    retried = torch.zeros_like(passed)
    if retry > 1.0 and not bool(passed.all()):
        # a weight that moved since the last step, or a top of the spectrum without a gap, can
        # leave the Ritz value a few % low: test once more, larger, before the exact bound
        failed = (~passed).nonzero().squeeze(-1)
        second = (guess[failed].to(torch.float64) * retry).to(precision)
        again_shifted = shifted[failed]  # a copy; the factorisation left `shifted` unchanged
        _set_shift(again_shifted, diagonal[failed], second)
        again = _cholesky_test(again_shifted, second)
        guess = guess.index_put((failed,), torch.where(again, second, guess[failed]))
        passed = passed.index_put((failed,), again)
        retried = retried.index_put((failed,), again)
    square = guess.to(torch.float64) * ratios
    square = torch.nextafter(square, torch.full_like(square, math.inf))
    return square, passed, z, retried


def _following(w: torch.Tensor, z: torch.Tensor, vectors: torch.Tensor) -> torch.Tensor:
    """The next unit power vectors (B, cols) in ``vectors``' dtype from the last iterate z (B, 1, n), a row."""
    following = torch.bmm(z, w) if w.shape[-2] < w.shape[-1] else z
    norm = torch.linalg.vector_norm(following, dim=(1, 2), keepdim=True)
    # keep the old vector where the new one cannot be a unit vector (W v = 0, non-finite W): a
    # finite, positive norm has every entry finite (one test on B numbers, not on B·cols)
    unit = (norm > 0) & (norm < math.inf)  # False for NaN too
    following = torch.where(unit, following / norm, vectors.detach().to(w.dtype).unsqueeze(1))
    return following.squeeze(1).to(vectors.dtype)


def _joined(parts: list[torch.Tensor]) -> torch.Tensor:
    return parts[0] if len(parts) == 1 else torch.cat(parts)


def _tau_values(step64: torch.Tensor, square: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """τ = s/Q rounded down in ``dtype``, no gradient: :func:`~structnets.functional.certified_step`'s value, in fewer operations."""
    square = torch.where(square > 0, square.clamp_min(2.0**-1020), square)
    positive = square > 0
    zero = square.new_zeros(())
    quotient = torch.nextafter(step64 / torch.where(positive, square, 1.0), zero)
    quotient = torch.where(positive, quotient, zero).clamp_max(torch.finfo(dtype).max)
    cast = quotient.to(dtype)
    if dtype == torch.float64:
        return cast
    return torch.where(cast.to(torch.float64) > quotient, torch.nextafter(cast, cast.new_zeros(())), cast)


def _norm_values(square: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """√Q rounded up in ``dtype``, no gradient: :func:`~structnets.functional.sqrt_round_up`'s value, in fewer operations."""
    root = torch.sqrt(square)
    infinity = square.new_full((), math.inf)
    root = torch.where(square > 0, torch.nextafter(root, infinity), root)
    cast = root.to(dtype)
    if dtype == torch.float64:
        return cast
    return torch.where(cast.to(torch.float64) < root, torch.nextafter(cast, cast.new_full((), math.inf)), cast)


def batched_verified_square(
    weights: torch.Tensor,
    vectors: torch.Tensor,
    margins: torch.Tensor,
    iterations: int = 5,
    retry: float = 1.15,
    precision: torch.dtype | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Certify Q_b ≥ ‖W_b‖₂² for a batch of equal-shape matrices: a guess from the Gram matrix, one batched Cholesky test.

    The smaller Gram matrix Ĝ_b (WᵀW or WWᵀ, one ``bmm`` in ``precision``) gives the guess: ``iterations``
    Lanczos steps on Ĝ_b from the warm vector v_b (or W_bv_b), whose top Ritz value λ̂_b ≤ λ_max(Ĝ_b)
    (:func:`_lanczos`), and μ_b = λ̂_b·(1 + m_b) (where that fails, ``retry``·μ_b once more). The Cholesky factorisation of μ_bI − Ĝ_b (one batched
    ``torch.linalg.cholesky_ex``) then certifies Q_b = μ_b(1 + K) (:func:`verified_ratio`). The
    Lanczos steps on the n × n Gram matrix cost n² per step against the n²h of forming it, and track σ₁
    far better than one power step on W: a norm that grew since the last call no longer fails the test.

    Args:
        weights: (B, rows, cols) W_b, any floating dtype (no gradient is taken).
        vectors: (B, cols) warm right-singular vectors v_b (the layers' power vectors).
        margins: (B,) float64 factors 1 + m_b > 1.
        iterations: Lanczos steps on Ĝ_b, ≥ 0 (the Krylov space has dimension ``iterations`` + 1; 0: the
            Rayleigh quotient of the warm vector).
        retry: where the test of μ_b fails, test ``retry``·μ_b once more (no retry when ≤ 1).
        precision: the dtype of the Gram matrix and the test, float64 or float32; None: float64
            for float64 weights, else float32 where K ≤ :data:`FLOAT32_MAX_K`, else float64. float32 is
            taken only while float32 products on the device are IEEE float32 (not under TF32 or
            bfloat16 products, ``torch.set_float32_matmul_precision``): float64 otherwise.

    Returns:
        (Q, passed, following, retried): (B,) float64 Q_b, an upper bound on ‖W_b‖₂² wherever
        ``passed[b]`` (the factorisation ran to completion with a finite factor and μ_b in the
        tested range, [2⁻⁶⁰⁰, 2⁶⁰⁰] in float64, [2⁻⁶⁰, 2⁶⁰] in float32; elsewhere Q says nothing); (B, cols) the next unit power vectors in W's
        dtype; (B,) bool, True where the second test passed.
    """
    rows, cols = weights.shape[-2:]
    n, inner = min(rows, cols), max(rows, cols)
    ieee = float32_matmul_is_ieee(weights.device)
    if precision is None:
        precision = _precision_for(weights.dtype, n, inner, ieee)
    elif precision == torch.float32 and not ieee:
        precision = torch.float64  # K holds for IEEE float32 products only (see _precision_for)
    # autocast would round the float32 Gram product's operands to bfloat16/float16, outside the
    # error analysis of verified_ratio: the test always runs in `precision`
    with torch.no_grad(), torch.autocast(weights.device.type, enabled=False):
        w, gram, start = _gram_and_start(weights, vectors, precision)
        ratios = torch.full((gram.shape[0],), verified_ratio(n, inner, precision), dtype=torch.float64)
        square, passed, z, retried = _certify_grams(gram, start, margins, ratios.to(gram.device), iterations, retry)
        following = _following(w, z, vectors)
    return square, passed, following.to(weights.dtype), retried


def verified_single_square(
    weight: torch.Tensor, vector: torch.Tensor, margin: float
) -> tuple[torch.Tensor | None, torch.Tensor, bool]:
    """``bound="verified"`` for one map: Q ≥ ‖W‖₂² certified, with the power-mode gradient, or None.

    First the cheap test of :func:`~structnets.functional.verified_power_square`: one power step on W
    gives σ̂, and μ = (1 + margin)·σ̂² is tested by one float64 Cholesky factorisation. Where it fails
    (σ̂ lagged behind σ₁), the guess is the top Ritz value λ̂ of a few Lanczos steps on the float64 Gram
    matrix from the warm vector, μ = (1 + margin)·λ̂, tested as in :func:`batched_verified_square`
    (B = 1, a second test at 1.15·μ), before the caller's exact eigen-solve. One power step alone (the
    mode until 2026-12-06) lags whenever the top of the spectrum has no gap: in 400 Adam steps of
    ``lipschitz_resnet(64, 10, 128, 2, bound="verified")`` (lr 5·10⁻³, batch 256, 2026-12-06) it fell
    back to the eigen-solve in 21–44 % of the steps of each map, with margins of 7.6–8 %; with the
    Lanczos test behind it, in none (margins 1–1.2 % for three maps, 8 % for one). Q has the certified value and the gradient
    of (1 + margin)·σ̂², σ̂ = ‖Wv‖ (the paper's power-mode gradient, as before).

    Returns:
        (Q or None, the next unit power vector, whether the Lanczos test's second, larger guess was needed).
    """
    estimate, quick_following = power_estimate(weight, vector)
    surrogate = estimate.to(torch.float64).square() * (1.0 + margin)
    quick = verified_square_bound(weight, float(surrogate.detach()))
    if quick is not None:
        return _straight_through(surrogate, torch.full_like(surrogate.detach(), quick)), quick_following, False
    margins = torch.full((1,), 1.0 + margin, dtype=torch.float64, device=weight.device)
    square, passed, following, retried = batched_verified_square(
        weight.detach()[None], vector.detach()[None], margins, precision=torch.float64
    )
    ok, second = torch.stack((passed[0], retried[0])).tolist()
    if not ok:
        return None, following[0], False
    return _straight_through(surrogate, square[0]), following[0], bool(second)


__all__ = ["FLOAT32_MAX_K", "batched_verified_square", "verified_ratio", "verified_single_square"]
