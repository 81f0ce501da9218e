"""Parameter, FLOP and activation-memory counts of a model, measured on one forward pass.

Shapes are never guessed: :func:`cost` runs the model once on ``torch.zeros(input_shape)`` under
``torch.no_grad()`` with forward hooks on the modules it knows how to count, and every count is
computed from the tensors those hooks see.

Conventions (exact):

* ``macs``: multiply-accumulates of the linear maps. ``nn.Linear(in, out)`` costs ``in·out`` per
  row; ``LowRankLinear(in, out, r)`` costs ``r·(in + out)`` per row (``V x`` then ``U h``).
  ``nn.Conv1d``/``nn.Conv2d`` cost ``(c_in/groups)·∏k`` per output element;
  ``LowRankConv1d/2d`` (rank r) cost ``r·(c_in·∏k + c_out)`` per output position. A *row*
  is one input vector: ``input.numel() // in_features``, so every batch dimension in
  ``input_shape`` multiplies the count. The convolutional 1-Lipschitz layers: ``GradientStepConv2d``
  two ``c·h·∏k`` convolutions per position plus ``h·c·∏k`` for τ scaling the kernel once per call;
  ``NormConstrainedConv2d`` one convolution; ``InvertibleDownsample`` a 1×1 convolution from
  ``c·f²`` channels (the unshuffle is free); ``L2NormPool2d`` one multiply-add per input element and
  a square root (an evaluation) per output; ``FlatToImage`` nothing. The per-call normalisation of a
  constrained kernel or matrix (its certified bound, the polar factor) is not counted.
* ``flops = 2·macs + adds``: a multiply-add is 2 FLOPs; each bias addition is 1 FLOP per output
  element (``out`` per row when the layer has a bias).
* Activations are **excluded** from ``flops``; their scalar evaluations are counted separately in
  ``activation_evaluations`` (one per output element of an activation module; ``nn.Identity`` is
  zero), because an ``exp`` or ``erf`` has no agreed FLOP price. Multiply by your own price per
  evaluation if you need one.
* ``activation_memory``: bytes of **all layer outputs** of the forward pass, not of the tensors
  autograd saves for backward (for that, see :func:`structnets.analysis.memory.saved_activation_bytes`).
  Precisely: the storage bytes of every distinct tensor output by a counted module (an output that
  shares storage with the input or an earlier output — ``nn.Identity``, ``nn.Flatten``, in-place
  activations — adds nothing), plus the internal intermediates a layer materialises
  (``LowRankLinear``: its ``rows × r`` hidden ``V x``). The model input and the parameters are
  excluded; the final output is included.
* ``parameters``: elements of ``model.parameters()`` (shared parameters once, unused ones too).

Modules are counted as units: a registered module (see :func:`register_counter`) is counted by its
counter and its children are not visited. Work done by an unregistered *container's* own
``forward`` (e.g. a residual addition) is invisible to hooks and not counted. An executed module
that is neither registered nor a pure container (a leaf of unknown type, a module with its own
parameters, or a ``LowRankMultiheadAttention``, whose scores, softmax and weighted sum of values
are computed in its own forward; its projections are counted) raises ``TypeError`` unless
``strict=False``, in which case it counts zero FLOPs and is
listed in ``Cost.uncounted``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from .._validation import check_fits_in_memory, check_int
from ..nn import (
    DLoRBranches,
    DLoRLinear,
    DLoRParallel,
    FlatToImage,
    GradientStepConv2d,
    GradientStepResidual,
    InvertibleDownsample,
    L2NormPool2d,
    LowRankConv1d,
    LowRankConv2d,
    LowRankLinear,
    LowRankMultiheadAttention,
    MaxMin,
    NormConstrainedConv2d,
    NormConstrainedLinear,
    OrthogonalLinear,
    RankOneLinear,
    Swish,
    TakeFirst,
    UnconstrainedResidual,
    ZeroPad,
)
from .memory import preserved_buffers


@dataclass(frozen=True)
class LeafCount:
    """What one call of a module costs; returned by a counter.

    Attributes:
        macs: multiply-accumulates.
        adds: additions that are not part of a multiply-add (bias), 1 FLOP each.
        evaluations: scalar nonlinearity evaluations.
        intermediate_elements: elements of tensors the module materialises besides its output.
    """

    macs: int = 0
    adds: int = 0
    evaluations: int = 0
    intermediate_elements: int = 0


Counter = Callable[[Any, torch.Tensor, torch.Tensor], LeafCount]
"""``counter(module, input, output) -> LeafCount`` for one call; ``input`` is the first positional argument.
The module argument is typed ``Any`` so that a counter may take the exact layer class it counts."""


@dataclass(frozen=True)
class LayerCost:
    """Cost of one call of one module (a module called twice appears twice).

    Attributes:
        name: qualified name in ``model.named_modules()`` (``""`` for the model itself).
        kind: class name.
        input_shape, output_shape: shapes seen by the hook.
        parameters: elements of the module's parameters.
        macs, flops, activation_evaluations, activation_memory: as in :class:`Cost`, for this call.
        counted: False for a module of unknown type met with ``strict=False`` (its FLOPs are 0).
    """

    name: str
    kind: str
    input_shape: tuple[int, ...]
    output_shape: tuple[int, ...]
    parameters: int
    macs: int
    flops: int
    activation_evaluations: int
    activation_memory: int
    counted: bool = True


@dataclass(frozen=True)
class Cost:
    """Cost of one forward pass on an input of the given shape (see the module docstring).

    Attributes:
        parameters: number of parameter elements.
        flops: ``2·macs + adds`` of the linear maps (activations excluded).
        macs: multiply-accumulates.
        activation_evaluations: scalar activation-function evaluations.
        activation_memory: bytes of all layer outputs and declared intermediates.
        per_layer: one :class:`LayerCost` per module call, in call order.
        uncounted: names of executed modules of unknown type (only with ``strict=False``).
    """

    parameters: int
    flops: int
    macs: int
    activation_evaluations: int
    activation_memory: int
    per_layer: tuple[LayerCost, ...]
    uncounted: tuple[str, ...] = ()


def _linear_count(
    module: nn.Linear | NormConstrainedLinear | OrthogonalLinear, input: torch.Tensor, output: torch.Tensor
) -> LeafCount:
    rows = math.prod(output.shape[:-1])  # not numel // out_features: nn.Linear allows out_features = 0
    return LeafCount(
        macs=rows * module.in_features * module.out_features,
        adds=rows * module.out_features if module.bias is not None else 0,
    )


def _low_rank_count(module: LowRankLinear, input: torch.Tensor, output: torch.Tensor) -> LeafCount:
    rows = output.numel() // module.out_features
    return LeafCount(
        macs=rows * module.rank * (module.in_features + module.out_features),
        adds=rows * module.out_features if module.bias is not None else 0,
        intermediate_elements=rows * module.rank,
    )


def _conv_count(module: nn.Conv1d | nn.Conv2d, input: torch.Tensor, output: torch.Tensor) -> LeafCount:
    # Every output element is one patch (c_in/groups·∏k values) times one kernel row.
    patch = module.in_channels // module.groups * math.prod(module.kernel_size)
    return LeafCount(
        macs=output.numel() * patch,
        adds=output.numel() if module.bias is not None else 0,
    )


def _low_rank_conv_count(module: LowRankConv1d | LowRankConv2d, input: torch.Tensor, output: torch.Tensor) -> LeafCount:
    # k×k convolution to r channels (r·c_in·∏k per position), then the 1×1 one (c_out·r per position).
    positions = output.numel() // module.out_channels
    return LeafCount(
        macs=positions * module.rank * (module.in_features + module.out_channels),
        adds=output.numel() if module.bias is not None else 0,
        intermediate_elements=positions * module.rank,
    )


def _dlor_count(module: DLoRLinear, input: torch.Tensor, output: torch.Tensor) -> LeafCount:
    # αx + U(Vᵀx) + b: 2·N·r multiply-adds for the low-rank part, N for αx, N adds to sum them.
    rows = output.numel() // module.features
    n, r = module.features, module.rank
    return LeafCount(
        macs=rows * (2 * n * r + n),
        adds=rows * (n + (n if module.bias is not None else 0)),
        intermediate_elements=rows * r,
    )


def _rank_one_count(module: RankOneLinear, input: torch.Tensor, output: torch.Tensor) -> LeafCount:
    rows = output.numel() // module.out_features
    return LeafCount(
        macs=rows * (module.in_features + module.out_features),
        adds=rows * module.out_features if module.bias is not None else 0,
        intermediate_elements=rows,
    )


def _gradient_step_count(module: GradientStepResidual, input: torch.Tensor, output: torch.Tensor) -> LeafCount:
    # x − τ Wᵀσ(Wx + b): two (hidden × features) products, the τ scaling, bias and residual adds.
    rows = output.numel() // module.features
    n, h = module.features, module.hidden
    return LeafCount(
        macs=rows * (2 * n * h + h),
        adds=rows * (n + (h if module.bias is not None else 0)),
        evaluations=rows * h,
        intermediate_elements=2 * rows * h,
    )


def _unconstrained_residual_count(
    module: UnconstrainedResidual, input: torch.Tensor, output: torch.Tensor
) -> LeafCount:
    # x + U relu(W x + b), the unconstrained twin of GradientStepResidual: counted as a unit like it, so
    # that the two compare (as a container its ReLU and residual add were silently left out).
    inner, outer = module.inner, module.outer
    if type(inner) is not nn.Linear or type(outer) is not nn.Linear:
        raise TypeError(
            f"cost() counts UnconstrainedResidual with plain nn.Linear maps, got {type(inner).__name__} "
            f"and {type(outer).__name__}: register a counter for it"
        )
    rows = output.numel() // module.features
    n, h = module.features, module.hidden
    return LeafCount(
        macs=rows * 2 * n * h,
        adds=rows * (n + (h if inner.bias is not None else 0) + (n if outer.bias is not None else 0)),
        evaluations=rows * h,
        intermediate_elements=rows * (2 * h + n),  # W x + b, its ReLU, U of that; then the sum
    )


def _maxmin_count(module: nn.Module, input: torch.Tensor, output: torch.Tensor) -> LeafCount:
    # One comparison per pair, counted as an activation evaluation per output element.
    return LeafCount(evaluations=output.numel())


def _dlor_branches_count(module: DLoRBranches, input: torch.Tensor, output: torch.Tensor) -> LeafCount:
    # B parallel DLoR maps summed before the activation, with one shared bias.
    rows = output.numel() // module.features
    n, r, b = module.features, module.rank, len(module.branches)
    return LeafCount(
        macs=rows * b * (2 * n * r + n),
        adds=rows * (b * n + (n if module.bias is not None else 0)),
        intermediate_elements=rows * b * (r + n),
    )


def _dlor_parallel_count(module: DLoRParallel, input: torch.Tensor, output: torch.Tensor) -> LeafCount:
    # Σ_k σ(α_k x + U_k(V_kᵀx) + b_k): B DLoR maps (as _dlor_count), B·N activations, and the
    # (B − 1)·N additions that sum the branches after σ.
    rows = output.numel() // module.features
    n, r, b = module.features, module.rank, len(module.branches)
    bias = n if module.branches[0].bias is not None else 0
    return LeafCount(
        macs=rows * b * (2 * n * r + n),
        adds=rows * (b * (n + bias) + (b - 1) * n),
        evaluations=rows * b * n,
        # per branch Vᵀx (r), the pre-activation (n) and σ of it (n); B − 2 partial sums. For
        # B = 1 σ's result is the output itself: B·r + (3B − 2)·n in both cases.
        intermediate_elements=rows * (b * r + (3 * b - 2) * n),
    )


def _gradient_step_conv_count(module: GradientStepConv2d, input: torch.Tensor, output: torch.Tensor) -> LeafCount:
    # x − (τW)ᵀσ(W⋆x + b) with "same" stride-1 convolutions: each of the two convolutions is
    # (c·h·k_h·k_w) multiply-adds per output position; τ scales the kernel once per call (not the
    # activations); bias and residual adds; one ReLU per hidden element.
    positions = output.numel() // module.channels
    c, h, kernel = module.channels, module.hidden_channels, math.prod(module.kernel_size)
    return LeafCount(
        macs=2 * positions * c * h * kernel + h * c * kernel,
        adds=positions * (c + (h if module.bias is not None else 0)),
        evaluations=positions * h,
        intermediate_elements=2 * positions * h,
    )


def _norm_conv_count(module: NormConstrainedConv2d, input: torch.Tensor, output: torch.Tensor) -> LeafCount:
    # a "same" convolution with the normalised kernel (normalised once per call, as the dense layer)
    patch = module.in_channels * math.prod(module.kernel_size)
    return LeafCount(macs=output.numel() * patch, adds=output.numel() if module.bias is not None else 0)


def _downsample_count(module: InvertibleDownsample, input: torch.Tensor, output: torch.Tensor) -> LeafCount:
    # pixel-unshuffle (a permutation: free) then a 1×1 convolution from c·f² channels
    return LeafCount(macs=output.numel() * module.unshuffled, adds=output.numel() if module.bias is not None else 0)


def _l2_pool_count(module: L2NormPool2d, input: torch.Tensor, output: torch.Tensor) -> LeafCount:
    # ‖x_c‖₂ over each channel's H×W values: a multiply-add per input element, a square root per output
    return LeafCount(macs=input.numel(), evaluations=output.numel())


def _elementwise_count(module: nn.Module, input: torch.Tensor, output: torch.Tensor) -> LeafCount:
    return LeafCount(evaluations=output.numel())


def _free(module: nn.Module, input: torch.Tensor, output: torch.Tensor) -> LeafCount:
    return LeafCount()


_COUNTERS: dict[type[nn.Module], Counter] = {
    nn.Linear: _linear_count,
    LowRankLinear: _low_rank_count,
    nn.Conv1d: _conv_count,
    nn.Conv2d: _conv_count,
    LowRankConv1d: _low_rank_conv_count,
    LowRankConv2d: _low_rank_conv_count,
    DLoRLinear: _dlor_count,
    RankOneLinear: _rank_one_count,
    # The normalisation A = V / max(1, B(V)) is per weight, not per row: only the product counts.
    NormConstrainedLinear: _linear_count,
    GradientStepResidual: _gradient_step_count,
    OrthogonalLinear: _linear_count,  # the polar factor is formed once per call, like the norm maps' scale
    GradientStepConv2d: _gradient_step_conv_count,
    NormConstrainedConv2d: _norm_conv_count,
    InvertibleDownsample: _downsample_count,
    L2NormPool2d: _l2_pool_count,
    FlatToImage: _free,
    UnconstrainedResidual: _unconstrained_residual_count,
    MaxMin: _maxmin_count,
    DLoRBranches: _dlor_branches_count,
    DLoRParallel: _dlor_parallel_count,
    ZeroPad: _free,
    TakeFirst: _free,
    nn.Identity: _free,
    nn.Flatten: _free,
    nn.Unflatten: _free,
    nn.Dropout: _free,  # a mask, not model arithmetic; the identity in eval mode
}
for _activation in (
    Swish, nn.SiLU, nn.ReLU, nn.ReLU6, nn.LeakyReLU, nn.PReLU, nn.ELU, nn.SELU, nn.CELU, nn.GELU,
    nn.Tanh, nn.Sigmoid, nn.Softplus, nn.Softsign, nn.Mish, nn.Hardtanh, nn.Hardswish,
    nn.Hardsigmoid, nn.LogSigmoid, nn.Tanhshrink,
):  # fmt: skip
    _COUNTERS[_activation] = _elementwise_count

_CONTAINERS = (nn.Sequential, nn.ModuleList, nn.ModuleDict)
# Modules whose children are hooked but whose own forward does arithmetic no counter sees (the
# attention scores QKᵀ, the softmax and the product with V): unknown, not pure containers.
_OWN_WORK: tuple[type[nn.Module], ...] = (LowRankMultiheadAttention,)


def register_counter(module_type: type[nn.Module], counter: Counter) -> None:
    """Teach :func:`cost` to count ``module_type`` (exact type; subclasses register separately).

    Args:
        module_type: an ``nn.Module`` subclass.
        counter: ``counter(module, input, output) -> LeafCount`` for one call. The module is then
            counted as a unit: its children are not visited.
    """
    if not (isinstance(module_type, type) and issubclass(module_type, nn.Module)):
        raise TypeError(f"`module_type` must be an nn.Module subclass, got {module_type!r}")
    if not callable(counter):
        raise TypeError(f"`counter` must be callable, got {counter!r}")
    _COUNTERS[module_type] = counter


def _first_tensor(value: object) -> torch.Tensor | None:
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)):
        for item in value:
            found = _first_tensor(item)
            if found is not None:
                return found
    return None


def _tensors(value: object) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _tensors(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _tensors(item)]
    return []


def _reference_parameter(model: nn.Module) -> torch.Tensor | None:
    for tensor in [*model.parameters(), *model.buffers()]:
        if tensor.is_floating_point():
            return tensor
    return None


def cost(
    model: nn.Module,
    input_shape: Sequence[int],
    *,
    dtype: torch.dtype | None = None,
    device: torch.device | str | None = None,
    strict: bool = True,
) -> Cost:
    """Count parameters, FLOPs, activation evaluations and activation memory of one forward pass.

    The model runs once on ``torch.zeros(input_shape)`` under ``torch.no_grad()``; counts come
    from forward hooks (conventions in the module docstring). For ``nn.Linear(in, out)`` on rows
    vectors: ``flops = rows·(2·in·out + out)``; for ``LowRankLinear(in, out, r)``:
    ``rows·(2·r·(in + out) + out)``, i.e. ``width² → 2·H·width`` multiply-adds per hidden block of
    the low-rank Swish network (Li et al., ICML 2025, Sec. 3).

    Args:
        model: the module; its training mode, parameters and buffers are left unchanged (a
            training-mode forward updates BatchNorm's running statistics: they are restored).
        input_shape: full input shape, batch dimensions included, e.g. ``(batch, in_features)``.
        dtype, device: of the zero input; by default those of the model's first floating
            parameter or buffer (else the default dtype, CPU).
        strict: raise ``TypeError`` on an executed module of unknown type (default); if False,
            count it as zero FLOPs and list it in ``Cost.uncounted``.

    Returns:
        a frozen :class:`Cost`.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be a torch.nn.Module, got {type(model).__name__}")
    if isinstance(input_shape, (str, bytes)) or not isinstance(input_shape, Sequence) or not input_shape:
        raise TypeError(f"`input_shape` must be a non-empty sequence of ints, got {input_shape!r}")
    shape = tuple(check_int("input_shape", dim, low=0) for dim in input_shape)
    check_fits_in_memory(f"`input_shape`={shape}", math.prod(shape), what="input values")
    if not isinstance(strict, bool):
        raise TypeError(f"`strict` must be a bool, got {strict!r}")
    if dtype is not None and not (isinstance(dtype, torch.dtype) and (dtype.is_floating_point or dtype.is_complex)):
        raise TypeError(f"`dtype` must be a floating-point or complex torch.dtype, got {dtype!r}")
    if device is not None:
        try:
            device = torch.device(device)
        except (RuntimeError, TypeError) as error:
            raise ValueError(f"`device` must be a torch device, got {device!r}: {error}") from error
    reference = _reference_parameter(model)
    if dtype is None:
        dtype = reference.dtype if reference is not None else torch.get_default_dtype()
    if device is None:
        device = reference.device if reference is not None else torch.device("cpu")
    names: dict[nn.Module, str] = {}
    for name, module in model.named_modules(remove_duplicate=False):
        names.setdefault(module, name)  # a shared module is reported under its first name

    records: list[LayerCost] = []
    unknown: list[str] = []
    keep_alive: list[torch.Tensor] = []  # so freed storages cannot be reused and miscounted as seen
    seen_storages: set[int] = set()
    inside: list[nn.Module] = []  # registered modules currently running: their children are not visited

    def new_bytes(tensors: list[torch.Tensor]) -> int:
        total = 0
        for tensor in tensors:
            storage = tensor.untyped_storage()
            pointer = storage.data_ptr()
            keep_alive.append(tensor)
            if storage.nbytes() == 0 or pointer in seen_storages:
                continue
            seen_storages.add(pointer)
            total += storage.nbytes()
        return total

    def record(module: nn.Module, args: tuple, output: object, count: LeafCount | None) -> None:
        first_in = _first_tensor(args)
        first_out = _first_tensor(output)
        memory = new_bytes(_tensors(output))
        if count is not None and count.intermediate_elements and first_out is not None:
            memory += count.intermediate_elements * first_out.element_size()
        count = count or LeafCount()
        records.append(
            LayerCost(
                name=names.get(module, ""),
                kind=type(module).__name__,
                input_shape=tuple(first_in.shape) if first_in is not None else (),
                output_shape=tuple(first_out.shape) if first_out is not None else (),
                parameters=sum(p.numel() for p in module.parameters()),
                macs=count.macs,
                flops=2 * count.macs + count.adds,
                activation_evaluations=count.evaluations,
                activation_memory=memory,
                counted=type(module) in _COUNTERS,
            )
        )

    def pre_known(module: nn.Module, args: tuple, kwargs: dict[str, Any]) -> None:
        inside.append(module)

    def post_known(module: nn.Module, args: tuple, kwargs: dict[str, Any], output: object) -> None:
        inside.pop()
        if inside:
            return
        # the input may be passed by keyword (``self.fc(input=x)``): hooks see it in kwargs only
        arguments = (*args, *kwargs.values())
        first_in = _first_tensor(arguments)
        first_out = _first_tensor(output)
        if first_in is None or first_out is None:
            raise TypeError(f"cost() expects {type(module).__name__} to take and return tensors")
        count = _COUNTERS[type(module)](module, first_in, first_out)
        if not isinstance(count, LeafCount):  # a registered counter's slip, named before it is used
            raise TypeError(
                f"the counter registered for {type(module).__name__} must return a LeafCount, "
                f"got {type(count).__name__}"
            )
        record(module, arguments, output, count)

    def post_unknown(module: nn.Module, args: tuple, kwargs: dict[str, Any], output: object) -> None:
        if inside:
            return
        unknown.append(f"{names.get(module, '') or '<model>'} ({type(module).__name__})")
        record(module, (*args, *kwargs.values()), output, None)

    handles = []
    for module in model.modules():
        if type(module) in _COUNTERS:
            handles.append(module.register_forward_pre_hook(pre_known, with_kwargs=True))
            handles.append(module.register_forward_hook(post_known, with_kwargs=True))
        elif isinstance(module, _CONTAINERS):
            continue
        elif not list(module.children()) or list(module.parameters(recurse=False)) or isinstance(module, _OWN_WORK):
            handles.append(module.register_forward_hook(post_unknown, with_kwargs=True))

    try:
        x = torch.zeros(shape, dtype=dtype, device=device)
    except (RuntimeError, AssertionError) as error:  # torch asserts when a device type is not built in
        raise ValueError(f"`device`={device} cannot hold the input: {error}") from error
    seen_storages.add(x.untyped_storage().data_ptr())
    try:
        # a training-mode forward rewrites buffers (BatchNorm's running statistics): put back on exit
        with preserved_buffers(model), torch.no_grad():
            try:
                model(x)
            except RuntimeError as error:
                raise ValueError(f"`input_shape`={shape} does not fit the model: {error}") from error
    finally:
        for handle in handles:
            handle.remove()
    if unknown and strict:
        raise TypeError(
            f"cost() cannot count {len(unknown)} executed module(s) of unknown type: {', '.join(unknown)}; "
            "register one with structnets.analysis.register_counter(type, counter) or pass strict=False"
        )
    return Cost(
        parameters=sum(p.numel() for p in model.parameters()),
        flops=sum(r.flops for r in records),
        macs=sum(r.macs for r in records),
        activation_evaluations=sum(r.activation_evaluations for r in records),
        activation_memory=sum(r.activation_memory for r in records),
        per_layer=tuple(records),
        uncounted=tuple(unknown),
    )
