"""Convolutional 1-Lipschitz residual layer Φ(x) = x − τ Wᵀσ(Wx + b), W a stride-1 2-D convolution."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from .._validation import check_bool, check_choice, check_float_dtype, check_int
from ..functional import certified_step
from ._checkpoint import CertifiedCheckpointMixin
from ._conv_common import (
    CONV_BOUNDS,
    ConvBound,
    ConvGeometry,
    check_conv_options,
    check_image,
    conv_same,
    conv_same_adjoint,
    kernel_pair,
    plain_adjoint,
    plain_conv,
    require_finite,
    size_pair,
)
from ._parametrized import one_read
from ._step import ValidatedStep
from .gradient_step_residual import ResidualExport


class GradientStepConv2d(ValidatedStep, ConvGeometry, CertifiedCheckpointMixin, nn.Module):
    """Convolutional gradient step ``Φ(x) = x − τ Wᵀ ReLU(W x + b)``, 1-Lipschitz in ℓ₂ when τ‖W‖₂² ≤ 2.

    W: ℝ^{c × H × W} → ℝ^{h × H × W} is a stride-1 convolution with "same" output size (zero or
    circular padding) and Wᵀ its adjoint (``conv_transpose2d`` with the same weight; for even
    kernels and circular padding the convolution with the flipped, transposed kernel). Φ is the
    gradient step x − τ∇f(x) on the convex potential f(x) = Σ Γ(Wx + b), Γ' = ReLU, exactly as the
    dense :class:`GradientStepResidual` (Murari, Furuya, Schönlieb, NeurIPS 2025; the convolutional
    CPL layer of Meunier, Delattre, Araujo, Allauzen, *A Dynamical System Perspective for Lipschitz
    Neural Networks*, ICML 2022): its Jacobian I − τWᵀDW has eigenvalues in [1 − τ‖W‖₂², 1].

    ‖W‖₂ is the norm of the convolution **operator**: τ = s/Q with Q ≥ ‖W‖_op² certified by
    :func:`structnets.conv_norms.conv_squared_norm_bound` (float64, rounded up), and τ itself
    rounded down in the weight's dtype, so τ‖W‖_op² ≤ s ≤ 2 holds exactly. With
    ``input_size=None`` (default) Q bounds the operator on **every** input size (the sampled-torus
    bound, ≤ 1 % above the supremum); with ``input_size=(n₁, n₂)`` Q is for that size only (exact
    for circular padding, Sedghi et al. 2019; the (n + k − 1)-torus bound for zeros), tighter and
    cheaper, and inputs of another size are refused. Q is recomputed (differentiably) while
    training and cached by content otherwise.

    Args:
        channels: c, input and output channels.
        hidden_channels: h, output channels of W.
        kernel_size: k or (k_h, k_w), odd or even.
        bias: learn b of shape (h,).
        padding_mode: ``"zeros"`` or ``"circular"``.
        step: s in [0, 2] (in (0, 2) when learnable).
        learnable_step: learn s = 2·sigmoid(θ).
        input_size: None (certified for every size) or (n₁, n₂).
        stride, dilation, groups: must be 1 (other values are refused: the certificate does not
            cover them; down-sample with :class:`InvertibleDownsample`).
        bound: ``"exact"`` (default: the eigensolver bound at every call) or ``"verified"`` (training-mode
            calls that need a gradient: warm per-frequency power estimates with a 1–8 % margin,
            certified for every frequency by one batched Cholesky test, the exact bound when it
            fails; :func:`structnets.nn._conv_verified.training_conv_square`). Eval mode, ``lipschitz_bound``,
            ``export`` and analysis use the exact bound in both modes.
        device, dtype: where to allocate parameters.

    Attributes:
        weight: (hidden_channels, channels, k_h, k_w).
        bias: (hidden_channels,) or None.
        step_logit: 0-d θ (only when ``learnable_step``).

    Shape: ``(N, channels, H, W)`` → ``(N, channels, H, W)``.
    """

    def __init__(
        self,
        channels: int,
        hidden_channels: int,
        kernel_size: int | tuple[int, int] = 3,
        bias: bool = True,
        padding_mode: str = "zeros",
        step: float = 1.0,
        learnable_step: bool = True,
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
        self.channels = check_int("channels", channels, low=1, high=1 << 16)
        self.hidden_channels = check_int("hidden_channels", hidden_channels, low=1, high=1 << 16)
        self.kernel_size = kernel_pair(kernel_size)
        size = size_pair(input_size)
        mode = check_conv_options(self.kernel_size, padding_mode, size, stride=stride, dilation=dilation, groups=groups)
        bias = check_bool("bias", bias)
        bound = check_choice("bound", bound, CONV_BOUNDS)
        if dtype is not None:  # a complex or integer kernel has no certificate (and ints cannot be parameters)
            check_float_dtype("dtype", dtype)
        self.learnable_step = check_bool("learnable_step", learnable_step)
        self.step = step  # validated by ValidatedStep, here and at every later assignment
        factory: dict[str, Any] = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.empty(self.hidden_channels, self.channels, *self.kernel_size, **factory))
        if bias:
            self.bias = nn.Parameter(torch.empty(self.hidden_channels, **factory))
        else:
            self.register_parameter("bias", None)
        if learnable_step:
            self.step_logit = nn.Parameter(torch.empty((), **factory))
        else:
            self.register_parameter("step_logit", None)
        self._bound = ConvBound(mode, size, bound)  # also holds padding_mode and input_size (ConvGeometry)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Initialise W, b like ``nn.Conv2d(channels, hidden_channels, kernel_size)``, θ so that s = ``step``."""
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.channels * self.kernel_size[0] * self.kernel_size[1]
            nn.init.uniform_(self.bias, -1.0 / math.sqrt(fan_in), 1.0 / math.sqrt(fan_in))
        if self.step_logit is not None:
            with torch.no_grad():
                self.step_logit.fill_(math.log(self.step / (2.0 - self.step)))
        self._bound.reset()

    @property
    def bound(self) -> str:
        """The bound mode (one of ``"exact"``, ``"verified"``), validated when set."""
        return self._bound.mode

    @bound.setter
    def bound(self, value: str) -> None:
        self._bound.mode = value

    def step_size(self) -> torch.Tensor:
        """Return s ∈ [0, 2] as a 0-d tensor (differentiable when learnable)."""
        if self.step_logit is not None:
            return 2.0 * torch.sigmoid(self.step_logit)
        return torch.tensor(self.step, dtype=self.weight.dtype, device=self.weight.device)

    def weight_norm_squared_bound(self) -> torch.Tensor:
        """Return the float64 Q ≥ ‖W‖_op² the step uses (certified)."""
        return self._bound.squared(self.weight, self.training)

    def tau(self) -> torch.Tensor:
        """Return τ = s/Q in the weight's dtype, rounded down so that τ‖W‖_op² ≤ s ≤ 2 exactly."""
        step = self.step_size() if self.step_logit is not None else self.step
        # certified_step raises a positive Q below 2^-1020 (s/Q would overflow to τ = NaN)
        square = self._bound.squared(self.weight, self.training)
        return certified_step(step, square, self.weight.dtype)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        check_image(input, self.channels, self.kernel_size, self.input_size)
        with one_read(self):
            hidden = torch.relu(conv_same(input, self.weight, self.bias, self.padding_mode))
            # scale the kernel, not the (N, c, H, W) activations: fewer flops
            return input + conv_same_adjoint(hidden, self.weight * -self.tau(), self.padding_mode)

    def lipschitz_bound(self) -> float:
        """Certified ℓ₂ Lipschitz constant of the layer as it computes now: 1 (τ‖W‖_op² ≤ 2).

        For every input size when ``input_size`` is None; for the one size the layer accepts otherwise.

        Raises:
            ValueError: W, b or θ has non-finite entries, or s left [0, 2].
        """
        # every realisation of a random parametrization is one weight W with τ(W)‖W‖_op² ≤ 2 (the forward
        # reads one W per call, :func:`one_read`), so 1 holds for each: no need to know which one it draws
        require_finite(self, "GradientStepConv2d")
        if self.step_logit is None:
            self._check_step()  # a step written behind the property
        with torch.no_grad():  # the exact bound, whatever the mode
            tau = self.tau()
        if not bool(torch.isfinite(tau)):
            raise ValueError("GradientStepConv2d step τ is not finite: no certificate")
        return 1.0

    @torch.no_grad()
    def export(self) -> ResidualExport:
        """Plain torch layers with identical outputs: ``x + Conv2d(−τWᵀ)(ReLU(Conv2d(W, b)(x)))``."""
        with one_read(self):
            tau = self.tau().detach()
            body = nn.Sequential(
                plain_conv(self.weight, self.bias, self.padding_mode),
                nn.ReLU(),
                plain_adjoint(self.weight * -tau, self.padding_mode),
            )
        return ResidualExport(body)

    def extra_repr(self) -> str:
        return (
            f"channels={self.channels}, hidden_channels={self.hidden_channels}, kernel_size={self.kernel_size}, "
            f"bias={self.bias is not None}, padding_mode={self.padding_mode!r}, bound={self.bound!r}, step={self.step}, "
            f"learnable_step={self.learnable_step}, input_size={self.input_size}"
        )


__all__ = ["GradientStepConv2d"]
