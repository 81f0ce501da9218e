"""The PAC-Bayes spectral/Frobenius margin bound of Neyshabur, Bhojanapalli and Srebro (ICLR 2018)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ._bound_setting import _layers, _setting, _smallest_n, _spectra, _target
from .spectral_bound import _exp


@dataclass(frozen=True)
class PacBayesBound:
    """PAC-Bayes spectral/Frobenius margin bound (Neyshabur et al. 2018), every term listed.

    ``total = empirical_risk + complexity``, ``complexity = 4 √((kl + log_term)/(n − 1))``.

    Attributes:
        n, margin, delta, input_norm, lipschitz: the setting.
        empirical_risk: R̂_γ.
        depth: d, the number of layer matrices.
        width: h, the largest layer dimension (inputs included).
        spectral_product: ``Π_i ρ_i ‖W_i‖_2`` (ρ for the d−1 hidden activations).
        stable_rank_sum: ``Σ_i ‖W_i‖_F² / ‖W_i‖_2²``.
        kl: ``(42² e² / 2) · d² B² h ln(4dh) · spectral_product² · stable_rank_sum / γ²``.
        log_term: ``ln(6 d n² / δ)`` (Lemma 1's ``ln(6n/δ)`` with δ split over ≤ d·n grid
            values of the layer-norm scale β̃).
        complexity: the PAC-Bayes term.
        total: the bound.
        sample_target, sample_complexity: the smallest n at which ``complexity`` would be
            ≤ ``sample_target`` (same norms, margin).
    """

    n: int
    margin: float
    delta: float
    input_norm: float
    lipschitz: float
    empirical_risk: float
    depth: int
    width: int
    spectral_product: float
    stable_rank_sum: float
    kl: float
    log_term: float
    complexity: float
    total: float
    sample_target: float
    sample_complexity: float


def pac_bayes_bound(
    matrices: Sequence[torch.Tensor],
    *,
    n: int,
    margin: float,
    input_norm: float,
    empirical_risk: float = 0.0,
    delta: float = 0.05,
    lipschitz: float = 1.0,
    sample_target: float = 0.1,
    spectra: Sequence[torch.Tensor] | None = None,
) -> PacBayesBound:
    """Neyshabur, Bhojanapalli and Srebro (ICLR 2018), Thm 1, with the constants of its proof.

    With probability ≥ 1 − δ,
    ``P(error) ≤ R̂_γ + 4 √((KL + ln(6 d n²/δ)) / (n − 1))``,
    ``KL = (42² e²/2) · d² B² h ln(4dh) Π_i ‖W_i‖_2² · Σ_i ‖W_i‖_F²/‖W_i‖_2² / γ²``:
    Lemma 1 (``L_0 ≤ L̂_γ + 4 √((KL(Q‖P) + ln(6n/δ))/(n−1))`` when the perturbed network moves by
    < γ/4) with Gaussian prior and posterior of variance
    ``σ = γ / (42 d B √(h ln(4dh)) β̃^{d−1})``, ``β̃^{d−1} ≥ β^{d−1}/e``, after rebalancing the
    layers so that all have spectral norm β = (Π ‖W_i‖_2)^{1/d} (exact for ReLU, ρ = 1; for
    other activations we multiply the product by ρ^{d−1}, an extension the paper does not
    state). Sample complexity Õ(d² h · stable_rank_sum) = Õ(W² L²) at full rank.

    Args:
        matrices, n, margin, input_norm, empirical_risk, delta, lipschitz, spectra: as in
            :func:`parameter_count_bound`.

    Returns:
        a :class:`PacBayesBound`.
    """
    setting = _setting(n, margin, input_norm, empirical_risk, delta, lipschitz)
    layers = _layers(matrices)
    sigmas = _spectra(layers, spectra)
    spectral = [float(sigma[0]) for sigma in sigmas]  # ‖A‖_2, as matrix_norm(ord=2)
    if min(spectral) == 0.0:
        raise ValueError("a layer matrix is zero: the stable rank ‖W‖_F²/‖W‖_2² is undefined")
    # Σσ_j²/σ_1² from the spectrum, scale free: ‖W‖_F² of entries ~1e-200 underflows to 0 (1e200: inf)
    stable = sum(float((sigma / sigma[0]).square().sum()) for sigma in sigmas)
    depth = len(layers)
    width = max(max(a.shape) for a in layers)
    # in logarithms: B², Π‖W_i‖_2² and γ² can each leave float64 (1e200**2 raised OverflowError, a
    # margin of 1e-200 squared to 0 a ZeroDivisionError) while the KL term, invariant under
    # W_d → cW_d, γ → cγ, does not
    log_product = (depth - 1) * math.log(setting.lipschitz) + sum(math.log(s) for s in spectral)
    log_kl = (
        math.log(42.0**2 * math.e**2 / 2.0)
        + 2.0 * math.log(depth)
        + 2.0 * math.log(setting.input_norm)
        + math.log(width)
        + math.log(math.log(4 * depth * width))
        + 2.0 * log_product
        + math.log(stable)
        - 2.0 * math.log(setting.margin)
    )
    kl = _exp(log_kl)
    product = _exp(log_product)
    log_term = math.log(6.0 * depth * setting.n**2 / setting.delta)
    complexity = 4.0 * math.sqrt((kl + log_term) / (setting.n - 1))
    target = _target(sample_target)
    needed = _smallest_n(
        lambda m: 4.0 * math.sqrt((kl + math.log(6.0 * depth * m**2 / setting.delta)) / (m - 1)), target
    )
    return PacBayesBound(
        n=setting.n,
        margin=setting.margin,
        delta=setting.delta,
        input_norm=setting.input_norm,
        lipschitz=setting.lipschitz,
        empirical_risk=setting.empirical_risk,
        depth=depth,
        width=width,
        spectral_product=product,
        stable_rank_sum=stable,
        kl=kl,
        log_term=log_term,
        complexity=complexity,
        total=setting.empirical_risk + complexity,
        sample_target=target,
        sample_complexity=needed,
    )
