"""Swish activation ρ(x) = x·sigmoid(βx) (Ramachandran et al. 2017; Li et al. ICML 2025, eq. 1)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .._validation import check_bool, check_real


class Swish(nn.Module):
    """Swish ρ_β(x) = x · σ(βx), elementwise.

    Args:
        beta: the slope β > 0. β = 1 gives SiLU, the activation of the low-rank Swish paper;
            β → ∞ tends to ReLU.
        learnable: when True, β is a trainable scalar parameter.
        device, dtype: where to allocate β.

    Shape: any ``(*)`` to the same shape.
    """

    _fused: tuple[torch.Tensor, int] | None = None

    def __init__(
        self,
        beta: float = 1.0,
        learnable: bool = False,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.initial_beta = check_real("beta", beta, low=0.0, low_open=True)
        self.learnable = check_bool("learnable", learnable)
        beta_tensor = torch.empty((), device=device, dtype=dtype)
        if learnable:
            self.beta = nn.Parameter(beta_tensor)
        else:
            self.register_buffer("beta", beta_tensor)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        with torch.no_grad():
            self.beta.fill_(self.initial_beta)
        self._mark_fused(self.initial_beta == 1.0)

    def _mark_fused(self, is_one: bool | None = None) -> None:
        """Remember the β tensor, and its version, that is known to hold 1 (for the SiLU kernel).

        The fast path must follow the buffer, not the constructor argument: a state_dict (a trained
        learnable β has the same key), an in-place write, ``functional_call`` or a dtype move can
        all change or replace it. Only a fixed β is checked, and only here, never in ``forward``
        (reading a tensor's value there would synchronise a GPU).
        """
        beta = self.beta
        if is_one is None:  # a meta tensor has no value to read: the general formula then
            is_one = not beta.is_meta and bool(beta.detach().cpu() == 1.0)
        self._fused = (beta, beta._version) if is_one and not self.learnable else None

    def _load_from_state_dict(self, *args: Any, **kwargs: Any) -> None:
        super()._load_from_state_dict(*args, **kwargs)
        self._mark_fused()

    def _apply(self, fn: Any, recurse: bool = True) -> Swish:
        was_fused = self._fused is not None and self._fused[0] is self.beta and self._fused[1] == self.beta._version
        super()._apply(fn, recurse)
        if was_fused:  # a float-to-float move keeps 1.0 exact; anything else is read again
            self._mark_fused()
        return self

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        fused = self._fused
        if fused is not None and fused[0] is self.beta and fused[1] == self.beta._version:
            # SiLU is the fused kernel for β = 1: same values, faster and one less buffer read.
            return nn.functional.silu(input)
        return input * torch.sigmoid(self.beta * input)

    def extra_repr(self) -> str:
        return f"beta={self.initial_beta}, learnable={self.learnable}"
