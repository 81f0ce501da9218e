"""The layers every conformance test runs on. Adding a layer is one line in ``CASES``.

A :class:`LayerCase` builds a fresh layer of a given dtype; the suite in
``test_layer_conformance.py`` checks it against its own dense matrix (``to_dense()``), gradcheck,
state_dict round trips, repr, reset_parameters and dtype handling. :data:`INVALID` lists
constructor calls that must be rejected with an error naming the argument.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from structnets.nn import (  # DLoR  # 1-Lipschitz  # DLoR network parts  # residual baselines
    DLoRBranches,
    DLoRLinear,
    DLoRParallel,
    GradientStepResidual,
    LowRankLinear,
    MaxMin,
    NormConstrainedLinear,
    OrthogonalLinear,  # orthogonal lift and head
    PowerClampedResidual,
    RankOneLinear,
    Swish,
    TakeFirst,
    UnconstrainedResidual,
    ZeroPad,
)


def _dense_of(layer: nn.Module) -> torch.Tensor:
    return layer.to_dense()


def _natural_layout(layer: LowRankLinear) -> LowRankLinear:
    """Force the row-major intermediate (the path large ranks take) on a small, gradcheckable layer."""
    layer.transpose_below_rank = 0
    return layer


@dataclass(frozen=True)
class LayerCase:
    """One layer configuration under test.

    Attributes:
        name: test id.
        factory: ``factory(dtype) -> module``; a fresh, randomly initialised layer each call.
        in_features: size of the last input dimension.
        dense: ``dense(module) -> (out, in)`` weight the layer applies; ``to_dense()`` by default
            (only baselines without ``to_dense`` need another).
        structured: whether the layer is a structnets layer bound by the full contract
            (``to_dense``, validated constructor, ``extra_repr`` naming every argument).
        reference: for a *nonlinear* layer, ``reference(module, x)`` computes its output from the
            paper's formula in float64 (output, Jacobian and gradients are checked against it, and
            ``to_dense``/``to_linear`` are not required); None for affine layers.
        elementwise: the layer acts on each entry alone (an activation), so it has no input size
            to reject.
    """

    name: str
    factory: Callable[[torch.dtype], nn.Module]
    in_features: int
    dense: Callable[[nn.Module], torch.Tensor] = field(default=_dense_of)
    structured: bool = True
    reference: Callable[[nn.Module, torch.Tensor], torch.Tensor] | None = None
    elementwise: bool = False

    @property
    def affine(self) -> bool:
        """Affine layers are checked against ``to_dense()``; nonlinear ones against ``reference``."""
        return self.reference is None


@dataclass(frozen=True)
class Invalid:
    """A constructor call that must raise ``error`` whose message names ``argument`` and its value."""

    layer: type[nn.Module]
    kwargs: dict[str, Any]
    argument: str
    error: type[Exception]

    @property
    def id(self) -> str:
        return f"{self.layer.__name__}-{self.argument}={self.kwargs[self.argument]!r}"


CASES: list[LayerCase] = [
    LayerCase("lowrank-8to6-r3", lambda dt: LowRankLinear(8, 6, 3, dtype=dt), 8),
    LayerCase("lowrank-5to7-r5-full-nobias", lambda dt: LowRankLinear(5, 7, 5, bias=False, dtype=dt), 5),
    LayerCase("lowrank-9to9-r1", lambda dt: LowRankLinear(9, 9, 1, dtype=dt), 9),
    LayerCase("lowrank-12to12-r4-nobias", lambda dt: LowRankLinear(12, 12, 4, bias=False, dtype=dt), 12),
    LayerCase("dlor-8-r3", lambda dt: DLoRLinear(8, 3, dtype=dt), 8),  # DLoR
    LayerCase("dlor-2-r1-nobias-alpha-neg", lambda dt: DLoRLinear(2, 1, bias=False, alpha=-0.5, dtype=dt), 2),
    LayerCase("dlor-9-r8", lambda dt: DLoRLinear(9, 8, alpha=2.0, dtype=dt), 9),
    LayerCase("rank1-3to5", lambda dt: RankOneLinear(3, 5, dtype=dt), 3),
    LayerCase("rank1-6to6-nobias", lambda dt: RankOneLinear(6, 6, bias=False, dtype=dt), 6),
    LayerCase("rank1-4to1", lambda dt: RankOneLinear(4, 1, dtype=dt), 4),
    LayerCase("lowrank-8to6-r3-natural-layout", lambda dt: _natural_layout(LowRankLinear(8, 6, 3, dtype=dt)), 8),
    LayerCase(
        "lowrank-5to7-r4-nobias-natural-layout",
        lambda dt: _natural_layout(LowRankLinear(5, 7, 4, bias=False, dtype=dt)),
        5,
    ),
    # Baselines: PyTorch's own layer must pass the same maths (guards the suite itself).
    LayerCase("baseline-linear", lambda dt: nn.Linear(6, 4, dtype=dt), 6, lambda m: m.weight, False),
    LayerCase("baseline-linear-nobias", lambda dt: nn.Linear(3, 5, bias=False, dtype=dt), 3, lambda m: m.weight, False),
]

_LR = {"in_features": 8, "out_features": 6, "rank": 3}

INVALID: list[Invalid] = [
    Invalid(LowRankLinear, {**_LR, "rank": 0}, "rank", ValueError),
    Invalid(LowRankLinear, {**_LR, "rank": 7}, "rank", ValueError),  # > min(8, 6)
    Invalid(LowRankLinear, {**_LR, "rank": -1}, "rank", ValueError),
    Invalid(LowRankLinear, {**_LR, "rank": 2.5}, "rank", TypeError),
    Invalid(LowRankLinear, {**_LR, "rank": True}, "rank", TypeError),
    Invalid(LowRankLinear, {**_LR, "rank": "3"}, "rank", TypeError),
    Invalid(LowRankLinear, {**_LR, "in_features": 0}, "in_features", ValueError),
    Invalid(LowRankLinear, {**_LR, "in_features": 8.0}, "in_features", TypeError),
    Invalid(LowRankLinear, {**_LR, "out_features": 0}, "out_features", ValueError),
    Invalid(LowRankLinear, {**_LR, "out_features": None}, "out_features", TypeError),
    Invalid(LowRankLinear, {**_LR, "bias": "yes"}, "bias", TypeError),
    Invalid(LowRankLinear, {**_LR, "bias": 1}, "bias", TypeError),
]
_DL = {"features": 8, "rank": 3}  # DLoR
INVALID += [
    Invalid(DLoRLinear, {**_DL, "rank": 0}, "rank", ValueError),
    Invalid(DLoRLinear, {**_DL, "rank": 8}, "rank", ValueError),  # rank must be < features
    Invalid(DLoRLinear, {**_DL, "rank": 11}, "rank", ValueError),
    Invalid(DLoRLinear, {**_DL, "rank": -2}, "rank", ValueError),
    Invalid(DLoRLinear, {**_DL, "rank": 1.5}, "rank", TypeError),
    Invalid(DLoRLinear, {**_DL, "rank": True}, "rank", TypeError),
    Invalid(DLoRLinear, {**_DL, "features": 1, "rank": 1}, "features", ValueError),
    Invalid(DLoRLinear, {**_DL, "features": 8.0}, "features", TypeError),
    Invalid(DLoRLinear, {**_DL, "alpha": float("nan")}, "alpha", ValueError),
    Invalid(DLoRLinear, {**_DL, "alpha": float("inf")}, "alpha", ValueError),
    Invalid(DLoRLinear, {**_DL, "alpha": "1"}, "alpha", TypeError),
    Invalid(DLoRLinear, {**_DL, "bias": 1}, "bias", TypeError),
    Invalid(RankOneLinear, {"in_features": 0, "out_features": 3}, "in_features", ValueError),
    Invalid(RankOneLinear, {"in_features": 2, "out_features": 0}, "out_features", ValueError),
    Invalid(RankOneLinear, {"in_features": 2, "out_features": 2.0}, "out_features", TypeError),
    Invalid(RankOneLinear, {"in_features": 2, "out_features": 3, "bias": None}, "bias", TypeError),
]


def _gradient_step(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Φ(x) = x − τ Wᵀ ReLU(W x + b) (Murari et al., NeurIPS 2025, eq. 2), τ the layer's certified step."""
    pre = x @ layer.weight.T
    if layer.bias is not None:
        pre = pre + layer.bias
    return x - layer.tau() * (torch.relu(pre) @ layer.weight)


def _maxmin(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Sort each consecutive pair descending, (x₂ᵢ, x₂ᵢ₊₁) ↦ (max, min); an odd last entry passes."""
    pairs = x.shape[-1] // 2 * 2
    head = x[..., :pairs].unflatten(-1, (-1, 2))
    top = torch.maximum(head[..., 0], head[..., 1])
    bottom = torch.minimum(head[..., 0], head[..., 1])
    return torch.cat([torch.stack([top, bottom], dim=-1).flatten(-2), x[..., pairs:]], dim=-1)


# 1-Lipschitz layers. NormConstrainedLinear is affine; GradientStepResidual and MaxMin are
# nonlinear and are checked against their formulas.
CASES += [
    LayerCase("normcon-8to6", lambda dt: NormConstrainedLinear(8, 6, dtype=dt), 8),
    LayerCase(
        "normcon-5to9-nobias-gram",
        lambda dt: NormConstrainedLinear(5, 9, bias=False, bound="gram", dtype=dt),
        5,
    ),
    LayerCase("normcon-7to3-active", lambda dt: _scaled(NormConstrainedLinear(7, 3, dtype=dt), 4.0), 7),
    LayerCase(
        "normcon-4to4-frobenius",
        lambda dt: _scaled(NormConstrainedLinear(4, 4, bound="frobenius", dtype=dt), 3.0),
        4,
    ),
    LayerCase("gradient-step-6h9", lambda dt: GradientStepResidual(6, 9, dtype=dt), 6, reference=_gradient_step),
    LayerCase(
        "gradient-step-5h3-nobias-learnable",
        lambda dt: GradientStepResidual(5, 3, bias=False, step=1.5, learnable_step=True, dtype=dt),
        5,
        reference=_gradient_step,
    ),
    LayerCase("maxmin-6", lambda dt: MaxMin(6, dtype=dt), 6, reference=_maxmin),
    LayerCase("maxmin-5-odd", lambda dt: MaxMin(5, dtype=dt), 5, reference=_maxmin),
]
# 1-Lipschitz layers
INVALID += [
    Invalid(NormConstrainedLinear, {"in_features": 0, "out_features": 3}, "in_features", ValueError),
    Invalid(NormConstrainedLinear, {"in_features": 2, "out_features": 2.5}, "out_features", TypeError),
    Invalid(NormConstrainedLinear, {"in_features": 2, "out_features": 3, "bias": 1}, "bias", TypeError),
    Invalid(
        NormConstrainedLinear, {"in_features": 2, "out_features": 3, "bound": "power-iteration"}, "bound", ValueError
    ),
    Invalid(GradientStepResidual, {"features": 0, "hidden": 3}, "features", ValueError),
    Invalid(GradientStepResidual, {"features": 3, "hidden": 0}, "hidden", ValueError),
    Invalid(GradientStepResidual, {"features": 3, "hidden": 2.0}, "hidden", TypeError),
    Invalid(GradientStepResidual, {"features": 3, "hidden": 3, "step": 2.5}, "step", ValueError),
    Invalid(GradientStepResidual, {"features": 3, "hidden": 3, "step": -0.1}, "step", ValueError),
    Invalid(GradientStepResidual, {"features": 3, "hidden": 3, "step": float("nan")}, "step", ValueError),
    Invalid(
        GradientStepResidual, {"features": 3, "hidden": 3, "step": 2.0, "learnable_step": True}, "step", ValueError
    ),
    Invalid(GradientStepResidual, {"features": 3, "hidden": 3, "bound": "svd"}, "bound", ValueError),
    Invalid(GradientStepResidual, {"features": 3, "hidden": 3, "bias": "no"}, "bias", TypeError),
    Invalid(MaxMin, {"features": 0}, "features", ValueError),
    Invalid(MaxMin, {"features": 2.0}, "features", TypeError),
]


def _scaled(layer: nn.Module, factor: float) -> nn.Module:
    """Scale a NormConstrainedLinear's free weight so its norm constraint is active."""
    with torch.no_grad():
        layer.raw_weight.mul_(factor / float(torch.linalg.matrix_norm(layer.raw_weight.double(), 2)))
    return layer


# Orthogonal lift and head: affine, checked against its own dense matrix.
CASES += [
    LayerCase("orthogonal-8to6", lambda dt: OrthogonalLinear(8, 6, dtype=dt), 8),
    LayerCase("orthogonal-4to9-nobias", lambda dt: OrthogonalLinear(4, 9, bias=False, dtype=dt), 4),
    LayerCase("orthogonal-5to5", lambda dt: OrthogonalLinear(5, 5, dtype=dt), 5),
]
INVALID += [
    Invalid(OrthogonalLinear, {"in_features": 0, "out_features": 3}, "in_features", ValueError),
    Invalid(OrthogonalLinear, {"in_features": 2, "out_features": 2.5}, "out_features", TypeError),
    Invalid(OrthogonalLinear, {"in_features": 2, "out_features": -1}, "out_features", ValueError),
    Invalid(OrthogonalLinear, {"in_features": 2, "out_features": 3, "bias": 1}, "bias", TypeError),
]


# DLoR network parts (Chen et al., arXiv 2605.05659): the zero-padding input map and the
# first-coordinates output map (parameter-free, checked against their formulas), the summed
# branches (affine: checked against their own dense matrix Σ_k (α_k I + U_k V_kᵀ)) and the parallel
# branches Σ_k σ(M_k x + b_k) (nonlinear: checked against the formula).
def _zero_pad(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """[x, 0, …, 0] ∈ ℝᴺ."""
    return torch.cat([x, x.new_zeros(*x.shape[:-1], layer.width - layer.in_features)], dim=-1)


def _take_first(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """(x₁, …, x_m)."""
    return x[..., : layer.out_features]


_SIGMA: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "tanh": torch.tanh,
    "silu": lambda z: z / (1 + torch.exp(-z)),
    "relu": lambda z: z.clamp_min(0),
}


def _dlor_parallel(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Σ_k σ(α_k x + U_k V_kᵀ x + b_k), each branch's dense matrix written out."""
    sigma = _SIGMA[layer.activation_name]
    out = torch.zeros_like(x)
    for branch in layer.branches:
        dense = branch.alpha * torch.eye(layer.features, dtype=x.dtype) + branch.U @ branch.V.T
        pre = x @ dense.T
        out = out + sigma(pre if branch.bias is None else pre + branch.bias)
    return out


def _unconstrained(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """x + U ReLU(W x + b)."""
    return x + torch.relu(x @ layer.inner.weight.T + layer.inner.bias) @ layer.outer.weight.T


CASES += [
    LayerCase("zeropad-3to7", lambda dt: ZeroPad(3, 7, dtype=dt), 3, reference=_zero_pad),
    LayerCase("zeropad-4to4", lambda dt: ZeroPad(4, 4, dtype=dt), 4, reference=_zero_pad),
    LayerCase("takefirst-7to2", lambda dt: TakeFirst(7, 2, dtype=dt), 7, reference=_take_first),
    LayerCase("takefirst-5to5", lambda dt: TakeFirst(5, 5, dtype=dt), 5, reference=_take_first),
    LayerCase("dlor-branches-8-r3-b2", lambda dt: DLoRBranches(8, 3, 2, dtype=dt), 8),
    LayerCase(
        "dlor-branches-6-r2-b3-nobias-alpha",
        lambda dt: DLoRBranches(6, 2, 3, bias=False, alpha=-0.25, dtype=dt),
        6,
    ),
    LayerCase("dlor-branches-5-r4-b1", lambda dt: DLoRBranches(5, 4, 1, dtype=dt), 5),
    LayerCase(
        "dlor-parallel-7-r2-b3-tanh",
        lambda dt: DLoRParallel(7, 2, 3, "tanh", dtype=dt),
        7,
        reference=_dlor_parallel,
    ),
    LayerCase(
        "dlor-parallel-4-r1-b2-silu-nobias-alpha",
        lambda dt: DLoRParallel(4, 1, 2, "silu", bias=False, alpha=0.75, dtype=dt),
        4,
        reference=_dlor_parallel,
    ),
]
_DB = {"features": 6, "rank": 2, "branches": 2}
INVALID += [
    Invalid(ZeroPad, {"in_features": 0, "width": 3}, "in_features", ValueError),
    Invalid(ZeroPad, {"in_features": 4, "width": 3}, "width", ValueError),  # width < in_features
    Invalid(ZeroPad, {"in_features": 2, "width": 3.0}, "width", TypeError),
    Invalid(TakeFirst, {"width": 0, "out_features": 1}, "width", ValueError),
    Invalid(TakeFirst, {"width": 3, "out_features": 4}, "out_features", ValueError),  # > width
    Invalid(TakeFirst, {"width": 3, "out_features": "1"}, "out_features", TypeError),
    Invalid(DLoRBranches, {**_DB, "branches": 0}, "branches", ValueError),
    Invalid(DLoRBranches, {**_DB, "branches": 2.0}, "branches", TypeError),
    Invalid(DLoRBranches, {**_DB, "rank": 6}, "rank", ValueError),  # rank must be < features
    Invalid(DLoRBranches, {**_DB, "features": 1, "rank": 1}, "features", ValueError),
    Invalid(DLoRBranches, {**_DB, "alpha": float("nan")}, "alpha", ValueError),
    Invalid(DLoRBranches, {**_DB, "bias": 1}, "bias", TypeError),
    Invalid(DLoRParallel, {**_DB, "branches": 0}, "branches", ValueError),
    Invalid(DLoRParallel, {**_DB, "rank": 0}, "rank", ValueError),
    Invalid(DLoRParallel, {**_DB, "activation": "nope"}, "activation", ValueError),
    Invalid(DLoRParallel, {**_DB, "alpha": "1"}, "alpha", TypeError),
    Invalid(DLoRParallel, {**_DB, "bias": "yes"}, "bias", TypeError),
]

# Residual baselines of the 1-Lipschitz ResNets (Murari et al., arXiv 2505.12003): the plain
# block x + U ReLU(Wx + b), and the power-clamped gradient step of the authors' code, checked
# against x − τWᵀReLU(Wx + b) with the layer's own τ. Only certified bounds here: with
# bound="power" the training-mode τ depends on the stored power vector, which each call moves,
# so it is not a function of (x, W) that gradcheck could differentiate; that mode is tested in
# tests/nn/test_moved_layers.py.
CASES += [
    LayerCase("unconstrained-6h9", lambda dt: UnconstrainedResidual(6, 9, dtype=dt), 6, reference=_unconstrained),
    LayerCase("unconstrained-3h1", lambda dt: UnconstrainedResidual(3, 1, dtype=dt), 3, reference=_unconstrained),
    LayerCase(
        "power-clamped-6h6-gram",
        lambda dt: PowerClampedResidual(6, 6, step=2.0, bound="gram", dtype=dt),
        6,
        reference=_gradient_step,
    ),
    LayerCase(
        "power-clamped-4h7-learnable",
        lambda dt: PowerClampedResidual(4, 7, step=1.5, learnable_step=True, dtype=dt),
        4,
        reference=_gradient_step,
    ),
]
INVALID += [
    Invalid(UnconstrainedResidual, {"features": 0, "hidden": 3}, "features", ValueError),
    Invalid(UnconstrainedResidual, {"features": 3, "hidden": 2.0}, "hidden", TypeError),
    Invalid(UnconstrainedResidual, {"features": 3, "hidden": -1}, "hidden", ValueError),
    Invalid(PowerClampedResidual, {"features": 3, "hidden": 0}, "hidden", ValueError),
    Invalid(PowerClampedResidual, {"features": 3, "hidden": 3, "step": 2.5}, "step", ValueError),
    Invalid(PowerClampedResidual, {"features": 3, "hidden": 3, "bound": "svd"}, "bound", ValueError),
]


# Swish (Li et al., ICML 2025; Ramachandran et al. 2017): elementwise and nonlinear, checked against
# its formula. β is drawn in the factory, so two seeds give two functions (the state_dict round trip
# must then do the work); the fused SiLU path (β = 1, not learnable) has its own tests in tests/nn.
def _swish(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """swish_β(x) = x · sigmoid(β x)."""
    return x * torch.sigmoid(layer.beta * x)


def _random_beta() -> float:
    return round(0.25 + 2.0 * float(torch.rand(())), 6)


CASES += [
    LayerCase(
        "swish-learnable",
        lambda dt: Swish(_random_beta(), learnable=True, dtype=dt),
        5,
        reference=_swish,
        elementwise=True,
    ),
    LayerCase("swish-fixed", lambda dt: Swish(_random_beta(), dtype=dt), 4, reference=_swish, elementwise=True),
]
INVALID += [
    Invalid(Swish, {"beta": 0.0}, "beta", ValueError),
    Invalid(Swish, {"beta": -1.0}, "beta", ValueError),
    Invalid(Swish, {"beta": float("nan")}, "beta", ValueError),
    Invalid(Swish, {"beta": "1"}, "beta", TypeError),
    Invalid(Swish, {"learnable": "yes"}, "learnable", TypeError),
    Invalid(Swish, {"learnable": 1}, "learnable", TypeError),
]
