"""Exact networks for piecewise-affine 1-Lipschitz functions from their max-min representation.

Every continuous piecewise-affine f: ℝᵈ → ℝ with affine pieces ℓ₁, …, ℓ_K has a lattice
(max-min) representation f = max_i min_{j ∈ S_i} ℓ_j (Ovchinnikov, *Max-min representation of
piecewise linear functions*, 2002; S_i = {j : ℓ_j ≥ ℓ_i on the region where f = ℓ_i}). If f is
1-Lipschitz, every piece has ‖∇ℓ_j‖₂ ≤ 1. Murari, Furuya, Schönlieb (*Approximation theory for
1-Lipschitz ResNets*, NeurIPS 2025, arXiv 2505.12003) show such f are represented exactly by their
networks through max{x, y} = x + σ(y − x) and min{x, y} = x − σ(x − y); both are computed at once
by one gradient-step layer with τ = 2/‖W‖₂², i.e. :class:`structnets.nn.MaxMin`.

Our network (float64 by default):

1. lift Q(x) = (A x + c)/s, a :class:`NormConstrainedLinear` with ‖A/s‖₂ ≤ 1, where the rows of
   A and c are the pieces (each group padded to M = 2^⌈log₂ max|S_i|⌉ by repeating a piece, and
   the groups padded to G' = 2^⌈log₂ G⌉ by repeating a group, which changes neither min nor max),
   and s = max(1, B(A)) with B(A) ≥ ‖A‖₂ certified;
2. log₂ M min-levels then log₂ G' max-levels, each ``MaxMin`` (sort pairs) followed by a
   selection ``NormConstrainedLinear`` whose rows are distinct unit vectors e₂ᵢ₊₁ (min) or e₂ᵢ
   (max), so norm 1; max and min commute with the positive scaling 1/s;
3. head y ↦ s·y (``nn.Linear(1, 1)``).

The output equals f(x) up to rounding, bounded by :func:`maxmin_rounding_bound` from the network
as built (scale s, depth, max |f|): the lift's normalisation by a certified bound B ≥ ‖A‖₂ makes
its stored weights differ from A/s by a relative ~10⁻¹⁰ in places, which the head's factor s turns
into absolute errors of order 10⁻⁹ for |f| ~ 50, so no fixed "exact" level fits every target. The
selection layers are dense (memory (M·G')², :func:`maxmin_network_elements`); a build that cannot
fit is refused up front with the memory it would need. Every layer but the head is certified 1-Lipschitz; the head
has norm s ≤ √(M·G'), so the layer-wise certified bound of this exact network is s even though f
itself is 1-Lipschitz (s = 1 whenever ‖A‖₂ ≤ 1, e.g. one piece or orthogonal pieces).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from .._validation import check_fits_in_memory
from ..functional import spectral_norm_bound
from ..nn import MaxMin, NormConstrainedLinear
from ._arrays import real_array

Piece = tuple[Sequence[float] | np.ndarray, float]
"""One affine piece (a, c): x ↦ aᵀx + c, with ‖a‖₂ ≤ 1."""


def _validate(pieces: Sequence[Sequence[Piece]]) -> tuple[list[list[tuple[np.ndarray, float]]], int]:
    if isinstance(pieces, (str, bytes)) or not isinstance(pieces, Sequence) or len(pieces) == 0:
        raise ValueError(f"`pieces` must be a non-empty sequence of groups of (a, c) pairs, got {pieces!r}")
    groups: list[list[tuple[np.ndarray, float]]] = []
    dim: int | None = None
    for i, group in enumerate(pieces):
        if not isinstance(group, Sequence) or len(group) == 0:
            raise ValueError(f"`pieces[{i}]` must be a non-empty sequence of (a, c) pairs, got {group!r}")
        parsed = []
        for j, piece in enumerate(group):
            try:
                raw_a, raw_c = piece
                a = np.asarray(raw_a, dtype=np.float64).reshape(-1)
                c = float(raw_c)
            except (TypeError, ValueError) as error:
                raise ValueError(f"`pieces[{i}][{j}]` must be a pair (a, c), got {piece!r}") from error
            if dim is None:
                dim = a.size
            if a.size != dim or dim == 0:
                raise ValueError(f"`pieces[{i}][{j}]` must have a gradient of length {dim}, got {a.size}")
            if not (np.isfinite(a).all() and math.isfinite(c)):
                raise ValueError(f"`pieces[{i}][{j}]` must be finite, got {piece!r}")
            norm = float(np.linalg.norm(a))
            if norm > 1.0 + 1e-12:
                raise ValueError(f"`pieces[{i}][{j}]` must be 1-Lipschitz (‖a‖₂ ≤ 1), got ‖a‖₂ = {norm:.6g}")
            parsed.append((a, c))
        groups.append(parsed)
    assert dim is not None
    return groups, dim


def evaluate_maxmin(pieces: Sequence[Sequence[Piece]], x: np.ndarray) -> np.ndarray:
    """Evaluate f(x) = max_i min_{(a, c) ∈ pieces[i]} (aᵀx + c) in float64 (the reference).

    Args:
        pieces: groups of (a, c) pairs, a of length d.
        x: (n, d) points.

    Returns:
        (n,) values.
    """
    groups, dim = _validate(pieces)
    x = real_array("x", x)
    if not ((x.ndim <= 1 and dim == 1) or (x.ndim == 2 and x.shape[1] == dim)):
        raise ValueError(f"`x` must be (n, {dim}) points{' or (n,)' if dim == 1 else ''}, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("`x` must be finite, got NaN or inf coordinates")
    x = x.reshape(-1, dim)
    values = [np.min(np.stack([x @ a + c for a, c in group]), axis=0) for group in groups]
    return np.max(np.stack(values), axis=0)


def maxmin_lipschitz_bound(pieces: Sequence[Sequence[Piece]]) -> float:
    """A certified Lipschitz bound of f = max_i min_{(a, c) ∈ pieces[i]} (aᵀx + c): max ‖a‖₂, rounded up.

    Max and min of L-Lipschitz functions are L-Lipschitz, so f is max_j ‖a_j‖₂-Lipschitz in ℓ₂
    whatever the grouping (the lattice bound; Murari et al., arXiv 2505.12003, Sec. 4). Each
    ‖a‖₂² is summed exactly in rationals and its square root rounded up to a float, so the
    returned value is ≥ the true bound. It certifies the function the exact network of
    :func:`maxmin_network` computes (up to its rounding), where the layer-wise product of that
    network gives only s ≥ 1.

    Args:
        pieces: groups of (a, c) pairs, a of length d.

    Returns:
        max_j ‖a_j‖₂, rounded up (≤ 1 exactly when every stored piece has ‖a‖₂ ≤ 1).
    """
    from fractions import Fraction

    groups, _ = _validate(pieces)
    best = 0.0
    for group in groups:
        for a, _c in group:
            exact = sum((Fraction(float(v)) ** 2 for v in a), Fraction(0))
            root = math.sqrt(float(exact))
            while Fraction(root) ** 2 < exact:  # round the square root up until it bounds exactly
                root = math.nextafter(root, math.inf)
            best = max(best, root)
    return best


def _padded_rows(groups: list[list[tuple[np.ndarray, float]]]) -> tuple[list[tuple[np.ndarray, float]], int, int]:
    """The lift's rows: every group padded to M = 2^⌈log₂ max|S_i|⌉ pieces, the groups to G' = 2^⌈log₂ G⌉."""
    size = 1 << max(0, math.ceil(math.log2(max(len(g) for g in groups))))
    padded = [g + [g[-1]] * (size - len(g)) for g in groups]
    count = 1 << max(0, math.ceil(math.log2(len(padded))))
    padded = padded + [padded[-1]] * (count - len(padded))
    return [piece for group in padded for piece in group], size, count


def maxmin_network_elements(groups: int, largest_group: int, dim: int) -> int:
    """Weights :func:`maxmin_network` allocates: the lift (w·d + w, w = M·G') and every dense selection
    layer (w_ℓ × w_ℓ/2, halving), each stored and formed again in forward (×2), plus the head.

    The selection layers are dense, so memory grows like w² = (M·G')², i.e. K⁴ for a 1-D target
    with K pieces (≈ 2.3·10¹⁰ bytes at K = 150); :func:`maxmin_network` refuses up front what does
    not fit in this machine's memory, naming this number.
    """
    size = 1 << max(0, math.ceil(math.log2(max(1, largest_group))))
    count = 1 << max(0, math.ceil(math.log2(max(1, groups))))
    width = size * count
    total = width * dim + width
    while width > 1:
        total += 2 * width * (width // 2)
        width //= 2
    return total + 1


def maxmin_rounding_bound(network: nn.Sequential, pieces: Sequence[Sequence[Piece]], x_bound: float) -> float:
    """A bound on the float64 error |network(x) − f(x)| of :func:`maxmin_network`'s output, ‖x‖_∞ ≤ x_bound.

    Derived from the network as built (its scale s, its depth, max |f|), not a fixed "exact" level:

    * the lift computes z = W̃x + b̃ with its effective (normalised, stored) W̃, b̃; against the
      intended (A x + c)/s it deviates by Δ_j = Σ_i |s W̃_ji − A_ji|·X + |s b̃_j − c_j| per row, and its
      dot product of length d + 1 rounds by γ_{d+2}(Σ_i |A_ji| X + |c_j|)/s (Higham §3.1);
    * MaxMin (torch.maximum/minimum) is exact; a selection layer whose effective rows differ from
      unit vectors by δ_ℓ (row ℓ₁ norm) scales a value of size ≤ F/s by at most δ_ℓ (its 0/1 products
      and sums are otherwise exact);
    * the head multiplies by s, one more rounding u·F;

    with F = max_j (‖a_j‖₁ X + |c_j|) ≥ max |ℓ_j(x)| ≥ |f(x)|. In f's units:

        |net(x) − f(x)| ≤ max_j (Δ_j + γ_{d+2}(‖a_j‖₁X + |c_j|)) + (Σ_ℓ δ_ℓ) F + 2uF,

    enlarged by 1 + 10⁻⁶ for the rounding of this computation itself.

    Args:
        network: the output of ``maxmin_network(pieces)`` (float64 or float32).
        pieces: the pieces it was built from.
        x_bound: X ≥ max ‖x‖_∞ over the points where the error is measured.

    Returns:
        the bound (≥ 0).
    """
    from .._validation import check_real

    x_bound = check_real("x_bound", x_bound, low=0.0)
    groups, dim = _validate(pieces)
    rows, _, _ = _padded_rows(groups)
    linears = [m for m in network if isinstance(m, (NormConstrainedLinear, nn.Linear))]
    if len(linears) < 2 or not isinstance(linears[0], NormConstrainedLinear):
        raise ValueError("`network` must be the output of maxmin_network (a NormConstrainedLinear lift first)")
    lift, selections, head = linears[0], linears[1:-1], linears[-1]
    assert isinstance(lift, NormConstrainedLinear)
    dtype = lift.raw_weight.dtype
    u = float(torch.finfo(dtype).eps) / 2
    with torch.no_grad():
        head_weight = head.weight if isinstance(head, nn.Linear) else head.to_dense()
        scale = float(torch.as_tensor(head_weight).double().reshape(-1)[0])
        W = lift.to_dense().double().numpy()
        b = lift.bias.double().numpy() if lift.bias is not None else np.zeros(W.shape[0])
    A = np.stack([a for a, _ in rows])
    c = np.array([c for _, c in rows])
    if W.shape != A.shape:
        raise ValueError(f"`network`'s lift has shape {W.shape}, but `pieces` give {A.shape}: not built from them")
    magnitude = np.abs(A).sum(axis=1) * x_bound + np.abs(c)
    deviation = np.abs(scale * W - A).sum(axis=1) * x_bound + np.abs(scale * b - c)
    m = dim + 2
    gamma = m * u / (1 - m * u)
    # the lift's rounding in s-units is γ(|W̃||x| + |b̃|) ≈ γ·magnitude/s; the head multiplies by s
    lift_error = float(np.max(deviation + gamma * magnitude * (1 + 2 * u)))
    F = float(magnitude.max())
    delta = 0.0
    with torch.no_grad():
        for layer in selections:
            W_sel = (
                layer.to_dense().double().numpy()
                if isinstance(layer, NormConstrainedLinear)
                else layer.weight.double().numpy()
            )
            intended = (np.abs(W_sel) > 0.5).astype(float)
            delta += float(np.abs(W_sel - intended).sum(axis=1).max())
    return (lift_error + delta * F + 2 * u * F) * (1 + 1e-6)


def maxmin_network(pieces: Sequence[Sequence[Piece]], *, dtype: torch.dtype = torch.float64) -> nn.Sequential:
    """Build the exact network of f(x) = max_i min_{(a, c) ∈ pieces[i]} (aᵀx + c).

    Args:
        pieces: a max-min representation: ``pieces[i]`` is a non-empty list of affine pieces
            (a, c) with a of length d and ‖a‖₂ ≤ 1 (f is then 1-Lipschitz).
        dtype: parameter dtype (float64 for exactness to ~1e-15).

    Returns:
        an ``nn.Sequential`` ``(*, d) → (*, 1)`` of ``NormConstrainedLinear``, ``MaxMin`` and a
        final scalar ``nn.Linear(1, 1)`` whose output equals f up to :func:`maxmin_rounding_bound`
        (see the module docstring).

    Raises:
        ValueError: a piece is not 1-Lipschitz or malformed; or the dense selection layers would not
            fit in this machine's memory (the message gives the weights and bytes needed:
            :func:`maxmin_network_elements`, K⁴ for K pieces in 1-D).
    """
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"`dtype` must be a floating-point torch.dtype, got {dtype!r}")
    groups, dim = _validate(pieces)
    rows, size, count = _padded_rows(groups)
    elements = maxmin_network_elements(len(groups), max(len(g) for g in groups), dim)
    check_fits_in_memory(
        f"`pieces` ({len(groups)} groups of up to {max(len(g) for g in groups)} pieces: lift width {size * count})",
        elements,
        itemsize=dtype.itemsize,
        what="weights (dense selection layers, stored and formed in forward)",
    )
    A = torch.tensor(np.stack([a for a, _ in rows]), dtype=torch.float64)
    c = torch.tensor([c for _, c in rows], dtype=torch.float64)
    scale = max(1.0, float(spectral_norm_bound(A)))
    width = A.shape[0]
    layers: list[nn.Module] = []
    lift = NormConstrainedLinear(dim, width, dtype=dtype)
    with torch.no_grad():
        lift.raw_weight.copy_(A / scale)
        lift.bias.copy_(c / scale)
    layers.append(lift)
    ops = ["min"] * int(math.log2(size)) + ["max"] * int(math.log2(count))
    for op in ops:
        layers.append(MaxMin(width, dtype=dtype))
        select = NormConstrainedLinear(width, width // 2, bias=False, dtype=dtype)
        weight = torch.zeros(width // 2, width, dtype=dtype)
        index = torch.arange(width // 2)
        weight[index, 2 * index + (1 if op == "min" else 0)] = 1.0
        with torch.no_grad():
            select.raw_weight.copy_(weight)
        layers.append(select)
        width //= 2
    head = nn.Linear(1, 1, bias=False, dtype=dtype)
    with torch.no_grad():
        head.weight.fill_(scale)
    layers.append(head)
    return nn.Sequential(*layers)


def lattice_pieces_1d(knots: Sequence[float] | np.ndarray, values: Sequence[float] | np.ndarray) -> list[list[Piece]]:
    """Max-min representation of the piecewise-linear interpolant of (knots, values) on ℝ.

    Pieces ℓ_k(t) = v_k + m_k (t − t_k) on [t_k, t_{k+1}] (extended affinely beyond the ends);
    S_k = {j : ℓ_j ≥ ℓ_k at t_k and t_{k+1}} (Ovchinnikov 2002, Thm. 2.1: f = max_k min_{j∈S_k} ℓ_j).

    Args:
        knots: strictly increasing t₀ < … < t_n (n ≥ 1).
        values: f(t_k), with every slope |m_k| ≤ 1 (f 1-Lipschitz).

    Returns:
        ``pieces`` for :func:`maxmin_network` / :func:`evaluate_maxmin`.
    """
    t = real_array("knots", knots)
    v = real_array("values", values)
    if t.ndim != 1 or t.size < 2 or not np.all(np.diff(t) > 0):
        raise ValueError(f"`knots` must be strictly increasing with at least 2 entries, got {knots!r}")
    if v.shape != t.shape or not np.isfinite(v).all():
        raise ValueError(f"`values` must be {t.size} finite numbers, got {values!r}")
    slopes = np.diff(v) / np.diff(t)
    if np.abs(slopes).max() > 1.0 + 1e-12:
        raise ValueError(f"`values` must give slopes of magnitude ≤ 1, got max |slope| {np.abs(slopes).max():.6g}")
    affine = [(np.array([m]), float(v[k] - m * t[k])) for k, m in enumerate(slopes)]

    def at(j: int, s: float) -> float:
        return float(affine[j][0][0] * s + affine[j][1])

    def slack(j: int, k: int, s: float) -> float:
        # Neighbours meet at their shared knot with equality in exact arithmetic; the stored
        # (m, c) and m·s + c round at the scale |m·s| + |c|, so an absolute 1e-12 excluded a
        # concave neighbour once |t|, |v| ≳ 1e5 (max-min then exceeded f by O(1)). A j let in by
        # this slack is ≥ ℓ_k − slack on [t_k, t_{k+1}], which moves max-min by at most the slack.
        size = sum(abs(float(affine[i][0][0] * s)) + abs(affine[i][1]) for i in (j, k))
        return 1e-12 + 32 * np.finfo(np.float64).eps * size

    def above(j: int, k: int) -> bool:
        """ℓ_j ≥ ℓ_k on piece k's region: [t_k, t_{k+1}], but (−∞, t_1] and [t_{n−1}, ∞) at the ends."""
        if not all(at(j, s) >= at(k, s) - slack(j, k, s) for s in (t[k], t[k + 1])):
            return False
        # on a half-line the difference must not fall away from the knot: a slope condition
        tolerance = 1e-12
        if k == 0 and affine[j][0][0] > affine[k][0][0] + tolerance:
            return False
        return not (k == len(affine) - 1 and affine[j][0][0] < affine[k][0][0] - tolerance)

    pieces: list[list[Piece]] = []
    for k in range(len(affine)):
        pieces.append([affine[j] for j in range(len(affine)) if above(j, k)])
    return pieces


__all__ = [
    "evaluate_maxmin",
    "lattice_pieces_1d",
    "maxmin_lipschitz_bound",
    "maxmin_network",
    "maxmin_network_elements",
    "maxmin_rounding_bound",
]
