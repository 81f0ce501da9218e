"""Experiment ``lipschitz-density``: fixed-width density of 1-Lipschitz ResNets, measured against depth.

Murari, Furuya, Schönlieb, *Approximation theory for 1-Lipschitz ResNets* (NeurIPS 2025, arXiv
2505.12003), Theorem 4.1: the networks vᵀ∘Φ_L∘A_{L−1}∘…∘A₁∘Φ₁∘Q of width d + 3, with
norm-constrained affine maps Aᵢ between the gradient-step blocks Φᵢ, are dense in the scalar
1-Lipschitz functions on compacts of ℝᵈ as the depth L grows. The same paper shows every scalar
piecewise-affine 1-Lipschitz function is represented *exactly* through its max-min representation.

We fit random piecewise-affine 1-Lipschitz targets
(:func:`~structnets.constructive.random_lattice_target_1d`,
:func:`~structnets.constructive.random_maxmin_target` in 2-D) two ways:

* ``exact``: :func:`~structnets.constructive.maxmin_network` of the target's max-min pieces, in
  float64; we record its error (0 up to rounding), its depth (number of MaxMin levels and of
  layers), its width, and its layer-wise certified bound (the head's scale s ≥ 1, see
  :mod:`structnets.constructive.maxmin`), beside the measured secant ratio of what it computes.
* ``trained``: ``lipschitz_resnet(d, 1, None, depth, variant="fixed-width")`` (width d + 3),
  trained by full-batch Adam (cosine schedule) on the squared error at a grid of points, for each
  depth; every trained model is certified by
  :func:`~structnets.analysis.lipschitz_upper_bound` in eval mode (≤ 1), and its sup error and RMSE
  are measured against the float64 target on a denser grid.

Training is vectorised over seeds: the seeds' parameters are stacked and trained as one batched
network with the library's parametrisation (A = V / max(1, ‖V‖₂), τ = 2·sigmoid(θ)/‖W‖₂²); the
trained parameters are then loaded into library models, which are the ones certified and measured.

Each unit is one (target, model, depth); units are pure and seeded.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...runner.experiment import FunctionExperiment, JSONScalar, Unit, run_experiment
from ...runner.figures import save_figure


@dataclass(frozen=True)
class LipschitzDensityConfig:
    """Configuration of ``lipschitz-density``; ``LipschitzDensityConfig()`` is the full run.

    Attributes:
        pieces_1d: one 1-D target (on [−1, 1]) per entry, with that many linear pieces.
        groups_2d: one 2-D max-min target (on [−1, 1]²) per entry, with that many groups.
        group_size_2d: pieces per group of the 2-D targets.
        target_seed: seed of every target's generator.
        depths: residual blocks L of the trained fixed-width networks.
        width: residual width; None is the theorem's d + 3.
        seeds: initialisation seeds, trained together (vectorised).
        steps, lr: full-batch Adam steps with a cosine schedule from ``lr`` to 0.
        step: initial s of every block's learnable step τ = s/‖W‖₂², in (0, 2) (see
            :func:`fit_fixed_width`; 1.9 fits better than the builder's default 1, measured).
        train_per_axis_1d, train_per_axis_2d: training grid points per axis (1-D and 2-D targets).
        eval_per_axis_1d, eval_per_axis_2d: evaluation grid points per axis (sup error and RMSE).
        tolerance: sup error at which a depth counts as "reached" in the report.
    """

    pieces_1d: tuple[int, ...] = (4, 12)
    groups_2d: tuple[int, ...] = (2, 6)
    group_size_2d: int = 3
    target_seed: int = 0
    depths: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    width: int | None = None
    seeds: tuple[int, ...] = (0, 1, 2)
    steps: int = 2000
    lr: float = 1e-2
    step: float = 1.9
    train_per_axis_1d: int = 257
    train_per_axis_2d: int = 21
    eval_per_axis_1d: int = 8193
    eval_per_axis_2d: int = 257
    tolerance: float = 0.02

    @classmethod
    def quick(cls) -> LipschitzDensityConfig:
        """The ``--quick`` preset: one 1-D and one 2-D target, depths 1 and 2, 100 steps, 2 seeds."""
        return cls(
            pieces_1d=(4,), groups_2d=(2,), group_size_2d=2, depths=(1, 2), seeds=(0, 1), steps=100,
            train_per_axis_1d=65, train_per_axis_2d=13, eval_per_axis_1d=1025, eval_per_axis_2d=65,
        )

    def __post_init__(self) -> None:
        from ..._validation import check_int, check_real

        if not self.pieces_1d and not self.groups_2d:
            raise ValueError("`pieces_1d` and `groups_2d` must not both be empty (no targets), got () and ()")
        for count in self.pieces_1d:
            check_int("pieces_1d", count, low=1)
        for count in self.groups_2d:
            check_int("groups_2d", count, low=1)
        check_int("group_size_2d", self.group_size_2d, low=1)
        check_int("target_seed", self.target_seed, low=0)
        if not self.depths:
            raise ValueError("`depths` must list at least one depth, got ()")
        for depth in self.depths:
            check_int("depths", depth, low=1)
        if self.width is not None:
            check_int("width", self.width, low=1)
        if not self.seeds:
            raise ValueError("`seeds` must list at least one seed, got ()")
        for seed in self.seeds:
            check_int("seeds", seed, low=0)
        check_int("steps", self.steps, low=1)
        check_real("lr", self.lr, low=0.0, low_open=True)
        check_real("step", self.step, low=0.0, high=2.0, low_open=True, high_open=True)
        check_int("train_per_axis_1d", self.train_per_axis_1d, low=2)
        check_int("train_per_axis_2d", self.train_per_axis_2d, low=2)
        check_int("eval_per_axis_1d", self.eval_per_axis_1d, low=2)
        check_int("eval_per_axis_2d", self.eval_per_axis_2d, low=2)
        check_real("tolerance", self.tolerance, low=0.0, low_open=True)


# --------------------------------------------------------------------------------------------
# Targets


def make_target(spec: Mapping[str, Any]) -> Any:
    """The :class:`~structnets.constructive.LipschitzTarget` a unit's ``target`` spec describes."""
    from ...constructive import random_lattice_target_1d, random_maxmin_target

    if spec["kind"] == "1d":
        return random_lattice_target_1d(int(spec["pieces"]), seed=int(spec["seed"]))
    return random_maxmin_target(2, int(spec["groups"]), int(spec["group_size"]), seed=int(spec["seed"]))


def _target_specs(config: LipschitzDensityConfig) -> list[dict[str, Any]]:
    specs: list[dict[str, Any]] = [
        {"kind": "1d", "pieces": k, "seed": config.target_seed} for k in config.pieces_1d
    ]
    specs += [
        {"kind": "2d", "groups": g, "group_size": config.group_size_2d, "seed": config.target_seed}
        for g in config.groups_2d
    ]
    return specs


def _target_name(spec: Mapping[str, Any]) -> str:
    return make_target(spec).name


# --------------------------------------------------------------------------------------------
# Vectorised training of fixed-width networks


def fit_fixed_width(
    target: Callable[[np.ndarray], np.ndarray],
    dim: int,
    depth: int,
    *,
    width: int | None = None,
    seeds: Sequence[int] = (0,),
    steps: int = 1000,
    lr: float = 1e-2,
    train_per_axis: int = 65,
    step: float = 1.0,
    low: float = -1.0,
    high: float = 1.0,
) -> list[Any]:
    """Train ``lipschitz_resnet(dim, 1, width, depth, variant="fixed-width")`` on ``target``, one per seed.

    Full-batch Adam (cosine schedule to 0) on the mean squared error at the tensor grid of
    ``train_per_axis``ᵈ points of [low, high]ᵈ, all seeds at once: the seeds' parameters are
    stacked and trained as one batched network with the library's parametrisation
    (lift/head/between maps A = V / max(1, ‖V‖₂); blocks x − τWᵀReLU(Wx + b), τ = 2·sigmoid(θ)/‖W‖₂²),
    float64. The trained parameters are loaded into library models (which compute τ and A from a
    certified B ≥ ‖·‖₂ in eval mode), so what is returned is certified 1-Lipschitz.

    Args:
        target: callable (n, dim) float64 array → (n,) array, finite on [low, high]ᵈ.
        dim: input dimension d ≥ 1.
        depth: residual blocks L ≥ 1.
        width: residual width ≥ 1; None is the theorem's d + 3 (Murari, Furuya, Schönlieb, Thm. 4.1).
        seeds: initialisation seeds (non-empty); model i is built under ``seeded(seeds[i])``.
        steps, lr: Adam steps (≥ 1) and initial learning rate (> 0).
        train_per_axis: grid points per axis (≥ 2).
        step: initial s ∈ (0, 2) of every block's learnable τ = s/‖W‖₂² (s = 2 is the reflection
            the paper's max/min units use; s = 1 projects the slope out along W where ReLU is on).
        low, high: the domain.

    Returns:
        one float64 ``nn.Sequential`` per seed, in eval mode.

    Raises:
        ValueError: naming the argument (``target`` not callable or not finite on the domain,
            ``depth``/``width``/``steps`` < 1, empty ``seeds``, ...).
    """
    import torch

    from ..._validation import check_int, check_real
    from ...constructive.lipschitz_targets import _check_domain, check_target, grid_points
    from ...models import lipschitz_resnet
    from ...training.fit import seeded

    dim = _check_positive_int("dim", dim)
    depth = _check_positive_int("depth", depth)
    if width is not None:
        width = _check_positive_int("width", width)
    low, high = _check_domain(low, high)
    check_target(target, dim, low, high)
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence) or len(seeds) == 0:
        raise ValueError(f"`seeds` must be a non-empty sequence of ints ≥ 0, got {seeds!r}")
    seeds = [check_int("seeds", s, low=0) for s in seeds]
    steps = _check_positive_int("steps", steps)
    lr = check_real("lr", lr, low=0.0, low_open=True)
    train_per_axis = check_int("train_per_axis", train_per_axis, low=2)
    step = check_real("step", step, low=0.0, high=2.0, low_open=True, high_open=True)

    x_np = grid_points(dim, train_per_axis, low, high)
    y_np = np.asarray(target(x_np), dtype=np.float64).reshape(-1)
    if y_np.size != len(x_np) or not np.isfinite(y_np).all():
        raise ValueError(
            f"`target` must give one finite value per training point ({len(x_np)} points of "
            f"[{low}, {high}]^{dim}), got shape {y_np.shape} with non-finite: {not np.isfinite(y_np).all()}"
        )
    models = []
    for seed in seeds:
        with seeded(seed):
            models.append(lipschitz_resnet(dim, 1, width, depth, variant="fixed-width", step=step, dtype=torch.float64))
    params = _stack(models, depth)
    x = torch.tensor(x_np).expand(len(seeds), -1, -1)
    y = torch.tensor(y_np).expand(len(seeds), -1)
    tensors = list(params.values())
    first = [torch.zeros_like(p) for p in tensors]
    second = [torch.zeros_like(p) for p in tensors]
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    for t in range(steps):
        # Sum of per-model means: each model's gradient is its own MSE gradient, and Adam is
        # elementwise, so every seed trains exactly as it would alone.
        loss = ((_batched_forward(params, x) - y) ** 2).mean(dim=1).sum()
        grads = torch.autograd.grad(loss, tensors)
        # Adam (Kingma & Ba, 2015) with cosine annealing lr·(1 + cos(πt/T))/2, written out: same
        # update as torch.optim.Adam + CosineAnnealingLR, without torch.optim's import of
        # torch._dynamo (seconds per process).
        rate = lr * (1.0 + math.cos(math.pi * t / steps)) / 2.0
        correction1, correction2 = 1.0 - beta1 ** (t + 1), 1.0 - beta2 ** (t + 1)
        with torch.no_grad():
            for p, g, m, v in zip(tensors, grads, first, second):
                m.mul_(beta1).add_(g, alpha=1.0 - beta1)
                v.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
                p.addcdiv_(m, v.sqrt().div_(math.sqrt(correction2)).add_(eps), value=-rate / correction1)
    _unstack(params, models, depth)
    for model in models:
        model.eval()
    return models


def _check_positive_int(name: str, value: Any) -> int:
    """check_int with low=1, but a wrong type is a ValueError too (the argument is named either way)."""
    from ..._validation import check_int

    try:
        return check_int(name, value, low=1)
    except TypeError as error:
        raise ValueError(str(error)) from None


def _stack(models: list[Any], depth: int) -> dict[str, Any]:
    """Stack the seeds' parameters: lift (B, w, d), blocks (B, L, ·), between maps (B, L, w, w), head."""
    import torch

    states = [m.state_dict() for m in models]

    def stack(keys: list[str]) -> torch.Tensor:
        return torch.stack([torch.stack([s[k] for k in keys]) for s in states]).clone().requires_grad_(True)

    blocks = [2 * i + 1 for i in range(depth)]
    between = [2 * i + 2 for i in range(depth)]
    head = 2 * depth + 1
    return {
        "lift_V": stack(["0.raw_weight"])[:, 0].detach().requires_grad_(True),
        "lift_b": stack(["0.bias"])[:, 0].detach().requires_grad_(True),
        "W": stack([f"{i}.weight" for i in blocks]),
        "b": stack([f"{i}.bias" for i in blocks]),
        "theta": stack([f"{i}.step_logit" for i in blocks]),
        "A_V": stack([f"{i}.raw_weight" for i in between]),
        "A_b": stack([f"{i}.bias" for i in between]),
        "head_V": stack([f"{head}.raw_weight"])[:, 0].detach().requires_grad_(True),
        "head_b": stack([f"{head}.bias"])[:, 0].detach().requires_grad_(True),
    }


def _unstack(params: dict[str, Any], models: list[Any], depth: int) -> None:
    import torch

    with torch.no_grad():
        for n, model in enumerate(models):
            state = model.state_dict()
            state["0.raw_weight"] = params["lift_V"][n]
            state["0.bias"] = params["lift_b"][n]
            for i in range(depth):
                state[f"{2 * i + 1}.weight"] = params["W"][n, i]
                state[f"{2 * i + 1}.bias"] = params["b"][n, i]
                state[f"{2 * i + 1}.step_logit"] = params["theta"][n, i]
                state[f"{2 * i + 2}.raw_weight"] = params["A_V"][n, i]
                state[f"{2 * i + 2}.bias"] = params["A_b"][n, i]
            state[f"{2 * depth + 1}.raw_weight"] = params["head_V"][n]
            state[f"{2 * depth + 1}.bias"] = params["head_b"][n]
            model.load_state_dict({k: v.detach().clone() for k, v in state.items()})


def _batched_forward(params: dict[str, Any], x: Any) -> Any:
    """(B, n, d) → (B, n): the fixed-width network of each of B parameter sets (see :func:`fit_fixed_width`)."""
    import torch

    def constrained(V: torch.Tensor) -> torch.Tensor:
        # svdvals' gradient is stable even at repeated singular values (identity-initialised maps).
        return V / torch.linalg.svdvals(V)[..., :1, None].clamp_min(1.0)

    lift = constrained(params["lift_V"])
    between = constrained(params["A_V"])
    head = constrained(params["head_V"])
    W = params["W"]
    tau = 2.0 * torch.sigmoid(params["theta"]) / torch.linalg.svdvals(W)[..., 0] ** 2  # (B, L)
    outer = W.transpose(-1, -2) * -tau[..., None, None]  # (B, L, w, h)
    # Points along the last axis, (B, w, n): the tiny (w × w) matmuls run faster this way round.
    h = lift @ x.transpose(-1, -2) + params["lift_b"][..., None]
    for i in range(W.shape[1]):
        z = torch.relu(W[:, i] @ h + params["b"][:, i, :, None])
        h = h + outer[:, i] @ z
        h = between[:, i] @ h + params["A_b"][:, i, :, None]
    return (head @ h + params["head_b"][..., None])[:, 0, :]


def fit_errors(model: Any, target: Any, points: np.ndarray) -> tuple[float, float, np.ndarray]:
    """Sup error, RMSE and outputs of ``model`` against ``target`` at (n, d) ``points`` (float64)."""
    import torch

    with torch.no_grad():
        out = model(torch.tensor(points, dtype=torch.float64))[..., 0].numpy()
    err = out - np.asarray(target(points), dtype=np.float64)
    return float(np.abs(err).max()), float(np.sqrt(np.mean(err**2))), out


# --------------------------------------------------------------------------------------------
# Units


def _units(config: LipschitzDensityConfig, finished: pd.DataFrame) -> list[Unit]:
    common = {
        "steps": config.steps,
        "lr": config.lr,
        "step": config.step,
        "train_per_axis_1d": config.train_per_axis_1d,
        "train_per_axis_2d": config.train_per_axis_2d,
        "eval_per_axis_1d": config.eval_per_axis_1d,
        "eval_per_axis_2d": config.eval_per_axis_2d,
        "width": config.width,
        "seeds": list(config.seeds),
    }
    units = []
    for spec in _target_specs(config):
        name = _target_name(spec)
        units.append(Unit(key=f"{name}/exact", params={"target": spec, "model": "exact", "depth": 0, **common}))
        for depth in config.depths:
            units.append(
                Unit(key=f"{name}/trained/depth={depth}", params={"target": spec, "model": "trained", "depth": depth, **common})
            )
    return units


def _eval_points(target: Any, params: Mapping[str, Any]) -> np.ndarray:
    per_axis = int(params["eval_per_axis_1d"] if target.dim == 1 else params["eval_per_axis_2d"])
    return target.grid(per_axis)


def _secant_points(target: Any, points: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All points in 1-D (neighbour secants); a ≤ 33×33 subgrid in 2-D (all pairs)."""
    if target.dim == 1:
        return points, values
    per_axis = round(len(points) ** 0.5)
    stride = max(1, (per_axis - 1) // 32)
    index = np.arange(len(points)).reshape(per_axis, per_axis)[::stride, ::stride].reshape(-1)
    return points[index], values[index]


def _run_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    import torch

    # Every tensor here is tiny ((seeds, d + 3, points)): more intra-op threads only add
    # synchronisation, so the unit runs on one and restores the runner's setting after.
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _run_unit_single_thread(params)
    finally:
        torch.set_num_threads(previous)


def _run_unit_single_thread(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    from ...analysis.lipschitz import lipschitz_upper_bound
    from ...constructive import max_secant_ratio, maxmin_network
    from ...nn import MaxMin

    target = make_target(params["target"])
    points = _eval_points(target, params)
    row: dict[str, JSONScalar] = {
        "target": target.name,
        "dim": target.dim,
        "target_groups": target.n_groups,
        "target_pieces": target.n_pieces,
        "target_lipschitz_measured": max_secant_ratio(*_secant_points(target, points, target(points))),
        "model": params["model"],
        "eval_points": len(points),
    }
    start = time.perf_counter()
    if params["model"] == "exact":
        net = maxmin_network([[(np.asarray(a), c) for a, c in group] for group in target.pieces])
        net.eval()
        sup, rmse, out = fit_errors(net, target, points)
        levels = sum(isinstance(layer, MaxMin) for layer in net)
        row.update(
            depth=levels,
            layers=len(net),
            width=max(int(getattr(layer, "out_features", 0)) for layer in net),
            sup_error=sup,
            rmse=rmse,
            sup_error_median=sup,
            rmse_median=rmse,
            lipschitz_upper=lipschitz_upper_bound(net),
            lipschitz_measured=max_secant_ratio(*_secant_points(target, points, out)),
            parameters=sum(p.numel() for p in net.parameters()),
            # blocks of a sequential max-min evaluation at width d + 3 (pair, store, copy of x):
            # one min per piece after the first of its group, one max per group after the first
            sequential_depth=max(1, target.n_pieces - 1),
            seconds=time.perf_counter() - start,
        )
        return row
    depth = int(params["depth"])
    width = params["width"]
    models = fit_fixed_width(
        target, target.dim, depth, width=None if width is None else int(width),
        seeds=[int(s) for s in params["seeds"]], steps=int(params["steps"]), lr=float(params["lr"]),
        train_per_axis=int(params["train_per_axis_1d" if target.dim == 1 else "train_per_axis_2d"]), step=float(params["step"]),
    )  # fmt: skip
    seconds = time.perf_counter() - start
    sups, rmses, uppers, measured = [], [], [], []
    for model in models:
        sup, rmse, out = fit_errors(model, target, points)
        sups.append(sup)
        rmses.append(rmse)
        uppers.append(lipschitz_upper_bound(model))
        measured.append(max_secant_ratio(*_secant_points(target, points, out)))
    best = int(np.argmin(sups))
    row.update(
        depth=depth,
        layers=len(models[0]),
        width=target.dim + 3 if width is None else int(width),
        sup_error=sups[best],
        rmse=rmses[best],
        sup_error_median=float(np.median(sups)),
        rmse_median=float(np.median(rmses)),
        lipschitz_upper=max(uppers),
        lipschitz_measured=max(measured),
        parameters=sum(p.numel() for p in models[0].parameters()),
        sequential_depth=None,
        seconds=seconds,
        seeds=len(models),
        best_seed=int(params["seeds"][best]),
    )
    return row


# --------------------------------------------------------------------------------------------
# Report and figures


def _report(results: pd.DataFrame, config: LipschitzDensityConfig) -> str:
    lines = [
        "# lipschitz-density: fixed-width 1-Lipschitz ResNets against depth",
        "",
        "Murari, Furuya, Schönlieb, *Approximation theory for 1-Lipschitz ResNets*, NeurIPS 2025 "
        "(arXiv 2505.12003): Theorem 4.1 (width d + 3 with norm-constrained affine maps between "
        "blocks is dense in the scalar 1-Lipschitz functions as depth grows) and the exact max-min "
        "representation of piecewise-affine 1-Lipschitz functions. The paper states no rate and no "
        "numbers for this; ours are measurements.",
        "",
        f"Targets on [−1, 1]ᵈ, generator seed {config.target_seed}: 1-D interpolants with K pieces, "
        f"slopes U[−1, 1]; 2-D max of G mins of {config.group_size_2d} pieces, ‖a‖₂ ≤ 1. `exact`: "
        "`maxmin_network` (float64), depth = MaxMin levels, width = its widest layer, `L upper` = its "
        "layer-wise certificate s; `seq. depth` = blocks of a sequential max-min evaluation at width "
        "d + 3 (one min per piece after the first of its group, one max per group after the first: "
        "pieces − 1), counted, not built. `trained`: "
        "`lipschitz_resnet(d, 1, None, L, variant=\"fixed-width\")`, width d + 3, full-batch Adam "
        f"{config.steps} steps, lr {config.lr:g} cosine, initial step s = {config.step:g}, {config.train_per_axis_1d} / {config.train_per_axis_2d}² training "
        "grid points (1-D / 2-D), "
        f"best / median of seeds {list(config.seeds)}. Errors on a grid of "
        f"{config.eval_per_axis_1d} (1-D) / {config.eval_per_axis_2d}² (2-D) points. `L upper`: "
        "`lipschitz_upper_bound` in eval mode (largest over seeds); `L meas.`: largest secant "
        "ratio of the model's outputs on the grid (2-D: a ≤ 33² subgrid).",
        "",
    ]
    if results.empty:
        return "\n".join(lines + ["(no results yet)"])
    header = (
        "| target | model | depth | width | params | sup error | RMSE | median sup | median RMSE "
        "| L upper | L meas. | target L meas. | seq. depth | time (s) |"
    )
    lines += [header, "|" + "---|" * (header.count("|") - 1)]
    ordered = results.sort_values(["dim", "target_pieces", "target", "model", "depth"], kind="stable")
    for _, r in ordered.iterrows():
        seq = r.get("sequential_depth")
        cells = [
            r["target"], r["model"], str(int(r["depth"])), str(int(r["width"])), str(int(r["parameters"])),
            f"{r['sup_error']:.3g}", f"{r['rmse']:.3g}", f"{r['sup_error_median']:.3g}", f"{r['rmse_median']:.3g}",
            f"{r['lipschitz_upper']:.6g}", f"{r['lipschitz_measured']:.6f}", f"{r['target_lipschitz_measured']:.6f}",
            "" if seq is None or (isinstance(seq, float) and math.isnan(seq)) else str(int(seq)),
            f"{r['seconds']:.2f}",
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Summary per target (exact depth against what training reaches):", ""]
    header = (
        f"| target | exact depth (levels) | exact width | exact sup error | exact L upper | seq. depth "
        f"| best trained sup error (depth) | smallest depth with sup ≤ {config.tolerance:g} "
        "| slope of log sup vs log depth | slope of log RMSE vs log depth |"
    )
    lines += [header, "|" + "---|" * (header.count("|") - 1)]
    order = results.sort_values(["dim", "target_pieces", "target"], kind="stable")["target"].unique()
    for name in order:
        rows = results[results["target"] == name]
        exact = rows[rows["model"] == "exact"]
        trained = rows[rows["model"] == "trained"].sort_values("depth")
        e = exact.iloc[0] if not exact.empty else None
        slopes = ["", ""]
        if trained["depth"].nunique() >= 2:
            logs = np.log(trained["depth"].to_numpy(dtype=float))
            slopes = [f"{np.polyfit(logs, np.log(trained[c].to_numpy(dtype=float)), 1)[0]:.2f}" for c in ("sup_error", "rmse")]
        if trained.empty:
            best, reached = "", ""
        else:
            b = trained.loc[trained["sup_error"].idxmin()]
            best = f"{b['sup_error']:.3g} ({int(b['depth'])})"
            ok = trained[trained["sup_error"] <= config.tolerance]
            reached = str(int(ok["depth"].min())) if not ok.empty else f"none ≤ {int(trained['depth'].max())}"
        lines.append(
            "| " + " | ".join([
                str(name),
                "" if e is None else str(int(e["depth"])),
                "" if e is None else str(int(e["width"])),
                "" if e is None else f"{e['sup_error']:.2g}",
                "" if e is None else f"{e['lipschitz_upper']:.4g}",
                "" if e is None else str(int(e["sequential_depth"])),
                best,
                reached,
                *slopes,
            ]) + " |"
        )  # fmt: skip
    trained = results[results["model"] == "trained"]
    if not trained.empty:
        lines += [
            "",
            f"Every trained model certified: largest `L upper` {trained['lipschitz_upper'].max():.6g} "
            f"({'≤ 1' if (trained['lipschitz_upper'] <= 1 + 1e-12).all() else 'NOT ≤ 1'}); largest measured "
            f"secant ratio {trained['lipschitz_measured'].max():.6f}.",
        ]
    exact = results[results["model"] == "exact"]
    if not exact.empty:
        lines += [
            f"Exact construction: largest sup error {exact['sup_error'].max():.3g}; layer-wise certificate "
            f"s from {exact['lipschitz_upper'].min():.4g} to {exact['lipschitz_upper'].max():.4g} (its head "
            f"scales by s = max(1, ‖A‖₂)); measured secant ratio ≤ {exact['lipschitz_measured'].max():.6f}.",
        ]
    lines.append("")
    return "\n".join(lines)


def _figures(results: pd.DataFrame, config: LipschitzDensityConfig, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    trained = results[results["model"] == "trained"] if not results.empty else results
    if trained.empty:
        return []
    dims = sorted(trained["dim"].unique())
    fig, axes = plt.subplots(1, len(dims), figsize=(5.2 * len(dims), 3.8), squeeze=False)
    exact = results[results["model"] == "exact"]
    for ax, dim in zip(axes[0], dims):
        part = trained[trained["dim"] == dim].sort_values(["target_pieces", "target"], kind="stable")
        for color, name in zip(plt.cm.tab10.colors, part["target"].unique()):
            rows = part[part["target"] == name].sort_values("depth")
            ax.plot(rows["depth"], rows["sup_error"], marker="o", color=color, label=f"{name} sup")
            ax.plot(rows["depth"], rows["rmse"], marker=".", ls="--", color=color, label=f"{name} RMSE")
            e = exact[exact["target"] == name]
            if not e.empty:
                ax.axvline(int(e["depth"].iloc[0]), color=color, ls=":", lw=1)
        ax.axhline(config.tolerance, color="gray", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("depth L (residual blocks)")
        ax.set_ylabel("error (best seed)")
        ax.set_title(f"d = {dim}, width d + 3 = {dim + 3}; dotted: exact max-min depth", fontsize=9)
        ax.legend(fontsize=6)
    path = save_figure(fig, out_dir / "density.png")
    return [path]


EXPERIMENT = FunctionExperiment(
    name="lipschitz-density",
    description=(
        "fixed-width (d + 3) 1-Lipschitz ResNets against depth on random piecewise-affine 1-Lipschitz "
        "targets, beside the exact max-min construction (Murari, Furuya, Schönlieb, NeurIPS 2025, Thm. 4.1)"
    ),
    config_class=LipschitzDensityConfig,
    units_fn=_units,
    run_unit_fn=_run_unit,
    report_fn=_report,
    figures_fn=_figures,
)


def run(
    config: LipschitzDensityConfig | None = None, out_dir: str | Path | None = None, **runner_options: Any
) -> pd.DataFrame:
    """Run ``lipschitz-density`` and return one row per unit; see :func:`structnets.runner.experiment.run_experiment`."""
    return run_experiment(EXPERIMENT, config, out_dir, **runner_options)


__all__ = ["EXPERIMENT", "LipschitzDensityConfig", "fit_errors", "fit_fixed_width", "make_target", "run"]
