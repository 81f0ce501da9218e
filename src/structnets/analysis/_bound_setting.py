"""What every margin bound shares: the setting's checks, the layer chain, the confidence term.

Used by :mod:`structnets.analysis.covering_bounds`, :mod:`structnets.analysis.spectral_bound` and
:mod:`structnets.analysis.pac_bayes` (docs/bounds.md, Sec. 2)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .._validation import check_int, check_real
from .spectral import _as_matrix

SWISH_LIPSCHITZ = 1.09984
"""An upper bound (rounded up) on sup_x |d/dx x·sigmoid(x)| = 1.0998393…, the Lipschitz constant
of SiLU (Swish with β = 1); pass it as ``lipschitz`` for Swish networks."""


@dataclass(frozen=True)
class _Setting:
    n: int
    margin: float
    input_norm: float
    empirical_risk: float
    delta: float
    lipschitz: float


def _setting(
    n: int, margin: float, input_norm: float, empirical_risk: float, delta: float, lipschitz: float
) -> _Setting:
    return _Setting(
        n=check_int("n", n, low=2),
        margin=check_real("margin", margin, low=0.0, low_open=True),
        input_norm=check_real("input_norm", input_norm, low=0.0, low_open=True),
        empirical_risk=check_real("empirical_risk", empirical_risk, low=0.0, high=1.0),
        delta=check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True),
        lipschitz=check_real("lipschitz", lipschitz, low=0.0, low_open=True),
    )


def _layers(matrices: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Validate a chain ``A_1 (m_1×d), A_2 (m_2×m_1), …`` and return float64 copies."""
    return [layer for layer, _ in _layers_with_tolerance(matrices)]


def _layers_with_tolerance(matrices: Sequence[torch.Tensor]) -> list[tuple[torch.Tensor, float]]:
    """Float64 layers, each with ``max(m, n) · eps`` of the dtype it came in (its rounding level)."""
    if isinstance(matrices, torch.Tensor) or not isinstance(matrices, Sequence):
        raise TypeError(f"`matrices` must be a sequence of 2-D tensors [A_1, ..., A_L], got {type(matrices).__name__}")
    if len(matrices) == 0:
        raise ValueError("`matrices` must hold at least one layer matrix, got an empty sequence")
    layers: list[tuple[torch.Tensor, float]] = []
    for index, matrix in enumerate(matrices):
        name = f"matrices[{index}]"
        matrix = _as_matrix(matrix, name)
        if matrix.ndim != 2:
            raise ValueError(f"`{name}` must be a 2-D (out, in) matrix, got shape {tuple(matrix.shape)}")
        if layers and matrix.shape[1] != layers[-1][0].shape[0]:
            raise ValueError(
                f"`{name}` has {matrix.shape[1]} input columns but `matrices[{index - 1}]` has "
                f"{layers[-1][0].shape[0]} output rows; layers must chain as A_L ⋯ A_1"
            )
        tolerance = max(matrix.shape) * torch.finfo(matrix.dtype).eps
        layers.append((matrix.to(torch.float64), tolerance))
    return layers


def layer_spectra(matrices: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """The singular values of each layer, as every bound calculator computes them.

    One float64 SVD per layer (``torch.linalg.svdvals`` of the float64 copy, descending). Pass the
    result as ``spectra=`` to :func:`~structnets.analysis.parameter_count_bound`,
    :func:`~structnets.analysis.rank_sparse_bounds`, :func:`~structnets.analysis.spectral_bound`,
    :func:`~structnets.analysis.pac_bayes_bound` and the others, so that several bounds of one
    network share these SVDs: the bounds are then the same numbers as without ``spectra``.

    Args:
        matrices: ``[A_1, …, A_L]``, chaining as in the bound calculators.

    Returns:
        L float64 tensors, σ(A_i) of length min(m_i, n_i), non-increasing.
    """
    return [torch.linalg.svdvals(layer) for layer, _ in _layers_with_tolerance(matrices)]


def _spectra(layers: Sequence[torch.Tensor], spectra: Sequence[torch.Tensor] | None) -> list[torch.Tensor]:
    """σ(A_i) of the float64 layers: computed, or ``spectra`` checked against them.

    A given spectrum must be float64, of length min(m_i, n_i), finite, ≥ 0 and non-increasing, its
    energy Σσ² must be ‖A_i‖_F² to 1e-8 relative, and σ₁ at least the largest row or column norm
    of A_i (a lower bound on ‖A_i‖_2, so that no spectrum makes a bound optimistic through a too
    small norm). These catch the singular values of another matrix in most cases, not all.
    """
    if spectra is None:
        return [torch.linalg.svdvals(a) for a in layers]
    if isinstance(spectra, torch.Tensor) or not isinstance(spectra, Sequence) or len(spectra) != len(layers):
        raise ValueError(
            f"`spectra` must be a sequence of {len(layers)} singular-value vectors, one per matrix (layer_spectra), "
            f"got {type(spectra).__name__}" + (f" of length {len(spectra)}" if isinstance(spectra, Sequence) else "")
        )
    checked = []
    for index, (a, sigma) in enumerate(zip(layers, spectra)):
        name = f"spectra[{index}]"
        length = min(a.shape)
        if not isinstance(sigma, torch.Tensor) or sigma.dtype != torch.float64 or tuple(sigma.shape) != (length,):
            got = f"{sigma.dtype} {tuple(sigma.shape)}" if isinstance(sigma, torch.Tensor) else type(sigma).__name__
            raise ValueError(f"`{name}` must be a float64 tensor of shape ({length},) (layer_spectra), got {got}")
        sigma = sigma.to(a.device)
        if not bool(torch.isfinite(sigma).all()) or bool((sigma < 0).any()) or bool((sigma[1:] > sigma[:-1]).any()):
            raise ValueError(f"`{name}` must be finite, non-negative and non-increasing singular values")
        # Both checks on A/s and σ/s, s = max|A|: unscaled, squares of layers near 1e-200 underflow to 0
        # (every spectrum, all zeros too, passed: an optimistic bound) and near 1e200 overflow to inf.
        scale = float(a.abs().max()) if a.numel() else 0.0
        if scale == 0.0:
            if bool((sigma != 0).any()):
                raise ValueError(f"`{name}` are not the singular values of `matrices[{index}]`, which is zero")
            checked.append(sigma)
            continue
        unit, sigma_unit = a / scale, sigma / scale
        energy, frobenius = float(sigma_unit.square().sum()), float(unit.square().sum())
        if abs(energy - frobenius) > 1e-8 * frobenius:
            raise ValueError(
                f"`{name}` are not the singular values of `matrices[{index}]`: Σσ² = {energy:.6g}·s² but ‖A‖_F² = "
                f"{frobenius:.6g}·s² (s = max|A| = {scale:.6g})"
            )
        # ‖A‖_2 is at least every row's and column's norm: a σ₁ below that would make every bound
        # optimistic (invalid); one above it only loosens them.
        floor = max(float(unit.norm(dim=0).max()), float(unit.norm(dim=1).max()))
        if float(sigma_unit[0]) < floor * (1 - 1e-10):
            raise ValueError(
                f"`{name}` are not the singular values of `matrices[{index}]`: σ₁ = {float(sigma[0]):.6g} is below "
                f"the largest row or column norm {floor * scale:.6g}, a lower bound on ‖A‖_2"
            )
        checked.append(sigma)
    return checked


def _target(sample_target: float) -> float:
    return check_real("sample_target", sample_target, low=0.0, high=8.0, low_open=True, high_open=True)


def _confidence(n: int, delta: float) -> float:
    return 3.0 * math.sqrt(math.log(2.0 / delta) / (2.0 * n))


def _smallest_n(complexity: Callable[[float], float], target: float) -> float:
    """Smallest real n ≥ 8 with ``complexity(n) ≤ target`` (complexity non-increasing for n ≥ 8)."""
    low, high = 8.0, 1e60
    if complexity(low) <= target:
        return low
    if complexity(high) > target:
        return math.inf
    lo, hi = math.log(low), math.log(high)
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if complexity(math.exp(mid)) <= target:
            hi = mid
        else:
            lo = mid
    return math.exp(hi)


def _exponent(p: float, name: str) -> float:
    # numbers.Real: NumPy scalars too (np.float32(0.5) was refused as not a real number)
    if isinstance(p, bool | np.bool_) or not isinstance(p, numbers.Real):
        raise TypeError(f"`{name}` must be a real number in [0, inf), got {p!r} ({type(p).__name__})")
    return check_real(name, float(p), low=0.0)
