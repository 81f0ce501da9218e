"""Experiment ``smoothness-rates``: error vs samples n and vs parameters N at constant depth.

Liu, Wang, Wu, Zhang, *Smoothness Adaptivity in Constant-Depth Neural Networks: Optimal Rates via
Smooth Activations* (arXiv 2602.19691). Claims: at constant depth, smooth activations (GELU,
SiLU/Swish, Tanh) attain the approximation rate N^{−s/d} and the minimax estimation rate
n^{−2s/(2s+d)} (up to log n) for every smoothness s, by growing width alone; fixed-depth ReLU
networks are capped at N^{−min(L−1, s)/d}. Their experiment: two-layer networks with ReLU, Tanh
and GELU on smooth targets; the test error falls faster in n for the smooth activations.

Two parts, each unit one batched ensemble (every activation × every seed trained at once as one
model with a leading ensemble dimension: ``torch.baddbmm`` per layer, elementwise Adam, so the
members are independent and the result equals training them one by one):

* ``estimation``: y = f(x) + σε on n uniform points, target :func:`structnets.data.lacunary_target`
  of smoothness s; parameter budget N ≈ c_N · n^{d/(2s+d)} (the theory's choice; width solved from
  N at the given depth); full-batch Adam with cosine decay for a fixed number of steps (empirical
  risk minimisation); excess risk ‖f̂ − f‖² on fresh test points. Fitted slope of log excess risk
  on log n (bootstrap 95% interval over seeds) beside −2s/(2s+d).
* ``approximation``: noiseless fit on a dense training set, widths over a log grid, test RMSE vs
  the parameter count N; fitted slope beside −s/d (smooth) and the ReLU cap −min(L−1, s)/d.

Depth L counts weight layers: L = 2 is the two-layer (one hidden layer) network of the paper.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..runner.figures import save_figure
from ..runner.experiment import FunctionExperiment, JSONScalar, Unit

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
        budget: c_N in N ≈ c_N n^{d/(2s+d)}.
        steps: full-batch Adam steps (cosine-decayed learning rate from ``lr`` to 0).
        lr: initial Adam learning rate.
        min_width: smallest hidden width of the estimation part (the budget's width is raised to
            it, which matters only for deep networks at small n).
        approx_targets: (d, s) pairs of the approximation part; s > L − 1 is where the claimed
            ReLU depth cap binds (e.g. s = 3 at L = 2).
        approx_widths: hidden widths of the approximation part (a log grid; N follows from them).
        approx_steps: Adam steps of the approximation part (noiseless, so trained longer).
        approx_train: training points of the approximation part (noiseless).
        approx_seeds: seeds of the approximation part.
        levels: dyadic levels K of the lacunary targets.
        input_scale: first-layer initialisation scale (see :func:`train_ensemble`).
        test_points: fresh test points per unit.
    """

    targets: tuple[tuple[int, float], ...] = ((1, 1.0), (1, 3.0), (2, 2.0), (4, 2.0))
    sizes: tuple[int, ...] = (50, 100, 200, 500, 1000, 2000, 5000)
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    depths: tuple[int, ...] = (2, 6)
    activations: tuple[str, ...] = ACTIVATIONS
    noise: float = 0.1
    budget: float = 8.0
    steps: int = 3000
    lr: float = 1e-2
    input_scale: float = 10.0
    min_width: int = 6
    approx_targets: tuple[tuple[int, float], ...] = ((1, 1.0), (1, 3.0), (2, 3.0))
    approx_widths: tuple[int, ...] = (4, 8, 16, 32, 64, 128)
    approx_steps: int = 3000
    approx_train: int = 2048
    approx_seeds: tuple[int, ...] = (0, 1, 2)
    levels: int = 10
    test_points: int = 4096

    @classmethod
    def quick(cls) -> SmoothnessRatesConfig:
        """The ``--quick`` preset: d = 1, s = 1, 6 sizes over two decades, 5 seeds, short training."""
        return cls(
            targets=((1, 1.0),),
            sizes=(20, 50, 125, 300, 800, 2000),
            steps=600,
            levels=8,
            approx_targets=((1, 3.0),),
            approx_widths=(4, 12, 36),
            approx_steps=1500,
            approx_train=512,
            approx_seeds=(0, 1),
            test_points=2048,
        )

    def __post_init__(self) -> None:
        from .._validation import check_choice, check_int, check_real

        if not self.targets:
            raise ValueError("`targets` must list at least one (d, s) pair, got ()")
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
        check_int("steps", self.steps, low=1)
        check_real("lr", self.lr, low=0.0, low_open=True)
        check_int("min_width", self.min_width, low=1)
        check_int("approx_steps", self.approx_steps, low=1)
        for d, s in self.approx_targets:
            check_int("approx_targets", d, low=1)
            check_real("approx_targets", s, low=0.0, low_open=True)
        for width in self.approx_widths:
            check_int("approx_widths", width, low=1)


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


def _activation(name: str):
    import torch

    return {
        "relu": torch.relu,
        "tanh": torch.tanh,
        "gelu": torch.nn.functional.gelu,
        "silu": torch.nn.functional.silu,
    }[name]


def train_ensemble(
    X: "torch.Tensor",
    y: "torch.Tensor",
    X_test: "torch.Tensor",
    f_test: "torch.Tensor",
    activations: list[str],
    width: int,
    depth: int,
    *,
    steps: int,
    lr: float,
    seed: int,
    input_scale: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Train E independent MLPs at once; return per-member (train MSE, test MSE against f).

    Args:
        X: (E, n, d) inputs in [0,1]^d (mapped to [−1,1]^d inside); y: (E, n) targets.
        X_test: (m, d) test points shared by all members; f_test: (m,) noiseless target values.
        activations: E activation names (members with the same name are contiguous or not).
        width, depth: hidden width and number of weight layers.
        steps, lr: full-batch Adam steps with a cosine learning-rate decay to 0.
        seed: seeds the initialisation (PyTorch's default: U(±1/√fan_in) for weights and biases).
        input_scale: the first layer's weights and biases are drawn from U(±input_scale/√d)
            instead, so the initial units already vary on the scale of the target's oscillations
            (a frequency-aware start that shortens the optimisation, cf. random Fourier features).

    Returns:
        two (E,) arrays: final training MSE and test MSE ‖f̂ − f‖² (mean over test points).
        The loss is the sum of the members' mean squared errors, so every member's gradient is its
        own and Adam (elementwise) trains each exactly as if alone.
    """
    import torch

    E, n, d = X.shape
    generator = torch.Generator().manual_seed(seed)
    sizes = [d] + [width] * (depth - 1) + [1]
    params = []
    for layer, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        bound = (input_scale if layer == 0 else 1.0) / math.sqrt(fan_in)
        W = (torch.rand(E, fan_in, fan_out, generator=generator) * 2 - 1) * bound
        b = (torch.rand(E, 1, fan_out, generator=generator) * 2 - 1) * bound
        params += [W.requires_grad_(), b.requires_grad_()]
    groups: dict[str, list[int]] = {}
    for index, name in enumerate(activations):
        groups.setdefault(name, []).append(index)
    order = [i for members in groups.values() for i in members]
    inverse = torch.argsort(torch.tensor(order))
    blocks = [(_activation(name), len(members)) for name, members in groups.items()]
    # Members are permuted so each activation's members are contiguous, and permuted back at the end.
    Xp = (2 * X[order] - 1).float()
    yp = y[order].float().unsqueeze(-1)

    def forward(inputs: torch.Tensor) -> torch.Tensor:
        h = inputs
        for k in range(0, len(params), 2):
            h = torch.baddbmm(params[k + 1], h, params[k])
            if k + 2 < len(params):
                h = torch.cat([fn(part) for (fn, _), part in zip(blocks, h.split([c for _, c in blocks]))])
        return h

    optimizer = torch.optim.Adam(params, lr=lr, foreach=True)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda t: 0.5 * (1 + math.cos(math.pi * t / steps)))
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        loss = ((forward(Xp) - yp) ** 2).mean(dim=(1, 2)).sum()
        loss.backward()
        optimizer.step()
        schedule.step()
    with torch.no_grad():
        train = ((forward(Xp) - yp) ** 2).mean(dim=(1, 2))[inverse]
        test_in = (2 * X_test.float() - 1).expand(E, -1, -1)
        test = ((forward(test_in).squeeze(-1) - f_test.float()) ** 2).mean(dim=1)[inverse]
    return train.double().numpy(), test.double().numpy()


# --------------------------------------------------------------------------------------------
# Units


def _units(config: SmoothnessRatesConfig, finished: pd.DataFrame) -> list[Unit]:
    units: list[Unit] = []
    common = {"activations": list(config.activations), "steps": config.steps, "lr": config.lr,
              "levels": config.levels, "test_points": config.test_points, "input_scale": config.input_scale}
    for d, s in config.targets:
        for depth in config.depths:
            for n in config.sizes:
                N = config.budget * n ** (d / (2 * s + d))
                units.append(Unit(
                    key=f"estimation/d={d}/s={s:g}/L={depth}/n={n}",
                    params={"part": "estimation", "d": d, "s": s, "depth": depth, "n": n,
                            "width": max(config.min_width, width_for_parameters(N, d, depth)), "noise": config.noise,
                            "seeds": list(config.seeds), **common},
                ))
    for d, s in config.approx_targets:
        for depth in config.depths:
            for width in config.approx_widths:
                units.append(Unit(
                    key=f"approximation/d={d}/s={s:g}/L={depth}/width={width}",
                    params={"part": "approximation", "d": d, "s": s, "depth": depth, "n": config.approx_train,
                            "width": width, "noise": 0.0,
                            "seeds": list(config.approx_seeds), **{**common, "steps": config.approx_steps}},
                ))
    return units


def _run_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    import torch

    from ..data import lacunary_target

    torch.set_num_threads(1)
    start = time.perf_counter()
    d, s, depth, n, width = int(params["d"]), float(params["s"]), int(params["depth"]), int(params["n"]), int(params["width"])
    target = lacunary_target(d, s, levels=int(params["levels"]), seed=0)
    seeds = [int(v) for v in params["seeds"]]
    activations = list(params["activations"])
    Xs, ys = [], []
    for seed in seeds:
        X, y = target.sample(n, noise=float(params["noise"]), seed=1000 + seed)
        Xs.append(X)
        ys.append(y)
    rng = np.random.default_rng(999)
    X_test = torch.from_numpy(rng.random((int(params["test_points"]), d)))
    f_test = target(X_test)
    members = [(name, k) for name in activations for k in range(len(seeds))]
    X = torch.from_numpy(np.stack([Xs[k] for _, k in members]))
    y = torch.from_numpy(np.stack([ys[k] for _, k in members]))
    train, test = train_ensemble(
        X, y, X_test, f_test, [name for name, _ in members], width, depth,
        steps=int(params["steps"]), lr=float(params["lr"]), seed=int(sum(seeds) + 7 * n + 13 * width),
        input_scale=float(params["input_scale"]),
    )
    row: dict[str, JSONScalar] = {
        "part": params["part"], "d": d, "s": s, "depth": depth, "n": n, "width": width,
        "parameters": parameter_count(d, width, depth), "noise": float(params["noise"]),
        "target_variance": float(f_test.var()), "steps": int(params["steps"]),
    }
    for (name, k), tr, te in zip(members, train, test):
        row[f"{name}/{seeds[k]}/train_mse"] = float(tr)
        row[f"{name}/{seeds[k]}/test_mse"] = float(te)
    row["seconds"] = time.perf_counter() - start
    return row


def _long(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (unit, activation, seed) with train_mse and test_mse columns."""
    records = []
    for _, r in results.iterrows():
        for column, value in r.items():
            if not isinstance(column, str) or not column.endswith("/test_mse") or pd.isna(value):
                continue
            name, seed, _ = column.split("/")
            records.append({
                "part": r["part"], "d": int(r["d"]), "s": float(r["s"]), "depth": int(r["depth"]),
                "n": int(r["n"]), "width": int(r["width"]), "parameters": int(r["parameters"]),
                "activation": name, "seed": int(seed), "test_mse": float(value),
                "train_mse": float(r[f"{name}/{seed}/train_mse"]), "noise": float(r["noise"]),
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
        out.append({"d": d, "s": s, "depth": depth, "activation": name, "fit": fit,
                    "train": float(group["train_mse"].median()), "largest": float(group[y][group[x] == xs.max()].median())})
    return out


def _report(results: pd.DataFrame, config: SmoothnessRatesConfig) -> str:
    from ..analysis import minimax_exponent

    long = _long(results) if not results.empty else pd.DataFrame()
    lines = [
        "# smoothness-rates: error vs samples and parameters at constant depth",
        "",
        "Liu, Wang, Wu, Zhang, *Smoothness Adaptivity in Constant-Depth Neural Networks*, arXiv 2602.19691. "
        "Paper: smooth activations (GELU, SiLU, Tanh) reach the minimax rate n^{−2s/(2s+d)} (log factors aside) "
        "and the approximation rate N^{−s/d} at constant depth; fixed-depth ReLU is capped at N^{−min(L−1,s)/d}; "
        "in their two-layer experiment the test error falls markedly faster with n for the smooth activations. "
        f"Ours: lacunary targets of exact smoothness s (K = {config.levels} levels), noise σ = {config.noise:g}, "
        f"budget N ≈ {config.budget:g}·n^{{d/(2s+d)}}, full-batch Adam ({config.steps} steps, cosine from lr "
        f"{config.lr:g}, first-layer init scale {config.input_scale:g}; {config.approx_steps} steps in the noiseless "
        f"approximation part), seeds {list(config.seeds)}; slopes by least squares on log–log with stratified bootstrap "
        "95% intervals. L = number of weight layers.",
        "",
    ]
    if long.empty:
        return "\n".join(lines + ["No results yet.", ""])
    lines += [
        "## (a) Estimation: excess risk ‖f̂ − f‖² vs n",
        "",
        f"Optimisation-limited: the median training MSE exceeds 1.5σ² = {1.5 * config.noise ** 2:.2g} "
        "(the empirical risk minimiser of a class this size would fit at least to σ²).",
        "",
        "| d | s | L | activation | paper rate −2s/(2s+d) | our slope [95%] | contains paper rate | median train MSE | optimisation-limited | median excess risk at largest n |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in _slope_table(long, "estimation", "n", "test_mse"):
        rate = minimax_exponent(row["s"], row["d"])
        fit = row["fit"]
        limited = "yes" if row["train"] > 1.5 * config.noise**2 else "no"
        lines.append(
            f"| {row['d']} | {row['s']:g} | {row['depth']} | {row['activation']} | {rate:.3f} | "
            f"{fit.slope:.3f} [{fit.low:.3f}, {fit.high:.3f}] | {'yes' if fit.contains(rate) else 'no'} | "
            f"{row['train']:.2e} | {limited} | {row['largest']:.2e} |"
        )
    lines += [
        "",
        "## (b) Approximation: test RMSE vs parameters N (noiseless fit)",
        "",
        "| d | s | L | activation | paper rate (smooth: −s/d; ReLU cap: −min(L−1,s)/d) | our slope of RMSE [95%] | median train MSE | median RMSE at largest N |",
        "|---|---|---|---|---|---|---|---|",
    ]
    approx = long[long["part"] == "approximation"].copy()
    if not approx.empty:
        approx["rmse"] = np.sqrt(approx["test_mse"])
        for row in _slope_table(approx, "approximation", "parameters", "rmse"):
            d, s, depth = row["d"], row["s"], row["depth"]
            rate = -s / d if row["activation"] in SMOOTH else -min(depth - 1, s) / d
            fit = row["fit"]
            lines.append(
                f"| {d} | {s:g} | {depth} | {row['activation']} | {rate:.3f} | {fit.slope:.3f} "
                f"[{fit.low:.3f}, {fit.high:.3f}] | {row['train']:.2e} | {row['largest']:.2e} |"
            )
    lines += [
        "",
        "## Where optimisation, not approximation, limits the slope",
        "",
        "Every network here is trained by a fixed budget of full-batch Adam steps, so measured errors are "
        "approximation + estimation + *optimisation* error. Signs of the last: a training MSE well above "
        "σ² (underfitting: the network did not reach the empirical risk minimiser the theory analyses), "
        "or an approximation RMSE that stops falling as N grows. The theory's rates are for the "
        "minimiser; slopes measured with an optimiser are only evidence about it where training MSE ≈ σ² "
        "(estimation) or keeps falling with N (approximation). The tables list the median training MSE "
        "so the reader can check this row by row.",
        "",
    ]
    return "\n".join(lines)


def _figures(results: pd.DataFrame, config: SmoothnessRatesConfig, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..analysis import minimax_exponent

    out_dir.mkdir(parents=True, exist_ok=True)
    if results.empty:
        return []
    long = _long(results)
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
            ax.set_title(f"d={d}, s={s:g}, L={depth}", fontsize=9)
            ax.set_xlabel(x)
        axes[0][0].set_ylabel(ylabel)
        axes[0][0].legend(fontsize=7)
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

__all__ = ["ACTIVATIONS", "EXPERIMENT", "SmoothnessRatesConfig", "parameter_count", "train_ensemble", "width_for_parameters"]
