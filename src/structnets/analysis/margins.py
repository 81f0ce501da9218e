"""Multiclass margins, the training margin loss, and the margin γ at which bounds are evaluated."""

from __future__ import annotations

import numpy as np
import torch

from .._validation import check_real
from .spectral import _as_matrix


def margins(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Multiclass margins ``M(f(x), y) = f(x)_y − max_{j ≠ y} f(x)_j``.

    Bartlett et al. (2017), Sec. 2: the prediction is correct iff the margin is positive.

    Args:
        outputs: ``(N, k)`` scores, k ≥ 2.
        targets: ``(N,)`` integer class indices in [0, k).

    Returns:
        ``(N,)`` tensor of margins, in the outputs' dtype (float64 for integer outputs).
    """
    outputs = _as_matrix(outputs, "outputs")
    if outputs.ndim != 2 or outputs.shape[1] < 2:
        raise ValueError(f"`outputs` must be a 2-D (N, k) tensor with k >= 2 classes, got shape {tuple(outputs.shape)}")
    if not isinstance(targets, torch.Tensor) or targets.shape != outputs.shape[:1]:
        raise ValueError(
            f"`targets` must be a tensor of shape ({outputs.shape[0]},), one class index per row of `outputs`, got "
            f"{getattr(targets, 'shape', type(targets).__name__)}"
        )
    if targets.is_floating_point() or targets.is_complex():
        raise TypeError(f"`targets` must hold integer class indices, got dtype {targets.dtype}")
    targets = targets.to(torch.int64)
    k = outputs.shape[1]
    if bool(((targets < 0) | (targets >= k)).any()):
        raise ValueError(
            f"`targets` must be class indices in [0, {k}), got values in [{int(targets.min())}, {int(targets.max())}]"
        )
    true = outputs.gather(1, targets[:, None])[:, 0]
    others = outputs.scatter(1, targets[:, None], float("-inf"))
    return true - others.max(1).values


def margin_loss(margin_values: torch.Tensor, margin: float) -> float:
    """Training margin loss ``R̂_γ = (1/n) #{i : M_i ≤ γ}`` (an upper bound on the ramp loss).

    Args:
        margin_values: ``(n,)`` margins, e.g. from :func:`margins`.
        margin: γ > 0.

    Returns:
        a float in [0, 1].
    """
    margin = check_real("margin", margin, low=0.0, low_open=True)
    _check_margin_values(margin_values)
    return float((margin_values <= margin).double().mean())


def margin_for_bounds(margin_values: torch.Tensor, quantile: float, *, fallback: float = 1e-3) -> float:
    """The margin γ at which the margin bounds are evaluated: a quantile of the training margins.

    ``γ = Q_q(M)``, the q-quantile (linear interpolation, ``torch.quantile``) of the margins M;
    when that is ≤ 0 (more than a fraction q of the sample misclassified), ``γ = Q_q(M⁺)`` over
    the positive margins M⁺ only, and ``fallback`` when no margin is positive. Every bound of
    :mod:`structnets.analysis.bounds` needs γ > 0 and holds for any γ fixed before seeing the
    test data; the R̂_γ it pays is then ``margin_loss(M, γ) ≥ q`` (Bartlett et al. 2017, Sec. 2:
    the bounds trade R̂_γ against a complexity ∝ 1/γ).

    Args:
        margin_values: ``(n,)`` finite margins, e.g. from :func:`margins`.
        quantile: q in (0, 1).
        fallback: γ > 0 used when no margin is positive.

    Returns:
        γ > 0 as a float.
    """
    quantile = check_real("quantile", quantile, low=0.0, high=1.0, low_open=True, high_open=True)
    fallback = check_real("fallback", fallback, low=0.0, low_open=True)
    _check_margin_values(margin_values)
    # torch.quantile takes only float32/float64 (half and integer margins raised RuntimeError)
    if margin_values.dtype not in (torch.float32, torch.float64):
        margin_values = margin_values.to(torch.float64)
    gamma = _quantile(margin_values, quantile)
    if gamma <= 0:
        positive = margin_values[margin_values > 0]
        gamma = _quantile(positive, quantile) if positive.numel() else fallback
    return gamma


def _quantile(values: torch.Tensor, q: float) -> float:
    """``torch.quantile`` (linear interpolation), also past its 2^24-element limit (then NumPy's, the same rule)."""
    if values.numel() <= 2**24:
        return float(torch.quantile(values, q))
    return float(np.quantile(values.detach().cpu().double().numpy(), q))


def _check_margin_values(margin_values: torch.Tensor) -> None:
    if not isinstance(margin_values, torch.Tensor) or margin_values.ndim != 1 or margin_values.numel() == 0:
        raise ValueError(
            f"`margin_values` must be a non-empty 1-D tensor, got {getattr(margin_values, 'shape', type(margin_values).__name__)}"
        )
    if margin_values.is_complex():  # a cast to float64 would drop the imaginary parts silently
        raise TypeError(f"`margin_values` must be real, got dtype {margin_values.dtype}")
    if not bool(torch.isfinite(margin_values).all()):
        raise ValueError("`margin_values` must be finite, got NaN/Inf entries")
