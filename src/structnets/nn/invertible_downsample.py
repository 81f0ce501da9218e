"""1-Lipschitz down-sampling: pixel-unshuffle (an isometry) then a certified 1×1 convolution."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from .._validation import check_bool, check_choice, check_float_dtype, check_int
from ..functional import division_scale, spectral_norm_bound, sqrt_round_up
from ._checkpoint import CertifiedCheckpointMixin
from ._conv_common import require_finite
from ._parametrized import one_read
from ._spectral import CertifiedBound
from .orthogonal_linear import applied_orthogonal, certified_orthogonal

DOWNSAMPLE_KINDS: tuple[str, ...] = ("orthogonal", "norm-constrained")


class InvertibleDownsample(CertifiedCheckpointMixin, nn.Module):
    """``y = A ⋆₁ₓ₁ PixelUnshuffle_f(x) + b``: halve (f = 2) the resolution, ‖A‖₂ ≤ 1 certified.

    Pixel-unshuffle rearranges each f × f patch into f² channels: a permutation of the entries,
    so an isometry (the invertible down-sampling of Jacobsen, Smeulders, Oyallon, *i-RevNet*, ICLR
    2018, used by BCOP, Li et al., NeurIPS 2019, and SOC, Singla & Feizi, ICML 2021). A 1×1
    convolution with matrix A ∈ ℝ^{out × c·f²} acts pixel by pixel, so its operator norm is
    ‖A‖₂ for every input size. ``kind="orthogonal"``: A = the certified polar factor of a free V
    (:func:`structnets.nn.orthogonal_linear.certified_orthogonal`; all singular values 1 − 10⁻⁶,
    gradient-norm preserving); ``kind="norm-constrained"``: A = V / max(1, B(V)) (B widened by the
    rounding of the division in V's dtype, :func:`~structnets.functional.division_scale`).

    Args:
        in_channels: c.
        out_channels: channels after the 1×1 convolution.
        factor: f ≥ 1 (1: just the certified 1×1 convolution).
        kind: one of :data:`DOWNSAMPLE_KINDS`.
        bias: learn b of shape (out_channels,).
        device, dtype: where to allocate parameters.

    Attributes:
        raw_weight: (out_channels, in_channels·f²) free matrix V (applied: :meth:`matrix`).
        bias: (out_channels,) or None.

    Shape: ``(N, c, H, W)`` → ``(N, out_channels, H/f, W/f)``; H and W must be multiples of f.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        factor: int = 2,
        kind: str = "orthogonal",
        bias: bool = True,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.in_channels = check_int("in_channels", in_channels, low=1, high=1 << 16)
        self.out_channels = check_int("out_channels", out_channels, low=1, high=1 << 16)
        self.factor = check_int("factor", factor, low=1, high=64)
        self.kind = check_choice("kind", kind, DOWNSAMPLE_KINDS)
        bias = check_bool("bias", bias)
        if dtype is not None:  # a complex V lost its imaginary part in the orthogonal factor (silently)
            check_float_dtype("dtype", dtype)
        self.unshuffled = self.in_channels * self.factor**2
        factory: dict[str, Any] = {"device": device, "dtype": dtype}
        self.raw_weight = nn.Parameter(torch.empty(self.out_channels, self.unshuffled, **factory))
        if bias:
            self.bias = nn.Parameter(torch.empty(self.out_channels, **factory))
        else:
            self.register_parameter("bias", None)
        self._bound = CertifiedBound("exact")
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Initialise V and b as ``nn.Linear(c·f², out_channels)`` does."""
        nn.init.kaiming_uniform_(self.raw_weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(self.unshuffled)
            nn.init.uniform_(self.bias, -bound, bound)
        self._bound.reset()

    def matrix(self) -> torch.Tensor:
        """The applied (out_channels, c·f²) matrix A, ‖A‖₂ ≤ 1."""
        return self._matrix(cached=False)

    def _matrix(self, cached: bool) -> torch.Tensor:
        with one_read(self):  # a random parametrization must not divide one draw of V by another's bound
            v = self.raw_weight
            if self.kind == "orthogonal":
                # the forward reuses the polar factor where no gradient can reach it (applied_orthogonal)
                return applied_orthogonal(self, v) if cached else certified_orthogonal(v)
            empty = torch.empty(0, dtype=v.dtype, device=v.device)
            square, _ = self._bound.squared(v, empty, False)
            # B widened by the rounding of V/B in V's dtype (bfloat16 measured ‖A‖₂ = 1.0004 without it)
            return v / division_scale(sqrt_round_up(square, v.dtype), v)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if not isinstance(input, torch.Tensor):
            raise TypeError(f"`input` must be a torch.Tensor, got {type(input).__name__}")
        if input.dim() != 4 or input.shape[1] != self.in_channels:
            raise ValueError(f"`input` must have shape (N, {self.in_channels}, H, W), got shape {tuple(input.shape)}")
        if input.shape[2] % self.factor or input.shape[3] % self.factor:
            raise ValueError(
                f"`input` spatial size {input.shape[2]}×{input.shape[3]} must be a multiple of factor={self.factor}"
            )
        unshuffled = F.pixel_unshuffle(input, self.factor) if self.factor > 1 else input
        weight = self._matrix(cached=True)
        return F.conv2d(unshuffled, weight[:, :, None, None], self.bias)

    @torch.no_grad()
    def lipschitz_bound(self) -> float:
        """Certified ℓ₂ Lipschitz constant: B(A) ≥ ‖A‖₂ of the stored applied matrix (≤ 1).

        Raises:
            ValueError: V or b has non-finite entries.
        """
        if not require_finite(self, "InvertibleDownsample"):
            return 1.0  # a random parametrization: every draw V gives ‖A‖₂ ≤ 1 (either kind), whichever is read
        if self.kind == "orthogonal":
            return float(spectral_norm_bound(self.matrix().to(torch.float64), "exact"))
        bound = float(self._bound.certified(self.raw_weight))
        if math.isnan(bound):
            raise ValueError("InvertibleDownsample bound of `raw_weight` is NaN: no certificate")
        return min(1.0, bound)

    @torch.no_grad()
    def export(self) -> nn.Sequential:
        """``nn.Sequential(nn.PixelUnshuffle(f), nn.Conv2d(c·f², out_channels, 1))`` with identical outputs."""
        weight = self.matrix()
        conv = nn.Conv2d(self.unshuffled, self.out_channels, 1, bias=self.bias is not None,
                         device=weight.device, dtype=weight.dtype)  # fmt: skip
        conv.weight.copy_(weight[:, :, None, None])
        if self.bias is not None and conv.bias is not None:
            conv.bias.copy_(self.bias)
        return nn.Sequential(nn.PixelUnshuffle(self.factor), conv)

    def extra_repr(self) -> str:
        return (
            f"in_channels={self.in_channels}, out_channels={self.out_channels}, factor={self.factor}, "
            f"kind={self.kind!r}, bias={self.bias is not None}"
        )


__all__ = ["DOWNSAMPLE_KINDS", "InvertibleDownsample"]
