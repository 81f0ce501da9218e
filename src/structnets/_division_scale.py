"""The divisor of a norm-constrained map, widened for the rounding of V/s (``functional.division_scale``)."""

from __future__ import annotations

import math

import torch


def _up(value: float) -> float:
    """One step towards +∞: ≥ the exact result of the correctly rounded operation that gave ``value``."""
    return math.nextafter(value, math.inf) if math.isfinite(value) else value


def division_factor(dtype: torch.dtype, rank: int, taps: int, numel: int) -> float:
    """f of :func:`division_scale` for V of this dtype and shape (a Python float, rounded up).

    Not cached: a dozen float operations (≈ 2 µs), and ``torch.compile`` traces through it.
    """
    info = torch.finfo(dtype)
    unit = info.eps / 2.0
    if info.bits < 32:
        # CPU float16/bfloat16 arithmetic computes in float32 and rounds again: a second rounding
        # of ≤ 2⁻²⁴ relative (and its product with the first), covered by 2⁻²³
        unit += 2.0**-23
    tiny = info.smallest_normal * info.eps / 2.0  # half the smallest subnormal: an underflow's error
    relative = _up(1.0 + _up(unit * math.sqrt(taps * rank)))
    absolute = _up(tiny * math.sqrt(taps * numel))
    # fl(B·f) ≥ B·f(1 − u − 2⁻²⁴) for the product in the dtype (B·f ≥ 1, normal range, where it is
    # used): torch rounds the Python f to float32 before multiplying a float32 (or float16/bfloat16) B,
    # a rounding of ≤ 2⁻²⁴ besides the product's own (float32: s was 5.6·10⁻⁸ short without it)
    product = unit + (2.0**-24 if info.bits <= 32 else 0.0)
    return _up(_up(_up(relative / (1.0 - absolute)) / (1.0 - product)) * (1.0 + 4 * 2.0**-53))


def division_scale(bound: torch.Tensor, weight: torch.Tensor, taps: int = 1) -> torch.Tensor:
    """The divisor s of a norm-constrained map's A = fl(V/s): ‖fl(V/s)‖ ≤ 1 for the A the forward uses.

    ``bound`` is B ≥ ‖V‖ (the operator norm; in V's dtype, rounded up). s = 1 where B ≤ 1: V/1 is
    exact, so ‖A‖ = ‖V‖ ≤ B = min(1, B), the layers' certificate. (An s = fl(B·f) > 1 for B in
    (1/f, 1] would prove only ‖A‖ ≤ B(1 + u√(Tr))/s, above B where s < 1 + u√(Tr).) Where B > 1,
    s = fl(B·f) ≥ B·f(1 − u − 2⁻²⁴) (2⁻²⁴: torch's cast of f to float32; not in float64) and
    the certificate is 1: dividing in V's dtype moves each
    entry a of V/s by ≤ u|a| + η (u its unit round-off, η half its smallest subnormal), so the
    rounding error E has ‖E‖ ≤ Σ_t ‖E_t‖₂ ≤ √T‖E‖_F ≤ √T(u‖V‖_F/s + η√numel) (T taps of a
    convolution, each a shift of norm ≤ 1 with zero or circular padding; T = 1 for a matrix), and
    ‖V‖_F ≤ √r·B (r = min of the first two dimensions; for a convolution, Parseval on a grid with
    Nᵢ ≥ kᵢ). Hence s ≥ B·(1 + u√(Tr))/(1 − η√(T·numel)) gives ‖fl(V/s)‖ ≤ 1; f is that factor,
    widened for the rounding of B·f itself. In float32 f − 1 ≈ 6·10⁻⁷ at r = 100; in bfloat16 ≈ 4 %
    at r = 100 (its u = 2⁻⁸). Without it a bfloat16 kernel V/B measured ‖A‖ = 1.00044 against the
    certificate 1 (2026-12-06).

    Args:
        bound: 0-d B in ``weight``'s dtype (differentiable; NaN stays NaN, so a non-finite V shows).
        weight: V, (out, in) or (c_out, c_in, k_h, k_w).
        taps: T = k_h·k_w (1 for a matrix).

    Returns:
        0-d s ≥ 1 in ``weight``'s dtype, differentiable through B where B > 1 (s jumps from 1 to
        ≈ f at B = 1: f − 1 ≈ 6·10⁻⁷ in float32, a few % in bfloat16).
    """
    rank = min(int(weight.shape[0]), int(weight.shape[1]))
    # B ≤ 1 (NaN compares False, so NaN stays NaN): exact division, ‖A‖ = ‖V‖ ≤ B. Where B > 1,
    # fl(B·f) ≥ B > 1 (f ≥ 1, rounding is monotone): no clamp needed
    return torch.where(bound <= 1.0, 1.0, bound * division_factor(weight.dtype, rank, taps, weight.numel()))


__all__ = ["division_factor", "division_scale"]
