"""An ℓ₂ projected-gradient attack: the empirical side of certified robustness.

A certificate says that no perturbation with ‖δ‖₂ < r(x) changes the prediction
(:func:`~structnets.analysis.certified_radii`). An attack looks for one: every point it returns lies
inside the ball and its margin is measured, so a point it breaks is a real counterexample. Robust
accuracy under the attack is therefore an *upper* bound of the true robust accuracy, and certified
accuracy a *lower* one; a certified point that the attack breaks is a wrong certificate. This is the
check an outside reviewer runs first on a certified model (Madry, Makelov, Schmidt, Tsipras, Vladu,
*Towards Deep Learning Models Resistant to Adversarial Attacks*, ICLR 2018: projected gradient
steps, random starts; Carlini, Wagner, S&P 2017: the margin loss, which drives the attack straight at
the decision boundary instead of saturating as cross-entropy does).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .._validation import MAX_STEPS, check_int, check_real
from .lipschitz import _points
from .memory import preserved_buffers

#: Rows attacked per forward/backward pass (bounds memory; the result does not depend on it).
ATTACK_CHUNK = 1024
#: The projection radius is ε(1 − 2⁻²⁰), less the rounding of x + δ in the model's dtype (see
#: ``_attack_chunk``); every kept point is also checked in float64 against the input as given.
_SHRINK = 1.0 - 2.0**-20
#: Largest ε and input norm: float64 sums of squares of such values stay finite.
_LARGEST = 2.0**500


@dataclass(frozen=True)
class AttackResult:
    """What :func:`pgd_l2` found for each point.

    Attributes:
        points: (n, d) the most adversarial point seen for each input, in the model's dtype (the input
            itself when nothing lowered its margin), each with ‖point − x‖₂ ≤ ε checked in float64
            against the input as given (steps are taken in a ball smaller by the rounding of x + δ).
        margins: (n,) float64 margin at ``points``: f_y − max_{j≠y} f_j (one logit: f for class 1,
            −f for class 0). Negative: the prediction changed (the attack succeeded).
        eps: the radius ε.
    """

    points: torch.Tensor
    margins: torch.Tensor
    eps: float

    @property
    def robust(self) -> torch.Tensor:
        """(n,) bool: the attack did not change a correct prediction (margin > 0 at the point found)."""
        return self.margins > 0

    def robust_accuracy(self) -> float:
        """Fraction of points still classified correctly: an upper bound of the true robust accuracy."""
        return float(self.robust.double().mean())


def _margins(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """f_y − max_{j≠y} f_j per row (one logit: the signed output), in the logits' dtype."""
    if logits.dim() == 1 or logits.shape[1] == 1:
        z = logits.reshape(-1)
        return torch.where(labels == 1, z, -z)
    true = logits.gather(1, labels[:, None])[:, 0]
    others = logits.scatter(1, labels[:, None], -math.inf).max(dim=1).values
    return true - others


def pgd_l2(
    model: Callable[[torch.Tensor], torch.Tensor],
    inputs: torch.Tensor | np.ndarray,
    labels: torch.Tensor | np.ndarray,
    eps: float,
    *,
    steps: int = 50,
    restarts: int = 1,
    targets: int = 0,
    step_size: float | None = None,
    seed: int = 0,
) -> AttackResult:
    """Search the ℓ₂ ball of radius ``eps`` around each input for a point that changes its prediction.

    Projected gradient descent on the margin m(x + δ) = f_y − max_{j≠y} f_j: each step moves δ by
    ``step_size`` along −∇m/‖∇m‖ and projects it back onto ‖δ‖₂ ≤ ε (Madry et al. 2018). The first
    start is δ = 0; each further restart starts from a uniform random point of the ball. The margin
    is concave in the logits, so descent can settle where the leading other class is still behind
    while a nearer boundary to another class lies inside the ball; ``targets`` adds runs from δ = 0
    that descend f_y − f_t for each of the ``targets`` highest-scoring other classes t at the input
    (the multi-targeted attack of Gowal, Uesato, Qin, Huang, Mann, Kohli, arXiv 1910.09338, 2019;
    for a linear model, targets = k − 1 finds every breakable point). The lowest margin seen at any
    iterate of any run is kept, so the result is never worse than the clean input. The
    attack is unconstrained by any input domain (no clipping to [0, 1]): a certificate holds on the
    whole ball, and so the attack searches it all.

    Args:
        model: a function ``(n, d) -> (n, k)`` (k ≥ 2 logits, or one logit for two classes); its mode
            is left as is (call ``eval()`` first). Its parameters receive no gradient; the buffers
            of a module (BatchNorm statistics, power-iteration vectors) are put back afterwards.
        inputs: (n, d) finite points; labels: (n,) class indices (0/1 for one logit).
        eps: radius ε > 0.
        steps: gradient steps per start (≥ 1).
        restarts: untargeted starts per point (≥ 1; the first is the input itself).
        targets: targeted runs per point, against the highest-scoring other classes (≥ 0; at most
            k − 1 are used).
        step_size: ℓ₂ length of each step (> 0); None: 2.5·ε/steps (Madry et al.'s choice).
        seed: seeds the random starts (row i's start of restart r depends on (seed, r, i) alone).

    Returns:
        :class:`AttackResult`: per point, the most adversarial point found and its float64 margin.

    Raises:
        TypeError: ``model`` not callable, ``inputs`` not real, ``labels`` not integers.
        ValueError: ``eps``, ``steps``, ``restarts``, ``targets`` or ``step_size`` out of range; shapes that do not
            match; labels outside the model's classes; ``inputs`` that the cast to the model's dtype
            moves by more than ε; model outputs of another shape than (n, k) or (n,), or that do not
            require grad.
        RuntimeError: called inside ``torch.inference_mode()`` (the attack needs gradients).
    """
    if not callable(model):
        raise TypeError(f"`model` must be callable (n, d) -> (n, k), got {type(model).__name__}")
    # ℓ₂ norms of the size of ε are taken in float64: beyond 2⁵⁰⁰ (≈ 3e150) they overflow to inf, every
    # candidate failed the ball check, and points the attack broke were reported robust
    eps = check_real("eps", eps, low=0.0, high=_LARGEST, low_open=True)
    steps = check_int("steps", steps, low=1, high=MAX_STEPS)
    restarts = check_int("restarts", restarts, low=1, high=MAX_STEPS)
    targets = check_int("targets", targets, low=0, high=MAX_STEPS)
    if step_size is None:
        step_size = 2.5 * eps / steps
    step_size = check_real("step_size", step_size, low=0.0, low_open=True)
    seed = check_int("seed", seed, low=0, high=2**63 - 1)
    if torch.is_inference_mode_enabled():
        raise RuntimeError("pgd_l2 differentiates the model: call it outside torch.inference_mode()")
    given = _points(inputs, "inputs").detach()
    y = _labels(labels, given.shape[0]).to(given.device)
    params = list(getattr(model, "parameters", lambda: [])())
    x = given.to(params[0].dtype) if params else given
    # the ball is the one around the inputs given: a cast that moves a point by more than ε is refused
    scale = torch.linalg.vector_norm(given.double(), dim=1)
    if not bool((scale <= _LARGEST).all()):  # the rounding slack (‖x‖ + ε)·u would be inf: no step at all
        raise ValueError(f"`inputs` must have rows of ℓ2 norm ≤ {_LARGEST:g}, got {float(scale.max()):.3g}")
    moved = torch.linalg.vector_norm(x.double() - given.double(), dim=1)
    if bool((moved > eps).any()):
        raise ValueError(
            f"`inputs` cast to the model's dtype {x.dtype} move a point by {float(moved.max()):.3g} > `eps`={eps:g}: "
            "pass inputs the model's dtype represents, or a larger radius"
        )
    points, margins = [], []
    # a training-mode forward moves buffers (BatchNorm statistics, power-iteration vectors): an
    # attack measures the model and must not train them on its own points, so they are put back
    with preserved_buffers(model) if isinstance(model, nn.Module) else contextlib.nullcontext():
        for start in range(0, x.shape[0], ATTACK_CHUNK):
            part = slice(start, start + ATTACK_CHUNK)
            chunk_points, chunk_margins = _attack_chunk(
                model, x[part], given[part], y[part], eps, steps, restarts, targets, step_size, seed, start
            )
            points.append(chunk_points)
            margins.append(chunk_margins)
    return AttackResult(torch.cat(points), torch.cat(margins), eps)


def _labels(labels: object, n: int) -> torch.Tensor:
    """``labels`` as an (n,) int64 tensor, or an error naming it."""
    if torch.is_tensor(labels):
        y = labels
    else:
        array = np.asarray(labels)
        if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
            raise TypeError(f"`labels` must hold integer class indices, got dtype {array.dtype}")
        y = torch.as_tensor(array.astype(np.int64) if np.issubdtype(array.dtype, np.integer) else array)
    if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
        raise TypeError(f"`labels` must hold integer class indices, got dtype {y.dtype}")
    if y.shape != (n,):
        raise ValueError(f"`labels` must have shape ({n},) to match `inputs`, got shape {tuple(y.shape)}")
    if n and int(y.min()) < 0:
        raise ValueError(f"`labels` must be class indices ≥ 0, got {int(y.min())}")
    return y.long()


def _attack_chunk(
    model: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    given: torch.Tensor,
    y: torch.Tensor,
    eps: float,
    steps: int,
    restarts: int,
    targets: int,
    step_size: float,
    seed: int,
    first_row: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    tiny = torch.finfo(x.dtype).tiny
    given64 = given.double()
    # x + δ is rounded in the model's dtype, by at most u·(‖x‖ + ‖δ‖) in ℓ₂: step inside a ball smaller
    # by that much (and by 2⁻²⁰ε), so that the rounded point stays in the ε-ball of the given input;
    # every candidate is also checked in float64 against the given input before it is kept
    unit = torch.finfo(x.dtype).eps / 2
    slack = 1.01 * unit * (torch.linalg.vector_norm(x.double(), dim=1, keepdim=True) + eps)
    radius = (eps * _SHRINK - slack).clamp_min(0.0).to(x.dtype)
    with torch.no_grad():
        logits = model(x.clone())  # a copy: an in-place first layer would rewrite the caller's rows
    one_logit = logits.dim() == 1 or (logits.dim() == 2 and logits.shape[1] == 1)
    if logits.dim() not in (1, 2) or logits.shape[0] != x.shape[0]:
        raise ValueError(
            f"`model` must map ({x.shape[0]}, {x.shape[1]}) inputs to ({x.shape[0]}, k) logits or "
            f"({x.shape[0]},) one logit, got shape {tuple(logits.shape)}"
        )
    classes = 2 if one_logit else logits.shape[1]
    if int(y.max()) >= classes:
        raise ValueError(f"`labels` must be class indices in [0, {classes - 1}], got {int(y.max())}")
    best_margin = _margins(logits.detach(), y).double()
    best_point = x.clone()
    runs: list[torch.Tensor | None] = [None] * restarts  # None: untargeted
    if not one_logit:
        ranked = logits.detach().scatter(1, y[:, None], -math.inf).argsort(dim=1, descending=True)
        runs += list(ranked[:, : min(targets, classes - 1)].unbind(1))
    for run, target in enumerate(runs):
        if run == 0 or target is not None:
            delta = torch.zeros_like(x)
        else:
            delta = _random_starts(x, radius, seed, run, first_row)
        for step in range(steps + 1):
            delta.requires_grad_(True)
            with torch.enable_grad():
                point = x + delta
                z = model(point.clone())  # the point is checked and kept below: the model must not rewrite it
                margin = _margins(z, y)
                if step < steps:
                    chosen = (
                        z.gather(1, y[:, None])[:, 0] - z.gather(1, target[:, None])[:, 0]
                        if target is not None
                        else margin
                    )
                    if not chosen.requires_grad:  # autograd's own error names no argument
                        raise ValueError(
                            "`model` must be differentiable in its input: its output does not require grad "
                            "(detached, computed under torch.no_grad(), or outside torch)"
                        )
                    # an output that does not depend on the input has a zero gradient: nothing to follow
                    (found,) = torch.autograd.grad(chosen.sum(), delta, allow_unused=True)
                    gradient = torch.zeros_like(delta) if found is None else found
            delta, point = delta.detach(), point.detach()
            # keep the lowest margin seen, at a point checked to lie in the closed ball of the given input
            inside = torch.linalg.vector_norm(point.double() - given64, dim=1) <= eps
            better = inside & (margin.detach().double() < best_margin)
            best_margin = torch.where(better, margin.detach().double(), best_margin)
            best_point = torch.where(better[:, None], point, best_point)
            if step == steps:
                break
            norm = torch.linalg.vector_norm(gradient, dim=1, keepdim=True)
            delta = delta - step_size * gradient / norm.clamp_min(tiny)
            length = torch.linalg.vector_norm(delta, dim=1, keepdim=True)
            delta = delta * torch.clamp(radius / length.clamp_min(tiny), max=1.0)
    return best_point, best_margin


def _random_starts(x: torch.Tensor, radius: torch.Tensor, seed: int, run: int, first_row: int) -> torch.Tensor:
    """Uniform points of each row's ball (a uniform direction, radius r·U^{1/d}), drawn per row from
    (seed, run, row index): a row's start depends on nothing else (not the chunking, not the other rows)."""
    n, d = x.shape
    directions = torch.empty(n, d, dtype=x.dtype)
    scales = torch.empty(n, 1, dtype=x.dtype)
    for i in range(n):
        generator = torch.Generator().manual_seed(((seed * 2**20 + run) * 2**31 + first_row + i) % 2**63)
        directions[i] = torch.randn(d, generator=generator, dtype=x.dtype)
        scales[i] = torch.rand(1, generator=generator, dtype=x.dtype)
    directions /= torch.linalg.vector_norm(directions, dim=1, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny)
    return directions.to(x.device) * (radius * scales.pow(1.0 / d).to(x.device))


__all__ = ["ATTACK_CHUNK", "AttackResult", "pgd_l2"]
