"""Rank-r convolution: a k×k convolution to r channels, then a 1×1 convolution (``LowRankConv1d/2d``).

A convolution with kernel K of shape (c_out, c_in, *k) is the matrix W = K.reshape(c_out, c_in·∏k)
applied to every patch of the (padded) input. A rank-r factorisation W = U V, U (c_out × r),
V (r × c_in·∏k), is therefore the same convolution geometry (stride, padding, dilation, padding
mode) with V as an r-channel kernel, followed by the pointwise map U: a 1×1 convolution. At
r = min(c_out, c_in·∏k) it is exact. Parameters: r·(c_in·∏k + c_out) instead of c_out·c_in·∏k
(Jaderberg, Vedaldi, Zisserman, BMVC 2014, scheme 2; Zhang et al., TPAMI 2016, "channel
decomposition").
"""

from __future__ import annotations

import math
from numbers import Integral
from typing import Any

import torch
from torch import nn

from .._validation import check_bool, check_fits_in_memory, check_int, itemsize_of

_Conv = nn.Conv1d | nn.Conv2d


class _LowRankConvNd(nn.Module):
    """Shared body of :class:`LowRankConv1d` and :class:`LowRankConv2d` (see the module docstring)."""

    _dims: int = 0
    _conv: type[nn.Conv1d] | type[nn.Conv2d]

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, ...],
        rank: int,
        stride: int | tuple[int, ...] = 1,
        padding: int | tuple[int, ...] | str = 0,
        dilation: int | tuple[int, ...] = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.in_channels = check_int("in_channels", in_channels, low=1)
        self.out_channels = check_int("out_channels", out_channels, low=1)
        self.rank = check_int("rank", rank, low=1)
        bias = check_bool("bias", bias)
        self.kernel_size: tuple[int, ...] = self._kernel(kernel_size)
        # Checked before anything is allocated: a bad rank must not reach torch's allocator.
        largest = min(self.out_channels, self.in_channels * math.prod(self.kernel_size))
        if self.rank > largest:
            raise ValueError(
                f"`rank` must be an int in [1, min(out_channels, in_channels·∏kernel_size)={largest}], got {self.rank}"
            )
        check_fits_in_memory(
            f"`in_channels`={self.in_channels}, `out_channels`={self.out_channels}, "
            f"`kernel_size`={self.kernel_size}, `rank`={self.rank}",
            self.rank * (self.in_features + self.out_channels) + self.out_channels,
            itemsize=itemsize_of(dtype),
            what="parameters",
        )
        factory: dict[str, Any] = {"device": device, "dtype": dtype}
        # The r-channel k×k convolution carries all of the geometry; the 1×1 one only mixes channels.
        self.reduce = self._conv(
            self.in_channels, self.rank, self.kernel_size, stride=stride, padding=padding,  # type: ignore[arg-type]
            dilation=dilation, bias=False, padding_mode=padding_mode, **factory,  # type: ignore[arg-type]
        )  # fmt: skip
        self.expand = self._conv(self.rank, self.out_channels, 1, bias=bias, **factory)

    @classmethod
    def _kernel(cls, kernel_size: object) -> tuple[int, ...]:
        """``kernel_size`` as a tuple of ``_dims`` ints ≥ 1, or raise naming it."""
        raw = tuple(kernel_size) if isinstance(kernel_size, (tuple, list)) else (kernel_size,) * cls._dims
        shape = f"an int >= 1 or a tuple of {cls._dims} of them"
        values = tuple(int(k) for k in raw if isinstance(k, Integral) and not isinstance(k, bool))
        if len(values) != len(raw):
            raise TypeError(f"`kernel_size` must be {shape}, got {kernel_size!r}")
        if len(values) != cls._dims or min(values, default=0) < 1:
            raise ValueError(f"`kernel_size` must be {shape}, got {kernel_size!r}")
        return values

    @property
    def in_features(self) -> int:
        """Columns of the kernel matrix: c_in·∏k."""
        return self.in_channels * math.prod(self.kernel_size)

    @property
    def out_features(self) -> int:
        """Rows of the kernel matrix: c_out."""
        return self.out_channels

    @property
    def bias(self) -> torch.Tensor | None:
        """The bias (out_channels,), or None."""
        return self.expand.bias

    @property
    def weight(self) -> torch.Tensor:
        """The dense kernel (out_channels, in_channels, *kernel_size), as ``nn.Conv*d.weight`` (computed)."""
        return self.to_dense()

    def reset_parameters(self) -> None:
        """Initialise both convolutions as torch initialises a convolution."""
        self.reduce.reset_parameters()
        self.expand.reset_parameters()

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        """``expand(reduce(x))``: the rank-r kernel applied to every patch, then U at every position."""
        return self.expand(self.reduce(input))

    def to_dense(self) -> torch.Tensor:
        """Return the dense kernel U V reshaped to (out_channels, in_channels, *kernel_size).

        ``to_dense().flatten(1)`` is the (c_out × c_in·∏k) matrix U V.
        """
        u = self.expand.weight.reshape(self.out_channels, self.rank)
        v = self.reduce.weight.reshape(self.rank, -1)
        return (u @ v).reshape(self.out_channels, self.in_channels, *self.kernel_size)

    @torch.no_grad()
    def to_conv(self) -> nn.Conv1d | nn.Conv2d:
        """Return one dense convolution with kernel U V and the same geometry and bias (same outputs)."""
        r = self.reduce
        geometry: dict[str, Any] = {
            "kernel_size": self.kernel_size,
            "stride": r.stride,
            "padding": r.padding,
            "dilation": r.dilation,
        }
        conv = self._conv(
            self.in_channels, self.out_channels, **geometry, bias=self.bias is not None,
            padding_mode=r.padding_mode, device=r.weight.device, dtype=r.weight.dtype,
        )  # fmt: skip
        conv.weight.copy_(self.to_dense())
        if self.bias is not None and conv.bias is not None:
            conv.bias.copy_(self.bias)
        conv.train(self.training)
        return conv

    @torch.no_grad()
    def export(self) -> nn.Sequential:
        """Return ``nn.Sequential(k×k conv to r channels, 1×1 conv)``: plain torch, the factorisation kept.

        Same parameters (r·(c_in·∏k + c_out) + bias), same outputs bit for bit (the same two
        convolutions); the copy shares no storage with this layer. :meth:`to_conv` gives one dense
        convolution instead.
        """
        r = self.reduce
        geometry: dict[str, Any] = {
            "kernel_size": self.kernel_size,
            "stride": r.stride,
            "padding": r.padding,
            "dilation": r.dilation,
        }
        first = self._conv(
            self.in_channels, self.rank, **geometry, bias=False, padding_mode=r.padding_mode,
            device=r.weight.device, dtype=r.weight.dtype,
        )  # fmt: skip
        second = self._conv(
            self.rank, self.out_channels, 1, bias=self.bias is not None,
            device=self.expand.weight.device, dtype=self.expand.weight.dtype,
        )  # fmt: skip
        first.weight.copy_(self.reduce.weight)
        second.weight.copy_(self.expand.weight)
        if self.bias is not None and second.bias is not None:
            second.bias.copy_(self.bias)
        out = nn.Sequential(first, second)
        out.train(self.training)
        return out

    @classmethod
    def from_factors(cls, conv: _Conv, left: torch.Tensor, right: torch.Tensor) -> _LowRankConvNd:
        """A layer with the geometry and bias of ``conv`` and kernel matrix ``left @ right``.

        Args:
            conv: the convolution to replace (``nn.Conv1d``/``nn.Conv2d``, groups = 1).
            left: U, (out_channels, r).
            right: V, (r, in_channels·∏kernel_size).

        Returns:
            a new layer on ``conv``'s device and dtype; ``requires_grad`` as on ``conv.weight``.
        """
        if type(conv) is not cls._conv:
            raise TypeError(f"`conv` must be a torch.nn.{cls._conv.__name__}, got {type(conv).__name__}")
        if conv.groups != 1:
            raise ValueError(f"`conv` must have groups=1, got groups={conv.groups}")
        n = conv.in_channels * math.prod(conv.kernel_size)
        if left.dim() != 2 or left.shape[0] != conv.out_channels:
            raise ValueError(f"`left` must have shape ({conv.out_channels}, r), got {tuple(left.shape)}")
        rank = left.shape[1]
        # A transposed factor has as many entries and would reshape into a wrong kernel silently.
        if tuple(right.shape) != (rank, n):
            raise ValueError(f"`right` must have shape ({rank}, {n}), got {tuple(right.shape)}")
        layer = cls(
            conv.in_channels, conv.out_channels, conv.kernel_size, rank, stride=conv.stride,  # type: ignore[arg-type]
            padding=conv.padding, dilation=conv.dilation, bias=conv.bias is not None,  # type: ignore[arg-type]
            padding_mode=conv.padding_mode, device=conv.weight.device, dtype=conv.weight.dtype,
        )  # fmt: skip
        with torch.no_grad():
            layer.reduce.weight.copy_(right.reshape(layer.reduce.weight.shape))
            layer.expand.weight.copy_(left.reshape(layer.expand.weight.shape))
            if conv.bias is not None:
                assert layer.expand.bias is not None
                layer.expand.bias.copy_(conv.bias.detach())
        layer.requires_grad_(conv.weight.requires_grad)
        layer.train(conv.training)
        return layer

    @classmethod
    def from_conv(cls, conv: _Conv, rank: int) -> _LowRankConvNd:
        """Best rank-``rank`` approximation of ``conv``'s kernel matrix by truncated SVD (float64).

        With K.reshape(c_out, −1) = P Σ Qᵀ: U = P_r Σ_r^{1/2}, V = Σ_r^{1/2} Q_rᵀ, the Eckart–Young
        optimum in Frobenius norm; at full rank the outputs equal ``conv``'s to rounding.
        """
        if type(conv) is not cls._conv:
            raise TypeError(f"`conv` must be a torch.nn.{cls._conv.__name__}, got {type(conv).__name__}")
        matrix = conv.weight.detach().reshape(conv.out_channels, -1).to(torch.float64)
        if not bool(torch.isfinite(matrix).all()):
            raise ValueError("`conv` has non-finite weights (nan or inf); they have no SVD")
        largest = min(matrix.shape)
        rank = check_int("rank", rank, low=1)
        if rank > largest:
            raise ValueError(f"`rank` must be an int in [1, {largest}], got {rank}")
        left, singular, right_t = torch.linalg.svd(matrix, full_matrices=False)
        root = singular[:rank].sqrt()
        return cls.from_factors(conv, left[:, :rank] * root, root[:, None] * right_t[:rank])

    def extra_repr(self) -> str:
        r = self.reduce
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, rank={self.rank}, "
            f"stride={r.stride}, padding={r.padding}, dilation={r.dilation}, bias={self.bias is not None}"
            + (f", padding_mode={r.padding_mode!r}" if r.padding_mode != "zeros" else "")
        )


class LowRankConv1d(_LowRankConvNd):
    """Rank-``rank`` ``nn.Conv1d``: a k-tap convolution to ``rank`` channels, then a 1×1 one.

    Args:
        in_channels, out_channels, kernel_size, stride, padding, dilation, bias, padding_mode: as
            for ``nn.Conv1d`` (groups = 1).
        rank: r, an int in [1, min(out_channels, in_channels·kernel_size)].
        device, dtype: where to allocate parameters.

    Attributes:
        reduce: ``nn.Conv1d(in_channels, rank, kernel_size, ...)`` holding V, no bias.
        expand: ``nn.Conv1d(rank, out_channels, 1)`` holding U and the bias.

    Shape: as ``nn.Conv1d``.
    """

    _dims = 1
    _conv = nn.Conv1d


class LowRankConv2d(_LowRankConvNd):
    """Rank-``rank`` ``nn.Conv2d``: a k×k convolution to ``rank`` channels, then a 1×1 one.

    Args:
        in_channels, out_channels, kernel_size, stride, padding, dilation, bias, padding_mode: as
            for ``nn.Conv2d`` (groups = 1).
        rank: r, an int in [1, min(out_channels, in_channels·kh·kw)].
        device, dtype: where to allocate parameters.

    Attributes:
        reduce: ``nn.Conv2d(in_channels, rank, kernel_size, ...)`` holding V, no bias.
        expand: ``nn.Conv2d(rank, out_channels, 1)`` holding U and the bias.

    Shape: as ``nn.Conv2d``.
    """

    _dims = 2
    _conv = nn.Conv2d
