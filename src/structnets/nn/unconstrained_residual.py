"""UnconstrainedResidual: the plain residual block x + U ReLU(Wx + b), the baseline of the 1-Lipschitz ResNets."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from .._validation import check_fits_in_memory, check_int, itemsize_of
from ..functional import round_operand, spectral_norm_bound


class UnconstrainedResidual(nn.Module):
    """Plain residual block ``x + U ReLU(W x + b)`` (the unconstrained baseline).

    The baseline of Murari, Furuya, Schönlieb, *Approximation theory for 1-Lipschitz ResNets*
    (NeurIPS 2025, arXiv 2505.12003): the same residual form as :class:`GradientStepResidual`
    with U free instead of −τWᵀ, so nothing bounds its Lipschitz constant
    1 + ‖U‖₂‖W‖₂ (:meth:`lipschitz_bound`).

    Args:
        features: input and output size d.
        hidden: hidden width h.
        device, dtype: where to allocate parameters.

    Attributes:
        inner: ``nn.Linear(features, hidden)``, W and b.
        outer: ``nn.Linear(hidden, features, bias=False)``, U.

    Shape: ``(*, features)`` → ``(*, features)``.
    """

    def __init__(
        self,
        features: int,
        hidden: int,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.features = check_int("features", features, low=1)
        self.hidden = check_int("hidden", hidden, low=1)
        check_fits_in_memory(
            f"`features`={self.features}, `hidden`={self.hidden}",
            2 * self.hidden * self.features + self.hidden + self.features,
            itemsize=itemsize_of(dtype),
            what="parameters",
        )
        factory: dict[str, Any] = {"device": device, "dtype": dtype}
        self.inner = nn.Linear(self.features, self.hidden, **factory)
        self.outer = nn.Linear(self.hidden, self.features, bias=False, **factory)

    def reset_parameters(self) -> None:
        """Both maps as ``nn.Linear.reset_parameters``."""
        self.inner.reset_parameters()
        self.outer.reset_parameters()

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if not isinstance(input, torch.Tensor):
            raise TypeError(f"`input` must be a torch.Tensor, got {type(input).__name__}")
        if input.dim() == 0 or input.shape[-1] != self.features:
            raise ValueError(
                f"`input` must have last dimension features={self.features}, got shape {tuple(input.shape)}"
            )
        return input + self.outer(torch.relu(self.inner(input)))

    @torch.no_grad()
    def lipschitz_bound(self, *, operand_dtype: torch.dtype | None = None) -> float:
        """Certified bound 1 + ‖U‖₂‖W‖₂ (triangle inequality, ReLU 1-Lipschitz), rounded up.

        Args:
            operand_dtype: certify the forward under ``torch.autocast`` to this dtype (U and W
                rounded to it).

        Raises:
            ValueError: ``inner`` or ``outer`` replaced by something other than a plain
                ``nn.Linear`` (the bound reads their weights), or non-finite weights.
        """
        for name in ("inner", "outer"):
            part = getattr(self, name)
            if not isinstance(part, nn.Linear) or type(part).forward is not nn.Linear.forward:
                raise ValueError(
                    f"UnconstrainedResidual `{name}` must be a plain nn.Linear for its bound, got {type(part).__name__}"
                )
            if not bool(torch.isfinite(part.weight).all()):
                raise ValueError(f"UnconstrainedResidual `{name}.weight` has non-finite entries")
        norms = [
            float(spectral_norm_bound(round_operand(part.weight.detach(), operand_dtype).to(torch.float64)))
            for part in (self.outer, self.inner)
        ]
        product = norms[0] * norms[1]
        product = math.nextafter(product, math.inf) if math.isfinite(product) else product
        total = 1.0 + product
        return math.nextafter(total, math.inf) if math.isfinite(total) else total

    def extra_repr(self) -> str:
        return f"features={self.features}, hidden={self.hidden}"


__all__ = ["UnconstrainedResidual"]
