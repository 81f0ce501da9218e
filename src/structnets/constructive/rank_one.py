"""Rank-1 interpolation: a network whose weights are all rank 1 fits any finite data set exactly.

Chen, Li, Kim, Lavaei, arXiv 2605.05659 (the interpolation half of the paper's paradox).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from .._validation import check_choice
from .dlor_factor import F64, _check_finite

# --------------------------------------------------------------------------------------------
# Rank-1 interpolation


def rank_one_interpolant(
    x: Any,
    y: Any,
    activation: str = "relu",
    *,
    dtype: torch.dtype = F64,
) -> nn.Sequential:
    """A pure rank-1 network (every weight u vᵀ, α = 0) with f(x_i) = y_i for every i.

    With a direction v on which the inputs project to distinct t_i = vᵀx_i (v = 1 for scalar
    inputs, else the best separating of 65 deterministic candidate directions), the
    one-hidden-layer network ``RankOne(d→n), σ, RankOne(n→1)`` computes
    f(x) = Σ_j a_j σ(κ(vᵀx − β_j)) + c: its hidden weight is (κ1_n)vᵀ and its output weight is
    1·aᵀ, both rank 1. With the sorted t_(1) < … < t_(n), minimal gap δ, breakpoints β_j below t_(j):

    * ``"relu"``: β_1 = t_(1) − δ, β_j = t_(j−1) (j ≥ 2), κ = 1, c = 0; the matrix
      A_ij = σ(κ(t_(i) − β_j)) is lower triangular with positive diagonal, so a_j follow by
      forward substitution: the piecewise-linear interpolant.
    * other ReLU-like σ (swish, silu, gelu, softplus): the same β_j with κ = 30/δ, so the
      entries above the diagonal are σ(≤ −30) ≈ 0 and a = A⁻¹y is a near-triangular solve.
    * step-like σ (tanh, sigmoid): β_j = t_(j) − δ/2, κ = 8/δ; A is close to a triangular
      matrix of ±1 (or 0/1) and well conditioned.

    This is the interpolation half of the rank-1 paradox in Chen et al. (arXiv 2605.05659):
    exact fit on any finite data set, yet the output only ever depends on vᵀx.

    Args:
        x: (n,) scalar inputs or (n, d) inputs, pairwise distinct, finite.
        y: (n,) scalar targets, finite.
        activation: a name from :data:`structnets.nn.ACTIVATIONS` except ``identity``
            (``"relu"``: exact triangular solve; others: a square float64 solve).
        dtype: dtype of the returned network (float64 keeps the fit exact to ~1e-12).

    Returns:
        an ``nn.Sequential`` mapping ``(*, d)`` → ``(*, 1)`` (``d = 1`` for scalar inputs).

    Raises:
        TypeError: ``x`` or ``y`` is not an array of real numbers, or ``dtype`` is not a
            floating-point torch dtype.
        ValueError: duplicate inputs (naming the two indices), mismatched lengths, non-finite
            values, no points, or a solve whose residual exceeds max(1e-9, 8u·spread/gap)·max(1, max|y|) (rounding
            amplified by the ratio of the inputs' spread to their smallest gap, while that ratio
            leaves float64 at least 1e-6 relative accuracy; else 1e-9): the message
            gives the residual and condition number and, when the two closest projected inputs are
            within 1e-6 of the spread, names them as nearly coincident and says to merge or
            rescale them (and, for activations other than ReLU, that ReLU's triangular solve may
            succeed).
    """
    from ..nn import ACTIVATIONS, RankOneLinear
    from ..nn import activation as make_activation

    check_choice("activation", activation, [a for a in ACTIVATIONS if a != "identity"])
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"`dtype` must be a floating-point torch.dtype (e.g. torch.float64), got {dtype!r}")
    inputs = torch.as_tensor(_real_array("x", x))
    targets = torch.as_tensor(_real_array("y", y))
    if inputs.ndim == 1:
        inputs = inputs[:, None]
    if inputs.ndim != 2 or inputs.shape[0] < 1:
        raise ValueError(f"`x` must have shape (n,) or (n, d) with n >= 1, got shape {tuple(np.shape(x))}")
    if targets.ndim != 1 or targets.shape[0] != inputs.shape[0]:
        raise ValueError(f"`y` must have shape ({inputs.shape[0]},) to match `x`, got shape {tuple(targets.shape)}")
    _check_finite("x", inputs)
    _check_finite("y", targets)
    _check_distinct(inputs)

    direction = _separating_direction(inputs)
    t = inputs @ direction
    order = torch.argsort(t)
    ts, ys = t[order], targets[order]
    n = len(ts)
    gap = float((ts[1:] - ts[:-1]).min()) if n > 1 else 1.0
    sigma = make_activation(activation).to(F64)
    if activation in _STEP_LIKE:
        scale, breaks = 8.0 / gap, ts - gap / 2
    else:  # ReLU-like: σ(κs) ≈ κ·max(s, 0) up to e^{-30}, so A is numerically lower triangular
        scale = 1.0 if activation == "relu" else 30.0 / gap
        breaks = torch.cat([ts[:1] - gap, ts[:-1]])
    # The arguments rounded as the network rounds them, fl(fl(κ·t) + fl(−κβ)), not κ(t − β): far
    # from 0 the two differ by ~ε·κ|t|, and a solve of the other matrix missed y by 7.7e-8 at
    # t ≈ −5e5 (sigmoid) after its residual had passed the 1e-9 check.
    biases = -scale * breaks
    with torch.no_grad():
        matrix = sigma(ts[:, None] * scale + biases[None, :])
    if activation == "relu":
        coefficients = torch.linalg.solve_triangular(matrix, ys[:, None], upper=False)[:, 0]
    else:
        coefficients = torch.linalg.solve(matrix, ys)
    residual = float((matrix @ coefficients - ys).abs().max())
    allowed = _allowed_residual(ts, gap, ys)
    if not math.isfinite(residual) or residual > allowed:
        raise ValueError(_interpolation_failure(activation, inputs, t, order, matrix, coefficients, residual, allowed))

    hidden = RankOneLinear(inputs.shape[1], n, dtype=F64)
    output = RankOneLinear(n, 1, dtype=F64)
    with torch.no_grad():
        hidden.u.fill_(scale)
        hidden.v.copy_(direction)
        hidden.bias.copy_(biases)
        output.u.fill_(1.0)
        output.v.copy_(coefficients)
        output.bias.zero_()
    return nn.Sequential(hidden, sigma, output).to(dtype)


def _real_array(name: str, value: Any) -> np.ndarray:
    """``value`` as a float64 array, or a TypeError naming ``name`` (text, None, complex, objects)."""
    if value is None or isinstance(value, (str, bytes)):
        raise TypeError(f"`{name}` must be an array of real numbers, got {value!r:.80}")
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        if value.is_complex():
            raise TypeError(f"`{name}` must hold real numbers, got a tensor of dtype {value.dtype}")
        return value.to(torch.float64).numpy()
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as e:  # ragged nested sequences
        raise TypeError(f"`{name}` must be an array of real numbers, got {value!r:.80} ({e})") from None
    if raw.dtype.kind not in "biufO":
        raise TypeError(f"`{name}` must hold real numbers, got an array of dtype {raw.dtype}: {value!r:.80}")
    try:
        return raw.astype(np.float64)
    except (TypeError, ValueError) as e:
        raise TypeError(f"`{name}` must hold real numbers, got {value!r:.80} ({e})") from None


def _interpolation_failure(
    activation: str,
    inputs: torch.Tensor,
    t: torch.Tensor,
    order: torch.Tensor,
    matrix: torch.Tensor,
    coefficients: torch.Tensor,
    residual: float,
    allowed: float,
) -> str:
    """The message of a failed interpolation solve: what failed, on which inputs, what to do."""
    ts = t[order]
    spread = float(ts[-1] - ts[0])
    gaps = ts[1:] - ts[:-1]
    where = int(torch.argmin(gaps))
    gap = float(gaps[where])
    i, j = int(order[where]), int(order[where + 1])
    condition = float(torch.linalg.cond(matrix))
    largest = float(coefficients.abs().max())
    text = (
        f"`activation`={activation!r}: the interpolation system was solved only to a residual of "
        f"{residual:.3g} (allowed {allowed:.3g}; condition number {condition:.3g}, output weights up to "
        f"{largest:.3g}). "
    )
    distance = float(torch.linalg.vector_norm(inputs[i] - inputs[j]))
    projected = "" if inputs.shape[1] == 1 else f" (they are {distance:.3g} apart before the projection vᵀx)"
    if spread > 0 and gap / spread < 1e-6:
        text += (
            f"The inputs are nearly coincident at this scale: x[{i}] and x[{j}] project to t = "
            f"{float(t[i]):.6g} and {float(t[j]):.6g}{projected}, a gap of {gap:.3g} against a spread of "
            f"{spread:.3g} ({gap / spread:.2g} of it): the system is about as ill-conditioned as spread/gap "
            "and rounding swamps the fit. Merge or drop near-duplicate inputs (averaging their "
            "targets); rescaling x does not help, only the ratio gap/spread matters"
        )
    else:
        text += (
            f"The inputs are not nearly coincident (smallest gap {gap:.3g} = {gap / spread:.2g} of the "
            f"spread {spread:.3g}); the {activation!r} system is ill-conditioned on them"
        )
    if activation != "relu":
        text += ", or use activation='relu', whose system is triangular and solved by forward substitution"
    return text + "."


def _allowed_residual(ts: torch.Tensor, gap: float, ys: torch.Tensor) -> float:
    """The residual a float64 interpolant may keep: 1e-9, or rounding amplified by spread/gap.

    The hidden units' values differ by about the smallest gap δ between projected inputs while
    they range over the spread S, so the output weights grow like |Δy|/δ and the sum that
    evaluates f(t_i) loses about u·S/δ relative accuracy (u = 2⁻⁵³) however it is solved. The
    tolerance is max(1e-9, 8u·S/δ)·max(1, max|y|) while 8u·S/δ ≤ 1e-6; past that, the inputs are
    too close for float64 at their scale and the strict 1e-9 applies (the failure then names them).
    """
    scale = max(1.0, float(ys.abs().max()))
    spread = float(ts[-1] - ts[0]) if len(ts) > 1 else 0.0
    amplification = 8.0 * 2.0**-53 * spread / gap if spread > 0 and gap > 0 else 0.0
    return (amplification if 1e-9 < amplification <= 1e-6 else 1e-9) * scale


# Bounded, step-like activations: neurons σ(κ(t − β_j)) with β_j just below t_(j).
_STEP_LIKE = ("tanh", "sigmoid")


def _check_distinct(inputs: torch.Tensor) -> None:
    unique, inverse, counts = torch.unique(inputs, dim=0, return_inverse=True, return_counts=True)
    if len(unique) < len(inputs):
        group = int(torch.nonzero(counts > 1)[0])
        first, second = (int(i) for i in torch.nonzero(inverse == group)[:2, 0])
        value = inputs[first].tolist()
        raise ValueError(
            f"`x` must have distinct inputs, got x[{first}] == x[{second}] == {value[0] if len(value) == 1 else value}"
        )


def _separating_direction(inputs: torch.Tensor) -> torch.Tensor:
    """A unit vector v whose projections vᵀx_i are pairwise distinct, as far apart as found.

    Candidates: the top principal direction and 64 seeded Gaussian directions; the one with the
    largest minimal gap between sorted projections wins (a larger gap means smaller output
    weights, so less rounding). Distinct inputs have only finitely many bad directions, so a
    random candidate separates them with probability 1.
    """
    d = inputs.shape[1]
    if d == 1:
        return torch.ones(1, dtype=F64)
    centred = inputs - inputs.mean(0)
    candidates = [torch.linalg.svd(centred, full_matrices=False)[2][0]] if len(inputs) > 1 else []
    generator = torch.Generator().manual_seed(0)
    candidates += [torch.randn(d, generator=generator, dtype=F64) for _ in range(64)]
    best, best_gap = candidates[0], -1.0
    for v in candidates:
        v = v / torch.linalg.vector_norm(v)
        t = torch.sort(inputs @ v).values
        gap = float((t[1:] - t[:-1]).min()) if len(t) > 1 else 1.0
        if gap > best_gap:
            best, best_gap = v, gap
    if best_gap <= 0.0:
        raise ValueError("`x` has no direction separating its inputs among 65 candidates; perturb the inputs")
    return best
