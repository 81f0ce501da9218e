"""The Swish bump ψ^τ and the constants that bound how far it strays from the ReLU trapezoid.

Li, Li, Wang, Tang, *Approximation to Smooth Functions by Low-Rank Swish Networks* (ICML 2025),
Sec. 4: with ρ(z) = z·σ(z) (Swish / SiLU),

    ψ^τ(u) = (1/τ)·(ρ(τ(u+2)) − ρ(τ(u+1)) − ρ(τ(u−1)) + ρ(τ(u−2))),

which tends, as τ → ∞, to the trapezoid ψ(u) = ReLU(u+2) − ReLU(u+1) − ReLU(u−1) + ReLU(u−2)
(0 outside (−2, 2), 1 on [−1, 1]); Σ_{k∈ℤ} ψ(u − 3k) = 1 is Yarotsky's partition of unity.

Everything here rests on the deviation g(z) = ρ(z) − ReLU(z) = −|z|·σ(−|z|), for which
|g(z)| = |z|/(1 + e^{|z|}) ≤ |z|·e^{−|z|}, with maximum g* = z* − 1 ≈ 0.2785 at z* = 1 + W(1/e),
decreasing for |z| ≥ z*. Hence ψ^τ(u) − ψ(u) = (1/τ)·Σ_a ±g(τ(u − a)), a ∈ {−2, −1, 1, 2}.
"""

from __future__ import annotations

import math

import torch

from .._validation import check_real

# z* solves e^z (z − 1) = 1 (the maximiser of |z|/(1 + e^|z|)); g* = z* − 1 is the maximum.
_Z_STAR = 1.2784645427610738
G_MAX = _Z_STAR - 1.0
# sup ρ' = ρ'(2.3994...) = 1.09984; ρ'(−z) = 1 − ρ'(z), so ρ' ∈ [−0.09984, 1.09984] and
# |ψ^τ| ≤ sup ρ' − inf ρ' = 2·sup ρ' − 1 < 1.2 (ψ^τ is a difference of two averages of ρ'(τ·)).
SWISH_DERIVATIVE_MAX = 1.09983933
BUMP_MAX = 1.2


def swish_bump(u: torch.Tensor, tau: float) -> torch.Tensor:
    """Evaluate the Swish bump ψ^τ elementwise.

    Args:
        u: any shape, the (already rescaled) argument.
        tau: the sharpness τ > 0.

    Returns:
        ψ^τ(u) = (1/τ)(ρ(τ(u+2)) − ρ(τ(u+1)) − ρ(τ(u−1)) + ρ(τ(u−2))), same shape as ``u``
        (Li et al., ICML 2025, Sec. 4).
    """
    tau = check_real("tau", tau, low=0.0, low_open=True)
    silu = torch.nn.functional.silu
    return (silu(tau * (u + 2)) - silu(tau * (u + 1)) - silu(tau * (u - 1)) + silu(tau * (u - 2))) / tau


def trapezoid(u: torch.Tensor) -> torch.Tensor:
    """The ReLU limit ψ(u) = ReLU(u+2) − ReLU(u+1) − ReLU(u−1) + ReLU(u−2) of :func:`swish_bump`."""
    relu = torch.relu
    return relu(u + 2) - relu(u + 1) - relu(u - 1) + relu(u - 2)


def deviation_envelope(s: float) -> float:
    """G(s) = sup_{|z| ≥ s} |g(z)|, g = Swish − ReLU: g* for s ≤ z*, else s/(1 + e^s)."""
    s = max(float(s), _Z_STAR)
    return s / (1.0 + math.exp(s)) if s < 700 else s * math.exp(-s)


def _envelope_sum(tau: float, weight) -> float:
    # Σ_{j ≥ 1} G(τ j)·weight(j); the terms fall like τj·e^{−τj}·poly(j), so stop once they
    # underflow (τj > 745) — the remainder is below the float64 resolution of the sum.
    total, j = 0.0, 1
    while tau * j < 745.0 and j < 1_000_000:
        total += deviation_envelope(tau * j) * weight(j)
        j += 1
    return total


def partition_sum_error(tau: float) -> float:
    """ε_T ≥ sup_{y∈[0,3M]} |Σ_{k=0}^{M} ψ^τ(y − 3k) − 1|, for every M.

    The sum telescopes to (1/τ)(ρ(τ(y+2)) − ρ(τ(y+1)) − ρ(τ(y−3M−1)) + ρ(τ(y−3M−2))), whose ReLU
    part is exactly 1 on [−1, 3M+1]; the four g-terms have |argument| ≥ τ, τ, 2τ, 2τ, so
    ε_T = 2(G(τ) + G(2τ))/τ (≈ 2e^{−τ} for large τ).
    """
    tau = check_real("tau", tau, low=0.0, low_open=True)
    return 2.0 * (deviation_envelope(tau) + deviation_envelope(2 * tau)) / tau


def absolute_sum_excess(tau: float) -> float:
    """ε_A ≥ sup_y Σ_k |ψ^τ(y − 3k)| − 1.

    |ψ^τ| ≤ ψ + L with L(u) = (1/τ)Σ_a |g(τ(u − a))|; Σ_k ψ(y−3k) ≤ 1 and the breakpoints
    {3k + a} are the integers not divisible by 3, at distances t + j and 1 − t + j (j ≥ 0) from y,
    so Σ_k L(y − 3k) ≤ (2/τ)(g* + Σ_{j≥1} G(τj)). This is O(1/τ): near a breakpoint the Swish
    corner is rounded over a width 1/τ.
    """
    tau = check_real("tau", tau, low=0.0, low_open=True)
    return 2.0 * (G_MAX + _envelope_sum(tau, lambda j: 1.0)) / tau


def far_moment(tau: float, beta: float) -> float:
    """D ≥ sup_y Σ_k |ψ^τ(y − 3k)|·(|y − 3k|^β − 2^β)_+ (mass of the bumps outside their cells).

    Where |u| > 2 the trapezoid vanishes, so |ψ^τ(u)| ≤ L(u); a g-term at breakpoint n = 3k + a
    and distance r = |y − n| has |y − 3k| ≤ r + 2, and r ∈ [j, j+1] gives the factor
    G(τj)((j + 3)^β − 2^β); summing the two families of distances:
    D = (2/τ) Σ_{j≥0} G(τj)((j+3)^β − 2^β).
    """
    tau = check_real("tau", tau, low=0.0, low_open=True)
    beta = check_real("beta", beta, low=0.0, low_open=True)
    first = G_MAX * (3.0**beta - 2.0**beta)
    return 2.0 * (first + _envelope_sum(tau, lambda j: (j + 3.0) ** beta - 2.0**beta)) / tau


def trapezoid_moment(beta: float) -> float:
    """S_β ≥ sup_y Σ_{k∈ℤ} ψ(y − 3k)·|y − 3k|^β for the ReLU trapezoid ψ (a rigorous upper bound).

    The Taylor error of the patch at m, weighted by the partition: at y a plateau point (|u| ≤ 1)
    only one bump is nonzero and the sum is |u|^β ≤ 1; on a transition (u ∈ [1, 2]) two bumps
    share y: (2 − u)u^β + (u − 1)(3 − u)^β, symmetric about u = 1.5. The maximum is taken on a grid
    of 20,001 points of [1, 2] plus the Lipschitz slack L·h/2 with
    L = max|d/du| ≤ 2·2^β + 2β·2^{β−1} (so the value is an upper bound, ~10⁻⁴·2^β above the true
    sup, which is 1.5^β for every β measured, 0.5 … 5.5). The paper's and our earlier bound used 2^β (the
    largest |u|^β on the support of one bump).
    """
    beta = check_real("beta", beta, low=0.0, low_open=True)
    import numpy as np

    u = np.linspace(1.0, 2.0, 20001)
    values = (2.0 - u) * u**beta + (u - 1.0) * (3.0 - u) ** beta
    slack = (2.0 * 2.0**beta + 2.0 * beta * 2.0 ** max(beta - 1.0, 0.0)) * (u[1] - u[0]) / 2.0
    return float(max(1.0, values.max() + slack))


def bump_moment(tau: float, beta: float) -> float:
    """W ≥ sup_y Σ_{k∈ℤ} |ψ^τ(y − 3k)|·|y − 3k|^β for the Swish bump (a rigorous upper bound).

    This is the factor that multiplies C_T R (3M)^{−β} in the Taylor-plus-bump part of the
    construction's error at d = 1, with the Swish corners included; the old split
    2^β(1 + ε_A) + D bounds it too but counts the O(1/τ) rounding at full weight 2^β, although it
    sits at the breakpoints |u| ∈ {1, 2}, where the trapezoid weights are small. The sum is
    periodic (period 3) and even in y, so y ∈ [0, 1.5]. Terms k ∈ {−1, 0, 1} (|u| ≤ 4.5) are
    evaluated in float64 on 150,001 points, plus the Lipschitz slack 3·(2.4·4.5^β + 1.2β·4.5^{β−1})·h/2
    (|ψ^τ'| ≤ 2·(sup ρ' − inf ρ') < 2.4, |ψ^τ| ≤ 1.2); terms |k| ≥ 2 have |u| ≥ 4.5 > 2, where
    ψ = 0 and |ψ^τ(u)| ≤ (4/τ)·G(τ(|u| − 2)) (:func:`deviation_envelope`), summed as a constant.
    Returns min(that, S_β + 2^β ε_A + D) with S_β from :func:`trapezoid_moment` (both valid).
    """
    tau = check_real("tau", tau, low=0.0, low_open=True)
    beta = check_real("beta", beta, low=0.0, low_open=True)
    y = torch.linspace(0.0, 1.5, 150001, dtype=torch.float64)
    total = torch.zeros_like(y)
    for k in (-1, 0, 1):
        u = y - 3.0 * k
        total = total + swish_bump(u, tau).abs() * u.abs() ** beta
    h = 1.5 / 150000
    slack = 3.0 * (2.4 * 4.5**beta + 1.2 * beta * 4.5 ** max(beta - 1.0, 0.0)) * h / 2.0
    # |k| ≥ 2, both signs: |u| ∈ [3|k| − 1.5, 3|k| + 1.5].
    far, k = 0.0, 2
    while tau * (3 * k - 3.5) < 745.0 and k < 1_000_000:
        far += 2.0 * (4.0 / tau) * deviation_envelope(tau * (3 * k - 3.5)) * (3 * k + 1.5) ** beta
        k += 1
    direct = float(total.max()) + slack + far
    split = trapezoid_moment(beta) + 2.0**beta * absolute_sum_excess(tau) + far_moment(tau, beta)
    return min(direct, split)


__all__ = [
    "BUMP_MAX",
    "G_MAX",
    "absolute_sum_excess",
    "bump_moment",
    "deviation_envelope",
    "far_moment",
    "partition_sum_error",
    "swish_bump",
    "trapezoid",
    "trapezoid_moment",
]
