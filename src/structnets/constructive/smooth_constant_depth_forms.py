"""The affine forms and hidden layers the constant-depth smooth construction is built from.

A *form* is (Σ coef·unit, const, bound on its float64 error): an affine function of the units of one
hidden layer, carried with the worst-case rounding error of computing it, so that the construction in
:mod:`structnets.constructive.smooth_constant_depth` (Liu, Wang, Wu, Zhang, arXiv 2602.19691,
Theorems 4.1/4.4) can state a certified error bound of the network it builds.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import torch
from torch import nn

from .smooth_constant_depth_gadgets import (
    UNIT_ROUNDOFF,
    Gadget,
    derivative_sup,
    unit_magnitude,
)

Form = tuple[dict[int, float], float, float]  # (Σ coef·unit, const, bound on its float64 error)


class Layer:
    """Units σ(Σ_j a_j h_j + b) of one hidden layer, their pre-activation intervals and output
    magnitude bounds, and the float64 error of every quantity built from them.

    Rounding (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.1): a unit's
    pre-activation, a dot product of length m with weights stored to relative u, errs by
    ≤ γ_{m+2}(Σ_j |a_j||h_j| + |b|) plus Σ_j a_j (h̃_j − h_j), the error of the form it reads; the
    latter is the same for every stencil node of a gadget (they read one form), so it passes
    through the gadget multiplied by sup|g′| (mean value theorem), not by Σ_i |w_i||i|/λ; each
    node adds |w_i|(sup|σ′|·γ_{m+2}(…) + 8u(|σ(y)| + |y|)) (the activation evaluated to a few
    ulps of its inputs).
    """

    def __init__(self, name: str, previous: Layer | None, d: int) -> None:
        self.name = name
        self.rows: list[tuple[dict[int, float], float]] = []
        self.ranges: list[tuple[float, float]] = []
        self.magnitudes: list[float] = []
        # the previous layer's list itself: its units all exist before this layer reads them
        self.inputs = previous.magnitudes if previous is not None else [1.0] * d
        self.lipschitz = derivative_sup(name, 1)

    def unit(self, coeffs: dict[int, float], bias: float, lo: float, hi: float) -> tuple[int, float]:
        """Add a unit; returns its index and the error it adds per unit output weight."""
        self.rows.append((coeffs, bias))
        self.ranges.append((lo, hi))
        magnitude = float(unit_magnitude(self.name, np.array([lo]), np.array([hi]))[0])
        self.magnitudes.append(magnitude)
        length = len(coeffs) + 2
        fresh = gamma(length) * (sum(abs(v) * self.inputs[j] for j, v in coeffs.items()) + abs(bias))
        added = self.lipschitz * fresh + 8 * UNIT_ROUNDOFF * (magnitude + max(abs(lo), abs(hi)))
        return len(self.rows) - 1, added

    def gadget(self, form: Form, g: Gadget, scale: float = 1.0) -> Form:
        """scale·g(form) as a form over this layer (form: over the previous layer; |form| ≤ g.range)."""
        out: dict[int, float] = {}
        coeffs, const, err_in = form
        reach_in = g.range + err_in
        if g.exact:
            slope = 1.0
        else:
            slope = g.power * reach_in ** (g.power - 1) + g.slope_error * (reach_in / g.range) ** (2 * g.half_width + 2)
        err = abs(scale) * slope * err_in
        for i, w in zip(g.nodes, g.weights):
            c = i / g.scale
            reach = abs(c) * reach_in
            index, added = self.unit(
                {j: c * v for j, v in coeffs.items()}, g.centre + c * const, g.centre - reach, g.centre + reach
            )
            out[index] = scale * w
            err += abs(scale * w) * added
        return out, scale * g.const, err

    def product(self, forms: list[Form], power: Gadget) -> Form:
        """Polarisation: Π_{i=1}^m a_i = Σ_{ε∈{±1}^{m−1}} (Π ε_i) (a_1 + Σ_{i≥2} ε_i a_i)^m/(2^{m−1} m!),
        each m-th power made by the gadget ``power`` (p = m, range ≥ Σ_i |a_i|); m = 2 is
        (g₂(a + b) − g₂(a − b))/4.

        The gadget's error e = g − z^m enters as the mixed difference
        Σ_ε (Π ε_i) e(a_1 + Σ ε_i a_i) = Δ_{2a_2}⋯Δ_{2a_m} e(a_1 − Σ_{i≥2} a_i), which is
        2^{m−1} a_2⋯a_m times a mean of e^{(m−1)} over points of [−A, A]: the product errs by
        ≤ |a_2⋯a_m| sup|e^{(m−1)}|/m! (any factor may play a_1), i.e. in proportion to the
        other factors — localised when they are partition-of-unity bumps.
        """
        m = len(forms)
        if m < 2 or power.power != m:
            raise ValueError(f"`power` must be the p = {m} gadget for {m} factors (m >= 2), got p = {power.power}")
        scale = 1.0 / (2 ** (m - 1) * math.factorial(m))
        out: Form | None = None
        for signs in itertools.product((1.0, -1.0), repeat=m - 1):
            z = forms[0]
            for sign, form in zip(signs, forms[1:]):
                z = combine(z, form, sign)
            term = self.gadget(z, power, math.prod(signs) * scale)
            out = term if out is None else combine(out, term, 1.0)
        assert out is not None
        return out


def gamma(m: int) -> float:
    return m * UNIT_ROUNDOFF / (1 - m * UNIT_ROUNDOFF)


def combine(a: Form, b: Form, sign: float) -> Form:
    out = dict(a[0])
    for j, v in b[0].items():
        out[j] = out.get(j, 0.0) + sign * v
    return out, a[1] + sign * b[1], a[2] + b[2]


def scaled(a: Form, factor: float) -> Form:
    return {j: factor * v for j, v in a[0].items()}, factor * a[1], abs(factor) * a[2]


def linear(rows: list[tuple[dict[int, float], float]], n_in: int) -> nn.Linear:
    layer = nn.Linear(n_in, len(rows), dtype=torch.float64)
    W = np.zeros((len(rows), n_in))
    b = np.array([bias for _, bias in rows], dtype=np.float64)
    counts = [len(coeffs) for coeffs, _ in rows]
    r = np.repeat(np.arange(len(rows)), counts)
    j = np.fromiter((j for coeffs, _ in rows for j in coeffs), dtype=np.int64, count=int(sum(counts)))
    v = np.fromiter((v for coeffs, _ in rows for v in coeffs.values()), dtype=np.float64, count=int(sum(counts)))
    W[r, j] = v
    with torch.no_grad():
        layer.weight.copy_(torch.from_numpy(W))
        layer.bias.copy_(torch.from_numpy(b))
    return layer


__all__ = ["Form", "Layer", "combine", "gamma", "linear", "scaled"]
