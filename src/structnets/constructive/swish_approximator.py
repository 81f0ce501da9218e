"""The explicit low-rank Swish network that approximates a Hölder function (a proof as code).

Li, Li, Wang, Tang, *Approximation to Smooth Functions by Low-Rank Swish Networks* (ICML 2025),
Sec. 4 (Taylor patches localised by Swish bumps, products by Swish sub-networks). For f in the
Hölder ball C^{β,R}([0,1]^d) (derivatives up to order κ = ⌈β⌉ − 1, and every κ-th derivative
(β−κ)-Hölder with constant R in the ‖·‖_∞ distance), with grid points c_m = m/M, m ∈ {0..M}^d:

    F^τ(x) = Σ_m φ_m^τ(x) P_m(x),   φ_m^τ(x) = Π_i ψ^τ(3M x_i − 3m_i),
    P_m(x) = Σ_{|α|≤κ} D^α f(c_m)/α! · (x − c_m)^α.

We expand P_m in monomials, P_m(x) = Σ_γ a_{m,γ} x^γ, so F^τ = Σ_γ x^γ Φ_γ with
Φ_γ = Σ_m a_{m,γ} φ_m^τ: a linear layer, so only C(d+κ, d) − 1 final products are needed
instead of one per cell (the function computed is the paper's Σ_m P_m φ_m^τ).

Swish sub-networks (exact algebra, ρ(z) = zσ(z)):
  * identity:  ρ(z) − ρ(−z) = z exactly (2 units);
  * square:    2λ²(ρ(a/λ) + ρ(−a/λ)) = 2λ² h(a/λ), h(z) = z·tanh(z/2) ∈ [z²/2 − z⁴/24, z²/2],
               so |2λ²h(a/λ) − a²| ≤ a⁴/(12λ²) (2 units);
  * product:   ab = ((sa + b/s)² − (sa − b/s)²)/4 from two squares (4 units); with s² = B/A
               for |a| ≤ A, |b| ≤ B the error is ≤ A²B²/(3λ²).

The error bound proven (and evaluated) here, for every x ∈ [0,1]^d:

    |nn(x) − f(x)| ≤ T + L + P, where, with C_T = d^κ/κ! ≤ C(κ+d−1, d−1) and u_i = 3Mx_i − 3m_i,
    T = C_T R (3M)^{−β} S,   S = S_β (d = 1), min(2^β, d S_β) (d ≥ 2)   (Taylor term, c₄M^{−β})
        S_β = sup_y Σ_k ψ(y−3k)|y−3k|^β = 1.5^β (the trapezoid-weighted patch error;
        :func:`.swish_bump.trapezoid_moment`; it was 2^β, the largest weight on a bump's support)
    L = C_T R (3M)^{−β} (W − S)_+ + ‖f‖_∞((1+ε_T)^d − 1)              (bump term, c₅-like)
        W = min(2^β(1+ε_A)^d + d(1+ε_A)^{d−1} D,  d(1+ε_A)^{d−1} W_β(τ)),
        W_β(τ) ≥ sup_y Σ_k |ψ^τ(y−3k)||y−3k|^β (:func:`.swish_bump.bump_moment`).
    P = propagated error of the Swish products (∝ (M+1)^d/λ² at leading order, c₃).

The bump term: the Swish corners add O(1/τ) mass near the breakpoints |u| ∈ {1, 2}, but there the
trapezoid weights are small, so at d = 1 W_β(τ) equals S_β = 1.5^β to 4 digits for every τ ≥ 8
(β = 0.5 … 5.5): the rounding fits inside the Taylor term and the sup error does not move with τ
(measured: 7.3078·10⁻² at τ = 40 and at τ = 1000). The earlier split 2^β(1+ε_A) + D charged it
at weight 2^β and over-estimated by (2/1.5)^β.

Proof sketch. f − F^τ = Σ_m φ_m^τ (f − P_m) + f(1 − Σ_m φ_m^τ). Taylor's theorem with integral
remainder gives |f(x) − P_m(x)| ≤ (Σ_{|α|=κ} 1/α!) R ‖x − c_m‖_∞^β = C_T R ‖x − c_m‖_∞^β.
With u_i = 3Mx_i − 3m_i, Σ_m |φ_m^τ| max_i|u_i|^β is bounded two ways: max_i |u_i|^β ≤ 2^β +
Σ_i (|u_i|^β − 2^β)_+ gives 2^β A^d + d A^{d−1} D, and max_i |u_i|^β ≤ Σ_i |u_i|^β with the
tensor-product structure gives d A^{d−1} W_β(τ) (A, D, W_β, ε_T in :mod:`.swish_bump`); for the
trapezoid (τ → ∞) the same sums are 2^β (Σ_m Π_i ψ = 1 on the cube) and d S_β. Σ_m φ_m^τ =
Π_i (one telescoping sum) is within (1+ε_T)^d − 1 of 1.
The network computes F^τ except for the product approximations, tracked as (value bound,
error bound) pairs through every layer. Bounds are for exact arithmetic; float64 rounding adds
about λ·2⁻⁵² per product, negligible for λ ≤ 10⁶.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from .._validation import check_fits_in_memory, check_int, check_real
from .swish_bump import (
    absolute_sum_excess,
    bump_moment,
    far_moment,
    partition_sum_error,
    trapezoid_moment,
)
from .swish_layer_program import _assemble, multi_indices
from .swish_layer_program import _plan as _plan  # kept at its old import path

Target = Callable[[torch.Tensor], torch.Tensor]
Derivatives = Callable[[tuple[int, ...], torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class ErrorBound:
    """The three terms of the construction's sup-error bound (see the module docstring).

    Attributes:
        taylor: T = C_T R (2/(3M))^β, the Taylor-patch term (c₄ M^{−β}).
        leakage: L, what the smooth Swish bump adds over the ReLU trapezoid (c₅ term).
        product: P, the propagated error of the Swish square/product sub-networks (c₃/λ² term).
        total: T + L + P, a bound on sup_{x∈[0,1]^d} |nn(x) − f(x)|.
    """

    taylor: float
    leakage: float
    product: float

    @property
    def total(self) -> float:
        return self.taylor + self.leakage + self.product


@dataclass(frozen=True)
class SwishApproximation:
    """What :func:`swish_approximator` returns.

    Attributes:
        network: ``nn.Sequential``: ``Linear(d→W)``, Swish, then (``LowRankLinear(W, W, H_k)``,
            Swish) per further nonlinear layer, then ``Linear(W→1)``; input (n, d) → (n, 1).
        bound: the evaluated :class:`ErrorBound`.
        width: W, the nonlinear width of every Swish layer.
        stage_widths: units each Swish layer actually uses (≤ W; the rest are zero units).
        ranks: H_k, the widths of the bias-free linear layers between Swish layers.
        kappa: Taylor order κ = ⌈β⌉ − 1.
        f_sup: the bound used for ‖f‖_∞.
        paper_width: the width formula of the paper, 2C(d+1,d−1) + 4C(d+κ−2,d−1) +
            4C(d+κ−1,d−1) + 6(M+1)^d, for comparison with ``width``.
        details: the constants entering the bound: ε_A, ε_T, D (see :mod:`.swish_bump`) and C_T.
    """

    network: nn.Sequential
    bound: ErrorBound
    width: int
    stage_widths: tuple[int, ...]
    ranks: tuple[int, ...]
    kappa: int
    f_sup: float
    paper_width: int
    details: dict[str, float] = field(default_factory=dict)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Evaluate the network on (n, d) points; returns (n,)."""
        return self.network(x).squeeze(-1)

    @property
    def padding(self) -> int:
        """Zero units added so that every bias-free layer has rank ≤ width/3: W − max(stage_widths).

        0 when the construction itself gives the ≤ 1/3 bottleneck (always for d = 1; for d ≥ 2
        when the bump layers dominate, i.e. M large against κ).
        """
        return self.width - max(self.stage_widths)

    @property
    def exceeds_paper(self) -> bool:
        """Whether our nonlinear width is above the paper's formula (e.g. d = 1, M = 1, κ ≥ 5)."""
        return self.width > self.paper_width


def taylor_constant(d: int, kappa: int) -> float:
    """C_T = Σ_{|α|=κ} 1/α! = d^κ/κ! (multinomial theorem): |f − P_m| ≤ C_T R ‖x − c_m‖_∞^β."""
    return d**kappa / math.factorial(kappa)


def construction_width(d: int, kappa: int, M: int) -> tuple[int, ...]:
    """Units used by each Swish layer of :func:`swish_approximator` (closed form).

    Layer 1: 4 bump units per (coordinate, grid index) and 2 identity units per coordinate:
    4d(M+1) + 2d. Then S − 2 = max(d−1, κ−1, 0) product layers and a last layer.

    d = 1, κ ≥ 2 (parallel Horner scheme, :func:`_plan_horner_1d`): layer s = 2..κ+1 multiplies
    the k = κ − s + 2 terms still carrying a power of x by x: 4k + 4 units (4k + 2 in the last,
    which no longer carries x): (4(M+1) + 2, 4κ + 4, 4κ, …, 12, 6).

    Otherwise (monomial schedule): product layers s = 2..S−1 use 4 units per product (partial bump
    products over the first s coordinates, (M+1)^s of them while s ≤ d; new monomials of degree s
    while s ≤ κ) and 2 per carried quantity; the last layer 4 per monomial of degree 1..κ and 2
    for Φ_0.

    The network's width W is the largest of these, or 3·(largest rank) where that is larger
    (:attr:`SwishApproximation.padding`).
    """
    return tuple(len(stage.units) for stage in _plan(d, kappa, M, np.zeros((0,)), 1.0, 1.0)[0])


def paper_width(d: int, kappa: int, M: int) -> int:
    """The width formula of Li et al. (ICML 2025): 2C(d+1,d−1) + 4C(d+κ−2,d−1) + 4C(d+κ−1,d−1) + 6(M+1)^d.

    C(n, k) is taken as 0 when n < k or n < 0.
    """

    def comb(n: int, k: int) -> int:
        return math.comb(n, k) if 0 <= k <= n else 0

    return 2 * comb(d + 1, d - 1) + 4 * comb(d + kappa - 2, d - 1) + 4 * comb(d + kappa - 1, d - 1) + 6 * (M + 1) ** d


def swish_approximator(
    f: Target,
    derivatives: Derivatives,
    d: int,
    beta: float,
    M: int,
    kappa: int | None = None,
    tau: float = 40.0,
    lam: float = 1e4,
    *,
    R: float,
    f_sup: float | None = None,
) -> SwishApproximation:
    """Build the explicit low-rank Swish network approximating f and evaluate its error bound.

    Args:
        f: the target, (n, d) float64 tensor → (n,) tensor; f ∈ C^{β,R}([0,1]^d).
        derivatives: ``derivatives(alpha, x)`` = D^α f(x), (n, d) → (n,), for every multi-index
            α with |α| ≤ κ (``alpha`` a tuple of d ints; α = 0 is f itself).
        d: input dimension (≥ 1).
        beta: Hölder smoothness β > 0.
        M: grid resolution (≥ 1); (M+1)^d Taylor patches at the points m/M.
        kappa: Taylor order; must equal ⌈β⌉ − 1 (the default), the order the Hölder class fixes.
        tau: bump sharpness τ > 0 (bump leakage falls like 1/τ near breakpoints and e^{−τ} away).
        lam: product scale λ > 0 (product error ∝ 1/λ²).
        R: Hölder constant of the κ-th derivatives in the ‖·‖_∞ distance (> 0).
        f_sup: a bound on ‖f‖_∞; when None it is bounded from the patches as
            max_m Σ_α |D^α f(c_m)|/α!·(2M)^{−|α|} + C_T R (2M)^{−β}.

    Returns:
        a :class:`SwishApproximation`: the float64 network and its :class:`ErrorBound`
        (sup_{[0,1]^d} |network − f| ≤ bound.total; the construction of Li et al., ICML 2025, Sec. 4).
    """
    if not callable(f):
        raise ValueError(f"`f` must be callable, got {f!r} ({type(f).__name__})")
    if not callable(derivatives):
        raise ValueError(f"`derivatives` must be callable, got {derivatives!r} ({type(derivatives).__name__})")
    d = check_int("d", d, low=1)
    beta = check_real("beta", beta, low=0.0, low_open=True)
    M = check_int("M", M, low=1)
    # the construction holds (M+1)^d grid points (and 6(M+1)^d neurons); logarithms first, since
    # (M+1)^d is slow to form for a huge d
    if d > 64 or d * math.log2(M + 1) > 64:
        raise ValueError(f"`d`={d} and `M`={M} ask for (M+1)^d > 2**64 grid points")
    check_fits_in_memory(f"`d`={d}, `M`={M}", 6 * (M + 1) ** d * (d + 1), what="weights")
    tau = check_real("tau", tau, low=0.0, low_open=True)
    lam = check_real("lam", lam, low=0.0, low_open=True)
    R = check_real("R", R, low=0.0, low_open=True)
    order = math.ceil(beta) - 1
    if kappa is None:
        kappa = order
    kappa = check_int("kappa", kappa, low=0)
    if kappa != order:
        raise ValueError(f"`kappa` must equal ceil(beta) - 1 = {order} for beta={beta}, got {kappa}")
    if f_sup is not None:
        f_sup = check_real("f_sup", f_sup, low=0.0)

    grid = _grid(d, M)
    coeffs, derived_sup = _monomial_coefficients(f, derivatives, d, beta, M, kappa, R, grid)
    f_sup = derived_sup if f_sup is None else f_sup

    stages, outputs, product_error = _plan(d, kappa, M, coeffs, tau, lam)
    network, width, ranks = _assemble(stages, outputs, d)

    c_t = taylor_constant(d, kappa)
    eps_a = absolute_sum_excess(tau)
    eps_t = partition_sum_error(tau)
    moment = far_moment(tau, beta)
    a_sum = 1.0 + eps_a
    scale = c_t * R * (3.0 * M) ** (-beta)
    s_trap = trapezoid_moment(beta)
    w_swish = bump_moment(tau, beta)
    # Weighted Taylor factor Σ_m |φ_m| max_i |u_i|^β: trapezoid limit (τ → ∞) and with Swish corners.
    trap_factor = s_trap if d == 1 else min(2.0**beta, d * s_trap)
    swish_factor = min(2.0**beta * a_sum**d + d * a_sum ** (d - 1) * moment, d * a_sum ** (d - 1) * w_swish)
    taylor = scale * trap_factor
    leakage = scale * max(swish_factor - trap_factor, 0.0) + f_sup * ((1.0 + eps_t) ** d - 1.0)
    return SwishApproximation(
        network=network,
        bound=ErrorBound(taylor=taylor, leakage=leakage, product=product_error),
        width=width,
        stage_widths=tuple(len(s.units) for s in stages),
        ranks=ranks,
        kappa=kappa,
        f_sup=f_sup,
        paper_width=paper_width(d, kappa, M),
        details={
            "eps_A": eps_a,
            "eps_T": eps_t,
            "D": moment,
            "C_T": c_t,
            "S_beta": s_trap,
            "W_tau": w_swish,
            "taylor_factor": trap_factor,
            "swish_factor": swish_factor,
        },
    )


def taylor_polynomial(derivatives: Derivatives, center: torch.Tensor, kappa: int, x: torch.Tensor) -> torch.Tensor:
    """Evaluate P(x) = Σ_{|α|≤κ} D^α f(c)/α! · (x − c)^α, the Taylor polynomial of order κ at c.

    Args:
        derivatives: ``derivatives(alpha, points)`` = D^α f(points), (n, d) → (n,).
        center: (d,) expansion point c.
        kappa: order κ ≥ 0.
        x: (n, d) evaluation points.

    Returns:
        (n,) values; for f ∈ C^{β,R}, |f(x) − P(x)| ≤ (d^κ/κ!)·R·‖x − c‖_∞^β (Taylor's theorem
        with integral remainder; Li et al., ICML 2025, Lemma on |f − P_m|).
    """
    kappa = check_int("kappa", kappa, low=0)
    center = torch.as_tensor(center, dtype=torch.float64).reshape(1, -1)
    d = center.shape[1]
    total = torch.zeros(x.shape[0], dtype=torch.float64)
    for alpha in multi_indices(d, kappa):
        value = torch.as_tensor(derivatives(alpha, center), dtype=torch.float64).reshape(())
        power = torch.prod((x - center) ** torch.tensor(alpha, dtype=torch.float64), dim=1)
        total = total + value / math.prod(math.factorial(a) for a in alpha) * power
    return total


# --------------------------------------------------------------------------------------------
# Taylor coefficients


def _grid(d: int, M: int) -> torch.Tensor:
    axes = [torch.arange(M + 1, dtype=torch.float64) / M] * d
    return torch.cartesian_prod(*axes).reshape(-1, d)  # row index = Σ_i m_i (M+1)^{d−1−i}


def _monomial_coefficients(
    f: Target,
    derivatives: Derivatives,
    d: int,
    beta: float,
    M: int,
    kappa: int,
    R: float,
    grid: torch.Tensor,
) -> tuple[np.ndarray, float]:
    """a_{m,γ} with P_m(x) = Σ_γ a_{m,γ} x^γ, shape ((M+1)^d, #γ), and the derived ‖f‖_∞ bound.

    a_{m,γ} = Σ_{α ≥ γ} D^α f(c)/α! · Π_i C(α_i, γ_i)(−c_i)^{α_i−γ_i}.
    """
    probe = torch.full((2, d), 0.5, dtype=torch.float64)
    try:
        value = f(probe)
    except Exception as error:  # a dimension mismatch surfaces as any error inside f
        raise ValueError(f"`f` could not be evaluated on points of shape (2, d={d}): {error}") from error
    if not isinstance(value, torch.Tensor) or tuple(value.shape) != (2,):
        shape = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
        raise ValueError(f"`f` must map (n, d={d}) points to (n,) values, got {shape} for n=2")
    indices = multi_indices(d, kappa)
    derivs = {}
    for alpha in indices:
        try:
            values = derivatives(alpha, grid)
        except Exception as error:
            raise ValueError(f"`derivatives` failed for alpha={alpha} on (n, d={d}) points: {error}") from error
        values = torch.as_tensor(values, dtype=torch.float64)
        if tuple(values.shape) != (grid.shape[0],):
            raise ValueError(
                f"`derivatives` must return shape ({grid.shape[0]},) for alpha={alpha}, got {tuple(values.shape)}"
            )
        derivs[alpha] = values.numpy()
    if not np.allclose(derivs[(0,) * d][:2], f(grid[:2]).detach().numpy(), rtol=1e-10, atol=1e-12):
        raise ValueError("`derivatives` at alpha=0 must equal `f` (they disagree on the grid)")
    centres = grid.numpy()
    coeffs = np.zeros((grid.shape[0], len(indices)))
    for g_index, gamma in enumerate(indices):
        for alpha in indices:
            if any(a < g for a, g in zip(alpha, gamma)):
                continue
            term = derivs[alpha] / math.prod(math.factorial(a) for a in alpha)
            for i in range(d):
                term = term * math.comb(alpha[i], gamma[i]) * (-centres[:, i]) ** (alpha[i] - gamma[i])
            coeffs[:, g_index] += term
    half = 1.0 / (2 * M)
    patch = sum(
        np.abs(derivs[alpha]) / math.prod(math.factorial(a) for a in alpha) * half ** sum(alpha) for alpha in indices
    )
    f_sup = float(np.max(patch)) + taylor_constant(d, kappa) * R * half**beta
    return coeffs, f_sup


__all__ = [
    "ErrorBound",
    "SwishApproximation",
    "construction_width",
    "multi_indices",
    "paper_width",
    "swish_approximator",
    "taylor_constant",
    "taylor_polynomial",
]
