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
from fractions import Fraction

import numpy as np
import torch
from torch import nn

from .._float32_precision import ieee_float32
from .._validation import MAX_STEPS, check_int, check_real
from .attack import pgd_l2
from .lipschitz import (
    _margins_round_down,
    _real_array,
    certified_accuracy,
    lipschitz_lower_bound,
    lipschitz_upper_bound,
)

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
    :func:`~structnets.analysis.certified_accuracy` up to the rounding of one division). Each radius
    is rounded towards 0 (≤ the exact quotient of the exact margin, checked with rationals), never
    to nearest, which could certify a radius half an ulp beyond the true one.

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
        margin, factor = torch.where(y == 1, z, -z), 1
    else:
        margin, factor = _margins_round_down(z, y), 2
    radius = torch.where(margin > 0, margin / (math.sqrt(factor) * lipschitz), torch.zeros_like(margin))
    return _round_down_to_exact(radius, margin, lipschitz, factor)


def _round_down_to_exact(radius: torch.Tensor, margin: torch.Tensor, lipschitz: float, factor: int) -> torch.Tensor:
    """Each radius r moved down (ulp by ulp) until factor·(r·L)² ≤ m² exactly: r ≤ m/(√factor·L).

    r = fl(m/(fl(√2)·L)) rounds to nearest, so it can exceed m/(√2·L) by half an ulp (a point
    counted certified at a radius ε it is not certified at); compared with exact rationals.
    """
    values, margins = radius.tolist(), margin.tolist()
    bound = Fraction(lipschitz)
    for i, (r, m) in enumerate(zip(values, margins)):
        if r > 0:
            while r > 0 and factor * (Fraction(r) * bound) ** 2 > Fraction(m) ** 2:
                r = math.nextafter(r, 0.0)
            values[i] = r
    return torch.tensor(values, dtype=radius.dtype, device=radius.device)


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
    trust_hooks: bool = False,
    attack_points: int = 0,
    attack_steps: int = 50,
    attack_targets: int = 2,
) -> dict[str, float | str]:
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
        lipschitz: L > 0 to certify with, or None for the computed upper bound. An L below the
            computed upper bound warns (the figures hold only if L is a true constant), and an L below
            the measured lower bound warns that the figures are false (``UserWarning``).
        trust_hooks: certify a model with forward hooks on the assumption that they change no
            output (see :func:`~structnets.analysis.lipschitz_upper_bound`); the row then holds
            ``lipschitz_assumptions``, one sentence per hook.
        attack_points: attack the first ``attack_points`` test rows at every radius with
            :func:`~structnets.analysis.attack.pgd_l2` (0: no attack). The empirical check of the
            certificate: robust accuracy under the attack bounds the true one from above, certified
            accuracy from below, and a certified point the attack breaks is a wrong certificate.
        attack_steps, attack_targets: its gradient steps per run (≥ 1) and targeted runs against
            the highest-scoring other classes (≥ 0), besides one untargeted run.

    Every forward runs in IEEE float32 (:func:`~structnets._float32_precision.ieee_float32`): the
    TF32 and bfloat16 products a user may have allowed for float32 (``torch.set_float32_matmul_precision``,
    cuDNN's TF32 default on GPUs) are switched off for the call and restored after it.

    The model is certified *before* its logits are computed, under the same rules as
    :func:`~structnets.analysis.lipschitz_upper_bound` (inside an autocast region: the rounded
    operands the forward will use), so no certified accuracy rests on a refused path.

    Returns:
        ``accuracy``, ``lipschitz_upper``, ``lipschitz_lower``, ``lipschitz_used`` and
        ``certified_{ε:g}`` for every ε (fractions in [0, 1] and floats); with ``trust_hooks``
        also ``lipschitz_assumptions`` (a string). With ``attack_points`` > 0 also
        ``attack_points`` (the rows attacked, min(attack_points, n)) and, for every ε,
        ``pgd_{ε:g}`` (accuracy under the attack on those rows), ``attack_certified_{ε:g}`` (certified
        accuracy on the same rows) and ``attack_broken_{ε:g}`` (how many of them are certified at ε
        yet broken by the attack: 0 unless the certificate is wrong).

    Raises:
        TypeError: ``model`` is not an ``nn.Module``.
        TypeError: ``X_test`` not a floating tensor, ``y_test`` not an integer tensor.
        ValueError: no radius or an ε ≤ 0 (naming ``radii``), ``X_test`` not (n, d) and finite,
            ``y_test`` not (n,), ``lipschitz`` ≤ 0, ``ascent_steps`` outside [0, 10⁸], ``probe`` < 1,
            ``attack_points`` < 0, ``attack_steps`` outside [1, 10⁸] or ``attack_targets`` < 0.
        ValueError: a model evaluated in half precision (float16/bfloat16 tensors, inputs or logits, or
            an active autocast region): its rounding can flip a point the margin test counts.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be an nn.Module, got {type(model).__name__}")
    if isinstance(radii, (str, bytes)) or not isinstance(radii, Sequence):
        raise TypeError(f"`radii` must be a sequence of positive reals, got {radii!r}")
    if len(radii) == 0:
        raise ValueError("`radii` must hold at least one radius ε > 0, got an empty sequence")
    for radius in radii:
        check_real("radii", radius, low=0.0, low_open=True)
    _check_test_data(X_test, y_test)
    ascent_steps = check_int("ascent_steps", ascent_steps, low=0, high=MAX_STEPS)
    # rows beyond len(X_test) are never used; the cap only refuses absurd values up front
    probe = check_int("probe", probe, low=1, high=2**31 - 1)
    attack_points = check_int("attack_points", attack_points, low=0, high=2**31 - 1)
    attack_steps = check_int("attack_steps", attack_steps, low=1, high=MAX_STEPS)
    attack_targets = check_int("attack_targets", attack_targets, low=0, high=MAX_STEPS)
    if lipschitz is not None:
        lipschitz = check_real("lipschitz", lipschitz, low=0.0, low_open=True)
    # every forward below in IEEE float32: margins read off TF32 or bfloat16 products (a user's
    # torch.set_float32_matmul_precision, cuDNN's TF32 default) would err by ≈ 10⁻³ of the logits
    with ieee_float32():
        model.eval()
        # certified first: a refused path (hooks, non-finite steps, ...) is refused before any forward
        upper = lipschitz_upper_bound(model, trust_hooks=trust_hooks)
        _refuse_half_precision(model, X_test, upper.operand_dtype)
        with torch.no_grad():
            try:
                # copies: a model whose first layer works in place (LeakyReLU(inplace=True)) would
                # otherwise rewrite the caller's X_test, and every later forward would read the rewritten rows
                first = model(X_test[:1].clone())
            except (RuntimeError, ValueError, TypeError) as error:
                raise ValueError(
                    f"`X_test` of shape {tuple(X_test.shape)} does not fit the model's input: {error}"
                ) from None
            if isinstance(first, torch.Tensor):
                _refuse_half_precision(model, first, None)
            logits = torch.cat([model(X_test[i : i + EVAL_CHUNK].clone()) for i in range(0, len(X_test), EVAL_CHUNK)])
        classes = logits.shape[1] if logits.dim() == 2 and logits.shape[1] > 1 else 2
        low, high = int(y_test.min()), int(y_test.max())
        if low < 0 or high >= classes:
            raise ValueError(
                f"`y_test` must hold class indices in [0, {classes - 1}] for the model's {classes} classes, "
                f"got labels from {low} to {high}"
            )
        lower = lipschitz_lower_bound(model, X_test[:probe], steps=ascent_steps, pairs=min(64, probe), lr=0.01)
        if lipschitz is not None:
            _warn_below_bounds(lipschitz, float(upper), lower)
        else:
            lipschitz = max(float(upper), 1e-12)
            if upper > 1.0:
                warnings.warn(
                    f"model is not certified 1-Lipschitz: certified accuracy uses its computed upper bound "
                    f"L = {upper:.4g} (pass `lipschitz` to choose another certified L)",
                    UserWarning,
                    stacklevel=2,
                )
        row: dict[str, float | str] = {
            "accuracy": certified_accuracy(logits, y_test, 0.0),
            "lipschitz_upper": float(upper),
            "lipschitz_lower": lower,
            "lipschitz_used": lipschitz,
        }
        if trust_hooks:
            row["lipschitz_assumptions"] = "; ".join(upper.assumptions)
        for radius in radii:
            row[f"certified_{radius:g}"] = certified_accuracy(logits, y_test, float(radius), lipschitz=lipschitz)
        if attack_points > 0:
            row.update(
                _attacked(model, X_test, y_test, logits, lipschitz, radii, attack_points, attack_steps, attack_targets)
            )
        return row


def _warn_below_bounds(lipschitz: float, upper: float, lower: float) -> None:
    """Warn when a user's L is below the model's measured or certified bound: its figures may be false.

    Below the measured lower bound (a Jacobian norm or secant ratio the model attains, up to float
    rounding) L is certainly not a Lipschitz constant and the "certified" figures are false; between
    it and the computed upper bound they hold only if L is a true constant that our certificate
    cannot confirm. Not an error: a deliberately wrong L is how the attack check is shown to work.
    """
    if lipschitz * (1.0 + 1e-6) < lower:
        warnings.warn(
            f"`lipschitz`={lipschitz:.6g} is below the model's measured lower bound {lower:.6g} on its "
            "Lipschitz constant: it is not a Lipschitz constant of the model, and the certified accuracies "
            "computed with it are not certified",
            UserWarning,
            stacklevel=3,
        )
    elif lipschitz < upper:
        warnings.warn(
            f"`lipschitz`={lipschitz:.6g} is below the model's computed certified upper bound {upper:.6g}: "
            "the certified accuracies hold only if it is a true Lipschitz constant of the model",
            UserWarning,
            stacklevel=3,
        )


def _refuse_half_precision(model: nn.Module, tensor: torch.Tensor, operand_dtype: torch.dtype | None) -> None:
    """Refuse (ValueError) a float16/bfloat16 evaluation: its rounding is not covered by the margin test.

    The certificate is for exact arithmetic; a margin read off logits computed in half precision is
    off by ≈ 2⁻⁹ of the logits (bfloat16), enough to flip a point counted certified at a radius 0.5 %
    below its own (measured in ``tests/analysis/test_certificate_review_s9.py``). In float32 the same
    error is ≈ 10⁻⁷ of the logits (``docs/lipschitz.md``, "What floating-point evaluation adds").
    """
    half = (torch.float16, torch.bfloat16)
    if operand_dtype is not None:
        where = f"an autocast region to {operand_dtype} is active"
    elif tensor.dtype in half:
        where = f"it computes in {tensor.dtype}"
    else:
        parameter = next((t for t in (*model.parameters(), *model.buffers()) if t.dtype in half), None)
        if parameter is None:
            return
        where = f"it holds {parameter.dtype} tensors"
    raise ValueError(
        f"`model` cannot be certified as evaluated: {where}, and half-precision rounding of the logits can flip "
        "a point counted certified; certify a float32 or float64 copy (model.float()) outside autocast"
    )


def _attacked(
    model: nn.Module,
    X_test: torch.Tensor,
    y_test: torch.Tensor,
    logits: torch.Tensor,
    lipschitz: float,
    radii: Sequence[float],
    points: int,
    steps: int,
    targets: int,
) -> dict[str, float]:
    """The attack columns of :func:`certify` on the first ``points`` rows (see its docstring)."""
    count = min(points, len(X_test))
    X, y = X_test[:count], y_test[:count]
    radius = certified_radii(logits[:count], y, lipschitz)
    row: dict[str, float] = {"attack_points": float(count)}
    for eps in radii:
        result = pgd_l2(model, X, y, float(eps), steps=steps, targets=targets)
        certified = radius >= float(eps)
        row[f"pgd_{eps:g}"] = result.robust_accuracy()
        row[f"attack_certified_{eps:g}"] = float(certified.double().mean())
        row[f"attack_broken_{eps:g}"] = float((certified & (result.margins.to(radius.device) < 0)).sum())
    return row


def _check_test_data(X_test: object, y_test: object) -> None:
    """``X_test`` an (n, d) finite floating tensor with n ≥ 1; ``y_test`` n integer labels (named errors)."""
    if not isinstance(X_test, torch.Tensor):
        raise TypeError(f"`X_test` must be a torch.Tensor of shape (n, d), got {type(X_test).__name__}")
    if X_test.dim() != 2 or X_test.shape[0] < 1:
        raise ValueError(f"`X_test` must have shape (n, d) with n >= 1, got shape {tuple(X_test.shape)}")
    if not X_test.is_floating_point():
        raise TypeError(f"`X_test` must be a floating-point tensor, got dtype {X_test.dtype}")
    if not bool(torch.isfinite(X_test).all()):
        raise ValueError("`X_test` must be finite, got NaN or inf entries")
    if not isinstance(y_test, torch.Tensor):
        raise TypeError(f"`y_test` must be a torch.Tensor of n integer labels, got {type(y_test).__name__}")
    if y_test.dim() != 1 or y_test.shape[0] != X_test.shape[0]:
        raise ValueError(
            f"`y_test` must have shape ({X_test.shape[0]},) to match `X_test`, got shape {tuple(y_test.shape)}"
        )
    if y_test.is_floating_point() or y_test.is_complex() or y_test.dtype == torch.bool:
        raise TypeError(f"`y_test` must hold integer class labels, got dtype {y_test.dtype}")


__all__ = ["EVAL_CHUNK", "certified_radii", "certify"]
