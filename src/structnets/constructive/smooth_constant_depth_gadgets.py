"""One-hidden-layer polynomial gadgets, the sigmoidal partition of unity and the rounding analysis
behind :func:`structnets.constructive.smooth_constant_depth_approximator`.

Liu, Wang, Wu, Zhang, *Smoothness Adaptivity in Constant-Depth Neural Networks: Optimal Rates via
Smooth Activations* (arXiv 2602.19691), Sec. 4, builds every polynomial operation from *one*
layer of a smooth activation σ; this module does the same, with every constant evaluated.

**Stencil gadget** (central finite differences of σ). For an integer power p ≥ 1, a centre b with
σ^{(p)}(b) ≠ 0, a half-width n and a scale λ > 0,

    g(z) = Σ_{i=−n}^{n} w_i σ(b + i z/λ),   Σ_i w_i i^q = δ_{qp} p! λ^p/σ^{(p)}(b)  (q = 0, …, 2n),

so the Taylor expansion of g in z is z^p plus terms of order ≥ Q, where Q > 2n is the first power
with Σ_i w_i i^Q ≠ 0 (Q = 2n + 2 for even p, the stencil being symmetric, 2n + 1 for odd p).
Taylor's theorem with M_Q = sup_ℝ |σ^{(Q)}| gives, for |z| ≤ A,

    |g(z) − z^p| ≤ (M_Q/Q!) (A/λ)^Q Σ_i |w_i| |i|^Q,
    |g′(z) − p z^{p−1}| ≤ (M_Q/(Q−1)!) A^{Q−1} λ^{−Q} Σ_i |w_i| |i|^Q.

The second bound is what a product needs: xy = (g₂(x + y) − g₂(x − y))/4 with g₂ the square
gadget, and g₂ − z² = e with |e(x + y) − e(x − y)| ≤ 2|y| sup|e′|, so the product error is
≤ |y| sup|e′|/2 — proportional to the factor y, which is what keeps sums of many localised
products bounded independently of the number of cells. Exact identities are used where they
exist: GELU(z) − GELU(−z) = SiLU(z) − SiLU(−z) = z, so the p = 1 gadget at b = 0, n = 1 is exact
(λ(σ(z/λ) − σ(−z/λ)) = z). Tanh has no linear tail and no such identity: its identity and square
gadgets are stencils at b ≠ 0 (tanh is odd, so every even derivative vanishes at 0).

**Derivatives of σ** are evaluated in closed form: logistic s: s′ = s − s² (polynomial recursion);
tanh t: t′ = 1 − t²; SiLU(z) = z s(z): σ^{(q)} = z s^{(q)} + q s^{(q−1)}; GELU(z) = zΦ(z):
σ^{(q)} = zΦ^{(q)} + qΦ^{(q−1)} with Φ^{(m)} = (−1)^{m−1} He_{m−1}(z) ϕ(z). The suprema M_q are
grid maxima over [−40, 40] (spacing 2·10⁻⁴) plus a first-order allowance (half a spacing times
the grid maximum of |σ^{(q+1)}|, doubled); outside that window every derivative is below 10⁻¹².
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cache

import numpy as np
import torch
from torch import nn

ACTIVATIONS = ("gelu", "silu", "tanh")
UNIT_ROUNDOFF = 2.0**-53
_WINDOW = 40.0
_SPACING = 2e-4
_EXTRA_ORDERS = 5


def _poly_derivative_in(values: np.ndarray, coeffs: list[float]) -> np.ndarray:
    return np.polynomial.polynomial.polyval(values, coeffs)


def _chain_coefficients(order: int, base_derivative: list[float]) -> list[list[float]]:
    """Coefficients c_q of P_q with y^{(q)} = P_q(y), given y′ = P_1(y) (polynomial ODE)."""
    P = np.polynomial.polynomial
    polys: list[list[float]] = [[0.0, 1.0]]
    for _ in range(order):
        polys.append(list(P.polymul(P.polyder(polys[-1]), base_derivative)) if len(polys[-1]) > 1 else [0.0])
    return polys


def activation(name: str, z: np.ndarray) -> np.ndarray:
    """σ(z) in float64 for σ ∈ {gelu, silu, tanh} (GELU with the exact erf, as ``nn.GELU()``)."""
    return activation_derivative(name, 0, z)


def activation_derivative(name: str, q: int, z: np.ndarray) -> np.ndarray:
    """σ^{(q)}(z) in closed form (see the module docstring), float64, any q ≥ 0."""
    z = np.asarray(z, dtype=np.float64)
    if name == "tanh":
        return _poly_derivative_in(np.tanh(z), _chain_coefficients(q, [1.0, 0.0, -1.0])[q])
    if name == "silu":
        s = 0.5 * (1.0 + np.tanh(0.5 * z))
        chain = _chain_coefficients(q, [0.0, 1.0, -1.0])
        value = z * _poly_derivative_in(s, chain[q])
        if q >= 1:
            value = value + q * _poly_derivative_in(s, chain[q - 1])
        return value
    if name == "gelu":
        pdf = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)

        def phi_derivative(m: int) -> np.ndarray:  # Φ^{(m)}
            if m == 0:
                return 0.5 * (1.0 + torch.special.erf(torch.from_numpy(z / math.sqrt(2.0))).numpy())
            hermite = np.polynomial.hermite_e.hermeval(z, [0.0] * (m - 1) + [1.0])
            return (-1.0) ** (m - 1) * hermite * pdf

        value = z * phi_derivative(q)
        if q >= 1:
            value = value + q * phi_derivative(q - 1)
        return value
    raise ValueError(f"`activation` must be one of {list(ACTIVATIONS)}, got {name!r}")


@cache
def derivative_sup(name: str, q: int) -> float:
    """M_q, an upper bound on sup_ℝ |σ^{(q)}| (grid maximum plus a first-order allowance)."""
    z = np.arange(-_WINDOW, _WINDOW + _SPACING / 2, _SPACING)
    here = float(np.max(np.abs(activation_derivative(name, q, z))))
    if q == 0:
        return math.inf  # SiLU and GELU are unbounded; never used as M_0
    nxt = float(np.max(np.abs(activation_derivative(name, q + 1, z))))
    return here + _SPACING * nxt + 1e-12


@cache
def _stencil(power: int, half_width: int) -> tuple[tuple[Fraction, ...], int, Fraction]:
    """Exact rational ω_i with Σ_i ω_i i^q = δ_{qp} p! for q ≤ 2n, and the remainder order Q with
    its moment Σ_i |ω_i| |i|^Q (as a Fraction)."""
    if 2 * half_width < power:
        raise ValueError(f"`half_width` must be >= power/2 = {power / 2}, got {half_width}")
    nodes = list(range(-half_width, half_width + 1))
    size = len(nodes)
    matrix = [
        [Fraction(i) ** q for i in nodes] + [Fraction(math.factorial(power) if q == power else 0)] for q in range(size)
    ]
    for col in range(size):  # Gauss–Jordan in exact arithmetic
        pivot = next(r for r in range(col, size) if matrix[r][col] != 0)
        matrix[col], matrix[pivot] = matrix[pivot], matrix[col]
        lead = matrix[col][col]
        matrix[col] = [v / lead for v in matrix[col]]
        for r in range(size):
            if r != col and matrix[r][col] != 0:
                factor = matrix[r][col]
                matrix[r] = [a - factor * b for a, b in zip(matrix[r], matrix[col])]
    omega = tuple(matrix[r][size] for r in range(size))
    order = size
    while sum(w * Fraction(i) ** order for w, i in zip(omega, nodes)) == 0:
        order += 1
    moment = sum((abs(w) * Fraction(abs(i)) ** order for w, i in zip(omega, nodes)), Fraction(0))
    return omega, order, moment


@cache
def best_centre(name: str, power: int) -> float:
    """The centre b: 0 where σ^{(p)}(0) ≠ 0 and symmetry helps (SiLU/GELU, p ≤ 2), else the grid
    argmax of |σ^{(p)}| on [−3, 3] (step 10⁻³), which keeps the weights p!λ^p/σ^{(p)}(b) small."""
    if name in ("silu", "gelu") and power <= 2:
        return 0.0
    z = np.round(np.arange(-3.0, 3.0005, 1e-3), 3)
    values = np.abs(activation_derivative(name, power, z))
    return float(z[int(np.argmax(values))])


@dataclass(frozen=True)
class Gadget:
    """g(z) = const + Σ_i weights[i]·σ(centre + nodes[i]·z/scale) ≈ z^power for |z| ≤ range.

    Attributes:
        activation: σ. power: p. centre: b. scale: λ. half_width: n.
        nodes, weights: the stencil points i that need a unit and their w_i (a node whose
            σ-value does not depend on z, i = 0, is folded into ``const``).
        const: w_0 σ(b).
        range: A, the bound on |z| the error bounds hold for.
        truncation: sup_{|z|≤A} |g(z) − z^p| (0 for an exact identity).
        slope_error: sup_{|z|≤A} |g′(z) − p z^{p−1}|.
        exact: whether an algebraic identity makes g = z^p exactly (then both bounds are 0).
    """

    activation: str
    power: int
    centre: float
    scale: float
    half_width: int
    nodes: tuple[int, ...]
    weights: tuple[float, ...]
    const: float
    range: float
    truncation: float
    slope_error: float
    exact: bool

    def __call__(self, z: np.ndarray) -> np.ndarray:
        """Evaluate g on an array (float64, numpy): the reference the network reproduces."""
        z = np.asarray(z, dtype=np.float64)
        out = np.full(z.shape, self.const)
        for i, w in zip(self.nodes, self.weights):
            out = out + w * activation(self.activation, self.centre + i * z / self.scale)
        return out

    @property
    def units(self) -> int:
        return len(self.nodes)

    def derivative_error(self, m: int) -> float:
        """sup_{|z|≤A} |g^{(m)}(z) − (d/dz)^m z^p| for 1 ≤ m < Q (0 for an exact identity).

        g^{(m)}(z) = Σ_i w_i (i/λ)^m σ^{(m)}(b + iz/λ); Taylor's theorem for σ^{(m)} at b to order
        Q − m, with the moment conditions Σ_i w_i i^r = δ_{rp} p! λ^p/σ^{(p)}(b) (r < Q), leaves
        p!/(p − m)! z^{p−m} and a remainder ≤ (M_Q/(Q − m)!) A^{Q−m} λ^{p−Q} Σ_i |ω_i||i|^Q/|σ^{(p)}(b)|,
        i.e. ``truncation``·Q!/((Q − m)! A^m); m = 1 is ``slope_error``. An m-fold product by
        polarisation (:meth:`~structnets.constructive.smooth_constant_depth._Layer.product`)
        errs by at most this at m − 1 times a product of its factors, divided by m!.
        """
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ValueError(f"`m` must be an int >= 1, got {m!r}")
        if self.exact:
            return 0.0
        if m == 1:
            return self.slope_error
        order = _stencil(self.power, self.half_width)[1]
        if m >= order:
            raise ValueError(f"`m` must be < the remainder order Q={order} of this gadget, got {m}")
        return self.truncation * (math.factorial(order) / math.factorial(order - m)) / self.range**m

    def node_range(self, bound: float) -> float:
        """The largest |pre-activation − b| over |z| ≤ bound: n·bound/λ."""
        return max((abs(i) for i in self.nodes), default=0) * bound / self.scale


def make_gadget(name: str, power: int, bound: float, rounding_weight: float = 1e3) -> Gadget:
    """The stencil gadget for z^power on |z| ≤ bound with the smallest estimated error.


    Args:
        name: activation (gelu, silu, tanh).
        power: p ∈ {1, 2, 3, …}.
        bound: A > 0.
        rounding_weight: the factor by which u·Σ|w_i| is weighted against the truncation bound
            when choosing n and λ (a proxy for how much later layers amplify rounding; the
            certified rounding is computed on the assembled network, not from this proxy).

    Returns:
        the :class:`Gadget`: for each half-width n ∈ {⌈p/2⌉, …, ⌈p/2⌉ + 4} the scale λ minimising
        T λ^{p−Q} + Rλ^p (truncation against the rounding proxy; λ^Q = (Q − p)T/(pR)), and of
        those the n with the smallest total.
    """
    if name not in ACTIVATIONS:
        raise ValueError(f"`activation` must be one of {list(ACTIVATIONS)}, got {name!r}")
    if bound <= 0 or not math.isfinite(bound):
        raise ValueError(f"`bound` must be a finite real > 0, got {bound}")
    centre = best_centre(name, power)
    sigma_p = float(activation_derivative(name, power, np.array([centre]))[0])
    if name in ("silu", "gelu") and power == 1 and centre == 0.0:
        # σ(z) − σ(−z) = z exactly (σ(z) = z·c(z) with c(z) + c(−z) = 1); λ = A keeps |argument| ≤ 1.
        lam = bound
        return Gadget(name, 1, 0.0, lam, 1, (-1, 1), (-lam, lam), 0.0, bound, 0.0, 0.0, True)
    best: Gadget | None = None
    best_score = math.inf
    first = max(1, math.ceil(power / 2))  # 2n ≥ p: the moment conditions must include q = p
    for n in range(first, first + _EXTRA_ORDERS):
        omega, order, moment = _stencil(power, n)
        m_q = derivative_sup(name, order)
        scale_w = 1.0 / abs(sigma_p)  # w_i = ω_i λ^p / σ^{(p)}(b)
        sum_abs = float(sum(abs(w) for w in omega)) * scale_w
        trunc_coeff = m_q / math.factorial(order) * bound**order * float(moment) * scale_w  # × λ^{p−Q}
        round_coeff = rounding_weight * UNIT_ROUNDOFF * sum_abs * (1.0 + abs(centre))  # × λ^p
        lam = ((order - power) * trunc_coeff / (power * round_coeff)) ** (1.0 / order)
        score = trunc_coeff * lam ** (power - order) + round_coeff * lam**power
        if score < best_score:
            best_score = score
            weights = [float(w) * lam**power / sigma_p for w in omega]
            nodes = list(range(-n, n + 1))
            const = weights[n] * float(activation(name, np.array([centre]))[0])
            keep = [k for k in range(len(nodes)) if nodes[k] != 0]
            truncation = (
                m_q / math.factorial(order) * (bound / lam) ** order * float(moment) * lam**power / abs(sigma_p)
            )
            slope = (
                m_q
                / math.factorial(order - 1)
                * bound ** (order - 1)
                * lam ** (power - order)
                * float(moment)
                / abs(sigma_p)
            )
            best = Gadget(
                name,
                power,
                centre,
                lam,
                n,
                tuple(nodes[k] for k in keep),
                tuple(weights[k] for k in keep),
                const,
                bound,
                truncation,
                slope,
                False,
            )
    assert best is not None
    return best


# --------------------------------------------------------------------------------------------
# The sigmoidal partition of unity


def sigmoid_parts(name: str) -> tuple[float, tuple[tuple[float, float, float], ...]]:
    """S(z) = c₀ + Σ_r w_r σ(a_r z + c_r), a sigmoidal (S(−∞) = 0, S(∞) = 1, S(−z) = 1 − S(z)).

    tanh: S(z) = ½ + ½ tanh(z/2), the logistic function (one unit). SiLU and GELU:
    S(z) = (σ(z + 1) − σ(z − 1))/2 (two units; σ(z) − z → 0 at +∞ and σ → 0 at −∞, and
    σ(−y) = σ(y) − y gives the symmetry). Returns (c₀, ((a_r, c_r, w_r), …)).
    """
    if name == "tanh":
        return 0.5, ((0.5, 0.0, 0.5),)
    return 0.0, ((1.0, 1.0, 0.5), (1.0, -1.0, -0.5))


def sigmoid(name: str, z: np.ndarray) -> np.ndarray:
    """S(z) of :func:`sigmoid_parts`, float64."""
    c0, parts = sigmoid_parts(name)
    z = np.asarray(z, dtype=np.float64)
    out = np.full(z.shape, c0)
    for a, c, w in parts:
        out = out + w * activation(name, a * z + c)
    return out


def partition(name: str, tau: float, K: int, t: np.ndarray) -> np.ndarray:
    """φ_k(t), k = 0..K, at cell coordinates t = Kx (shape (len(t), K + 1)).

    φ_0 = 1 − S_1, φ_k = S_k − S_{k+1}, φ_K = S_K with S_k(t) = S(τ(t − k + ½)): Σ_k φ_k = 1
    exactly (telescoping), φ_k concentrated on [k − ½, k + ½].
    """
    t = np.asarray(t, dtype=np.float64)
    S = sigmoid(name, tau * (t[:, None] - np.arange(1, K + 1)[None, :] + 0.5))
    ones = np.ones((t.size, 1))
    zeros = np.zeros((t.size, 1))
    return np.hstack([ones, S]) - np.hstack([S, zeros])


@cache
def partition_moments(name: str, tau: float, K: int, beta: float) -> tuple[float, float, float]:
    """(Λ, Λ₁, W_β): upper bounds on sup_t Σ_k |φ_k(t)|, sup_{k,t} |φ_k(t)| and
    sup_t Σ_k |φ_k(t)| |t − k|^β over t ∈ [0, K].

    Evaluated on a grid of spacing δ = 1/2000 (cell units) over t ∈ [0, min(K, 41)] (the
    configuration is symmetric under t ↦ K − t, and beyond 40 cells from an end it is
    1-periodic up to tails below e^{−40τ/2}), with a first-order allowance δ·(sup of the
    derivative estimated on the grid) and a relative margin 10⁻⁹.
    """
    steps = 2000  # grid points per cell: δ = 1/2000
    delta = 1.0 / steps
    span = min(K, 41)
    cells = min(K, 82)  # bumps beyond 82 are below e^{−40τ} on t ≤ 41
    t = np.arange(span * steps + 1) * delta
    # S_k(t_i) = S(τ(t_i − k + ½)) = S(τ(i − steps·k + steps/2)δ): one evaluation per offset
    offsets = np.arange(-steps * cells - steps, span * steps + steps + 1)
    values = sigmoid(name, tau * offsets * delta)
    index = np.arange(t.size)[:, None] - steps * np.arange(1, cells + 1)[None, :] + steps // 2 - offsets[0]
    S = values[index]
    phi = np.abs(np.hstack([np.ones((t.size, 1)), S]) - np.hstack([S, np.zeros((t.size, 1))]))
    dist = np.abs(t[:, None] - np.arange(cells + 1)[None, :])
    total = phi.sum(1)
    peak = phi.max(1)
    moment = (phi * dist**beta).sum(1)
    # first-order allowance from the grid differences (the functions are smooth in t away from
    # the kinks of |·|; doubling the largest observed step covers the rest)
    allowance = lambda v: 2.0 * float(np.max(np.abs(np.diff(v)))) if v.size > 1 else 0.0  # noqa: E731
    return (
        float(total.max() + allowance(total)) * (1 + 1e-9),
        float(peak.max() + allowance(peak)) * (1 + 1e-9),
        float(moment.max() + allowance(moment)) * (1 + 1e-9),
    )


# --------------------------------------------------------------------------------------------
# Rounding


def rounding_bound(network: nn.Sequential, ranges: list[np.ndarray], name: str, d: int) -> float:
    """A bound on |fl(network(x)) − network_exact(x)| for x ∈ [0, 1]^d in float64.

    Args:
        network: Linear, act, …, Linear (float64).
        ranges: per hidden layer, an (n_units, 2) array of intervals containing the unit's
            pre-activation for every x ∈ [0,1]^d (from the construction).
        name: the activation.
        d: input dimension.

    Forward error analysis (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.1): a
    dot product of length m in any summation order, with weights stored to relative u, errs by
    ≤ γ_{m+2}(|W||h| + |b|), γ_m = mu/(1 − mu); an activation evaluation by
    ≤ 8u(|σ(y)| + |y|) (a few ulps of libm, relative to its inputs); and an input error e passes
    through σ multiplied by ≤ sup|σ′|. Per layer, with |h| the unit magnitude bounds,
    e_ℓ = L(|W_ℓ|e_{ℓ−1} + γ(|W_ℓ||h_{ℓ−1}| + |b_ℓ|)) + 8u(|h_ℓ| + |y_ℓ|), e_0 = 0.
    """
    u = UNIT_ROUNDOFF
    lip = derivative_sup(name, 1)
    linears = [m for m in network if isinstance(m, nn.Linear)]
    h_prev = np.ones(d)
    e_prev = np.zeros(d)
    for index, layer in enumerate(linears):
        W = np.abs(layer.weight.detach().cpu().numpy().astype(np.float64))
        b = np.abs(layer.bias.detach().cpu().numpy().astype(np.float64))
        m = (W != 0).sum(1)
        gamma = (m + 2) * u / (1 - (m + 2) * u)
        pre_err = W @ e_prev + gamma * (W @ h_prev + b)
        if index == len(linears) - 1:
            return float(pre_err.max())
        lo, hi = ranges[index][:, 0], ranges[index][:, 1]
        y = np.maximum(np.abs(lo), np.abs(hi))
        h = unit_magnitude(name, lo, hi)
        e_prev = lip * pre_err + 8 * u * (h + y)
        h_prev = h
    raise ValueError("`network` has no Linear layer")


def unit_magnitude(name: str, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """sup |σ| over each interval [lo, hi] (σ monotone except the single minimum of SiLU/GELU)."""
    ends = np.maximum(np.abs(activation(name, lo)), np.abs(activation(name, hi)))
    if name == "tanh":
        return ends
    z_min, v_min = _minimum(name)
    inside = (lo <= z_min) & (z_min <= hi)
    return np.where(inside, np.maximum(ends, abs(v_min)), ends)


@cache
def _minimum(name: str) -> tuple[float, float]:
    """(argmin, min − 10⁻⁹) of SiLU or GELU on a 10⁻⁵ grid of [−3, 0] (the single minimum)."""
    z = np.arange(-3.0, 0.0, 1e-5)
    values = activation(name, z)
    return float(z[np.argmin(values)]), float(values.min()) - 1e-9


def torch_activation(name: str) -> nn.Module:
    """The ``nn.Module`` of σ: ``nn.GELU()`` (exact erf), ``nn.SiLU()`` or ``nn.Tanh()``."""
    return {"gelu": nn.GELU, "silu": nn.SiLU, "tanh": nn.Tanh}[name]()
