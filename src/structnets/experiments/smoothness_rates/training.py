"""Training of one ``smoothness-rates`` unit: a batched ensemble by Adam, then L-BFGS and/or Levenberg–Marquardt.

The optimisers and the model live in the library (:mod:`structnets.training.lbfgs`,
:mod:`structnets.training.levenberg_marquardt`, :mod:`structnets.models.ensemble_mlp`); this module
only wires them to the unit's data and collects the per-member diagnostics the report reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # torch is imported inside the unit functions, not at CLI start-up
    import torch


@dataclass(frozen=True)
class EnsembleFit:
    """Per-member results of :func:`fit_rates_ensemble`; every field is an (E,) array.

    Attributes:
        train_mse: final training MSE.
        test_mse: ‖f̂ − f‖² averaged over the test points (excess risk; the noiseless error).
        adam_train_mse: training MSE after the Adam phase (before L-BFGS).
        converged: L-BFGS met its convergence test (relative loss change ≤ ftol over ``patience``
            iterations, or gradient norm ≤ gtol) within its budget.
        iterations: accepted L-BFGS steps.
        grad_norm: final gradient norm of the training MSE.
        late_gain: training MSE after half the L-BFGS budget minus the final one: what the second
            half still gained (0 if the member converged in the first half).
    """

    train_mse: np.ndarray
    test_mse: np.ndarray
    adam_train_mse: np.ndarray
    converged: np.ndarray
    iterations: np.ndarray
    grad_norm: np.ndarray
    late_gain: np.ndarray


def fit_rates_ensemble(
    X: torch.Tensor,
    y: torch.Tensor,
    X_test: torch.Tensor,
    f_test: torch.Tensor,
    activations: list[str],
    width: int,
    depth: int,
    *,
    steps: int,
    lr: float,
    seed: int,
    input_scale: float = 1.0,
    lbfgs_iters: int = 0,
    ftol: float = 1e-9,
    lm_iters: int = 0,
    lm_solver: str = "cholesky",
    device: str = "cpu",
) -> EnsembleFit:
    """Fit one smoothness-rates unit's ensemble: E independent float64 MLPs at once, Adam, then per-member L-BFGS.

    Args:
        X: (E, n, d) inputs in [0,1]^d (mapped to [−1,1]^d inside); y: (E, n) targets.
        X_test: (m, d) test points shared by all members; f_test: (m,) noiseless target values.
        activations: E activation names.
        width, depth: hidden width and number of weight layers.
        steps, lr: full-batch Adam steps with a cosine learning-rate decay from lr to 0.
        seed: seeds the initialisation (U(±1/√fan_in) for weights and biases).
        input_scale: the first layer's weights and biases are drawn from U(±input_scale/√d)
            instead, so the initial units already vary on the scale of the target's oscillations.
        lbfgs_iters: budget of the second phase, full-batch L-BFGS per member
            (:func:`structnets.training.lbfgs.batched_lbfgs`), in batched
            loss-and-gradient evaluations; 0 skips it.
        ftol: L-BFGS relative loss-change tolerance of the convergence test.
        lm_iters: budget of an optional third phase, per-member Levenberg–Marquardt
            (:func:`structnets.training.levenberg_marquardt.batched_levenberg_marquardt`, exact
            Gauss–Newton curvature from
            :meth:`structnets.models.ensemble_mlp.EnsembleMLP.jacobian`); 0 skips it. The convergence
            fields then describe this last phase.
        lm_solver: how Levenberg–Marquardt solves its damped step, ``"qr"`` or ``"cholesky"``.
        device: torch device of the training (``"cpu"``, ``"cuda"``, ``"cuda:N"``); the
            initialisation is drawn on the CPU and moved, so a seed starts from the same point.

    Returns:
        an :class:`EnsembleFit`. The objective is Σ_e MSE_e and both optimisers act on each member
        with its own quantities only (Adam elementwise; L-BFGS with per-member curvature pairs and
        line search), so every member trains exactly as if alone.
    """
    import torch

    from ...models.ensemble_mlp import EnsembleForward, EnsembleMLP
    from ...training.lbfgs import adam_phase, batched_lbfgs

    E, n, d = X.shape
    net = EnsembleMLP(
        activations,
        d,
        width,
        depth,
        generator=torch.Generator().manual_seed(seed),
        input_scale=input_scale,
        dtype=torch.float64,
    )
    Xp = (2 * X[net.order] - 1).double().to(device)
    yp = y[net.order].double().to(device)

    def losses(x: torch.Tensor) -> torch.Tensor:
        return ((net.outputs(x, Xp) - yp) ** 2).mean(dim=1)

    def value_and_grad(x: torch.Tensor, members: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        if members is None:
            return net.mse_and_grad(x, Xp, yp)
        return net.mse_and_grad(x, Xp[members], yp[members], members)

    x = adam_phase(None, net.x.to(device), steps=steps, lr=lr, value_and_grad=value_and_grad)
    adam_train = losses(x)
    if lbfgs_iters > 0:
        x, result = batched_lbfgs(None, x, max_iter=lbfgs_iters, ftol=ftol, value_and_grad=value_and_grad)
        converged, iterations = result.converged, result.iterations
        grad_norm, late_gain = result.grad_norm, result.loss_half - result.loss
    if lm_iters > 0:
        from ...training.levenberg_marquardt import batched_levenberg_marquardt

        def rows(members: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
            if members.numel() == E:
                return Xp, yp, None
            return Xp[members], yp[members], members

        # The last residual evaluation's forward pass: LM linearises the members whose trial step
        # it accepted at exactly that trial point, so their Jacobians reuse the pass.
        last: dict[str, Any] = {}

        def residuals(x: torch.Tensor, members: torch.Tensor) -> torch.Tensor:
            inputs, targets, subset = rows(members)
            forward = net.forward_pass(x, inputs, subset)
            last["members"], last["forward"] = members, forward
            return forward.outputs - targets

        def kept_forward(x: torch.Tensor, members: torch.Tensor) -> EnsembleForward | None:
            """The rows of the last pass for ``members`` if it was at ``x`` (checked exactly), else None."""
            if not last:
                return None
            index = torch.searchsorted(last["members"], members).clamp(max=last["members"].numel() - 1)
            if not torch.equal(last["members"][index], members) or not torch.equal(last["forward"].x[index], x):
                return None
            return last["forward"].rows(index, None if members.numel() == E else members)

        # One Jacobian buffer for the whole phase (LM keeps no Jacobian between calls).
        buffer = torch.empty(E, n, net.P, dtype=x.dtype, device=x.device)

        def jacobian(x: torch.Tensor, members: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            inputs, targets, subset = rows(members)
            forward = kept_forward(x, members)
            out, J = net.jacobian(x, inputs, subset, out=buffer[: members.numel()], forward=forward)
            last.clear()  # the next linearisation follows a new residual evaluation
            return out - targets, J

        # Only the members still running (residuals) and those that moved (Jacobians) are evaluated.
        x, lm = batched_levenberg_marquardt(
            residuals, jacobian, x, max_iter=lm_iters, ftol=ftol, solver=lm_solver, by_members=True
        )
        converged, iterations = lm.converged, lm.iterations
        grad_norm, late_gain = lm.grad_norm, lm.loss_half - lm.loss
    if lbfgs_iters == 0 and lm_iters == 0:
        converged = torch.zeros(E, dtype=torch.bool, device=x.device)
        iterations = torch.zeros(E, dtype=torch.long, device=x.device)
        grad_norm = value_and_grad(x, None)[1].norm(dim=1)
        late_gain = torch.full((E,), float("nan"), dtype=torch.float64, device=x.device)
    train = losses(x)
    test_in = (2 * X_test.double().to(device) - 1).expand(E, -1, -1)
    test = ((net.outputs(x, test_in) - f_test.double().to(device)) ** 2).mean(dim=1)
    inv = net.inverse

    def host(values: torch.Tensor) -> np.ndarray:
        return values.detach().cpu()[inv].numpy()

    return EnsembleFit(
        train_mse=host(train),
        test_mse=host(test),
        adam_train_mse=host(adam_train),
        converged=host(converged),
        iterations=host(iterations),
        grad_norm=host(grad_norm),
        late_gain=host(late_gain),
    )


__all__ = ["EnsembleFit", "fit_rates_ensemble"]
