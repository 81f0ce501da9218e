"""The spectrally-normalised margin bound of Bartlett, Foster and Telgarsky (NeurIPS 2017)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .._validation import check_real
from ._bound_setting import _confidence, _layers, _Setting, _setting, _smallest_n, _spectra, _target
from .spectral import _as_matrix


def _exp(log_value: float) -> float:
    """``exp(log_value)``, +inf past float64's range (``math.exp`` raises OverflowError there)."""
    try:
        return math.exp(log_value)
    except OverflowError:  # log_value above log(max float) ≈ 709.78
        return math.inf


def _default_data_norm(setting: _Setting) -> float:
    """``input_norm · √n``, the bound on ‖X‖_F used when ``data_norm`` is not given."""
    data_norm = setting.input_norm * math.sqrt(setting.n)
    if not math.isfinite(data_norm):
        raise ValueError(
            f"`input_norm` · √`n` = {setting.input_norm:g} · √{setting.n} overflows float64 (the default "
            "`data_norm`); pass a smaller scale or `data_norm`"
        )
    return data_norm


@dataclass(frozen=True)
class SpectralBound:
    """Spectrally-normalised margin bound (Bartlett, Foster and Telgarsky 2017), every term listed.

    ``total = empirical_risk + small_term + complexity + confidence``.

    Attributes:
        n, margin, delta, lipschitz: the setting.
        empirical_risk: R̂_γ.
        small_term: 8/n.
        data_norm: ``‖X‖_F = √(Σ_i ‖x_i‖_2²)``.
        width: W, the largest layer dimension (inputs included).
        spectral_norms: ``s_i = ‖A_i‖_2``.
        norm_ratios: ``‖A_iᵀ − M_iᵀ‖_{2,1} / s_i`` (sum of the ℓ2 norms of the rows of A_i − M_i).
        spectral_product: ``Π_i ρ_i s_i`` (ρ_i = ρ for the L−1 hidden activations, 1 at the output).
        spectral_complexity: ``R_A = Π_i ρ_i s_i · (Σ_i (‖A_iᵀ − M_iᵀ‖_{2,1}/s_i)^{2/3})^{3/2}``.
        complexity: ``72 ‖X‖_F ln(2W) ln(n) R_A / (γ n)``.
        confidence: ``3 √(ln(2/δ)/(2n))``.
        total: the bound.
        sample_target, sample_complexity: the smallest n at which ``complexity`` would be
            ≤ ``sample_target`` with ``‖X‖_F = (data_norm/√n_actual) · √n`` (same norms, margin).
    """

    n: int
    margin: float
    delta: float
    lipschitz: float
    empirical_risk: float
    small_term: float
    data_norm: float
    width: int
    spectral_norms: tuple[float, ...]
    norm_ratios: tuple[float, ...]
    spectral_product: float
    spectral_complexity: float
    complexity: float
    confidence: float
    total: float
    sample_target: float
    sample_complexity: float


def spectral_bound(
    matrices: Sequence[torch.Tensor],
    *,
    n: int,
    margin: float,
    input_norm: float,
    data_norm: float | None = None,
    empirical_risk: float = 0.0,
    delta: float = 0.05,
    lipschitz: float = 1.0,
    references: Sequence[torch.Tensor] | None = None,
    sample_target: float = 0.1,
    spectra: Sequence[torch.Tensor] | None = None,
) -> SpectralBound:
    """Bartlett, Foster and Telgarsky (NeurIPS 2017), Lemma A.8 (Thm 1.1 with norms fixed).

    With probability ≥ 1 − δ,
    ``P(error) ≤ R̂_γ + 8/n + 72 ‖X‖_F ln(2W) ln(n) R_A / (γ n) + 3 √(ln(2/δ)/(2n))``,
    ``R_A = (Π_i ρ_i ‖A_i‖_2) (Σ_i (‖A_iᵀ − M_iᵀ‖_{2,1} / ‖A_i‖_2)^{2/3})^{3/2}``.
    Theorem 1.1's union bound over the norms (adding O(√(Σ ln ln)/n)-type terms) is dropped. With
    ‖X‖_F ≤ B√n the complexity term is Õ(B R_A / (γ √n)); for width-W layers
    (‖Aᵀ‖_{2,1}/‖A‖_2)² ≤ W · rank(A), so the sample complexity is Õ(W² L³) at full rank.

    Args:
        matrices, n, margin, input_norm, empirical_risk, delta, lipschitz, spectra: as in
            :func:`parameter_count_bound`.
        data_norm: ``‖X‖_F`` of the training inputs; defaults to ``input_norm · √n`` (its bound).
        references: reference matrices M_i of the same shapes (e.g. the initialisation), or None
            for zero.

    Returns:
        a :class:`SpectralBound`.
    """
    setting = _setting(n, margin, input_norm, empirical_risk, delta, lipschitz)
    layers = _layers(matrices)
    if references is None:
        refs = [torch.zeros_like(a) for a in layers]
    else:
        if (
            isinstance(references, torch.Tensor)
            or not isinstance(references, Sequence)
            or len(references) != len(layers)
        ):
            raise ValueError(
                f"`references` must hold {len(layers)} matrices like `matrices`, got {type(references).__name__}"
            )
        refs = []
        for index, (a, ref) in enumerate(zip(layers, references)):
            ref = _as_matrix(ref, f"references[{index}]").to(torch.float64)
            if ref.shape != a.shape:
                raise ValueError(f"`references[{index}]` must have shape {tuple(a.shape)}, got {tuple(ref.shape)}")
            refs.append(ref)
    if data_norm is None:
        data_norm = _default_data_norm(setting)
    data_norm = check_real("data_norm", data_norm, low=0.0, low_open=True)
    spectral = [float(sigma[0]) for sigma in _spectra(layers, spectra)]  # ‖A‖_2, as matrix_norm(ord=2)
    if min(spectral) == 0.0:
        raise ValueError("a layer matrix is zero: the spectral bound's norm ratios ‖A‖_{2,1}/‖A‖_2 are undefined")
    # each row divided by s before its norm: squares of entries ~1e-200 (or 1e200) leave float64
    ratios = [float(((a - ref) / s).norm(dim=1).sum()) for a, ref, s in zip(layers, refs, spectral)]
    depth = len(layers)
    # in logarithms: Π‖A_i‖_2, ‖X‖_F and γ can each leave float64 while the bound, invariant under
    # A_L → cA_L, γ → cγ (positive homogeneity), does not
    log_product = (depth - 1) * math.log(setting.lipschitz) + sum(math.log(s) for s in spectral)
    ratio_sum = sum(r ** (2.0 / 3.0) for r in ratios)
    log_r_a = log_product + 1.5 * math.log(ratio_sum) if ratio_sum > 0 else -math.inf
    width = max(max(a.shape) for a in layers)
    log_per_sample = (
        math.log(72.0)
        + math.log(data_norm)
        - 0.5 * math.log(setting.n)
        + math.log(math.log(2 * width))
        + log_r_a
        - math.log(setting.margin)
    )
    complexity = _exp(log_per_sample + math.log(math.log(setting.n)) - 0.5 * math.log(setting.n))
    small = 8.0 / setting.n
    confidence = _confidence(setting.n, setting.delta)
    target = _target(sample_target)
    needed = _smallest_n(lambda m: _exp(log_per_sample + math.log(math.log(m)) - 0.5 * math.log(m)), target)
    product, r_a = _exp(log_product), _exp(log_r_a)
    return SpectralBound(
        n=setting.n,
        margin=setting.margin,
        delta=setting.delta,
        lipschitz=setting.lipschitz,
        empirical_risk=setting.empirical_risk,
        small_term=small,
        data_norm=data_norm,
        width=width,
        spectral_norms=tuple(spectral),
        norm_ratios=tuple(ratios),
        spectral_product=product,
        spectral_complexity=r_a,
        complexity=complexity,
        confidence=confidence,
        total=setting.empirical_risk + small + complexity + confidence,
        sample_target=target,
        sample_complexity=needed,
    )
