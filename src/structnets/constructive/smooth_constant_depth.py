"""A smooth-activation network of fixed depth reaching the rate N^{−s/d}: Taylor patches on a
sigmoidal partition of unity, with every polynomial operation built from one layer of σ.

Liu, Wang, Wu, Zhang, *Smoothness Adaptivity in Constant-Depth Neural Networks: Optimal Rates via
Smooth Activations* (arXiv 2602.19691), Theorems 4.1/4.4: for every s > 0, networks of constant
depth with a smooth activation (GELU, SiLU, …) reach sup error O(N^{−s/d}) on the Hölder ball,
with polynomially bounded weights and no ℓ₀ sparsity. What is built here (docs/smoothness.md,
"The constant-depth construction"), for f ∈ C^{s,R}([0,1]^d), κ = ⌈s⌉ − 1, a grid of K + 1
knots x_k = k/K per axis and u = 2x − 1 ∈ [−1, 1]^d:

    F(x) = Σ_k φ_k(x) T_k f(x) = Σ_{|γ|≤κ} u^γ Φ_γ(x),   Φ_γ = Σ_k c_{k,γ} φ_k(x),

with T_k f the order-κ Taylor polynomial at x_k, written in the monomials u^γ (c_{k,γ} its
coefficients), and φ_k = Π_i φ_{k_i}(x_i) the tensor partition of unity from a sigmoidal S made
of σ (:mod:`.smooth_constant_depth_gadgets`). Layers (all hidden layers σ, dense ``nn.Linear``):

* d = 1 — hidden 1: the K sigmoid units S_k and the power gadgets u^j (j = 1..κ); hidden 2: the κ
  products u^j·Φ_j and the identity gadget carrying Φ₀ (Φ_j is linear in hidden 1, the
  telescoped sum Σ_k (c_{k,j} − c_{k−1,j}) S_k); output: their sum. **3 weight layers.**
* d ≥ 2 — hidden 1: S_{i,k} and u_i^j; hidden 2: the d-fold products
  φ_{k₁}(x₁)⋯φ_{k_{d−1}}(x_{d−1})·g_{γ,k′}(x_d) with g_{γ,k′} = Σ_{k_d} c_{(k′,k_d),γ} φ_{k_d}(x_d)
  (linear in hidden 1), so Φ_γ = Σ_{k′}(those), and the monomials u^γ (a product of the powers
  u_i^{γ_i}, or an identity gadget); hidden 3: the products u^γ·Φ_γ and the identity carrying Φ₀;
  output: their sum. **4 weight layers for every d ≥ 2.** Each m-fold product is one layer of σ,
  by polarisation Π_i a_i = Σ_{ε∈{±1}^{m−1}} (Π ε_i)(a_1 + Σ_{i≥2} ε_i a_i)^m/(2^{m−1} m!) with
  the z^m gadget (m = 2: (g₂(a + b) − g₂(a − b))/4).

Depth 3 weight layers at d = 1 and 4 at every d ≥ 2, i.e. L = 4 and L = 5 in the paper's
convention (layers of neurons, input and output included; docs/smoothness.md, "The depth
convention"), for every s and K. Width O(#γ·K^{d−1}) products in hidden 2 (each reading O(dK)
units of hidden 1), so the dense parameter count is N = aK^d + bK^{d−1} + … (the second term,
hidden 3 reading every product, dominates at small K: fit rates in N, not in K^d);
:func:`parameter_estimate` bounds N before building, and a K whose build cannot fit in memory is
refused up front with that size.

**The bound** (every constant evaluated by :func:`smooth_constant_depth_approximator`):

    sup_{[0,1]^d} |net − f| ≤ T + G + ρ,

* T = C_T R K^{−s} · d Λ^{d−1} W_s (Taylor): |f − T_k f| ≤ C_T R ‖x − x_k‖_∞^s with C_T = d^κ/κ!,
  and Σ_k |φ_k(x)| ‖Kx − k‖_∞^s ≤ Σ_k Π_i|φ_{k_i}| Σ_i |Kx_i − k_i|^s ≤ d Λ^{d−1} W_s, with
  Λ = sup Σ_k|φ_k|, W_s = sup Σ_k |φ_k(t)||t − k|^s in cell units (:func:`partition_moments`).
* G (gadgets): the truncation of every gadget, propagated exactly as the products combine them
  (an m-fold product errs by ≤ sup|e^{(m−1)}|/m! times the product of all factors but one
  (:meth:`_Layer.product`), so a product of m − 1 localised bumps φ and one bounded factor
  errs in proportion to the bumps, and the sum over the K^{d−1} cells costs Λ^{d−1}, not K^{d−1}).
  For a polynomial f of degree ≤ κ, R = 0 and T = 0: the network reproduces f up to G + ρ.
* ρ (rounding): a forward error analysis of the float64 evaluation, carried quantity by
  quantity as the network is built (:class:`_Layer`): a form's error passes through a gadget
  multiplied by the gadget's slope (all its stencil nodes read the same form), and every unit adds
  its own dot-product and activation rounding. The unit-by-unit analysis of the assembled network
  (:func:`~.smooth_constant_depth_gadgets.rounding_bound`, which multiplies propagated errors by
  Σ_i|w_i||i|/λ instead) is also a valid bound, 1.1–25× larger here; it is kept in
  ``constants["rounding_unstructured"]``.

**Where this departs from the paper.** The partition of unity is a telescoping sum of
sigmoids rather than the paper's weight functions with band regions; the approximation in each
cell is a Taylor polynomial (the error term above), not the paper's multi-scale step, so
K^d cells cost width O(K^d) (the paper's multi-scale step gets K^{2d} cells from width O(K^d),
which affects constants and the estimation theory, not the rate N^{−s/d} in the dense count); and
the depth is 4 weight layers (L = 5) for every d ≥ 2, by one-layer polarised d-fold products,
where the paper's is 6 or 7 — constant in s, K and d as the theorem states. Tanh has no linear
tail: its sigmoid is tanh itself (one unit per knot) and its identity, power and product gadgets
are stencils at b ≠ 0 without exact identities; GELU and SiLU use the exact identity
σ(z) − σ(−z) = z for u and for carrying values.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from .._validation import check_fits_in_memory, check_int, check_real, memory_bytes
from .smooth_constant_depth_forms import Form
from .smooth_constant_depth_forms import Layer as _Layer
from .smooth_constant_depth_forms import combine as _combine
from .smooth_constant_depth_forms import gamma as _gamma
from .smooth_constant_depth_forms import linear as _linear
from .smooth_constant_depth_forms import scaled as _scaled
from .smooth_constant_depth_gadgets import (
    ACTIVATIONS,
    Gadget,
    make_gadget,
    partition_moments,
    rounding_bound,
    sigmoid_parts,
    torch_activation,
)
from .swish_approximator import multi_indices, taylor_constant

# How much the gadget chooser weighs rounding (u·Σ|w_i|) against truncation; at d = 2 the products
# of hidden layers 2 and 3 are summed over K + 1 cells in rows of length O(K), so the worst-case
# rounding grows like K² and their scales are chosen with weight ∝ (K + 1)².
_ROUNDING_WEIGHT = 1e3
# Peak memory of a build per dense parameter: the float64 weights and, above all, the Python forms
# of the construction (a dict entry per nonzero weight); measured below 100 bytes at d = 3.
_FORM_BYTES = 128

__all__ = [
    "ConstantDepthCertificate",
    "SmoothConstantDepthApproximation",
    "parameter_estimate",
    "smooth_constant_depth_approximator",
]


@dataclass(frozen=True)
class ConstantDepthCertificate:
    """What the construction guarantees, with its constants.

    Attributes:
        taylor: T = C_T R K^{−s} d Λ^{d−1} W_s.
        gadgets: G, the propagated truncation of the one-layer gadgets.
        rounding: ρ, the float64 rounding bound of the network on [0,1]^d (structured analysis,
            see the module docstring).
        depth: weight layers (3 for d = 1, 4 for every d ≥ 2); ``paper_depth`` = depth + 1
            (the paper's L).
        widths: hidden widths. parameters: dense parameter count N (every weight and bias of
            every ``nn.Linear``, zeros included: no sparsity is assumed). nonzero_parameters.
        max_weight: max |weight or bias| of the network; ``weight_bound``: the bound the
            construction states for it, max(τ K a_max, the largest gadget/coefficient product;
            see :func:`smooth_constant_depth_approximator`), which grows linearly in K.
        layer_norms: ‖W_ℓ‖_∞ (max row ℓ₁ norm) per layer.
        constants: Λ, Λ₁, W_s, C_T, R, τ, κ, coefficient bounds and gadget (n, λ) choices.
    """

    taylor: float
    gadgets: float
    rounding: float
    depth: int
    widths: tuple[int, ...]
    parameters: int
    nonzero_parameters: int
    max_weight: float
    weight_bound: float
    layer_norms: tuple[float, ...]
    constants: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        """T + G + ρ: a bound on sup_{x∈[0,1]^d} |network(x) − f(x)| in float64."""
        return self.taylor + self.gadgets + self.rounding

    @property
    def paper_depth(self) -> int:
        """L in the paper's convention (layers of neurons, input and output included)."""
        return self.depth + 1


@dataclass(frozen=True)
class SmoothConstantDepthApproximation:
    """What :func:`smooth_constant_depth_approximator` returns.

    Attributes:
        network: float64 ``nn.Sequential`` (Linear, σ, …, Linear), (n, d) → (n, 1).
        certificate: the :class:`ConstantDepthCertificate`.
        activation, s, K, d, kappa: the construction's arguments.
    """

    network: nn.Sequential
    certificate: ConstantDepthCertificate
    activation: str
    s: float
    K: int
    d: int
    kappa: int

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Evaluate on (n, d) points; returns (n,)."""
        return self.network(x).squeeze(-1)


def _resolve_target(
    f: Any, s: float, d: int | None, derivative: Callable[..., torch.Tensor] | None, R: float | None
) -> tuple[Callable[[torch.Tensor], torch.Tensor], Callable[..., torch.Tensor], int, float]:
    if hasattr(f, "function") and hasattr(f, "derivative") and hasattr(f, "d"):
        func, deriv, dim = f.function, f.derivative, int(f.d)
        if R is None:
            if s > float(f.beta):
                raise ValueError(
                    f"`s` must be <= the target's smoothness beta={f.beta} (give `R` to override), got {s}"
                )
            if s != float(f.beta):
                raise ValueError(f"`R` is required when `s`={s} differs from the target's beta={f.beta}")
            R = float(f.R)
        return func, derivative or deriv, d or dim, check_real("R", R, low=0.0)
    if not callable(f):
        raise ValueError(
            f"`f` must be callable ((n, d) tensor -> (n,) tensor) or a SmoothTarget, got {type(f).__name__}"
        )
    if d is None or R is None:
        raise ValueError("`d` and `R` are required when `f` is a plain callable (a SmoothTarget carries them)")
    if derivative is None:
        raise ValueError("`derivative(alpha, x)` is required when `f` is a plain callable")
    return f, derivative, check_int("d", d, low=1), check_real("R", R, low=0.0)


def _coefficients(
    f: Callable[[torch.Tensor], torch.Tensor], derivative: Callable[..., torch.Tensor], d: int, K: int, kappa: int
) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """c[k₁, …, k_d, γ]: T_k f = Σ_γ c_{k,γ} u^γ, u = 2x − 1 (shape (K+1,)*d + (#γ,))."""
    axis = torch.arange(K + 1, dtype=torch.float64) / K
    grid = torch.cartesian_prod(*[axis] * d).reshape(-1, d)
    try:
        values = torch.as_tensor(f(grid), dtype=torch.float64)
    except Exception as error:
        raise ValueError(f"`f` could not be evaluated on points of shape ({grid.shape[0]}, d={d}): {error}") from error
    if tuple(values.shape) != (grid.shape[0],) or not bool(torch.isfinite(values).all()):
        raise ValueError(f"`f` must return finite values of shape (n,) on [0,1]^{d}, got shape {tuple(values.shape)}")
    indices = multi_indices(d, kappa)
    derivs: dict[tuple[int, ...], np.ndarray] = {}
    for alpha in indices:
        try:
            v = torch.as_tensor(derivative(alpha, grid), dtype=torch.float64)
        except Exception as error:
            raise ValueError(f"`derivative` failed for alpha={alpha}: {error}") from error
        if tuple(v.shape) != (grid.shape[0],) or not bool(torch.isfinite(v).all()):
            raise ValueError(f"`derivative` must return finite values of shape (n,) for alpha={alpha}")
        derivs[alpha] = v.numpy()
    centres = 2 * grid.numpy() - 1
    coeffs = np.zeros((grid.shape[0], len(indices)))
    for g_index, gamma in enumerate(indices):
        for alpha in indices:
            if any(a < g for a, g in zip(alpha, gamma)):
                continue
            term = derivs[alpha] / math.prod(math.factorial(a) for a in alpha) * 0.5 ** sum(alpha)
            for i in range(d):
                term = term * math.comb(alpha[i], gamma[i]) * (-centres[:, i]) ** (alpha[i] - gamma[i])
            coeffs[:, g_index] += term
    return coeffs.reshape((K + 1,) * d + (len(indices),)), indices


def _sigmoid_forms(layer: _Layer, name: str, tau: float, K: int, coord: int) -> list[Form]:
    """Forms of S_k(x_coord) = S(τ(K x − k + ½)), k = 1..K, over hidden layer 1."""
    c0, parts = sigmoid_parts(name)
    forms: list[Form] = []
    for k in range(1, K + 1):
        out: dict[int, float] = {}
        err = 0.0
        for a, c, w in parts:
            bias = a * tau * (0.5 - k) + c
            top = a * tau * (K - k + 0.5) + c
            index, added = layer.unit({coord: a * tau * K}, bias, min(bias, top), max(bias, top))
            out[index] = w
            err += abs(w) * added
        forms.append((out, c0, err))
    return forms


def _phi_combination(S: list[Form], coeffs: np.ndarray) -> Form:
    """Σ_k c_k φ_k = c_0 + Σ_{k≥1} (c_k − c_{k−1}) S_k (telescoped)."""
    out: Form = ({}, float(coeffs[0]), 0.0)
    for k in range(1, len(coeffs)):
        delta = float(coeffs[k] - coeffs[k - 1])
        if delta != 0.0:
            out = _combine(out, _scaled(S[k - 1], delta), 1.0)
    return out


def _phi(S: list[Form], k: int, K: int) -> Form:
    e = np.zeros(K + 1)
    e[k] = 1.0
    return _phi_combination(S, e)


def parameter_estimate(d: int, K: int, kappa: int, activation: str) -> int:
    """An upper bound on the dense parameter count N of the network for (d, K, κ), without building it.

    A gadget for z^p has at most 2(⌈p/2⌉ + 4) units (half-widths tried by
    :func:`~.smooth_constant_depth_gadgets.make_gadget`); with P sigmoid units per knot (1 for tanh,
    2 otherwise) and #γ = C(d + κ, d) monomials: hidden 1 has W₁ ≤ d(PK + Σ_{j≤κ} u_j) units; for
    d = 1, hidden 2 has W₂ ≤ u₁ + 2κu₂; for d ≥ 2, hidden 2 has W₂ ≤ #γ((K + 1)^{d−1} + 1)2^{d−1}u_d
    (the products, then the monomials) and hidden 3 W₃ ≤ #γ·2u₂ + u₁. N = Σ_ℓ (w_{ℓ−1} + 1) w_ℓ.
    """

    def units(p: int) -> int:
        return 2 * (math.ceil(p / 2) + 4)

    per_knot = 1 if activation == "tanh" else 2
    widths = [d, d * (per_knot * K + sum(units(j) for j in range(1, kappa + 1)))]
    if d == 1:
        widths.append(units(1) + 2 * kappa * units(2))
    else:
        monomials = math.comb(d + kappa, d)
        widths.append(monomials * ((K + 1) ** (d - 1) + 1) * 2 ** (d - 1) * units(d))
        widths.append(monomials * 2 * units(2) + units(1))
    widths.append(1)
    return sum((a + 1) * b for a, b in zip(widths, widths[1:]))


def smooth_constant_depth_approximator(
    f: Any,
    s: float | None = None,
    K: int = 8,
    activation: str = "gelu",
    *,
    d: int | None = None,
    derivative: Callable[..., torch.Tensor] | None = None,
    R: float | None = None,
    tau: float = 8.0,
) -> SmoothConstantDepthApproximation:
    """Build the constant-depth smooth network for f ∈ C^{s,R}([0,1]^d) and its certificate.

    Args:
        f: a :class:`structnets.data.SmoothTarget` (carries d, derivatives, R, β), or a callable
            (n, d) → (n,) with ``d``, ``derivative`` and ``R`` given.
        s: smoothness s > 0 (default: the target's β); κ = ⌈s⌉ − 1 is the Taylor order.
        K: cells per axis, an int ≥ 1 (N grows like K^d).
        activation: "gelu", "silu" or "tanh".
        d, derivative, R: for a plain callable: dimension d ≥ 1, ``derivative(alpha, x)``
            = D^α f(x), and the Hölder constant R ≥ 0 of the order-κ derivatives (R = 0: f is a
            polynomial of degree ≤ κ, and the Taylor term T is 0).
        tau: sharpness τ > 0 of the sigmoidal partition of unity.

    Returns:
        a :class:`SmoothConstantDepthApproximation`; ``certificate.total`` bounds the float64
        sup error on [0,1]^d (module docstring: T + G + ρ, Liu et al., Theorems 4.1/4.4).

    Raises:
        ValueError: s ≤ 0, K < 1, d < 1, (K, d, s) so large that the build cannot fit in
            memory (the message gives :func:`parameter_estimate`'s N and the bytes it would
            take), R < 0, an unknown activation, f not callable or not finite on the grid of
            knots (each names the argument and the value).
    """
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(f"`activation` must be one of {list(ACTIVATIONS)}, got {activation!r}")
    if isinstance(K, bool) or not isinstance(K, int) or K < 1:
        raise ValueError(f"`K` must be an int >= 1, got {K!r}")
    if s is None:
        if not hasattr(f, "beta"):
            raise ValueError("`s` is required when `f` is not a SmoothTarget")
        s = float(f.beta)
    if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(s) or s <= 0:
        raise ValueError(f"`s` must be a finite real > 0, got {s!r}")
    s = float(s)
    tau = check_real("tau", tau, low=0.0, low_open=True)
    func, deriv, d, R = _resolve_target(f, s, d, derivative, R)
    kappa = math.ceil(s) - 1
    # refuse up front what cannot be built: the dense layers and the construction's forms
    # (Python dicts, about _FORM_BYTES per dense parameter) must fit in memory. For d ≥ 2 the products'
    # layer alone has ≥ (2(K + 1))^{d−1} units: decided in logs first, as that power of a huge d never ends
    # (an int d past 1e308 has no float: it is past any memory already)
    log2_products = math.inf if d > 2**64 else (d - 1) * math.log2(2 * (K + 1))
    if d >= 2 and log2_products > math.log2(memory_bytes()):
        shown = f"2^{log2_products:.4g}" if math.isfinite(log2_products) else "(2(K + 1))^(d − 1)"
        named = str(d) if d < 10**300 else f"~1e{int(d.bit_length() * math.log10(2))}"
        raise ValueError(
            f"`d`={named} with `K`={K} asks for at least {shown} network parameters "
            f"((2(K + 1))^(d−1) products), more than this machine's memory ({memory_bytes():.3g} bytes); reduce them"
        )
    check_fits_in_memory(
        f"`K`={K} (d={d})",
        parameter_estimate(d, K, kappa, activation),
        itemsize=_FORM_BYTES,
        what="network parameters",
    )
    R = R + 0.0  # -0.0 -> 0.0
    coeffs, indices = _coefficients(func, deriv, d, K, kappa)
    lam_all, lam_one, moment = partition_moments(activation, tau, K, s)
    taylor = taylor_constant(d, kappa) * R * K ** (-s) * d * lam_all ** (d - 1) * moment

    layer1 = _Layer(activation, None, d)
    S = [_sigmoid_forms(layer1, activation, tau, K, i) for i in range(d)]
    power_gadgets = [make_gadget(activation, j, 1.0) for j in range(1, kappa + 1)]
    powers = [[layer1.gadget(({i: 2.0}, -1.0, 0.0), g) for g in power_gadgets] for i in range(d)]
    consts: dict[str, float] = {
        "Lambda": lam_all,
        "Lambda_1": lam_one,
        "W_s": moment,
        "C_T": taylor_constant(d, kappa),
        "R": R,
        "tau": tau,
        "kappa": kappa,
    }
    for g in power_gadgets:
        consts[f"power{g.power}_n"], consts[f"power{g.power}_lambda"] = g.half_width, g.scale
    if d == 1:
        layers, readout, gadget_error, weight_parts = _plan_1d(
            layer1, S[0], powers[0], power_gadgets, coeffs, lam_all, lam_one, consts
        )
    else:
        layers, readout, gadget_error, weight_parts = _plan_nd(
            layer1, S, powers, power_gadgets, coeffs, indices, lam_all, lam_one, consts
        )
    all_layers = [layer1, *layers]
    modules: list[nn.Module] = []
    n_in = d
    for layer in all_layers:
        modules += [_linear(layer.rows, n_in), torch_activation(activation)]
        n_in = len(layer.rows)
    modules.append(_linear([(readout[0], readout[1])], n_in))
    network = nn.Sequential(*modules).to(torch.float64)
    last = all_layers[-1]
    output_fresh = _gamma(len(readout[0]) + 2) * (
        sum(abs(v) * last.magnitudes[j] for j, v in readout[0].items()) + abs(readout[1])
    )
    rounding = readout[2] + output_fresh
    ranges = [np.array(layer.ranges, dtype=np.float64) for layer in all_layers]
    consts["rounding_unstructured"] = rounding_bound(network, ranges, activation, d)
    linears = [m for m in network if isinstance(m, nn.Linear)]
    max_weight = max(float(p.detach().abs().max()) for p in network.parameters())
    weight_bound = max(
        [
            tau * K + 1.0,
            3.0 + 2.0 * max(g.node_range(1.0) for g in power_gadgets) if power_gadgets else 0.0,
            *weight_parts,
        ]
    ) * (1 + 1e-12)
    certificate = ConstantDepthCertificate(
        taylor=taylor,
        gadgets=gadget_error,
        rounding=rounding,
        depth=len(linears),
        widths=tuple(len(layer.rows) for layer in all_layers),
        parameters=int(sum(p.numel() for p in network.parameters())),
        nonzero_parameters=int(sum(int((p != 0).sum()) for p in network.parameters())),
        max_weight=max_weight,
        weight_bound=weight_bound,
        layer_norms=tuple(float(m.weight.detach().abs().sum(1).max()) for m in linears),
        constants=consts,
    )
    return SmoothConstantDepthApproximation(network, certificate, activation, s, K, d, kappa)


def _weight_parts(gadgets: list[Gadget], coefficient: float) -> list[float]:
    """Bounds on every weight and bias after hidden layer 1, from the gadgets used.

    With R = max_g n_g/λ_g (input scales), W = max_g max_i |w_i| (output weights), b = max_g |b_g|
    and C the largest coefficient of a Taylor form (≥ 1): a unit reads a form whose coefficients
    are ≤ max(C, W) and whose constant is ≤ 2 max(C, W), so its weights are ≤ R max(C, W) and its
    bias ≤ b + 2R max(C, W); the readout weights are ≤ W and its bias ≤ (#gadgets) W.
    """
    reach = max(max(abs(i) for i in g.nodes) / g.scale for g in gadgets)
    w_max = max(max(abs(w) for w in g.weights) for g in gadgets)
    b_max = max(abs(g.centre) for g in gadgets)
    c = max(coefficient, 1.0)
    return [reach * max(c, w_max), b_max + 2 * reach * max(c, w_max), w_max * c, len(gadgets) * w_max]


def _plan_1d(
    layer1: _Layer,
    S: list[Form],
    powers: list[Form],
    power_gadgets: list[Gadget],
    coeffs: np.ndarray,
    lam_all: float,
    lam_one: float,
    consts: dict[str, float],
) -> tuple[list[_Layer], Form, float, list[float]]:
    """Hidden 2: u^j·Φ_j (j ≥ 1) and identity(Φ₀); readout: their sum."""
    eps_pow = [g.truncation for g in power_gadgets]
    name = layer1.name
    layer2 = _Layer(name, layer1, 0)
    readout: Form = ({}, 0.0, 0.0)
    error = 0.0
    used: list[Gadget] = []
    c_max = float(np.max(np.abs(coeffs))) if coeffs.size else 0.0
    B0 = lam_all * float(np.max(np.abs(coeffs[:, 0])))
    identity = make_gadget(name, 1, max(B0, 1e-300))
    readout = _combine(readout, layer2.gadget(_phi_combination(S, coeffs[:, 0]), identity), 1.0)
    error += identity.truncation
    used.append(identity)
    for j in range(1, coeffs.shape[1]):
        B = lam_all * float(np.max(np.abs(coeffs[:, j])))
        a_bound = 1.0 + eps_pow[j - 1]
        square = make_gadget(name, 2, B + a_bound)
        used.append(square)
        Phi = _phi_combination(S, coeffs[:, j])
        readout = _combine(readout, layer2.product([Phi, powers[j - 1]], square), 1.0)
        # |prod(Φ, ũ^j) − Φ u^j| ≤ min(|Φ|, |ũ^j|)·sup|e′|/2 + |Φ|·ε_pow
        error += min(B, a_bound) * square.slope_error / 2 + B * eps_pow[j - 1]
        consts[f"square{j}_n"], consts[f"square{j}_lambda"], consts[f"Phi{j}_bound"] = (
            square.half_width,
            square.scale,
            B,
        )
    consts["identity_n"], consts["identity_lambda"], consts["coefficient_max"] = (
        identity.half_width,
        identity.scale,
        c_max,
    )
    return [layer2], readout, error, _weight_parts(used + power_gadgets, c_max)


def _plan_nd(
    layer1: _Layer,
    S: list[list[Form]],
    powers: list[list[Form]],
    power_gadgets: list[Gadget],
    coeffs: np.ndarray,
    indices: list[tuple[int, ...]],
    lam_all: float,
    lam_one: float,
    consts: dict[str, float],
) -> tuple[list[_Layer], Form, float, list[float]]:
    """d ≥ 2. Hidden 2: the d-fold products φ_{k₁}(x₁)⋯φ_{k_{d−1}}(x_{d−1})·g_{γ,k′}(x_d) with
    g_{γ,k′} = Σ_{k_d} c_{(k′,k_d),γ} φ_{k_d}(x_d) (linear in hidden 1), so Φ_γ = Σ_{k′}(those), and
    the monomials u^γ (a product of the powers u_i^{γ_i} with γ_i > 0, or an identity gadget);
    hidden 3: the products u^γ·Φ_γ and the identity carrying Φ₀. Every product is one layer of σ
    (polarisation, :meth:`_Layer.product`), so the depth is 4 weight layers for every d ≥ 2."""
    d = len(S)
    eps_pow = [g.truncation for g in power_gadgets]
    K = coeffs.shape[0] - 1
    name = layer1.name
    layer2 = _Layer(name, layer1, 0)
    layer3 = _Layer(name, layer2, 0)
    readout: Form = ({}, 0.0, 0.0)
    error = 0.0
    used: list[Gadget] = []
    c_max = float(np.max(np.abs(coeffs)))
    phis = [[_phi(S[i], k, K) for k in range(K + 1)] for i in range(d - 1)]
    lam_rest = math.prod([lam_all] * (d - 1))  # Σ_{k′} Π_{i<d} |φ_{k′_i}(x_i)| ≤ Λ^{d−1}
    for g_index, gamma in enumerate(indices):
        a_gamma = float(np.max(np.abs(coeffs[..., g_index])))
        G = lam_all * a_gamma  # sup |g_{γ,k′}(x_d)|
        power_d = make_gadget(name, d, G + (d - 1) * lam_one, _ROUNDING_WEIGHT * (K + 1) ** d)
        used.append(power_d)
        Phi: Form = ({}, 0.0, 0.0)
        for cell in itertools.product(range(K + 1), repeat=d - 1):
            g_form = _phi_combination(S[d - 1], coeffs[cell][:, g_index])
            factors = [g_form, *(phis[i][k] for i, k in enumerate(cell))]
            Phi = _combine(Phi, layer2.product(factors, power_d), 1.0)
        # Σ_{k′} Π_{i<d}|φ_{k′_i}|·sup|e^{(d−1)}|/d! (the product error, localised by the φ factors)
        delta_phi = lam_rest * power_d.derivative_error(d - 1) / math.factorial(d)
        B = math.prod([lam_all] * d) * a_gamma + delta_phi  # sup |Φ̃_γ|
        consts[f"gamma{gamma}_square_n"], consts[f"gamma{gamma}_square_lambda"] = power_d.half_width, power_d.scale
        if sum(gamma) == 0:
            identity = make_gadget(name, 1, max(B, 1e-300))
            used.append(identity)
            readout = _combine(readout, layer3.gadget(Phi, identity), 1.0)
            error += delta_phi + identity.truncation
            continue
        factor_ids = [(i, j) for i, j in enumerate(gamma) if j]
        if len(factor_ids) >= 2:
            bounds = [1.0 + eps_pow[j - 1] for _, j in factor_ids]
            gadget_m = make_gadget(name, len(factor_ids), sum(bounds))
            monomial = layer2.product([powers[i][j - 1] for i, j in factor_ids], gadget_m)
            others = min(math.prod(bounds[:r] + bounds[r + 1 :]) for r in range(len(bounds)))
            # |prod(ũ) − Π ũ| ≤ (min over one left out of Π|ũ|)·sup|e^{(m−1)}|/m!, and
            # |Π ũ − Π u| ≤ Σ_r ε_r Π_{l>r}(1 + ε_l) (telescoped, |u| ≤ 1)
            delta_m = others * gadget_m.derivative_error(len(factor_ids) - 1) / math.factorial(len(factor_ids))
            for r, (_, j) in enumerate(factor_ids):
                delta_m += eps_pow[j - 1] * math.prod(bounds[r + 1 :])
        else:
            ((i, j),) = factor_ids
            gadget_m = make_gadget(name, 1, 1.0 + eps_pow[j - 1])
            monomial = layer2.gadget(powers[i][j - 1], gadget_m)
            delta_m = gadget_m.truncation + eps_pow[j - 1]
        used.append(gadget_m)
        m_bound = 1.0 + delta_m
        square3 = make_gadget(name, 2, B + m_bound, _ROUNDING_WEIGHT * (K + 1) ** d)
        used.append(square3)
        readout = _combine(readout, layer3.product([Phi, monomial], square3), 1.0)
        # prod(Φ̃, m̃) − Φ m = [prod − Φ̃ m̃] + Φ̃(m̃ − m) + m(Φ̃ − Φ), |m| ≤ 1
        error += min(B, m_bound) * square3.slope_error / 2 + B * delta_m + delta_phi
    consts["coefficient_max"] = c_max
    return [layer2, layer3], readout, error, _weight_parts(used + power_gadgets, c_max)
