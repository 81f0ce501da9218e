"""1-Lipschitz residual layer Φ(x) = x − τ Wᵀσ(Wx + b) (Murari, Furuya, Schönlieb, NeurIPS 2025)."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from .._validation import check_bool, check_fits_in_memory, check_int, itemsize_of
from ..functional import (
    certified_step,
    round_operand,
    spectral_norm_bound,
    sqrt_round_up,
    squared_norm_bound,
    top_right_singular_vector,
)
from ._checkpoint import CertifiedCheckpointMixin
from ._parametrized import one_read
from ._spectral import BoundModeMixin, CertifiedBound, store_power_vector
from ._step import ValidatedStep


def _up(value: float) -> float:
    """One step towards +∞: ≥ the exact result of the correctly rounded operation that gave ``value``."""
    return math.nextafter(value, math.inf) if math.isfinite(value) else value


def gradient_step_operand_bound(weight: torch.Tensor, tau: torch.Tensor, operand_dtype: torch.dtype | None) -> float:
    """Certified ℓ₂ Lipschitz constant of x ↦ x − Cᵀσ(Bx + b) with the operands an autocast region uses.

    Under ``torch.autocast`` the forward ``x + σ(linear(x, W, b)) @ (W·(−τ))`` multiplies
    B = rnd(W) and C = −rnd(W·(−τ)) (rnd: rounding to ``operand_dtype``), no longer the same
    matrix, so the Jacobian I − CᵀDB (D = diag(σ') ∈ [0, 1]) is not symmetric. With E = C − τB,

        ‖I − CᵀDB‖₂ ≤ ‖I − τBᵀDB‖₂ + ‖EᵀDB‖₂ ≤ max(1, τ‖B‖₂² − 1) + ‖E‖₂‖B‖₂,

    since τBᵀDB is positive semi-definite with norm ≤ τ‖B‖₂². Every norm is a certified float64
    bound (:func:`~structnets.functional.squared_norm_bound`); τ·B is exact in float64 (≤ 24 + 11
    significant bits), and the float64 subtraction's rounding of E is covered by a factor
    1 + 2u√r + 10⁻¹⁵ (u = 2⁻⁵³, r = min(h, d)). Every float operation is rounded up.

    Args:
        weight: (h, d) W as stored.
        tau: 0-d τ in W's dtype, as the forward uses it.
        operand_dtype: the autocast dtype (float16 or bfloat16); None: B = W, C = τW, E = 0, the
            bound max(1, τ‖W‖₂² − 1) of the stored operands (1 when τ‖W‖₂² ≤ 2).

    Returns:
        a float ≥ the Lipschitz constant of the layer with those operands (exact arithmetic).
    """
    w = weight.detach()
    b = round_operand(w, operand_dtype).to(torch.float64)
    t = float(tau.detach().to(torch.float64))
    square = float(squared_norm_bound(b, "exact"))
    first = max(1.0, _up(_up(t * square) - 1.0))
    if operand_dtype is None:
        return first
    c = (-round_operand(w * -tau.detach(), operand_dtype)).to(torch.float64)
    error = c - t * b
    rank = min(w.shape)
    slack = _up(1.0 + _up(2.0 * 2.0**-53 * math.sqrt(rank)) + 1e-15)
    error_norm = _up(float(spectral_norm_bound(error, "exact")) * slack)
    b_norm = float(sqrt_round_up(squared_norm_bound(b, "exact"), torch.float64))
    return _up(first + _up(error_norm * b_norm))


class ResidualExport(nn.Module):
    """Plain-torch residual ``x + body(x)``: what :meth:`GradientStepResidual.export` returns.

    Args:
        body: a module mapping ``(*, features)`` to ``(*, features)``.
    """

    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        if not isinstance(body, nn.Module):
            raise TypeError(f"`body` must be a torch.nn.Module, got {body!r:.80} ({type(body).__name__})")
        self.body = body

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return input + self.body(input)


class GradientStepResidual(BoundModeMixin, ValidatedStep, CertifiedCheckpointMixin, nn.Module):
    """Explicit Euler step of a negative gradient flow: ``Φ(x) = x − τ Wᵀ ReLU(W x + b)``.

    Φ is the gradient step x − τ∇f(x) on the convex potential f(x) = Σᵢ Γ(wᵢᵀx + bᵢ), Γ' = ReLU,
    whose gradient is ‖W‖₂²-Lipschitz; so Φ is 1-Lipschitz in ℓ₂ whenever 0 ≤ τ ≤ 2/‖W‖₂²
    (its Jacobian I − τ WᵀDW, D = diag(σ'), has eigenvalues in [1 − τ‖W‖₂², 1] ⊂ [−1, 1]).
    This is the residual layer of Murari, Furuya, Schönlieb, *Approximation theory for 1-Lipschitz
    ResNets* (NeurIPS 2025, arXiv 2505.12003), and of CPL (Meunier et al., ICML 2022) at τ = 2/‖W‖².

    The step is τ = s / B², where s ∈ [0, 2] is ``step`` (learnable if ``learnable_step``, then
    s = 2·sigmoid(θ) ∈ (0, 2)) and B ≥ ‖W‖₂ is a *certified* upper bound
    (:func:`structnets.functional.spectral_norm_bound`), never a power-iteration estimate, which
    can undershoot. With ``bound="exact"`` (default) every forward pass is certified. With
    ``bound="power"`` training-mode passes use the paper's cheap persistent power-iteration
    estimate (one step per call; uncertified while training), and every eval-mode pass uses the
    exact certified bound, recomputed whenever the weight's *content* has changed (a cache
    checked with ``torch.equal``, so fused optimizers and ``.data`` edits cannot make it stale),
    so the deployed layer is 1-Lipschitz in fact.

    What is certified: exact arithmetic on the stored W, b and τ. τ is formed in float64 and
    rounded down in the weight's dtype, so τ·‖W‖₂² ≤ s ≤ 2 holds exactly in float64, float32,
    float16 and bfloat16. Floating-point evaluation adds a rounding error of at most order
    depth × unit round-off × ‖x‖ (measured by ``benchmarks/forward_rounding.py``).

    Args:
        features: input and output size d.
        hidden: number of rows h of W (the hidden width), ≥ 1.
        bias: whether to learn b of shape (h,).
        step: s in [0, 2] (in (0, 2) when learnable); τ = s/B². s = 2 is the largest certified step
            and the one the exact max/min representation max{x, y} = x + σ(y − x) needs.
        learnable_step: learn s through θ with s = 2·sigmoid(θ).
        bound: ``"exact"``, ``"gram"``, ``"frobenius"`` (certified at every call), ``"verified"``
            (certified at every call: in training the warm power estimate with a 1–8 % margin,
            checked by one Cholesky test, the exact bound when the test fails; ≈ 2× cheaper per
            training step than ``"exact"``, ``benchmarks/lipschitz_constraint.py``) or ``"power"``
            (certified in eval mode only).
        device, dtype: where to allocate parameters.

    Attributes:
        weight: (hidden, features) W.
        bias: (hidden,) b or None.
        step_logit: 0-d θ (only when ``learnable_step``).
        power_vector: (features,) persistent power-iteration vector (buffer).

    Shape: ``(*, features)`` → ``(*, features)``.
    """

    power_vector: torch.Tensor  # a registered buffer, replaced by the power step (see _bound)

    def __init__(
        self,
        features: int,
        hidden: int,
        bias: bool = True,
        step: float = 2.0,
        learnable_step: bool = False,
        bound: str = "exact",
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.features = check_int("features", features, low=1)
        self.hidden = check_int("hidden", hidden, low=1)
        check_fits_in_memory(
            f"`features`={self.features}, `hidden`={self.hidden}",
            self.hidden * self.features + self.hidden + 2 * self.features,
            itemsize=itemsize_of(dtype),
            what="parameters",
        )
        bias = check_bool("bias", bias)
        self.learnable_step = check_bool("learnable_step", learnable_step)
        self.step = step
        self._bound = CertifiedBound(bound)
        factory: dict[str, Any] = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.empty(self.hidden, self.features, **factory))
        if bias:
            self.bias = nn.Parameter(torch.empty(self.hidden, **factory))
        else:
            self.register_parameter("bias", None)
        if learnable_step:
            self.step_logit = nn.Parameter(torch.empty((), **factory))
        else:
            self.register_parameter("step_logit", None)
        self.register_buffer("power_vector", torch.empty(self.features, **factory))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Initialise W, b like ``nn.Linear(features, hidden)``, θ so that s = ``step``."""
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(self.features)
            nn.init.uniform_(self.bias, -bound, bound)
        with torch.no_grad():
            if self.step_logit is not None:
                self.step_logit.fill_(math.log(self.step / (2.0 - self.step)))
            # Start the persistent power vector at the top right-singular vector (one SVD, as
            # torch's spectral_norm runs 15 power steps at set-up): the training-time estimate and
            # its gradient are then σ₁'s from the first step, and one step per call tracks it.
            self.power_vector.copy_(top_right_singular_vector(self.weight.detach()))
        self._bound.reset()

    # ----------------------------------------------------------------------------------------

    def step_size(self) -> torch.Tensor:
        """Return s ∈ [0, 2] as a 0-d tensor (differentiable when learnable)."""
        if self.step_logit is not None:
            return 2.0 * torch.sigmoid(self.step_logit)
        return torch.tensor(self.step, dtype=self.weight.dtype, device=self.weight.device)

    def weight_norm_bound(self) -> torch.Tensor:
        """Return B ≥ ‖W‖₂ as used by the current mode (certified unless ``power`` in training)."""
        bound, following = self._bound(self.weight, self.power_vector, self.training)
        self._store_power_vector(following)
        return bound

    def _store_power_vector(self, following: torch.Tensor) -> None:
        store_power_vector(self, following)

    def tau(self) -> torch.Tensor:
        """Return the step τ = s / Q in the weight's dtype, Q ≥ ‖W‖₂² (0 when W = 0).

        τ is formed in float64 and rounded towards 0 (:func:`~structnets.functional.tau_round_down`),
        so the stored τ and W satisfy τ·‖W‖₂² ≤ s ≤ 2 in exact arithmetic, in every dtype. A
        non-learnable s is taken as the exact float ``step``, not its dtype rounding.
        """
        batched = self._bound.take_batched(self.weight, self.training, "tau")
        if batched is not None:  # a CertifiedBatch's τ, computed for this weight content
            tau, following, _ = batched
            self._store_power_vector(following)
            return tau
        return self._own_tau()

    def _own_tau(self) -> torch.Tensor:
        """τ computed here (no batch's value): :meth:`tau`'s own path."""
        square, following = self._bound.squared(self.weight, self.power_vector, self.training)
        self._store_power_vector(following)
        step = self.step_size() if self.step_logit is not None else self.step
        # unchecked: tau_round_down's Q ≥ 0 check syncs the host and breaks torch.func.vmap
        return certified_step(step, square, self.weight.dtype)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if not isinstance(input, torch.Tensor):
            raise TypeError(f"`input` must be a torch.Tensor, got {type(input).__name__}")
        if input.dim() == 0 or input.shape[-1] != self.features:
            raise ValueError(
                f"`input` must have last dimension features={self.features}, got shape {tuple(input.shape)}"
            )
        # one W per call under a random parametrization (DropConnect), so that τ·‖W‖₂² ≤ s holds for
        # the W both products use
        with one_read(self):
            hidden = torch.relu(nn.functional.linear(input, self.weight, self.bias))
            # Scale the (hidden, features) matrix, not the (batch, features) activations: fewer flops.
            return input + hidden @ self._negated_step_weight()

    def _negated_step_weight(self) -> torch.Tensor:
        """W·(−τ), the matrix of the second product: a CertifiedBatch's where it formed it for this content.

        The batch's compiled path forms the same products (the same bits) for every member at once and
        writes their backward in one call (issue 26); a subclass that redefines :meth:`tau` is served τ.
        """
        weight = self.weight
        if type(self).tau is GradientStepResidual.tau:
            batched = self._bound.take_batched(weight, self.training, "tau", matrix=True)
            if batched is not None:
                tensor, following, is_matrix = batched
                self._store_power_vector(following)
                return tensor if is_matrix else weight * -tensor
            return weight * -self._own_tau()
        return weight * -self.tau()

    @torch.no_grad()
    def lipschitz_bound(self, *, operand_dtype: torch.dtype | None = None) -> float:
        """Certified ℓ₂ Lipschitz constant of the layer as it computes now: 1 (τ‖W‖₂² ≤ 2).

        The certificate is for exact arithmetic on the stored W, b and τ (see ``docs/lipschitz.md``
        for what floating-point evaluation adds). Everything that enters the forward is checked
        now, not only at construction: W, b and θ finite, s in its range.

        Args:
            operand_dtype: certify the forward under ``torch.autocast`` to this dtype (float16 or
                bfloat16): :func:`gradient_step_operand_bound` of the rounded operands (> 1 by
                the rounding, e.g. ≈ 1.02 in bfloat16).

        Raises:
            ValueError: in ``bound="power"`` training mode, where forward passes use the power
                estimate (uncertified; call ``eval()`` first), or when W, b or θ have non-finite
                entries, or s lies outside its range.
        """
        if self.bound == "power" and self.training:
            raise ValueError(
                "GradientStepResidual with bound='power' is in training mode, where its step uses an "
                "uncertified power-iteration estimate; call .eval() before asking for its certificate"
            )
        self._check_certifiable()
        if operand_dtype is None or self.weight.dtype == torch.float64:
            return 1.0
        return gradient_step_operand_bound(self.weight, self.tau(), operand_dtype)

    def _check_certifiable(self) -> None:
        """Refuse (ValueError) when something the forward uses is non-finite or out of range."""
        for name in ("weight", "bias", "step_logit"):
            tensor = getattr(self, name)
            if tensor is not None and not bool(torch.isfinite(tensor.detach()).all()):
                raise ValueError(f"GradientStepResidual `{name}` has non-finite entries: the layer computes NaN")
        if self.step_logit is None:
            self._check_step()  # also catches a `_step` set behind the setter

    @torch.no_grad()
    def export(self) -> ResidualExport:
        """Return plain torch layers with identical outputs: ``x + Linear(−τWᵀ)(ReLU(Linear(W, b)(x)))``.

        τ is frozen at its certified eval-mode value.
        """
        was_training = self.training
        self.eval()
        try:
            tau = self.tau().detach()
        finally:
            self.train(was_training)
        factory: dict[str, Any] = {"device": self.weight.device, "dtype": self.weight.dtype}
        inner = nn.Linear(self.features, self.hidden, bias=self.bias is not None, **factory)
        outer = nn.Linear(self.hidden, self.features, bias=False, **factory)
        inner.weight.copy_(self.weight)
        if self.bias is not None:
            inner.bias.copy_(self.bias)
        outer.weight.copy_(-(tau * self.weight.T))
        return ResidualExport(nn.Sequential(inner, nn.ReLU(), outer))

    def extra_repr(self) -> str:
        return (
            f"features={self.features}, hidden={self.hidden}, bias={self.bias is not None}, "
            f"step={self.step}, learnable_step={self.learnable_step}, bound={self.bound!r}"
        )


__all__ = ["GradientStepResidual", "ResidualExport", "gradient_step_operand_bound"]
