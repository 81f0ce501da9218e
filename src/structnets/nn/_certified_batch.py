"""Certified training-time bounds of many constrained maps at once (``bound="verified-batched"``).

``bound="verified"`` certifies every training step of every map by a warm power estimate with a
margin, checked by a float64 Cholesky test (:func:`structnets.functional.verified_square_bound`).
Per map and per call that is a few dozen small tensor operations (casts, ``where``, host reads,
the float64 rounding of τ), which at MLP sizes cost more than the Cholesky itself. A
:class:`CertifiedBatch` does the same work for all its maps together: one ``torch.bmm`` for every
Gram matrix of a shape, a few batched Lanczos steps on them for the guesses, one batched
``torch.linalg.cholesky_ex``, one host read, one vectorised rounding of every τ (or norm bound);
on the CPU, where numba is installed, one compiled call per shape does all of it
(``_fused_certify``). Each map then checks that the value it is handed was computed for its weight
*as it is now* and falls back to its own bound otherwise.
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
from . import _fused_certify
from ._spectral import VERIFIED_MARGIN, VERIFIED_MARGIN_MAX, CertifiedBound, _is_transformed, _top_vector_by_gram
from ._verified_gram import (
    _PRECISION,
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


@dataclass
class _Entry:
    """One map's value from the last batch computation, usable once, for the content it was computed for."""

    value: torch.Tensor  # 0-d τ or norm bound, in the weight dtype, with autograd history
    weight: torch.Tensor  # the weight content the value certifies (a row of the stacked copy)
    step: torch.Tensor | float | None  # the step s or θ the τ was formed with (gradient-step maps)
    following: torch.Tensor  # the next power vector
    passed: bool
    retried: bool  # passed at the second, larger guess
    spent: list[bool]  # set by a gradient hook once a backward pass went through the group's graph


def _same_tensor_content(stored: torch.Tensor, current: torch.Tensor) -> bool:
    # torch.equal reads values only (no autograd, no detach needed)
    return (
        stored.dtype == current.dtype
        and stored.shape == current.shape
        and stored.device == current.device
        and torch.equal(stored, current)
    )


def _mark_spent(spent: list[bool]) -> Any:
    def hook(grad: torch.Tensor) -> None:
        spent[0] = True

    return hook


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
    float32/float64 weights on the CPU, where numba is installed (extra ``structnets[fast]``), each
    group runs as one compiled call (:mod:`._fused_certify`: the same test with BLAS/LAPACK and plain
    loops, instead of a few hundred tensor operations); its first call in a new install compiles it
    (≈ 9 s per weight dtype, then cached on disk).

    A member uses its value only once, and only when the weight (and step) it is about to use has
    the *content* the value was computed for (``torch.equal`` against the stacked copy, same
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

    def take(self, bound: CertifiedBound, weight: torch.Tensor, kind: str) -> tuple[torch.Tensor, torch.Tensor] | None:
        """A member's value (τ or norm bound, next power vector) for ``weight`` as it is now, or None.

        Called by the member's ``CertifiedBound`` in a training forward with gradients on. None
        means: compute your own bound (the value is missing, used, stale or not of this kind).
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
            return entry.value, entry.following
        bound.exact_fallbacks += 1
        bound.verified_margin = min(VERIFIED_MARGIN_MAX, 2.0 * bound.verified_margin)
        square = squared_norm_bound(weight, "exact")
        if kind == "tau":
            step = layer.step_size() if layer.step_logit is not None else layer.step
            value = certified_step(step, square, weight.dtype)
        else:
            value = sqrt_round_up(square, weight.dtype)
        # the estimate lagged behind σ₁: restart the vector at the top singular vector
        return value, _top_vector_by_gram(weight.detach())

    @staticmethod
    def _same_step(layer: Any, step: torch.Tensor | float | None) -> bool:
        logit = layer.step_logit
        if isinstance(step, torch.Tensor):
            return logit is not None and _same_tensor_content(step, logit)
        return logit is None and step == layer.step

    @staticmethod
    def _weight(layer: Any, kind: str) -> torch.Tensor:
        return layer.weight if kind == "tau" else layer.raw_weight

    def _compute(self) -> None:
        """Compute every eligible member's value for its current content (the leader's training call)."""
        self._entries = {}
        groups: dict[tuple[Any, ...], list[int]] = {}
        for position, (layer, kind) in enumerate(zip(self._members, self._kinds, strict=True)):
            weight = self._weight(layer, kind)
            vector = layer.power_vector
            if (
                layer._bound.mode != "verified"
                or not weight.requires_grad
                or weight.dim() != 2
                or vector.shape != (weight.shape[1],)
                or vector.dtype != weight.dtype
                or vector.device != weight.device
            ):
                continue
            learnable = kind == "tau" and layer.step_logit is not None
            groups.setdefault((weight.dtype, weight.device, kind, tuple(weight.shape), learnable), []).append(position)
        # one computation per (dtype, device): every shape's Gram test in one batched factorisation
        # where padding is cheap, and one vectorised rounding of every value (issue 26: the
        # per-shape sequences of small operations were most of the cost at MLP sizes)
        places: dict[tuple[Any, ...], list[_Group]] = {}
        with torch.no_grad():
            for (dtype, device, kind, _, learnable), positions in groups.items():
                fused = _fused_place(dtype, device)
                places.setdefault((dtype, device), []).append(self._group(kind, learnable, positions, fused))
        for (dtype, device), place in places.items():
            if _fused_place(dtype, device):
                self._compute_place_fused(place)
            else:
                self._compute_place(place)
        self.computations += 1

    def _group(self, kind: str, learnable: bool, positions: list[int], fused: bool = False) -> _Group:
        """Stack one shape's weights and power vectors (no autograd: :class:`_PowerModeGradient` differentiates).

        ``fused``: σ̂ and u are left to the compiled kernel (:mod:`._fused_certify`), which computes them.
        """
        layers = [self._members[p] for p in positions]
        inputs = [self._weight(layer, kind) for layer in layers]
        steps: list[torch.Tensor] | list[float] | list[None]
        # called under no_grad
        stacked = torch.stack(inputs)
        vectors = torch.stack([layer.power_vector for layer in layers])
        dtype, device = stacked.dtype, stacked.device
        if fused:
            estimate = left = stacked.new_empty(0)  # set from the kernel's outputs
        else:
            # W_b v_b as a row: σ̂_b = ‖W_b v_b‖ and u_b = W_b v_b / σ̂_b (0 where W_b v_b = 0, as the norm's subgradient)
            image = torch.bmm(vectors.unsqueeze(1), stacked.mT).squeeze(1)
            estimate = torch.linalg.vector_norm(image, dim=1)
            left = image / estimate.unsqueeze(1).clamp_min(torch.finfo(stacked.dtype).tiny)
        slope = step = None
        if kind == "tau" and learnable:
            logit_params = [layer.step_logit for layer in layers]
            inputs += logit_params
            logits = torch.stack(logit_params)
            sigmoid = torch.sigmoid(logits)
            step = 2.0 * sigmoid
            slope = step * (1.0 - sigmoid)  # ds/dθ of s = 2·sigmoid(θ)
            step64 = step.to(torch.float64)
            steps = list(logits.unbind(0))
        else:
            # the exact floats, as tau() takes them (s is the dtype's rounding of them in the surrogate)
            steps = [layer.step for layer in layers] if kind == "tau" else [None] * len(layers)
            step64 = torch.tensor([1.0 if s is None else s for s in steps], dtype=torch.float64)
        margins = torch.tensor([1.0 + layer._bound.verified_margin for layer in layers], dtype=torch.float64)
        if not fused:  # the kernel reads these on the host
            step64, margins = step64.to(device), margins.to(device)
            step = step64.to(dtype) if step is None else step
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
                    margins = _joined([members[i].margins for i in chosen])
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
            estimate = _joined([group.estimate for group in order])
            step = _joined([cast(torch.Tensor, group.step) for group in order])  # formed by _group off the kernel
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
        self._hand_out(order, plan, flags, following)

    def _compute_place_fused(self, groups: list[_Group]) -> None:
        """``_compute_place`` for float32/float64 weights on the CPU: one compiled call per group (:mod:`._fused_certify`).

        The same test, values, gradient factors and flags, computed by plain loops in one call
        instead of a few hundred dispatched tensor operations (issue 26).
        """
        dtype = groups[0].snapshot.dtype
        with _fused_certify.single_threaded_blas():
            outputs = [self._certify_group_fused(group, dtype) for group in groups]
        joined = {
            key: np.concatenate([out[key] for out in outputs])
            for key in ("values", "slopes", "inverses", "factors", "flags")
        }
        flags = joined["flags"]
        plan = _Plan(
            torch.from_numpy(joined["values"]),
            torch.from_numpy(joined["slopes"]),
            torch.from_numpy(joined["inverses"]),
            groups,
            torch.from_numpy(joined["factors"]),
            torch.from_numpy(flags[:, 2].copy()),
        )
        following = [vector for out in outputs for vector in torch.from_numpy(out["following"]).unbind(0)]
        self._hand_out(groups, plan, flags[:, :2].T.tolist(), following)

    @staticmethod
    def _certify_group_fused(group: _Group, dtype: torch.dtype) -> dict[str, np.ndarray]:
        """One group's compiled call; sets the group's u_b (``left``) for the backward pass."""
        rows, cols = group.snapshot.shape[-2:]
        n, inner = min(rows, cols), max(rows, cols)
        # the kernel's Gram product is SciPy's BLAS, IEEE float32 whatever torch's matmul precision
        precision = _precision_for(dtype, n, inner, True)
        out = _fused_certify.certify_arrays(
            group.snapshot.numpy(),
            group.vectors.numpy(),
            group.margins.numpy(),
            group.step64.numpy(),
            group.kind == "tau",
            _NUMPY[precision],
            verified_ratio(n, inner, precision),
            _PRECISION[precision][1],
        )
        group.left = torch.from_numpy(out["left"])
        return out

    def _hand_out(
        self, order: list[_Group], plan: _Plan, flags: list[list[bool]], following: list[torch.Tensor]
    ) -> None:
        """Attach the power-mode gradient to the values and store one entry per member (``take`` reads them)."""
        values = _PowerModeGradient.apply(plan, *[tensor for group in order for tensor in group.inputs])
        spent = [False]
        if values.requires_grad:
            values.register_hook(_mark_spent(spent))
        layers = [layer for group in order for layer in group.layers]
        snapshots = [weight for group in order for weight in group.snapshot.unbind(0)]
        steps = [item for group in order for item in group.steps]
        parts = zip(layers, values.unbind(0), snapshots, steps, following, *flags, strict=True)
        for layer, part, weight, step_value, vector, flag, second in parts:
            self._entries[id(layer._bound)] = _Entry(part, weight, step_value, vector, flag, second, spent)


@dataclass(eq=False)
class _Plan:
    """What :class:`_PowerModeGradient` returns and needs: the values, dvalue/dσ̂ and dvalue/ds per entry, the groups."""

    value: torch.Tensor  # (B,) certified values, in the weight dtype
    slope: torch.Tensor  # (B,) d surrogate / dσ̂ (0 where the entry failed)
    inverse: torch.Tensor  # (B,) d surrogate / ds = 1/((1 + m)σ̂²) for τ maps (0 for norm maps and failures)
    groups: list[_Group]  # in the order of the entries; each lists its inputs (weights, then θ if learnable)
    factor: torch.Tensor  # (B,) 1 + m_b in the weight dtype
    usable: torch.Tensor  # (B,) bool: the entry's gradient is defined (else it is 0)


class _PowerModeGradient(torch.autograd.Function):
    """The certified values with the power-mode gradient, in a few batched operations.

    Forward returns the values unchanged. Backward, for the surrogate S_b of each entry
    (s_b/((1 + m_b)σ̂_b²) for a τ map, √(1 + m_b)·σ̂_b for a norm map), with σ̂_b = ‖W_b v_b‖ and the
    power vector v_b held fixed (the paper's power mode): ∂σ̂_b/∂W_b = u_b v_bᵀ, u_b = W_b v_b/σ̂_b, so
    ∂S_b/∂W_b = (∂S_b/∂σ̂_b)·u_b v_bᵀ, and ∂S_b/∂θ_b = s'(θ_b)/((1 + m_b)σ̂_b²) for a learnable step
    s = 2·sigmoid(θ). The same gradient as autograd through the surrogate (tested), without building
    its graph: one outer product per group instead of a dozen recorded operations per step. A
    backward pass that builds a graph (``create_graph=True``, for higher derivatives) differentiates
    the surrogate itself instead, rebuilt from the saved inputs, so that every order is right.
    """

    @staticmethod
    def forward(ctx: Any, plan: _Plan, *inputs: torch.Tensor) -> torch.Tensor:
        ctx.plan = plan
        ctx.save_for_backward(*inputs)
        return plan.value

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        plan: _Plan = ctx.plan
        if torch.is_grad_enabled():
            inputs = ctx.saved_tensors
            graph_grads = torch.autograd.grad(
                _surrogate(plan, inputs),
                inputs,
                grad_outputs=torch.where(plan.usable, grad, torch.zeros_like(grad)),
                create_graph=True,
                allow_unused=True,
            )
            return (None, *graph_grads)
        by_norm = grad * plan.slope
        by_step = grad * plan.inverse
        grads: list[torch.Tensor | None] = [None]
        offset = 0
        for group in plan.groups:
            count = len(group.layers)
            part = slice(offset, offset + count)
            offset += count
            grads.extend(
                (by_norm[part].unsqueeze(1) * group.left).unsqueeze(2).mul(group.vectors.unsqueeze(1)).unbind(0)
            )
            if group.slope is not None:
                grads.extend((by_step[part] * group.slope).unbind(0))
        return tuple(grads)


def _surrogate(plan: _Plan, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """The surrogates S_b of :class:`_PowerModeGradient` as a differentiable function of its inputs."""
    parts, index, offset = [], 0, 0
    for group in plan.groups:
        count = len(group.layers)
        stacked = torch.stack(inputs[index : index + count])
        index += count
        sigma = torch.linalg.vector_norm(torch.bmm(group.vectors.unsqueeze(1), stacked.mT), dim=(1, 2))
        usable, factor = plan.usable[offset : offset + count], plan.factor[offset : offset + count]
        offset += count
        sigma = torch.where(usable, sigma, torch.ones_like(sigma))  # an unused row: no 0·∞ in its gradient
        if group.kind == "norm":
            parts.append(sigma * factor.sqrt())
            continue
        if group.slope is not None:
            step = 2.0 * torch.sigmoid(torch.stack(inputs[index : index + count]))
            index += count
        else:
            step = group.step if group.step is not None else group.step64.to(sigma.device, sigma.dtype)
        parts.append(step / (sigma.square() * factor))
    return torch.cat(parts)


_NUMPY: dict[torch.dtype, np.dtype[Any]] = {torch.float32: np.dtype(np.float32), torch.float64: np.dtype(np.float64)}


def _fused_place(dtype: torch.dtype, device: torch.device) -> bool:
    """Whether a place (dtype, device) runs the compiled kernel: numba present, float32/float64 weights, the CPU."""
    return _fused_certify.AVAILABLE and device.type == "cpu" and dtype in _NUMPY


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


def _done(result: torch.Tensor | None) -> torch.Tensor:
    """A group's test result, set by ``_compute_place`` before it is read."""
    if result is None:
        raise RuntimeError("internal: a CertifiedBatch group was read before its test ran")
    return result


@dataclass(eq=False)
class _Group:
    """One (kind, shape, step kind) of members within a batch computation, and its test's results."""

    kind: str
    layers: list[Any]
    snapshot: torch.Tensor  # (B, rows, cols) the weights' content, detached
    vectors: torch.Tensor  # (B, cols) power vectors
    estimate: torch.Tensor  # (B,) σ̂_b = ‖W_b v_b‖ (no autograd)
    step: torch.Tensor | None  # (B,) s in the weight dtype (1 for norm maps); None: not formed (fused, fixed s)
    step64: torch.Tensor  # (B,) s in float64, no gradient
    steps: list[Any]  # what each member's τ was formed with (logit, float, or None)
    margins: torch.Tensor  # (B,) float64 1 + m_b
    inputs: list[torch.Tensor]  # the members' weights (then step logits θ, learnable steps): what gets a gradient
    left: torch.Tensor  # (B, rows) u_b = W_b v_b/σ̂_b
    slope: torch.Tensor | None  # (B,) ds/dθ for learnable steps, else None
    square: torch.Tensor | None = None
    passed: torch.Tensor | None = None
    retried: torch.Tensor | None = None
    following: torch.Tensor | None = None


__all__ = ["CertifiedBatch", "batched_verified_square", "verified_ratio"]
