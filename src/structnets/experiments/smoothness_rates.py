"""Experiment ``smoothness-rates``: error vs samples n and vs parameters N at constant depth.

Liu, Wang, Wu, Zhang, *Smoothness Adaptivity in Constant-Depth Neural Networks: Optimal Rates via
Smooth Activations* (arXiv 2602.19691). Claims: at constant depth, smooth activations (GELU,
SiLU/Swish, Tanh) attain the approximation rate N^{−s/d} and the minimax estimation rate
n^{−2s/(2s+d)} (up to log n) for every smoothness s, by growing width alone; fixed-depth ReLU
networks are capped at N^{−min(L−1, s)/d} (Theorem 6.1), where the paper's depth L counts the
layers of neurons, input and output included: L − 1 is our number of weight layers L_w, so a
one-hidden-layer net (L_w = 2) is capped at N^{−min(2, s)/d}
(:func:`structnets.analysis.rates.relu_depth_cap_exponent` derives the convention). Their experiment: two-layer networks with ReLU, Tanh
and GELU on smooth targets; the test error falls faster in n for the smooth activations.

Two parts, each unit one batched ensemble (every activation × every seed trained at once as one
model with a leading ensemble dimension, ``torch.baddbmm`` per layer), trained in float64 by
full-batch Adam with cosine decay and then per-member full-batch L-BFGS
(:mod:`structnets.experiments._rates_training`) until its relative loss change stalls or its budget
runs out. Both optimisers use each member's own quantities only, so the members are independent and
the result equals training them one by one. Every member records whether it converged.

* ``estimation``: y = f(x) + σε on n uniform points, target :func:`structnets.data.lacunary_target`
  of smoothness s; parameter budget N ∝ n^{d/(2s+d)} (the theory's choice; width solved from N at
  the given depth, :func:`estimation_width`); empirical risk minimisation; excess risk ‖f̂ − f‖² on
  fresh test points. Fitted slope of log excess risk on log n (bootstrap 95% interval over seeds)
  beside −2s/(2s+d).
* ``separation_cells``: further estimation cells (d, s, L_w) where the cap predicts a gap in n between
  smooth activations (−2s/(2s+d)) and ReLU (at best −2r/(2r+d), r = min(L_w, s)): d = 1, s = 3,
  L_w = 2 (−0.857 vs −0.8) and d = 2, s = 4, L_w = 2 (−0.8 vs −0.667). The report compares the
  slopes pairwise (same data per seed) and keeps the optimisation-limited flag.
* ``approximation``: noiseless fit on a dense training set, parameter counts N on a log grid (width
  solved per depth), test RMSE vs N; fitted slope beside −s/d (smooth) and the ReLU cap
  −min(L_w, s)/d.

Depth L in this module counts weight layers (L_w; the paper's L − 1): L = 2 is the two-layer (one
hidden layer) network of the paper's experiment.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..runner.figures import save_figure
from ..runner.experiment import FunctionExperiment, JSONScalar, Unit

if TYPE_CHECKING:  # torch is imported inside the unit functions, not at CLI start-up
    import torch

ACTIVATIONS = ("relu", "tanh", "gelu", "silu")
SMOOTH = ("tanh", "gelu", "silu")


@dataclass(frozen=True)
class SmoothnessRatesConfig:
    """Configuration of ``smoothness-rates``; ``SmoothnessRatesConfig()`` is the full run.

    Attributes:
        targets: (d, s) pairs; each is a lacunary target of smoothness s on [0,1]^d.
        sizes: training-set sizes n (estimation part), a log grid.
        seeds: repetitions (data, noise and initialisation).
        depths: numbers of weight layers L (2 = one hidden layer).
        activations: subset of relu, tanh, gelu, silu.
        noise: σ of the Gaussian label noise.
        budget: c_N in N ≈ c_N n^{d/(2s+d)} (see :func:`estimation_width`).
        steps: full-batch Adam steps of the first phase (cosine-decayed learning rate from ``lr``).
        lr: initial Adam learning rate.
        lbfgs_iters: budget of the second phase, per-member full-batch L-BFGS in float64, in batched
            loss-and-gradient evaluations (a member that backtracks spends one without moving;
            converged members are frozen).
        ftol: relative loss-change tolerance of the L-BFGS convergence test.
        settle_tol: a member counts as *settled* (optimisation not limiting its error) if L-BFGS
            converged, or if the training MSE gained in the second half of the L-BFGS budget is at
            most settle_tol × its measured error (excess risk, or noiseless test MSE).
        min_width: smallest hidden width of the estimation part.
        separation_cells: extra estimation cells ``"d:s:L"`` (L = weight layers) run at that one
            depth, where the ReLU cap predicts a slower rate in n than smooth activations
            (L < s); e.g. ``"1:3:2"``. Settable as ``--set separation_cells=1:3:2,2:4:2``.
        approx_targets: (d, s) pairs of the approximation part; s > L (weight layers) is where the
            ReLU depth cap −min(L, s)/d binds (e.g. s = 3 at L = 2: cap −2 against −3).
        approx_parameters: parameter counts N of the approximation part (a log grid; the width is
            solved from N at each depth, so the depths are compared at equal N).
        lm_iters: budget of an optional third phase of the estimation part, per-member
            Levenberg–Marquardt (0: none; the estimation part uses L-BFGS).
        approx_steps: Adam steps of the approximation part.
        approx_lbfgs_iters: L-BFGS budget of the approximation part (0: none).
        approx_lm_iters: Levenberg–Marquardt budget of the approximation part, after Adam (and
            L-BFGS if any): exact Gauss–Newton curvature, which the noiseless fits need to get
            below the training errors where first-order methods and L-BFGS stall.
        floor_max_pieces: the certified ReLU floor (d = 1 targets) is computed exactly for piece
            bounds up to this many; above it the reported floor is 0 (valid, vacuous).
        approx_train: training points of the approximation part (noiseless).
        approx_seeds: seeds of the approximation part.
        levels: dyadic levels K of the lacunary targets.
        directions: ``"dense"`` (2^{k(d−1)} random wave directions at level k, ~2^{kd} degrees of
            freedom like a generic function of smoothness s) or ``"one"`` (one direction per level:
            every level a ridge function, effectively a one-dimensional problem for a network);
            see :func:`structnets.data.lacunary_target`. The same for d = 1.
        input_scale: first-layer initialisation scale (see :func:`train_ensemble`).
        test_points: fresh test points per unit.
    """

    targets: tuple[tuple[int, float], ...] = ((1, 1.0), (2, 2.0))
    separation_cells: tuple[str, ...] = ("1:3:2", "2:4:2")
    sizes: tuple[int, ...] = (50, 100, 200, 500, 1000, 2000, 5000)
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    depths: tuple[int, ...] = (2, 6)
    activations: tuple[str, ...] = ACTIVATIONS
    noise: float = 0.1
    budget: float = 8.0
    steps: int = 300
    lr: float = 1e-2
    lbfgs_iters: int = 2500
    ftol: float = 1e-9
    settle_tol: float = 0.1
    input_scale: float = 10.0
    min_width: int = 6
    approx_targets: tuple[tuple[int, float], ...] = ((1, 3.0), (2, 3.0))
    approx_parameters: tuple[int, ...] = (40, 80, 160, 320, 640)
    lm_iters: int = 0
    approx_steps: int = 300
    approx_lbfgs_iters: int = 0
    approx_lm_iters: int = 1000
    floor_max_pieces: int = 600
    approx_train: int = 2048
    approx_seeds: tuple[int, ...] = (0, 1, 2)
    levels: int = 10
    directions: str = "dense"
    test_points: int = 4096

    @classmethod
    def quick(cls) -> SmoothnessRatesConfig:
        """The ``--quick`` preset: d = 1, s = 1, 6 sizes over two decades, 5 seeds, short training."""
        return cls(
            targets=((1, 1.0),),
            sizes=(20, 50, 125, 300, 800, 2000),
            steps=150,
            lbfgs_iters=450,
            levels=8,
            separation_cells=("1:3:2",),
            approx_targets=((1, 3.0),),
            approx_parameters=(40, 120, 360),
            approx_steps=150,
            approx_lm_iters=300,
            approx_train=512,
            approx_seeds=(0, 1),
            test_points=2048,
        )

    def __post_init__(self) -> None:
        from .._validation import check_choice, check_int, check_real

        cells = parse_separation_cells(self.separation_cells)
        if not self.targets and not cells:
            raise ValueError("`targets` must list at least one (d, s) pair when `separation_cells` is empty, got ()")
        for d, s in self.targets:
            check_int("targets", d, low=1)
            check_real("targets", s, low=0.0, low_open=True)
        for n in self.sizes:
            check_int("sizes", n, low=10)
        for depth in self.depths:
            check_int("depths", depth, low=2)
        for name in self.activations:
            check_choice("activations", name, ACTIVATIONS)
        if not (self.seeds and self.sizes and self.depths and self.activations):
            raise ValueError("`seeds`, `sizes`, `depths` and `activations` must be non-empty")
        check_real("noise", self.noise, low=0.0)
        check_real("budget", self.budget, low=0.0, low_open=True)
        check_int("steps", self.steps, low=0)
        check_real("lr", self.lr, low=0.0, low_open=True)
        check_int("lbfgs_iters", self.lbfgs_iters, low=0)
        check_real("ftol", self.ftol, low=0.0)
        check_real("settle_tol", self.settle_tol, low=0.0)
        check_int("min_width", self.min_width, low=1)
        check_int("approx_steps", self.approx_steps, low=0)
        check_int("approx_lbfgs_iters", self.approx_lbfgs_iters, low=0)
        check_int("lm_iters", self.lm_iters, low=0)
        check_int("approx_lm_iters", self.approx_lm_iters, low=0)
        check_int("floor_max_pieces", self.floor_max_pieces, low=1)
        check_choice("directions", self.directions, ("one", "dense"))
        for d, s in self.approx_targets:
            check_int("approx_targets", d, low=1)
            check_real("approx_targets", s, low=0.0, low_open=True)
        for N in self.approx_parameters:
            check_int("approx_parameters", N, low=8)


def parse_separation_cells(cells: tuple[str, ...]) -> list[tuple[int, float, int]]:
    """Parse ``"d:s:L"`` strings into (d, s, weight layers); a ValueError names the bad cell."""
    out = []
    for cell in cells:
        parts = str(cell).split(":")
        try:
            d, s, depth = int(parts[0]), float(parts[1]), int(parts[2])
            if len(parts) != 3 or d < 1 or not (s > 0 and math.isfinite(s)) or depth < 2:
                raise ValueError
        except (ValueError, IndexError):
            raise ValueError(
                f"`separation_cells` entries must be 'd:s:L' with int d >= 1, float s > 0 and int L >= 2, got {cell!r}"
            ) from None
        out.append((d, s, depth))
    return out


def _estimation_cells(config: SmoothnessRatesConfig) -> list[tuple[int, float, int]]:
    """(d, s, L) of every estimation cell: targets × depths, then the separation cells (no repeats)."""
    cells = [(d, float(s), depth) for d, s in config.targets for depth in config.depths]
    for cell in parse_separation_cells(config.separation_cells):
        if cell not in cells:
            cells.append(cell)
    return cells


# --------------------------------------------------------------------------------------------
# Batched ensemble of MLPs


def width_for_parameters(N: float, d: int, depth: int) -> int:
    """The width w whose MLP (d → w → … → w → 1, ``depth`` weight layers) has about N parameters.

    Parameters: (d+1)w + (depth−2)(w+1)w + (w+1); solved for w (≥ 2).
    """
    a = depth - 2
    b = d + 1 + a + 1
    c = 1 - N
    w = -c / b if a == 0 else (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)
    return max(2, round(w))


def parameter_count(d: int, width: int, depth: int) -> int:
    """Exact parameter count of the MLP d → width × (depth − 1) → 1."""
    return (d + 1) * width + (depth - 2) * (width + 1) * width + width + 1


def estimation_width(n: int, d: int, s: float, depth: int, *, budget: float, min_width: int, n_min: int) -> int:
    """Hidden width of the estimation part: parameter budget N(n) ∝ n^{d/(2s+d)}, solved for width.

    N(n) = N₀·(n/n_min)^{d/(2s+d)} with N₀ = max(budget·n_min^{d/(2s+d)}, parameters of the
    ``min_width`` network). Equal to budget·n^{d/(2s+d)} (the theory's choice, Liu et al.) when the
    minimum width does not bind; otherwise the same growth in n from the smallest network that is
    allowed, so the width still grows with n at every depth (a plain max(min_width, ·) would pin
    deep networks at min_width for every n).
    """
    exponent = d / (2 * s + d)
    N0 = max(budget * n_min**exponent, parameter_count(d, min_width, depth))
    return max(min_width, width_for_parameters(N0 * (n / n_min) ** exponent, d, depth))


@dataclass(frozen=True)
class EnsembleFit:
    """Per-member results of :func:`train_ensemble`; every field is an (E,) array.

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


def train_ensemble(
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
) -> EnsembleFit:
    """Train E independent MLPs at once in float64: Adam, then per-member L-BFGS.

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
            (:func:`structnets.experiments._rates_training.batched_lbfgs`), in batched
            loss-and-gradient evaluations; 0 skips it.
        ftol: L-BFGS relative loss-change tolerance of the convergence test.
        lm_iters: budget of an optional third phase, per-member Levenberg–Marquardt
            (:func:`structnets.training.levenberg_marquardt.batched_levenberg_marquardt`, exact
            Gauss–Newton curvature from :meth:`EnsembleMLP.jacobian`); 0 skips it. The convergence
            fields then describe this last phase.
        lm_solver: how Levenberg–Marquardt solves its damped step, ``"qr"`` or ``"cholesky"``.

    Returns:
        an :class:`EnsembleFit`. The objective is Σ_e MSE_e and both optimisers act on each member
        with its own quantities only (Adam elementwise; L-BFGS with per-member curvature pairs and
        line search), so every member trains exactly as if alone.
    """
    import torch

    from ._rates_training import EnsembleMLP, adam_phase, batched_lbfgs

    E, n, d = X.shape
    net = EnsembleMLP(activations, d, width, depth, generator=torch.Generator().manual_seed(seed),
                      input_scale=input_scale, dtype=torch.float64)
    Xp = (2 * X[net.order] - 1).double()
    yp = y[net.order].double()

    def losses(x: torch.Tensor) -> torch.Tensor:
        return ((net.forward(x, Xp) - yp) ** 2).mean(dim=1)

    x = adam_phase(losses, net.x, steps=steps, lr=lr)
    with torch.no_grad():
        adam_train = losses(x)
    if lbfgs_iters > 0:
        x, result = batched_lbfgs(losses, x, max_iter=lbfgs_iters, ftol=ftol)
        converged, iterations = result.converged, result.iterations
        grad_norm, late_gain = result.grad_norm, result.loss_half - result.loss
    if lm_iters > 0:
        from ..training.levenberg_marquardt import batched_levenberg_marquardt

        def residuals(x: torch.Tensor) -> torch.Tensor:
            return net.forward(x, Xp) - yp

        def jacobian(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            out, J = net.jacobian(x, Xp)
            return out - yp, J

        x, lm = batched_levenberg_marquardt(residuals, jacobian, x, max_iter=lm_iters, ftol=ftol,
                                            solver=lm_solver)
        converged, iterations = lm.converged, lm.iterations
        grad_norm, late_gain = lm.grad_norm, lm.loss_half - lm.loss
    if lbfgs_iters == 0 and lm_iters == 0:
        converged = torch.zeros(E, dtype=torch.bool)
        iterations = torch.zeros(E, dtype=torch.long)
        x_grad = x.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(losses(x_grad).sum(), x_grad)
        grad_norm, late_gain = g.norm(dim=1), torch.full((E,), float("nan"), dtype=torch.float64)
    with torch.no_grad():
        train = losses(x)
        test_in = (2 * X_test.double() - 1).expand(E, -1, -1)
        test = ((net.forward(x, test_in) - f_test.double()) ** 2).mean(dim=1)
    inv = net.inverse
    return EnsembleFit(
        train_mse=train[inv].numpy(), test_mse=test[inv].numpy(), adam_train_mse=adam_train[inv].numpy(),
        converged=converged[inv].numpy(), iterations=iterations[inv].numpy(),
        grad_norm=grad_norm[inv].detach().numpy(), late_gain=late_gain[inv].detach().numpy(),
    )


# --------------------------------------------------------------------------------------------
# Units


def _units(config: SmoothnessRatesConfig, finished: pd.DataFrame) -> list[Unit]:
    units: list[Unit] = []
    common = {"activations": list(config.activations), "lr": config.lr, "ftol": config.ftol,
              "levels": config.levels, "directions": config.directions, "test_points": config.test_points,
              "input_scale": config.input_scale}
    for d, s, depth in _estimation_cells(config):
        for n in config.sizes:
            width = estimation_width(n, d, s, depth, budget=config.budget, min_width=config.min_width,
                                     n_min=min(config.sizes))
            units.append(Unit(
                key=f"estimation/d={d}/s={s:g}/L={depth}/n={n}",
                params={"part": "estimation", "d": d, "s": s, "depth": depth, "n": n, "width": width,
                        "noise": config.noise, "seeds": list(config.seeds), "steps": config.steps,
                        "lbfgs_iters": config.lbfgs_iters, "lm_iters": config.lm_iters, **common},
            ))
    for d, s in config.approx_targets:
        for depth in config.depths:
            for N in config.approx_parameters:
                units.append(Unit(
                    key=f"approximation/d={d}/s={s:g}/L={depth}/N={N}",
                    params={"part": "approximation", "d": d, "s": s, "depth": depth, "n": config.approx_train,
                            "width": width_for_parameters(N, d, depth), "noise": 0.0,
                            "seeds": list(config.approx_seeds), "steps": config.approx_steps,
                            "lbfgs_iters": config.approx_lbfgs_iters, "lm_iters": config.approx_lm_iters,
                            **common},
                ))
    # The certified ReLU floor (input dimension 1 only): no training, one dynamic programme each.
    for d, s in config.approx_targets:
        if d != 1:
            continue
        for depth in config.depths:
            for N in config.approx_parameters:
                units.append(Unit(
                    key=f"relu-floor/d={d}/s={s:g}/L={depth}/N={N}",
                    params={"part": "relu-floor", "d": d, "s": s, "depth": depth,
                            "width": width_for_parameters(N, d, depth), "levels": config.levels,
                            "directions": config.directions, "test_points": config.test_points, "max_pieces": config.floor_max_pieces},
                ))
    return units


def _test_points(count: int, d: int) -> np.ndarray:
    """The fresh test points every unit of a run shares (seeded, uniform on [0,1]^d)."""
    return np.random.default_rng(999).random((count, d))


def _run_floor_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    """Certified lower bound on the test MSE of every ReLU network of this depth and width (d = 1).

    Such a network has at most Π(w + 1) = (w + 1)^{L−1} linear pieces
    (:func:`structnets.analysis.relu_piece_bound`), so on the sorted test points its MSE is at
    least the best segmentation into that many least-squares lines
    (:func:`structnets.analysis.piecewise_linear_floor`), whatever its weights.
    """
    import torch

    from ..analysis import piecewise_linear_floor, relu_piece_bound
    from ..data import lacunary_target

    start = time.perf_counter()
    d, s, depth, width = int(params["d"]), float(params["s"]), int(params["depth"]), int(params["width"])
    target = lacunary_target(d, s, levels=int(params["levels"]), seed=0, directions=str(params.get("directions", "one")))
    X_test = _test_points(int(params["test_points"]), d)
    f_test = target(torch.from_numpy(X_test)).numpy()
    pieces = relu_piece_bound([width] * (depth - 1))
    n = len(f_test)
    # ≥ n/2 pieces fit every pair of points exactly: the floor is then exactly 0 (vacuous).
    computed = pieces <= int(params["max_pieces"]) and 2 * pieces < n
    floor = float(piecewise_linear_floor(X_test[:, 0], f_test, pieces)[-1]) if computed else 0.0
    return {
        "part": "relu-floor", "d": d, "s": s, "depth": depth, "n": n, "width": width,
        "parameters": parameter_count(d, width, depth), "pieces": pieces, "floor_computed": computed,
        "floor_mse": floor, "target_variance": float(f_test.var()), "seconds": time.perf_counter() - start,
    }


def _run_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    import torch

    from ..data import lacunary_target

    torch.set_num_threads(1)
    if params["part"] == "relu-floor":
        return _run_floor_unit(params)
    start = time.perf_counter()
    d, s, depth, n, width = int(params["d"]), float(params["s"]), int(params["depth"]), int(params["n"]), int(params["width"])
    target = lacunary_target(d, s, levels=int(params["levels"]), seed=0, directions=str(params.get("directions", "one")))
    seeds = [int(v) for v in params["seeds"]]
    activations = list(params["activations"])
    Xs, ys = [], []
    for seed in seeds:
        X, y = target.sample(n, noise=float(params["noise"]), seed=1000 + seed)
        Xs.append(X)
        ys.append(y)
    X_test = torch.from_numpy(_test_points(int(params["test_points"]), d))
    f_test = target(X_test)
    members = [(name, k) for name in activations for k in range(len(seeds))]
    X = torch.from_numpy(np.stack([Xs[k] for _, k in members]))
    y = torch.from_numpy(np.stack([ys[k] for _, k in members]))
    fit = train_ensemble(
        X, y, X_test, f_test, [name for name, _ in members], width, depth,
        steps=int(params["steps"]), lr=float(params["lr"]), seed=int(sum(seeds) + 7 * n + 13 * width),
        input_scale=float(params["input_scale"]), lbfgs_iters=int(params["lbfgs_iters"]),
        ftol=float(params["ftol"]), lm_iters=int(params.get("lm_iters", 0)),
    )
    # The noise actually drawn: the training MSE of the true f, the level an ERM fits down to.
    noise_mse = float(np.mean([np.mean((ys[k] - target(torch.from_numpy(Xs[k])).numpy()) ** 2) for k in range(len(seeds))]))
    row: dict[str, JSONScalar] = {
        "part": params["part"], "d": d, "s": s, "depth": depth, "n": n, "width": width,
        "parameters": parameter_count(d, width, depth), "noise": float(params["noise"]), "noise_mse": noise_mse,
        "target_variance": float(f_test.var()), "steps": int(params["steps"]), "lbfgs_iters": int(params["lbfgs_iters"]),
        "lm_iters": int(params.get("lm_iters", 0)),
    }
    for i, (name, k) in enumerate(members):
        prefix = f"{name}/{seeds[k]}"
        row[f"{prefix}/train_mse"] = float(fit.train_mse[i])
        row[f"{prefix}/test_mse"] = float(fit.test_mse[i])
        row[f"{prefix}/adam_train_mse"] = float(fit.adam_train_mse[i])
        row[f"{prefix}/converged"] = bool(fit.converged[i])
        row[f"{prefix}/iterations"] = int(fit.iterations[i])
        row[f"{prefix}/grad_norm"] = float(fit.grad_norm[i])
        row[f"{prefix}/late_gain"] = float(fit.late_gain[i])
    row["seconds"] = time.perf_counter() - start
    return row


def _long(results: pd.DataFrame, settle_tol: float = 0.1) -> pd.DataFrame:
    """One row per (unit, activation, seed): errors, optimisation diagnostics and ``settled``.

    A member is settled when L-BFGS converged, or when the training MSE it gained in the second
    half of its L-BFGS budget (``late_gain``) is at most ``settle_tol`` × its measured error
    ``test_mse``: more of the same optimisation would then move that error by a small fraction.
    """
    records = []
    for _, r in results.iterrows():
        for column, value in r.items():
            if not isinstance(column, str) or not column.endswith("/test_mse") or pd.isna(value):
                continue
            name, seed, _ = column.split("/")

            def member(field: str, default: float = float("nan")) -> float:
                v = r.get(f"{name}/{seed}/{field}", default)
                return default if v is None or pd.isna(v) else float(v)

            converged = bool(member("converged", 0.0))
            late_gain = member("late_gain")
            records.append({
                "part": r["part"], "d": int(r["d"]), "s": float(r["s"]), "depth": int(r["depth"]),
                "n": int(r["n"]), "width": int(r["width"]), "parameters": int(r["parameters"]),
                "activation": name, "seed": int(seed), "test_mse": float(value),
                "train_mse": member("train_mse"), "adam_train_mse": member("adam_train_mse"),
                "noise": float(r["noise"]), "noise_mse": float(r.get("noise_mse", r["noise"] ** 2)),
                "converged": converged, "iterations": member("iterations"), "late_gain": late_gain,
                "settled": converged or (np.isfinite(late_gain) and late_gain <= settle_tol * float(value)),
            })
    return pd.DataFrame.from_records(records)


def _slope_table(long: pd.DataFrame, part: str, x: str, y: str) -> list[dict[str, Any]]:
    from ..analysis import loglog_slope

    out = []
    rows = long[long["part"] == part]
    for (d, s, depth, name), group in rows.groupby(["d", "s", "depth", "activation"]):
        values = group[y].to_numpy(float)
        xs = group[x].to_numpy(float)
        keep = values > 0
        if len(np.unique(xs[keep])) < 3:
            continue
        fit = loglog_slope(xs[keep], values[keep], n_boot=1000)
        # The rate is asymptotic: the slope over the largest half of the grid should agree with it
        # too. A slope carried by the small-x end (e.g. over-parametrised fits at small n) does not.
        levels = np.unique(xs[keep])
        upper = keep & (xs >= levels[len(levels) // 2])
        upper_fit = loglog_slope(xs[upper], values[upper], n_boot=1000) if len(np.unique(xs[upper])) >= 3 else None
        out.append({
            "d": d, "s": s, "depth": depth, "activation": name, "fit": fit, "upper_fit": upper_fit,
            "train": float(group["train_mse"].median()), "adam": float(group["adam_train_mse"].median()),
            "train_ratio": float((group["train_mse"] / group["noise_mse"]).median()) if part == "estimation" else float("nan"),
            "settled": int(group["settled"].sum()), "converged": int(group["converged"].sum()), "members": len(group),
            "largest": float(group[y][group[x] == xs.max()].median()),
        })
    return out


def _upper_cell(row: dict[str, Any]) -> str:
    fit = row["upper_fit"]
    return "—" if fit is None else f"{fit.slope:.3f} [{fit.low:.3f}, {fit.high:.3f}]"


def _limited(row: dict[str, Any], share: float = 0.8) -> str:
    return "yes" if row["settled"] < share * row["members"] else "no"


def _separation_section(long: pd.DataFrame, config: SmoothnessRatesConfig) -> list[str]:
    """Pairwise slope differences smooth − ReLU in the estimation cells where the cap predicts a gap."""
    from ..analysis import loglog_slope, minimax_exponent
    from ..analysis.rates import relu_estimation_exponent

    rows = long[long["part"] == "estimation"]
    cells = sorted({(int(d), float(s), int(L)) for d, s, L in zip(rows["d"], rows["s"], rows["depth"])
                    if relu_estimation_exponent(float(s), int(d), int(L)) > minimax_exponent(float(s), int(d)) + 1e-12})
    if not cells:
        return []
    lines = [
        "",
        "## (a′) Where the ReLU cap predicts separation in n (L < s)",
        "",
        "Each smooth member and the ReLU member of the same seed see the same data, so the slope of "
        "log(smooth excess risk / ReLU excess risk) in log n is the slope difference, with a stratified "
        "bootstrap 95% interval. *Smooth faster* = the interval lies below 0. Predicted difference: "
        "−2s/(2s+d) − (−2r/(2r+d)), r = min(L, s).",
        "",
        "| d | s | L | smooth rate −2s/(2s+d) | ReLU cap rate −2r/(2r+d) | predicted difference | activation | slope | ReLU slope | difference [95%] | smooth faster | largest-n ratio smooth/ReLU | optimisation-limited (smooth / ReLU) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for d, s, L in cells:
        cell = rows[(rows["d"] == d) & (rows["s"] == s) & (rows["depth"] == L)]
        relu = cell[cell["activation"] == "relu"].set_index(["n", "seed"])["test_mse"]
        if relu.empty:
            continue
        smooth_rate, relu_rate = minimax_exponent(s, d), relu_estimation_exponent(s, d, L)
        relu_summary = {r["activation"]: r for r in _slope_table(cell, "estimation", "n", "test_mse")}
        for name in SMOOTH:
            member = cell[cell["activation"] == name].set_index(["n", "seed"])["test_mse"]
            joined = pd.concat([member.rename("smooth"), relu.rename("relu")], axis=1).dropna()
            joined = joined[(joined["smooth"] > 0) & (joined["relu"] > 0)]
            if joined.empty or joined.index.get_level_values("n").nunique() < 3:
                continue
            ns = joined.index.get_level_values("n").to_numpy(float)
            diff = loglog_slope(ns, (joined["smooth"] / joined["relu"]).to_numpy(float), n_boot=1000)
            largest = joined.loc[joined.index.get_level_values("n") == ns.max()]
            ratio = float(largest["smooth"].median() / largest["relu"].median())
            own, base = relu_summary.get(name), relu_summary.get("relu")
            lines.append(
                f"| {d} | {s:g} | {L} | {smooth_rate:.3f} | {relu_rate:.3f} | {smooth_rate - relu_rate:.3f} | {name} | "
                f"{own['fit'].slope:.3f} | {base['fit'].slope:.3f} | {diff.slope:.3f} [{diff.low:.3f}, {diff.high:.3f}] | "
                f"{'yes' if diff.high < 0 else 'no'} | {ratio:.2f} | {_limited(own)} / {_limited(base)} |"
                if own is not None and base is not None else
                f"| {d} | {s:g} | {L} | {smooth_rate:.3f} | {relu_rate:.3f} | {smooth_rate - relu_rate:.3f} | {name} | — | — | "
                f"{diff.slope:.3f} [{diff.low:.3f}, {diff.high:.3f}] | {'yes' if diff.high < 0 else 'no'} | {ratio:.2f} | — |"
            )
    return lines


def _report(results: pd.DataFrame, config: SmoothnessRatesConfig) -> str:
    from ..analysis import minimax_exponent
    from ..analysis.rates import relu_depth_cap_exponent, relu_estimation_exponent

    long = _long(results, config.settle_tol) if not results.empty else pd.DataFrame()
    lines = [
        "# smoothness-rates: error vs samples and parameters at constant depth",
        "",
        "Liu, Wang, Wu, Zhang, *Smoothness Adaptivity in Constant-Depth Neural Networks*, arXiv 2602.19691. "
        "Paper: smooth activations (GELU, SiLU, Tanh) reach the minimax rate n^{−2s/(2s+d)} (log factors aside) "
        "and the approximation rate N^{−s/d} at constant depth; fixed-depth ReLU is capped at N^{−min(L−1,s)/d} "
        "(Theorem 6.1; the paper's L counts layers of neurons including input and output, so L − 1 = our weight "
        "layers and the cap is −min(L, s)/d in this table's L); "
        "in their two-layer experiment the test error falls markedly faster with n for the smooth activations. "
        f"Ours: lacunary targets of exact smoothness s (K = {config.levels} levels, {config.directions} directions), noise σ = {config.noise:g}, "
        f"budget N ∝ n^{{d/(2s+d)}} (c_N = {config.budget:g}, min width {config.min_width}), float64, "
        f"full-batch Adam ({config.steps} steps, cosine from lr {config.lr:g}, first-layer init scale "
        f"{config.input_scale:g}) then per-member full-batch L-BFGS (≤ {config.lbfgs_iters} iterations, stops on "
        f"relative loss change ≤ {config.ftol:g})"
        + (f" then ≤ {config.lm_iters} Levenberg–Marquardt iterations" if config.lm_iters else "")
        + f"; approximation part {config.approx_steps} Adam steps"
        + (f" + ≤ {config.approx_lbfgs_iters} L-BFGS iterations" if config.approx_lbfgs_iters else "")
        + (f" + ≤ {config.approx_lm_iters} per-member Levenberg–Marquardt iterations (exact Gauss–Newton curvature)"
           if config.approx_lm_iters else "")
        + f"; seeds {list(config.seeds)}; slopes by least squares on "
        "log–log with stratified bootstrap 95% intervals. L = number of weight layers (the paper's L − 1).",
        "",
        f"*Settled* member: L-BFGS converged, or the training MSE it gained in the second half of its L-BFGS budget "
        f"is ≤ {config.settle_tol:g} × its measured error. A row is *optimisation-limited* when fewer than 80% of its "
        "members (all sizes × seeds) are settled.",
        "",
    ]
    if long.empty:
        return "\n".join(lines + ["No results yet.", ""])
    lines += [
        "## (a) Estimation: excess risk ‖f̂ − f‖² vs n",
        "",
        "Train MSE / σ̂²: final training MSE over the mean squared noise actually drawn (≈ 1 − N/n for an "
        "empirical risk minimiser that fits f well; > 1 means bias or underfitting).",
        "",
        "| d | s | L | activation | paper rate −2s/(2s+d) | ReLU cap rate −2r/(2r+d), r = min(L, s) | our slope [95%] | contains paper rate | slope over the largest half of n [95%] | median train MSE after Adam | median train MSE final | train MSE / σ̂² | settled (converged) / members | optimisation-limited | median excess risk at largest n |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in _slope_table(long, "estimation", "n", "test_mse"):
        rate = minimax_exponent(row["s"], row["d"])
        cap = relu_estimation_exponent(row["s"], row["d"], row["depth"])
        fit = row["fit"]
        lines.append(
            f"| {row['d']} | {row['s']:g} | {row['depth']} | {row['activation']} | {rate:.3f} | {cap:.3f} | "
            f"{fit.slope:.3f} [{fit.low:.3f}, {fit.high:.3f}] | {'yes' if fit.contains(rate) else 'no'} | "
            f"{_upper_cell(row)} | {row['adam']:.2e} | {row['train']:.2e} | {row['train_ratio']:.2f} | "
            f"{row['settled']} ({row['converged']}) / {row['members']} | {_limited(row)} | {row['largest']:.2e} |"
        )
    lines += _separation_section(long, config)
    lines += [
        "",
        "## (b) Approximation: test RMSE vs parameters N (noiseless fit)",
        "",
        "| d | s | L | activation | paper rate (smooth: −s/d; ReLU cap: −min(L, s)/d, L = weight layers) | our slope of RMSE [95%] | slope over the largest half of N [95%] | median train MSE after Adam | median train MSE final | settled (converged) / members | optimisation-limited | median RMSE at largest N |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    approx = long[long["part"] == "approximation"].copy()
    if not approx.empty:
        approx["rmse"] = np.sqrt(approx["test_mse"])
        for row in _slope_table(approx, "approximation", "parameters", "rmse"):
            d, s, depth = row["d"], row["s"], row["depth"]
            rate = -s / d if row["activation"] in SMOOTH else relu_depth_cap_exponent(s, d, depth)
            fit = row["fit"]
            lines.append(
                f"| {d} | {s:g} | {depth} | {row['activation']} | {rate:.3f} | {fit.slope:.3f} "
                f"[{fit.low:.3f}, {fit.high:.3f}] | {_upper_cell(row)} | {row['adam']:.2e} | {row['train']:.2e} | "
                f"{row['settled']} ({row['converged']}) / {row['members']} | {_limited(row)} | {row['largest']:.2e} |"
            )
    lines += _floor_section(long, results)
    lines += [
        "",
        "## Where optimisation, not approximation, limits the slope",
        "",
        "Measured errors are approximation + estimation + *optimisation* error; the theory's rates are for the "
        "empirical risk minimiser. Each network is trained to a stationary point where the budget allows "
        "(Adam, then L-BFGS and/or Levenberg–Marquardt until the relative loss change stalls), and every member records whether it got "
        "there (converged) or how much the last half of its budget still gained. Rows flagged optimisation-limited "
        "are evidence about the optimiser at this budget, not about the function class; a stationary point "
        "may still be a poor local minimum, which no per-member test here can rule out.",
        "",
    ]
    return "\n".join(lines)


def _floors(results: pd.DataFrame) -> pd.DataFrame:
    """The certified ReLU floor rows (part ``relu-floor``) with their RMSE."""
    if "part" not in results.columns:
        return pd.DataFrame()
    floors = results[results["part"] == "relu-floor"].copy()
    if not floors.empty:
        floors["floor_rmse"] = np.sqrt(floors["floor_mse"].astype(float))
    return floors


def _floor_section(long: pd.DataFrame, results: pd.DataFrame) -> list[str]:
    """Table (c): the certified ReLU floor against the trained networks of the same depth and size."""
    from ..analysis import loglog_slope

    floors = _floors(results)
    if floors.empty:
        return []
    lines = [
        "",
        "## (c) The ReLU depth cap, certified (d = 1)",
        "",
        "A ReLU network ℝ → ℝ with L weight layers of width w has at most (w + 1)^{L−1} linear pieces, so on "
        "the sorted test points its MSE is at least that of the best segmentation into that many "
        "least-squares lines (exact dynamic programme). The floor holds for **every** ReLU network of this "
        "depth and width, however trained; a smooth network of the same size below it beats all of them. "
        "Floor 0 with pieces ≥ n/2 (or above `floor_max_pieces`) is vacuous. At L = 2 the floor is the paper's "
        "cap N^{−min(L−1, s)/d} with the paper's L = 3 (layers of neurons): −2 for s ≥ 2 at d = 1.",
        "",
        "| d | s | L | N | width | pieces ≤ | certified ReLU floor RMSE | trained ReLU RMSE (median) | ReLU ≥ floor | best smooth activation: RMSE (median) | smooth below floor |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    approx = long[long["part"] == "approximation"] if not long.empty else pd.DataFrame()
    for _, row in floors.sort_values(["d", "s", "depth", "parameters"]).iterrows():
        d, s, depth, width = int(row["d"]), float(row["s"]), int(row["depth"]), int(row["width"])
        trained = approx[(approx["d"] == d) & (approx["s"] == s) & (approx["depth"] == depth)
                         & (approx["width"] == width)] if not approx.empty else pd.DataFrame()
        relu = np.sqrt(trained[trained["activation"] == "relu"]["test_mse"]) if not trained.empty else pd.Series(dtype=float)
        smooth = trained[trained["activation"].isin(SMOOTH)] if not trained.empty else pd.DataFrame()
        floor = float(row["floor_rmse"])
        relu_cell = f"{relu.median():.2e}" if len(relu) else "—"
        # Rounding in the dynamic programme can put the floor ~1e-9 relative above the true value.
        relu_ok = ("yes" if bool((relu >= floor * (1 - 1e-6)).all()) else "**no**") if len(relu) else "—"
        if len(smooth):
            medians = np.sqrt(smooth.groupby("activation")["test_mse"].median())
            best = medians.idxmin()
            smooth_cell = f"{best} {medians[best]:.2e}"
            below = "yes" if medians[best] < floor else "no"
        else:
            smooth_cell, below = "—", "—"
        floor_cell = f"{floor:.2e}" if bool(row["floor_computed"]) else "0 (vacuous)"
        lines.append(f"| {d} | {s:g} | {depth} | {int(row['parameters'])} | {width} | {int(row['pieces'])} | "
                     f"{floor_cell} | {relu_cell} | {relu_ok} | {smooth_cell} | {below} |")
    slopes = []
    for (d, s, depth), group in floors.groupby(["d", "s", "depth"]):
        group = group[group["floor_computed"].astype(bool) & (group["floor_mse"] > 0)]
        if len(group) >= 3:
            fit = loglog_slope(group["parameters"].to_numpy(float), group["floor_rmse"].to_numpy(float), n_boot=200)
            cap = -min(float(depth), float(s)) / d
            slopes.append(f"d = {d}, s = {s:g}, L = {depth}: {fit.slope:.2f} (cap −min(L, s)/d = {cap:.2f})")
    if slopes:
        lines += ["", "Slope of the certified floor's RMSE in N (the cap itself, measured): " + "; ".join(slopes) + "."]
    return lines


def _figures(results: pd.DataFrame, config: SmoothnessRatesConfig, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    from ..analysis import minimax_exponent
    from ..analysis.rates import relu_depth_cap_exponent, relu_estimation_exponent

    out_dir.mkdir(parents=True, exist_ok=True)
    if results.empty:
        return []
    long = _long(results)
    floors = _floors(results)
    paths: list[Path] = []
    colours = {"relu": "tab:red", "tanh": "tab:blue", "gelu": "tab:green", "silu": "tab:purple"}
    for part, x, ylabel in (("estimation", "n", "excess risk ‖f̂ − f‖²"), ("approximation", "parameters", "test RMSE")):
        rows = long[long["part"] == part]
        if rows.empty:
            continue
        panels = sorted({(d, s, L) for d, s, L in zip(rows["d"], rows["s"], rows["depth"])})
        fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.4), squeeze=False)
        for ax, (d, s, depth) in zip(axes[0], panels):
            panel = rows[(rows["d"] == d) & (rows["s"] == s) & (rows["depth"] == depth)]
            for name, group in panel.groupby("activation"):
                values = group["test_mse"] if part == "estimation" else np.sqrt(group["test_mse"])
                medians = values.groupby(group[x]).median()
                ax.loglog(group[x], values, ".", alpha=0.25, color=colours.get(name))
                ax.loglog(medians.index, medians.to_numpy(), "o-", color=colours.get(name), label=name, ms=3)
            xs = np.array(sorted(panel[x].unique()), dtype=float)
            if part == "estimation":
                first = panel[panel[x] == xs[0]]["test_mse"].median()
                ax.loglog(xs, first * (xs / xs[0]) ** minimax_exponent(s, d), "k--", lw=0.8, label="−2s/(2s+d)")
                cap = relu_estimation_exponent(s, d, depth)
                if cap > minimax_exponent(s, d) + 1e-12:
                    relu_first = panel[(panel[x] == xs[0]) & (panel["activation"] == "relu")]["test_mse"].median()
                    ax.loglog(xs, relu_first * (xs / xs[0]) ** cap, ":", color="tab:red", lw=0.9,
                              label=f"ReLU cap {cap:.2f}")
            else:
                # Reference slopes from the first N: −s/d (smooth), and the ReLU cap −min(L, s)/d
                # (the paper's L − 1 = our weight layers L).
                first = np.sqrt(panel[panel[x] == xs[0]]["test_mse"]).median()
                ax.loglog(xs, first * (xs / xs[0]) ** (-s / d), "k-.", lw=0.8, label=f"−s/d = {-s / d:.2f}")
                cap = relu_depth_cap_exponent(s, d, depth)
                relu_first = np.sqrt(panel[(panel[x] == xs[0]) & (panel["activation"] == "relu")]["test_mse"]).median()
                if np.isfinite(relu_first):
                    ax.loglog(xs, relu_first * (xs / xs[0]) ** cap, ":", color="tab:red", lw=0.9,
                              label=f"ReLU cap −min(L,s)/d = {cap:.2f}")
            if part == "approximation" and not floors.empty:
                floor = floors[(floors["d"] == d) & (floors["s"] == s) & (floors["depth"] == depth)
                               & floors["floor_computed"].astype(bool)].sort_values("parameters")
                if not floor.empty:
                    ax.loglog(floor["parameters"], floor["floor_rmse"], "k--", lw=1.0, label="ReLU floor (any weights)")
            ax.set_title(f"d={d}, s={s:g}, {depth} weight layers", fontsize=9)
            ax.set_xlabel(x)
            ax.xaxis.set_minor_formatter(NullFormatter())  # minor labels collide on short ranges
        axes[0][0].set_ylabel(ylabel)
        for ax in axes[0]:  # the reference slopes differ per panel
            ax.legend(fontsize=6)
        fig.suptitle(f"smoothness-rates: {part}", fontsize=10)
        paths.append(save_figure(fig, out_dir / f"{part}.png"))
    return paths


EXPERIMENT = FunctionExperiment(
    name="smoothness-rates",
    description=(
        "Error vs samples n and vs parameters N for ReLU/Tanh/GELU/SiLU at constant depth, fitted "
        "log-log slopes against -2s/(2s+d) (Liu, Wang, Wu, Zhang, arXiv 2602.19691)"
    ),
    config_class=SmoothnessRatesConfig,
    units_fn=_units,
    run_unit_fn=_run_unit,
    report_fn=_report,
    figures_fn=_figures,
)

__all__ = ["ACTIVATIONS", "EXPERIMENT", "EnsembleFit", "SmoothnessRatesConfig", "estimation_width", "parameter_count",
           "train_ensemble", "width_for_parameters"]
