"""Margin-based generalization bounds for feed-forward networks, each term listed.

For a classifier ``f(x) = A_L σ(A_{L−1} σ(⋯ σ(A_1 x)))`` with a ρ-Lipschitz activation σ,
σ(0) = 0 (ReLU: ρ = 1; SiLU/Swish: ρ ≈ 1.0998), inputs ``‖x‖_2 ≤ B``, n training samples, margin
γ > 0 and confidence 1 − δ, every calculator bounds the test error
``P(argmax_j f(x)_j ≠ y)`` by ``R̂_γ + complexity (+ confidence)``, where
``R̂_γ = (1/n) #{i : f(x_i)_{y_i} − max_{j≠y_i} f(x_i)_j ≤ γ}`` is the training margin loss.

* :func:`parameter_count_bound`: a covering bound whose log-covering number is the parameter
  count times a logarithm (the VC-style Õ(W²L²) sample complexity);
* :func:`spectral_bound`: Bartlett, Foster and Telgarsky, *Spectrally-normalized margin bounds for
  neural networks* (NeurIPS 2017), Lemma A.8 (the fixed-norm form of Thm 1.1);
* :func:`pac_bayes_bound`: Neyshabur, Bhojanapalli and Srebro, *A PAC-Bayesian approach to
  spectrally-normalized margin bounds for neural networks* (ICLR 2018), Thm 1 with the
  constants of its proof;
* :func:`rank_sparse_bound` / :func:`rank_sparse_bounds`: the Schatten-p family of Ledent, Alves
  and Lei, *Generalization Bounds for Rank-sparse Neural Networks* (NeurIPS 2025), derived from
  the covering argument they sketch (a rank-k head covered by counting its parameters, the tail
  beyond it truncated or covered by Maurey's norm-based empirical lemma, k chosen per layer and
  per scale, composed layer by layer through the Lipschitz product with the covering radius
  allocated over layers per scale); the derivation and every
  constant kept or dropped are in ``docs/bounds.md``.

Biases are not part of these bounds (as in the three papers): apply them to bias-free networks,
or read them as bounds for the network with biases removed. The bounds hold for the class with
the norms of the given matrices fixed in advance; the union bound that makes them hold
simultaneously for all norms (an extra O(√(Σ_i log log(·)/n)) term) is dropped, as stated in
each docstring. Every calculator computes in float64 and refuses empty, non-finite, non-2-D or
non-chaining matrices and out-of-range options with a ``ValueError``/``TypeError`` naming them.

The calculators live in one module per concept and are re-exported here: margins and the
margin γ (:mod:`~structnets.analysis.margins`), covering numbers
(:mod:`~structnets.analysis.covering`), Dudley's integral (:mod:`~structnets.analysis.dudley`),
the radius allocation (:mod:`~structnets.analysis.allocation`), the covering bounds
(:mod:`~structnets.analysis.covering_bounds`), the spectral bound
(:mod:`~structnets.analysis.spectral_bound`) and the PAC-Bayes bound
(:mod:`~structnets.analysis.pac_bayes`).
"""

from __future__ import annotations

from ._bound_setting import SWISH_LIPSCHITZ, layer_spectra
from .allocation import _allocate as _allocate  # private names kept at their old import path
from .covering import _tail_profile as _tail_profile
from .covering import schatten_ball_log_covering
from .covering_bounds import CoveringBound, parameter_count_bound, rank_sparse_bound, rank_sparse_bounds
from .dudley import dudley_entropy_bound
from .margins import margin_for_bounds, margin_loss, margins
from .pac_bayes import PacBayesBound, pac_bayes_bound
from .spectral_bound import SpectralBound, spectral_bound

__all__ = [
    "SWISH_LIPSCHITZ",
    "CoveringBound",
    "PacBayesBound",
    "SpectralBound",
    "dudley_entropy_bound",
    "layer_spectra",
    "margin_for_bounds",
    "margin_loss",
    "margins",
    "parameter_count_bound",
    "pac_bayes_bound",
    "rank_sparse_bound",
    "rank_sparse_bounds",
    "schatten_ball_log_covering",
    "spectral_bound",
]
