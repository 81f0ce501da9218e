"""The layer program of :func:`.swish_approximator.swish_approximator`: Swish groups and their error bounds.

Li, Li, Wang, Tang, *Approximation to Smooth Functions by Low-Rank Swish Networks* (ICML 2025),
Sec. 4: each layer carries quantities through the bottleneck with a bound on the value and on the
error; identities are exact (ρ(z) − ρ(−z) = z), products come from two Swish squares.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from ..nn import LowRankLinear, Swish
from .swish_bump import BUMP_MAX, absolute_sum_excess


def multi_indices(d: int, max_degree: int) -> list[tuple[int, ...]]:
    """All α ∈ ℕ^d with |α| ≤ max_degree, ordered by degree then lexicographically (descending)."""
    out = [a for a in itertools.product(range(max_degree + 1), repeat=d) if sum(a) <= max_degree]
    return sorted(out, key=lambda a: (sum(a), tuple(-v for v in a)))


# --------------------------------------------------------------------------------------------
# The layer program: quantities with (value bound, error bound), groups of Swish units


@dataclass
class _Quantity:
    """A scalar the bottleneck carries: |true value| ≤ bound, |computed − true| ≤ error."""

    bound: float
    error: float


@dataclass
class _Stage:
    """One Swish layer: unit pre-activations over the incoming quantities, and group readouts.

    ``units``: (weights {quantity index: coefficient}, bias); ``groups``: (unit indices,
    readout coefficients) → one output each; ``carry``: next quantities as {output: coef}.
    """

    units: list[tuple[dict[int, float], float]] = field(default_factory=list)
    groups: list[tuple[list[int], list[float]]] = field(default_factory=list)
    next_quantities: list[dict[int, float]] = field(default_factory=list)

    def add_group(self, units: list[tuple[dict[int, float], float]], readout: list[float]) -> int:
        start = len(self.units)
        self.units.extend(units)
        self.groups.append((list(range(start, start + len(units))), readout))
        return len(self.groups) - 1

    def carry(self, q: int) -> int:
        """Identity ρ(z) − ρ(−z) = z (exact)."""
        return self.add_group([({q: 1.0}, 0.0), ({q: -1.0}, 0.0)], [1.0, -1.0])

    def product(self, a: int, b: int, scale: float, lam: float) -> int:
        """(λ²/2)(h(w₁) − h(w₂)), w = (s·a ± b/s)/λ, h(z) = ρ(z) + ρ(−z) ≈ ab."""
        plus = _combine({a: scale / lam}, {b: 1.0 / (scale * lam)})
        minus = _combine({a: scale / lam}, {b: -1.0 / (scale * lam)})
        neg = lambda w: {k: -v for k, v in w.items()}  # noqa: E731
        half = lam * lam / 2.0
        return self.add_group(
            [(plus, 0.0), (neg(plus), 0.0), (minus, 0.0), (neg(minus), 0.0)], [half, half, -half, -half]
        )


def _combine(u: dict[int, float], v: dict[int, float]) -> dict[int, float]:
    out = dict(u)
    for k, c in v.items():
        out[k] = out.get(k, 0.0) + c
    return out


def _product_bounds(a: _Quantity, b: _Quantity, lam: float) -> tuple[_Quantity, float]:
    """Bounds of the Swish product of a and b, and the balancing scale s = √(B̃/Ã).

    |computed − ab| ≤ Ã²B̃²/(3λ²) + A·E_b + B·E_a + E_a·E_b with Ã = A + E_a, B̃ = B + E_b.
    """
    a_t, b_t = a.bound + a.error, b.bound + b.error
    scale = math.sqrt(b_t / a_t) if a_t > 0 and b_t > 0 else 1.0
    error = (a_t * b_t) ** 2 / (3.0 * lam * lam) + a.bound * b.error + b.bound * a.error + a.error * b.error
    return _Quantity(a.bound * b.bound, error), scale


def _plan(
    d: int, kappa: int, M: int, coeffs: np.ndarray, tau: float, lam: float
) -> tuple[list[_Stage], dict[int, float], float]:
    """Lay out the Swish layers and propagate error bounds.

    Returns the stages, the final readout {output index of the last stage: coefficient}, and the
    product-error bound P. With an empty ``coeffs`` only the layout is produced (for widths).
    """
    indices = multi_indices(d, kappa)
    have_coeffs = coeffs.size > 0
    cells = list(itertools.product(range(M + 1), repeat=d))
    cell_row = {m: sum(mi * (M + 1) ** (d - 1 - i) for i, mi in enumerate(m)) for m in cells}
    a_sum = 1.0 + absolute_sum_excess(tau)

    # Stage 1 reads the input x (quantities 0..d−1) directly.
    stage = _Stage()
    x_out = [stage.carry(i) for i in range(d)]
    bump_out: dict[tuple[int, int], int] = {}
    for i in range(d):
        for m in range(M + 1):
            units = [({i: 3.0 * M * tau}, tau * (s - 3.0 * m)) for s in (2.0, 1.0, -1.0, -2.0)]
            bump_out[(i, m)] = stage.add_group(units, [1 / tau, -1 / tau, -1 / tau, 1 / tau])
    stages = [stage]

    # Symbolic state after each stage: named quantities → (linear form over stage outputs, bounds).
    def phi_sums(
        partial: dict[tuple[int, ...], tuple[dict[int, float], _Quantity]],
    ) -> dict[tuple, tuple[dict[int, float], _Quantity]]:
        """Φ_γ = Σ_m a_{m,γ} φ_m as linear forms over outputs, with bounds."""
        result: dict[tuple, tuple[dict[int, float], _Quantity]] = {}
        for g_index, gamma in enumerate(indices):
            form: dict[int, float] = {}
            error = 0.0
            largest = 0.0
            for m in cells:
                coef = float(coeffs[cell_row[m], g_index]) if have_coeffs else 1.0
                lin, q = partial[m]
                for k, c in lin.items():
                    form[k] = form.get(k, 0.0) + coef * c
                error += abs(coef) * q.error
                largest = max(largest, abs(coef))
            # |Φ_γ| ≤ max_m |a_{m,γ}| · Σ_m |φ_m^τ| ≤ max |a| (1 + ε_A)^d.
            result[("Phi",) + gamma] = (form, _Quantity(largest * a_sum**d, error))
        return result

    # Current "pending" quantities: name → (linear form over the last stage's outputs, bounds).
    pending: dict[tuple, tuple[dict[int, float], _Quantity]] = {}
    for i in range(d):
        if kappa >= 1:
            unit = tuple(1 if j == i else 0 for j in range(d))
            pending[("mono",) + unit] = ({x_out[i]: 1.0}, _Quantity(1.0, 0.0))
    if d == 1:
        partial: dict[tuple[int, ...], tuple[dict[int, float], _Quantity]] = {
            (m,): ({bump_out[(0, m)]: 1.0}, _Quantity(BUMP_MAX, 0.0)) for m in range(M + 1)
        }
        pending.update(phi_sums(partial))
    else:
        for i in range(d):
            for m in range(M + 1):
                pending[("psi", i, m)] = ({bump_out[(i, m)]: 1.0}, _Quantity(BUMP_MAX, 0.0))

    if d == 1 and kappa >= 2:
        return _plan_horner_1d(stages, pending, kappa, lam)

    product_stages = max(d - 1, kappa - 1, 0)
    for s in range(2, 2 + product_stages):
        stage = _Stage()
        names = list(pending)
        index = {name: k for k, name in enumerate(names)}
        stage_quantities = [pending[name][1] for name in names]
        stages[-1].next_quantities = [pending[name][0] for name in names]
        new: dict[tuple, tuple[dict[int, float], _Quantity]] = {}
        # Partial bump products over the first s coordinates (while s ≤ d).
        if s <= d:
            prefix_prev = s - 1
            for prefix in itertools.product(range(M + 1), repeat=s):
                left: tuple[str | int, ...]
                if prefix_prev == 1:
                    left = ("psi", 0, prefix[0])
                else:
                    left = ("part",) + prefix[:-1]
                right = ("psi", s - 1, prefix[-1])
                q, scale = _product_bounds(stage_quantities[index[left]], stage_quantities[index[right]], lam)
                new[("part",) + prefix] = ({stage.product(index[left], index[right], scale, lam): 1.0}, q)
        # Monomials of degree s (while s ≤ κ): x^γ = x^{γ − e_i}·x_i, i the first nonzero index.
        if s <= kappa:
            for gamma in indices:
                if sum(gamma) != s:
                    continue
                i = next(j for j, g in enumerate(gamma) if g > 0)
                lower = tuple(g - (1 if j == i else 0) for j, g in enumerate(gamma))
                unit = tuple(1 if j == i else 0 for j in range(d))
                a, b = index[("mono",) + lower], index[("mono",) + unit]
                q, scale = _product_bounds(stage_quantities[a], stage_quantities[b], lam)
                new[("mono",) + gamma] = ({stage.product(a, b, scale, lam): 1.0}, q)
        # Carry what later stages still need.
        for name in names:
            # Φ_γ and monomials are read by the last stage; ψ of coordinate i by stage i + 1.
            kind = name[0]
            needed = kind in ("Phi", "mono") or (kind == "psi" and name[1] >= s)
            if not needed:
                continue
            new[name] = ({stage.carry(index[name]): 1.0}, stage_quantities[index[name]])
        if s == d:
            partial = {m: new.pop(("part",) + m) for m in cells}
            for key in [k for k in new if k[0] == "psi"]:
                new.pop(key)
            new.update(phi_sums(partial))
        stages.append(stage)
        pending = new

    # Last stage: Σ_γ x^γ Φ_γ (products for |γ| ≥ 1, Φ_0 carried).
    stage = _Stage()
    names = list(pending)
    index = {name: k for k, name in enumerate(names)}
    stages[-1].next_quantities = [pending[name][0] for name in names]
    stage_quantities = [pending[name][1] for name in names]
    readout: dict[int, float] = {}
    product_error = 0.0
    for gamma in indices:
        phi = index[("Phi",) + gamma]
        if sum(gamma) == 0:
            readout[stage.carry(phi)] = 1.0
            product_error += stage_quantities[phi].error
            continue
        mono = index[("mono",) + gamma]
        q, scale = _product_bounds(stage_quantities[mono], stage_quantities[phi], lam)
        readout[stage.product(mono, phi, scale, lam)] = 1.0
        product_error += q.error
    stages.append(stage)
    return stages, readout, product_error


def _plan_horner_1d(
    stages: list[_Stage], pending: dict[tuple, tuple[dict[int, float], _Quantity]], kappa: int, lam: float
) -> tuple[list[_Stage], dict[int, float], float]:
    """d = 1, κ ≥ 2: evaluate Σ_j x^j Φ_j by a parallel Horner scheme, κ more Swish layers.

    Terms T_j start as Φ_j with a pending power j. Every stage multiplies each term whose power is
    still ≥ 1 by x (one Swish product each, all sharing the factor x) and carries x and an
    accumulator; terms whose power has reached 0 are added to the accumulator in the next
    bias-free linear layer (a linear map, free). The depth equals the monomial schedule's
    (1 + κ Swish layers), but x is the only factor shared by many products, so a stage with k
    products reads k + 2 quantities and has 4k + 4 units (4k + 2 in the last): the rank is
    ≤ 1/3 of the width by construction whenever k ≥ 2, and the widest layer, 4κ + 4 units (stage 2,
    rank κ + 2), sets W ≥ 3(κ + 2) for κ ≥ 2: no padding. The monomial schedule carried every
    Φ_j and every x^j to the end (rank 2κ + 1 with 4 + 2(2κ − 1) units, padded to 3(2κ + 1)).

    Error propagation: the product of x (bound 1, exact) and a term (bound B, error E) has error
    ≤ (1 + E)²(B + E)²/(3λ²) + E (:func:`_product_bounds`); the accumulator's error is the sum of
    its terms' errors, and it is the product error P of the whole network.
    """
    x_q = pending[("mono", 1)]
    acc = pending[("Phi", 0)]
    terms = [(j, pending[("Phi", j)]) for j in range(1, kappa + 1)]
    while terms:
        stage = _Stage()
        inputs = [x_q, acc] + [term for _, term in terms]
        stages[-1].next_quantities = [form for form, _ in inputs]
        quantities = [q for _, q in inputs]
        new_terms = []
        for k, (power, _) in enumerate(terms):
            q, scale = _product_bounds(quantities[0], quantities[2 + k], lam)
            new_terms.append((power - 1, ({stage.product(0, 2 + k, scale, lam): 1.0}, q)))
        acc = ({stage.carry(1): 1.0}, quantities[1])
        if any(power >= 1 for power, _ in new_terms):
            x_q = ({stage.carry(0): 1.0}, quantities[0])
        stages.append(stage)
        terms = []
        for power, (form, q) in new_terms:
            if power == 0:  # fold into the accumulator: a sum of linear forms over this stage's outputs
                acc = (_combine(acc[0], form), _Quantity(acc[1].bound + q.bound, acc[1].error + q.error))
            else:
                terms.append((power, (form, q)))
    return stages, acc[0], acc[1].error


def _assemble(stages: list[_Stage], readout: dict[int, float], d: int) -> tuple[nn.Sequential, int, tuple[int, ...]]:
    """Turn the stages into Linear / Swish / LowRankLinear layers in float64."""
    ranks = tuple(len(s.next_quantities) for s in stages[:-1])
    width = max(max(len(s.units) for s in stages), 3 * max(ranks, default=1))
    dtype = torch.float64

    def pre_activation(stage: _Stage, n_in: int) -> tuple[torch.Tensor, torch.Tensor]:
        weight = torch.zeros(width, n_in, dtype=dtype)
        bias = torch.zeros(width, dtype=dtype)
        for row, (lin, b) in enumerate(stage.units):
            for k, c in lin.items():
                weight[row, k] += c
            bias[row] = b
        return weight, bias

    def group_readout(stage: _Stage) -> torch.Tensor:
        out = torch.zeros(len(stage.groups), width, dtype=dtype)
        for g, (units, coefs) in enumerate(stage.groups):
            for u, c in zip(units, coefs):
                out[g, u] = c
        return out

    def forms(stage: _Stage, rows: list[dict[int, float]]) -> torch.Tensor:
        out = torch.zeros(len(rows), len(stage.groups), dtype=dtype)
        for r, lin in enumerate(rows):
            for k, c in lin.items():
                out[r, k] += c
        return out

    layers: list[nn.Module] = []
    first = nn.Linear(d, width, dtype=dtype)
    weight, bias = pre_activation(stages[0], d)
    with torch.no_grad():
        first.weight.copy_(weight)
        first.bias.copy_(bias)
    layers += [first, Swish(dtype=dtype)]
    for previous, stage, rank in zip(stages[:-1], stages[1:], ranks):
        block = LowRankLinear(width, width, rank, bias=True, dtype=dtype)
        down = forms(previous, previous.next_quantities) @ group_readout(previous)
        weight, bias = pre_activation(stage, rank)
        with torch.no_grad():
            block.V.copy_(down)
            block.U.copy_(weight)
            block.bias.copy_(bias)
        layers += [block, Swish(dtype=dtype)]
    last = nn.Linear(width, 1, dtype=dtype)
    with torch.no_grad():
        last.weight.copy_(forms(stages[-1], [readout]) @ group_readout(stages[-1]))
        last.bias.zero_()
    layers.append(last)
    return nn.Sequential(*layers), width, ranks
