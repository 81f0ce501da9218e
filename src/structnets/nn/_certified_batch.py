"""Certified training-time bounds of many constrained maps at once (``bound="verified-batched"``).

``bound="verified"`` certifies every training step of every map by a warm power estimate with a
margin, checked by a float64 Cholesky test (:func:`structnets.functional.verified_square_bound`).
Per map and per call that is a few dozen small tensor operations (casts, ``where``, host reads,
the float64 rounding of τ), which at MLP sizes cost more than the Cholesky itself. A
:class:`CertifiedBatch` does the same work for all its maps together: one ``torch.bmm`` for every
Gram matrix of a shape, a few batched Lanczos steps on them for the guesses, one batched
``torch.linalg.cholesky_ex``, one host read, one vectorised rounding of every τ (or norm bound);
on the CPU, where numba is installed, one compiled call does all of it for every map of a dtype
(``_certified_batch_fused``, ``_fused_certify``). Each map then checks that the value it is handed
was computed for its weight *as it is now* and falls back to its own bound otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from .._float32_precision import float32_matmul_is_ieee
from ..functional import certified_step, sqrt_round_up, squared_norm_bound
from . import _fused_memory
from ._applied_matrices import AppliedMatrices, AppliedPlan
from ._certified_batch_fused import LogitValue, compute_flat, fused_place, module_tensor
from ._power_mode_gradient import _Group, _Plan, _PowerModeGradient
from ._spectral import VERIFIED_MARGIN, VERIFIED_MARGIN_MAX, CertifiedBound, _is_transformed, _top_vector_by_gram
from ._verified_gram import (
    _certify_grams,
    _following,
    _gram_and_start,
    _joined,
    _norm_values,
    _precision_for,
    _tau_values,
    batched_verified_square,
    verified_ratio,
)


@dataclass(slots=True)
class _Entry:
    """One map's value from the last batch computation, usable once, for the content it was computed for."""

    values: torch.Tensor  # (B,) every member's τ or norm bound, in the weight dtype, with autograd history
    index: int  # this map's row of `values`
    matrix: torch.Tensor | None  # the applied matrix −τ·W or fl(V/s) (compiled path), with autograd history
    source: torch.Tensor | None  # the weight tensor the matrix's gradient reaches (where there is a matrix)
    weight: torch.Tensor | np.ndarray  # the weight content the value certifies (a row or NumPy view of a copy)
    step: torch.Tensor | float | None  # the step s or θ the τ was formed with (gradient-step maps)
    following: torch.Tensor  # the next power vector
    passed: bool
    retried: bool  # passed at the second, larger guess
    spent: list[bool]  # set once a backward pass went through the computation's values (_PowerModeGradient)


#: From this many entries a CPU float32/float64 content check goes through NumPy: ``torch.equal`` runs one
#: unvectorised pass on one thread (25.6 µs for a 50 × 784 float32 lift against 5.9 µs for ``np.array_equal``,
#: 2026-12-07), while below it the two views NumPy needs cost more than they save.
_NUMPY_EQUAL_FROM = 4096
_TORCH_DTYPES = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64}


def _same_tensor_content(stored: torch.Tensor | np.ndarray, current: torch.Tensor) -> bool:
    """Whether ``current`` has the dtype, shape, device and values of ``stored`` (a tensor, or the compiled
    path's NumPy view of a CPU copy); value equality as ``torch.equal``: NaN matches nothing, −0.0 matches 0.0."""
    if isinstance(stored, np.ndarray):
        dtype = _TORCH_DTYPES.get(stored.dtype)
        if dtype is None or current.shape != stored.shape:
            return False
        if _fused_memory.readable(current, dtype):  # compared in place by one compiled loop
            return bool(_fused_memory.call("equal_at", current.data_ptr(), stored))
        if not current.is_cpu or current.dtype != dtype:
            return False
        # strided, lazily negated or a subclass: through torch, which reads any of them as its values
        return torch.equal(torch.from_numpy(stored), current)
    if stored.dtype != current.dtype or stored.shape != current.shape or stored.device != current.device:
        return False
    if (
        stored.numel() >= _NUMPY_EQUAL_FROM
        and stored.device.type == "cpu"
        and stored.dtype in (torch.float32, torch.float64)
        and not (stored.is_neg() or current.is_neg() or stored.is_conj() or current.is_conj())
    ):
        return bool(np.array_equal(stored.numpy(), current.detach().numpy()))
    return torch.equal(stored, current)  # reads values only (no autograd, no detach needed)


class CertifiedBatch:
    """Certify every step of a model's ``"verified"`` maps together: one batched test per weight shape.

    Members are :class:`~structnets.nn.GradientStepResidual` and
    :class:`~structnets.nn.NormConstrainedLinear` layers with ``bound="verified"``. When the first
    member (the *leader*, normally the model's lift) runs a forward pass in training mode with
    gradients on, the batch computes, for every member whose weight requires grad, the value its
    forward needs, grouped by (kind, shape, dtype, device): Gram matrices, a guess
    μ_b = (1 + m_b)λ̂_b from a few Lanczos steps on each, one batched Cholesky test of μ_bI − W_bᵀW_b
    (:func:`batched_verified_square`), Q_b = μ_b(1 + K) where it passed, and then, vectorised,
    τ_b = s_b/Q_b rounded down (gradient-step maps) or √Q_b rounded up (norm-constrained maps),
    with the gradient of s_b/((1 + m_b)σ̂_b²) or √(1 + m_b)·σ̂_b, σ̂_b = ‖W_b v_b‖ (the paper's power-mode
    gradient, :class:`_PowerModeGradient`).
    One host read per computation; the per-map margins m_b adapt as in ``"verified"``. For
    float32/float64 weights on the CPU, where numba is installed (extra ``structnets[fast]``), all
    the maps of a dtype run as one compiled call (:mod:`._fused_certify`: the same test with
    BLAS/LAPACK and plain loops, instead of a few hundred tensor operations); its first call in a
    new install compiles it (≈ 11–15 s per weight dtype, then cached on disk). There the members are
    also handed the matrices they apply, W·(−τ) and fl(V/s), formed from the certified content with
    the layers' own roundings, and all their gradients are written by one compiled call
    (:mod:`._applied_matrices`); a member whose weight is not the very tensor the batch read (same
    content, another tensor) is handed its value instead.

    A member uses its value only once, and only when the weight (and step) it is about to use has
    the *content* the value was computed for (``torch.equal`` against the copy it certified, same
    dtype, shape and device) and no backward pass has yet run through the batch's graph. Otherwise
    (a map used twice, a map called outside the leader's forward, a weight edited in between by a
    hook, ``.data``, ``load_state_dict`` or an optimizer step) it computes its own ``"verified"``
    bound, counted in :attr:`unbatched_calls`. Where the Cholesky test failed, the map takes the
    exact bound and restarts its power vector, as ``"verified"`` does (counted per map in
    ``exact_fallbacks``). Evaluation, no-grad passes, ``lipschitz_bound()``, certification and
    export never use the batch: they keep the exact cached bound.

    Args:
        maps: the member layers, leader first (e.g. in the order a ``Sequential`` calls them); each
            ``bound="verified"``, none repeated, none in another batch.

    Attributes:
        batched_calls: member calls served by the batch.
        unbatched_calls: member calls (training, gradients on) that computed their own bound.
        computations: batch computations (leader calls).
        retries: member calls certified by the second, larger guess (``retry`` of
            :func:`batched_verified_square`), which then widen the member's margin.
    """

    def __init__(self, maps: Sequence[nn.Module]) -> None:
        from .gradient_step_residual import GradientStepResidual
        from .norm_constrained_linear import NormConstrainedLinear

        if isinstance(maps, nn.Module) or not isinstance(maps, Sequence) or len(maps) == 0:
            raise TypeError(f"`maps` must be a non-empty sequence of layers, got {type(maps).__name__}")
        kinds: list[str] = []
        seen: set[int] = set()
        for position, layer in enumerate(maps):
            layer = cast(Any, layer)
            if isinstance(layer, GradientStepResidual):
                kinds.append("tau")
            elif isinstance(layer, NormConstrainedLinear):
                kinds.append("norm")
            else:
                raise TypeError(
                    f"`maps[{position}]` must be a GradientStepResidual or NormConstrainedLinear, "
                    f"got {type(layer).__name__}"
                )
            if layer.bound != "verified":
                raise ValueError(f"`maps[{position}]` must have bound='verified', got bound={layer.bound!r}")
            if id(layer) in seen:
                raise ValueError(f"`maps[{position}]` is listed twice: a map belongs to a batch once")
            if layer._bound.batch is not None:
                raise ValueError(f"`maps[{position}]` already belongs to a CertifiedBatch")
            seen.add(id(layer))
        # GradientStepResidual / NormConstrainedLinear (Any: their attributes are read by name)
        self._members: list[Any] = list(maps)
        self._kinds = kinds
        self._positions = {id(layer._bound): position for position, layer in enumerate(self._members)}
        self._entries: dict[int, _Entry] = {}
        self.batched_calls = 0
        self.unbatched_calls = 0
        self.computations = 0
        self.retries = 0
        for layer in self._members:
            layer._bound.batch = self

    @property
    def members(self) -> tuple[nn.Module, ...]:
        """The member layers, leader first."""
        return tuple(self._members)

    def __getstate__(self) -> dict[str, Any]:
        # pending values carry autograd history (not deep-copyable, and only valid in their forward)
        state = self.__dict__.copy()
        state["_entries"] = {}
        return state

    def __repr__(self) -> str:
        return f"CertifiedBatch({len(self._members)} maps)"

    # ----------------------------------------------------------------------------------------

    def take(
        self, bound: CertifiedBound, weight: torch.Tensor, kind: str, matrix: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor, bool] | None:
        """A member's value for ``weight`` as it is now: (τ or norm bound, next power vector, False), or None.

        Called by the member's ``CertifiedBound`` in a training forward with gradients on. None
        means: compute your own bound (the value is missing, used, stale or not of this kind).
        ``matrix=True``: where the compiled path formed the member's applied matrix (−τ·W for a
        gradient-step block, fl(V/s) for a norm-constrained map) for this content and this very
        weight tensor (its gradient reaches the tensor the forward uses), (that matrix, vector, True).
        """
        position = self._positions.get(id(bound))
        if position is None or self._members[position]._bound is not bound:
            # a copied or unpickled batch: its members' bounds are new objects
            self._positions = {id(layer._bound): i for i, layer in enumerate(self._members)}
            position = self._positions.get(id(bound))
        if (
            position is None
            or self._members[position]._bound is not bound
            or self._kinds[position] != kind
            or _is_transformed(weight)
        ):
            return None
        if position == 0:
            self._compute()
        entry = self._entries.pop(id(bound), None)
        eligible = bound.mode == "verified" and weight.requires_grad
        if entry is None or entry.spent[0] or not eligible or not _same_tensor_content(entry.weight, weight):
            self.unbatched_calls += int(eligible)
            return None
        layer = self._members[position]
        if kind == "tau" and not self._same_step(layer, entry.step):
            self.unbatched_calls += 1
            return None
        self.batched_calls += 1
        if entry.passed:
            bound.verified_steps += 1
            if entry.retried:  # the first guess was low: widen the margin as a failed test does
                self.retries += 1
                bound.verified_margin = min(VERIFIED_MARGIN_MAX, 2.0 * bound.verified_margin)
            else:
                bound.verified_margin = max(VERIFIED_MARGIN, 0.95 * bound.verified_margin)
            if matrix and entry.matrix is not None and weight is entry.source:
                return entry.matrix, entry.following, True
            return entry.values[entry.index], entry.following, False
        bound.exact_fallbacks += 1
        bound.verified_margin = min(VERIFIED_MARGIN_MAX, 2.0 * bound.verified_margin)
        square = squared_norm_bound(weight, "exact")
        if kind == "tau":
            step = layer.step_size() if layer.step_logit is not None else layer.step
            value = certified_step(step, square, weight.dtype)
        else:
            value = sqrt_round_up(square, weight.dtype)
        # the estimate lagged behind σ₁: restart the vector at the top singular vector
        return value, _top_vector_by_gram(weight.detach()), False

    @staticmethod
    def _same_step(layer: Any, step: torch.Tensor | float | None) -> bool:
        logit = layer.step_logit
        if isinstance(step, LogitValue):  # θ's value as a float (exact for float32/float64 θ)
            return logit is not None and logit.dim() == 0 and logit.item() == step
        if isinstance(step, torch.Tensor):
            return logit is not None and _same_tensor_content(step, logit)
        return logit is None and step == layer.step

    @staticmethod
    def _weight(layer: Any, kind: str) -> torch.Tensor:
        return module_tensor(layer, "weight" if kind == "tau" else "raw_weight")

    def _compute(self) -> None:
        """Compute every eligible member's value for its current content (the leader's training call)."""
        self._entries = {}
        groups: dict[tuple[Any, ...], list[int]] = {}  # tensor path: by (dtype, device, kind, shape, step kind)
        # compiled path: by place, (layer, kind, weight, power vector, learnable step)
        flat: dict[tuple[Any, ...], list[tuple[Any, str, torch.Tensor, torch.Tensor, bool]]] = {}
        compiled: dict[tuple[torch.dtype, torch.device], bool] = {}  # fused_place per place
        for position, (layer, kind) in enumerate(zip(self._members, self._kinds, strict=True)):
            weight = self._weight(layer, kind)
            vector = module_tensor(layer, "power_vector")
            if (
                layer._bound.mode != "verified"
                or not weight.requires_grad
                or weight.dim() != 2
                or vector.shape != (weight.shape[1],)
                or vector.dtype != weight.dtype
                or vector.device != weight.device
            ):
                continue
            learnable = kind == "tau" and module_tensor(layer, "step_logit") is not None
            where = (weight.dtype, weight.device)
            fused = compiled.get(where)
            if fused is None:
                fused = compiled[where] = fused_place(*where)
            if fused:  # every shape of the place in one compiled call
                flat.setdefault(where, []).append((layer, kind, weight, vector, learnable))
            else:
                key = (weight.dtype, weight.device, kind, tuple(weight.shape), learnable)
                groups.setdefault(key, []).append(position)
        for members in flat.values():
            layers, kinds, weights, vectors, steps = (list(column) for column in zip(*members, strict=True))
            with torch.no_grad():
                result = compute_flat(layers, kinds, weights, vectors, steps)
            self._hand_out(
                layers, result.plan, result.inputs, result.snapshots, result.steps, result.following,
                [result.passed, result.retried], result.applied,
            )  # fmt: skip
        # the tensor path: one computation per (dtype, device), every shape's Gram test in one batched
        # factorisation where padding is cheap, and one vectorised rounding of every value (issue 26:
        # the per-shape sequences of small operations were most of the cost at MLP sizes)
        places: dict[tuple[Any, ...], list[_Group]] = {}
        with torch.no_grad():
            for (dtype, device, kind, _, learnable), positions in groups.items():
                group = self._group(kind, learnable, [self._members[p] for p in positions])
                places.setdefault((dtype, device), []).append(group)
        for place in places.values():
            self._compute_place(place)
        self.computations += 1

    def _group(self, kind: str, learnable: bool, layers: list[Any]) -> _Group:
        """Stack one shape's weights and power vectors (no autograd: :class:`_PowerModeGradient` differentiates)."""
        inputs = [self._weight(layer, kind) for layer in layers]
        steps: list[torch.Tensor] | list[float] | list[None]
        # called under no_grad
        stacked = torch.stack(inputs)
        vectors = torch.stack([layer.power_vector for layer in layers])
        dtype, device = stacked.dtype, stacked.device
        # W_b v_b as a row: σ̂_b = ‖W_b v_b‖ and u_b = W_b v_b / σ̂_b (0 where W_b v_b = 0, as the norm's subgradient)
        image = torch.bmm(vectors.unsqueeze(1), stacked.mT).squeeze(1)
        estimate = torch.linalg.vector_norm(image, dim=1)
        left = image / estimate.unsqueeze(1).clamp_min(torch.finfo(stacked.dtype).tiny)
        slope = step = None
        if kind == "tau" and learnable:
            logit_params = [layer.step_logit for layer in layers]
            inputs += logit_params
            logits = torch.stack(logit_params)
            # each θ's own sigmoid, as a layer's step_size() forms it: a stacked sigmoid of 16 or more
            # entries takes torch's vectorised CPU kernel, whose exp differs in the last bit for a few % of θ
            sigmoid = torch.stack([torch.sigmoid(logit) for logit in logit_params])
            step = 2.0 * sigmoid
            slope = step * (1.0 - sigmoid)  # ds/dθ of s = 2·sigmoid(θ)
            step64 = step.to(torch.float64)
            steps = list(logits.unbind(0))
        else:
            # the exact floats, as tau() takes them (s is the dtype's rounding of them in the surrogate)
            steps = [layer.step for layer in layers] if kind == "tau" else [None] * len(layers)
            step64 = torch.tensor([1.0 if s is None else s for s in steps], dtype=torch.float64, device=device)
            step = step64.to(dtype)
        margins = torch.tensor(
            [1.0 + layer._bound.verified_margin for layer in layers], dtype=torch.float64, device=device
        )
        return _Group(kind, layers, stacked, vectors, estimate, step, step64, steps, margins, inputs, left, slope)

    def _compute_place(self, groups: list[_Group]) -> None:
        """Certify every group of one dtype and device together and hand out the values.

        Everything is laid out once, in the order the padded tests take the groups (``order``):
        the results of each test are used as they come, without slicing them back per group.
        """
        dtype, device = groups[0].snapshot.dtype, groups[0].snapshot.device
        order: list[_Group] = []
        squares: list[torch.Tensor] = []
        passes: list[torch.Tensor] = []
        retries: list[torch.Tensor] = []
        margin_parts: list[torch.Tensor] = []
        following: list[torch.Tensor] = []
        with torch.no_grad(), torch.autocast(device.type, enabled=False):
            # precision per group, then one padded batch per precision (see _padded_sets)
            tests: dict[torch.dtype, list[_Group]] = {}
            ieee = float32_matmul_is_ieee(device)  # read once per computation (a few attribute reads)
            for group in groups:
                rows, cols = group.snapshot.shape[-2:]
                tests.setdefault(_precision_for(dtype, min(rows, cols), max(rows, cols), ieee), []).append(group)
            for precision, members in tests.items():
                sizes = [min(group.snapshot.shape[-2:]) for group in members]
                counts = [group.snapshot.shape[0] for group in members]
                for chosen in _padded_sets(sizes, counts):
                    size = max(sizes[i] for i in chosen)
                    # every Gram product writes into its block of one buffer: no concatenation copy
                    grams = torch.empty(sum(counts[i] for i in chosen), size, size, dtype=precision, device=device)
                    starts = torch.zeros(grams.shape[0], 1, size, dtype=precision, device=device)
                    ratios = []
                    offset, blocks = 0, []
                    for i in chosen:
                        group, n, part = members[i], sizes[i], slice(offset, offset + counts[i])
                        rows, cols = group.snapshot.shape[-2:]
                        if n == size:
                            w, _, start = _gram_and_start(group.snapshot, group.vectors, precision, out=grams[part])
                        else:
                            grams[part].zero_()
                            w, grams[part, :n, :n], start = _gram_and_start(group.snapshot, group.vectors, precision)
                        starts[part, :, :n] = start
                        ratios += [verified_ratio(min(rows, cols), max(rows, cols), precision)] * counts[i]
                        blocks.append((group, w, n, part))
                        offset += counts[i]
                    margins = _joined([cast(torch.Tensor, members[i].margins) for i in chosen])
                    ratio = torch.tensor(ratios, dtype=torch.float64, device=device)
                    square, passed, z, retried = _certify_grams(grams, starts, margins, ratio, 5, 1.15)
                    squares.append(square)
                    passes.append(passed)
                    retries.append(retried)
                    margin_parts.append(margins)
                    for group, w, n, part in blocks:
                        order.append(group)
                        following.extend(_following(w, z[part, :, :n], group.vectors).unbind(0))
            square, margins = _joined(squares), _joined(margin_parts)
            kinds = {group.kind for group in order}
            step64 = _joined([group.step64 for group in order])
            if kinds == {"tau"}:
                value = _tau_values(step64, square, dtype)
            elif kinds == {"norm"}:
                value = _norm_values(square, dtype)
            else:
                is_tau = torch.tensor(
                    [group.kind == "tau" for group in order for _ in group.layers], dtype=torch.bool, device=device
                )
                value = torch.where(is_tau, _tau_values(step64, square, dtype), _norm_values(square, dtype))
            estimate = _joined([cast(torch.Tensor, group.estimate) for group in order])
            step = _joined([cast(torch.Tensor, group.step) for group in order])  # formed by _group
            factor = margins.to(dtype)
            # The value: τ = s/Q rounded down (gradient-step maps: τ·‖W‖₂² ≤ s) or √Q rounded up (norm
            # bounds ≥ ‖W‖₂). The gradient: of the surrogate s/((1 + m)σ̂²) or √(1 + m)·σ̂, the
            # "verified" mode's (the paper's power-mode gradient), written out by _PowerModeGradient.
            if kinds == {"tau"}:
                inverse = 1.0 / (estimate.square() * factor)
                surrogate = step * inverse
                slope = -2.0 * surrogate / estimate  # d surrogate / dσ̂
            elif kinds == {"norm"}:
                surrogate = estimate * factor.sqrt()
                inverse, slope = torch.zeros_like(estimate), factor.sqrt()
            else:
                inverse = torch.where(is_tau, 1.0 / (estimate.square() * factor), torch.zeros_like(estimate))
                surrogate = torch.where(is_tau, step * inverse, estimate * factor.sqrt())
                slope = torch.where(is_tau, -2.0 * surrogate / estimate, factor.sqrt())
            # An entry whose surrogate is far from its value (σ̂ = 0 or overflow, or σ̂ lagging by more than a
            # factor 2: the straight-through difference value − surrogate would not be exact, Sterbenz) or
            # whose gradient is not finite is a failed test, as in "verified"; its gradient is set to 0 so
            # that an unused row cannot turn into 0·∞ = NaN.
            usable = (surrogate + (value - surrogate) == value) & (slope.abs() < math.inf) & (inverse.abs() < math.inf)
            zero = torch.zeros((), dtype=dtype, device=device)
            plan = _Plan(
                value, torch.where(usable, slope, zero), torch.where(usable, inverse, zero), order, factor, usable
            )
            # the computation's one host read
            flags = torch.stack((_joined(passes) & usable, _joined(retries))).tolist()
        layers = [layer for group in order for layer in group.layers]
        inputs = [tensor for group in order for tensor in group.inputs]
        snapshots = [weight for group in order for weight in group.snapshot.unbind(0)]
        steps = [item for group in order for item in group.steps]
        self._hand_out(layers, plan, inputs, snapshots, steps, following, flags)

    def _hand_out(
        self,
        layers: list[Any],
        plan: _Plan,
        inputs: list[torch.Tensor],
        snapshots: Sequence[torch.Tensor | np.ndarray],
        steps: list[Any],
        following: list[torch.Tensor],
        flags: list[list[bool]],
        applied: AppliedPlan | None = None,
    ) -> None:
        """Attach the power-mode gradient to the values and store one entry per member (``take`` reads them).

        ``inputs`` are the tensors the values are differentiated by, in the plan's order; the other
        lists are per member: the weight content certified, the step it was formed with, the next
        power vector; ``flags`` the passed and retried lists. ``applied``: the compiled path's applied
        matrices, handed out with the values by one :class:`AppliedMatrices` node.
        """
        matrices: Sequence[torch.Tensor | None]
        if applied is None:
            values = _PowerModeGradient.apply(plan, *inputs)
            matrices = [None] * len(layers)
        else:
            values, *matrices = AppliedMatrices.apply(plan, applied, *inputs)
        spent = plan.spent  # set by the backward pass through `values`
        sources = [None] * len(layers) if applied is None else [inputs[at] for at in applied.weight_at]
        parts = zip(layers, matrices, sources, snapshots, steps, following, *flags, strict=True)
        for index, (layer, matrix, source, weight, step_value, vector, flag, second) in enumerate(parts):
            self._entries[id(layer._bound)] = _Entry(
                values, index, matrix, source, weight, step_value, vector, flag, second, spent
            )


#: Pad a Gram matrix of size n to a set's size N when its share of the padded factorisation stays
#: small: count·N³ ≤ this (≈ 5 ms of factorisation), or n = N.
_PAD_CUBES = 2**24


def _padded_sets(sizes: list[int], counts: list[int]) -> list[list[int]]:
    """Indices of Gram batches grouped for one padded factorisation each, largest size first."""
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    sets: list[list[int]] = []
    for i in order:
        for chosen in sets:
            size = sizes[chosen[0]]
            if sizes[i] == size or counts[i] * size**3 <= _PAD_CUBES:
                chosen.append(i)
                break
        else:
            sets.append([i])
    return sets


__all__ = ["CertifiedBatch", "batched_verified_square", "verified_ratio"]
