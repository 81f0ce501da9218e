"""Operator norms of stride-1 2-D convolutions: the exact circular norm and certified upper bounds.

A convolution with kernel K ∈ ℝ^{c_out × c_in × k_h × k_w} acts on images as a linear operator; its
ℓ₂ operator norm ‖K‖_op, not the norm of the reshaped kernel, is what a Lipschitz certificate needs.
Write K̂(ω) = Σ_{p,q} K[:, :, p, q] e^{−i(ω₁p + ω₂q)} ∈ ℂ^{c_out × c_in} for ω on the torus [0, 2π)².

* **Circular padding, input n₁ × n₂** (Sedghi, Gupta, Long, *The Singular Values of Convolutional
  Layers*, ICLR 2019, Thm. 6): the operator is block-diagonalised by the 2-D DFT, so
  ‖K‖_op = max over the n₁n₂ frequencies ω = (2πj₁/n₁, 2πj₂/n₂) of σ₁(K̂(ω)). (Taps wrapped
  modulo n give the same K̂(ω) at those frequencies, so this holds for kernels of any size.)
* **Zero padding, input n₁ × n₂** ("same" output size, pads l + r = k − 1): the operator is
  R C E, with E the zero-filling embedding of the n₁ × n₂ window into an (n₁ + k_h − 1) ×
  (n₂ + k_w − 1) torus, C the circular convolution there and R the restriction to the window
  (every input tap an output in the window reads lies in a window of n + k − 1 consecutive
  positions, which the torus holds without overlap). So ‖K‖_op ≤ the circular norm on that grid
  (the bound of Delattre, Barthélemy, Allauzen, *Spectral norm of convolutional layers with
  circular and zero paddings*, 2024, tight to a few per cent).
* **Every input size and both paddings**: all the operators above are compressions of the
  convolution on ℓ²(ℤ²), whose norm is M^{1/2}, M = sup_ω λ_max(K̂(ω)ᴴK̂(ω)). Sampling on an
  N₁ × N₂ grid gives λ_grid ≤ M; conversely, let ω* attain M with top eigenvector u and
  q(ω) = uᴴK̂(ω)ᴴK̂(ω)u, a real non-negative trigonometric polynomial of degree d₁ = k_h − 1,
  d₂ = k_w − 1 with max q = q(ω*) = M and ∇q(ω*) = 0. Bernstein's inequality (‖∂ᵢ²q‖ ≤ dᵢ²M,
  ‖∂₁∂₂q‖ ≤ d₁d₂M) and Taylor's theorem at the grid point nearest ω* (|δᵢ| ≤ π/Nᵢ) give
  λ_grid ≥ q(ω_g) ≥ M(1 − α), α = (π²/2)(d₁/N₁ + d₂/N₂)², so M ≤ λ_grid / (1 − α). With
  N = 32(k − 1) the bound on ‖K‖_op is within 1 % of the supremum. (The same second-order
  sampling argument as the scalar bounds of Araujo, Negrevergne, Chevaleyre, Atif, *On Lipschitz
  regularization of convolutional layers using Toeplitz matrix theory*, AAAI 2021; written out
  here for the matrix case.)

Certification, as :func:`structnets.functional.squared_norm_bound` does for matrices: K is
scaled by an exact power of two (max |K| ∈ [1, 2)), K̂ is taken by a float64 FFT, each λ_max by a
float64 Hermitian eigensolver, and the result is enlarged to cover both: the FFT error of each
channel pair's spectrum is ≤ η‖·‖ (Higham, *Accuracy and Stability of Numerical Algorithms*, 2002,
Thm. 24.2: η ≈ log₂(N₁N₂)·O(u); we take 64·u·(log₂(N₁N₂) + 1), a wide margin over the library's
twiddle accuracy), so by Parseval every per-frequency error matrix E(ω) has ‖E(ω)‖₂ ≤
η·√(N₁N₂)·‖K‖_F, added to the norm; the Gram matrix and eigensolver err by ≤ 16n²u relative
(n = max(c_in, c_out)), divided out. The returned Q ≥ ‖K‖_op² holds for the stored kernel in exact
arithmetic, up to the assumption that the FFT meets that (generous) error bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from ._validation import check_choice, check_int
from .functional import _ldexp_round_up, _round_up, _sqrt_up, _straight_through

PADDING_MODES: tuple[str, ...] = ("zeros", "circular")

_U = 2.0**-53


def check_kernel(kernel: object) -> torch.Tensor:
    if not isinstance(kernel, torch.Tensor):
        raise TypeError(f"`kernel` must be a torch.Tensor, got {type(kernel).__name__}")
    if kernel.dim() != 4:
        raise ValueError(f"`kernel` must have shape (c_out, c_in, k_h, k_w), got shape {tuple(kernel.shape)}")
    if not kernel.is_floating_point():
        raise TypeError(f"`kernel` must have a real floating dtype, got {kernel.dtype}")
    if kernel.numel() == 0:
        raise ValueError(f"`kernel` must be non-empty, got shape {tuple(kernel.shape)}")
    return kernel


def int_pair(name: str, value: object, low: int = 1) -> tuple[int, int]:
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        if len(value) != 2:
            raise ValueError(f"`{name}` must be an int or a pair of ints, got {value!r}")
        return check_int(name, value[0], low=low), check_int(name, value[1], low=low)
    size = check_int(name, value, low=low)
    return size, size


def torus_grid(kernel_size: tuple[int, int]) -> tuple[int, int]:
    """Default sampling grid of the every-size bound: Nᵢ = 32(kᵢ − 1) (1 for a 1-tap axis).

    Then α = (π²/2)(d₁/N₁ + d₂/N₂)² ≤ π²/512 ≈ 0.019 and the bound on ‖K‖_op exceeds the sampled
    maximum by at most 1/√(1 − α) − 1 < 1 %.
    """
    return tuple(1 if k == 1 else 32 * (k - 1) for k in kernel_size)  # type: ignore[return-value]


def sampling_slack(kernel_size: tuple[int, int], grid: tuple[int, int]) -> float:
    """α = (π²/2)(d₁/N₁ + d₂/N₂)², rounded up: M ≤ λ_grid / (1 − α) for degree dᵢ = kᵢ − 1.

    Raises:
        ValueError: ``grid`` too coarse for the kernel (α ≥ 1/2), naming ``grid``.
    """
    (k1, k2), (n1, n2) = kernel_size, grid
    alpha = (math.pi**2 / 2.0) * ((k1 - 1) / n1 + (k2 - 1) / n2) ** 2
    alpha = alpha * (1.0 + 1e-12) + 1e-300 if alpha > 0 else 0.0
    if alpha >= 0.5:
        raise ValueError(
            f"`grid` {grid} is too coarse for a {k1}×{k2} kernel (sampling slack α = {alpha:.3g} ≥ 0.5); "
            f"use at least {torus_grid(kernel_size)}"
        )
    return alpha


def frequency_matrices(kernel: torch.Tensor, grid: tuple[int, int]) -> torch.Tensor:
    """Return K̂ at the frequencies (2πj₁/N₁, 2πj₂/N₂), j₂ ≤ N₂/2, as complex128 (N₁, N₂//2+1, c_out, c_in).

    The other half of the spectrum holds the complex conjugates (same singular values). Taps
    beyond the grid wrap modulo Nᵢ (the circular convolution on that grid).
    """
    check_kernel(kernel)
    n1, n2 = int_pair("grid", grid)
    k = kernel.to(torch.float64)
    kh, kw = k.shape[-2:]
    if kh > n1 or kw > n2:
        # wrap taps modulo the grid (rfft2 would crop them otherwise)
        folded = torch.zeros(*k.shape[:2], n1, n2, dtype=k.dtype, device=k.device)
        for p in range(kh):
            for q in range(kw):
                folded[:, :, p % n1, q % n2] = folded[:, :, p % n1, q % n2] + k[:, :, p, q]
        k = folded
    spectrum = torch.fft.rfft2(k, s=(n1, n2))
    return spectrum.permute(2, 3, 0, 1)


def _frequency_square(scaled: torch.Tensor, index: tuple[int, int], grid: tuple[int, int]) -> torch.Tensor:
    """λ_max(K̂(ω)ᴴK̂(ω)) at ω = 2π(j₁/N₁, j₂/N₂), differentiably (the direct sum over the taps)."""
    matrix = _frequency_matrix(scaled, index, grid)
    adjoint = matrix.conj().T
    gram = adjoint @ matrix if matrix.shape[1] <= matrix.shape[0] else matrix @ adjoint
    return torch.linalg.eigvalsh(gram)[-1].clamp_min(0.0)


def _gram_side(c_out: int, c_in: int) -> bool:
    """True when the Gram matrix is K̂ᴴK̂ (c_in × c_in, the smaller side), False for K̂K̂ᴴ."""
    return c_in <= c_out


def gram_matrices(scaled: torch.Tensor, grid: tuple[int, int]) -> torch.Tensor:
    """The computed Gram matrices Ĝ(ω) (K̂ᴴK̂ or K̂K̂ᴴ, the smaller side) on the half spectrum: (F, n, n) complex128.

    No gradient; F = N₁(N₂//2 + 1) in :func:`frequency_matrices`' order, n = min(c_out, c_in).
    """
    c_out, c_in = scaled.shape[:2]
    with torch.no_grad():
        spectrum = frequency_matrices(scaled.detach(), grid).reshape(-1, c_out, c_in)
        adjoint = spectrum.conj().transpose(-2, -1)
        return adjoint @ spectrum if _gram_side(c_out, c_in) else spectrum @ adjoint


def _fft_error(scaled: torch.Tensor, grid: tuple[int, int]) -> float:
    """η with ‖K̂_computed(ω) − K̂(ω)‖₂ ≤ η·√(N₁N₂)·‖K‖_F at every frequency (module docstring)."""
    n1, n2 = grid
    if n1 == 1 and n2 == 1:
        taps = scaled.shape[2] * scaled.shape[3]
        return 4.0 * taps * taps * _U
    return 64.0 * _U * (math.log2(n1 * n2) + 1.0)


def exact_margins(top: torch.Tensor, scaled: torch.Tensor, grid: tuple[int, int]) -> torch.Tensor:
    """Q' ≥ max σ₁(K̂(ω))² from the float64 top eigenvalue ``top`` of the computed Gram matrices.

    The Gram matrix and eigensolver err by ≤ 16n²u relative (divided out); the FFT by the absolute
    :func:`_fft_error` (added to the root).
    """
    n1, n2 = grid
    n = max(int(scaled.shape[0]), int(scaled.shape[1]))
    delta = 16.0 * n * n * _U + 1e-14
    frobenius = torch.linalg.vector_norm(scaled.detach()) * (1.0 + 1e-14)
    absolute = _fft_error(scaled, grid) * math.sqrt(n1 * n2) * frobenius
    root = torch.sqrt(top / (1.0 - delta)) + absolute
    # the few float64 operations of the margins themselves: 1e-13 relative covers them
    return root.square() * (1.0 + 1e-13)


def rayleigh_quotient(scaled: torch.Tensor, index: int, grid: tuple[int, int], vector: torch.Tensor) -> torch.Tensor:
    """vᴴĜ(ω)v = ‖K̂(ω)v‖² (or ‖K̂(ω)ᴴv‖²) at half-spectrum index ``index``, differentiably (the direct tap sum).

    With v the top eigenvector of Ĝ(ω) its gradient is that of λ_max(Ĝ(ω)) (a simple eigenvalue).
    """
    j1, j2 = divmod(index, grid[1] // 2 + 1)
    matrix = _frequency_matrix(scaled, (j1, j2), grid)
    image = matrix @ vector if _gram_side(matrix.shape[0], matrix.shape[1]) else matrix.conj().T @ vector
    return image.abs().square().sum()


def _frequency_matrix(scaled: torch.Tensor, index: tuple[int, int], grid: tuple[int, int]) -> torch.Tensor:
    """K̂(ω) at ω = 2π(j₁/N₁, j₂/N₂), differentiably (the direct sum over the taps)."""
    kh, kw = scaled.shape[2], scaled.shape[3]
    p = torch.arange(kh, dtype=torch.float64, device=scaled.device)
    q = torch.arange(kw, dtype=torch.float64, device=scaled.device)
    phase = 2.0 * math.pi * (index[0] * p[:, None] / grid[0] + index[1] * q[None, :] / grid[1])
    twiddle = torch.polar(torch.ones_like(phase), -phase)
    return (scaled.to(torch.complex128) * twiddle).sum(dim=(2, 3))


def _grid_square(scaled: torch.Tensor, grid: tuple[int, int]) -> torch.Tensor:
    """Float64 Q' ≥ max over the grid of σ₁(K̂(ω))² of the scaled kernel (FFT and eigensolver errors covered)."""
    n1, n2 = grid
    c_out, c_in = scaled.shape[:2]
    if n1 == 1 and n2 == 1:
        # one frequency: K̂ = Σ taps (a real matrix), summed exactly enough; a 1×1 kernel is the matrix itself
        matrix = scaled.sum(dim=(2, 3))
        gram = matrix.T @ matrix if c_in <= c_out else matrix @ matrix.T
        top = torch.linalg.eigvalsh(gram)[-1].clamp_min(0.0)
    else:
        with torch.no_grad():
            tops = torch.linalg.eigvalsh(gram_matrices(scaled, grid))[..., -1]
            top = tops.amax().clamp_min(0.0)
        if scaled.requires_grad:
            # The value is the certified maximum over all frequencies; its gradient is that of
            # λ_max at the maximising frequency (the gradient of a max), computed there alone:
            # one small eigensolve instead of a backward pass through every frequency's.
            index = int(tops.argmax())
            top = _straight_through(_frequency_square(scaled, divmod(index, n2 // 2 + 1), grid), top)
    return exact_margins(top, scaled, grid)


def scale_kernel(kernel: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(K·2^e in float64, e, finite): 2^e exact with max |K·2^e| ∈ [1, 2); zeros when K is not finite."""
    k = kernel.to(torch.float64)
    peak = k.detach().abs().amax()
    finite_peak = torch.where(torch.isfinite(peak) & (peak > 0), peak, torch.ones_like(peak))
    exponent = 1 - torch.frexp(finite_peak).exponent.to(torch.float64)
    finite = torch.isfinite(k).all()
    # A kernel whose largest entry is subnormal (< 2^-1022) needs e up to 1075, and 2^e overflows
    # float64 above e = 1023 (inf·K, then NaN: no bound for a finite kernel). Scale in two factors
    # then: both are ≥ 1 there, and scaling up by a power of two is exact; below e = 1000 the
    # second factor is 2^0 = 1, the single exact product as before.
    rest = (exponent - 1000.0).clamp_min(0.0)
    scaled = k * torch.exp2(exponent - rest) * torch.exp2(rest)
    return torch.where(finite, scaled, torch.zeros_like(k)), exponent, finite


def unscale_square(square: torch.Tensor, exponent: torch.Tensor) -> torch.Tensor:
    """square·2^{−2e} in float64, never below the exact value, for every e :func:`scale_kernel` gives.

    ``_ldexp_round_up`` moves a result that lost value one step up, unless its partial product
    square·2^{−2e+1022} itself underflowed to 0: then it returns 0, a Q of 0 for a non-zero kernel
    (seen for a kernel whose largest entry is below 2^-1048, e ≥ 1049). Its partial product is 0
    only when the exact value is below 2^-1075·2^-1022, or when −2e < −2096 (and square < 2^1024),
    so the exact value is then below the smallest subnormal 2^-1074, which bounds it.
    """
    result = _ldexp_round_up(square, -2.0 * exponent)
    lost = (result.detach() == 0) & (square.detach() > 0)
    return _straight_through(result, torch.where(lost, torch.full_like(result.detach(), 2.0**-1074), result.detach()))


def resolve_grid(
    kernel_size: tuple[int, int], padding_mode: str, input_size: tuple[int, int] | None, grid: object
) -> tuple[tuple[int, int], float]:
    """The sampling grid and the slack α for the requested certificate."""
    if input_size is None:
        chosen = torus_grid(kernel_size) if grid is None else int_pair("grid", grid)
        return chosen, sampling_slack(kernel_size, chosen)
    if grid is not None:
        raise ValueError(f"`grid` is only for the every-size bound (input_size=None), got grid={grid!r}")
    if padding_mode == "circular":
        return input_size, 0.0
    return (input_size[0] + kernel_size[0] - 1, input_size[1] + kernel_size[1] - 1), 0.0


def conv_squared_norm_bound(
    kernel: torch.Tensor,
    padding_mode: str = "zeros",
    input_size: int | tuple[int, int] | None = None,
    grid: int | tuple[int, int] | None = None,
) -> torch.Tensor:
    """Return a float64 Q with Q ≥ ‖K‖_op² for the stride-1 "same" convolution with ``kernel``.

    Args:
        kernel: (c_out, c_in, k_h, k_w), any floating dtype.
        padding_mode: ``"zeros"`` or ``"circular"``.
        input_size: (n₁, n₂) (or n): certify the operator on that input size only — exact for
            ``"circular"`` (Sedghi et al. 2019), the circular norm on the (n + k − 1)-grid for
            ``"zeros"``. None: a bound for every input size and both paddings (the sampled
            torus, see the module docstring).
        grid: (N₁, N₂) sampling grid of the every-size bound (default :func:`torus_grid`).

    Returns:
        a 0-d float64 tensor, differentiable in ``kernel``; NaN when ``kernel`` is not finite.

    Formula: Q = ((λ̂/(1 − δ))^{1/2} + η√(N₁N₂)‖K‖_F)²·(1 + 10⁻¹³) / (1 − α), λ̂ the largest
    float64 eigenvalue over the grid, α = 0 for a given input size.
    """
    check_kernel(kernel)
    check_choice("padding_mode", padding_mode, PADDING_MODES)
    size = None if input_size is None else int_pair("input_size", input_size)
    kernel_size = (int(kernel.shape[2]), int(kernel.shape[3]))
    chosen, alpha = resolve_grid(kernel_size, padding_mode, size, grid)
    scaled, exponent, finite = scale_kernel(kernel)
    square = _grid_square(scaled, chosen)
    if alpha > 0:
        square = square / (1.0 - alpha) * (1.0 + 1e-15)
    square = torch.where(finite, square, torch.full_like(square, math.nan))
    return unscale_square(square, exponent)


def conv_norm_bound(
    kernel: torch.Tensor,
    padding_mode: str = "zeros",
    input_size: int | tuple[int, int] | None = None,
    grid: int | tuple[int, int] | None = None,
) -> torch.Tensor:
    """Return B ≥ ‖K‖_op in ``kernel``'s dtype, rounded up (:func:`conv_squared_norm_bound`'s √).

    Raises:
        ValueError: ``kernel`` has NaN or ±∞ entries (no bound exists).
    """
    check_kernel(kernel)
    if not bool(torch.isfinite(kernel.detach()).all()):
        raise ValueError("`kernel` must be finite: it has NaN or ±inf entries, so no bound on its operator norm exists")
    square = conv_squared_norm_bound(kernel, padding_mode, input_size, grid)
    return _round_up(_sqrt_up(square), kernel.dtype)


def circular_conv_norm(kernel: torch.Tensor, input_size: int | tuple[int, int]) -> torch.Tensor:
    """Return the exact operator norm of the circular convolution on an n₁ × n₂ input (a reference).

    max over the n₁n₂ DFT frequencies of σ₁(K̂(ω)), by float64 SVD (Sedghi, Gupta, Long, ICLR 2019,
    Thm. 6); not rounded up, so not a certificate: :func:`conv_norm_bound` is.

    Args:
        kernel: (c_out, c_in, k_h, k_w).
        input_size: (n₁, n₂) or n.

    Returns:
        a 0-d float64 tensor.
    """
    check_kernel(kernel)
    size = int_pair("input_size", input_size)
    spectrum = frequency_matrices(kernel.detach(), size)
    return torch.linalg.matrix_norm(spectrum, ord=2).amax()


__all__ = [
    "PADDING_MODES",
    "circular_conv_norm",
    "conv_norm_bound",
    "conv_squared_norm_bound",
    "frequency_matrices",
    "gram_matrices",
    "resolve_grid",
    "sampling_slack",
    "scale_kernel",
    "torus_grid",
    "unscale_square",
]
