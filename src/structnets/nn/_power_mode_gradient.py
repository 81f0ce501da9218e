"""The power-mode gradient of a :class:`~structnets.nn.CertifiedBatch` computation's values.

A batch computation hands every member a certified value (τ or a norm bound) whose gradient is the
``"verified"`` mode's: that of the surrogate s/((1 + m)σ̂²) or √(1 + m)·σ̂, with σ̂ = ‖Wv‖ and the
power vector v held fixed (the paper's power mode). :class:`_PowerModeGradient` attaches it to all
the values of one computation at once; :class:`_Group` and :class:`_Plan` carry what it needs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass(eq=False)
class _Group:
    """One (kind, shape, step kind) of members within a batch computation, and its test's results."""

    kind: str
    layers: list[Any]
    snapshot: torch.Tensor  # (B, rows, cols) the weights' content, detached
    vectors: torch.Tensor  # (B, cols) power vectors
    estimate: torch.Tensor | None  # (B,) σ̂_b = ‖W_b v_b‖ (no autograd); None where the kernel computed it
    step: torch.Tensor | None  # (B,) s in the weight dtype (1 for norm maps); None: not formed (fused, fixed s)
    step64: torch.Tensor  # (B,) s in float64, no gradient
    steps: list[Any]  # what each member's τ was formed with (logit, float, or None)
    margins: torch.Tensor | None  # (B,) float64 1 + m_b; None where the kernel read them
    inputs: list[torch.Tensor]  # the members' weights (then step logits θ, learnable steps): what gets a gradient
    left: torch.Tensor  # (B, rows) u_b = W_b v_b/σ̂_b
    slope: torch.Tensor | None  # (B,) ds/dθ for learnable steps, else None


@dataclass(eq=False)
class _Plan:
    """What :class:`_PowerModeGradient` returns and needs: the values, dvalue/dσ̂ and dvalue/ds per entry, the groups."""

    value: torch.Tensor  # (B,) certified values, in the weight dtype
    slope: torch.Tensor  # (B,) d surrogate / dσ̂ (0 where the entry failed)
    inverse: torch.Tensor  # (B,) d surrogate / ds = 1/((1 + m)σ̂²) for τ maps (0 for norm maps and failures)
    groups: list[_Group]  # in the order of the entries; each lists its inputs (weights, then θ if learnable)
    factor: torch.Tensor  # (B,) 1 + m_b in the weight dtype
    usable: torch.Tensor  # (B,) bool: the entry's gradient is defined (else it is 0)
    spent: list[bool] = field(default_factory=lambda: [False])  # set once a backward pass went through the values
    # the compiled path: its groups, built on demand (only a backward pass that builds a graph needs them)
    group_factory: Callable[[], list[_Group]] | None = None


def _groups(plan: _Plan) -> list[_Group]:
    """The plan's groups (built on first use where the compiled path left a factory)."""
    if not plan.groups and plan.group_factory is not None:
        plan.groups = plan.group_factory()
    return plan.groups


class _PowerModeGradient(torch.autograd.Function):
    """The certified values with the power-mode gradient, in a few batched operations.

    Forward returns the values unchanged. Backward, for the surrogate S_b of each entry
    (s_b/((1 + m_b)σ̂_b²) for a τ map, √(1 + m_b)·σ̂_b for a norm map), with σ̂_b = ‖W_b v_b‖ and the
    power vector v_b held fixed (the paper's power mode): ∂σ̂_b/∂W_b = u_b v_bᵀ, u_b = W_b v_b/σ̂_b, so
    ∂S_b/∂W_b = (∂S_b/∂σ̂_b)·u_b v_bᵀ, and ∂S_b/∂θ_b = s'(θ_b)/((1 + m_b)σ̂_b²) for a learnable step
    s = 2·sigmoid(θ). The same gradient as autograd through the surrogate (tested), without building
    its graph: one outer product per group instead of a dozen recorded operations per step. A
    backward pass that builds a graph (``create_graph=True``, for higher derivatives) differentiates
    the surrogate itself instead, rebuilt from the saved inputs, so that every order is right.
    """

    @staticmethod
    def forward(ctx: Any, plan: _Plan, *inputs: torch.Tensor) -> torch.Tensor:
        ctx.plan = plan
        ctx.save_for_backward(*inputs)
        # the plan keeps a detached alias: the returned tensor takes this node as its grad_fn, and a ctx that
        # refers to its own output is a cycle through autograd's C++ graph (freed only by the cyclic collector)
        value, plan.value = plan.value, plan.value.detach()
        return value

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        plan: _Plan = ctx.plan
        # the values' graph is spent: CertifiedBatch.take serves none of them afterwards (as a hook
        # on the values would, without registering one per computation)
        plan.spent[0] = True
        if torch.is_grad_enabled():
            inputs = ctx.saved_tensors
            graph_grads = torch.autograd.grad(
                _surrogate(plan, inputs),
                inputs,
                grad_outputs=torch.where(plan.usable, grad, torch.zeros_like(grad)),
                create_graph=True,
                allow_unused=True,
            )
            return (None, *graph_grads)
        by_norm = grad * plan.slope
        by_step = grad * plan.inverse
        grads: list[torch.Tensor | None] = [None]
        offset = 0
        for group in _groups(plan):
            count = len(group.layers)
            part = slice(offset, offset + count)
            offset += count
            grads.extend(
                (by_norm[part].unsqueeze(1) * group.left).unsqueeze(2).mul(group.vectors.unsqueeze(1)).unbind(0)
            )
            if group.slope is not None:
                grads.extend((by_step[part] * group.slope).unbind(0))
        return tuple(grads)


def _surrogate(plan: _Plan, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """The surrogates S_b of :class:`_PowerModeGradient` as a differentiable function of its inputs."""
    parts, index, offset = [], 0, 0
    for group in _groups(plan):
        count = len(group.layers)
        stacked = torch.stack(inputs[index : index + count])
        index += count
        sigma = torch.linalg.vector_norm(torch.bmm(group.vectors.unsqueeze(1), stacked.mT), dim=(1, 2))
        usable, factor = plan.usable[offset : offset + count], plan.factor[offset : offset + count]
        offset += count
        sigma = torch.where(usable, sigma, torch.ones_like(sigma))  # an unused row: no 0·∞ in its gradient
        if group.kind == "norm":
            parts.append(sigma * factor.sqrt())
            continue
        if group.slope is not None:
            step = 2.0 * torch.sigmoid(torch.stack(inputs[index : index + count]))
            index += count
        else:
            step = group.step if group.step is not None else group.step64.to(sigma.device, sigma.dtype)
        parts.append(step / (sigma.square() * factor))
    return torch.cat(parts)


__all__: list[str] = []
