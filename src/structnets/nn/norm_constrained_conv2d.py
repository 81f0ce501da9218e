"""Stride-1 convolution x ↦ A ⋆ x + b with the operator norm ‖A‖_op ≤ 1 certified."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from .._validation import check_bool, check_choice, check_float_dtype, check_int
from ..functional import division_scale, sqrt_round_up
from ._checkpoint import CertifiedCheckpointMixin
from ._conv_common import (
    CONV_BOUNDS,
    ConvBound,
    ConvGeometry,
    check_conv_options,
    check_image,
    conv_same,
    kernel_pair,
    plain_conv,
    require_finite,
    size_pair,
)
from ._parametrized import one_read


class NormConstrainedConv2d(ConvGeometry, CertifiedCheckpointMixin, nn.Module):
    """Norm-constrained convolution ``y = A ⋆ x + b``, ``A = V / max(1, B(V))``, B(V) ≥ ‖V‖_op certified.

    The convolutional counterpart of :class:`NormConstrainedLinear` (the norm-constrained lift of
    Murari, Furuya, Schönlieb, NeurIPS 2025): the free kernel V is rescaled onto the unit ball of
    the **operator** norm only when it leaves it, so ‖A‖_op ≤ min(1, B) for certain, with B from
    :func:`structnets.conv_norms.conv_squared_norm_bound` (every input size when ``input_size``
    is None, else that size only; exact for circular padding). Stride-1, "same" output size.
    When B > 1 the divisor is B widened by the rounding of V/B in V's dtype (a factor
    1 + u√(k_hk_w·min(c_in, c_out)), :func:`~structnets.functional.division_scale`), so the
    kernel as stored, not only in exact arithmetic, has ‖A‖_op ≤ 1.

    Args:
        in_channels, out_channels: channels of x and y.
        kernel_size: k or (k_h, k_w), odd or even.
        bias: learn b of shape (out_channels,).
        padding_mode: ``"zeros"`` or ``"circular"``.
        input_size: None (certified for every size) or (n₁, n₂).
        stride, dilation, groups: must be 1 (refused otherwise).
        bound: ``"exact"`` (default: the eigensolver bound at every call) or ``"verified"`` (training-mode
            calls that need a gradient: warm per-frequency power estimates with a 1–8 % margin,
            certified for every frequency by one batched Cholesky test, the exact bound when it
            fails; :func:`structnets.nn._conv_verified.training_conv_square`). Eval mode, ``lipschitz_bound``,
            ``export`` and analysis use the exact bound in both modes.
        device, dtype: where to allocate parameters.

    Attributes:
        raw_weight: (out_channels, in_channels, k_h, k_w) free kernel V (the applied one is
            :meth:`kernel`).
        bias: (out_channels,) or None.

    Shape: ``(N, in_channels, H, W)`` → ``(N, out_channels, H, W)``.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, int] = 3,
        bias: bool = True,
        padding_mode: str = "zeros",
        input_size: int | tuple[int, int] | None = None,
        stride: int | tuple[int, int] = 1,
        dilation: int | tuple[int, int] = 1,
        groups: int = 1,
        bound: str = "exact",
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.in_channels = check_int("in_channels", in_channels, low=1, high=1 << 16)
        self.out_channels = check_int("out_channels", out_channels, low=1, high=1 << 16)
        self.kernel_size = kernel_pair(kernel_size)
        size = size_pair(input_size)
        mode = check_conv_options(self.kernel_size, padding_mode, size, stride=stride, dilation=dilation, groups=groups)
        bias = check_bool("bias", bias)
        bound = check_choice("bound", bound, CONV_BOUNDS)
        if dtype is not None:  # a complex or integer kernel has no certificate (and ints cannot be parameters)
            check_float_dtype("dtype", dtype)
        factory: dict[str, Any] = {"device": device, "dtype": dtype}
        self.raw_weight = nn.Parameter(torch.empty(self.out_channels, self.in_channels, *self.kernel_size, **factory))
        if bias:
            self.bias = nn.Parameter(torch.empty(self.out_channels, **factory))
        else:
            self.register_parameter("bias", None)
        self._bound = ConvBound(mode, size, bound)  # also holds padding_mode and input_size (ConvGeometry)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Initialise V and b as ``nn.Conv2d`` does (then A = V / max(1, B(V)))."""
        nn.init.kaiming_uniform_(self.raw_weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_channels * self.kernel_size[0] * self.kernel_size[1]
            nn.init.uniform_(self.bias, -1.0 / math.sqrt(fan_in), 1.0 / math.sqrt(fan_in))
        self._bound.reset()

    @property
    def bound(self) -> str:
        """The bound mode (one of ``"exact"``, ``"verified"``), validated when set."""
        return self._bound.mode

    @bound.setter
    def bound(self, value: str) -> None:
        self._bound.mode = value

    def _scale(self) -> torch.Tensor:
        """s = 1 when B(V) ≤ 1, else B(V) widened to cover the rounding of V/s (:func:`division_scale`)."""
        v = self.raw_weight
        bound = sqrt_round_up(self._bound.squared(v, self.training), v.dtype)
        return division_scale(bound, v, int(v.shape[2]) * int(v.shape[3]))

    def kernel(self) -> torch.Tensor:
        """Return the applied kernel A = fl(V / s), ‖A‖_op ≤ min(1, B(V)) for its stored values."""
        # V read once: a random parametrization (weight dropout) would otherwise divide one draw of V
        # by the bound of another (‖A‖_op = 1.14 measured)
        with one_read(self):
            return self.raw_weight / self._scale()

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        check_image(input, self.in_channels, self.kernel_size, self.input_size)
        return conv_same(input, self.kernel(), self.bias, self.padding_mode)

    @torch.no_grad()
    def lipschitz_bound(self) -> float:
        """Certified ℓ₂ Lipschitz constant as the layer computes now: min(1, B(V)) ≥ ‖A‖_op (A as stored).

        Raises:
            ValueError: V or b has non-finite entries.
        """
        if not require_finite(self, "NormConstrainedConv2d"):
            return 1.0  # a random parametrization: each draw V gives ‖fl(V/s)‖_op ≤ 1, whichever the forward reads
        v = self.raw_weight
        bound = float(sqrt_round_up(self._bound.certified_squared(v), v.dtype))
        if math.isnan(bound):
            raise ValueError("NormConstrainedConv2d bound of `raw_weight` is NaN: no certificate")
        return min(1.0, bound)

    @torch.no_grad()
    def export(self) -> nn.Module:
        """A plain ``nn.Conv2d`` (with an ``nn.ZeroPad2d``/``CircularPad2d`` for even kernels), same outputs."""
        return plain_conv(self.kernel(), self.bias, self.padding_mode)

    def extra_repr(self) -> str:
        return (
            f"in_channels={self.in_channels}, out_channels={self.out_channels}, kernel_size={self.kernel_size}, "
            f"bias={self.bias is not None}, padding_mode={self.padding_mode!r}, bound={self.bound!r}, input_size={self.input_size}"
        )


__all__ = ["NormConstrainedConv2d"]
