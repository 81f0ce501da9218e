"""1-Lipschitz ResNets vᵀ∘Φ_L∘…∘Φ_1∘Q with every map constrained (Murari, Furuya, Schönlieb, 2025)."""

from __future__ import annotations

from typing import Any, cast

import torch
from torch import nn

from .._validation import MAX_LAYERS, check_choice, check_fits_in_memory, check_int, check_real, itemsize_of
from ..functional import LAYER_BOUNDS, top_right_singular_vector
from ..nn import (
    CertifiedBatch,
    GradientStepResidual,
    MaxMin,
    NormConstrainedLinear,
    OrthogonalLinear,
    UnconstrainedResidual,
)

VARIANTS: tuple[str, ...] = ("gradient-step", "fixed-width", "unconstrained")
# What `bound` accepts: a layer bound, or "verified-batched" (every map "verified", certified together
# by one CertifiedBatch per model, see structnets.nn.CertifiedBatch).
MODEL_BOUNDS: tuple[str, ...] = (*LAYER_BOUNDS, "verified-batched")
# Kinds of lift (in → width) and head (width → out) of the constrained variants.
LIFTS: tuple[str, ...] = ("norm-constrained", "orthogonal")


def lipschitz_resnet(
    in_features: int,
    out_features: int,
    width: int | None,
    depth: int,
    variant: str = "gradient-step",
    hidden: int | None = None,
    step: float = 1.0,
    learnable_step: bool = True,
    bound: str = "exact",
    lift: str = "norm-constrained",
    maxmin: bool = False,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> nn.Sequential:
    """Build a ResNet ``head ∘ Φ_L ∘ … ∘ Φ_1 ∘ lift`` that is 1-Lipschitz in ℓ₂ by construction.

    Layouts (all maps constrained except in ``"unconstrained"``):

    * ``"gradient-step"``: ``NormConstrainedLinear(in→width)``, ``depth`` ×
      ``GradientStepResidual(width, hidden)``, ``NormConstrainedLinear(width→out)``
      (the networks vᵀ∘Φ_L∘…∘Φ_1∘Q of Murari, Furuya, Schönlieb, arXiv 2505.12003, Thm. on density
      as width and depth grow; our lift Q and head are constrained too, unlike the authors' code).
    * ``"fixed-width"``: as above with a ``NormConstrainedLinear(width→width)``, initialised to the
      identity, inserted after every residual block (the paper's fixed-width theorem: density in the scalar 1-Lipschitz
      functions on compacts of ℝᵈ at width d + 3 with norm-constrained affine maps between
      blocks, which carry max{x₁, x₂}, min{x₁, x₂}, x₃ and a residual part). ``width=None``
      selects that width, ``in_features + 3``; other widths are allowed (the MNIST experiment
      uses 50–200 < 784 + 3 after a norm-constrained lift, as the paper does) but are outside the
      theorem.
    * ``"unconstrained"``: ``Linear``, ``depth`` × ``x + U ReLU(Wx + b)``, ``Linear``: the
      baseline, with no Lipschitz control.

    Each constrained map is 1-Lipschitz (‖A‖₂ ≤ 1, τ ≤ 2/‖W‖₂² with certified B ≥ ‖W‖₂), so the
    composition is: Lip(f) ≤ Π Lip(layer) ≤ 1.

    Args:
        in_features, out_features: input and output sizes.
        width: residual width (≥ 1); ``None`` only with ``variant="fixed-width"``, meaning the
            theorem's ``in_features + 3``.
        depth: number of residual blocks (≥ 1).
        variant: one of :data:`VARIANTS`.
        hidden: rows of each W (default ``width``).
        step: initial s ∈ (0, 2) of τ = s/‖W‖² (s ∈ [0, 2] when not learnable; CPL uses s = 2).
        learnable_step: learn s per block.
        bound: spectral bound of every constrained map (see :class:`GradientStepResidual`), or
            ``"verified-batched"``: every map ``"verified"``, their training-time certificates
            computed together by one :class:`~structnets.nn.CertifiedBatch` (one batched power
            step, Gram product and Cholesky test per weight shape; the model's
            ``certified_batch`` attribute). Evaluation and certification use the exact bound.
        lift: kind of the lift and the head (constrained variants): ``"norm-constrained"``
            (:class:`NormConstrainedLinear`, A = V / max(1, B(V)): only the top singular value is
            pinned, so a 784 → width lift shrinks most directions) or ``"orthogonal"``
            (:class:`OrthogonalLinear`: the certified polar factor, every singular value ≈ 1,
            gradient-norm preserving; MNIST: see docs/lipschitz.md).
        maxmin: insert a :class:`MaxMin` (GroupSort of size 2, 1-Lipschitz, gradient-norm
            preserving) after every residual block (constrained variants).
        device, dtype: where to allocate parameters.

    Returns:
        an ``nn.Sequential``; ``(*, in_features)`` → ``(*, out_features)``.
    """
    in_features = check_int("in_features", in_features, low=1)
    out_features = check_int("out_features", out_features, low=1)
    check_choice("variant", variant, VARIANTS)
    check_choice("lift", lift, LIFTS)
    check_choice("bound", bound, MODEL_BOUNDS)
    batched = bound == "verified-batched"
    if batched:
        bound = "verified"
    if not isinstance(maxmin, bool):
        raise TypeError(f"`maxmin` must be a bool, got {maxmin!r}")
    if width is None:
        if variant != "fixed-width":
            raise ValueError(
                f"`width` may be None only with variant='fixed-width' (width d + 3), got variant={variant!r}"
            )
        width = in_features + 3
    width = check_int("width", width, low=1)
    depth = check_int("depth", depth, low=1, high=MAX_LAYERS)
    hidden = width if hidden is None else check_int("hidden", hidden, low=1)
    check_fits_in_memory(
        f"`in_features`={in_features}, `out_features`={out_features}, `width`={width}, `depth`={depth}, `hidden`={hidden}",
        (in_features + 1) * width + depth * (2 * hidden * width + hidden + 2 * width) + (width + 1) * out_features,
        itemsize=itemsize_of(dtype),
        what="parameters",
    )
    if learnable_step:
        check_real("step", step, low=0.0, high=2.0, low_open=True, high_open=True)
    else:
        check_real("step", step, low=0.0, high=2.0)
    factory: dict[str, Any] = {"device": device, "dtype": dtype}
    if variant == "unconstrained":
        layers: list[nn.Module] = [nn.Linear(in_features, width, **factory)]
        layers += [UnconstrainedResidual(width, hidden, **factory) for _ in range(depth)]
        layers.append(nn.Linear(width, out_features, **factory))
        return nn.Sequential(*layers)

    def outer(n_in: int, n_out: int) -> nn.Module:
        if lift == "orthogonal":
            return OrthogonalLinear(n_in, n_out, **factory)
        return NormConstrainedLinear(n_in, n_out, bound=bound, **factory)

    layers = [outer(in_features, width)]
    for _ in range(depth):
        layers.append(
            GradientStepResidual(width, hidden, step=step, learnable_step=learnable_step, bound=bound, **factory)
        )
        if maxmin:
            layers.append(MaxMin(width, **factory))
        if variant == "fixed-width":
            between = NormConstrainedLinear(width, width, bound=bound, **factory)
            # Start at the identity (‖I‖₂ = 1, every singular value 1): a default init has most
            # singular values well below 1, and 2·depth of them in a row shrank the signal to a
            # constant (MNIST, depth 20: chance accuracy, measured Lipschitz constant 0). At
            # identity the fixed-width network starts as the gradient-step network.
            with torch.no_grad():
                torch.nn.init.eye_(between.raw_weight)
                between.bias.zero_()
                between.power_vector.copy_(top_right_singular_vector(between.raw_weight))
            layers.append(between)
    layers.append(outer(width, out_features))
    model = nn.Sequential(*layers)
    if batched:
        members = [m for m in layers if isinstance(m, (GradientStepResidual, NormConstrainedLinear))]
        setattr(model, "certified_batch", CertifiedBatch(members))  # noqa: B010 (not a Tensor or Module)
    return model


@torch.no_grad()
def export_model(model: nn.Sequential) -> nn.Sequential:
    """Return a copy of ``model`` made of plain torch layers (each layer's ``export()``).

    Args:
        model: an ``nn.Sequential`` whose structnets layers have ``export()``.

    Returns:
        an ``nn.Sequential`` with identical outputs (eval-mode, certified steps frozen).
    """
    if not isinstance(model, nn.Sequential):
        raise TypeError(f"`model` must be an nn.Sequential, got {type(model).__name__}")
    from ..exporting import export

    return cast(nn.Sequential, export(model))  # export maps a Sequential to a Sequential


__all__ = ["LIFTS", "MODEL_BOUNDS", "VARIANTS", "export_model", "lipschitz_resnet"]
