"""The certified values and the applied matrices of a compiled :class:`~structnets.nn.CertifiedBatch` computation.

A member of a batch does not need its value as such: a gradient-step block applies −τ·W, a
norm-constrained map fl(V/s). On the compiled path one :class:`AppliedMatrices` node hands out
every member's value *and* that matrix (formed by :func:`._fused_applied.applied_matrices` from
the content the value certifies), and one compiled call writes all their gradients
(:func:`._fused_applied.applied_gradients`): the matrices' own and the power-mode gradient of the
values (:class:`~._power_mode_gradient._PowerModeGradient`'s, which the tensor path keeps). A
backward pass that builds a graph (``create_graph=True``) differentiates the same expressions
rebuilt from the saved inputs (τ's and B's derivatives those of the surrogate), so that every order
of derivative is right.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from .._division_scale import division_scale
from ._power_mode_gradient import _Plan, _surrogate


@dataclass(eq=False)
class AppliedPlan:
    """The applied matrices of one computation and how their gradients are written."""

    # every member's matrix, in the weight dtype (no autograd): tensors over NumPy views of one flat buffer,
    # not torch views (autograd handles an output that is a view at ≈ 2.5 µs each)
    matrices: list[torch.Tensor]
    is_tau: list[bool]  # −τ·W (gradient-step maps) or fl(V/s) (norm maps)
    weight_at: list[int]  # each member's weight's position among the node's inputs
    # (value gradient or None, matrix gradients or None) -> the inputs' gradients, by the compiled call
    host_gradients: Callable[[torch.Tensor | None, Sequence[torch.Tensor | None]], list[torch.Tensor]]


def _on_host(dtype: torch.dtype, gradients: Sequence[torch.Tensor | None]) -> bool:
    return all(g is None or (g.device.type == "cpu" and g.dtype == dtype) for g in gradients)


class AppliedMatrices(torch.autograd.Function):
    """(values, matrix of member 0, matrix of member 1, …) with one compiled backward pass."""

    @staticmethod
    def forward(ctx: Any, plan: _Plan, applied: AppliedPlan, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        ctx.plan, ctx.applied = plan, applied
        ctx.save_for_backward(*inputs)
        ctx.set_materialize_grads(False)  # an unused matrix gets None, not a tensor of zeros
        # handed over, not kept: a ctx that refers to its own outputs is a cycle through autograd's C++ graph
        # (the matrices' one was never freed: ≈ 1.6 MB per step at 10 × 100; the value's only by the cyclic
        # collector), so the plan keeps a detached alias of the value and no matrix
        matrices, applied.matrices = applied.matrices, []
        value, plan.value = plan.value, plan.value.detach()
        return (value, *matrices)

    @staticmethod
    def backward(ctx: Any, value_grad: torch.Tensor | None, *matrix_grads: torch.Tensor | None) -> tuple[Any, ...]:
        plan: _Plan = ctx.plan
        applied: AppliedPlan = ctx.applied
        plan.spent[0] = True  # CertifiedBatch.take serves none of this computation's values afterwards
        if not torch.is_grad_enabled() and _on_host(plan.value.dtype, (value_grad, *matrix_grads)):
            return (None, None, *applied.host_gradients(value_grad, matrix_grads))
        return (None, None, *_graph_gradients(plan, applied, ctx.saved_tensors, value_grad, matrix_grads))


def _graph_gradients(
    plan: _Plan,
    applied: AppliedPlan,
    inputs: Sequence[torch.Tensor],
    value_grad: torch.Tensor | None,
    matrix_grads: Sequence[torch.Tensor | None],
) -> tuple[torch.Tensor | None, ...]:
    """The same gradients by autograd through the rebuilt expressions (a graph of them where one is being built)."""
    create_graph = torch.is_grad_enabled()
    with torch.enable_grad():
        surrogate = _surrogate(plan, tuple(inputs))
        # the value, with the surrogate's derivatives where the entry is usable (none elsewhere)
        live = torch.where(plan.usable, surrogate, surrogate.detach())
        value = plan.value + (live - live.detach())  # plan.value: a detached alias of the node's output
        outputs: list[torch.Tensor] = []
        grads: list[torch.Tensor] = []
        if value_grad is not None:
            outputs.append(value)
            grads.append(value_grad)
        for b, grad in enumerate(matrix_grads):
            if grad is None:
                continue
            weight = inputs[applied.weight_at[b]]
            outputs.append(weight * -value[b] if applied.is_tau[b] else weight / division_scale(value[b], weight))
            grads.append(grad)
        return torch.autograd.grad(outputs, list(inputs), grads, create_graph=create_graph, allow_unused=True)


__all__ = ["AppliedMatrices", "AppliedPlan"]
