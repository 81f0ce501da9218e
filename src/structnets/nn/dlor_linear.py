"""Diagonal-plus-low-rank layers x ↦ (αI + UVᵀ)x + b and the pure rank-1 layer x ↦ u(vᵀx) + b.

Chen, Li, Kim, Lavaei, *Structural Correspondence and Universal Approximation in Diagonal plus
Low-Rank Neural Networks* (arXiv 2605.05659): a DLoR matrix is M = αI_N + UVᵀ with U, V ∈ ℝ^{N×r},
one scalar more than a rank-r matrix. Without α (the pure rank-1 layer below) every layer only
sees the projection vᵀx, the paper's "orthogonal blind spot"; α restores the full input.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from .._validation import check_bool, check_fits_in_memory, check_int, check_real, itemsize_of


class DLoRLinear(nn.Module):
    """Square affine map with a diagonal-plus-low-rank weight: ``y = α x + U (Vᵀ x) + b``.

    The weight is M = αI + UVᵀ (learnable scalar α, U, V of shape (features, rank)); a forward
    pass costs 2·rank·features + features multiply-adds per sample instead of features².

    Args:
        features: size N of input and output, an int ≥ 2.
        rank: r, an int in [1, features − 1] (r = N would be a dense matrix with a redundant α).
        bias: whether to add a learnable bias b of shape (features,).
        alpha: the value α takes at initialisation (and on every ``reset_parameters``); finite.
        device, dtype: where to allocate parameters.

    Attributes:
        alpha: () scalar parameter α.
        U: (features, rank) parameter.
        V: (features, rank) parameter.
        bias: (features,) parameter or None.

    Shape: ``(*, features)`` → ``(*, features)``.
    """

    def __init__(
        self,
        features: int,
        rank: int,
        bias: bool = True,
        alpha: float = 1.0,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.features = check_int("features", features, low=2)
        self.rank = check_int("rank", rank, low=1, high=self.features - 1)
        bias = check_bool("bias", bias)
        self.initial_alpha = check_real("alpha", alpha)
        check_fits_in_memory(
            f"`features`={self.features}, `rank`={self.rank}",
            (2 * self.rank + 1) * self.features + 1,
            itemsize=itemsize_of(dtype),
            what="parameters",
        )
        factory: dict[str, Any] = {"device": device, "dtype": dtype}
        self.alpha = nn.Parameter(torch.empty((), **factory))
        self.U = nn.Parameter(torch.empty(self.features, self.rank, **factory))
        self.V = nn.Parameter(torch.empty(self.features, self.rank, **factory))
        if bias:
            self.bias = nn.Parameter(torch.empty(self.features, **factory))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """α ← ``alpha``; U, V as ``LowRankLinear`` initialises its two factors; b as ``nn.Linear(N, N)``.

        Vᵀ ~ U(±1/√N) (fan-in N), U ~ U(±1/√r) (fan-in r), b ~ U(±1/√N) (``LowRankLinear`` uses
        ±1/√r for its bias, the fan-in of its second factor). With α = 1 the layer starts as the
        identity plus a low-rank map whose output has about a third of the input's scale
        (Var UVᵀx = r·(1/(3r))·N·(1/(3N)) = 1/9 for x ~ N(0, I)), the initialisation of a
        residual block.
        """
        with torch.no_grad():
            self.alpha.fill_(self.initial_alpha)
        # kaiming_uniform_ on the transposed views: fan-in N for Vᵀ (r×N), fan-in r for U (N×r).
        nn.init.kaiming_uniform_(self.V.T, a=math.sqrt(5))
        nn.init.kaiming_uniform_(self.U, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(self.features)
            nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if not isinstance(input, torch.Tensor):
            raise TypeError(f"`input` must be a torch.Tensor, got {type(input).__name__}")
        if input.dim() == 0 or input.shape[-1] != self.features:
            raise ValueError(
                f"`input` must have last dimension features={self.features}, got shape {tuple(input.shape)}"
            )
        low_rank = nn.functional.linear(input @ self.V, self.U, self.bias)
        return low_rank + self.alpha * input

    def to_dense(self) -> torch.Tensor:
        """Return the dense (features, features) weight ``αI + U Vᵀ`` (differentiable)."""
        eye = torch.eye(self.features, device=self.U.device, dtype=self.U.dtype)
        return self.alpha * eye + self.U @ self.V.T

    def export(self) -> nn.Linear:
        """Return a plain ``nn.Linear`` with weight ``αI + UVᵀ`` and the same bias (the same outputs).

        ``export()`` is the one name every structnets layer converts to plain torch layers by
        (:func:`structnets.export` calls it). Outputs agree to rounding (another summation order).
        """
        return _linear_from(self.to_dense(), self.bias, self.training)

    def to_linear(self) -> nn.Linear:
        """Alias of :meth:`export` (kept: it is public API)."""
        return self.export()

    @classmethod
    def from_linear(cls, linear: nn.Linear, rank: int, alpha: float | None = None) -> DLoRLinear:
        """Best diagonal-plus-rank-``rank`` approximation αI + UVᵀ of a square ``linear``.

        α is :func:`dlor_approximation`'s (the minimiser of ‖W − αI − L‖_F over α and rank-r L,
        found by a certified search, see there), or the given ``alpha``; then UVᵀ is the truncated
        SVD of W − αI (Eckart–Young), split as U = P_r Σ_r^{1/2}, V = Q_r Σ_r^{1/2}. The bias is
        copied; α keeps the found value as its ``reset_parameters`` value too.

        Args:
            linear: an ``nn.Linear`` with ``in_features == out_features`` = N ≥ 2.
            rank: r, an int in [1, N − 1].
            alpha: a fixed α (finite) instead of the optimal one.

        Returns:
            a new ``DLoRLinear`` on the weight's device and dtype.
        """
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"`linear` must be a torch.nn.Linear, got {type(linear).__name__}")
        if linear.in_features != linear.out_features:
            raise ValueError(
                "`linear` must be square for a DLoR layer (in_features == out_features), got "
                f"in_features={linear.in_features}, out_features={linear.out_features}"
            )
        weight = linear.weight.detach()
        if not bool(torch.isfinite(weight).all()):
            raise ValueError("`linear` has non-finite weights (nan or inf); they have no SVD")
        features = check_int("features", linear.in_features, low=2)
        rank = check_int("rank", rank, low=1, high=features - 1)
        if alpha is not None:
            alpha = check_real("alpha", alpha)
        fit = dlor_approximation(weight, rank, alpha=alpha)
        layer = cls(
            features, rank, bias=linear.bias is not None, alpha=fit.alpha,
            device=weight.device, dtype=weight.dtype,
        )  # fmt: skip
        with torch.no_grad():
            layer.U.copy_(fit.U)
            layer.V.copy_(fit.V)
            if linear.bias is not None:
                layer.bias.copy_(linear.bias.detach())
        layer.requires_grad_(linear.weight.requires_grad)
        return layer

    def extra_repr(self) -> str:
        return f"features={self.features}, rank={self.rank}, bias={self.bias is not None}, alpha={self.initial_alpha}"


class RankOneLinear(nn.Module):
    """Affine map with a rank-1 weight and no diagonal: ``y = u (vᵀ x) + b``.

    The DLoR layer with α fixed to 0 and r = 1, allowed to be rectangular. Its output depends on
    x only through the scalar vᵀx, so ``layer(x + w) == layer(x)`` for every w ⊥ v: a network
    whose first layer is rank-1 cannot tell apart inputs that differ orthogonally to v (the
    "orthogonal blind spot" of Chen et al., arXiv 2605.05659).

    Args:
        in_features: input size n_in ≥ 1.
        out_features: output size n_out ≥ 1.
        bias: whether to add a learnable bias b of shape (out_features,).
        device, dtype: where to allocate parameters.

    Attributes:
        u: (out_features,) parameter.
        v: (in_features,) parameter.
        bias: (out_features,) parameter or None.

    Shape: ``(*, in_features)`` → ``(*, out_features)``.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.in_features = check_int("in_features", in_features, low=1)
        self.out_features = check_int("out_features", out_features, low=1)
        bias = check_bool("bias", bias)
        check_fits_in_memory(
            f"`in_features`={self.in_features}, `out_features`={self.out_features}",
            self.in_features + 2 * self.out_features,
            itemsize=itemsize_of(dtype),
            what="parameters",
        )
        factory: dict[str, Any] = {"device": device, "dtype": dtype}
        self.u = nn.Parameter(torch.empty(self.out_features, **factory))
        self.v = nn.Parameter(torch.empty(self.in_features, **factory))
        if bias:
            self.bias = nn.Parameter(torch.empty(self.out_features, **factory))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """u, v, b as ``LowRankLinear(in, out, rank=1)`` initialises its factors."""
        bound_v = 1.0 / math.sqrt(self.in_features)
        nn.init.uniform_(self.v, -bound_v, bound_v)
        nn.init.uniform_(self.u, -1.0, 1.0)  # fan-in of u is the rank, 1
        if self.bias is not None:
            nn.init.uniform_(self.bias, -1.0, 1.0)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if not isinstance(input, torch.Tensor):
            raise TypeError(f"`input` must be a torch.Tensor, got {type(input).__name__}")
        if input.dim() == 0 or input.shape[-1] != self.in_features:
            raise ValueError(f"`input` must have shape (*, in_features={self.in_features}), got {tuple(input.shape)}")
        projection = input @ self.v  # (*,): the only thing the layer sees of x
        out = projection.unsqueeze(-1) * self.u
        return out if self.bias is None else out + self.bias

    def to_dense(self) -> torch.Tensor:
        """Return the dense (out_features, in_features) weight ``u vᵀ``."""
        return torch.outer(self.u, self.v)

    def export(self) -> nn.Linear:
        """Return a plain ``nn.Linear`` with weight ``u vᵀ`` and the same bias (the same outputs)."""
        return _linear_from(self.to_dense(), self.bias, self.training)

    def to_linear(self) -> nn.Linear:
        """Alias of :meth:`export` (kept: it is public API)."""
        return self.export()

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def _linear_from(weight: torch.Tensor, bias: torch.Tensor | None, training: bool = True) -> nn.Linear:
    out_features, in_features = weight.shape
    linear = nn.Linear(in_features, out_features, bias=bias is not None, device=weight.device, dtype=weight.dtype)
    with torch.no_grad():
        linear.weight.copy_(weight)
        if bias is not None:
            linear.bias.copy_(bias)
    linear.train(training)
    return linear


@dataclass(frozen=True)
class DLoRApproximation:
    """Result of :func:`dlor_approximation`: W ≈ αI + U Vᵀ.

    Attributes:
        alpha: α.
        U: (N, r) factor, in W's dtype.
        V: (N, r) factor, in W's dtype.
        error: ‖W − αI − UVᵀ‖_F in float64 arithmetic (= (Σ_{i>r} σ_i(W − αI)²)^{1/2}).
        lowrank_error: ‖W − W_r‖_F of the plain truncated SVD at the same rank (α = 0),
            for comparison; ``error <= lowrank_error`` always (α = 0 is a candidate).
    """

    alpha: float
    U: torch.Tensor
    V: torch.Tensor
    error: float
    lowrank_error: float


def dlor_approximation(
    weight: torch.Tensor, rank: int, alpha: float | None = None, *, max_iter: int = 50
) -> DLoRApproximation:
    """Diagonal-plus-low-rank approximation αI + UVᵀ of a square matrix, with the best α.

    The problem is min over α ∈ ℝ and rank-≤r L of F(α, L) = ‖W − αI − L‖_F². For fixed α the
    best L is the truncated SVD of W − αI (Eckart–Young), so the profile is

        f(α) = Σ_{i>r} σ_i(W − αI)²,

    and for fixed L the best α is the projection of W − L onto I: α = tr(W − L)/N. Where
    σ_r > σ_{r+1}, f is differentiable with f'(α) = −2 tr(R_α), R_α = W − αI − L_α the residual
    (the envelope theorem: L_α is optimal, so only the explicit α-dependence counts). The best α
    is therefore a zero of g(α) = tr(R_α) = Σ_{i>r} σ_i q_iᵀp_i.

    f is not convex in general, so the search starts from candidates that are provably right in
    the cases one can solve, and then descends:

    * α = 0 (plain truncated SVD: the DLoR layer is never worse than a low-rank one of equal r);
    * α = tr(W)/N (the optimum for r = 0);
    * eigenvalue windows: with the eigenvalues sorted by real part, the mean real part of each
      run of N − r consecutive ones, the three runs of least spread (Σ|λ − mean|²) kept. For a
      **symmetric** W, σ_i(W − αI) = |λ_i − α|, so f(α) is the sum of the N − r smallest
      (λ_i − α)²; minimising jointly over α and the kept set, the best set is a run of
      consecutive eigenvalues and α its mean, so this candidate list contains the **global**
      optimum. For W = α₀I + (rank r), α₀ is an eigenvalue of multiplicity N − r: a run of
      spread 0, so the exact decomposition is recovered.

    From each candidate (those closer than 2% of the RMS singular value merged), safeguarded
    iterations on g(α) = 0: a secant step, accepted only if it lowers f, else the
    block-coordinate step α ← α + g(α)/N (= tr(W − L_α)/N), which can never raise f
    (F(α', L_α) ≤ F(α, L_α) = f(α) and f(α') ≤ F(α', L_α)). The returned α has the least f of
    all points evaluated; for a non-normal W it is a stationary point (g ≈ 0), not proved global
    (on 1,000 random 2×2…6×6 matrices it matched a 3,001-point grid search every time). Costs one
    eigendecomposition and a few dozen SVDs of an N×N float64 matrix (about 1 s at N = 256 on
    one core).

    Args:
        weight: (N, N) real matrix W, N ≥ 2.
        rank: r, an int in [1, N − 1].
        alpha: a fixed α; then only the truncated SVD of W − αI is computed.
        max_iter: most refinement steps (≥ 0).

    Returns:
        a :class:`DLoRApproximation` (factors in W's dtype and device).

    Reference: the DLoR layer αI + UVᵀ of Chen, Li, Kim, Lavaei, arXiv 2605.05659.
    """
    if not isinstance(weight, torch.Tensor) or weight.ndim != 2 or weight.shape[0] != weight.shape[1]:
        shape = tuple(weight.shape) if isinstance(weight, torch.Tensor) else type(weight).__name__
        raise ValueError(f"`weight` must be a square (N, N) tensor, got {shape}")
    if weight.is_complex() or not weight.is_floating_point():
        raise TypeError(f"`weight` must be a real floating tensor, got dtype {weight.dtype}")
    features = check_int("features", weight.shape[0], low=2)
    rank = check_int("rank", rank, low=1, high=features - 1)
    max_iter = check_int("max_iter", max_iter, low=0)
    W = weight.detach().to(torch.float64)
    if not bool(torch.isfinite(W).all()):
        raise ValueError("`weight` must be finite")
    eye = torch.eye(features, dtype=W.dtype, device=W.device)
    lowrank_error = float(torch.linalg.svdvals(W)[rank:].square().sum().sqrt())

    def profile(a: float) -> float:
        return float(torch.linalg.svdvals(W - a * eye)[rank:].square().sum())

    def gradient_and_profile(a: float) -> tuple[float, float]:
        left, singular, right_t = torch.linalg.svd(W - a * eye)
        tail = singular[rank:]
        trace_residual = float((tail * (right_t[rank:] * left[:, rank:].T).sum(dim=1)).sum())
        return trace_residual, float(tail.square().sum())

    if alpha is not None:
        best = check_real("alpha", alpha)
    else:
        candidates = [0.0, float(torch.trace(W)) / features, *_eigenvalue_windows(W, features - rank)]
        values = [profile(a) for a in candidates]
        order = sorted(range(len(candidates)), key=values.__getitem__)
        # Candidates closer than 2% of the RMS singular value lie in one basin of f: descend once.
        spacing = 0.02 * float(torch.linalg.matrix_norm(W)) / features**0.5
        starts: list[float] = []
        for i in order:
            if all(abs(candidates[i] - s) > spacing for s in starts):
                starts.append(candidates[i])
        best, best_value = candidates[order[0]], values[order[0]]
        for start in starts:
            alpha_found, value_found = _descend(gradient_and_profile, start, features, max_iter, W)
            if value_found < best_value:
                best, best_value = alpha_found, value_found
    left, singular, right_t = torch.linalg.svd(W - best * eye)
    root = singular[:rank].sqrt()
    U = (left[:, :rank] * root).to(weight.dtype)
    V = (right_t[:rank].T * root).to(weight.dtype)
    error = float(singular[rank:].square().sum().sqrt())
    return DLoRApproximation(alpha=best, U=U, V=V, error=error, lowrank_error=lowrank_error)


def _descend(
    gradient_and_profile: Callable[[float], tuple[float, float]],
    start: float,
    features: int,
    max_iter: int,
    W: torch.Tensor,
) -> tuple[float, float]:
    """Safeguarded secant / block-coordinate descent on f from ``start``; returns (α, f(α))."""
    scale = float(torch.linalg.matrix_norm(W)) / features**0.5 + 1e-300
    best = start
    g, best_value = gradient_and_profile(best)
    previous: tuple[float, float] | None = None
    for _ in range(max_iter):
        steps = []
        if previous is not None and g != previous[1]:
            steps.append(best - g * (best - previous[0]) / (g - previous[1]))
        steps.append(best + g / features)
        for step in steps:
            if not math.isfinite(step):
                continue
            g_new, value_new = gradient_and_profile(step)
            if value_new <= best_value:
                break
        else:
            break  # neither step lowers f: a stationary point, to rounding
        moved, gained = abs(step - best), best_value - value_new
        previous = (best, g)
        best, g, best_value = step, g_new, value_new
        # Stop once f no longer improves in its 10th digit (or α in its 10th, relative to the
        # RMS singular value): further steps cannot change what a float32 layer stores.
        if moved <= 1e-10 * scale or gained <= 1e-10 * best_value or best_value == 0.0:
            break
    return best, best_value


def _eigenvalue_windows(W: torch.Tensor, size: int, keep: int = 4) -> list[float]:
    """Mean real part of the ``keep`` runs of ``size`` eigenvalues (sorted by real part) of least spread."""
    eigenvalues = torch.linalg.eigvals(W)
    order = torch.argsort(eigenvalues.real)
    real, imag = eigenvalues.real[order], eigenvalues.imag[order]
    zero = torch.zeros(1, dtype=real.dtype, device=real.device)
    s1 = torch.cat((zero, torch.cumsum(real, 0)))
    s2 = torch.cat((zero, torch.cumsum(real.square(), 0)))
    t2 = torch.cat((zero, torch.cumsum(imag.square(), 0)))
    sums = s1[size:] - s1[:-size]
    spread = (s2[size:] - s2[:-size]) - sums.square() / size + (t2[size:] - t2[:-size])
    best = torch.argsort(spread)[:keep]
    return [float(sums[i]) / size for i in best]


__all__ = ["DLoRApproximation", "DLoRLinear", "RankOneLinear", "dlor_approximation"]
