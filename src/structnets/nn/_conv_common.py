"""What the certified convolutional layers share: "same" padding, the adjoint, input checks, the bound cache."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils import parametrize

from .._validation import check_choice, check_int
from ..conv_norms import PADDING_MODES, conv_squared_norm_bound
from ._conv_verified import training_conv_square
from ._parametrized import reads_agree
from ._spectral import VERIFIED_MARGIN_MAX, ContentCache, _is_transformed


def kernel_pair(value: object) -> tuple[int, int]:
    """``kernel_size`` as (k_h, k_w), each an int in [1, 64], or an error naming it."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"`kernel_size` must be an int or a pair of ints, got {value!r}")
        return check_int("kernel_size", value[0], low=1, high=64), check_int("kernel_size", value[1], low=1, high=64)
    size = check_int("kernel_size", value, low=1, high=64)
    return size, size


def size_pair(value: object) -> tuple[int, int] | None:
    """``input_size`` as (n₁, n₂) with nᵢ ≥ 1, or None, or an error naming it."""
    if value is None:
        return None
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"`input_size` must be None, an int or a pair of ints, got {value!r}")
        return check_int("input_size", value[0], low=1), check_int("input_size", value[1], low=1)
    size = check_int("input_size", value, low=1)
    return size, size


def check_conv_options(
    kernel_size: tuple[int, int], padding_mode: str, input_size: tuple[int, int] | None, **unsupported: Any
) -> str:
    """Refuse stride ≠ 1, dilation ≠ 1, groups ≠ 1 and a kernel larger than a given input size, by name."""
    mode = check_choice("padding_mode", padding_mode, PADDING_MODES)
    for name, value in unsupported.items():
        check_unit_option(name, value, pair=name != "groups")
    if input_size is not None and (kernel_size[0] > input_size[0] or kernel_size[1] > input_size[1]):
        raise ValueError(f"`kernel_size` {kernel_size} must not exceed `input_size` {input_size}")
    return mode


def same_pads(kernel_size: tuple[int, int]) -> tuple[int, int, int, int]:
    """F.pad amounts (left, right, top, bottom) that keep the size: (k − 1)//2 before, k//2 after."""
    kh, kw = kernel_size
    return (kw - 1) // 2, kw // 2, (kh - 1) // 2, kh // 2


def _symmetric(kernel_size: tuple[int, int]) -> bool:
    return kernel_size[0] % 2 == 1 and kernel_size[1] % 2 == 1


def conv_same(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, padding_mode: str) -> torch.Tensor:
    """The stride-1 convolution W with "same" output size (zero or circular padding)."""
    kernel_size = (int(weight.shape[2]), int(weight.shape[3]))
    if padding_mode == "zeros" and _symmetric(kernel_size):
        return F.conv2d(input, weight, bias, padding=(kernel_size[0] // 2, kernel_size[1] // 2))
    mode = "constant" if padding_mode == "zeros" else "circular"
    return F.conv2d(F.pad(input, same_pads(kernel_size), mode=mode), weight, bias)


def conv_same_adjoint(output: torch.Tensor, weight: torch.Tensor, padding_mode: str) -> torch.Tensor:
    """Wᵀ of :func:`conv_same`: ``conv_transpose2d`` with the same weight (odd kernels, zero padding),
    else the convolution with the flipped, transposed kernel and the pads swapped (the adjoint of
    pad-then-convolve is the correlation with the flipped kernel, then the adjoint of the pad)."""
    kernel_size = (int(weight.shape[2]), int(weight.shape[3]))
    if padding_mode == "zeros" and _symmetric(kernel_size):
        return F.conv_transpose2d(output, weight, padding=(kernel_size[0] // 2, kernel_size[1] // 2))
    left, right, top, bottom = same_pads(kernel_size)
    mode = "constant" if padding_mode == "zeros" else "circular"
    flipped = weight.transpose(0, 1).flip(2, 3)
    return F.conv2d(F.pad(output, (right, left, bottom, top), mode=mode), flipped)


def plain_conv(weight: torch.Tensor, bias: torch.Tensor | None, padding_mode: str) -> nn.Module:
    """A plain-torch module computing :func:`conv_same` with these (copied) weights."""
    c_out, c_in, kh, kw = weight.shape
    factory: dict[str, Any] = {"device": weight.device, "dtype": weight.dtype}
    if _symmetric((kh, kw)):
        conv = nn.Conv2d(c_in, c_out, (kh, kw), padding=(kh // 2, kw // 2), padding_mode=cast(Any, padding_mode),
                         bias=bias is not None, **factory)  # fmt: skip
        module: nn.Module = conv
    else:
        conv = nn.Conv2d(c_in, c_out, (kh, kw), bias=bias is not None, **factory)
        pads = same_pads((kh, kw))
        pad: nn.Module = nn.ZeroPad2d(pads) if padding_mode == "zeros" else nn.CircularPad2d(pads)
        module = nn.Sequential(pad, conv)
    with torch.no_grad():
        conv.weight.copy_(weight)
        if bias is not None and conv.bias is not None:
            conv.bias.copy_(bias)
    return module


def plain_adjoint(weight: torch.Tensor, padding_mode: str) -> nn.Module:
    """A plain-torch module computing :func:`conv_same_adjoint` (a convolution with the flipped, transposed kernel)."""
    kh, kw = int(weight.shape[2]), int(weight.shape[3])
    flipped = weight.transpose(0, 1).flip(2, 3)
    if _symmetric((kh, kw)):
        return plain_conv(flipped, None, padding_mode)
    c_out, c_in = flipped.shape[:2]
    conv = nn.Conv2d(c_in, c_out, (kh, kw), bias=False, device=weight.device, dtype=weight.dtype)
    left, right, top, bottom = same_pads((kh, kw))
    swapped = (right, left, bottom, top)
    pad: nn.Module = nn.ZeroPad2d(swapped) if padding_mode == "zeros" else nn.CircularPad2d(swapped)
    with torch.no_grad():
        conv.weight.copy_(flipped)
    return nn.Sequential(pad, conv)


def check_image(
    input: object, channels: int, kernel_size: tuple[int, int], input_size: tuple[int, int] | None
) -> torch.Tensor:
    """``input`` as a (N, channels, H, W) tensor the certificate covers, or an error naming ``input``."""
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"`input` must be a torch.Tensor, got {type(input).__name__}")
    if input.dim() != 4 or input.shape[1] != channels:
        raise ValueError(f"`input` must have shape (N, {channels}, H, W), got shape {tuple(input.shape)}")
    height, width = int(input.shape[2]), int(input.shape[3])
    if kernel_size[0] > height or kernel_size[1] > width:
        raise ValueError(
            f"`input` of spatial size {height}×{width} is smaller than the {kernel_size[0]}×{kernel_size[1]} kernel"
        )
    if input_size is not None and (height, width) != input_size:
        raise ValueError(
            f"`input` must be {input_size[0]}×{input_size[1]} (the layer's certificate is for input_size="
            f"{input_size}), got {height}×{width}; build the layer with input_size=None for every size"
        )
    return input


#: The bound modes of the convolutional layers: ``"exact"`` (the eigensolver bound at every call) and
#: ``"verified"`` (in training, warm per-frequency power estimates certified by one batched Cholesky test).
CONV_BOUNDS: tuple[str, ...] = ("exact", "verified")
#: floor of the conv layers' ``"verified"`` margin μ = (1 + m)·max λ̂: Q exceeds the estimate by this
#: much, so τ = s/Q is that much below the exact bound's. Per-frequency power vectors warm-started
#: every step converge tightly (the top of each Gram matrix is well separated): in 400 Adam steps
#: of the lipschitz-mnist-conv network the Cholesky test failed 3–4 times per layer at every floor
#: from 10⁻² to 5·10⁻⁴ (all but one in the first steps), so the floor is 5·10⁻⁴, not the dense
#: layers' 10⁻² (whose single power vector lags when top singular values cluster).
CONV_VERIFIED_MARGIN = 5e-4


class ConvBound:
    """The certified Q ≥ ‖W‖_op² a convolutional layer uses, with a cache checked by content.

    With a gradient needed (the weight requires grad and autograd is on, or under a
    ``torch.func`` transform) Q is recomputed, differentiably, at every call; otherwise it comes
    from a cache that holds a copy of the weight it was computed for and is used only when
    ``torch.equal`` says the weight is unchanged (so optimizer steps, ``.data`` edits and
    state-dict loads can never leave it stale), as :class:`structnets.nn._spectral.CertifiedBound`.

    ``mode="verified"``: a training-mode call that needs a gradient takes
    :func:`structnets.nn._conv_verified.training_conv_square` — the persistent per-frequency power
    vectors (kept here, not in the state dict: they only choose the guess μ, which the Cholesky
    test checks against the current weight, so stale vectors can cost an exact step, never a
    wrong bound) give μ = (1 + margin)·max λ̂, certified for every frequency at once, else the
    exact bound. The margin doubles after a fallback (up to :data:`VERIFIED_MARGIN_MAX`) and
    shrinks by 5 % after a pass (down to :data:`CONV_VERIFIED_MARGIN`), as the dense layers'.
    Eval-mode and no-gradient calls (``lipschitz_bound``, export, analysis) use the exact bound.

    Args:
        padding_mode, input_size: what the certificate is for (:func:`conv_squared_norm_bound`).
        mode: one of :data:`CONV_BOUNDS`.

    Attributes:
        verified_steps, exact_fallbacks, cold_starts: training calls certified by the Cholesky test /
            that fell back to the exact bound (the test failed) / that started the vectors (none yet).
    """

    def __init__(self, padding_mode: str, input_size: tuple[int, int] | None, mode: str = "exact") -> None:
        self.padding_mode = padding_mode
        self.input_size = input_size
        self._cache = ContentCache()
        self.mode = mode
        self.verified_steps = 0
        self.exact_fallbacks = 0
        self.cold_starts = 0
        self.verified_margin = CONV_VERIFIED_MARGIN
        self._vectors: torch.Tensor | None = None

    @property
    def mode(self) -> str:
        """The bound mode, one of :data:`CONV_BOUNDS` (validated at every assignment)."""
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        self._mode = check_choice("bound", value, CONV_BOUNDS)

    def reset(self) -> None:
        """Drop the cache (frees memory; a stale cache is never used). The power vectors stay: only a guess."""
        self._cache.reset()

    def training_state(self) -> dict[str, Any]:
        """What training carries outside the state dict: the per-frequency vectors and margin (they set the next guess), counters."""
        return {
            "verified_margin": self.verified_margin,
            "verified_steps": self.verified_steps,
            "exact_fallbacks": self.exact_fallbacks,
            "cold_starts": self.cold_starts,
            "vectors": None if self._vectors is None else self._vectors.detach().clone(),
        }

    def load_training_state(self, state: Mapping[str, Any], device: torch.device | None = None) -> None:
        """Restore :meth:`training_state` (a resumed :func:`~structnets.training.fit`), the vectors on ``device``."""
        self.verified_margin = float(state["verified_margin"])
        self.verified_steps = int(state["verified_steps"])
        self.exact_fallbacks = int(state["exact_fallbacks"])
        self.cold_starts = int(state["cold_starts"])
        vectors = state["vectors"]
        self._vectors = None if vectors is None else vectors.to(device=device, copy=True)

    def compute(self, weight: torch.Tensor) -> torch.Tensor:
        return conv_squared_norm_bound(weight, self.padding_mode, self.input_size)

    def squared(self, weight: torch.Tensor, training: bool = False) -> torch.Tensor:
        """Q (float64), differentiable when a gradient is needed, else cached by content.

        ``training`` (the layer's mode) selects the ``"verified"`` path when a gradient is needed.
        """
        if torch.is_grad_enabled() and (weight.requires_grad or _is_transformed(weight)):
            if self._mode == "verified" and training and not _is_transformed(weight):
                return self._verified(weight)
            return self.compute(weight)
        return self.certified_squared(weight)

    def _verified(self, weight: torch.Tensor) -> torch.Tensor:
        if self._vectors is not None and self._vectors.device != weight.device:
            self._vectors = None  # moved with .to(): start again, not a fallback
        cold = self._vectors is None
        square, self._vectors, passed = training_conv_square(
            weight, self._vectors, self.verified_margin, self.padding_mode, self.input_size
        )
        if passed:
            self.verified_steps += 1
            self.verified_margin = max(CONV_VERIFIED_MARGIN, 0.95 * self.verified_margin)
        elif cold:
            self.cold_starts += 1
        else:
            self.exact_fallbacks += 1
            self.verified_margin = min(VERIFIED_MARGIN_MAX, 2.0 * self.verified_margin)
        return square

    def certified_squared(self, weight: torch.Tensor) -> torch.Tensor:
        """Q (float64, no gradient) for the weight's current content."""
        return self._cache.get(weight, self.compute)


class ConvGeometry:
    """Mixin: ``padding_mode`` and ``input_size`` are the layer's :class:`ConvBound`'s, validated when set.

    The forward reads them from the layer and Q from the bound; as two copies, ``layer.padding_mode
    = "circular"`` (or a new ``input_size``) changed the operator while Q stayed the old one's
    (τ‖W‖_op² = 2.04 measured for a zero-padding certificate used circularly) and
    ``lipschitz_bound()`` still said 1. One copy, and a changed one drops the cached Q.
    """

    _bound: ConvBound
    kernel_size: tuple[int, int]

    @property
    def padding_mode(self) -> str:
        """``"zeros"`` or ``"circular"``: what the forward applies and the certificate covers."""
        return self._bound.padding_mode

    @padding_mode.setter
    def padding_mode(self, value: str) -> None:
        self._bound.padding_mode = check_conv_options(self.kernel_size, value, self._bound.input_size)
        self._bound.reset()

    @property
    def input_size(self) -> tuple[int, int] | None:
        """None (certified for every size) or the one (n₁, n₂) the layer accepts and certifies."""
        return self._bound.input_size

    @input_size.setter
    def input_size(self, value: int | tuple[int, int] | None) -> None:
        size = size_pair(value)
        check_conv_options(self.kernel_size, self._bound.padding_mode, size)
        self._bound.input_size = size
        self._bound.reset()


def require_finite(module: nn.Module, name: str) -> bool:
    """Raise ValueError naming the first non-finite tensor the forward reads; return whether every read agrees.

    The tensors are read as the forward reads them (``getattr``): a tensor behind a
    ``torch.nn.utils.parametrize`` parametrization is its parametrization's output, which can be
    non-finite with finite parameters (±inf from an overflow: the layer computes NaN, no
    certificate). False where a random parametrization hands every read another tensor
    (:func:`~structnets.nn._parametrized.reads_agree`), so the caller can certify every realisation
    rather than the one it read.
    """
    names = [key for key, value in module._parameters.items() if value is not None]
    if parametrize.is_parametrized(module):
        names += [key for key in cast(Any, module).parametrizations if key not in names]
    with torch.no_grad():
        for key in names:
            tensor = getattr(module, key)
            if tensor is not None and not bool(torch.isfinite(tensor.detach()).all()):
                raise ValueError(f"{name} `{key}` has non-finite entries: the layer computes NaN, no certificate")
    return reads_agree(module)


def check_unit_option(name: str, value: object, pair: bool = True) -> None:
    """``value`` must be the int 1 (or, with ``pair``, a pair of 1s): what the certificate covers, else an error naming it.

    Spellings torch reads otherwise or rejects ((1,), (), 1.0, True, a triple) are refused too.
    """
    entries = value if pair and isinstance(value, (tuple, list)) and len(value) == 2 else (value,)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v == 1 for v in entries):
        spelled = "1 or (1, 1)" if pair else "1"
        raise ValueError(
            f"`{name}` must be {spelled}, got {value!r}: the certificate covers stride-1, undilated, ungrouped "
            "convolutions only (down-sample with InvertibleDownsample)"
        )


__all__ = [
    "CONV_BOUNDS",
    "CONV_VERIFIED_MARGIN",
    "ConvBound",
    "ConvGeometry",
    "check_conv_options",
    "check_image",
    "check_unit_option",
    "conv_same",
    "conv_same_adjoint",
    "kernel_pair",
    "plain_adjoint",
    "plain_conv",
    "require_finite",
    "same_pads",
    "size_pair",
]
