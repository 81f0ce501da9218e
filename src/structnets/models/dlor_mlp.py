"""DLoR networks, deep (multiplicative) and wide (additive), and pure rank-1 networks.

Chen, Li, Kim, Lavaei, *Structural Correspondence and Universal Approximation in Diagonal plus
Low-Rank Neural Networks* (arXiv 2605.05659). Every weight is an N×N DLoR matrix αI + UVᵀ; the
input is embedded by zero padding and the output read from the first coordinates, so the
network has no dense matrix at all (the paper's setting, where N = n + m + 2 suffices for
universal approximation).

Side by side, with N = ``width``, r = ``rank``, L = ``depth`` nonlinear layers, B = ``branches``:

=====================  ==============================================  ===========================
mode                   layer ℓ = 1 … L+1 (σ after all but the last)     parameters
=====================  ==============================================  ===========================
``"deep"``             y = (αI + UVᵀ) x + b                              (L+1)·(2Nr + 1 + N)
``"wide"``             y = Σ_{k=1}^{B} (α_k I + U_k V_kᵀ) x + b          (L+1)·(B·(2Nr + 1) + N)
=====================  ==============================================  ===========================

A wide layer is one DLoR matrix of rank B·r (with the B scalars α_k adding up to its α), so
wide trades width of the low-rank part for depth: the additive and multiplicative
decompositions of :mod:`structnets.constructive.dlor`. With B = 1 both modes build the same
network. :func:`dlor_parameter_count` gives the counts above.
"""

from __future__ import annotations

import torch
from torch import nn

from .._validation import check_choice, check_int
from ..nn import DLoRLinear, RankOneLinear, activation as make_activation

MODES: tuple[str, ...] = ("deep", "wide")


class ZeroPad(nn.Module):
    """Embed ``x`` ∈ ℝⁿ as ``[x, 0, …, 0]`` ∈ ℝᴺ (no parameters).

    Shape: ``(*, in_features)`` → ``(*, width)``.
    """

    def __init__(self, in_features: int, width: int) -> None:
        super().__init__()
        self.in_features = check_int("in_features", in_features, low=1)
        self.width = check_int("width", width, low=self.in_features)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return nn.functional.pad(input, (0, self.width - self.in_features))

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, width={self.width}"


class TakeFirst(nn.Module):
    """Read the output from the first ``out_features`` coordinates (no parameters).

    Shape: ``(*, width)`` → ``(*, out_features)``.
    """

    def __init__(self, width: int, out_features: int) -> None:
        super().__init__()
        self.width = check_int("width", width, low=1)
        self.out_features = check_int("out_features", out_features, low=1, high=self.width)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return input[..., : self.out_features]

    def extra_repr(self) -> str:
        return f"width={self.width}, out_features={self.out_features}"


class DLoRBranches(nn.Module):
    """Parallel DLoR branches summed before the activation: ``y = Σ_k (α_k I + U_k V_kᵀ) x + b``.

    The additive layer of a wide DLoR network. Each branch is a bias-free :class:`DLoRLinear`;
    the bias is shared (one per layer, as in a dense layer).

    Args:
        features: N ≥ 2.
        rank: r of every branch, in [1, N − 1].
        branches: B ≥ 1.
        bias: whether to add a learnable bias (features,).
        alpha: initial α of each branch; the layer starts at (B·alpha)·I + low rank, so the
            default divides 1 by B to start near the identity like a deep layer.
        device, dtype: where to allocate parameters.
    """

    def __init__(
        self,
        features: int,
        rank: int,
        branches: int,
        bias: bool = True,
        alpha: float | None = None,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.branches_count = check_int("branches", branches, low=1)
        if not isinstance(bias, bool):
            raise TypeError(f"`bias` must be a bool, got {bias!r}")
        alpha = 1.0 / self.branches_count if alpha is None else alpha
        factory = {"device": device, "dtype": dtype}
        self.branches = nn.ModuleList(
            DLoRLinear(features, rank, bias=False, alpha=alpha, **factory) for _ in range(self.branches_count)
        )
        self.features, self.rank = self.branches[0].features, self.branches[0].rank
        if bias:
            self.bias = nn.Parameter(torch.empty(self.features, **factory))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for branch in self.branches:
            branch.reset_parameters()
        if self.bias is not None:
            bound = 1.0 / self.features**0.5
            nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        out = self.branches[0](input)
        for branch in self.branches[1:]:
            out = out + branch(input)
        return out if self.bias is None else out + self.bias

    def to_dense(self) -> torch.Tensor:
        """Return Σ_k (α_k I + U_k V_kᵀ), the (features, features) weight."""
        return sum((branch.to_dense() for branch in self.branches[1:]), self.branches[0].to_dense())

    def extra_repr(self) -> str:
        return (
            f"features={self.features}, rank={self.rank}, branches={self.branches_count}, "
            f"bias={self.bias is not None}"
        )


def dlor_mlp(
    in_features: int,
    out_features: int,
    width: int,
    depth: int,
    rank: int,
    mode: str = "deep",
    activation: str | nn.Module = "swish",
    branches: int = 1,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> nn.Sequential:
    """Build a DLoR network: every weight αI + UVᵀ (N×N), input zero-padded, output truncated.

    Layout: ``ZeroPad(in→N), [L_1, σ, …, L_depth, σ], L_{depth+1}, TakeFirst(N→out)`` where each
    L is a :class:`~structnets.nn.DLoRLinear` (``mode="deep"``, multiplicative: depth composes
    the low-rank updates) or a :class:`DLoRBranches` of ``branches`` parallel DLoR maps summed
    before σ (``mode="wide"``, additive). See the module docstring for parameter counts.

    Args:
        in_features, out_features: n and m, both ≤ ``width``.
        width: N ≥ max(2, n, m); the paper's universal width is n + m + 2.
        depth: number of nonlinear layers L ≥ 1 (there are L + 1 DLoR maps).
        rank: r in [1, N − 1], the rank of every (branch) update UVᵀ.
        mode: ``"deep"`` or ``"wide"``.
        activation: a name from :data:`structnets.nn.ACTIVATIONS` or a module (then shared).
        branches: B ≥ 1 parallel DLoR maps per layer in wide mode; must be 1 in deep mode.
        device, dtype: where to allocate parameters.

    Returns:
        an ``nn.Sequential``; input ``(*, in_features)`` → output ``(*, out_features)``.
    """
    in_features = check_int("in_features", in_features, low=1)
    out_features = check_int("out_features", out_features, low=1)
    width = check_int("width", width, low=max(2, in_features, out_features))
    depth = check_int("depth", depth, low=1)
    rank = check_int("rank", rank, low=1, high=width - 1)
    check_choice("mode", mode, MODES)
    branches = check_int("branches", branches, low=1)
    if mode == "deep" and branches != 1:
        raise ValueError(f"`branches` must be 1 when mode='deep', got {branches}")
    make_activation(activation)
    factory = {"device": device, "dtype": dtype}

    def dlor() -> nn.Module:
        if mode == "deep":
            return DLoRLinear(width, rank, **factory)
        return DLoRBranches(width, rank, branches, **factory)

    layers: list[nn.Module] = [ZeroPad(in_features, width)]
    for _ in range(depth):
        layers += [dlor(), make_activation(activation)]
    layers += [dlor(), TakeFirst(width, out_features)]
    return nn.Sequential(*layers)


def dlor_parameter_count(width: int, depth: int, rank: int, mode: str = "deep", branches: int = 1) -> int:
    """Number of parameters of :func:`dlor_mlp` (independent of in/out features).

    deep: (L+1)(2Nr + 1 + N); wide: (L+1)(B(2Nr + 1) + N).
    """
    width = check_int("width", width, low=2)
    depth = check_int("depth", depth, low=1)
    rank = check_int("rank", rank, low=1, high=width - 1)
    check_choice("mode", mode, MODES)
    branches = check_int("branches", branches, low=1)
    per_map = 2 * width * rank + 1
    if mode == "deep":
        return (depth + 1) * (per_map + width)
    return (depth + 1) * (branches * per_map + width)


def rank_one_mlp(
    in_features: int,
    out_features: int,
    width: int,
    depth: int,
    activation: str | nn.Module = "swish",
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> nn.Sequential:
    """Build a pure rank-1 network: every weight u vᵀ, no diagonal (α = 0, r = 1).

    Layout: ``RankOne(in→N), σ, [RankOne(N→N), σ] × (depth−1), RankOne(N→out)``. Whatever its
    width, its output depends on x only through vᵀx (v of the first layer): it is constant
    along every direction orthogonal to v, the orthogonal blind spot.

    Args:
        in_features, out_features, width, depth: as in :func:`structnets.models.mlp`.
        activation: a name from :data:`structnets.nn.ACTIVATIONS` or a module (then shared).
        device, dtype: where to allocate parameters.
    """
    in_features = check_int("in_features", in_features, low=1)
    out_features = check_int("out_features", out_features, low=1)
    width = check_int("width", width, low=1)
    depth = check_int("depth", depth, low=1)
    make_activation(activation)
    factory = {"device": device, "dtype": dtype}
    layers: list[nn.Module] = [RankOneLinear(in_features, width, **factory), make_activation(activation)]
    for _ in range(depth - 1):
        layers += [RankOneLinear(width, width, **factory), make_activation(activation)]
    layers.append(RankOneLinear(width, out_features, **factory))
    return nn.Sequential(*layers)
