"""Compress any model's matrices into low-rank (or DLoR) factorisations: :func:`compress`.

Rooms, one per concern:

* :mod:`.kinds`: the layer kinds factorised (``nn.Linear``, ``nn.Conv1d``/``nn.Conv2d``,
  transformers' ``Conv1D``, the projections of ``nn.MultiheadAttention``) as matrices on rows;
* :mod:`.calibration`: Gram matrices of the layers' inputs in one streaming pass and the whitened
  truncation Ŵ = [W S]_r S⁻¹ (SVD-LLM, Wang et al. 2024);
* :mod:`.allocation`: ranks from ``rank`` / ``ratio`` / ``energy`` per layer or a model-wide
  ``flops`` / ``params`` budget (greedy by error decrease per unit of cost);
* :mod:`.report`: :class:`LayerCompression` rows and the :class:`CompressionReport`;
* :mod:`.skeleton`: rebuild the factorised model from the dense one and ``report.plan()`` to load
  a compressed state dict; the safe globals of ``torch.load(weights_only=True)``;
* :mod:`.core`: :func:`compress` itself.

A trained dense layer W (out × in) becomes, with ``method="lowrank"``, U V (the truncated SVD
W_r, or the whitened truncation with calibration): r·(in + out) parameters instead of in·out
(the bias-free bottleneck of Li et al., ICML 2025); with ``method="dlor"`` (square layers),
αI + UVᵀ with the best α (Chen, Li, Kim, Lavaei, arXiv 2605.05659).
"""

from .core import METHODS, compress
from .report import CompressionReport, LayerCompression
from .skeleton import safe_globals, skeleton

__all__ = ["METHODS", "CompressionReport", "LayerCompression", "compress", "safe_globals", "skeleton"]
