"""Low-rank linear map x ↦ U(Vx) + b (Li et al., ICML 2025, Sec. 3: the bias-free linear layer)."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from .._validation import check_bool, check_fits_in_memory, check_int, itemsize_of


class LowRankLinear(nn.Module):
    """Affine map with a rank-``rank`` weight: ``y = U (V x) + b``.

    This is exactly ``Linear(in_features → rank, bias=False)`` followed by
    ``Linear(rank → out_features, bias=bias)``: the bias-free linear layer of width H = ``rank``
    that the low-rank Swish paper inserts between two nonlinear layers. It costs
    ``rank·(in+out)`` multiply-adds per sample instead of ``in·out``.

    Args:
        in_features: input size n_in.
        out_features: output size n_out.
        rank: inner width H, an int in [1, min(in_features, out_features)].
        bias: whether to add a learnable bias b of shape (out_features,).
        device, dtype: where to allocate parameters.

    Attributes:
        V: (rank, in_features) down-projection, no bias.
        U: (out_features, rank) up-projection.
        bias: (out_features,) or None.

    Shape: ``(*, in_features)`` → ``(*, out_features)``.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        rank: int,
        bias: bool = True,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.in_features = check_int("in_features", in_features, low=1)
        self.out_features = check_int("out_features", out_features, low=1)
        self.rank = check_int("rank", rank, low=1)
        if self.rank > min(self.in_features, self.out_features):
            raise ValueError(
                "`rank` must be an int in [1, min(in_features, out_features)="
                f"{min(self.in_features, self.out_features)}], got {self.rank}"
            )
        bias = check_bool("bias", bias)
        check_fits_in_memory(
            f"`in_features`={self.in_features}, `out_features`={self.out_features}, `rank`={self.rank}",
            self.rank * (self.in_features + self.out_features) + self.out_features,
            itemsize=itemsize_of(dtype),
            what="parameters",
        )
        factory: dict[str, Any] = {"device": device, "dtype": dtype}
        self.V = nn.Parameter(torch.empty(self.rank, self.in_features, **factory))
        self.U = nn.Parameter(torch.empty(self.out_features, self.rank, **factory))
        if bias:
            self.bias = nn.Parameter(torch.empty(self.out_features, **factory))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Initialise each factor as ``nn.Linear`` would initialise the two-layer composition."""
        nn.init.kaiming_uniform_(self.V, a=math.sqrt(5))
        nn.init.kaiming_uniform_(self.U, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(self.rank)
            nn.init.uniform_(self.bias, -bound, bound)

    #: Below this rank the rank-wide intermediate is computed transposed (see ``forward``).
    #: Measured on a 2-core AVX-512 CPU with MKL (benchmarks/README.md); an instance may override it.
    transpose_below_rank: int = 256

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        """``U (V x) + b`` on the last dimension of ``input`` (shape ``(*, in_features)``).

        Two GEMMs on a 2-D view of the input; the second adds the bias in place (``addmm``), as
        ``nn.Linear`` does. For a small rank (< ``transpose_below_rank``) the intermediate is
        formed transposed, ``Hᵀ = V Xᵀ`` of shape ``(rank, rows)``: its contiguous dimension is
        then the long row dimension instead of the short ``rank``, which lets MKL vectorise and
        split the first GEMM across threads along the rows (5-19% faster at n = 256, rank 85;
        1-4% slower at rank 341, hence the threshold). Autograd's matmul backward keeps these
        layouts, so the gradients come out contiguous either way.
        """
        if not isinstance(input, torch.Tensor):
            raise TypeError(f"`input` must be a torch.Tensor, got {type(input).__name__}")
        if input.dim() == 0 or input.shape[-1] != self.in_features:
            raise ValueError(f"`input` must have shape (*, in_features={self.in_features}), got {tuple(input.shape)}")
        rows = input.reshape(-1, self.in_features)
        if self.rank < self.transpose_below_rank:
            hidden = self.V.mm(rows.t()).t()  # (rows, rank), a transposed view of Hᵀ
        else:
            hidden = rows.mm(self.V.t())
        if self.bias is None:
            out = hidden.mm(self.U.t())
        else:
            out = torch.addmm(self.bias, hidden, self.U.t())
        return out.view(*input.shape[:-1], self.out_features)

    def to_dense(self) -> torch.Tensor:
        """Return the dense (out_features, in_features) weight ``U V``."""
        return self.U @ self.V

    @property
    def weight(self) -> torch.Tensor:
        """The dense weight ``U V`` (computed, read-only), for code written for ``nn.Linear``.

        ``nn.TransformerEncoderLayer`` reads ``linear1.weight`` to decide on (and to feed) its fused
        eval-mode kernel; with this property a compressed encoder layer runs wherever the dense one
        ran, with the same outputs to rounding.
        """
        return self.to_dense()

    @torch.no_grad()
    def export(self) -> nn.Linear:
        """Return a plain ``nn.Linear`` with weight ``U V`` and the same bias (the same outputs).

        ``export()`` is the one name every structnets layer converts to plain torch layers by
        (:func:`structnets.export` calls it); the copy shares no storage with this layer. The
        outputs agree to rounding: the dense product sums in another order than ``U (V x)``.
        """
        linear = nn.Linear(
            self.in_features,
            self.out_features,
            bias=self.bias is not None,
            device=self.U.device,
            dtype=self.U.dtype,
        )
        linear.weight.copy_(self.to_dense())
        if self.bias is not None:
            linear.bias.copy_(self.bias)
        linear.train(self.training)
        return linear

    def to_linear(self) -> nn.Linear:
        """Alias of :meth:`export` (kept: it is public API)."""
        return self.export()

    @classmethod
    def from_linear(cls, linear: nn.Linear, rank: int) -> LowRankLinear:
        """Best rank-``rank`` approximation of ``linear`` by truncated SVD.

        With W = P Σ Qᵀ, sets U = P_r Σ_r^{1/2} and V = Σ_r^{1/2} Q_rᵀ, so U V is the
        Eckart–Young optimum: ‖W − UV‖_F² = Σ_{i>r} σ_i² and ‖W − UV‖₂ = σ_{r+1}.
        The SVD is computed in float64 and the factors cast to the layer's dtype, so a float32
        layer at full rank reconstructs W to float32 rounding. The bias is copied unchanged; the
        new parameters are leaves with ``requires_grad`` as on ``linear.weight``.

        Args:
            linear: an ``nn.Linear`` (weight (out_features, in_features)).
            rank: r, an int in [1, min(in_features, out_features)].

        Returns:
            a new ``LowRankLinear`` on the weight's device and dtype.
        """
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"`linear` must be a torch.nn.Linear, got {type(linear).__name__}")
        weight = linear.weight.detach()
        if not bool(torch.isfinite(weight).all()):
            raise ValueError("`linear` has non-finite weights (nan or inf); they have no SVD")
        layer = cls(
            linear.in_features,
            linear.out_features,
            rank,
            bias=linear.bias is not None,
            device=weight.device,
            dtype=weight.dtype,
        )
        left, singular, right_t = torch.linalg.svd(_svd_dtype(weight), full_matrices=False)
        root = singular[: layer.rank].sqrt()
        with torch.no_grad():
            layer.U.copy_(left[:, : layer.rank] * root)
            layer.V.copy_(root[:, None] * right_t[: layer.rank])
            if linear.bias is not None:
                layer.bias.copy_(linear.bias.detach())
        layer.requires_grad_(linear.weight.requires_grad)
        return layer

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"rank={self.rank}, bias={self.bias is not None}"
        )


def _svd_dtype(weight: torch.Tensor) -> torch.Tensor:
    """``weight`` in float64 (complex128 for complex), where LAPACK's SVD is accurate to ~1e-16."""
    return weight.to(torch.complex128 if weight.is_complex() else torch.float64)
