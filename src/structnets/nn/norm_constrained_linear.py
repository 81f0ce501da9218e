"""Affine map x ↦ A x + b with ‖A‖₂ ≤ 1 guaranteed (Murari, Furuya, Schönlieb, NeurIPS 2025, Sec. 5)."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from .._validation import check_bool, check_fits_in_memory, check_int, itemsize_of
from ..functional import division_scale, round_operand, spectral_norm_bound, top_right_singular_vector
from ._affine import linear_from_dense
from ._checkpoint import CertifiedCheckpointMixin
from ._parametrized import one_read, reads_agree
from ._spectral import BoundModeMixin, CertifiedBound, store_power_vector


class NormConstrainedLinear(BoundModeMixin, CertifiedCheckpointMixin, nn.Module):
    """Norm-constrained affine map ``y = A x + b`` with ``A = V / max(1, B(V))``, B(V) ≥ ‖V‖₂.

    The free parameter V is rescaled onto the spectral-norm unit ball only when it leaves it, so
    every V is admissible and ‖A‖₂ ≤ ‖V‖₂ / max(1, B(V)) ≤ 1 *for certain* (B is certified, see
    :func:`structnets.functional.spectral_norm_bound`). These are the norm-constrained linear
    maps inserted between residual blocks in the fixed-width theorem of *Approximation theory for
    1-Lipschitz ResNets* (arXiv 2505.12003), and the lift and head of :func:`lipschitz_resnet`.
    A checkpoint whose V breaks the constraint is therefore re-projected on use, never used as is;
    one with non-finite values is rejected with a ``ValueError``.

    Args:
        in_features: input size n.
        out_features: output size m.
        bias: whether to learn b of shape (m,).
        bound: how B is computed: ``"exact"`` (default), ``"gram"`` or ``"frobenius"`` (certified at
            every call), ``"verified"`` (certified at every call: in training a warm power estimate
            with a margin checked by one Cholesky test, see :class:`GradientStepResidual`), or ``"power"``: training-mode passes use a persistent power-iteration
            estimate (cheap, uncertified while training), eval-mode passes the exact certified bound.
        device, dtype: where to allocate parameters.

    Attributes:
        raw_weight: (out_features, in_features) free parameter V (the applied matrix is
            :meth:`to_dense`).
        bias: (out_features,) or None.
        power_vector: (in_features,) persistent power-iteration vector (buffer).

    Shape: ``(*, in_features)`` → ``(*, out_features)``.
    """

    power_vector: torch.Tensor  # a registered buffer, replaced by the power step (see _bound)

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        bound: str = "exact",
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.in_features = check_int("in_features", in_features, low=1)
        self.out_features = check_int("out_features", out_features, low=1)
        check_fits_in_memory(
            f"`in_features`={self.in_features}, `out_features`={self.out_features}",
            (self.in_features + 1) * self.out_features + self.in_features,
            itemsize=itemsize_of(dtype),
            what="parameters",
        )
        bias = check_bool("bias", bias)
        self._bound = CertifiedBound(bound)
        factory: dict[str, Any] = {"device": device, "dtype": dtype}
        self.raw_weight = nn.Parameter(torch.empty(self.out_features, self.in_features, **factory))
        if bias:
            self.bias = nn.Parameter(torch.empty(self.out_features, **factory))
        else:
            self.register_parameter("bias", None)
        self.register_buffer("power_vector", torch.empty(self.in_features, **factory))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Initialise V and b as ``nn.Linear`` does (then A = V / max(1, B(V)))."""
        nn.init.kaiming_uniform_(self.raw_weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(self.in_features)
            nn.init.uniform_(self.bias, -bound, bound)
        with torch.no_grad():
            # as in GradientStepResidual: the power estimate is σ₁'s from the first step
            self.power_vector.copy_(top_right_singular_vector(self.raw_weight.detach()))
        self._bound.reset()

    def _scale(self) -> torch.Tensor:
        """1 where B(V) ≤ 1, else fl(B(V)·f); B rounded up in V's dtype: certified, except ``power`` training passes.

        f ≥ 1 covers the rounding of the division V/s in V's dtype, so that the A the forward uses has
        ‖A‖₂ ≤ 1, not only V/s in exact arithmetic (:func:`~structnets.functional.division_scale`;
        f − 1 ≈ 6·10⁻⁷ for a float32 100 × 784 V).
        """
        bound, following = self._bound(self.raw_weight, self.power_vector, self.training)
        store_power_vector(self, following)
        return division_scale(bound, self.raw_weight)

    def to_dense(self) -> torch.Tensor:
        """Return the applied (out_features, in_features) matrix A = V / max(1, B(V)), ‖A‖₂ ≤ 1."""
        with one_read(self):  # a random parametrization of V: B must bound the V it divides
            weight = self.raw_weight
            if (
                self._bound.batch is not None
                and self.training
                and torch.is_grad_enabled()
                and type(self)._scale is NormConstrainedLinear._scale
            ):
                # a CertifiedBatch's A, formed for this content (the same bits: issue 26), or its B; else
                # (the batch asked once: asking again would count twice) the bound computed here
                batched = self._bound.take_batched(weight, self.training, "norm", matrix=True)
                if batched is not None:
                    tensor, following, is_matrix = batched
                    store_power_vector(self, following)
                    return tensor if is_matrix else weight / division_scale(tensor, weight)
                bound, following = self._bound.own(weight, self.power_vector, self.training)
                store_power_vector(self, following)
                return weight / division_scale(bound, weight)
            return weight / self._scale()

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if input.shape[-1] != self.in_features:
            raise ValueError(
                f"`input` must have last dimension in_features={self.in_features}, got shape {tuple(input.shape)}"
            )
        return nn.functional.linear(input, self.to_dense(), self.bias)

    @torch.no_grad()
    def lipschitz_bound(self, *, operand_dtype: torch.dtype | None = None) -> float:
        """Certified ℓ₂ Lipschitz constant of the layer as it computes now: min(1, B(V)) ≥ ‖A‖₂.

        For the A = fl(V/s) the forward uses (:meth:`_scale`): ‖A‖₂ ≤ min(1, B). Under a random
        parametrization of V (reads differ), 1: every draw's A has ‖A‖₂ ≤ 1.

        Args:
            operand_dtype: certify the forward under ``torch.autocast`` to this dtype: the
                certified norm of A rounded to it (may exceed 1 by the rounding).

        Raises:
            ValueError: in ``bound="power"`` training mode (uncertified; call ``eval()`` first), or
                when V or b has non-finite entries.
        """
        if self.bound == "power" and self.training:
            raise ValueError(
                "NormConstrainedLinear with bound='power' is in training mode, where its scale uses an "
                "uncertified power-iteration estimate; call .eval() before asking for its certificate"
            )
        for name in ("raw_weight", "bias"):
            tensor = getattr(self, name)
            if tensor is not None and not bool(torch.isfinite(tensor).all()):
                raise ValueError(f"NormConstrainedLinear `{name}` has non-finite entries: the layer computes NaN")
        if not reads_agree(self):
            # a random parametrization of V: the next forward draws another V, whose A = fl(V/s) still
            # has ‖A‖₂ ≤ 1 (division_scale); min(1, B) of this draw would say nothing about it
            return 1.0
        if operand_dtype is not None and self.raw_weight.dtype != torch.float64:
            applied = round_operand(self.to_dense(), operand_dtype).to(torch.float64)
            return float(spectral_norm_bound(applied, "exact"))
        # B may be +inf (float16 overflow): then A = 0 and the constant is min(1, inf) = 1.
        return min(1.0, float(self._bound.certified(self.raw_weight)))

    @torch.no_grad()
    def to_linear(self) -> nn.Linear:
        """Return an ``nn.Linear`` with weight A and the same bias (identical outputs)."""
        return linear_from_dense(self.to_dense(), self.bias)

    def export(self) -> nn.Linear:
        """Plain torch layer with identical outputs (same as :meth:`to_linear`)."""
        return self.to_linear()

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}, bound={self.bound!r}"
        )


__all__ = ["NormConstrainedLinear"]
