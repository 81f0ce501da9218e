"""UnconstrainedResidual: the plain residual block x + U ReLU(Wx + b), the baseline of the 1-Lipschitz ResNets."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .._validation import check_fits_in_memory, check_int, itemsize_of
from ..functional import spectral_norm_bound


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
    def lipschitz_bound(self) -> float:
        """Certified bound 1 + ‖U‖₂‖W‖₂ (triangle inequality, ReLU 1-Lipschitz)."""
        return 1.0 + float(
            spectral_norm_bound(self.outer.weight.detach()) * spectral_norm_bound(self.inner.weight.detach())
        )

    def extra_repr(self) -> str:
        return f"features={self.features}, hidden={self.hidden}"


__all__ = ["UnconstrainedResidual"]
