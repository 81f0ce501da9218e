"""Certified training-time bounds of many constrained maps at once (``bound="verified-batched"``).

``bound="verified"`` certifies every training step of every map by a warm power estimate with a
margin, checked by a float64 Cholesky test (:func:`structnets.functional.verified_square_bound`).
Per map and per call that is a few dozen small tensor operations (casts, ``where``, host reads,
the float64 rounding of τ), which at MLP sizes cost more than the Cholesky itself. A
:class:`CertifiedBatch` does the same work for all its maps together: one ``torch.bmm`` for every
Gram matrix of a shape, a few batched Lanczos steps on them for the guesses, one batched
``torch.linalg.cholesky_ex``, one host read, one vectorised rounding of every τ (or norm bound). Each map then checks that the value
it is handed was computed for its weight *as it is now* and falls back to its own bound otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch
from torch import nn

from ..functional import _straight_through, certified_step, power_estimate, sqrt_round_up, squared_norm_bound
from ._spectral import VERIFIED_MARGIN, VERIFIED_MARGIN_MAX, CertifiedBound, _is_transformed, _top_vector_by_gram

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


def _up(value: float) -> float:
    return math.nextafter(value, math.inf) if math.isfinite(value) else value


def _gamma(k: int, unit: float = _U) -> float:
    """γ_k = k·u/(1 − k·u), rounded up (Higham, *Accuracy and Stability*, 2002, §3.1)."""
    ku = k * unit
    return _up(ku / (1.0 - ku))


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
    factor, info = torch.linalg.cholesky_ex(shifted)
    # OpenBLAS's potf2 tests a pivot with `<= 0`, which a NaN passes: read the factor too (a
    # finite sum means every entry is finite; an overflowing one only fails the test)
    passed = (info == 0) & torch.isfinite(factor.sum(dim=(-2, -1)))
    low, high = _PRECISION[shifted.dtype][1]
    return passed & (guess >= low) & (guess <= high)


def _set_shift(shifted: torch.Tensor, diagonal: torch.Tensor, guess: torch.Tensor) -> None:
    """Write fl(μ_b − ĝ_ii) on the diagonal of ``shifted`` (whose off-diagonal entries are −ĝ_ij, exact)."""
    shifted.diagonal(dim1=-2, dim2=-1).copy_(guess.unsqueeze(-1) - diagonal)


def _precision_for(weight_dtype: torch.dtype, n: int, inner: int) -> torch.dtype:
    """float64 for float64 weights; else float32 where its rounding factor K ≤ :data:`FLOAT32_MAX_K`, else float64."""
    small = weight_dtype != torch.float64 and verified_ratio(n, inner, torch.float32) <= 1.0 + FLOAT32_MAX_K
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
    first guesses low 3.9 % of the time, with margins of 1–3 %, where 5 power products left them
    low 18 % of the time with margins of 4–8 %, and the loss was lower (1.83 against 1.95).
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
    diagonal = torch.cat(alphas, dim=1).squeeze(-1)  # (B, k + 1)
    tridiagonal = torch.diag_embed(diagonal)
    finite = torch.isfinite(diagonal).all(dim=1)
    if betas:
        off = torch.cat(betas, dim=1).squeeze(-1)
        tridiagonal = tridiagonal + torch.diag_embed(off, -1)  # eigh reads the lower triangle only
        finite = finite & torch.isfinite(off).all(dim=1)
    # eigh refuses non-finite input: those entries get T = 0 and λ̂ = NaN
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
    unit = torch.isfinite(norm) & (norm > 0)
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
            for float64 weights, else float32 where K ≤ :data:`FLOAT32_MAX_K`, else float64.

    Returns:
        (Q, passed, following, retried): (B,) float64 Q_b, an upper bound on ‖W_b‖₂² wherever
        ``passed[b]`` (the factorisation ran to completion with a finite factor and μ_b in the
        tested range, [2⁻⁶⁰⁰, 2⁶⁰⁰] in float64, [2⁻⁶⁰, 2⁶⁰] in float32; elsewhere Q says nothing); (B, cols) the next unit power vectors in W's
        dtype; (B,) bool, True where the second test passed.
    """
    rows, cols = weights.shape[-2:]
    n, inner = min(rows, cols), max(rows, cols)
    if precision is None:
        precision = _precision_for(weights.dtype, n, inner)
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

    The guess is the top Ritz value λ̂ of a few Lanczos steps on the float64 Gram matrix from the warm
    vector, μ = (1 + margin)·λ̂, tested as in :func:`batched_verified_square` (B = 1, float64, a
    second test at 1.15·μ). A single power step on W (:func:`~structnets.functional.verified_power_square`,
    the mode's test until 2026-12-06) lagged behind σ₁ whenever the top of the spectrum has no gap:
    in 400 Adam steps of ``lipschitz_resnet(64, 10, 128, 2, bound="verified")`` (lr 5·10⁻³, batch 256,
    2026-12-06) its test failed in 21–44 % of the steps of each map (each then an exact eigen-solve),
    with margins of 7.6–8 %; here in none, with margins of 1–2.3 %. Q has the certified value and the gradient of
    (1 + margin)·σ̂², σ̂ = ‖Wv‖ (the paper's power-mode gradient, as before).

    Returns:
        (Q or None, the next unit power vector, whether the second test was needed).
    """
    estimate, _ = power_estimate(weight, vector)
    margins = torch.full((1,), 1.0 + margin, dtype=torch.float64, device=weight.device)
    square, passed, following, retried = batched_verified_square(
        weight.detach()[None], vector.detach()[None], margins, precision=torch.float64
    )
    ok, second = torch.stack((passed[0], retried[0])).tolist()
    if not ok:
        return None, following[0], False
    surrogate = estimate.to(torch.float64).square() * (1.0 + margin)
    return _straight_through(surrogate, square[0]), following[0], bool(second)


@dataclass
class _Entry:
    """One map's value from the last batch computation, usable once, for the content it was computed for."""

    value: torch.Tensor  # 0-d τ or norm bound, in the weight dtype, with autograd history
    weight: torch.Tensor  # the weight content the value certifies (a row of the stacked copy)
    step: torch.Tensor | float | None  # the step s or θ the τ was formed with (gradient-step maps)
    following: torch.Tensor  # the next power vector
    passed: bool
    retried: bool  # passed at the second, larger guess
    spent: list[bool]  # set by a gradient hook once a backward pass went through the group's graph


def _same_tensor_content(stored: torch.Tensor, current: torch.Tensor) -> bool:
    current = current.detach()
    return (
        stored.dtype == current.dtype
        and stored.shape == current.shape
        and stored.device == current.device
        and torch.equal(stored, current)
    )


def _mark_spent(spent: list[bool]) -> Any:
    def hook(grad: torch.Tensor) -> None:
        spent[0] = True

    return hook


class CertifiedBatch:
    """Certify every step of a model's ``"verified"`` maps together: one batched test per weight shape.

    Members are :class:`~structnets.nn.GradientStepResidual` and
    :class:`~structnets.nn.NormConstrainedLinear` layers with ``bound="verified"``. When the first
    member (the *leader*, normally the model's lift) runs a forward pass in training mode with
    gradients on, the batch computes, for every member whose weight requires grad, the value its
    forward needs, grouped by (kind, shape, dtype, device): Gram matrices, a guess
    μ_b = (1 + m_b)λ̂_b from a few Lanczos steps on each, one batched Cholesky test of μ_bI − W_bᵀW_b
    (:func:`batched_verified_square`), Q_b = μ_b(1 + K) where it passed, and then, vectorised,
    τ_b = s_b/Q_b rounded down (gradient-step maps) or √Q_b rounded up (norm-constrained maps),
    with the gradient of s_b/((1 + m_b)σ̂_b²) or √(1 + m_b)·σ̂_b, σ̂_b = ‖W_b v_b‖ (the paper's power-mode
    gradient, :class:`_PowerModeGradient`).
    One host read per group; the per-map margins m_b adapt as in ``"verified"``.

    A member uses its value only once, and only when the weight (and step) it is about to use has
    the *content* the value was computed for (``torch.equal`` against the stacked copy, same
    dtype, shape and device) and no backward pass has yet run through the batch's graph. Otherwise
    (a map used twice, a map called outside the leader's forward, a weight edited in between by a
    hook, ``.data``, ``load_state_dict`` or an optimizer step) it computes its own ``"verified"``
    bound, counted in :attr:`unbatched_calls`. Where the Cholesky test failed, the map takes the
    exact bound and restarts its power vector, as ``"verified"`` does (counted per map in
    ``exact_fallbacks``). Evaluation, no-grad passes, ``lipschitz_bound()``, certification and
    export never use the batch: they keep the exact cached bound.

    Args:
        maps: the member layers, leader first (e.g. in the order a ``Sequential`` calls them); each
            ``bound="verified"``, none repeated, none in another batch.

    Attributes:
        batched_calls: member calls served by the batch.
        unbatched_calls: member calls (training, gradients on) that computed their own bound.
        computations: batch computations (leader calls).
        retries: member calls certified by the second, larger guess (``retry`` of
            :func:`batched_verified_square`), which then widen the member's margin.
    """

    def __init__(self, maps: Sequence[nn.Module]) -> None:
        from .gradient_step_residual import GradientStepResidual
        from .norm_constrained_linear import NormConstrainedLinear

        if isinstance(maps, nn.Module) or not isinstance(maps, Sequence) or len(maps) == 0:
            raise TypeError(f"`maps` must be a non-empty sequence of layers, got {type(maps).__name__}")
        kinds: list[str] = []
        seen: set[int] = set()
        for position, layer in enumerate(maps):
            layer = cast(Any, layer)
            if isinstance(layer, GradientStepResidual):
                kinds.append("tau")
            elif isinstance(layer, NormConstrainedLinear):
                kinds.append("norm")
            else:
                raise TypeError(
                    f"`maps[{position}]` must be a GradientStepResidual or NormConstrainedLinear, "
                    f"got {type(layer).__name__}"
                )
            if layer.bound != "verified":
                raise ValueError(f"`maps[{position}]` must have bound='verified', got bound={layer.bound!r}")
            if id(layer) in seen:
                raise ValueError(f"`maps[{position}]` is listed twice: a map belongs to a batch once")
            if layer._bound.batch is not None:
                raise ValueError(f"`maps[{position}]` already belongs to a CertifiedBatch")
            seen.add(id(layer))
        # GradientStepResidual / NormConstrainedLinear (Any: their attributes are read by name)
        self._members: list[Any] = list(maps)
        self._kinds = kinds
        self._positions = {id(layer._bound): position for position, layer in enumerate(self._members)}
        self._entries: dict[int, _Entry] = {}
        self.batched_calls = 0
        self.unbatched_calls = 0
        self.computations = 0
        self.retries = 0
        for layer in self._members:
            layer._bound.batch = self

    @property
    def members(self) -> tuple[nn.Module, ...]:
        """The member layers, leader first."""
        return tuple(self._members)

    def __getstate__(self) -> dict[str, Any]:
        # pending values carry autograd history (not deep-copyable, and only valid in their forward)
        state = self.__dict__.copy()
        state["_entries"] = {}
        return state

    def __repr__(self) -> str:
        return f"CertifiedBatch({len(self._members)} maps)"

    # ----------------------------------------------------------------------------------------

    def take(self, bound: CertifiedBound, weight: torch.Tensor, kind: str) -> tuple[torch.Tensor, torch.Tensor] | None:
        """A member's value (τ or norm bound, next power vector) for ``weight`` as it is now, or None.

        Called by the member's ``CertifiedBound`` in a training forward with gradients on. None
        means: compute your own bound (the value is missing, used, stale or not of this kind).
        """
        position = self._positions.get(id(bound))
        if position is None or self._members[position]._bound is not bound:
            # a copied or unpickled batch: its members' bounds are new objects
            self._positions = {id(layer._bound): i for i, layer in enumerate(self._members)}
            position = self._positions.get(id(bound))
        if (
            position is None
            or self._members[position]._bound is not bound
            or self._kinds[position] != kind
            or _is_transformed(weight)
        ):
            return None
        if position == 0:
            self._compute()
        entry = self._entries.pop(id(bound), None)
        eligible = bound.mode == "verified" and weight.requires_grad
        if entry is None or entry.spent[0] or not eligible or not _same_tensor_content(entry.weight, weight):
            self.unbatched_calls += int(eligible)
            return None
        layer = self._members[position]
        if kind == "tau" and not self._same_step(layer, entry.step):
            self.unbatched_calls += 1
            return None
        self.batched_calls += 1
        if entry.passed:
            bound.verified_steps += 1
            if entry.retried:  # the first guess was low: widen the margin as a failed test does
                self.retries += 1
                bound.verified_margin = min(VERIFIED_MARGIN_MAX, 2.0 * bound.verified_margin)
            else:
                bound.verified_margin = max(VERIFIED_MARGIN, 0.95 * bound.verified_margin)
            return entry.value, entry.following
        bound.exact_fallbacks += 1
        bound.verified_margin = min(VERIFIED_MARGIN_MAX, 2.0 * bound.verified_margin)
        square = squared_norm_bound(weight, "exact")
        if kind == "tau":
            step = layer.step_size() if layer.step_logit is not None else layer.step
            value = certified_step(step, square, weight.dtype)
        else:
            value = sqrt_round_up(square, weight.dtype)
        # the estimate lagged behind σ₁: restart the vector at the top singular vector
        return value, _top_vector_by_gram(weight.detach())

    @staticmethod
    def _same_step(layer: Any, step: torch.Tensor | float | None) -> bool:
        logit = layer.step_logit
        if isinstance(step, torch.Tensor):
            return logit is not None and _same_tensor_content(step, logit)
        return logit is None and step == layer.step

    @staticmethod
    def _weight(layer: Any, kind: str) -> torch.Tensor:
        return layer.weight if kind == "tau" else layer.raw_weight

    def _compute(self) -> None:
        """Compute every eligible member's value for its current content (the leader's training call)."""
        self._entries = {}
        groups: dict[tuple[Any, ...], list[int]] = {}
        for position, (layer, kind) in enumerate(zip(self._members, self._kinds, strict=True)):
            weight = self._weight(layer, kind)
            vector = layer.power_vector
            if (
                layer._bound.mode != "verified"
                or not weight.requires_grad
                or weight.dim() != 2
                or vector.shape != (weight.shape[1],)
                or vector.dtype != weight.dtype
                or vector.device != weight.device
            ):
                continue
            learnable = kind == "tau" and layer.step_logit is not None
            groups.setdefault((weight.dtype, weight.device, kind, tuple(weight.shape), learnable), []).append(position)
        # one computation per (dtype, device): every shape's Gram test in one batched factorisation
        # where padding is cheap, and one vectorised rounding of every value (issue 26: the
        # per-shape sequences of small operations were most of the cost at MLP sizes)
        places: dict[tuple[Any, ...], list[_Group]] = {}
        for (dtype, device, kind, _, learnable), positions in groups.items():
            places.setdefault((dtype, device), []).append(self._group(kind, learnable, positions))
        for place in places.values():
            self._compute_place(place)
        self.computations += 1

    def _group(self, kind: str, learnable: bool, positions: list[int]) -> _Group:
        """Stack one shape's weights and power vectors (no autograd: :class:`_PowerModeGradient` differentiates)."""
        layers = [self._members[p] for p in positions]
        inputs = [self._weight(layer, kind) for layer in layers]
        steps: list[torch.Tensor] | list[float] | list[None]
        with torch.no_grad():
            stacked = torch.stack(inputs)
            vectors = torch.stack([layer.power_vector for layer in layers])
            # W_b v_b as a row: σ̂_b = ‖W_b v_b‖ and u_b = W_b v_b / σ̂_b (0 where W_b v_b = 0, as the norm's subgradient)
            image = torch.bmm(vectors.unsqueeze(1), stacked.mT).squeeze(1)
            estimate = torch.linalg.vector_norm(image, dim=1)
            left = image / estimate.unsqueeze(1).clamp_min(torch.finfo(stacked.dtype).tiny)
            dtype, device = stacked.dtype, stacked.device
            slope = None
            if kind == "tau" and learnable:
                logit_params = [layer.step_logit for layer in layers]
                inputs += logit_params
                logits = torch.stack(logit_params)
                sigmoid = torch.sigmoid(logits)
                step = 2.0 * sigmoid
                slope = step * (1.0 - sigmoid)  # ds/dθ of s = 2·sigmoid(θ)
                step64 = step.to(torch.float64)
                steps = list(logits.unbind(0))
            elif kind == "tau":
                steps = [layer.step for layer in layers]  # the exact floats, as tau() takes them
                step64 = torch.tensor(steps, dtype=torch.float64, device=device)
                step = step64.to(dtype)
            else:
                steps = [None] * len(layers)
                step64 = torch.ones(len(layers), dtype=torch.float64, device=device)
                step = step64.to(dtype)
        margins = torch.tensor([1.0 + layer._bound.verified_margin for layer in layers], dtype=torch.float64)
        return _Group(
            kind, layers, stacked, vectors, estimate, step, step64, steps, margins.to(device), inputs, left, slope
        )

    def _compute_place(self, groups: list[_Group]) -> None:
        """Certify every group of one dtype and device together and hand out the values.

        Everything is laid out once, in the order the padded tests take the groups (``order``):
        the results of each test are used as they come, without slicing them back per group.
        """
        dtype, device = groups[0].snapshot.dtype, groups[0].snapshot.device
        order: list[_Group] = []
        squares: list[torch.Tensor] = []
        passes: list[torch.Tensor] = []
        retries: list[torch.Tensor] = []
        margin_parts: list[torch.Tensor] = []
        following: list[torch.Tensor] = []
        with torch.no_grad(), torch.autocast(device.type, enabled=False):
            # precision per group, then one padded batch per precision (see _padded_sets)
            tests: dict[torch.dtype, list[_Group]] = {}
            for group in groups:
                rows, cols = group.snapshot.shape[-2:]
                tests.setdefault(_precision_for(dtype, min(rows, cols), max(rows, cols)), []).append(group)
            for precision, members in tests.items():
                sizes = [min(group.snapshot.shape[-2:]) for group in members]
                counts = [group.snapshot.shape[0] for group in members]
                for chosen in _padded_sets(sizes, counts):
                    size = max(sizes[i] for i in chosen)
                    # every Gram product writes into its block of one buffer: no concatenation copy
                    grams = torch.empty(sum(counts[i] for i in chosen), size, size, dtype=precision, device=device)
                    starts = torch.zeros(grams.shape[0], 1, size, dtype=precision, device=device)
                    ratios = []
                    offset, blocks = 0, []
                    for i in chosen:
                        group, n, part = members[i], sizes[i], slice(offset, offset + counts[i])
                        rows, cols = group.snapshot.shape[-2:]
                        if n == size:
                            w, _, start = _gram_and_start(group.snapshot, group.vectors, precision, out=grams[part])
                        else:
                            grams[part].zero_()
                            w, grams[part, :n, :n], start = _gram_and_start(group.snapshot, group.vectors, precision)
                        starts[part, :, :n] = start
                        ratios += [verified_ratio(min(rows, cols), max(rows, cols), precision)] * counts[i]
                        blocks.append((group, w, n, part))
                        offset += counts[i]
                    margins = _joined([members[i].margins for i in chosen])
                    ratio = torch.tensor(ratios, dtype=torch.float64, device=device)
                    square, passed, z, retried = _certify_grams(grams, starts, margins, ratio, 5, 1.15)
                    squares.append(square)
                    passes.append(passed)
                    retries.append(retried)
                    margin_parts.append(margins)
                    for group, w, n, part in blocks:
                        order.append(group)
                        following.extend(_following(w, z[part, :, :n], group.vectors).unbind(0))
            square, margins = _joined(squares), _joined(margin_parts)
            kinds = {group.kind for group in order}
            step64 = _joined([group.step64 for group in order])
            if kinds == {"tau"}:
                value = _tau_values(step64, square, dtype)
            elif kinds == {"norm"}:
                value = _norm_values(square, dtype)
            else:
                is_tau = torch.tensor(
                    [group.kind == "tau" for group in order for _ in group.layers], dtype=torch.bool, device=device
                )
                value = torch.where(is_tau, _tau_values(step64, square, dtype), _norm_values(square, dtype))
            estimate = _joined([group.estimate for group in order])
            step = _joined([group.step for group in order])
            factor = margins.to(dtype)
            # The value: τ = s/Q rounded down (gradient-step maps: τ·‖W‖₂² ≤ s) or √Q rounded up (norm
            # bounds ≥ ‖W‖₂). The gradient: of the surrogate s/((1 + m)σ̂²) or √(1 + m)·σ̂, the
            # "verified" mode's (the paper's power-mode gradient), written out by _PowerModeGradient.
            if kinds == {"tau"}:
                inverse = 1.0 / (estimate.square() * factor)
                surrogate = step * inverse
                slope = -2.0 * surrogate / estimate  # d surrogate / dσ̂
            elif kinds == {"norm"}:
                surrogate = estimate * factor.sqrt()
                inverse, slope = torch.zeros_like(estimate), factor.sqrt()
            else:
                inverse = torch.where(is_tau, 1.0 / (estimate.square() * factor), torch.zeros_like(estimate))
                surrogate = torch.where(is_tau, step * inverse, estimate * factor.sqrt())
                slope = torch.where(is_tau, -2.0 * surrogate / estimate, factor.sqrt())
            # An entry whose surrogate is far from its value (σ̂ = 0 or overflow, or σ̂ lagging by more than a
            # factor 2: the straight-through difference value − surrogate would not be exact, Sterbenz) or
            # whose gradient is not finite is a failed test, as in "verified"; its gradient is set to 0 so
            # that an unused row cannot turn into 0·∞ = NaN.
            usable = (surrogate + (value - surrogate) == value) & torch.isfinite(slope) & torch.isfinite(inverse)
            zero = torch.zeros((), dtype=dtype, device=device)
            plan = _Plan(value, torch.where(usable, slope, zero), torch.where(usable, inverse, zero), order)
            # the computation's one host read
            flags = torch.stack((_joined(passes) & usable, _joined(retries))).tolist()
        values = _PowerModeGradient.apply(plan, *[tensor for group in order for tensor in group.inputs])
        spent = [False]
        if values.requires_grad:
            values.register_hook(_mark_spent(spent))
        layers = [layer for group in order for layer in group.layers]
        snapshots = [weight for group in order for weight in group.snapshot.unbind(0)]
        steps = [item for group in order for item in group.steps]
        parts = zip(layers, values.unbind(0), snapshots, steps, following, *flags, strict=True)
        for layer, part, weight, step_value, vector, flag, second in parts:
            self._entries[id(layer._bound)] = _Entry(part, weight, step_value, vector, flag, second, spent)


@dataclass(eq=False)
class _Plan:
    """What :class:`_PowerModeGradient` returns and needs: the values, dvalue/dσ̂ and dvalue/ds per entry, the groups."""

    value: torch.Tensor  # (B,) certified values, in the weight dtype
    slope: torch.Tensor  # (B,) d surrogate / dσ̂ (0 where the entry failed)
    inverse: torch.Tensor  # (B,) d surrogate / ds = 1/((1 + m)σ̂²) for τ maps (0 for norm maps and failures)
    groups: list[_Group]  # in the order of the entries; each lists its inputs (weights, then θ if learnable)


class _PowerModeGradient(torch.autograd.Function):
    """The certified values with the power-mode gradient, in a few batched operations.

    Forward returns the values unchanged. Backward, for the surrogate S_b of each entry
    (s_b/((1 + m_b)σ̂_b²) for a τ map, √(1 + m_b)·σ̂_b for a norm map), with σ̂_b = ‖W_b v_b‖ and the
    power vector v_b held fixed (the paper's power mode): ∂σ̂_b/∂W_b = u_b v_bᵀ, u_b = W_b v_b/σ̂_b, so
    ∂S_b/∂W_b = (∂S_b/∂σ̂_b)·u_b v_bᵀ, and ∂S_b/∂θ_b = s'(θ_b)/((1 + m_b)σ̂_b²) for a learnable step
    s = 2·sigmoid(θ). The same gradient as autograd through the surrogate (tested), without building
    its graph: one outer product per group instead of a dozen recorded operations per step.
    """

    @staticmethod
    def forward(ctx: Any, plan: _Plan, *inputs: torch.Tensor) -> torch.Tensor:
        ctx.plan = plan
        return plan.value

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        plan: _Plan = ctx.plan
        by_norm = grad * plan.slope
        by_step = grad * plan.inverse
        grads: list[torch.Tensor | None] = [None]
        offset = 0
        for group in plan.groups:
            count = len(group.layers)
            part = slice(offset, offset + count)
            offset += count
            grads.extend(
                (by_norm[part].unsqueeze(1) * group.left).unsqueeze(2).mul(group.vectors.unsqueeze(1)).unbind(0)
            )
            if group.slope is not None:
                grads.extend((by_step[part] * group.slope).unbind(0))
        return tuple(grads)


#: Pad a Gram matrix of size n to a set's size N when its share of the padded factorisation stays
#: small: count·N³ ≤ this (≈ 5 ms of factorisation), or n = N.
_PAD_CUBES = 2**24


def _padded_sets(sizes: list[int], counts: list[int]) -> list[list[int]]:
    """Indices of Gram batches grouped for one padded factorisation each, largest size first."""
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    sets: list[list[int]] = []
    for i in order:
        for chosen in sets:
            size = sizes[chosen[0]]
            if sizes[i] == size or counts[i] * size**3 <= _PAD_CUBES:
                chosen.append(i)
                break
        else:
            sets.append([i])
    return sets


def _done(result: torch.Tensor | None) -> torch.Tensor:
    """A group's test result, set by ``_compute_place`` before it is read."""
    if result is None:
        raise RuntimeError("internal: a CertifiedBatch group was read before its test ran")
    return result


@dataclass(eq=False)
class _Group:
    """One (kind, shape, step kind) of members within a batch computation, and its test's results."""

    kind: str
    layers: list[Any]
    snapshot: torch.Tensor  # (B, rows, cols) the weights' content, detached
    vectors: torch.Tensor  # (B, cols) power vectors
    estimate: torch.Tensor  # (B,) σ̂_b = ‖W_b v_b‖ (no autograd)
    step: torch.Tensor  # (B,) s in the weight dtype (1 for norm maps)
    step64: torch.Tensor  # (B,) s in float64, no gradient
    steps: list[Any]  # what each member's τ was formed with (logit, float, or None)
    margins: torch.Tensor  # (B,) float64 1 + m_b
    inputs: list[torch.Tensor]  # the members' weights (then step logits θ, learnable steps): what gets a gradient
    left: torch.Tensor  # (B, rows) u_b = W_b v_b/σ̂_b
    slope: torch.Tensor | None  # (B,) ds/dθ for learnable steps, else None
    square: torch.Tensor | None = None
    passed: torch.Tensor | None = None
    retried: torch.Tensor | None = None
    following: torch.Tensor | None = None


__all__ = ["CertifiedBatch", "batched_verified_square", "verified_ratio", "verified_single_square"]
