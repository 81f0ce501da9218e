"""Certified ℓ₂ robustness of a trained classifier: certified radii and certified accuracy.

If f is L-Lipschitz in ℓ₂ and the margin m(x) = f_y(x) − max_{j≠y} f_j(x) of a correctly
classified point is positive, no perturbation δ with ‖δ‖₂ < m(x)/(√2·L) changes the prediction:
each difference f_y − f_j is √2·L-Lipschitz (Tsuzuku, Sato, Sugiyama, *Lipschitz-Margin
Training*, NeurIPS 2018, Prop. 1). For one output (binary, class 1 iff f > 0) the radius is
|f(x)|/L. :func:`certified_radii` gives these radii; :func:`certify` evaluates a trained model:
clean accuracy, certified accuracy at given radii (:func:`~structnets.analysis.certified_accuracy`)
and the certified and measured Lipschitz bounds they rest on. These are the measurements of the
1-Lipschitz ResNet experiments (Murari, Furuya, Schönlieb, NeurIPS 2025; ``docs/design.md``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from .._validation import check_int, check_real
from .lipschitz import _real_array, certified_accuracy, lipschitz_lower_bound, lipschitz_upper_bound

#: Rows evaluated per forward pass in :func:`certify` (bounds memory; the result does not depend on it).
EVAL_CHUNK = 4096


def certified_radii(
    logits: torch.Tensor | np.ndarray, labels: torch.Tensor | np.ndarray, lipschitz: float = 1.0
) -> torch.Tensor:
    """Per-point certified ℓ₂ radius of an L-Lipschitz classifier's predictions.

    Multiclass (k ≥ 2 logits): r(x) = (f_y(x) − max_{j≠y} f_j(x)) / (√2·L) when that margin is
    positive, else 0 (Tsuzuku et al. 2018, Prop. 1). One logit (class 1 iff f > 0): r(x) = |f(x)|/L
    when the sign is right, else 0. The prediction at x is constant on the open ball of radius
    r(x), so the certified accuracy at ε > 0 is the fraction of points with r(x) ≥ ε (equal to
    :func:`~structnets.analysis.certified_accuracy` up to the rounding of one division).

    Args:
        logits: (n, k), (n, 1) or (n,) finite outputs of the model.
        labels: (n,) class indices (0/1 for one logit).
        lipschitz: L > 0, a certified upper bound of the model's ℓ₂ Lipschitz constant.

    Returns:
        (n,) float64 tensor of radii ≥ 0 (0 for misclassified points and ties).

    Raises:
        ValueError: ``lipschitz`` ≤ 0 or not finite; shapes, labels or logits as in
            :func:`~structnets.analysis.certified_accuracy`.
    """
    lipschitz = check_real("lipschitz", lipschitz, low=0.0, low_open=True)
    z, y = _logits_and_labels(logits, labels)
    if z.dim() == 1:
        signed = torch.where(y == 1, z, -z)
        return torch.where(signed > 0, signed / lipschitz, torch.zeros_like(signed))
    true = z.gather(1, y[:, None])[:, 0]
    others = z.scatter(1, y[:, None], -math.inf).max(dim=1).values
    margin = true - others
    return torch.where(margin > 0, margin / (math.sqrt(2.0) * lipschitz), torch.zeros_like(margin))


def _logits_and_labels(
    logits: torch.Tensor | np.ndarray, labels: torch.Tensor | np.ndarray
) -> tuple[torch.Tensor, torch.Tensor]:
    """Validated float64 logits ((n, k) with k ≥ 2, or (n,)) and int64 labels, as certified_accuracy checks them."""
    # certified_accuracy validates everything (shapes, finiteness, label range) with named errors.
    certified_accuracy(logits, labels, 0.0)
    z = _real_array(logits, "logits").to(torch.float64)
    y = _real_array(labels, "labels").long()
    if z.dim() == 2 and z.shape[1] == 1:
        z = z[:, 0]
    return z, y.to(z.device)


def certify(
    model: nn.Module,
    X_test: torch.Tensor,
    y_test: torch.Tensor,
    radii: Sequence[float],
    *,
    ascent_steps: int,
    probe: int = 256,
    lipschitz: float | None = None,
) -> dict[str, float]:
    """Accuracy, certified accuracy at ``radii`` and Lipschitz bounds of a trained model (in eval mode).

    Certified accuracy at radius ε counts the points correct with margin ≥ √2·L·ε (Tsuzuku et al.
    2018, Prop. 1). L is ``lipschitz`` when given, else the model's computed certified upper bound
    (:func:`~structnets.analysis.lipschitz_upper_bound`; ≤ 1 for the constrained 1-Lipschitz
    ResNets of Murari, Furuya, Schönlieb, NeurIPS 2025). When that computed bound exceeds 1 (an
    unconstrained model, not certified 1-Lipschitz), a ``UserWarning`` says which L is used, so the
    certified accuracy stays a guarantee. The measured lower bound
    (:func:`~structnets.analysis.lipschitz_lower_bound`: Jacobian norms at the first ``probe`` test
    rows and ``ascent_steps`` steps of gradient ascent on ‖f(x) − f(y)‖/‖x − y‖ from
    min(64, probe) pairs, step 0.01) is reported beside it.

    Args:
        model: an ``nn.Module`` (n, d) → (n, k); it is put in eval mode.
        X_test: (n, d) float tensor on the model's device; y_test: (n,) int64 labels.
        radii: ℓ₂ radii ε, each > 0.
        ascent_steps: gradient-ascent steps of the measured lower bound (≥ 0).
        probe: test rows used by the lower bound (≥ 1).
        lipschitz: L > 0 to certify with, or None for the computed upper bound.

    Returns:
        ``accuracy``, ``lipschitz_upper``, ``lipschitz_lower``, ``lipschitz_used`` and
        ``certified_{ε:g}`` for every ε (fractions in [0, 1] and floats).

    Raises:
        TypeError: ``model`` is not an ``nn.Module``.
        ValueError: an ε ≤ 0 (naming ``radii``), ``lipschitz`` ≤ 0, ``ascent_steps`` < 0 or
            ``probe`` < 1.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be an nn.Module, got {type(model).__name__}")
    if isinstance(radii, (str, bytes)) or not isinstance(radii, Sequence):
        raise TypeError(f"`radii` must be a sequence of positive reals, got {radii!r}")
    for radius in radii:
        check_real("radii", radius, low=0.0, low_open=True)
    ascent_steps = check_int("ascent_steps", ascent_steps, low=0)
    probe = check_int("probe", probe, low=1)
    if lipschitz is not None:
        lipschitz = check_real("lipschitz", lipschitz, low=0.0, low_open=True)
    model.eval()
    with torch.no_grad():
        logits = torch.cat([model(X_test[i : i + EVAL_CHUNK]) for i in range(0, len(X_test), EVAL_CHUNK)])
    upper = lipschitz_upper_bound(model)
    lower = lipschitz_lower_bound(model, X_test[:probe], steps=ascent_steps, pairs=min(64, probe), lr=0.01)
    if lipschitz is None:
        lipschitz = max(upper, 1e-12)
        if upper > 1.0:
            warnings.warn(
                f"model is not certified 1-Lipschitz: certified accuracy uses its computed upper bound "
                f"L = {upper:.4g} (pass `lipschitz` to choose another certified L)",
                UserWarning,
                stacklevel=2,
            )
    row = {
        "accuracy": certified_accuracy(logits, y_test, 0.0),
        "lipschitz_upper": upper,
        "lipschitz_lower": lower,
        "lipschitz_used": lipschitz,
    }
    for radius in radii:
        row[f"certified_{radius:g}"] = certified_accuracy(logits, y_test, float(radius), lipschitz=lipschitz)
    return row


__all__ = ["EVAL_CHUNK", "certified_radii", "certify"]
