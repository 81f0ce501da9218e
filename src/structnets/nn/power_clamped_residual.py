"""PowerClampedResidual: a gradient-step block whose step follows a power-iteration estimate (comparison only)."""

from __future__ import annotations

import torch

from ..functional import power_iteration
from .gradient_step_residual import GradientStepResidual, gradient_step_operand_bound


class PowerClampedResidual(GradientStepResidual):
    """``Φ(x) = x − τ Wᵀ ReLU(W x + b)`` with σ̂ from a persistent power vector: our reading of the authors' code.

    The residual blocks of the public code accompanying Murari, Furuya, Schönlieb, *Approximation
    theory for 1-Lipschitz ResNets* (NeurIPS 2025, arXiv 2505.12003), used by the two-moons
    experiment as a comparison with the certified :class:`GradientStepResidual`. Built as
    ``PowerClampedResidual(width, width, step=2.0, bound="power")``; the constructor, forward pass
    and parameters are :class:`GradientStepResidual`'s. Two methods differ:

    * :meth:`weight_norm_bound` returns the power-iteration estimate σ̂ = ‖W v‖ in every mode,
      advancing the persistent vector v by one power step whenever gradients are enabled.
      σ̂ ≤ ‖W‖₂, so a step τ = 2/σ̂² can exceed 2/‖W‖₂² and the block is not certified.
    * :meth:`lipschitz_bound` returns max(1, τ·B² − 1) with B ≥ ‖W‖₂
      (:func:`structnets.functional.spectral_norm_bound`) and τ as :meth:`tau` gives it without
      gradients, the step of every evaluation under ``torch.no_grad``: the Jacobian I − τWᵀDW
      has eigenvalues in [1 − τ‖W‖₂², 1]. That τ uses the certified bound, so the value is 1 up
      to the rounding of B; the training-mode step (the power estimate) is not what it bounds.

    The training-mode forward pass (``bound="power"``, gradients on) takes τ = s/σ̂² with σ̂ the
    parent's power estimate; under ``torch.no_grad`` or in eval mode τ is the certified s/B².

    Args:
        features, hidden, bias, step, learnable_step, bound, device, dtype: as in
            :class:`GradientStepResidual`.

    Shape: ``(*, features)`` → ``(*, features)``.
    """

    def weight_norm_bound(self) -> torch.Tensor:
        """Return σ̂ = ‖W v‖ ≤ ‖W‖₂, after one power step on v when gradients are enabled (uncertified)."""
        if torch.is_grad_enabled():
            power_iteration(self.weight, self.power_vector)
        return torch.linalg.vector_norm(self.weight @ self.power_vector.clone())

    @torch.no_grad()
    def lipschitz_bound(self, *, operand_dtype: torch.dtype | None = None) -> float:
        """max(1, τ·B² − 1), B ≥ ‖W‖₂ certified and τ the no-gradient step: a certified ℓ₂ Lipschitz bound for it.

        With ``operand_dtype`` (an autocast region): :func:`gradient_step_operand_bound` of the
        rounded operands. Refused (ValueError) in ``bound="power"`` training mode, where the
        forward's step follows the moving power estimate, and when W, b or θ are non-finite or s
        is out of range.
        """
        if self.bound == "power" and self.training:
            raise ValueError(
                "PowerClampedResidual with bound='power' is in training mode, where its step follows the "
                "moving power-iteration estimate; call .eval() before asking for its certificate"
            )
        self._check_certifiable()
        return gradient_step_operand_bound(self.weight, self.tau(), operand_dtype)


__all__ = ["PowerClampedResidual"]
