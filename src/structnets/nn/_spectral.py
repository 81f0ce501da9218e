"""The certified bound a constrained layer uses, with its content-checked cache.

The maths (certified spectral-norm bounds, safe rounding, power iteration) is public in
:mod:`structnets.functional`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import torch
from torch import nn
from torch.nn.modules import module as _module_internals

from .._validation import check_choice
from ..functional import (
    LAYER_BOUNDS,
    certificate_method,
    power_estimate,
    sqrt_round_up,
    squared_norm_bound,
)
from ._verified_gram import verified_single_square


class BatchedValues(Protocol):
    """What a bound needs of :class:`~structnets.nn.CertifiedBatch` (a protocol: no import cycle)."""

    def take(
        self, bound: Any, weight: torch.Tensor, kind: str, matrix: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor, bool] | None: ...


#: Smallest and largest relative margin of ``bound="verified"``: the power estimate σ̂² × (1 + margin)
#: is the guess the Cholesky test certifies. A layer's margin doubles after a failed test (σ̂
#: lagged behind σ₁: a layer whose norm grows fast) and shrinks by 5 % after a passed one.
VERIFIED_MARGIN = 0.01
VERIFIED_MARGIN_MAX = 0.08


def store_power_vector(module: nn.Module, following: torch.Tensor) -> None:
    """``module.power_vector = following`` (an existing buffer), once per training call of every certified map.

    ``Module.__setattr__`` goes through ``register_buffer``'s checks (≈ 3 µs, seven maps per step of a
    5 × 50 ResNet); where no global buffer-registration hook listens and nothing is being compiled,
    the buffer dict is written directly, which is all that path then does for a tensor.
    """
    buffers = module._buffers
    if following is buffers.get("power_vector"):
        return
    if (
        _module_internals._global_buffer_registration_hooks
        or torch.compiler.is_compiling()
        or "power_vector" not in buffers
    ):
        module.power_vector = following
    else:
        buffers["power_vector"] = following


def _is_transformed(weight: torch.Tensor) -> bool:
    """True under torch.compile tracing or a torch.func transform, where no cache may be consulted."""
    if torch.compiler.is_compiling():
        return True
    is_wrapped = getattr(torch._C._functorch, "is_functorch_wrapped_tensor", None)
    return bool(is_wrapped(weight)) if is_wrapped is not None else False


class ContentCache:
    """A value computed from a weight, reused only while the weight's *content* is unchanged.

    It keeps a copy of the weight and compares it with ``torch.equal`` (same dtype, shape and
    device too): version counters and data pointers are not enough, since fused and foreach
    optimizers, ``.data`` edits and ``no_grad`` in-place updates change a weight without bumping
    them. Under ``torch.compile`` and ``torch.func`` transforms nothing is cached. Shared by
    :class:`CertifiedBound` and the convolutional layers' bound.
    """

    def __init__(self) -> None:
        self._entry: tuple[torch.Tensor, torch.Tensor] | None = None

    def reset(self) -> None:
        """Drop the stored value (only frees memory: a stale one can never be used)."""
        self._entry = None

    def get(self, weight: torch.Tensor, compute: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        """``compute(W)`` (no gradient) for the detached weight, from the cache when its content is unchanged."""
        w = weight.detach()
        if _is_transformed(w):
            with torch.no_grad():
                return compute(w)
        entry = self._entry
        if (
            entry is not None
            and entry[0].dtype == w.dtype
            and entry[0].shape == w.shape
            and entry[0].device == w.device
            and torch.equal(entry[0], w)
        ):
            return entry[1]
        with torch.no_grad():
            value = compute(w)
        self._entry = (w.clone(), value)
        return value


class BoundModeMixin:
    """The public ``bound`` of a layer holding a :class:`CertifiedBound` as ``self._bound``.

    One source of truth: ``bound`` reads and writes the mode the forward uses, validated at every
    assignment (issue 30: a public attribute the refusal read while the forward read another).
    """

    _bound: CertifiedBound

    @property
    def bound(self) -> str:
        """The bound mode (one of ``LAYER_BOUNDS``): the one the forward uses, validated when set."""
        return self._bound.mode

    @bound.setter
    def bound(self, value: str) -> None:
        self._bound.mode = value  # CertifiedBound.mode validates


@torch.no_grad()
def _top_vector_by_gram(weight: torch.Tensor) -> torch.Tensor:
    """A unit top right-singular vector of W from the eigh of the smaller Gram matrix (cheaper than an SVD)."""
    w = weight.to(torch.float64)
    rows, cols = w.shape
    if not bool(torch.isfinite(w).all()):
        # eigh fails on NaN/inf ("ill-conditioned"): keep the layer computing NaN as "exact" does, for
        # lipschitz_bound to refuse by name (only on the exact fallback, which reads the host anyway)
        return torch.full((cols,), cols**-0.5, dtype=weight.dtype, device=weight.device)
    if rows < cols:
        top = torch.linalg.eigh(w @ w.T)[1][:, -1]
        vector = w.T @ top
        vector = vector / torch.linalg.vector_norm(vector).clamp_min(torch.finfo(torch.float64).tiny)
    else:
        vector = torch.linalg.eigh(w.T @ w)[1][:, -1]
    return vector.to(weight.dtype)


class CertifiedBound:
    """The bound B ≥ ‖W‖₂ a constrained layer uses, for one ``LAYER_BOUNDS`` mode, with its cache.

    One place for what :class:`GradientStepResidual` and :class:`NormConstrainedLinear` share:
    ``"power"`` in training mode with gradients on returns the persistent power estimate
    (uncertified); ``"verified"`` in training mode with a gradient needed returns that estimate
    with a :data:`VERIFIED_MARGIN`, certified by a Cholesky test (the guess from a few Lanczos steps on
    the Gram matrix, :func:`~structnets.nn._verified_gram.verified_single_square`), or the exact
    bound when the test fails; any mode with a gradient needed (a weight that requires grad, or any weight
    under a ``torch.func`` transform with gradients on, where ``requires_grad`` cannot be read)
    returns the differentiable certified bound; everything else (eval, or no gradient) returns the
    certified bound from a cache.

    The cache is checked **by content**: it keeps a copy of the weight it was computed for and is
    used only when ``torch.equal`` says the weight is unchanged (same dtype, shape and device).
    A version counter or data pointer is not enough: fused and foreach optimizers, ``.data``
    edits and ``torch.no_grad`` in-place updates can change a weight without bumping its version.
    The comparison costs microseconds against a millisecond eigen-solve (measured in
    ``benchmarks/lipschitz_constraint.py``). Under ``torch.compile`` and ``torch.func`` transforms
    the bound is recomputed at every call.

    Args:
        mode: one of :data:`LAYER_BOUNDS`.
    """

    def __init__(self, mode: str) -> None:
        self._cache = ContentCache()
        self.mode = mode
        #: ``"verified"`` mode: training steps whose Cholesky test passed / fell back to the exact bound
        self.verified_steps = 0
        self.exact_fallbacks = 0
        self.verified_margin = VERIFIED_MARGIN
        #: the :class:`~structnets.nn.CertifiedBatch` this layer belongs to (set by the batch), or None
        self.batch: BatchedValues | None = None

    @property
    def mode(self) -> str:
        """The bound mode, one of :data:`LAYER_BOUNDS`; the layers' public ``bound`` reads and sets this."""
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        # validated at every assignment: a layer's refusal and its forward read this one value
        self._mode = check_choice("bound", value, LAYER_BOUNDS)
        self._cache.reset()

    def reset(self) -> None:
        """Drop the cache (only frees memory: a stale cache can never be used)."""
        self._cache.reset()

    def training_state(self) -> dict[str, Any]:
        """What training carries outside the state dict: the ``"verified"`` margin (it sets the next guess) and counters."""
        return {
            "verified_margin": self.verified_margin,
            "verified_steps": self.verified_steps,
            "exact_fallbacks": self.exact_fallbacks,
        }

    def load_training_state(self, state: Mapping[str, Any], device: torch.device | None = None) -> None:
        """Restore :meth:`training_state` (a resumed :func:`~structnets.training.fit`; ``device`` is not used)."""
        self.verified_margin = float(state["verified_margin"])
        self.verified_steps = int(state["verified_steps"])
        self.exact_fallbacks = int(state["exact_fallbacks"])

    def is_certified(self, training: bool) -> bool:
        """Whether the bound a forward pass uses now is certified (not the training-mode power estimate)."""
        return not (self.mode == "power" and training and torch.is_grad_enabled())

    def squared(
        self, weight: torch.Tensor, power_vector: torch.Tensor, training: bool
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return (Q, the power vector to store next): Q float64, Q ≥ ‖W‖₂² unless uncertified.

        The uncertified case is ``"power"`` mode in training with gradients on: Q = σ̂², the
        power-iteration estimate (a lower bound, as in the paper's training).
        """
        if not self.is_certified(training):
            estimate, following = power_estimate(weight, power_vector)
            return estimate.to(torch.float64).square(), following
        # Inside torch.func.vmap a batched weight reports requires_grad=False even when autograd
        # will differentiate through it, so under a transform the differentiable bound is taken.
        if self.mode != "power" and torch.is_grad_enabled() and (weight.requires_grad or _is_transformed(weight)):
            # "verified" only in training (eval passes use the exact bound, as the certificate does)
            if self.mode == "verified" and training and not _is_transformed(weight):
                verified, following, retried = verified_single_square(weight, power_vector, self.verified_margin)
                if verified is not None:
                    self.verified_steps += 1
                    if retried:  # the first guess was low: widen the margin as a failed test does
                        self.verified_margin = min(VERIFIED_MARGIN_MAX, 2.0 * self.verified_margin)
                    else:
                        self.verified_margin = max(VERIFIED_MARGIN, 0.95 * self.verified_margin)
                    return verified, following
                self.exact_fallbacks += 1
                self.verified_margin = min(VERIFIED_MARGIN_MAX, 2.0 * self.verified_margin)
                # the estimate lagged behind σ₁: restart the vector at the top singular vector
                return squared_norm_bound(weight, "exact"), _top_vector_by_gram(weight.detach())
            return squared_norm_bound(weight, certificate_method(self.mode)), power_vector
        return self.certified_squared(weight), power_vector

    def take_batched(
        self, weight: torch.Tensor, training: bool, kind: str, matrix: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor, bool] | None:
        """The value this layer's :class:`~structnets.nn.CertifiedBatch` computed for ``weight`` now, or None.

        ``kind`` is ``"tau"`` (a gradient-step layer's τ) or ``"norm"`` (a norm bound B). Only in
        a training forward with gradients on; None means: compute the bound here (no batch, or the
        batch's value is missing, used, or was computed for other content). Otherwise (value, next
        power vector, False), or with ``matrix=True`` possibly (the applied matrix −τ·W or fl(V/s)
        formed for this content, next power vector, True): :meth:`CertifiedBatch.take`.
        """
        batch = self.batch
        if batch is None or not training or not torch.is_grad_enabled():
            return None
        return batch.take(self, weight, kind, matrix)

    def own(
        self, weight: torch.Tensor, power_vector: torch.Tensor, training: bool
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(B in ``weight``'s dtype rounded up, the next power vector), computed here (no batch)."""
        square, following = self.squared(weight, power_vector, training)
        return sqrt_round_up(square, weight.dtype), following

    def __call__(
        self, weight: torch.Tensor, power_vector: torch.Tensor, training: bool
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return (B in ``weight``'s dtype rounded up, the power vector to store next)."""
        batched = self.take_batched(weight, training, "norm")
        if batched is not None:
            return batched[0], batched[1]
        return self.own(weight, power_vector, training)

    def certified_squared(self, weight: torch.Tensor) -> torch.Tensor:
        """The certified float64 Q ≥ ‖W‖₂² (no gradient), recomputed whenever the weight's content changed."""
        method = certificate_method(self.mode)
        return self._cache.get(weight, lambda w: squared_norm_bound(w, method))

    def certified(self, weight: torch.Tensor) -> torch.Tensor:
        """The certified bound B ≥ ‖W‖₂ in ``weight``'s dtype, rounded up (no gradient)."""
        return sqrt_round_up(self.certified_squared(weight), weight.dtype)


__all__ = ["BoundModeMixin", "CertifiedBound", "ContentCache"]
