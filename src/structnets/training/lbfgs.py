"""Batched optimisers for ensembles of independent models: Adam with cosine decay, then per-member L-BFGS.

An ensemble of E models is held as one flat parameter matrix x ∈ R^{E×P} (row e = member e). The
objective is separable, F(x) = Σ_e L_e(x_e), so ∇F restricted to row e is ∇L_e: members never see
each other. These are the two first-order phases of ``smoothness-rates`` (Liu, Wang, Wu, Zhang,
arXiv 2602.19691; ``docs/smoothness.md``); the second-order sibling, per-member
Levenberg–Marquardt, is :mod:`structnets.training.levenberg_marquardt`.

1. :func:`adam_phase`: full-batch Adam with a cosine-decayed learning rate (elementwise, hence per
   member): a robust start far from any minimum.
2. :func:`batched_lbfgs`: a *per-member* limited-memory BFGS (Nocedal & Wright 2006, Alg. 7.4 and
   7.5), batched over members: every member keeps its own curvature pairs (s_i, y_i), its own
   initial scaling γ = sᵀy / yᵀy and its own backtracking Armijo step, and stops on its own
   convergence test. So a member's trajectory is exactly the one L-BFGS would take on it alone;
   running the members together only amortises the Python overhead. (A single
   ``torch.optim.LBFGS`` on the summed loss would also minimise every member, since F is
   separable, but its curvature pairs and line search would couple the members and its stopping
   test would be driven by the worst one.)

Convergence of a member (the check the rate tables rely on): its loss changed by at most
``ftol`` relative over ``patience`` consecutive accepted iterations, or its gradient norm fell
below ``gtol``·max(1, loss). Members that converge are frozen (and, given ``value_and_grad``, no
longer evaluated); members that use up ``max_iter`` are reported as not converged, which marks
their error as possibly optimisation-limited.

Both phases take the losses either as ``loss_fn`` (x ↦ (E,) losses, differentiated by autograd) or
as ``value_and_grad`` ((x_rows, members) ↦ (losses, gradients) of those members, e.g.
:meth:`structnets.models.ensemble_mlp.EnsembleMLP.mse_and_grad`), which avoids the autograd graph.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from .._validation import MAX_STEPS, check_fits_in_memory, check_int, check_real

LossFn = Callable[[torch.Tensor], torch.Tensor]
ValueAndGrad = Callable[[torch.Tensor, torch.Tensor | None], tuple[torch.Tensor, torch.Tensor]]
"""(x_rows (E', P), members (E',) sorted indices, or None for all E) ↦ (losses (E',), gradients (E', P))."""


@dataclass(frozen=True)
class LBFGSResult:
    """Per-member outcome of :func:`batched_lbfgs`; every field is an (E,) tensor.

    Attributes:
        loss: final loss L_e(x_e).
        grad_norm: final ‖∇L_e(x_e)‖₂.
        iterations: accepted L-BFGS iterations.
        converged: the member met the convergence test (relative loss change or gradient norm)
            before ``max_iter``.
        loss_half: the loss after ⌈max_iter/2⌉ iterations (the final loss if all members stopped
            earlier); loss_half − loss is how much the second half of the budget still gained.
    """

    loss: torch.Tensor
    grad_norm: torch.Tensor
    iterations: torch.Tensor
    converged: torch.Tensor
    loss_half: torch.Tensor


def _check_x(x: torch.Tensor) -> torch.Tensor:
    """``x`` as an (E, P) floating-point tensor, or raise naming it."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"`x` must be an (E, P) torch.Tensor, got {type(x).__name__}")
    if x.dim() != 2:
        raise ValueError(f"`x` must be an (E, P) tensor, got shape {tuple(x.shape)}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"`x` must be a floating-point tensor, got dtype {x.dtype}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("`x` must be finite, got NaN or inf entries")
    return x


def _check_functions(loss_fn: Any, value_and_grad: Any) -> None:
    if loss_fn is None and value_and_grad is None:
        raise ValueError("`loss_fn` must be given when `value_and_grad` is None, got None for both")
    if loss_fn is not None and not callable(loss_fn):
        raise TypeError(f"`loss_fn` must be a callable x -> losses, got {loss_fn!r:.80} ({type(loss_fn).__name__})")
    if value_and_grad is not None and not callable(value_and_grad):
        raise TypeError(
            f"`value_and_grad` must be a callable (x, members) -> (losses, gradients), got {type(value_and_grad).__name__}"
        )


def adam_phase(
    loss_fn: LossFn | None,
    x: torch.Tensor,
    *,
    steps: int,
    lr: float,
    value_and_grad: ValueAndGrad | None = None,
) -> torch.Tensor:
    """Full-batch Adam on Σ_e L_e with learning rate lr·½(1 + cos(πt/steps)); returns the new x.

    Adam's update is elementwise, so each member moves exactly as if trained alone.

    Args:
        loss_fn: maps x (E, P) to the (E,) losses L_e(x_e) (differentiated by autograd); unused
            when ``value_and_grad`` is given.
        x: (E, P) starting point (not modified).
        steps: number of Adam steps (0 returns x).
        lr: initial learning rate; step t (0-based) uses lr·½(1 + cos(πt/steps)).
        value_and_grad: optional (x, None) ↦ (losses, ∇L) of all members; the same gradients
            as autograd on Σ_e L_e give the same trajectory without a graph.

    Returns:
        the (E, P) parameters after ``steps`` steps (detached).
    """
    steps = check_int("steps", steps, low=0, high=MAX_STEPS)
    lr = check_real("lr", lr, low=0.0, low_open=True)
    _check_functions(loss_fn, value_and_grad)
    x = _check_x(x)
    x = x.detach().clone().requires_grad_(value_and_grad is None)
    if steps == 0:
        return x.detach()
    optimizer = torch.optim.Adam([x], lr=lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda t: 0.5 * (1 + math.cos(math.pi * t / steps)))
    for _ in range(steps):
        if value_and_grad is not None:
            x.grad = value_and_grad(x.detach(), None)[1]
        else:
            assert loss_fn is not None
            optimizer.zero_grad(set_to_none=True)
            loss_fn(x).sum().backward()
        optimizer.step()
        schedule.step()
    return x.detach()


def _loss_and_grad(loss_fn: LossFn, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = x.detach().requires_grad_(True)
    losses = loss_fn(x)
    (grad,) = torch.autograd.grad(losses.sum(), x)
    return losses.detach(), grad


def _checked(f: torch.Tensor, g: torch.Tensor, rows: int, P: int, name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(f, g)`` if they are (rows,) losses and (rows, P) gradients, else a ValueError naming ``name``.

    A scalar (the summed loss) or an (E, 1) column broadcast against (E,) in the line search: a
    scalar made every member's Armijo test use the total loss (coupled members), a column failed
    with an IndexError about a mask.
    """
    if not isinstance(f, torch.Tensor) or not isinstance(g, torch.Tensor):
        raise TypeError(f"`{name}` must return tensors, got {type(f).__name__} and {type(g).__name__}")
    if f.shape != (rows,) or g.shape != (rows, P):
        raise ValueError(
            f"`{name}` must give one loss per member, shape ({rows},), and gradients ({rows}, {P}), "
            f"got {tuple(f.shape)} and {tuple(g.shape)}"
        )
    return f, g


def batched_lbfgs(
    loss_fn: LossFn | None,
    x: torch.Tensor,
    *,
    max_iter: int,
    history: int = 20,
    ftol: float = 1e-9,
    gtol: float = 1e-7,
    patience: int = 10,
    c1: float = 1e-4,
    max_backtracks: int = 30,
    value_and_grad: ValueAndGrad | None = None,
) -> tuple[torch.Tensor, LBFGSResult]:
    """Minimise every L_e independently by L-BFGS with a backtracking Armijo line search.

    Args:
        loss_fn: maps x (E, P) to the (E,) losses L_e(x_e); L_e may depend on row e only.
        x: (E, P) starting point.
        max_iter: budget of batched loss-and-gradient evaluations (one per loop iteration).
        history: number m of curvature pairs kept.
        ftol: a member converges after ``patience`` consecutive accepted steps with
            |L_old − L_new| ≤ ftol·max(|L_old|, |L_new|, 1e-300).
        gtol: ... or once ‖∇L_e‖₂ ≤ gtol·max(1, L_e).
        patience: see ``ftol``.
        c1: Armijo constant: accept t when L_e(x + t p) ≤ L_e(x) + c1·t·∇L_eᵀp.
        max_backtracks: consecutive step reductions after which a member is declared converged
            (its loss cannot be decreased along a descent direction in floating point).
        value_and_grad: optional (x_rows, members) ↦ (losses, gradients) of the given members
            (None: all); then ``loss_fn`` is unused and each iteration evaluates only the members
            still active, so converged members cost nothing.

    Returns:
        (x, result): the final (E, P) parameters and an :class:`LBFGSResult` (its ``iterations``
        counts each member's accepted steps).

    Direction: the two-loop recursion p = −H_k ∇L with H_0 = γI, γ = sᵀy/yᵀy of the newest pair
    (Nocedal & Wright, Alg. 7.4); a pair with sᵀy ≤ 1e-12·‖s‖‖y‖ is skipped, which keeps H
    positive definite without a Wolfe curvature condition. Each member has its own ring buffer of
    pairs and its own inner products. Line search: every loop iteration evaluates all members once, with
    gradient, at their trial points; a member whose trial fails the Armijo test stays where it is
    and retries the same direction next iteration with the step from quadratic interpolation
    (clipped to [0.1t, 0.5t]). So each member runs plain backtracking L-BFGS, and the batch pays
    one loss-and-gradient evaluation per iteration however many members backtrack.
    """
    max_iter = check_int("max_iter", max_iter, low=0, high=MAX_STEPS)
    history = check_int("history", history, low=1)
    ftol = check_real("ftol", ftol, low=0.0)
    gtol = check_real("gtol", gtol, low=0.0)
    patience = check_int("patience", patience, low=1, high=MAX_STEPS)
    c1 = check_real("c1", c1, low=0.0, high=1.0, low_open=True, high_open=True)
    max_backtracks = check_int("max_backtracks", max_backtracks, low=1, high=MAX_STEPS)
    _check_functions(loss_fn, value_and_grad)
    x = _check_x(x).detach().clone()
    E, P = x.shape
    # the curvature pairs S and Y hold history × E × P numbers each
    check_fits_in_memory(f"`history`={history}, `x` of shape {(E, P)}", 2 * history * E * P, itemsize=x.element_size())

    def evaluate(point: torch.Tensor, active: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Losses and gradients at ``point``; rows of inactive members are left at f and g."""
        if value_and_grad is None:
            assert loss_fn is not None
            return _checked(*_loss_and_grad(loss_fn, point), E, P, "loss_fn")
        if bool(active.all()):
            return _checked(*value_and_grad(point, None), E, P, "value_and_grad")
        idx = active.nonzero().squeeze(1)
        f_sub, g_sub = _checked(*value_and_grad(point[idx], idx), idx.numel(), P, "value_and_grad")
        f_all, g_all = f.clone(), g.clone()
        f_all[idx], g_all[idx] = f_sub, g_sub
        return f_all, g_all

    f = torch.zeros(E, dtype=x.dtype, device=x.device)
    g = torch.zeros_like(x)
    f, g = evaluate(x, torch.ones(E, dtype=torch.bool, device=x.device))
    S = torch.zeros(history, E, P, dtype=x.dtype, device=x.device)
    Y = torch.zeros(history, E, P, dtype=x.dtype, device=x.device)
    rho = torch.zeros(history, E, dtype=x.dtype, device=x.device)
    gamma = torch.ones(E, dtype=x.dtype, device=x.device)
    # Per-member ring buffers: member e's newest pair sits in slot newest[e], and it has
    # filled[e] pairs; a member that does not move leaves its buffer untouched.
    newest = torch.full((E,), -1, dtype=torch.long, device=x.device)
    filled = torch.zeros(E, dtype=torch.long, device=x.device)
    members = torch.arange(E, device=x.device)
    iterations = torch.zeros(E, dtype=torch.long, device=x.device)
    quiet = torch.zeros(E, dtype=torch.long, device=x.device)
    backtracks = torch.zeros(E, dtype=torch.long, device=x.device)
    converged = g.norm(dim=1) <= gtol * f.abs().clamp(min=1.0)
    first = torch.ones(E, dtype=torch.bool, device=x.device)  # no usable curvature yet: scale the first step
    retry = torch.zeros(E, dtype=torch.bool, device=x.device)
    p_prev = torch.zeros_like(x)
    t_prev = torch.ones(E, dtype=x.dtype, device=x.device)
    loss_half = None
    for step in range(max_iter):
        if step == (max_iter + 1) // 2:
            loss_half = f.clone()
        active = ~converged
        if not bool(active.any()):
            break
        # Two-loop recursion, newest pair first, batched over members. Every member's pairs are
        # gathered once, by age (row i: each member's i-th newest pair; weight 0 past its filled
        # ones): a constant number of gathers per iteration instead of eight small ops per pair.
        q = g.clone()
        alphas = []
        ages = torch.arange(int(filled.max()), device=x.device)
        slot = (newest[None, :] - ages[:, None]) % history  # (pairs, E)
        S_age, Y_age = S[slot, members], Y[slot, members]
        rho_age = torch.where(ages[:, None] < filled[None, :], rho[slot, members], 0.0)
        for s_i, y_i, rho_i in zip(S_age, Y_age, rho_age, strict=True):
            a = rho_i * (s_i * q).sum(1)
            q -= a[:, None] * y_i
            alphas.append(a)
        r = gamma[:, None] * q
        for i in reversed(range(len(alphas))):
            b = rho_age[i] * (Y_age[i] * r).sum(1)
            r += S_age[i] * (alphas[i] - b)[:, None]
        p = torch.where(retry[:, None], p_prev, -r)
        slope = (g * p).sum(1)
        bad = ~retry & (~(slope < 0) | ~torch.isfinite(slope))
        if bool(bad.any()):  # not a descent direction: restart those members from steepest descent
            p[bad] = -g[bad]
            filled[bad] = 0
            gamma[bad] = 1.0
            first |= bad
            slope = (g * p).sum(1)
        p[~active] = 0.0
        t = torch.ones(E, dtype=x.dtype, device=x.device)
        t[first] = torch.clamp(1.0 / g[first].abs().sum(1).clamp(min=1e-300), max=1.0)
        t = torch.where(retry, t_prev, t)
        trial, g_trial = evaluate(x + t[:, None] * p, active)
        ok = (trial <= f + c1 * t * slope) & torch.isfinite(trial) & torch.isfinite(g_trial).all(1)
        move = active & ok
        failed = active & ~ok
        # Members that failed retry the same direction with a shorter step next iteration.
        curvature = trial - f - slope * t
        t_interp = torch.where(torch.isfinite(trial) & (curvature > 0), -slope * t * t / (2 * curvature), 0.5 * t)
        t_prev = torch.minimum(torch.maximum(t_interp, 0.1 * t), 0.5 * t)
        p_prev = p
        retry = failed
        backtracks = torch.where(failed, backtracks + 1, torch.zeros_like(backtracks))
        stuck = backtracks >= max_backtracks
        if bool(move.any()):
            s = torch.where(move[:, None], t[:, None] * p, torch.zeros_like(p))
            yv = torch.where(move[:, None], g_trial - g, torch.zeros_like(g))
            sy = (s * yv).sum(1)
            valid = move & (sy > 1e-12 * s.norm(dim=1) * yv.norm(dim=1)) & (sy > 0)
            # Only pairs with positive curvature enter a member's buffer (H stays positive definite).
            idx = members[valid]
            if idx.numel():
                newest[idx] = (newest[idx] + 1) % history
                filled[idx] = torch.clamp(filled[idx] + 1, max=history)
                S[newest[idx], idx] = s[idx]
                Y[newest[idx], idx] = yv[idx]
                rho[newest[idx], idx] = 1.0 / sy[idx]
            gamma = torch.where(valid, sy / (yv * yv).sum(1).clamp(min=1e-300), gamma)
            small = (f - trial).abs() <= ftol * torch.maximum(
                torch.maximum(f.abs(), trial.abs()), torch.full_like(f, 1e-300)
            )
            quiet = torch.where(move, torch.where(small, quiet + 1, torch.zeros_like(quiet)), quiet)
            iterations += move.long()
            first &= ~move
            x = torch.where(move[:, None], x + s, x)
            f = torch.where(move, trial, f)
            g = torch.where(move[:, None], g_trial, g)
        converged |= stuck | (quiet >= patience) | (active & (g.norm(dim=1) <= gtol * f.abs().clamp(min=1.0)))
        retry &= ~converged
    return x, LBFGSResult(
        loss=f,
        grad_norm=g.norm(dim=1),
        iterations=iterations,
        converged=converged,
        loss_half=f.clone() if loss_half is None else loss_half,
    )


__all__ = ["LBFGSResult", "LossFn", "ValueAndGrad", "adam_phase", "batched_lbfgs"]
