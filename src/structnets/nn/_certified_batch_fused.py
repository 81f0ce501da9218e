"""A :class:`~structnets.nn.CertifiedBatch` computation by the compiled kernel (float32/float64, CPU).

The same test, values, gradient factors and flags as the tensor path of ``_certified_batch``, for
every map of one dtype in **one** call of :func:`._fused_certify.certify_flat`, whatever their
shapes: the weights go in as one flat copy (which is also the snapshot the content checks compare
against), the power vectors as one flat array, margins and steps as NumPy arrays; s = 2·sigmoid(θ)
and ds/dθ of learnable steps are formed in the kernel. One more compiled call forms the matrices the
members apply (−τ·W, fl(V/s): :mod:`._fused_applied`), handed out with the values by one
:class:`~._applied_matrices.AppliedMatrices` node, whose backward pass is one compiled call too.
Issue 26: at 5 × 50 the Python and tensor glue around the kernel, not the kernel, was most of the
certified step's extra time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .._division_scale import division_factor
from . import _fused_applied, _fused_certify, _fused_memory
from ._applied_matrices import AppliedPlan
from ._power_mode_gradient import _Group, _Plan
from ._verified_gram import _PRECISION, _precision_for, verified_ratio

_NUMPY: dict[torch.dtype, np.dtype[Any]] = {torch.float32: np.dtype(np.float32), torch.float64: np.dtype(np.float64)}


def fused_place(dtype: torch.dtype, device: torch.device) -> bool:
    """Whether a place (dtype, device) runs the compiled kernel: numba present, float32/float64 weights, the CPU."""
    return _fused_certify.AVAILABLE and device.type == "cpu" and dtype in _NUMPY


def module_tensor(layer: Any, name: str) -> Any:
    """``getattr(layer, name)`` for a parameter or buffer: its dict entry where it has one (``Module.__getattr__``
    is a method call and three lookups, for each member in every training step); else the attribute (a
    parametrized tensor is a property of the module's class)."""
    parameters = layer._parameters
    if name in parameters:
        return parameters[name]
    buffers = layer._buffers
    if name in buffers:
        return buffers[name]
    return getattr(layer, name)


class LogitValue(float):
    """The value of a 0-d step logit θ a τ was formed with (compared as a number: NaN matches nothing)."""

    __slots__ = ()


@dataclass(frozen=True)
class _Layout:
    """What stays fixed while the members' shapes, kinds and dtype do: the kernel's per-map arrays."""

    rows: np.ndarray  # (B,) int64
    cols: np.ndarray  # (B,) int64
    is_tau: np.ndarray  # (B,) bool
    tested64: np.ndarray  # (B,) bool: a float32 W tested in float64
    ratios: np.ndarray  # (B,) float64 verified_ratio of the test precision
    lows: np.ndarray  # (B,) float64
    highs: np.ndarray  # (B,) float64
    learnable: np.ndarray  # (B,) bool
    learnable_at: list[int]  # indices of the learnable maps
    total_rows: int
    numels: list[int]
    shapes: list[tuple[int, int]]
    col_list: list[int]
    same: np.ndarray  # (B,) bool: tested in the weights' dtype (the others: a float32 W tested in float64)
    division_factors: np.ndarray  # (B,) weight dtype: f of division_scale for norm maps (as torch rounds it), 0 for τ
    offsets: list[int]  # where each map's entries start in the flat weights (and one past the last)
    weight_at: list[int]  # each map's weight's position among the inputs (a learnable step's θ follows it)
    is_tau_list: list[bool]
    gathered_sizes: list[int]  # rows·cols of each map, then cols of each map: what gather copies
    gathered_size_array: np.ndarray  # the same, int64
    column_offsets: list[int]  # where each map's power vector starts in the flat vectors (and one past the last)
    learnable_array: np.ndarray  # int64 learnable_at
    total_cols: int
    any_tested64: bool


_layouts: dict[tuple[Any, ...], _Layout] = {}


def _layout(dtype: torch.dtype, kinds: tuple[tuple[str, int, int, bool], ...]) -> _Layout:
    key = (dtype, kinds)
    layout = _layouts.get(key)
    if layout is None:
        tested, ratios, ranges = [], [], []
        for _, rows, cols, _ in kinds:
            n, inner = min(rows, cols), max(rows, cols)
            # the kernel's Gram product is SciPy's BLAS: IEEE float32 whatever torch's matmul precision
            precision = _precision_for(dtype, n, inner, True)
            tested.append(precision != dtype)
            ratios.append(verified_ratio(n, inner, precision))
            ranges.append(_PRECISION[precision][1])
        learnable = np.array([item[3] for item in kinds], dtype=np.bool_)
        layout = _Layout(
            np.array([item[1] for item in kinds], dtype=np.int64),
            np.array([item[2] for item in kinds], dtype=np.int64),
            np.array([item[0] == "tau" for item in kinds], dtype=np.bool_),
            np.array(tested, dtype=np.bool_),
            np.array(ratios, dtype=np.float64),
            np.array([low for low, _ in ranges], dtype=np.float64),
            np.array([high for _, high in ranges], dtype=np.float64),
            learnable,
            np.flatnonzero(learnable).tolist(),
            sum(rows for _, rows, _, _ in kinds),
            [rows * cols for _, rows, cols, _ in kinds],
            [(rows, cols) for _, rows, cols, _ in kinds],
            [cols for _, _, cols, _ in kinds],
            ~np.array(tested, dtype=np.bool_),
            np.array(
                [
                    0.0 if kind == "tau" else division_factor(dtype, min(rows, cols), 1, rows * cols)
                    for kind, rows, cols, _ in kinds
                ],
                dtype=_NUMPY[dtype],
            ),
            np.concatenate(([0], np.cumsum([rows * cols for _, rows, cols, _ in kinds]))).tolist(),
            np.concatenate(([0], np.cumsum([1 + int(s) for _, _, _, s in kinds])))[:-1].tolist(),
            [kind == "tau" for kind, _, _, _ in kinds],
            [rows * cols for _, rows, cols, _ in kinds] + [cols for _, _, cols, _ in kinds],
            np.array([rows * cols for _, rows, cols, _ in kinds] + [cols for _, _, cols, _ in kinds], dtype=np.int64),
            np.concatenate(([0], np.cumsum([cols for _, _, cols, _ in kinds]))).tolist(),
            np.flatnonzero(learnable).astype(np.int64),
            sum(cols for _, _, cols, _ in kinds),
            any(tested),
        )
        if len(_layouts) > 64:  # a bound on what changing models can leave behind
            _layouts.clear()
        _layouts[key] = layout
    return layout


@dataclass(eq=False)
class FlatResult:
    """One place's computation: per member (in the order given) what :class:`CertifiedBatch` hands out."""

    plan: _Plan
    inputs: list[torch.Tensor]  # per member W_b, then θ_b where the step is learnable: what gets a gradient
    snapshots: list[np.ndarray]  # the weight content each value certifies (views of the flat copy)
    steps: list[Any]  # LogitValue, the fixed step float, or None (norm maps)
    following: list[torch.Tensor]  # the next power vectors
    passed: list[bool]
    retried: list[bool]
    applied: AppliedPlan  # the members' applied matrices and their compiled backward


def compute_flat(
    layers: list[Any],
    kinds: list[str],
    weights: list[torch.Tensor],
    power_vectors: list[torch.Tensor],
    learnable: list[bool],
) -> FlatResult:
    """Certify every member of one place (one dtype, the CPU) by one kernel call (called under ``no_grad``).

    Per member: its layer, kind ("tau" or "norm"), weight W, power vector (cols,) and whether its step is learnable.
    """
    dtype = weights[0].dtype
    layout = _layout(dtype, tuple((k, *w.shape, s) for k, w, s in zip(kinds, weights, learnable, strict=True)))
    numpy_dtype = _NUMPY[dtype]
    count = len(layers)
    # the copies the kernel certifies, weights then power vectors in one buffer: read in place by one compiled
    # copy where every tensor allows it, else torch.cat
    sources, readable = _fused_memory.addresses([*weights, *power_vectors], dtype, layout.gathered_sizes)
    if readable:
        gathered = np.empty(layout.offsets[-1] + layout.total_cols, dtype=numpy_dtype)
        _fused_memory.call("gather", sources, layout.gathered_size_array, gathered)
        flat_weights, vector_array = gathered[: layout.offsets[-1]], gathered[layout.offsets[-1] :]
        snapshot, vectors = torch.from_numpy(flat_weights), torch.from_numpy(vector_array)
    else:
        snapshot = torch.cat([weight.reshape(-1) for weight in weights])
        vectors = torch.cat(power_vectors)
        flat_weights, vector_array = snapshot.numpy(), vectors.numpy()
    step_list: list[float] = []
    margin_list: list[float] = []
    entry_steps: list[Any] = []
    logits: list[torch.Tensor] = []
    for layer, is_tau, s in zip(layers, layout.is_tau_list, learnable, strict=True):
        step = layer.step if is_tau else None
        step_list.append(1.0 if s or step is None else step)
        margin_list.append(1.0 + layer._bound.verified_margin)
        entry_steps.append(step)
        if s:
            logits.append(module_tensor(layer, "step_logit"))
    steps, margins = np.array(step_list), np.array(margin_list)
    sigmoids = np.empty(count, dtype=numpy_dtype)
    if logits:
        logit_addresses, logits_readable = _fused_memory.addresses(logits, dtype, [1] * len(logits))
        if logits_readable and all(logit.dim() == 0 for logit in logits):
            # θ read in place, its sigmoid formed as a 0-d θ's torch.sigmoid forms it (one compiled call)
            logit_values = np.empty(len(logits), dtype=numpy_dtype)
            _fused_memory.call("logit_sigmoids", logit_addresses, layout.learnable_array, logit_values, sigmoids)
            found = logit_values.tolist()
        else:  # another dtype or layout: torch forms them, each θ's on its own (as the layer's step_size())
            sigmoids[layout.learnable_at] = torch.stack([torch.sigmoid(logit) for logit in logits]).numpy()
            found = torch.stack(logits).tolist()
        for b, value in zip(layout.learnable_at, found, strict=True):
            entry_steps[b] = LogitValue(value)
    values = np.empty(count, dtype=numpy_dtype)
    slopes = np.empty(count, dtype=numpy_dtype)
    inverses = np.empty(count, dtype=numpy_dtype)
    factors = np.empty(count, dtype=numpy_dtype)
    step_slopes = np.empty(count, dtype=numpy_dtype)
    flags = np.empty((count, 3), dtype=np.bool_)
    following = np.empty(vectors.shape[0], dtype=numpy_dtype)
    left = np.empty(layout.total_rows, dtype=numpy_dtype)
    # one call per test precision: float32 maps whose ratio needs a float64 test go in a second call
    # (its compiled specialisation is built only for models that have such maps)
    calls = [(flat_weights, layout.same)]
    if layout.any_tested64:
        calls.append((flat_weights.astype(np.float64), layout.tested64))
    with _fused_certify.single_threaded_blas():
        for tested, active in calls:
            _fused_certify.run_flat(
                flat_weights, tested, vector_array, layout.rows, layout.cols, active, layout.is_tau, layout.ratios,
                layout.lows, layout.highs, margins, steps, layout.learnable, sigmoids, 5, 1.15,
                values, slopes, inverses, factors, flags, following, left, step_slopes,
            )  # fmt: skip
    inputs: list[torch.Tensor] = []
    theta = iter(logits)
    for weight, s in zip(weights, learnable, strict=True):
        inputs.append(weight)
        if s:
            inputs.append(next(theta))

    # the matrices the members apply, −τ·W and fl(V/s), formed from the content the values certify
    matrices = np.empty(snapshot.shape[0], dtype=numpy_dtype)
    scales = np.empty(count, dtype=numpy_dtype)
    _fused_applied.call(
        "applied_matrices", flat_weights, values, layout.is_tau, layout.division_factors, layout.rows,
        layout.cols, matrices, scales,
    )  # fmt: skip

    def host_gradients(
        value_grad: torch.Tensor | None, matrix_grads: Sequence[torch.Tensor | None]
    ) -> list[torch.Tensor]:
        value_grads = (
            np.zeros(count, dtype=numpy_dtype)
            if value_grad is None or value_grad._is_zerotensor()
            else np.ascontiguousarray(value_grad.detach().resolve_neg().numpy())
        )
        # the matrices' gradients read in place (one address each); a strided or lazily negated one is
        # copied first, and a zero tensor without storage counts as no gradient (G = 0: address 0)
        grads = list(matrix_grads)
        grad_addresses, every = _fused_memory.addresses(grads, dtype, layout.numels)
        if not every:
            for b, grad in enumerate(grads):
                if grad is not None and grad_addresses[b] == 0 and not grad._is_zerotensor():
                    if grad.shape != layout.shapes[b]:  # autograd checks it; the kernel reads rows·cols entries
                        raise RuntimeError(f"gradient of shape {tuple(grad.shape)} for a {layout.shapes[b]} matrix")
                    own = torch.empty(grad.shape, dtype=dtype)
                    own.copy_(grad.detach())  # resolves strides, a lazy negation, another dtype
                    grads[b] = own
                    grad_addresses[b] = own.data_ptr()
        weight_grads = np.empty(snapshot.shape[0], dtype=numpy_dtype)
        step_grads = np.empty(count, dtype=numpy_dtype)
        _fused_applied.call(
            "applied_gradients", value_grads, grad_addresses, flat_weights, values, scales, layout.is_tau,
            layout.division_factors, slopes, inverses, step_slopes, layout.learnable, left, vector_array,
            layout.rows, layout.cols, weight_grads, step_grads,
        )  # fmt: skip
        del grads  # kept alive until the kernel has read them
        # one tensor over a NumPy view per input (cheaper than torch views of one tensor)
        out: list[torch.Tensor] = []
        for b, shape in enumerate(layout.shapes):
            out.append(torch.from_numpy(weight_grads[offsets[b] : offsets[b + 1]].reshape(shape)))
            if layout.learnable[b]:
                out.append(torch.from_numpy(step_grads[b : b + 1].reshape(())))
        return out

    # NumPy views of the flat copy: the content checks compare through NumPy (no torch view per member)
    offsets = layout.offsets
    snapshots = [flat_weights[offsets[b] : offsets[b + 1]].reshape(shape) for b, shape in enumerate(layout.shapes)]
    # one tensor over a NumPy view per member (no torch view: autograd's view tracking costs more)
    column_offsets = layout.column_offsets
    ahead = [torch.from_numpy(following[column_offsets[b] : column_offsets[b + 1]]) for b in range(count)]

    def groups() -> list[_Group]:
        """One :class:`_Group` per member, for the backward passes that differentiate the surrogate."""
        rows = torch.from_numpy(left).split(layout.rows.tolist())
        vector_rows = vectors.split(layout.col_list)
        formed, index = [], 0
        for b, layer in enumerate(layers):
            own = inputs[index : index + 1 + int(learnable[b])]
            index += len(own)
            slope = torch.from_numpy(step_slopes[b : b + 1]) if learnable[b] else None
            formed.append(
                _Group(
                    kinds[b],
                    [layer],
                    snapshot[offsets[b] : offsets[b + 1]].view(1, *layout.shapes[b]),
                    vector_rows[b][None],
                    None,
                    None,
                    torch.from_numpy(steps[b : b + 1]),
                    [entry_steps[b]],
                    None,
                    own,
                    rows[b][None],
                    slope,
                )  # fmt: skip
            )
        return formed

    plan = _Plan(
        torch.from_numpy(values),
        torch.from_numpy(slopes),
        torch.from_numpy(inverses),
        [],
        torch.from_numpy(factors),
        torch.from_numpy(flags[:, 2]),
        group_factory=groups,
    )
    applied = AppliedPlan(
        [
            torch.from_numpy(matrices[offsets[b] : offsets[b + 1]].reshape(shape))
            for b, shape in enumerate(layout.shapes)
        ],
        layout.is_tau_list,
        layout.weight_at,
        host_gradients,
    )
    passed, retried = flags[:, 0].tolist(), flags[:, 1].tolist()
    return FlatResult(plan, inputs, snapshots, entry_steps, ahead, passed, retried, applied)


__all__ = ["FlatResult", "LogitValue", "compute_flat", "fused_place", "module_tensor"]
