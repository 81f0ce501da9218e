"""Multi-head attention with separate, replaceable q/k/v/out projections: ``LowRankMultiheadAttention``.

``nn.MultiheadAttention`` keeps its input projections packed in ``in_proj_weight`` (3E × E) and
reads ``out_proj.weight`` directly, so neither can be swapped for a factorised layer. This module
computes the same map,

    MHA(q, k, v) = W_o · concat_h softmax((W_q^h q)(W_k^h k)ᵀ / √d_h + M) (W_v^h v) + b_o,

with the four projections as child modules (``q_proj``, ``k_proj``, ``v_proj``, ``out_proj``), each
an ``nn.Linear`` or any module of the same shape map (``structnets.nn.LowRankLinear``). It takes
the same arguments as ``nn.MultiheadAttention.forward`` (masks, ``need_weights``, ``is_causal``,
``batch_first``, unbatched input) and returns the same outputs (Vaswani et al., NeurIPS 2017).

torch's fused fast path (``torch._native_multi_head_attention`` and the fused encoder layer) takes
dense packed weights only, so this module reports ``_qkv_same_embed_dim = False``, which is how
``nn.TransformerEncoderLayer`` decides to call the module instead of the fused kernel: the
factorised projections are then actually used. ``in_proj_weight`` / ``in_proj_bias`` are
read-only dense views (computed) for code that inspects them.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .._validation import check_bool, check_fits_in_memory, check_int, check_real, itemsize_of


class LowRankMultiheadAttention(nn.Module):
    """Multi-head attention whose four projections are child modules (see the module docstring).

    Args:
        embed_dim: E, the query and output size.
        num_heads: H; E must be divisible by H.
        dropout: attention-weight dropout probability in training mode.
        bias: whether the projections have biases.
        kdim, vdim: key and value sizes (default E).
        batch_first: inputs are (N, L, E) instead of (L, N, E).
        device, dtype: where to allocate parameters.

    Attributes:
        q_proj, k_proj, v_proj, out_proj: the projections (``nn.Linear`` at construction).

    Shape: as ``nn.MultiheadAttention``.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.embed_dim = check_int("embed_dim", embed_dim, low=1)
        self.num_heads = check_int("num_heads", num_heads, low=1)
        if self.embed_dim % self.num_heads:
            raise ValueError(f"`embed_dim`={embed_dim} must be divisible by `num_heads`={num_heads}")
        self.kdim = check_int("kdim", kdim, low=1) if kdim is not None else self.embed_dim
        self.vdim = check_int("vdim", vdim, low=1) if vdim is not None else self.embed_dim
        self.dropout = check_real("dropout", dropout, low=0.0, high=1.0)
        bias = check_bool("bias", bias)
        self.batch_first = check_bool("batch_first", batch_first)
        self.head_dim = self.embed_dim // self.num_heads
        e = self.embed_dim
        check_fits_in_memory(
            f"`embed_dim`={e}, `kdim`={self.kdim}, `vdim`={self.vdim}",
            e * (e + self.kdim + self.vdim + e) + (4 * e if bias else 0),
            itemsize=itemsize_of(dtype),
            what="parameters",
        )
        factory: dict[str, Any] = {"device": device, "dtype": dtype}
        self.q_proj: nn.Module = nn.Linear(self.embed_dim, self.embed_dim, bias=bias, **factory)
        self.k_proj: nn.Module = nn.Linear(self.kdim, self.embed_dim, bias=bias, **factory)
        self.v_proj: nn.Module = nn.Linear(self.vdim, self.embed_dim, bias=bias, **factory)
        self.out_proj: nn.Module = nn.Linear(self.embed_dim, self.embed_dim, bias=bias, **factory)

    # nn.TransformerEncoderLayer reads this to choose torch's fused kernel, which takes dense packed
    # weights: False makes it call this module, so the projections' factorisation is used.
    _qkv_same_embed_dim = False

    @property
    def in_proj_weight(self) -> torch.Tensor:
        """The packed dense (3E × E) input projection [W_q; W_k; W_v] (computed; needs kdim = vdim = E)."""
        return torch.cat([_dense(self.q_proj), _dense(self.k_proj), _dense(self.v_proj)])

    @property
    def in_proj_bias(self) -> torch.Tensor | None:
        """The packed (3E,) input bias, or None."""
        biases = [_affine(p)[1] for p in (self.q_proj, self.k_proj, self.v_proj)]
        if any(b is None for b in biases):
            return None
        return torch.cat(biases)  # type: ignore[arg-type]

    @classmethod
    @torch.no_grad()
    def from_attention(cls, attention: nn.MultiheadAttention) -> LowRankMultiheadAttention:
        """The same attention with unpacked ``nn.Linear`` projections: equal outputs to rounding.

        Args:
            attention: an ``nn.MultiheadAttention`` without ``add_bias_kv`` / ``add_zero_attn``.

        Returns:
            a new module on ``attention``'s device and dtype, in its train/eval mode, with
            ``requires_grad`` as on its parameters.
        """
        if not isinstance(attention, nn.MultiheadAttention):
            raise TypeError(f"`attention` must be a torch.nn.MultiheadAttention, got {type(attention).__name__}")
        if attention.bias_k is not None or attention.add_zero_attn:
            raise ValueError("`attention` with add_bias_kv=True or add_zero_attn=True is not supported")
        reference = attention.out_proj.weight
        bias = attention.in_proj_bias is not None
        new = cls(
            attention.embed_dim, attention.num_heads, attention.dropout, bias, attention.kdim, attention.vdim,
            attention.batch_first, device=reference.device, dtype=reference.dtype,
        )  # fmt: skip
        e = attention.embed_dim
        if attention._qkv_same_embed_dim:
            weights = attention.in_proj_weight.split(e)
        else:
            weights = (attention.q_proj_weight, attention.k_proj_weight, attention.v_proj_weight)
        biases = attention.in_proj_bias.split(e) if bias else (None, None, None)
        projections = [p for p in (new.q_proj, new.k_proj, new.v_proj, new.out_proj) if isinstance(p, nn.Linear)]
        for proj, weight, b in zip(
            projections, (*weights, attention.out_proj.weight), (*biases, attention.out_proj.bias)
        ):
            proj.weight.copy_(weight)
            if proj.bias is not None:
                proj.bias.copy_(b) if b is not None else proj.bias.zero_()
        new.requires_grad_(reference.requires_grad)
        new.train(attention.training)
        return new

    @torch.no_grad()
    def to_multihead_attention(self) -> nn.MultiheadAttention:
        """A plain ``nn.MultiheadAttention`` with the dense weights of the four projections (same outputs)."""
        reference = _dense(self.out_proj)
        bias = self.in_proj_bias is not None
        mha = nn.MultiheadAttention(
            self.embed_dim, self.num_heads, self.dropout, bias=bias, kdim=self.kdim, vdim=self.vdim,
            batch_first=self.batch_first, device=reference.device, dtype=reference.dtype,
        )  # fmt: skip
        if mha._qkv_same_embed_dim:
            mha.in_proj_weight.copy_(self.in_proj_weight)
        else:
            mha.q_proj_weight.copy_(_dense(self.q_proj))
            mha.k_proj_weight.copy_(_dense(self.k_proj))
            mha.v_proj_weight.copy_(_dense(self.v_proj))
        if bias:
            mha.in_proj_bias.copy_(self.in_proj_bias)  # type: ignore[arg-type]
        mha.out_proj.weight.copy_(reference)
        out_bias = _affine(self.out_proj)[1]
        if out_bias is not None:
            mha.out_proj.bias.copy_(out_bias)
        mha.train(self.training)
        return mha

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
        need_weights: bool = True,
        attn_mask: torch.Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attention as ``nn.MultiheadAttention.forward`` (same arguments, outputs and mask conventions).

        Masks: a boolean ``attn_mask`` (L, S) or (N·H, L, S) / ``key_padding_mask`` (N, S) marks the
        positions **not** attended (True); a floating one is added to the scores. ``is_causal`` is a
        hint that ``attn_mask`` is the causal mask, as in torch; without ``attn_mask`` it applies
        the causal mask itself.

        Returns:
            ``(output, weights)``: output (L, N, E) ((N, L, E) with ``batch_first``; (L, E)
            unbatched), weights (N, L, S) averaged over heads, (N, H, L, S) with
            ``average_attn_weights=False``, or None with ``need_weights=False``; in training mode
            with dropout the weights after dropout, as torch returns them.
        """
        batched = query.dim() == 3
        if batched and self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        if not batched:
            query, key, value = (t.unsqueeze(1) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        length, batch, _ = query.shape
        source = key.shape[0]
        heads, head_dim = self.num_heads, self.head_dim
        q = self.q_proj(query).reshape(length, batch * heads, head_dim).transpose(0, 1)
        k = self.k_proj(key).reshape(source, batch * heads, head_dim).transpose(0, 1)
        v = self.v_proj(value).reshape(source, batch * heads, head_dim).transpose(0, 1)
        mask = self._additive_mask(attn_mask, key_padding_mask, is_causal, length, source, batch, q.dtype, q.device)
        q, k, v = (t.reshape(batch, heads, -1, head_dim) for t in (q, k, v))
        dropout = self.dropout if self.training else 0.0
        weights: torch.Tensor | None = None
        if need_weights:
            scores = (q * (1.0 / math.sqrt(head_dim))) @ k.transpose(-2, -1)
            if mask is not None:
                scores = scores + mask
            weights = scores.softmax(dim=-1)
            if dropout > 0:  # torch returns the dropped-out weights, the ones multiplied with v
                weights = F.dropout(weights, p=dropout)
            context = weights @ v
            if average_attn_weights:
                weights = weights.mean(dim=1)
            if not batched:
                weights = weights.squeeze(0)
        else:
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)
        context = context.permute(2, 0, 1, 3).reshape(length, batch, self.embed_dim)
        output = self.out_proj(context)
        if not batched:
            output = output.squeeze(1)
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, weights

    def _additive_mask(
        self,
        attn_mask: torch.Tensor | None,
        key_padding_mask: torch.Tensor | None,
        is_causal: bool,
        length: int,
        source: int,
        batch: int,
        dtype: torch.dtype,
        device: torch.device,
    ) -> torch.Tensor | None:
        """attn_mask and key_padding_mask merged into one float mask (N, H, L, S) or (L, S), or None."""
        if attn_mask is None and is_causal:
            attn_mask = torch.ones(length, source, dtype=torch.bool, device=device).triu(1)
        mask: torch.Tensor | None = None
        # Shapes checked as torch does: a transposed mask with as many entries would reshape silently.
        if attn_mask is not None:
            shapes = ((length, source), (batch * self.num_heads, length, source))
            if tuple(attn_mask.shape) not in shapes:
                raise ValueError(
                    f"`attn_mask` must have shape {shapes[0]} or {shapes[1]}, got {tuple(attn_mask.shape)}"
                )
            mask = _as_float("attn_mask", attn_mask, dtype)
            if mask.dim() == 3:
                mask = mask.reshape(batch, self.num_heads, length, source)
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (batch, source):
                raise ValueError(
                    f"`key_padding_mask` must have shape {(batch, source)}, got {tuple(key_padding_mask.shape)}"
                )
            padding = _as_float("key_padding_mask", key_padding_mask, dtype).reshape(batch, 1, 1, source)
            mask = padding if mask is None else mask + padding
        return mask

    def extra_repr(self) -> str:
        return (
            f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout}, "
            f"kdim={self.kdim}, vdim={self.vdim}, batch_first={self.batch_first}"
        )


def _as_float(name: str, mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    if not (mask.dtype == torch.bool or mask.is_floating_point()):  # torch refuses these too
        raise TypeError(f"`{name}` must be bool or floating, got {mask.dtype}")
    if mask.dtype == torch.bool:
        return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))
    return mask.to(dtype)


def _dense(module: nn.Module) -> torch.Tensor:
    """The (out × in) matrix of a projection (see :func:`_affine`)."""
    return _affine(module)[0]


def _affine(module: nn.Module) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(W, b) of a projection x ↦ W x + b: ``to_dense()`` of a structured layer, else ``.weight``.

    An ``nn.Sequential`` of such maps (``structnets.export`` makes one of a ``LowRankLinear``)
    composes: W₂(W₁x + b₁) + b₂ = W₂W₁x + (W₂b₁ + b₂).
    """
    if isinstance(module, nn.Sequential):
        weight: torch.Tensor | None = None
        bias: torch.Tensor | None = None
        for part in module:
            w, b = _affine(part)
            weight = w if weight is None else w @ weight
            bias = b if bias is None else (w @ bias if b is None else w @ bias + b)
        if weight is None:
            raise TypeError("projection is an empty nn.Sequential")
        return weight, bias
    to_dense = getattr(module, "to_dense", None)
    result = to_dense() if callable(to_dense) else getattr(module, "weight", None)
    if not isinstance(result, torch.Tensor):
        raise TypeError(f"projection {type(module).__name__} has neither to_dense() nor a weight")
    bias = getattr(module, "bias", None)
    return result, bias if isinstance(bias, torch.Tensor) else None
