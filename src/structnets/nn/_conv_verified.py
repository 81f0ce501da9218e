"""The training-time certificate of the conv layers' ``bound="verified"``: warm power estimates, one Cholesky test.

The exact bound (:func:`structnets.conv_norms.conv_squared_norm_bound`) costs a batched Hermitian
eigensolve of the Gram matrices G(ω) = K̂(ω)ᴴK̂(ω) at every frequency of the grid, at every
training step. Here, as in the dense ``bound="verified"``'s first test
(:func:`structnets.functional.verified_power_square`), persistent per-frequency power vectors give
λ̂(ω) ≤ λ_max(G(ω)), and μ = (1 + margin)·max_ω λ̂(ω) is certified for **every** frequency at once
by one batched complex Cholesky factorisation of μI − Ĝ(ω) (:func:`cholesky_certificate`).

The Gram matrices are formed without an FFT (:func:`correlation_gram`): G(ω) = Σ_δ C_δ e^{−iω·δ}
with the (2k_h − 1)(2k_w − 1) real tap correlations C_δ = Σ_{s − t = δ} K_tᵀK_s, all of them from
one real matrix product MᵀM (M the kernel as c_out × k_hk_wc_in), then two real products with
tables of twiddles (C_{−δ} = C_δᵀ halves them): far fewer flops than the FFT and the complex
batched Gram product of the exact bound, every rounding error
covered by the standard model (Higham, *Accuracy and Stability of Numerical Algorithms*, 2002,
§3.1, §3.5) with no FFT error constant to assume.
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch

from .._validation import check_choice
from ..conv_norms import (
    PADDING_MODES,
    check_kernel,
    exact_margins,
    gram_matrices,
    int_pair,
    rayleigh_quotient,
    resolve_grid,
    scale_kernel,
    unscale_square,
)
from ..functional import _straight_through

_U = 2.0**-53
#: error of a computed twiddle cos θ, sin θ (θ = 2π(r₁/N₁ + r₂/N₂) in float64, |θ| < 4π, then a libm
#: call within 1 ulp): |Δθ| ≤ 16πu plus 2u, so 64u is a wide margin
_TWIDDLE_ERROR = 64.0 * _U


def _gamma(k: int) -> float:
    """γ_k = k·u/(1 − k·u), rounded up (Higham 2002, §3.1)."""
    ku = k * _U
    return math.nextafter(ku / (1.0 - ku), math.inf)


def _up(value: float) -> float:
    """One step towards +∞: ≥ the exact result of the correctly rounded operation that gave ``value``."""
    return math.nextafter(value, math.inf) if math.isfinite(value) else value


@lru_cache(maxsize=64)
def _correlation_plan(
    kernel_size: tuple[int, int], grid: tuple[int, int], inside: bool, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(slot of each tap pair (t, s), cos table (F, 1 + H), −sin table (F, H)).

    Slots order δ lexicographically, so slot D − 1 − j holds −δ of slot j and the centre δ = 0; the
    tables are for the centre and the H = (D − 1)/2 slots after it.
    """
    kh, kw = kernel_size
    n1, n2 = grid
    taps = torch.arange(kh * kw)
    a, b = (taps // kw)[:, None], (taps % kw)[:, None]
    c, d = (taps // kw)[None, :], (taps % kw)[None, :]
    d1, d2 = (c - a, d - b) if inside else (a - c, b - d)
    slots = ((d1 + kh - 1) * (2 * kw - 1) + (d2 + kw - 1)).reshape(-1)
    delta1 = torch.arange(-(kh - 1), kh).repeat_interleave(2 * kw - 1)
    delta2 = torch.arange(-(kw - 1), kw).repeat(2 * kh - 1)
    centre = (delta1.numel() - 1) // 2
    delta1, delta2 = delta1[centre:], delta2[centre:]
    half = n2 // 2 + 1
    j1, j2 = torch.arange(n1).repeat_interleave(half), torch.arange(half).repeat(n1)
    # the phase reduced exactly in integers first, so θ ∈ [0, 4π) carries one rounding per operation
    r1 = torch.remainder(j1[:, None] * delta1[None, :], n1).to(torch.float64)
    r2 = torch.remainder(j2[:, None] * delta2[None, :], n2).to(torch.float64)
    angle = 2.0 * math.pi * (r1 / n1 + r2 / n2)
    return slots.to(device), torch.cos(angle).to(device), (-torch.sin(angle[:, 1:])).to(device)


def correlation_gram(scaled: torch.Tensor, grid: tuple[int, int]) -> tuple[torch.Tensor, float]:
    """The Gram matrices on the half spectrum by tap correlations, and their rigorous error (no gradient).

    Returns Ĝ: (F, n, n) complex128 in :func:`structnets.conv_norms.frequency_matrices`' order
    (K̂ᴴK̂ when c_in ≤ c_out, else K̂K̂ᴴ; n the smaller side), and a factor ε with
    ‖Ĝ_H(ω) − G(ω)‖₂ ≤ ε·‖K‖_F² at every frequency, G(ω) the exact Gram matrix of the stored kernel
    and Ĝ_H any Hermitian matrix read from one triangle of Ĝ(ω) (as LAPACK does).

    C_{−δ} = C_δᵀ, so only δ = 0 and the δ > 0 (lexicographically) enter: Re G(ω) = C₀ +
    Σ_{δ>0}(C_δ + C_δᵀ) cos ω·δ and Im G(ω) = −Σ_{δ>0}(C_δ − C_δᵀ) sin ω·δ, one real product each.

    Rounding (standard model, entrywise, with A = Σ_{t,s}|K_t|ᵀ|K_s|): the product MᵀM errs by
    γ_h (h the inner dimension), the ≤ T = k_hk_w products summed into each C_δ by γ_T, the sums
    C_δ ± C_δᵀ and the real products with ≤ D twiddles by γ_{D+1}, the twiddles by 64u; real and imaginary
    parts each, so the modulus errs by ≤ √2(γ_h + γ_T + γ_D + 64u)(1 + 10⁻⁹)·A, and
    ‖A‖₂ ≤ ‖Σ_t|K_t|‖_F² ≤ T‖K‖_F² (Cauchy–Schwarz). Constants doubled (γ_{2m}) for blocked orderings.
    """
    c_out, c_in, kh, kw = (int(v) for v in scaled.shape)
    inside = c_in <= c_out
    taps = kh * kw
    with torch.no_grad():
        k = scaled.detach()
        matrix = k.permute(0, 2, 3, 1).reshape(c_out, -1) if inside else k.permute(1, 2, 3, 0).reshape(c_in, -1)
        n, inner = (c_in, c_out) if inside else (c_out, c_in)
        blocks = (matrix.T @ matrix).reshape(taps, n, taps, n).transpose(1, 2).reshape(taps * taps, n * n)
        slots, cosines, sines = _correlation_plan((kh, kw), grid, inside, k.device)
        width = (2 * kh - 1) * (2 * kw - 1)
        correlations = torch.zeros(width, n, n, dtype=k.dtype, device=k.device)
        correlations.view(width, n * n).index_add_(0, slots, blocks)
        # C_{−δ} = C_δᵀ: G(ω) = C₀ + Σ_{δ>0} (C_δ + C_δᵀ) cos ω·δ − i Σ_{δ>0} (C_δ − C_δᵀ) sin ω·δ
        centre = (width - 1) // 2
        positive = correlations[centre + 1 :]
        even = torch.cat((correlations[centre : centre + 1], positive + positive.transpose(1, 2)))
        odd = positive - positive.transpose(1, 2)
        real = cosines @ even.reshape(-1, n * n)
        imaginary = sines @ odd.reshape(-1, n * n) if odd.shape[0] else torch.zeros_like(real)
        gram = torch.complex(real, imaginary).view(-1, n, n)
    relative = _gamma(2 * inner) + _gamma(2 * taps) + _gamma(2 * width + 2) + _TWIDDLE_ERROR
    return gram, _up(_up(math.sqrt(2.0) * relative * (1.0 + 1e-9)) * taps)


def cholesky_certificate(gram: torch.Tensor, candidate: float, absolute: float = 0.0) -> float | None:
    """Q' ≥ λ_max of every matrix of the batch, from one batched Cholesky test of μI − Ĝ, or None.

    ``gram`` holds computed Hermitian Ĝₓ (complex128, (F, n, n)) within ``absolute`` (in ‖·‖₂) of
    the matrices Gₓ to bound. The complex analogue of
    :func:`structnets.functional.verified_square_bound`: when the float64 Cholesky factorisation of
    Ãₓ = fl(μI − Ĝₓ) runs to completion for every x (LAPACK reads one triangle and the real part of
    the diagonal, so Ãₓ is Hermitian), R̂ᴴR̂ = Ã + ΔÃ with |ΔÃ| ≤ γ|R̂ᴴ||R̂| (Higham, *Accuracy and
    Stability of Numerical Algorithms*, 2002, Thm. 10.3; complex arithmetic, Lemma 3.5, costs a
    few real roundings per operation: γ = γ_{4(n+2)}), so λ_min(Ã) ≥ −γ tr(Ã)/(1 − γ); forming Ã
    rounds each diagonal entry by ≤ u(μ + |ĝᵢᵢ|) (the verified positive-definiteness test of Rump,
    *Verification methods*, Acta Numerica 19, 2010, §10.8). Hence, maxima over the batch,

        λ_max(Gₓ) ≤ Q' = μ + γ·n(μ + max|ĝᵢᵢ|)(1 + u)/(1 − γ) + u(μ + max|ĝᵢᵢ|) + absolute + 10⁻²⁹⁰,

    every operation rounded up. Cost: one batched n³/3 Cholesky and one host synchronisation.

    Args:
        gram: (F, n, n) complex128 (entries of order 1 or more: the kernel is scaled by a power of two).
        candidate: μ > 0, the guess.
        absolute: bound on ‖Ĝₓ − Gₓ‖₂ (0: bound the λ_max of the stored Ĝₓ themselves).

    Returns:
        Q' (a Python float) when every factorisation passes, else None.
    """
    if not (math.isfinite(candidate) and candidate > 0.0 and math.isfinite(absolute)):
        return None
    n = int(gram.shape[-1])
    with torch.no_grad():
        shifted = gram.neg()
        shifted.diagonal(dim1=-2, dim2=-1).add_(candidate)
        _, info = torch.linalg.cholesky_ex(shifted)
        diagonal = gram.diagonal(dim1=-2, dim2=-1).real
        checks = torch.stack((info.abs().amax().to(torch.float64), diagonal.abs().amax())).tolist()
    if checks[0] != 0.0 or not math.isfinite(checks[1]):
        return None
    shift = _up(candidate + checks[1])
    g_n = _gamma(4 * (n + 2))
    trace = _up(_up(n * shift) * (1.0 + _U))
    terms = (candidate, _up(_up(g_n * trace) / (1.0 - g_n)), _up(_U * shift), absolute, 1e-290)
    total = 0.0
    for term in terms:
        total = _up(total + term)
    return total


def _power_steps(gram: torch.Tensor, vectors: torch.Tensor, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(λ̂ = ‖Ĝv‖ per frequency, the unit v it was taken at) after ``steps`` − 1 normalised power steps."""
    tiny = torch.finfo(torch.float64).tiny
    vector = vectors
    for _ in range(steps - 1):
        image = (gram @ vector.unsqueeze(-1)).squeeze(-1)
        norms = torch.linalg.vector_norm(image, dim=-1, keepdim=True)
        vector = torch.where(norms > 0, image / norms.clamp_min(tiny), vector)
    return torch.linalg.vector_norm((gram @ vector.unsqueeze(-1)).squeeze(-1), dim=-1), vector


def training_conv_square(
    kernel: torch.Tensor,
    vectors: torch.Tensor | None,
    margin: float,
    padding_mode: str = "zeros",
    input_size: int | tuple[int, int] | None = None,
    grid: int | tuple[int, int] | None = None,
    power_steps: int = 2,
) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """A training-time certified Q ≥ ‖K‖_op²: warm power estimates verified by one batched Cholesky test.

    With ``vectors`` (F, n) the persistent per-frequency unit power vectors of the Gram matrices
    (:func:`correlation_gram`), ``power_steps`` batched power steps give λ̂(ω) = ‖Ĝ(ω)v(ω)‖;
    μ = (1 + margin)·max_ω λ̂(ω) is tested for **every** frequency at once by
    :func:`cholesky_certificate` with the Gram matrices' rounding error, so
    Q = Q'/(1 − α) ≥ ‖K‖_op² (α the sampling slack of the every-size bound, 0 for one input size).
    The value is certified whatever ``vectors`` hold (stale, random or converged): they only choose
    μ. Q's gradient is that of (1 + margin)·vᴴG(ω*)v at the maximising frequency ω* (the
    gradient of λ_max there once v has converged), by the direct tap sum. When the test fails (a
    vector lagged behind by more than the margin) or no usable vectors are given, Q is the exact
    bound of :func:`structnets.conv_norms.conv_squared_norm_bound` (same value, from an
    eigendecomposition of its Gram matrices), whose top eigenvectors become the next vectors.

    Args:
        kernel: (c_out, c_in, k_h, k_w).
        vectors: (F, n) complex128 unit vectors, or None (then the exact bound starts them).
        margin: relative margin > 0 on the estimate.
        padding_mode, input_size, grid: as :func:`structnets.conv_norms.conv_squared_norm_bound`.
        power_steps: batched power steps per call (≥ 1).

    Returns:
        (Q, the next vectors, whether the Cholesky test certified Q): Q a 0-d float64 tensor,
        differentiable in ``kernel``, NaN when ``kernel`` is not finite.
    """
    check_kernel(kernel)
    check_choice("padding_mode", padding_mode, PADDING_MODES)
    size = None if input_size is None else int_pair("input_size", input_size)
    chosen, alpha = resolve_grid((int(kernel.shape[2]), int(kernel.shape[3])), padding_mode, size, grid)
    scaled, exponent, finite = scale_kernel(kernel)
    frequencies = chosen[0] * (chosen[1] // 2 + 1)
    n = min(int(kernel.shape[0]), int(kernel.shape[1]))
    if (
        vectors is not None
        and vectors.shape == (frequencies, n)
        and vectors.dtype == torch.complex128
        and vectors.device == kernel.device
    ):
        gram, relative = correlation_gram(scaled, chosen)
        with torch.no_grad():
            estimates, at = _power_steps(gram, vectors, power_steps)
            top, where = estimates.max(dim=0)
            frobenius = torch.linalg.vector_norm(scaled.detach())
            estimate, norm, is_finite = torch.stack((top, frobenius, finite.to(torch.float64))).tolist()
        # ‖K‖_F² computed in float64 errs by ≤ γ_{numel + 1}; doubled
        absolute = _up(_up(relative * _up(norm * norm)) * (1.0 + _gamma(2 * kernel.numel() + 2)))
        candidate = (1.0 + margin) * estimate
        certified = cholesky_certificate(gram, candidate, absolute) if is_finite == 1.0 else None
        if certified is not None:
            index = int(where)
            surrogate = (1.0 + margin) * rayleigh_quotient(scaled, index, chosen, at[index])
            square = _straight_through(surrogate, torch.full_like(surrogate.detach(), certified))
            return _unscale(square, alpha, finite, exponent), at.clone(), True
    exact_gram = gram_matrices(scaled, chosen)
    with torch.no_grad():
        eigenvalues, eigenvectors = torch.linalg.eigh(exact_gram)
        tops = eigenvalues[:, -1]
        index = int(tops.argmax())
        top = tops[index].clamp_min(0.0)
        following = eigenvectors[:, :, -1].contiguous()
    if scaled.requires_grad:
        top = _straight_through(rayleigh_quotient(scaled, index, chosen, following[index]), top)
    return _unscale(exact_margins(top, scaled, chosen), alpha, finite, exponent), following, False


def _unscale(square: torch.Tensor, alpha: float, finite: torch.Tensor, exponent: torch.Tensor) -> torch.Tensor:
    """Q'/(1 − α), NaN for a non-finite kernel, times 2^{−2e} rounded up (as conv_squared_norm_bound)."""
    if alpha > 0:
        square = square / (1.0 - alpha) * (1.0 + 1e-15)
    square = torch.where(finite, square, torch.full_like(square, math.nan))
    return unscale_square(square, exponent)


__all__ = ["cholesky_certificate", "correlation_gram", "training_conv_square"]
