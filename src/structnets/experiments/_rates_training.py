"""Training of batched ensembles of independent MLPs to a stationary point (``smoothness-rates``).

An ensemble of E MLPs is held as one flat parameter matrix x ∈ R^{E×P} (row e = member e) and
evaluated with one ``torch.baddbmm`` per layer. The objective is separable,
F(x) = Σ_e L_e(x_e), so ∇F restricted to row e is ∇L_e: members never see each other.

Two phases:

1. Adam with a cosine-decayed learning rate (elementwise, hence per member): a robust start far
   from any minimum.
2. A *per-member* limited-memory BFGS (Nocedal & Wright 2006, Alg. 7.4 and 7.5), batched over
   members: every member keeps its own curvature pairs (s_i, y_i), its own initial scaling
   γ = sᵀy / yᵀy and its own backtracking Armijo step, and stops on its own convergence test. So a
   member's trajectory is exactly the one L-BFGS would take on it alone; running the members
   together only amortises the Python overhead. (A single ``torch.optim.LBFGS`` on the summed loss
   would also minimise every member, since F is separable, but its curvature pairs and line
   search would couple the members and its stopping test would be driven by the worst one.)

Convergence of a member (the check the rate tables rely on): its loss changed by at most
``ftol`` relative over ``patience`` consecutive accepted iterations, or its gradient norm fell
below ``gtol``·max(1, loss). Members that converge are frozen; members that use up ``max_iter``
are reported as not converged, which marks their error as possibly optimisation-limited.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from .._validation import check_int, check_real

ACTIVATION_FUNCTIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": torch.relu,
    "tanh": torch.tanh,
    "gelu": torch.nn.functional.gelu,
    "silu": torch.nn.functional.silu,
}


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


class EnsembleMLP:
    """E independent MLPs d → width × (depth − 1) → 1 with a flat (E, P) parameter matrix.

    Args:
        activations: E activation names (relu, tanh, gelu, silu), one per member.
        d: input dimension; width: hidden width; depth: number of weight layers (≥ 2).
        generator: seeds the initialisation U(±1/√fan_in) of weights and biases (PyTorch's
            default), except the first layer, drawn from U(±input_scale/√d).
        input_scale: first-layer initialisation scale (≥ 1 starts units that already vary on
            the scale of high-frequency targets, cf. random Fourier features).
        dtype: parameter dtype.
    """

    def __init__(
        self,
        activations: list[str],
        d: int,
        width: int,
        depth: int,
        *,
        generator: torch.Generator,
        input_scale: float = 1.0,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        for name in activations:
            if name not in ACTIVATION_FUNCTIONS:
                raise ValueError(f"`activations` must be among {sorted(ACTIVATION_FUNCTIONS)}, got {name!r}")
        d = check_int("d", d, low=1)
        width = check_int("width", width, low=1)
        depth = check_int("depth", depth, low=2)
        input_scale = check_real("input_scale", input_scale, low=0.0, low_open=True)
        E = len(activations)
        if E == 0:
            raise ValueError("`activations` must name at least one member, got []")
        sizes = [d] + [width] * (depth - 1) + [1]
        self.shapes: list[tuple[int, ...]] = []
        chunks = []
        for layer, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            bound = (input_scale if layer == 0 else 1.0) / math.sqrt(fan_in)
            W = (torch.rand(E, fan_in, fan_out, generator=generator, dtype=torch.float64) * 2 - 1) * bound
            b = (torch.rand(E, 1, fan_out, generator=generator, dtype=torch.float64) * 2 - 1) * bound
            self.shapes += [(fan_in, fan_out), (1, fan_out)]
            chunks += [W.reshape(E, -1), b.reshape(E, -1)]
        self.E = E
        self.x = torch.cat(chunks, dim=1).to(dtype)
        groups: dict[str, list[int]] = {}
        for index, name in enumerate(activations):
            groups.setdefault(name, []).append(index)
        # Members run permuted so each activation's members are contiguous; `order`/`inverse`
        # translate between the caller's order and the internal one.
        self.order = torch.tensor([i for members in groups.values() for i in members])
        self.inverse = torch.argsort(self.order)
        self.blocks = [(ACTIVATION_FUNCTIONS[name], len(members)) for name, members in groups.items()]
        self.x = self.x[self.order].contiguous()

    def forward(self, x: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Outputs (E, m) of the members with flat parameters x (E, P) at inputs (E, m, d)."""
        h = inputs
        sizes = [math.prod(shape) for shape in self.shapes]
        parts = x.split(sizes, dim=1)
        n_layers = len(self.shapes) // 2
        split = [count for _, count in self.blocks]
        for layer in range(n_layers):
            W = parts[2 * layer].view(self.E, *self.shapes[2 * layer])
            b = parts[2 * layer + 1].view(self.E, *self.shapes[2 * layer + 1])
            h = torch.baddbmm(b, h, W)
            if layer + 1 < n_layers:
                h = torch.cat([fn(part) for (fn, _), part in zip(self.blocks, h.split(split))])
        return h.squeeze(-1)

    def jacobian(self, x: torch.Tensor, inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Outputs (E, m) and their Jacobians (E, m, P) with respect to each member's parameters.

        Each output o_{e,i} depends on member e's parameters only, and through the pre-activations
        z_l = h_{l−1}W_l + b_l of point i only, so one backward sweep of the per-point signals
        δ_l = ∂o_i/∂z_l (δ_L = 1, δ_l = (δ_{l+1}W_{l+1}ᵀ) ⊙ σ′(z_l)) gives every row:
        ∂o_i/∂W_l[a, b] = h_{l−1,a}·δ_{l,b} and ∂o_i/∂b_l = δ_l. Cost O(mP), the same as m
        per-point gradients computed together, instead of m backward passes. Columns follow the
        layout of x (per layer: W_l row-major as (fan_in, fan_out), then b_l).
        """
        x = x.detach()
        sizes = [math.prod(shape) for shape in self.shapes]
        parts = x.split(sizes, dim=1)
        n_layers = len(self.shapes) // 2
        split = [count for _, count in self.blocks]
        weights = [parts[2 * layer].view(self.E, *self.shapes[2 * layer]) for layer in range(n_layers)]
        h = inputs
        hs: list[torch.Tensor] = []
        slopes: list[torch.Tensor] = []
        for layer in range(n_layers):
            b = parts[2 * layer + 1].view(self.E, *self.shapes[2 * layer + 1])
            hs.append(h)
            z = torch.baddbmm(b, h, weights[layer])
            if layer + 1 < n_layers:
                # σ(z) and σ′(z) per activation block, σ′ by a local vector-Jacobian product.
                z_leaf = z.detach().requires_grad_(True)
                with torch.enable_grad():
                    a = torch.cat([fn(part) for (fn, _), part in zip(self.blocks, z_leaf.split(split))])
                    (slope,) = torch.autograd.grad(a, z_leaf, torch.ones_like(a))
                h = a.detach()
                slopes.append(slope)
            else:
                out = z.squeeze(-1)
        delta = torch.ones(self.E, inputs.shape[1], 1, dtype=x.dtype)
        columns: list[torch.Tensor] = []
        for layer in reversed(range(n_layers)):
            E, m, fan_in = hs[layer].shape
            columns.append(delta)  # bias columns
            columns.append((hs[layer][:, :, :, None] * delta[:, :, None, :]).reshape(E, m, -1))
            if layer > 0:
                delta = torch.bmm(delta, weights[layer].transpose(1, 2)) * slopes[layer - 1]
        return out, torch.cat(columns[::-1], dim=2)


def adam_phase(
    loss_fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, *, steps: int, lr: float
) -> torch.Tensor:
    """Full-batch Adam on Σ_e L_e with learning rate lr·½(1 + cos(πt/steps)); returns the new x.

    Adam's update is elementwise, so each member moves exactly as if trained alone.
    """
    steps = check_int("steps", steps, low=0)
    lr = check_real("lr", lr, low=0.0, low_open=True)
    x = x.detach().clone().requires_grad_(True)
    if steps == 0:
        return x.detach()
    optimizer = torch.optim.Adam([x], lr=lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda t: 0.5 * (1 + math.cos(math.pi * t / steps)))
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        loss_fn(x).sum().backward()
        optimizer.step()
        schedule.step()
    return x.detach()


def _loss_and_grad(loss_fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = x.detach().requires_grad_(True)
    losses = loss_fn(x)
    (grad,) = torch.autograd.grad(losses.sum(), x)
    return losses.detach(), grad


def batched_lbfgs(
    loss_fn: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    *,
    max_iter: int,
    history: int = 20,
    ftol: float = 1e-9,
    gtol: float = 1e-7,
    patience: int = 10,
    c1: float = 1e-4,
    max_backtracks: int = 30,
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
    max_iter = check_int("max_iter", max_iter, low=0)
    history = check_int("history", history, low=1)
    ftol = check_real("ftol", ftol, low=0.0)
    gtol = check_real("gtol", gtol, low=0.0)
    patience = check_int("patience", patience, low=1)
    max_backtracks = check_int("max_backtracks", max_backtracks, low=1)
    x = x.detach().clone()
    E, P = x.shape
    f, g = _loss_and_grad(loss_fn, x)
    S = torch.zeros(history, E, P, dtype=x.dtype)
    Y = torch.zeros(history, E, P, dtype=x.dtype)
    rho = torch.zeros(history, E, dtype=x.dtype)
    gamma = torch.ones(E, dtype=x.dtype)
    # Per-member ring buffers: member e's newest pair sits in slot newest[e], and it has
    # filled[e] pairs; a member that does not move leaves its buffer untouched.
    newest = torch.full((E,), -1, dtype=torch.long)
    filled = torch.zeros(E, dtype=torch.long)
    members = torch.arange(E)
    iterations = torch.zeros(E, dtype=torch.long)
    quiet = torch.zeros(E, dtype=torch.long)
    backtracks = torch.zeros(E, dtype=torch.long)
    converged = g.norm(dim=1) <= gtol * f.abs().clamp(min=1.0)
    first = torch.ones(E, dtype=torch.bool)  # no usable curvature yet: scale the first step
    retry = torch.zeros(E, dtype=torch.bool)
    p_prev = torch.zeros_like(x)
    t_prev = torch.ones(E, dtype=x.dtype)
    loss_half = None
    for step in range(max_iter):
        if step == (max_iter + 1) // 2:
            loss_half = f.clone()
        active = ~converged
        if not bool(active.any()):
            break
        # Two-loop recursion, newest pair first, batched over members.
        q = g.clone()
        alphas = []
        slots = []
        for i in range(int(filled.max())):
            slot = (newest - i) % history
            weight = torch.where(i < filled, rho[slot, members], torch.zeros_like(gamma))
            slots.append((S[slot, members], Y[slot, members], weight))
        for s_i, y_i, rho_i in slots:
            a = rho_i * (s_i * q).sum(1)
            q -= a[:, None] * y_i
            alphas.append(a)
        r = gamma[:, None] * q
        for (s_i, y_i, rho_i), a in zip(reversed(slots), reversed(alphas)):
            b = rho_i * (y_i * r).sum(1)
            r += s_i * (a - b)[:, None]
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
        t = torch.ones(E, dtype=x.dtype)
        t[first] = torch.clamp(1.0 / g[first].abs().sum(1).clamp(min=1e-300), max=1.0)
        t = torch.where(retry, t_prev, t)
        trial, g_trial = _loss_and_grad(loss_fn, x + t[:, None] * p)
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
            small = (f - trial).abs() <= ftol * torch.maximum(torch.maximum(f.abs(), trial.abs()), torch.full_like(f, 1e-300))
            quiet = torch.where(move, torch.where(small, quiet + 1, torch.zeros_like(quiet)), quiet)
            iterations += move.long()
            first &= ~move
            x = torch.where(move[:, None], x + s, x)
            f = torch.where(move, trial, f)
            g = torch.where(move[:, None], g_trial, g)
        converged |= stuck | (quiet >= patience) | (active & (g.norm(dim=1) <= gtol * f.abs().clamp(min=1.0)))
        retry &= ~converged
    return x, LBFGSResult(
        loss=f, grad_norm=g.norm(dim=1), iterations=iterations, converged=converged,
        loss_half=f.clone() if loss_half is None else loss_half,
    )


__all__ = ["ACTIVATION_FUNCTIONS", "EnsembleMLP", "LBFGSResult", "adam_phase", "batched_lbfgs"]
