"""What every margin bound shares: the setting's checks, the layer chain, the confidence term.

Used by :mod:`structnets.analysis.covering_bounds`, :mod:`structnets.analysis.spectral_bound` and
:mod:`structnets.analysis.pac_bayes` (docs/bounds.md, Sec. 2)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

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
    if isinstance(p, bool) or not isinstance(p, int | float):
        raise TypeError(f"`{name}` must be a real number in [0, inf), got {p!r} ({type(p).__name__})")
    return check_real(name, p, low=0.0)
