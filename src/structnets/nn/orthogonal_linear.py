"""Affine map x ↦ A x + b with A the (semi-)orthogonal polar factor of a free matrix, ‖A‖₂ ≤ 1 certified."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from .._validation import check_bool, check_fits_in_memory, check_int, itemsize_of
from ..functional import round_operand, spectral_norm_bound, sqrt_round_up, squared_norm_bound
from ._affine import linear_from_dense
from ._checkpoint import CertifiedCheckpointMixin
from ._spectral import ContentCache, _is_transformed


def polar_factor(weight: torch.Tensor) -> torch.Tensor:
    """Return the polar factor Q of ``weight`` in float64: all singular values of Q are 1.

    For a wide V (m ≤ n), Q = (V Vᵀ)^{−1/2} V (orthonormal rows); for a tall V, Q = V (VᵀV)^{−1/2}
    (orthonormal columns). If V = U Σ Wᵀ is a thin SVD, Q = U Wᵀ, the orthogonal matrix nearest to
    V (Higham, *Functions of Matrices*, 2008, Thm. 8.4). The inverse square root is taken from the
    eigendecomposition of the smaller Gram matrix (LAPACK ``syevd`` in float64); eigenvalues below
    10⁻¹² λ_max are clamped there, so a rank-deficient V gives singular values ≤ 1, never more
    than the certificate allows. Differentiable (and twice) through ``torch.linalg.eigh``, whose
    gradient is defined when the singular values of V are distinct (true with probability one for
    a random V, and kept by gradient training; a V with exactly repeated singular values, such as
    the identity, gives a non-finite gradient).

    Args:
        weight: (m, n) matrix V of any floating dtype.

    Returns:
        (m, n) float64 tensor Q.

    Raises:
        ValueError: ``weight`` has non-finite entries (where the eigen-solver fails on them).
    """
    v = weight.to(torch.float64)
    wide = v.shape[0] <= v.shape[1]
    gram = v @ v.T if wide else v.T @ v
    try:
        eigenvalues, vectors = torch.linalg.eigh(gram)
    except torch.linalg.LinAlgError:
        # LAPACK fails to converge on NaN/inf: say which input is wrong (free on the normal path)
        if not bool(torch.isfinite(v).all()):
            raise ValueError(
                f"`weight` (the free matrix V, shape {tuple(v.shape)}) has non-finite entries: it has no polar "
                "factor and the layer no certificate"
            ) from None
        raise
    floor = (eigenvalues[-1].detach() * 1e-12).clamp_min(torch.finfo(torch.float64).tiny)
    inverse_root = (vectors * eigenvalues.clamp_min(floor).rsqrt()) @ vectors.T
    return inverse_root @ v if wide else v @ inverse_root


def certified_orthogonal(weight: torch.Tensor) -> torch.Tensor:
    """Return A = c·Q, Q = :func:`polar_factor` (V), with ‖A‖₂ ≤ 1 certified on A's stored values.

    c = (1 − η) / max(1, B(Q)), B(Q) ≥ ‖Q‖₂ the certified float64 bound of
    :func:`structnets.functional.spectral_norm_bound`, η = 2·u·√r + 10⁻⁶ (u the unit round-off of
    ``weight``'s dtype, r = min(m, n)): rounding c·Q (computed in float64) to the dtype moves each
    entry by at most u relative, so ‖fl(cQ)‖₂ ≤ c‖Q‖₂ + u·c‖Q‖_F ≤ (1 − η)(1 + u√r) < 1
    (‖Q‖_F ≤ √r‖Q‖₂; the float64 product itself adds 2⁻⁵³ relative, inside the 10⁻⁶). c is taken
    without gradient: in exact arithmetic ‖Q‖₂ = 1 for every V, so its derivative is 0 and the
    gradient of A is c times the polar factor's.

    Args:
        weight: (m, n) matrix V.

    Returns:
        (m, n) tensor of ``weight``'s dtype.
    """
    q = polar_factor(weight)
    with torch.no_grad():
        rank = min(weight.shape)
        unit_roundoff = torch.finfo(weight.dtype).eps / 2.0
        eta = 2.0 * unit_roundoff * math.sqrt(rank) + 1e-6
        # squared_norm_bound, not spectral_norm_bound: no host-synchronising finiteness check on this
        # per-forward path (a non-finite V gives NaN here; lipschitz_bound refuses it by name).
        scale = (1.0 - eta) / sqrt_round_up(squared_norm_bound(q.detach(), "exact"), torch.float64).clamp_min(1.0)
    return (q * scale).to(weight.dtype)


def applied_orthogonal(module: nn.Module, weight: torch.Tensor) -> torch.Tensor:
    """:func:`certified_orthogonal` of ``weight`` for ``module``'s forward: reused while no gradient can reach it.

    Where gradients are off or V is frozen (evaluation, certification under ``no_grad``), the polar factor
    (a float64 eigendecomposition) is computed once per content of V (:class:`~._spectral.ContentCache`:
    ``torch.equal`` against a copy, so ``.data`` edits, ``load_state_dict`` and optimizer steps recompute
    it); with gradients on it is computed every call, as the gradient needs its graph. Only the forward
    uses it: the tensor it returns is not handed to users, who could edit a cached one in place.
    """
    # under torch.func transforms and torch.compile a weight may carry gradients without requires_grad
    if _is_transformed(weight) or (torch.is_grad_enabled() and weight.requires_grad):
        return certified_orthogonal(weight)
    cache = module.__dict__.get("_orthogonal_cache")
    if cache is None:  # created on first use: modules pickled before it existed load without it
        cache = module.__dict__["_orthogonal_cache"] = ContentCache()
    return cache.get(weight, certified_orthogonal)


class OrthogonalLinear(CertifiedCheckpointMixin, nn.Module):
    """Affine map ``y = A x + b`` with A = c·polar(V), (semi-)orthogonal and certified ‖A‖₂ ≤ 1.

    Unlike :class:`NormConstrainedLinear` (A = V / max(1, B(V)), which pins only the top singular
    value, so most directions of a 784 → 100 lift are shrunk), every singular value of A is
    1 − η (η ≈ 10⁻⁶): the map preserves the norm of every vector in its row space and of every
    backpropagated gradient (a *gradient-norm-preserving* layer, Anil, Lucas, Grosse, *Sorting out
    Lipschitz function approximation*, ICML 2019, who orthonormalise with Björck iterations; here
    the polar factor comes in one float64 eigendecomposition of the smaller Gram matrix, see
    :func:`polar_factor`). Orthogonality is only approximate in floating point; the certificate is
    exact: A is rescaled by the certified bound of the computed factor (:func:`certified_orthogonal`),
    and :meth:`lipschitz_bound` is the certified bound of the stored A itself.

    Args:
        in_features: input size n.
        out_features: output size m.
        bias: whether to learn b of shape (m,).
        device, dtype: where to allocate parameters.

    Attributes:
        raw_weight: (out_features, in_features) free parameter V (the applied matrix is
            :meth:`to_dense`).
        bias: (out_features,) or None.

    Shape: ``(*, in_features)`` → ``(*, out_features)``.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
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
        factory: dict[str, Any] = {"device": device, "dtype": dtype}
        self.raw_weight = nn.Parameter(torch.empty(self.out_features, self.in_features, **factory))
        if bias:
            self.bias = nn.Parameter(torch.empty(self.out_features, **factory))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Initialise V and b as ``nn.Linear`` does (random V: distinct singular values, A = polar(V))."""
        nn.init.kaiming_uniform_(self.raw_weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(self.in_features)
            nn.init.uniform_(self.bias, -bound, bound)

    def to_dense(self) -> torch.Tensor:
        """Return the applied (out_features, in_features) matrix A, ‖A‖₂ ≤ 1, all singular values ≈ 1."""
        return certified_orthogonal(self.raw_weight)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if input.shape[-1] != self.in_features:
            raise ValueError(
                f"`input` must have last dimension in_features={self.in_features}, got shape {tuple(input.shape)}"
            )
        return nn.functional.linear(input, applied_orthogonal(self, self.raw_weight), self.bias)

    @torch.no_grad()
    def lipschitz_bound(self, *, operand_dtype: torch.dtype | None = None) -> float:
        """Certified ℓ₂ Lipschitz constant: B(A) ≥ ‖A‖₂ on the stored applied matrix (≤ 1).

        Args:
            operand_dtype: certify the forward under ``torch.autocast`` to this dtype: B of A
                rounded to it (may exceed 1 by the rounding).

        Raises:
            ValueError: when V or b has non-finite entries (there is no certificate to give).
        """
        for name in ("raw_weight", "bias"):
            tensor = getattr(self, name)
            if tensor is not None and not bool(torch.isfinite(tensor).all()):
                raise ValueError(f"OrthogonalLinear `{name}` has non-finite values: no certificate")
        return float(spectral_norm_bound(round_operand(self.to_dense(), operand_dtype).to(torch.float64), "exact"))

    @torch.no_grad()
    def to_linear(self) -> nn.Linear:
        """Return an ``nn.Linear`` with weight A and the same bias (identical outputs)."""
        return linear_from_dense(self.to_dense(), self.bias)

    def export(self) -> nn.Linear:
        """Plain torch layer with identical outputs (same as :meth:`to_linear`)."""
        return self.to_linear()

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


__all__ = ["OrthogonalLinear", "applied_orthogonal", "certified_orthogonal", "polar_factor"]
