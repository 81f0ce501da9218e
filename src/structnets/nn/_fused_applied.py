"""The matrices a batch's members apply, and their gradients, as compiled loops (numba, optional).

A gradient-step block applies −τ·W (``x + ReLU(Wx + b)·(W·(−τ))``), a norm-constrained map
A = fl(V/s) with s = :func:`~structnets.functional.division_scale` of its bound B. On the compiled
path of :class:`~structnets.nn.CertifiedBatch` these matrices are formed once per step for every
member, from the weights the certificate was computed for, by :func:`applied_matrices` (the same
IEEE products and quotients torch forms: the same bits), and their backward pass is one call of
:func:`applied_gradients`: the matrix's own gradient (G·(−τ), G/s) plus the power-mode gradient of
the certified value (the ``"verified"`` mode's: of s/((1 + m)σ̂²) or √(1 + m)·σ̂ with v fixed), with
the gradient reaching τ or s (−Σ G∘W, −Σ G∘V/s²) summed in float64 (eight interleaved partial
sums). Issue 26: at 5 × 50 the dozen recorded tensor operations per member this replaces (negation,
product, quotient, their backward nodes, the values' unbinding) cost ≈ 5 % of a training step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _fused_memory
from ._fused_certify import _compiled, call_in


@_compiled
def _rounded(like: Any, value: float) -> Any:
    """``value`` rounded to nearest in the dtype of the scalar ``like``."""
    cell = np.full(1, like)
    cell[0] = value
    return cell[0]


@_compiled
def _dot64(a: Any, b: Any) -> float:
    """Σ a_i·b_i of two equal-length 1-D arrays in float64, in eight interleaved partial sums.

    One running sum is a chain of dependent additions that, without fast-math, the compiler may not
    reorder (32 µs for 39,200 terms); eight independent ones pipeline (11 µs). The order is fixed, so
    the result is deterministic.
    """
    n = a.shape[0]
    whole = n - n % 8
    partial = np.zeros(8)
    for i in range(0, whole, 8):
        for k in range(8):
            partial[k] += float(a[i + k]) * float(b[i + k])
    rest = 0.0
    for i in range(whole, n):
        rest += float(a[i]) * float(b[i])
    return (
        ((partial[0] + partial[1]) + (partial[2] + partial[3]))
        + ((partial[4] + partial[5]) + (partial[6] + partial[7]))
        + rest
    )


@_compiled
def applied_matrices(
    weights: Any, values: Any, is_tau: Any, division_factors: Any, rows: Any, cols: Any, out: Any, scales: Any
) -> None:
    """Write each map's applied matrix (flat, map after map, the weight dtype) and its scale.

    τ maps: −τ·W (``scales[b]`` = −τ). Norm maps: fl(V/s) with s = 1 where B ≤ 1 and fl(B·f) otherwise
    (f = ``division_factors[b]``, already rounded to the dtype as torch rounds a Python float before the
    product; ``scales[b]`` = s): :func:`~structnets.functional.division_scale`, whose rounding argument
    assumes the correctly rounded IEEE quotient of each entry, which this is (no fast-math).
    """
    one = np.ones(1, dtype=values.dtype)[0]
    at = 0
    for b in range(rows.shape[0]):
        n = rows[b] * cols[b]
        w, o = weights[at : at + n], out[at : at + n]
        if is_tau[b]:
            scale = -values[b]
            for i in range(n):
                o[i] = w[i] * scale
        else:
            bound = values[b]
            # NaN compares False: s = NaN·f, as torch.where(B <= 1, 1, B·f) gives
            scale = one if bound <= 1.0 else bound * division_factors[b]
            for i in range(n):
                o[i] = w[i] / scale
        scales[b] = scale
        at += n


@_compiled
def applied_gradients(
    value_grads: Any,
    grad_addresses: Any,
    weights: Any,
    values: Any,
    scales: Any,
    is_tau: Any,
    division_factors: Any,
    slopes: Any,
    inverses: Any,
    step_slopes: Any,
    learnable: Any,
    left: Any,
    vectors: Any,
    rows: Any,
    cols: Any,
    weight_grads: Any,
    step_grads: Any,
) -> None:
    """The gradients reaching each map's W and θ from its value and its applied matrix (flat layouts).

    For G the gradient of map b's matrix, read at ``grad_addresses[b]`` (C-contiguous, the weight dtype;
    address 0: no gradient, G = 0; see :func:`._fused_memory.addresses`) and g = ``value_grads[b]``:
    the gradient reaching the value is g + (−Σ G∘W) for a τ map (M = W·(−τ)) and g + f·(−Σ G∘V)/s² for a
    norm map with B > 1 (A = V/s, s = fl(B·f); B ≤ 1: s = 1, no gradient to B), each sum in float64 and
    rounded once; with c its product with ``slopes[b]`` (rounded as the tensor path rounds g·slope), the
    weight gradient is G·(−τ) + (c·u_b)·v_b (or G/s + …) and θ's is (g·inverse)·ds/dθ. Where no matrix
    gradient reaches a map, the products are exactly the values-only power-mode gradient's.
    """
    at = at_v = at_l = 0
    for b in range(rows.shape[0]):
        r, c = rows[b], cols[b]
        n = r * c
        g = value_grads[b]
        out = weight_grads[at : at + n].reshape((r, c))
        u, v = left[at_l : at_l + r], vectors[at_v : at_v + c]
        scale = scales[b]
        direct = grad_addresses[b] != 0
        flat_grad = _fused_memory.at(grad_addresses[b], n if direct else 0, weights)
        grad = flat_grad.reshape((r, c)) if direct else flat_grad.reshape((0, c))
        if direct:
            total = _dot64(flat_grad, weights[at : at + n])
            if is_tau[b]:
                g = _rounded(g, float(g) - total)
            elif values[b] > 1.0:
                g = _rounded(g, float(g) - float(division_factors[b]) * total / (float(scale) * float(scale)))
        coefficient = g * slopes[b]
        for i in range(r):
            row = coefficient * u[i]
            if not direct:
                for j in range(c):
                    out[i, j] = row * v[j]
            elif is_tau[b]:
                for j in range(c):
                    out[i, j] = grad[i, j] * scale + row * v[j]
            else:
                for j in range(c):
                    out[i, j] = grad[i, j] / scale + row * v[j]
        if learnable[b]:
            step_grads[b] = g * inverses[b] * step_slopes[b]
        at, at_v, at_l = at + n, at_v + c, at_l + r


def call(kernel: str, *arguments: Any) -> None:
    """Run this module's compiled ``kernel`` by name, with :func:`._fused_certify.call`'s disk-cache fallback."""
    call_in(globals(), kernel, *arguments)


__all__ = ["applied_gradients", "applied_matrices", "call"]
