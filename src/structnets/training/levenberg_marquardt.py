"""Batched Levenberg–Marquardt: many independent nonlinear least-squares fits in lock-step.

Each member e of a batch minimises its own mean squared residual L_e(x_e) = ‖r_e(x_e)‖²/n with
the damped Gauss–Newton step (Levenberg 1944, Marquardt 1963)

    (J_eᵀJ_e + μ_e D_e) h_e = −J_eᵀr_e,        D_e = diag(J_eᵀJ_e), floored,

and Nielsen's damping update (Madsen, Nielsen & Tingleff 2004, *Methods for non-linear least
squares problems*, Alg. 3.16): the gain ratio ϱ = actual / predicted decrease of ½‖r‖², with the
predicted decrease ½hᵀ(μDh − Jᵀr); a step with ϱ > 0 is taken and μ ← μ·max(1/3, 1 − (2ϱ − 1)³),
otherwise μ ← μν, ν ← 2ν. Marquardt's scaling D makes the step invariant to rescaling a
parameter, which matters for networks whose first-layer weights are ~10× the others.

For small smooth-activation networks (P ≲ 10³ parameters) fitted to noiseless data, LM reaches
lower training errors than L-BFGS at the same wall time (5–500× in MSE on the fits of
``smoothness-rates``, ``benchmarks/rates_refiners.py``; not for ReLU networks): it uses the
Gauss–Newton curvature JᵀJ exactly, which is what a residual near zero needs. Its cost per step
is O(nP² + P³) per member (forming JᵀJ and a Cholesky solve), so it is for small P only. JᵀJ,
the nP² part, is formed by BLAS ``syrk`` (:func:`gram`: one triangle, half the flops of a general
product); the damping μD is added to JᵀJ's diagonal in place and undone exactly (the saved
diagonal is restored), the step comes from two triangular solves (:func:`cholesky_step`), and
nothing of size (E, P, P) is copied while every member runs. (For P > n the n × n dual (JJᵀ + μI) would be cheaper; the fits here
have n ≥ 3P, so it is not implemented.)

Members share nothing but the loop: each has its own μ, ν, acceptance and stopping test, and a
member whose step is rejected keeps its cached JᵀJ (only moved members are re-linearised), so
the result equals fitting every member alone. With ``by_members`` the residuals and Jacobians are
evaluated for the members still running (respectively moved) only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from .._validation import MAX_STEPS, check_choice, check_fits_in_memory, check_int, check_real

ResidualFn = Callable[..., torch.Tensor]
"""x (E, P) ↦ residuals (E, n); with ``by_members``, (x_rows (E', P), members (E',)) ↦ (E', n)."""
JacobianFn = Callable[..., tuple[torch.Tensor, torch.Tensor]]
"""x (E, P) ↦ (residuals (E, n), Jacobians (E, n, P)); with ``by_members``, of the rows given."""


@dataclass(frozen=True)
class LevenbergMarquardtResult:
    """Per-member outcome of :func:`batched_levenberg_marquardt`; every field is an (E,) tensor.

    Attributes:
        loss: final mean squared residual L_e.
        grad_norm: final ‖∇L_e‖₂ = ‖2J_eᵀr_e/n‖₂.
        iterations: accepted steps.
        converged: the member met a stopping test before ``max_iter``: relative loss change
            ≤ ftol over ``patience`` accepted steps, ‖∇L_e‖ ≤ gtol·max(1, L_e), or damping so large
            (μ > ``max_damping``) that no step decreases the loss in floating point.
        loss_half: the loss after ⌈max_iter/2⌉ iterations (the final loss if every member stopped
            earlier); loss_half − loss is what the second half of the budget still gained.
        damping: final μ_e.
    """

    loss: torch.Tensor
    grad_norm: torch.Tensor
    iterations: torch.Tensor
    converged: torch.Tensor
    loss_half: torch.Tensor
    damping: torch.Tensor


def gradient(J: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """Jᵀr of every member: J (E, n, P), r (E, n) → (E, P).

    As the row-vector product rᵀJ (``torch.bmm`` of (E, 1, n) with (E, n, P)): the same numbers as
    ``bmm(Jᵀ, r)`` to rounding, 5× faster on the CPU here (a transposed matrix-vector ``bmm`` takes
    a slow path).
    """
    return torch.bmm(r[:, None, :], J).squeeze(1)


def gram(J: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """JᵀJ of every member: (E, n, P) → (E, P, P), exactly symmetric.

    On the CPU (float32/float64) through NumPy's ``matmul``, which recognises a matrix times its
    own transpose and calls BLAS ``syrk``: one triangle, half the flops of a general product
    (2.1× faster than ``torch.bmm`` for E = 12, n = 2,048, P = 640 on one core here,
    ``benchmarks/rates_lm.py``); the same numbers as ``torch.bmm(Jᵀ, J)`` to rounding.
    Elsewhere (a GPU) ``torch.bmm``.

    Args:
        J: (E, n, P) Jacobians.
        out: optional contiguous (E, P, P) tensor of J's dtype and device to write into (saves
            the allocation, whose fresh pages cost as much as a fifth of the product at P = 640).

    Returns:
        (E, P, P) Gram matrices J_eᵀJ_e (``out`` when given).
    """
    if J.device.type == "cpu" and J.dtype in (torch.float32, torch.float64):
        Jn = J.detach().contiguous().numpy()
        if out is not None and out.is_contiguous() and out.dtype == J.dtype and out.device == J.device:
            np.matmul(Jn.transpose(0, 2, 1), Jn, out=out.numpy())
            return out
        return torch.from_numpy(np.matmul(Jn.transpose(0, 2, 1), Jn))
    if out is not None:
        return torch.bmm(J.transpose(1, 2), J, out=out)
    return torch.bmm(J.transpose(1, 2), J)


def cholesky_step(chol: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """The step h = −(LLᵀ)⁻¹g of every member, given the Cholesky factors L (E, P, P) and g (E, P).

    Two triangular solves (``torch.linalg.solve_triangular``); the same numbers as
    ``torch.cholesky_solve`` to rounding, 6× faster for E = 12, P = 640 on one core here (that
    copies the factors into LAPACK's column-major layout first).

    Args:
        chol: (E, P, P) lower-triangular factors.
        g: (E, P) right-hand sides.

    Returns:
        (E, P) steps.
    """
    forward = torch.linalg.solve_triangular(chol, g[:, :, None], upper=False)
    return -torch.linalg.solve_triangular(chol.transpose(1, 2), forward, upper=True).squeeze(-1)


def batched_levenberg_marquardt(
    residual_fn: ResidualFn,
    jacobian_fn: JacobianFn,
    x: torch.Tensor,
    *,
    max_iter: int,
    ftol: float = 1e-10,
    gtol: float = 1e-12,
    patience: int = 10,
    initial_damping: float = 1e-3,
    max_damping: float = 1e16,
    solver: str = "cholesky",
    by_members: bool = False,
) -> tuple[torch.Tensor, LevenbergMarquardtResult]:
    """Minimise every L_e(x_e) = ‖r_e(x_e)‖²/n independently by Levenberg–Marquardt.

    Args:
        residual_fn: maps x (E, P) to residuals (E, n); row e may depend on x_e only.
        jacobian_fn: maps x (E, P) to (residuals (E, n), Jacobians (E, n, P)), J_e = ∂r_e/∂x_e.
        x: (E, P) starting point (float64 recommended: the normal equations square the
            condition number).
        max_iter: budget of iterations; each evaluates the residuals of the members still
            running once and re-linearises (Jacobian and JᵀJ) the members whose step was accepted.
        ftol: a member converges after ``patience`` consecutive accepted steps with a relative
            loss change ≤ ftol.
        gtol: ... or when ‖∇L_e‖₂ ≤ gtol·max(1, L_e).
        patience: see ``ftol``.
        initial_damping: μ₀ = initial_damping (relative to Marquardt's scaling D = diag(JᵀJ)).
        max_damping: a member whose μ exceeds this is stuck (converged in floating point).
        solver: ``"qr"`` solves the step as the least-squares problem
            min ‖[J; (μD)^{1/2}]h + [r; 0]‖ by Householder QR, accurate to cond(J)·ε;
            ``"cholesky"`` solves the normal equations, cheaper (the whole ``smoothness-rates``
            fit took 1.6× longer with QR) but accurate only to cond(J)²·ε, which can stall fits
            whose Jacobian has cond(J) ≳ 10⁷. On the ``smoothness-rates`` fits both took the same
            path, so Cholesky is the default. JᵀJ is formed by :func:`gram`.
        by_members: the functions take the rows to evaluate: ``residual_fn(x_rows, members)`` and
            ``jacobian_fn(x_rows, members)``, with ``members`` the sorted (E',) indices of the rows
            x_rows (E', P), and return those members' values only. Then converged members and
            members whose step was rejected cost nothing; the iterates are the same. Either way
            no Jacobian is kept between calls of ``jacobian_fn`` (what the QR solver keeps is
            copied), so ``jacobian_fn`` may return views of one reused buffer.

    Returns:
        (x, result): the final (E, P) parameters and a :class:`LevenbergMarquardtResult`.
    """
    max_iter = check_int("max_iter", max_iter, low=0, high=MAX_STEPS)
    ftol = check_real("ftol", ftol, low=0.0)
    gtol = check_real("gtol", gtol, low=0.0)
    patience = check_int("patience", patience, low=1, high=MAX_STEPS)
    initial_damping = check_real("initial_damping", initial_damping, low=0.0, low_open=True)
    max_damping = check_real("max_damping", max_damping, low=0.0, low_open=True)
    check_choice("solver", solver, ("qr", "cholesky"))
    if not isinstance(by_members, bool):
        raise TypeError(f"`by_members` must be a bool, got {by_members!r} ({type(by_members).__name__})")
    for name, function in (("residual_fn", residual_fn), ("jacobian_fn", jacobian_fn)):
        if not callable(function):
            raise TypeError(f"`{name}` must be callable, got {function!r:.80} ({type(function).__name__})")
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"`x` must be an (E, P) torch.Tensor, got {type(x).__name__}")
    if x.dim() != 2:
        raise ValueError(f"`x` must be an (E, P) tensor, got shape {tuple(x.shape)}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"`x` must be a floating-point tensor, got dtype {x.dtype}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("`x` must be finite, got NaN or inf entries")
    x = x.detach().clone()
    E, P = x.shape
    # the normal equations hold one P × P matrix per member
    check_fits_in_memory(f"`x` of shape {(E, P)}", 3 * E * P * P, itemsize=x.element_size())  # JᵀJ, work, factors
    every = torch.arange(E, device=x.device)

    def residuals(rows: torch.Tensor, members: torch.Tensor) -> torch.Tensor:
        """Residuals (E', n) of ``members`` at parameters ``rows`` (E', P)."""
        if by_members:
            return residual_fn(rows, members)
        if members.numel() == E:
            return residual_fn(rows)
        full = x.clone()
        full[members] = rows
        return residual_fn(full)[members]

    def linearise(members: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(residuals (E', n), Jacobians (E', n, P)) of ``members`` at the current x."""
        if by_members:
            return jacobian_fn(x[members], members)
        r_all, J_all = jacobian_fn(x)
        if members.numel() == E:
            return r_all, J_all
        return r_all[members], J_all[members]

    r, J = linearise(every)
    # a wrong shape broadcast or failed deep inside the solve; n = 0 divided by zero
    if r.dim() != 2 or r.shape[0] != E or r.shape[1] < 1 or J.shape != (E, r.shape[1], P) or P < 1:
        raise ValueError(
            f"`jacobian_fn` must give residuals (E, n) = ({E}, n) with n >= 1 and Jacobians (E, n, P) for `x` of "
            f"shape {(E, P)} with P >= 1, got {tuple(r.shape)} and {tuple(J.shape)}"
        )
    n = r.shape[1]
    g = gradient(J, r)  # Jᵀr (E, P)
    # Per-member linearisation, replaced for the members that move: the normal equations need
    # JᵀJ (E, P, P) only; the QR step needs J and r themselves (JᵀJ's diagonal is their column norms).
    if solver == "cholesky":
        A = gram(J)
        del J
    else:
        A = None
        J, r = J.clone(), r.clone()
    half_sq = 0.5 * (r * r).sum(1)  # ½‖r‖²
    mu = torch.full((E,), initial_damping, dtype=x.dtype, device=x.device)
    nu = torch.full((E,), 2.0, dtype=x.dtype, device=x.device)
    iterations = torch.zeros(E, dtype=torch.long, device=x.device)
    quiet = torch.zeros(E, dtype=torch.long, device=x.device)

    def grad_norm() -> torch.Tensor:
        return 2.0 / n * g.norm(dim=1)

    def loss() -> torch.Tensor:
        return 2.0 * half_sq / n

    converged = grad_norm() <= gtol * loss().clamp(min=1.0)
    loss_half = None
    # where the damped matrices of a subset of members are formed and factored: one buffer for the
    # whole run, not a fresh (E', P, P) gather each iteration (a small saving: the fresh pages and
    # scatter of a 10-member JᵀJ measured 2 % of its product here)
    work = torch.empty_like(A) if A is not None and E > 1 else None
    # the Cholesky factors, written in LAPACK's column-major layout: no fresh (E, P, P) output and
    # no layout copy each iteration (0.083 → 0.063 s for E = 12, P = 641 on one core; same factors)
    factors = torch.empty_like(A).mT if A is not None else None
    infos = torch.empty(E, dtype=torch.int32, device=x.device)
    for step in range(max_iter):
        if step == (max_iter + 1) // 2:
            loss_half = loss().clone()
        active = ~converged
        if not bool(active.any()):
            break
        idx = active.nonzero().squeeze(1)
        whole = idx.numel() == E  # no copies of the (E, P, P) matrices while every member runs
        g_act = g if whole else g[idx]
        mu_act = mu if whole else mu[idx]
        if A is not None:
            if whole or work is None:
                A_act = A
            else:
                A_act = torch.index_select(A, 0, idx, out=work[: idx.numel()])
            diag = torch.diagonal(A_act, dim1=1, dim2=2)
        else:
            diag = (J[idx] * J[idx]).sum(1)
        # Marquardt's scaling, floored so that dead units (zero columns of J) stay solvable.
        D = torch.maximum(diag, 1e-12 * diag.amax(1, keepdim=True).clamp(min=1e-300))
        damping = mu_act[:, None] * D
        if solver == "qr":
            augmented = torch.cat([J[idx], torch.diag_embed(damping.sqrt())], dim=1)
            rhs = torch.cat([-r[idx], torch.zeros(idx.numel(), P, dtype=x.dtype, device=x.device)], dim=1)
            h_act = torch.linalg.lstsq(augmented, rhs[:, :, None]).solution.squeeze(-1)
            solved = torch.isfinite(h_act).all(1)
            h_act = torch.where(solved[:, None], h_act, torch.zeros_like(h_act))
        else:
            # A + diag(μD), the same numbers as adding μD·I, formed in A itself (or its gathered copy) and undone
            # exactly by restoring the saved diagonal (no copy of the (E, P, P) matrices).
            diagonal = torch.diagonal(A_act, dim1=1, dim2=2)
            saved = diagonal.clone()
            diagonal.add_(damping)
            try:
                assert factors is not None  # the Cholesky solver keeps JᵀJ, so its buffers exist
                chol, info = torch.linalg.cholesky_ex(A_act, out=(factors[: idx.numel()], infos[: idx.numel()]))
            finally:
                diagonal.copy_(saved)
            solved = info == 0
            if bool(solved.all()):
                h_act = cholesky_step(chol, g_act)
            else:
                h_act = torch.zeros(idx.numel(), P, dtype=x.dtype, device=x.device)
                if bool(solved.any()):
                    h_act[solved] = cholesky_step(chol[solved], g_act[solved])
            del chol
        x_trial = (x if whole else x[idx]) + h_act
        r_trial = residuals(x_trial, idx)
        if r_trial.shape != (idx.numel(), n):
            raise ValueError(
                f"`residual_fn` must give residuals of shape {(idx.numel(), n)} (those of `jacobian_fn`), "
                f"got {tuple(r_trial.shape)}"
            )
        trial_act = 0.5 * (r_trial * r_trial).sum(1)
        predicted = 0.5 * (h_act * (damping * h_act - g_act)).sum(1)
        half_act = half_sq if whole else half_sq[idx]
        rho_act = (half_act - trial_act) / predicted.clamp(min=1e-300)
        ok_act = solved & (predicted > 0) & (rho_act > 0) & torch.isfinite(trial_act)
        ok = torch.zeros(E, dtype=torch.bool, device=x.device)
        ok[idx] = ok_act
        rho = torch.zeros(E, dtype=x.dtype, device=x.device)
        rho[idx] = rho_act
        trial = half_sq.clone()
        trial[idx] = trial_act
        failed = active & ~ok
        mu = torch.where(failed, mu * nu, mu)
        nu = torch.where(failed, 2 * nu, nu)
        if bool(ok.any()):
            moved = ok.nonzero().squeeze(1)
            small = (half_sq - trial).abs() <= ftol * torch.maximum(half_sq.abs(), trial.abs()).clamp(min=1e-300)
            quiet = torch.where(ok, torch.where(small, quiet + 1, torch.zeros_like(quiet)), quiet)
            factor = torch.clamp(1 - (2 * rho - 1) ** 3, min=1.0 / 3.0)
            mu = torch.where(ok, mu * factor, mu)
            nu = torch.where(ok, torch.full_like(nu, 2.0), nu)
            iterations += ok.long()
            if moved.numel() == E:
                x = x_trial
            else:
                x = x.clone()
                x[moved] = x_trial[ok_act]
            # Re-linearise the moved members only (the expensive O(nP²) part).
            r_moved, J_moved = linearise(moved)
            g_moved = gradient(J_moved, r_moved)
            if moved.numel() == E:
                g = g_moved
                if A is not None:
                    A = gram(J_moved, out=A)
                else:
                    J, r = J_moved.clone(), r_moved.clone()
            else:
                g[moved] = g_moved
                if A is not None:
                    # each moved member's JᵀJ written in place (the same product per member)
                    for row, member in enumerate(moved.tolist()):
                        gram(J_moved[row : row + 1], out=A[member : member + 1])
                else:
                    J[moved], r[moved] = J_moved, r_moved
            del J_moved
            half_sq = torch.where(ok, trial, half_sq)
        converged |= (quiet >= patience) | (mu > max_damping) | (active & (grad_norm() <= gtol * loss().clamp(min=1.0)))
    final = loss()
    return x, LevenbergMarquardtResult(
        loss=final,
        grad_norm=grad_norm(),
        iterations=iterations,
        converged=converged,
        loss_half=final.clone() if loss_half is None else loss_half,
        damping=mu,
    )


__all__ = ["LevenbergMarquardtResult", "batched_levenberg_marquardt", "cholesky_step", "gradient", "gram"]
