"""Experiment ``dlor-blindspot``: rank-1 networks interpolate any scalar data set, yet cannot
approximate a 2-D function; adding αI (DLoR, same rank 1) removes the floor.

Chen, Li, Kim, Lavaei, *Structural Correspondence and Universal Approximation in Diagonal plus
Low-Rank Neural Networks* (arXiv 2605.05659), the rank-1 paradox. Target: the saddle
f(x) = x₁x₂ on [−1, 1]² (variance 1/9). Stages, each a set of pure, seeded units:

1. ``interpolate``: :func:`structnets.constructive.rank_one_interpolant` on n random points,
   scalar (1-D inputs) and 2-D inputs with the saddle's values: the maximal training error is
   at rounding level for every n, but the 2-D interpolant's test MSE does not fall with n.
2. ``floor``: the blind-spot floor, min over unit v of min over g of E(f(x) − g(vᵀx))²,
   estimated by the conditional mean of f on 400 bins of vᵀx (400,000 samples, 180 directions;
   the exact value is 4/135 ≈ 0.0296, along v = (1, 1)/√2).
   Every network whose first weight is rank-1 has test MSE ≥ this floor, whatever its width.
3. ``train``: rank-1 networks (:func:`structnets.models.rank_one_mlp`) and rank-1 DLoR networks
   (:func:`structnets.models.dlor_mlp`, r = 1) of growing width, all seeds of one (model, width)
   trained at once with ``torch.func.vmap`` over stacked parameters (full-batch Adam).
"""

from __future__ import annotations

import copy
import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from ..runner.figures import save_figure
from ..runner.experiment import FunctionExperiment, JSONScalar, Unit, run_experiment
from .dlor_sawtooth import single_thread

MODELS: tuple[str, ...] = ("rank1", "dlor")


def saddle(x: np.ndarray) -> np.ndarray:
    """f(x) = x₁·x₂ for x of shape (n, 2)."""
    return x[:, 0] * x[:, 1]


def saddle_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n points uniform on [−1, 1]² and their saddle values."""
    X = np.random.default_rng(seed).uniform(-1.0, 1.0, (n, 2))
    return X, saddle(X)


def saddle_grid(per_axis: int) -> tuple[np.ndarray, np.ndarray]:
    """A per_axis × per_axis grid on [−1, 1]² and its saddle values (the test set)."""
    axis = np.linspace(-1.0, 1.0, per_axis)
    X = np.stack([g.ravel() for g in np.meshgrid(axis, axis, indexing="ij")], axis=1)
    return X, saddle(X)


def ridge_floor(
    X: np.ndarray, y: np.ndarray, directions: int = 180, bins: int = 400
) -> tuple[float, float]:
    """min over v = (cos θ, sin θ) of the MSE of the binned conditional mean of y given vᵀx.

    Returns (floor, θ at the minimum). The binned conditional mean is the best function of the
    bin of vᵀx, so with many samples per bin this estimates the best ridge-function error.
    """
    best, best_theta = math.inf, 0.0
    for theta in np.linspace(0.0, np.pi, directions, endpoint=False):
        t = X @ np.array([np.cos(theta), np.sin(theta)])
        low, span = t.min(), max(float(np.ptp(t)), 1e-300)
        index = np.minimum(((t - low) * (bins / span)).astype(np.int64), bins - 1)  # equal-width bins
        means = np.bincount(index, y, bins) / np.maximum(np.bincount(index, None, bins), 1)
        mse = float(np.mean((y - means[index]) ** 2))
        if mse < best:
            best, best_theta = mse, float(theta)
    return best, best_theta


# --------------------------------------------------------------------------------------------
# Seeds batched with torch.func.vmap


def train_vmapped(
    models: Sequence[nn.Module],
    X: torch.Tensor,
    y: torch.Tensor,
    X_test: torch.Tensor,
    y_test: torch.Tensor,
    *,
    epochs: int,
    lr: float,
) -> tuple[list[float], list[float], list[nn.Module]]:
    """Train S same-architecture models at once: ``vmap`` of ``functional_call`` over their
    stacked parameters, full-batch Adam (cosine decay to lr/100) on Σ_s MSE_s, which equals S
    independent trainings since Adam is elementwise.

    Returns:
        (final test MSE per seed, final train MSE per seed, the trained models as copies).
    """
    from torch.func import functional_call, stack_module_state, vmap

    params, buffers = stack_module_state(list(models))
    params = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
    base = copy.deepcopy(models[0]).to("meta")

    def forward(p: dict[str, torch.Tensor], b: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        return functional_call(base, (p, b), (x,))

    batched = vmap(forward, in_dims=(0, 0, None))
    optimizer = torch.optim.Adam(params.values(), lr=lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs, eta_min=lr / 100)
    target, target_test = y.reshape(1, -1, 1), y_test.reshape(1, -1, 1)
    for _ in range(epochs):
        optimizer.zero_grad(set_to_none=True)
        loss = ((batched(params, buffers, X) - target) ** 2).mean(dim=(1, 2)).sum()
        loss.backward()
        optimizer.step()
        scheduler.step()
    with torch.no_grad():
        test = ((batched(params, buffers, X_test) - target_test) ** 2).mean(dim=(1, 2))
        train = ((batched(params, buffers, X) - target) ** 2).mean(dim=(1, 2))
    trained = []
    for s in range(len(models)):
        model = copy.deepcopy(models[s])
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(params[name][s])
        trained.append(model)
    return [float(v) for v in test], [float(v) for v in train], trained


# --------------------------------------------------------------------------------------------
# Configuration and units


@dataclass(frozen=True)
class DLoRBlindspotConfig:
    """Configuration of ``dlor-blindspot``; ``DLoRBlindspotConfig()`` is the full run.

    Attributes:
        widths: network widths N (≥ 2, the DLoR input is zero-padded to N).
        depth: nonlinear layers of every network.
        seeds: initialisation seeds (batched within a unit).
        activation: σ of every layer.
        epochs, lr: full-batch Adam steps and initial learning rate (cosine decay).
        n_train: training points, uniform on [−1, 1]² (seed ``data_seed``).
        test_per_axis: test grid points per axis.
        interpolation_sizes: data set sizes n of the rank-1 interpolation stage.
        data_seed: seed of the training sample.
        floor_samples, floor_directions: Monte Carlo sample and number of directions θ of the
            blind-spot floor estimate (400 bins).
    """

    widths: tuple[int, ...] = (2, 4, 8, 16, 32, 64)
    depth: int = 2
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    activation: str = "tanh"
    epochs: int = 3000
    lr: float = 1e-2
    n_train: int = 1024
    test_per_axis: int = 64
    interpolation_sizes: tuple[int, ...] = (4, 16, 64, 256, 1024)
    data_seed: int = 7
    floor_samples: int = 400_000
    floor_directions: int = 180

    @classmethod
    def quick(cls) -> DLoRBlindspotConfig:
        """The ``--quick`` preset: widths 2, 8, 32; 3 seeds; 1,000 epochs."""
        return cls(widths=(2, 8, 32), seeds=(0, 1, 2), epochs=1000, interpolation_sizes=(4, 16, 64, 256))

    def __post_init__(self) -> None:
        from .._validation import check_choice, check_int, check_real
        from ..nn import ACTIVATIONS

        if not self.widths or not self.seeds:
            raise ValueError(f"`widths` and `seeds` must be non-empty, got {self.widths!r}, {self.seeds!r}")
        for width in self.widths:
            check_int("widths", width, low=2)
        check_int("depth", self.depth, low=1)
        check_choice("activation", self.activation, ACTIVATIONS)
        check_int("epochs", self.epochs, low=1)
        check_real("lr", self.lr, low=0.0, low_open=True)
        check_int("n_train", self.n_train, low=2)
        check_int("test_per_axis", self.test_per_axis, low=2)
        for n in self.interpolation_sizes:
            check_int("interpolation_sizes", n, low=1)
        check_int("floor_samples", self.floor_samples, low=1000)
        check_int("floor_directions", self.floor_directions, low=1)


def _units(config: DLoRBlindspotConfig, finished: pd.DataFrame) -> list[Unit]:
    units = [Unit("floor", {"stage": "floor", "samples": config.floor_samples, "directions": config.floor_directions})]
    for n in config.interpolation_sizes:
        units.append(
            Unit(f"interpolate/n={n}", {"stage": "interpolate", "n": n, "test_per_axis": config.test_per_axis})
        )
    for model in MODELS:
        for width in config.widths:
            units.append(
                Unit(
                    f"train/{model}/width={width}",
                    {
                        "stage": "train",
                        "model": model,
                        "width": width,
                        "depth": config.depth,
                        "seeds": list(config.seeds),
                        "activation": config.activation,
                        "epochs": config.epochs,
                        "lr": config.lr,
                        "n_train": config.n_train,
                        "test_per_axis": config.test_per_axis,
                        "data_seed": config.data_seed,
                    },
                )
            )
    return units


def _build(model: str, width: int, depth: int, activation: str, seed: int) -> nn.Module:
    from ..models import dlor_mlp, rank_one_mlp
    from ..training import seeded

    with seeded(seed):
        if model == "rank1":
            return rank_one_mlp(2, 1, width, depth, activation)
        return dlor_mlp(2, 1, width, depth, 1, "deep", activation)


def _run_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    with single_thread():
        stage = params["stage"]
        if stage == "floor":
            X, y = saddle_data(int(params["samples"]), seed=2024)
            floor, theta = ridge_floor(X, y, directions=int(params["directions"]))
            return {"stage": "floor", "floor_mse": floor, "floor_theta": theta, "variance": float(y.var())}
        if stage == "interpolate":
            return _run_interpolate(params)
        if stage == "train":
            return _run_train(params)
    raise ValueError(f"`stage` must be one of ['floor', 'interpolate', 'train'], got {stage!r}")


def _run_interpolate(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    from ..constructive import rank_one_interpolant

    n = int(params["n"])
    rng = np.random.default_rng(n)
    x1 = rng.uniform(-1.0, 1.0, n)
    y1 = rng.normal(size=n)
    net1 = rank_one_interpolant(x1, y1)
    X2, y2 = saddle_data(n, seed=n + 1)
    net2 = rank_one_interpolant(X2, y2)
    X_test, y_test = saddle_grid(int(params["test_per_axis"]))
    with torch.no_grad():
        error1 = float((net1(torch.as_tensor(x1)[:, None])[:, 0] - torch.as_tensor(y1)).abs().max())
        error2 = float((net2(torch.as_tensor(X2))[:, 0] - torch.as_tensor(y2)).abs().max())
        test = float(((net2(torch.as_tensor(X_test))[:, 0] - torch.as_tensor(y_test)) ** 2).mean())
    return {
        "stage": "interpolate",
        "n": n,
        "max_error_scalar_inputs": error1,
        "max_error_2d_inputs": error2,
        "test_mse_2d": test,
    }


def _run_train(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    model, width, depth = params["model"], int(params["width"]), int(params["depth"])
    seeds = [int(s) for s in params["seeds"]]
    X, y = saddle_data(int(params["n_train"]), int(params["data_seed"]))
    X_test, y_test = saddle_grid(int(params["test_per_axis"]))
    X, y, X_test, y_test = (torch.as_tensor(a, dtype=torch.float32) for a in (X, y, X_test, y_test))
    models = [_build(model, width, depth, params["activation"], seed) for seed in seeds]
    start = time.perf_counter()
    test, train, trained = train_vmapped(
        models, X, y, X_test, y_test, epochs=int(params["epochs"]), lr=float(params["lr"])
    )
    seconds = time.perf_counter() - start
    # The blind spot, measured: how much the output moves along the direction orthogonal to
    # the first layer's v (exactly 0 for rank-1 networks, whatever training did).
    invariance = []
    for net in trained:
        first = next(m for m in net if hasattr(m, "v") or hasattr(m, "V"))
        if hasattr(first, "v"):
            v = first.v.detach()
            w = torch.stack([-v[1], v[0]]) / torch.linalg.vector_norm(v)
        else:
            w = torch.tensor([1.0, -1.0]) / math.sqrt(2.0)
        with torch.no_grad():
            invariance.append(float((net(X_test + 0.25 * w) - net(X_test)).abs().max()))
    return {
        "stage": "train",
        "model": model,
        "width": width,
        "depth": depth,
        "parameters": int(sum(p.numel() for p in models[0].parameters())),
        "n_seeds": len(seeds),
        "median_test_mse": float(np.median(test)),
        "min_test_mse": float(np.min(test)),
        "max_test_mse": float(np.max(test)),
        "median_train_mse": float(np.median(train)),
        "max_orthogonal_change": float(np.max(invariance)),
        "test_mse": json.dumps(test),
        "seconds": seconds,
    }


# --------------------------------------------------------------------------------------------
# Report and figures


def _stage(results: pd.DataFrame, stage: str) -> pd.DataFrame:
    if results.empty or "stage" not in results:
        return results.iloc[0:0]
    return results[results["stage"] == stage]


def _report(results: pd.DataFrame, config: DLoRBlindspotConfig) -> str:
    floor_rows, interp, train = _stage(results, "floor"), _stage(results, "interpolate"), _stage(results, "train")
    floor = float(floor_rows["floor_mse"].iloc[0]) if not floor_rows.empty else math.nan
    lines = [
        "# dlor-blindspot: the rank-1 paradox and how αI cures it",
        "",
        "Chen et al. (arXiv 2605.05659): purely rank-1 networks interpolate any scalar data set exactly, "
        "yet are blind to every direction orthogonal to their first projection v, so they cannot "
        "approximate general multivariate functions; DLoR layers αI + UVᵀ of the same rank can. "
        "Target f(x) = x₁x₂ on [−1, 1]² (variance 1/9 ≈ 0.111), test grid "
        f"{config.test_per_axis}², σ = {config.activation}.",
        "",
    ]
    if not floor_rows.empty:
        lines += [
            f"Blind-spot floor (best function of one projection vᵀx, binned estimate): **{floor:.4f}** "
            f"at θ = {math.degrees(float(floor_rows['floor_theta'].iloc[0])):.0f}°. No network with a rank-1 first "
            "layer can go below it.",
            "",
        ]
    if not interp.empty:
        lines += [
            "## Exact interpolation by rank-1 networks (`rank_one_interpolant`, ReLU, width n)",
            "",
            "| n | max error, scalar inputs | max error, 2-D inputs | test MSE of the 2-D interpolant |",
            "|---|---|---|---|",
        ]
        for _, r in interp.sort_values("n").iterrows():
            lines.append(
                f"| {int(r['n'])} | {r['max_error_scalar_inputs']:.1e} | {r['max_error_2d_inputs']:.1e} | "
                f"{r['test_mse_2d']:.4f} |"
            )
        lines.append("")
    if not train.empty:
        lines += [
            f"## Trained networks, depth {config.depth}, {len(config.seeds)} seeds, {config.epochs} epochs",
            "",
            "| width | rank-1 params | rank-1 test MSE median [min, max] | rank-1 max change along v⊥ | "
            "DLoR (r = 1) params | DLoR test MSE median [min, max] | DLoR below floor |",
            "|---|---|---|---|---|---|---|",
        ]
        for width in config.widths:
            cells = [str(width)]
            below = "—"
            for model in MODELS:
                rows = train[(train["model"] == model) & (train["width"] == width)]
                if rows.empty:
                    cells += ["not run"] * (3 if model == "rank1" else 2)
                    continue
                r = rows.iloc[0]
                cells += [
                    str(int(r["parameters"])),
                    f"{r['median_test_mse']:.2e} [{r['min_test_mse']:.2e}, {r['max_test_mse']:.2e}]",
                ]
                if model == "rank1":
                    cells.append(f"{r['max_orthogonal_change']:.1e}")
                elif np.isfinite(floor):
                    below = "yes" if r["median_test_mse"] < floor else "no"
            lines.append("| " + " | ".join(cells + [below]) + " |")
        lines.append("")
    return "\n".join(lines)


def _figures(results: pd.DataFrame, config: DLoRBlindspotConfig, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    floor_rows, train = _stage(results, "floor"), _stage(results, "train")
    if train.empty:
        return []
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for model, colour, label in (("rank1", "tab:red", "rank-1 (α = 0)"), ("dlor", "tab:blue", "DLoR, r = 1")):
        rows = train[train["model"] == model].sort_values("width")
        if rows.empty:
            continue
        ax.plot(rows["width"], rows["median_test_mse"], marker="o", color=colour, label=label)
        ax.fill_between(rows["width"], rows["min_test_mse"], rows["max_test_mse"], color=colour, alpha=0.2)
    if not floor_rows.empty:
        ax.axhline(float(floor_rows["floor_mse"].iloc[0]), color="black", ls="--", lw=0.8, label="blind-spot floor")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("width N")
    ax.set_ylabel("test MSE on x₁x₂")
    ax.set_title("Rank-1 networks stay above the floor; DLoR does not", fontsize=10)
    ax.legend(fontsize=8)
    path = save_figure(fig, out_dir / "blindspot.png")
    return [path]


EXPERIMENT = FunctionExperiment(
    name="dlor-blindspot",
    description=(
        "Rank-1 networks interpolate scalar data exactly but stay at an error floor on a 2-D target; "
        "DLoR networks of the same rank do not (Chen et al., arXiv 2605.05659)"
    ),
    config_class=DLoRBlindspotConfig,
    units_fn=_units,
    run_unit_fn=_run_unit,
    report_fn=_report,
    figures_fn=_figures,
)


def run(config: DLoRBlindspotConfig | None = None, out_dir: str | Path | None = None, **runner_options: Any) -> pd.DataFrame:
    """Run ``dlor-blindspot`` and return one row per unit; see :func:`structnets.runner.experiment.run_experiment`."""
    return run_experiment(EXPERIMENT, config, out_dir, **runner_options)


__all__ = [
    "EXPERIMENT",
    "DLoRBlindspotConfig",
    "ridge_floor",
    "run",
    "saddle",
    "saddle_data",
    "saddle_grid",
    "train_vmapped",
]
