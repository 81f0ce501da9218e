"""Experiment ``dlor-sawtooth``: deep (multiplicative) vs wide (additive) DLoR networks on
sawtooth targets, the h → 0 correspondence with a dense MLP, and the spectra of trained layers.

Chen, Li, Kim, Lavaei, *Structural Correspondence and Universal Approximation in Diagonal plus
Low-Rank Neural Networks* (arXiv 2605.05659), experiments. Targets: the sawtooth family
f_{T,d}(x) = (1/d) Σ_i tri(T·x_i) on [0, 1]^d of :mod:`structnets.data.sawtooth`. Stages (each a
set of pure, seeded units, one result row each):

1. ``train``: one unit per (target, architecture, budget) trains *all seeds at once*: the S
   networks of one architecture are one batched model (:class:`BatchedDLoRNet`, parameters with
   a leading seed axis, batched matmuls), trained by one Adam on the sum of the per-seed losses.
   Adam is elementwise, so this equals S independent trainings (a test checks it), at the cost
   of about one. Architectures: ``dlor_mlp(d, 1, N, L, r, mode, branches=B)`` for the wide
   forms ``"parallel"`` (the paper's wide network, σ per branch) and ``"summed"`` (branches
   added before σ), and ``"deep"`` with the depth matched to each wide network's parameter
   count. Full-batch Adam, cosine learning-rate decay over the budget; each budget (5,000 and
   50,000 epochs in the full run) is its own run. Reported per seed: final test MSE, whether
   and when (first evaluation epoch) the test MSE reached the threshold 1e-3.
2. ``correspondence``: one unit per (target, seed) trains a dense MLP and evaluates the deep,
   parallel and summed DLoR networks of :func:`structnets.constructive.dlor_network_from_dense`
   at h = 1e-1 … 1e-4: their test MSE and sup-distance to the MLP.

The table compares deep with each wide network per (target, budget) cell with exact tests over
the seeds (:func:`compare_cell`), and calls a claim reproduced only where its test is
significant. The spectral figure reads the singular values of the trained deep layers
(αI + UVᵀ) stored by the ``train`` units of the largest budget (seed 0).
"""

from __future__ import annotations

import copy
import json
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from ..runner.figures import save_figure
from ..runner.experiment import FunctionExperiment, JSONScalar, Unit, run_experiment

THRESHOLD = 1e-3
WIDE_MODES: tuple[str, ...] = ("parallel", "summed")
CORRESPONDENCE_MODES: tuple[str, ...] = ("deep", "parallel", "summed")
# modules of a DLoR network that apply no σ (every other one is σ or a parallel layer with σ inside)
_LINEAR_LAYERS = ("ZeroPad", "TakeFirst", "DLoRLinear", "DLoRBranches")


# --------------------------------------------------------------------------------------------
# Seeds batched into one model


class BatchedDLoRNet(nn.Module):
    """S networks built by :func:`structnets.models.dlor_mlp` with one architecture, as one module.

    The parameters of all L DLoR maps and all S seeds are a few tensors: ``alpha`` (L, S, B),
    ``U`` and ``V`` (L, S, N, B·r) (the B branches of a layer side by side) and the biases:
    ``bias`` (L, S, N) for ``"deep"`` and ``"summed"`` networks; for ``"parallel"`` networks
    ``bias`` (L − 1, S, B, N), one per branch of every nonlinear layer, and ``out_bias`` (S, N)
    for the last, linear map. ``forward`` runs the layers as batched matmuls: for deep/summed
    maps it forms every weight W = (Σ_k α_k) I + UVᵀ in one batched product (the B branches of a
    summed layer are one rank-Br update); a parallel layer computes
    Σ_k σ(α_k h + (hV_k)U_kᵀ + b_k) with the branch axis batched. For every seed s it computes
    what ``models[s]`` computes (to rounding), and a few parameter tensors instead of 4·L keep
    autograd and the optimiser step cheap (measured: 1.8 ms vs 7.5 ms of CPU per step for the
    12-layer deep network with per-layer tensors and low-rank products). :meth:`to_models`
    writes them back.

    Args:
        models: S ≥ 1 networks from ``dlor_mlp`` with identical arguments.

    Shape: ``(n, d)`` (shared by all seeds) → ``(S, n, out_features)``.
    """

    def __init__(self, models: Sequence[nn.Sequential]) -> None:
        super().__init__()
        from ..models.dlor_mlp import DLoRParallel

        if not models:
            raise ValueError("`models` must hold at least one network, got 0")
        # A plain list, not a submodule: the template's own parameters must not be trained.
        self._template = [copy.deepcopy(models[0])]
        maps = [_dlor_maps(model) for model in models]
        self.seeds = len(models)
        self.in_features = models[0][0].in_features
        self.width = models[0][0].width
        self.out_features = models[0][-1].out_features
        self.parallel = isinstance(models[0][1], DLoRParallel)
        self.activation = copy.deepcopy(models[0][1].activation if self.parallel else models[0][2])
        self.rank = maps[0][0][0][0].U.shape[1]

        def stack(get: Any, layers: Sequence[int] | None = None) -> nn.Parameter:
            layers = range(len(maps[0])) if layers is None else layers
            return nn.Parameter(torch.stack([torch.stack([get(m[layer]) for m in maps]) for layer in layers]).clone())

        self.alpha = stack(lambda layer: torch.stack([b.alpha for b in layer[0]]))
        self.U = stack(lambda layer: torch.cat([b.U for b in layer[0]], 1))
        self.V = stack(lambda layer: torch.cat([b.V for b in layer[0]], 1))
        if self.parallel:
            self.bias = stack(lambda layer: torch.stack([b.bias for b in layer[0]]), range(len(maps[0]) - 1))
            self.out_bias = nn.Parameter(torch.stack([m[-1][1] for m in maps]).clone())
        else:
            self.bias = stack(lambda layer: layer[1])

    @property
    def depth(self) -> int:
        """Number of nonlinear layers (DLoR maps − 1)."""
        return self.alpha.shape[0] - 1

    def weights(self) -> torch.Tensor:
        """The (L, S, N, N) weights Σ_k (α_k I + U_k V_kᵀ) of every map and seed (for a parallel
        layer, the sum of its branch weights, which σ per branch does not compose to)."""
        eye = torch.eye(self.width, dtype=self.U.dtype, device=self.U.device)
        return torch.matmul(self.U, self.V.transpose(-1, -2)) + self.alpha.sum(-1)[..., None, None] * eye

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        h = nn.functional.pad(input, (0, self.width - self.in_features)).expand(self.seeds, -1, -1)
        if self.parallel:
            return self._forward_parallel(h)
        transposed = self.weights().transpose(-1, -2).unbind(0)
        biases = self.bias.unbind(0)
        last = len(transposed) - 1
        for layer, (weight_t, bias) in enumerate(zip(transposed, biases)):
            z = torch.baddbmm(bias[:, None, :], h, weight_t)
            h = self.activation(z) if layer < last else z
        return h[..., : self.out_features]

    def _forward_parallel(self, h: torch.Tensor) -> torch.Tensor:
        layers, seeds, n, _ = self.U.shape
        branches = self.alpha.shape[-1]
        U = self.U.reshape(layers, seeds, n, branches, self.rank)
        V = self.V.reshape(layers, seeds, n, branches, self.rank)
        for layer in range(layers - 1):
            projected = torch.einsum("sim,smbr->sbir", h, V[layer])  # (S, B, n_points, r)
            low = torch.einsum("sbir,snbr->sbin", projected, U[layer])
            z = self.alpha[layer][:, :, None, None] * h[:, None] + low + self.bias[layer][:, :, None, :]
            h = self.activation(z).sum(1)
        weight_t = self.weights()[-1].transpose(-1, -2)
        return torch.baddbmm(self.out_bias[:, None, :], h, weight_t)[..., : self.out_features]

    def parameters_per_seed(self) -> int:
        """Number of parameters of one seed's network (every tensor has exactly one seed axis)."""
        return sum(p.numel() for p in self.parameters()) // self.seeds

    def dense(self, layer: int) -> torch.Tensor:
        """The (S, N, N) weights of DLoR map ``layer`` (summed over branches)."""
        return self.weights()[layer]

    def to_models(self) -> list[nn.Sequential]:
        """Return S ``dlor_mlp`` networks holding the current parameters (copies)."""
        models = []
        for s in range(self.seeds):
            model = copy.deepcopy(self._template[0])
            maps = _dlor_maps(model, live=True)
            for layer, (branches, bias) in enumerate(maps):
                rank = branches[0].rank
                with torch.no_grad():
                    for k, branch in enumerate(branches):
                        branch.alpha.copy_(self.alpha[layer, s, k])
                        branch.U.copy_(self.U[layer, s, :, k * rank : (k + 1) * rank])
                        branch.V.copy_(self.V[layer, s, :, k * rank : (k + 1) * rank])
                        if self.parallel and layer < len(maps) - 1:
                            branch.bias.copy_(self.bias[layer, s, k])
                    if not self.parallel:
                        bias.copy_(self.bias[layer, s])
                    elif layer == len(maps) - 1:
                        bias.copy_(self.out_bias[s])
            models.append(model)
        return models


def _dlor_maps(model: nn.Sequential, live: bool = False) -> list[tuple[list[Any], torch.Tensor | None]]:
    """(branches, bias) of every DLoR map of a ``dlor_mlp`` network, in order (bias None for a
    parallel layer, whose branches carry their own)."""
    from ..models.dlor_mlp import DLoRBranches, DLoRParallel
    from ..nn import DLoRLinear

    maps: list[tuple[list[Any], torch.Tensor | None]] = []
    for module in model:
        if isinstance(module, DLoRLinear):
            maps.append(([module], module.bias))
        elif isinstance(module, DLoRBranches):
            maps.append((list(module.branches), module.bias))
        elif isinstance(module, DLoRParallel):
            maps.append((list(module.branches), None))
    if not live:
        maps = [([_Detached(b) for b in branches], None if bias is None else bias.detach()) for branches, bias in maps]
    return maps


class _Detached:
    def __init__(self, branch: nn.Module) -> None:
        self.alpha, self.U, self.V = branch.alpha.detach(), branch.U.detach(), branch.V.detach()
        self.bias = None if branch.bias is None else branch.bias.detach()


def build_batched(
    seeds: Sequence[int],
    in_features: int,
    width: int,
    depth: int,
    rank: int,
    mode: str,
    activation: str,
    branches: int = 1,
    dtype: torch.dtype = torch.float32,
) -> BatchedDLoRNet:
    """S seeded ``dlor_mlp`` networks (seed s initialised under ``seeded(s)``), batched."""
    from ..models import dlor_mlp
    from ..training import seeded

    models = []
    for seed in seeds:
        with seeded(int(seed)):
            models.append(dlor_mlp(in_features, 1, width, depth, rank, mode, activation, branches, dtype=dtype))
    return BatchedDLoRNet(models)


@dataclass(frozen=True)
class BatchedHistory:
    """What :func:`train_batched` measured, per seed (lists of length S)."""

    final_test_mse: list[float]
    final_train_mse: list[float]
    best_test_mse: list[float]
    epochs_to_threshold: list[int | None]
    eval_epochs: list[int]
    test_curve: list[list[float]]  # [evaluation][seed]
    seconds: float


def train_batched(
    net: BatchedDLoRNet,
    X: torch.Tensor,
    y: torch.Tensor,
    X_test: torch.Tensor,
    y_test: torch.Tensor,
    *,
    epochs: int,
    lr: float,
    eval_every: int,
    threshold: float = THRESHOLD,
    schedule: str = "cosine",
) -> BatchedHistory:
    """Full-batch Adam on Σ_s MSE_s (each seed's gradient is its own MSE's), evaluated every
    ``eval_every`` epochs and at the end on the test set; the learning rate decays by cosine
    from ``lr`` to ``lr``/100 over ``epochs`` (``schedule="constant"`` keeps it)."""
    start = time.perf_counter()
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    scheduler = (
        torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs, eta_min=lr / 100)
        if schedule == "cosine"
        else None
    )
    y, y_test = y.reshape(1, -1, 1), y_test.reshape(1, -1, 1)
    eval_epochs: list[int] = []
    curve: list[list[float]] = []
    reached: list[int | None] = [None] * net.seeds

    def evaluate(epoch: int) -> None:
        with torch.no_grad():
            mse = ((net(X_test) - y_test) ** 2).mean(dim=(1, 2))
        values = [float(v) if math.isfinite(float(v)) else math.inf for v in mse]
        eval_epochs.append(epoch)
        curve.append(values)
        for s, value in enumerate(values):
            if reached[s] is None and value <= threshold:
                reached[s] = epoch

    evaluate(0)
    for epoch in range(1, epochs + 1):
        optimizer.zero_grad(set_to_none=True)
        loss = ((net(X) - y) ** 2).mean(dim=(1, 2)).sum()
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        if epoch % eval_every == 0 or epoch == epochs:
            evaluate(epoch)
    with torch.no_grad():
        train_mse = ((net(X) - y) ** 2).mean(dim=(1, 2))
    best = np.min(np.asarray(curve), axis=0)
    return BatchedHistory(
        final_test_mse=curve[-1],
        final_train_mse=[float(v) for v in train_mse],
        best_test_mse=[float(v) for v in best],
        epochs_to_threshold=reached,
        eval_epochs=eval_epochs,
        test_curve=curve,
        seconds=time.perf_counter() - start,
    )


# --------------------------------------------------------------------------------------------
# Configuration


def parse_target(name: str) -> tuple[int, int]:
    """``"d<dim>t<teeth>"`` → (dim, teeth); e.g. ``"d1t4"`` is the 1-D sawtooth with 4 teeth."""
    import re

    match = re.fullmatch(r"d(\d+)t(\d+)", str(name))
    if not match or int(match.group(1)) < 1 or int(match.group(2)) < 1:
        raise ValueError(f"`targets` entries must look like 'd1t4' (dimension 1, 4 teeth), got {name!r}")
    return int(match.group(1)), int(match.group(2))


@dataclass(frozen=True)
class DLoRSawtoothConfig:
    """Configuration of ``dlor-sawtooth``; ``DLoRSawtoothConfig()`` is the full run.

    Attributes:
        targets: sawtooth targets ``"d<dim>t<teeth>"``: f(x) = (1/d) Σ_i tri(T·x_i) on [0, 1]^d.
        seeds: initialisation seeds (≥ 5 in the full run); data are the same for every seed.
        budgets: training epochs (full-batch Adam steps) of each independent run.
        width, rank: N and r of every DLoR map (N ≥ d + 3, the paper's n + m + 2).
        wide_modes: the wide networks trained against the deep one: ``"parallel"`` (the
            paper's wide network, σ per branch) and/or ``"summed"`` (branches added before σ,
            one DLoR map of rank B·r per layer; called ``"wide"`` before the parallel/summed split).
        wide_depth: nonlinear layers of both wide networks.
        branches: B of the parallel network; summed_branches: B of the summed one (defaults
            4 and 5 give 376 and 372 parameters, both matched by one 15-map deep network, 375).
        deep_depth: depth of the deep network; None picks, for each wide network, the depth
            whose parameter count is closest to it (units shared when the depths coincide).
        alpha_level: two-sided level of the per-cell tests (exact rank test on the final test
            MSE and on the epochs to threshold, Fisher's exact test on the successes); a cell
            is called reproduced only when its test is significant at this level.
        activation: σ of every layer.
        lr: initial Adam learning rate (cosine decay to lr/100 over each budget).
        n_train: training points for d = 1; 4^{d−1}·n_train for dimension d (uniform sample).
        test_points: about this many test points on a regular grid (⌈test_points^{1/d}⌉ per axis).
        eval_every: epochs between test evaluations (epochs to threshold are multiples of it).
        threshold: the test MSE counted as success (1e-3).
        data_seed: seed of the training sample.
        dense_width, dense_depth, dense_epochs, dense_lr: the dense MLP (same σ) of the h → 0
            correspondence (trained full-batch in float32 by Adam with cosine decay).
        hs: the scales h of the correspondence.
        correspondence_seeds: seeds of the dense MLPs.
        correspondence_rank: rank r of the DLoR networks built from the dense MLP.
    """

    targets: tuple[str, ...] = ("d1t2", "d1t4", "d2t2")
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    budgets: tuple[int, ...] = (5000, 50000)
    width: int = 8
    rank: int = 1
    wide_modes: tuple[str, ...] = ("parallel", "summed")
    wide_depth: int = 3
    branches: int = 4
    summed_branches: int = 5
    deep_depth: int | None = None
    alpha_level: float = 0.05
    activation: str = "tanh"
    lr: float = 3e-3
    n_train: int = 256
    test_points: int = 1024
    eval_every: int = 50
    threshold: float = THRESHOLD
    data_seed: int = 12345
    dense_width: int = 8
    dense_depth: int = 2
    dense_epochs: int = 5000
    dense_lr: float = 1e-2
    hs: tuple[float, ...] = (1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4)
    correspondence_seeds: tuple[int, ...] = (0, 1, 2)
    correspondence_rank: int = 1

    @classmethod
    def quick(cls) -> DLoRSawtoothConfig:
        """The ``--quick`` preset: the 2-tooth 1-D target, budgets of 500 and 2,000 epochs."""
        return cls(
            targets=("d1t2",),
            budgets=(500, 2000),
            eval_every=25,
            dense_epochs=2000,
            correspondence_seeds=(0, 1),
        )

    def __post_init__(self) -> None:
        from .._validation import check_choice, check_int, check_real
        from ..nn import ACTIVATIONS

        if not self.targets:
            raise ValueError("`targets` must list at least one target, got ()")
        for target in self.targets:
            dim, _ = parse_target(target)
            if self.width < dim + 1 or self.dense_width < 1:
                raise ValueError(f"`width` must be >= dim + 1 = {dim + 1} for target {target!r}, got {self.width}")
        if not self.seeds:
            raise ValueError("`seeds` must list at least one seed, got ()")
        if not self.budgets:
            raise ValueError("`budgets` must list at least one budget, got ()")
        for budget in self.budgets:
            check_int("budgets", budget, low=1)
        check_int("width", self.width, low=2)
        check_int("rank", self.rank, low=1, high=self.width - 1)
        if not self.wide_modes or len(set(self.wide_modes)) != len(self.wide_modes):
            raise ValueError(f"`wide_modes` must list distinct modes, got {self.wide_modes!r}")
        for mode in self.wide_modes:
            check_choice("wide_modes", mode, WIDE_MODES)
        check_int("wide_depth", self.wide_depth, low=1)
        check_int("branches", self.branches, low=1)
        check_int("summed_branches", self.summed_branches, low=1)
        check_real("alpha_level", self.alpha_level, low=0.0, high=1.0, low_open=True, high_open=True)
        if self.deep_depth is not None:
            check_int("deep_depth", self.deep_depth, low=1)
        check_choice("activation", self.activation, ACTIVATIONS)
        check_real("lr", self.lr, low=0.0, low_open=True)
        check_int("n_train", self.n_train, low=2)
        check_int("test_points", self.test_points, low=2)
        check_int("eval_every", self.eval_every, low=1)
        check_real("threshold", self.threshold, low=0.0, low_open=True)
        check_int("dense_width", self.dense_width, low=1)
        check_int("dense_depth", self.dense_depth, low=1)
        check_int("dense_epochs", self.dense_epochs, low=1)
        for h in self.hs:
            check_real("hs", h, low=0.0, high=1.0, low_open=True)
        check_int("correspondence_rank", self.correspondence_rank, low=1)


def matched_deep_depth(width: int, rank: int, wide_depth: int, branches: int, mode: str = "summed") -> int:
    """The deep depth whose parameter count is closest to the ``mode`` wide network's (ties: shallower)."""
    from ..models import dlor_parameter_count

    target = dlor_parameter_count(width, wide_depth, rank, mode, branches)
    per_map = dlor_parameter_count(width, 1, rank, "deep") // 2
    maps = max(2, round(target / per_map))
    return maps - 1


def _data(dim: int, teeth: int, n_train: int, test_points: int, data_seed: int, dtype: torch.dtype):
    from ..data import make_sawtooth

    X, y = make_sawtooth(n_train * 4 ** (dim - 1), dim, teeth, seed=data_seed)
    per_axis = max(2, math.ceil(test_points ** (1.0 / dim) - 1e-9))
    X_test, y_test = make_sawtooth(per_axis, dim, teeth, grid=True)
    return [torch.as_tensor(a, dtype=dtype) for a in (X, y, X_test, y_test)]


def _unit_data(params: Mapping[str, Any], dtype: torch.dtype) -> list[torch.Tensor]:
    return _data(
        int(params["dim"]), int(params["teeth"]), int(params["n_train"]), int(params["test_points"]),
        int(params["data_seed"]), dtype,
    )


# --------------------------------------------------------------------------------------------
# Units


def wide_branches(config: DLoRSawtoothConfig, mode: str) -> int:
    """B of the ``mode`` wide network of ``config``."""
    return config.branches if mode == "parallel" else config.summed_branches


def deep_depths(config: DLoRSawtoothConfig) -> dict[str, int]:
    """The deep depth matched to each wide network of ``config`` (``deep_depth`` if given)."""
    return {
        mode: config.deep_depth
        or matched_deep_depth(config.width, config.rank, config.wide_depth, wide_branches(config, mode), mode)
        for mode in config.wide_modes
    }


def _units(config: DLoRSawtoothConfig, finished: pd.DataFrame) -> list[Unit]:
    from ..models import dlor_parameter_count

    depths = deep_depths(config)
    architectures = [("deep", depth, 1) for depth in sorted(set(depths.values()))]
    architectures += [(mode, config.wide_depth, wide_branches(config, mode)) for mode in config.wide_modes]
    common = {
        "width": config.width,
        "rank": config.rank,
        "activation": config.activation,
        "n_train": config.n_train,
        "test_points": config.test_points,
        "data_seed": config.data_seed,
    }
    units = []
    for target in config.targets:
        dim, teeth = parse_target(target)
        for mode, depth, branches in architectures:
            for budget in config.budgets:
                units.append(
                    Unit(
                        key=f"train/{target}/{mode}/depth={depth}/branches={branches}/budget={budget}",
                        params={
                            "stage": "train",
                            "target": target,
                            "dim": dim,
                            "teeth": teeth,
                            "mode": mode,
                            "depth": depth,
                            "branches": branches,
                            "parameters": dlor_parameter_count(config.width, depth, config.rank, mode, branches),
                            "budget": budget,
                            "seeds": list(config.seeds),
                            "lr": config.lr,
                            "eval_every": config.eval_every,
                            "threshold": config.threshold,
                            **common,
                        },
                    )
                )
        for seed in config.correspondence_seeds:
            units.append(
                Unit(
                    key=f"correspondence/{target}/seed={seed}",
                    params={
                        "stage": "correspondence",
                        "target": target,
                        "dim": dim,
                        "teeth": teeth,
                        "seed": seed,
                        "dense_width": config.dense_width,
                        "dense_depth": config.dense_depth,
                        "dense_epochs": config.dense_epochs,
                        "dense_lr": config.dense_lr,
                        "hs": list(config.hs),
                        "dlor_rank": config.correspondence_rank,
                        **common,
                    },
                )
            )
    return units


@contextmanager
def single_thread() -> Iterator[None]:
    """Run the body with one intra-op thread, restoring the previous setting after.

    These networks are tiny (N ≤ 16): a step is a few hundred microsecond-sized ops, and with
    two threads on a busy 2-core machine every op waits on the other thread (measured: 1.2 ms
    vs 71 ms per step of an 8-wide MLP). Parallelism comes from ``--jobs`` instead.
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _run_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    with single_thread():
        if params["stage"] == "train":
            return _run_train(params)
        if params["stage"] == "correspondence":
            return _run_correspondence(params)
    raise ValueError(f"`stage` must be one of ['correspondence', 'train'], got {params['stage']!r}")


def _downsample(epochs: list[int], curve: list[list[float]], points: int = 200) -> dict[str, Any]:
    index = np.unique(np.linspace(0, len(epochs) - 1, min(points, len(epochs))).round().astype(int))
    return {"epochs": [epochs[i] for i in index], "test_mse": [curve[i] for i in index]}


def _spectra(net: BatchedDLoRNet, seed_index: int = 0) -> list[dict[str, Any]]:
    """Singular values and α of every DLoR map of one seed (for the spectral figure)."""
    out = []
    with torch.no_grad():
        weights = net.weights()
        for layer in range(weights.shape[0]):
            dense = weights[layer, seed_index].double()
            out.append(
                {
                    "alpha": float(net.alpha[layer, seed_index].sum()),
                    "singular_values": torch.linalg.svdvals(dense).tolist(),
                }
            )
    return out


def _run_train(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    dim, teeth = int(params["dim"]), int(params["teeth"])
    X, y, X_test, y_test = _unit_data(params, torch.float32)
    seeds = [int(s) for s in params["seeds"]]
    net = build_batched(
        seeds, dim, int(params["width"]), int(params["depth"]), int(params["rank"]), params["mode"],
        params["activation"], int(params["branches"]),
    )
    history = train_batched(
        net, X, y, X_test, y_test,
        epochs=int(params["budget"]), lr=float(params["lr"]), eval_every=int(params["eval_every"]),
        threshold=float(params["threshold"]),
    )
    final = np.asarray(history.final_test_mse)
    reached = [e for e in history.epochs_to_threshold if e is not None]
    prediction = None
    if dim == 1:
        grid = torch.linspace(0, 1, 257)[:, None]
        with torch.no_grad():
            prediction = {"x": grid[:, 0].tolist(), "y": net(grid)[0, :, 0].tolist()}
    return {
        "stage": "train",
        "target": params["target"],
        "dim": dim,
        "teeth": teeth,
        "mode": params["mode"],
        "depth": int(params["depth"]),
        "branches": int(params["branches"]),
        "width": int(params["width"]),
        "rank": int(params["rank"]),
        "parameters": net.parameters_per_seed(),
        "budget": int(params["budget"]),
        "n_seeds": len(seeds),
        "median_test_mse": float(np.median(final)),
        "min_test_mse": float(final.min()),
        "max_test_mse": float(final.max()),
        "successes": len(reached),
        "success_rate": len(reached) / len(seeds),
        "median_epochs_to_threshold": float(np.median(reached)) if reached else math.nan,
        "seconds": history.seconds,
        "threads": torch.get_num_threads(),
        "final_test_mse": json.dumps(history.final_test_mse),
        "final_train_mse": json.dumps(history.final_train_mse),
        "best_test_mse": json.dumps(history.best_test_mse),
        "epochs_to_threshold": json.dumps(history.epochs_to_threshold),
        "curve": json.dumps(_downsample(history.eval_epochs, history.test_curve)),
        "spectra": json.dumps(_spectra(net)),
        "prediction": json.dumps(prediction),
    }


def train_dense(model: nn.Module, X: torch.Tensor, y: torch.Tensor, *, epochs: int, lr: float) -> float:
    """Full-batch Adam with cosine decay to lr/100 on the MSE; returns the final training MSE."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs, eta_min=lr / 100)
    target = y.reshape(-1, 1)
    for _ in range(epochs):
        optimizer.zero_grad(set_to_none=True)
        loss = ((model(X) - target) ** 2).mean()
        loss.backward()
        optimizer.step()
        scheduler.step()
    with torch.no_grad():
        return float(((model(X) - target) ** 2).mean())


def _run_correspondence(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    from ..constructive import dlor_network_from_dense
    from ..models import mlp
    from ..training import seeded

    dim, teeth, seed = int(params["dim"]), int(params["teeth"]), int(params["seed"])
    X, y, X_test, y_test = _unit_data(params, torch.float32)
    with seeded(seed):
        dense = mlp(dim, 1, int(params["dense_width"]), int(params["dense_depth"]), params["activation"])
    start = time.perf_counter()
    train_dense(dense, X, y, epochs=int(params["dense_epochs"]), lr=float(params["dense_lr"]))
    fit_seconds = time.perf_counter() - start
    dense = dense.double()  # the correspondence is checked in float64
    X_test, y_test = X_test.double(), y_test.double()
    with torch.no_grad():
        reference = dense(X_test)[:, 0]
    row: dict[str, JSONScalar] = {
        "stage": "correspondence",
        "target": params["target"],
        "dim": dim,
        "teeth": teeth,
        "seed": seed,
        "dense_width": int(params["dense_width"]),
        "dense_depth": int(params["dense_depth"]),
        "dense_parameters": int(sum(p.numel() for p in dense.parameters())),
        "dense_test_mse": float(((reference - y_test) ** 2).mean()),
        "fit_seconds": fit_seconds,
    }
    curves: dict[str, dict[str, list[float]]] = {}
    for mode in CORRESPONDENCE_MODES:
        curves[mode] = {"h": [], "test_mse": [], "sup_error": []}
        for h in params["hs"]:
            network = dlor_network_from_dense(dense, mode, float(h), rank=int(params["dlor_rank"]))
            with torch.no_grad():
                out = network(X_test)[:, 0]
            curves[mode]["h"].append(float(h))
            curves[mode]["test_mse"].append(float(((out - y_test) ** 2).mean()))
            curves[mode]["sup_error"].append(float((out - reference).abs().max()))
        row[f"{mode}_dlor_depth"] = sum(1 for m in network if type(m).__name__ not in _LINEAR_LAYERS)
        row[f"{mode}_dlor_parameters"] = int(sum(p.numel() for p in network.parameters()))
        row[f"{mode}_sup_error_min_h"] = curves[mode]["sup_error"][int(np.argmin(curves[mode]["h"]))]
    row["curves"] = json.dumps(curves)
    return row


# --------------------------------------------------------------------------------------------
# Report and figures (read saved results only)

PAPER_CLAIMS = (
    "Paper (Chen et al., arXiv 2605.05659, experiments), qualitative: under fixed budgets of 5,000 "
    "and 50,000 epochs the deep (multiplicative) DLoR networks reach lower test error and hit the "
    "1e-3 threshold faster and more often than the wide (additive) ones; as h → 0 the deep and wide "
    "networks of the correspondence converge to the dense MLP's error; trained deep layers separate "
    "their spectrum (the low-rank part takes the dominant singular directions, αI keeps the background). "
    "The paper's numbers are not restated in our issue, so only these claims are compared."
)


# --------------------------------------------------------------------------------------------
# Per-cell statistics (pure functions of the per-seed results)


def rank_test(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the exact permutation (Mann–Whitney) test that a and b come from one
    distribution: the statistic is the rank sum of a (mid-ranks for ties; ±inf allowed, so a
    seed that never reached a threshold counts as slowest); the p-value is the fraction of the
    C(n_a + n_b, n_a) relabellings whose rank sum is at least as far from its mean. Exact, so
    valid for 5 seeds (the smallest two-sided p for 5 against 5 is 2/252 ≈ 0.008); above 10⁶
    relabellings the normal approximation of :func:`scipy.stats.mannwhitneyu` is used."""
    import itertools

    from scipy import stats

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) == 0 or len(b) == 0:
        raise ValueError(f"`a` and `b` must be non-empty, got {len(a)} and {len(b)} values")
    pooled = np.concatenate([a, b])
    ranks = stats.rankdata(pooled)
    centre = len(a) * (len(pooled) + 1) / 2
    observed = abs(ranks[: len(a)].sum() - centre)
    if math.comb(len(pooled), len(a)) > 1_000_000:
        return float(stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic").pvalue)
    sums = np.array([ranks[list(c)].sum() for c in itertools.combinations(range(len(pooled)), len(a))])
    return float(np.mean(np.abs(sums - centre) >= observed - 1e-9))


def ratio_interval(deep: Sequence[float], wide: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """Geometric-mean ratio wide/deep of positive values (e.g. final test MSEs) and its Welch
    ``level`` confidence interval, computed on log10 values: 10^(Δ ± t·se) with Δ the difference
    of mean logs, se² = s_w²/n_w + s_d²/n_d and Welch–Satterthwaite degrees of freedom.
    (nan, nan, nan) when a value is not finite or positive or a side has fewer than 2 values."""
    from scipy import stats

    d, w = np.asarray(deep, dtype=float), np.asarray(wide, dtype=float)
    if len(d) < 2 or len(w) < 2 or not (np.all(np.isfinite(d)) and np.all(np.isfinite(w))) or d.min() <= 0 or w.min() <= 0:
        return math.nan, math.nan, math.nan
    ld, lw = np.log10(d), np.log10(w)
    diff = lw.mean() - ld.mean()
    vd, vw = ld.var(ddof=1) / len(ld), lw.var(ddof=1) / len(lw)
    se = math.sqrt(vd + vw)
    if se == 0.0:
        return 10**diff, 10**diff, 10**diff
    dof = (vd + vw) ** 2 / (vd**2 / (len(ld) - 1) + vw**2 / (len(lw) - 1))
    half = float(stats.t.ppf(0.5 + level / 2, dof)) * se
    return 10**diff, 10 ** (diff - half), 10 ** (diff + half)


def compare_cell(deep: Mapping[str, Any], wide: Mapping[str, Any], alpha_level: float = 0.05) -> dict[str, Any]:
    """Deep against wide in one (target, budget) cell, from the per-seed values of two ``train`` rows.

    Three claims of the paper, each with its own test at two-sided level ``alpha_level``:
    lower final test MSE (exact rank test; effect: :func:`ratio_interval`), more successes
    (Fisher's exact test on successes/seeds), faster to the threshold (exact rank test on the
    epochs to threshold, a seed that never reached it counting as slowest). A verdict is
    ``"reproduced"`` only when the test is significant in deep's favour, ``"reversed"`` when it
    is significant the other way, else ``"not significant"``.
    """
    from scipy import stats

    def values(row: Mapping[str, Any], key: str) -> list[float]:
        raw = json.loads(row[key]) if isinstance(row[key], str) else row[key]
        return [math.inf if v is None else float(v) for v in raw]

    def verdict(p: float, deep_better: bool, wide_better: bool) -> str:
        if p < alpha_level and deep_better:
            return "reproduced"
        if p < alpha_level and wide_better:
            return "reversed"
        return "not significant"

    d_mse, w_mse = values(deep, "final_test_mse"), values(wide, "final_test_mse")
    d_ep, w_ep = values(deep, "epochs_to_threshold"), values(wide, "epochs_to_threshold")
    ratio, low, high = ratio_interval(d_mse, w_mse, 1 - alpha_level)
    p_mse = rank_test(d_mse, w_mse)
    d_rank = stats.rankdata(d_mse + w_mse)[: len(d_mse)].mean() - (len(d_mse) + len(w_mse) + 1) / 2
    d_success, w_success = sum(math.isfinite(e) for e in d_ep), sum(math.isfinite(e) for e in w_ep)
    p_success = float(
        stats.fisher_exact([[d_success, len(d_ep) - d_success], [w_success, len(w_ep) - w_success]]).pvalue
    )
    p_speed = rank_test(d_ep, w_ep)
    e_rank = stats.rankdata(d_ep + w_ep)[: len(d_ep)].mean() - (len(d_ep) + len(w_ep) + 1) / 2
    d_rate, w_rate = d_success / len(d_ep), w_success / len(w_ep)
    return {
        "ratio": ratio,
        "ratio_low": low,
        "ratio_high": high,
        "p_mse": p_mse,
        "verdict_mse": verdict(p_mse, d_rank < 0, d_rank > 0),
        "p_success": p_success,
        "verdict_success": verdict(p_success, d_rate > w_rate, d_rate < w_rate),
        "p_speed": p_speed,
        "verdict_speed": verdict(p_speed, e_rank < 0, e_rank > 0),
    }


def _stage(results: pd.DataFrame, stage: str) -> pd.DataFrame:
    if results.empty or "stage" not in results:
        return results.iloc[0:0]
    return results[results["stage"] == stage]


def _fmt(value: float, digits: int = 2) -> str:
    return "—" if value is None or not np.isfinite(value) else f"{value:.{digits}e}"


def _train_row(train: pd.DataFrame, target: str, mode: str, budget: int, depth: int | None = None) -> Any:
    rows = train[(train["target"] == target) & (train["mode"] == mode) & (train["budget"] == budget)]
    if depth is not None:
        rows = rows[rows["depth"] == depth]
    return None if rows.empty else rows.iloc[0]


def _p(value: float) -> str:
    return f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"


def cell_comparisons(results: pd.DataFrame, config: DLoRSawtoothConfig) -> pd.DataFrame:
    """One row per (target, budget, wide form) with both networks run: :func:`compare_cell`
    of the deep network (matched depth) against that wide network, plus medians and counts."""
    train = _stage(results, "train")
    depths = deep_depths(config)
    rows = []
    for target in config.targets:
        for budget in config.budgets:
            for mode in config.wide_modes:
                deep = _train_row(train, target, "deep", budget, depths[mode])
                wide = _train_row(train, target, mode, budget)
                if deep is None or wide is None:
                    continue
                rows.append(
                    {
                        "target": target,
                        "budget": budget,
                        "wide_mode": mode,
                        "deep_depth": int(deep["depth"]),
                        "deep_parameters": int(deep["parameters"]),
                        "wide_parameters": int(wide["parameters"]),
                        "deep_median": float(deep["median_test_mse"]),
                        "deep_min": float(deep["min_test_mse"]),
                        "deep_max": float(deep["max_test_mse"]),
                        "wide_median": float(wide["median_test_mse"]),
                        "wide_min": float(wide["min_test_mse"]),
                        "wide_max": float(wide["max_test_mse"]),
                        "deep_successes": int(deep["successes"]),
                        "wide_successes": int(wide["successes"]),
                        "n_seeds": int(deep["n_seeds"]),
                        "deep_epochs": float(deep["median_epochs_to_threshold"]),
                        "wide_epochs": float(wide["median_epochs_to_threshold"]),
                        **compare_cell(deep, wide, config.alpha_level),
                    }
                )
    return pd.DataFrame(rows)


def _report(results: pd.DataFrame, config: DLoRSawtoothConfig) -> str:
    train = _stage(results, "train")
    corr = _stage(results, "correspondence")
    depths = deep_depths(config)
    level = config.alpha_level
    lines = [
        "# dlor-sawtooth: deep (multiplicative) vs wide (additive) DLoR networks",
        "",
        "Targets f(x) = (1/d) Σ_i tri(T·x_i) on [0, 1]^d, tri the triangle wave (``dT`` = d-dimensional, "
        f"T teeth); variance 1/(12d). Every map is N×N αI + UVᵀ with N = {config.width}, r = {config.rank}, "
        f"σ = {config.activation}. Wide networks, {config.wide_depth} nonlinear layers each: `parallel` (the "
        f"paper's wide network: {config.branches} DLoR branches per layer, σ per branch, summed after σ) and "
        f"`summed` ({config.summed_branches} branches added before σ: one DLoR map of rank "
        f"{config.summed_branches}·r per layer). Deep: one DLoR map per layer, depth matched to each wide "
        f"network's parameter count ({', '.join(f'{m}: {d} nonlinear layers' for m, d in depths.items())}). "
        f"Full-batch Adam, lr {config.lr:g} with cosine decay, each budget its own run; seeds "
        f"{list(config.seeds)} batched in one model (same data, different initialisation). Success: test MSE "
        f"≤ {config.threshold:g} at some evaluation (every {config.eval_every} epochs).",
        "",
        PAPER_CLAIMS,
        "",
        "## Fixed budgets: deep against each wide network, per cell",
        "",
        f"Per cell and claim a two-sided test at level {level:g} over the {len(config.seeds)} seeds: lower "
        "final test MSE by the exact rank (Mann–Whitney permutation) test, with the geometric-mean ratio "
        f"wide/deep and its Welch {1 - level:.0%} interval on log10 MSE; more successes by Fisher's exact "
        "test; faster by the exact rank test on epochs to threshold (a seed that never reached it is "
        "slowest). A claim is **reproduced** in a cell only where its test is significant in deep's favour; "
        f"with {len(config.seeds)} seeds against {len(config.seeds)} the smallest possible rank-test p is "
        f"{_p(2 / math.comb(2 * len(config.seeds), len(config.seeds)))}.",
        "",
        "| target | budget | wide form | deep: layers, params | deep final MSE median [min, max] | wide: params "
        "| wide final MSE median [min, max] | MSE ratio wide/deep [CI] | lower MSE (p) | successes deep/wide (p) "
        "| epochs to 1e-3 deep/wide (p) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    cells = cell_comparisons(results, config)
    for _, c in cells.iterrows():
        def epochs(value: float) -> str:
            return "—" if not np.isfinite(value) else str(int(value))

        ci = "—" if not np.isfinite(c["ratio"]) else f"{c['ratio']:.2f} [{c['ratio_low']:.2f}, {c['ratio_high']:.2f}]"
        lines.append(
            f"| {c['target']} | {c['budget']} | {c['wide_mode']} | {c['deep_depth'] + 1}, {c['deep_parameters']} | "
            f"{_fmt(c['deep_median'])} [{_fmt(c['deep_min'])}, {_fmt(c['deep_max'])}] | {c['wide_parameters']} | "
            f"{_fmt(c['wide_median'])} [{_fmt(c['wide_min'])}, {_fmt(c['wide_max'])}] | {ci} | "
            f"{c['verdict_mse']} ({_p(c['p_mse'])}) | {c['deep_successes']}/{c['wide_successes']} of {c['n_seeds']}: "
            f"{c['verdict_success']} ({_p(c['p_success'])}) | {epochs(c['deep_epochs'])}/{epochs(c['wide_epochs'])}: "
            f"{c['verdict_speed']} ({_p(c['p_speed'])}) |"
        )
    if not cells.empty:
        lines.append("")
        for mode in config.wide_modes:
            sub = cells[cells["wide_mode"] == mode]
            if sub.empty:
                continue
            counts = {
                claim: {v: int((sub[f"verdict_{claim}"] == v).sum()) for v in ("reproduced", "not significant", "reversed")}
                for claim in ("mse", "success", "speed")
            }
            lines.append(
                f"Deep against `{mode}`, {len(sub)} cells: lower MSE reproduced in {counts['mse']['reproduced']} "
                f"(reversed in {counts['mse']['reversed']}), more successes in {counts['success']['reproduced']} "
                f"(reversed in {counts['success']['reversed']}), faster in {counts['speed']['reproduced']} "
                f"(reversed in {counts['speed']['reversed']}); the rest are not significant."
            )
        lines.append("")
    if not train.empty:
        seconds = train.groupby("mode")["seconds"].sum()
        lines += [
            "Training time (all seeds of a unit at once, one thread): "
            + ", ".join(f"{mode} {seconds[mode]:.0f} s" for mode in seconds.index)
            + ".",
            "",
        ]

    if not corr.empty:
        lines += [
            "## h → 0: DLoR networks built from a trained dense MLP",
            "",
            f"Dense MLP: width {config.dense_width}, depth {config.dense_depth}, σ = {config.activation}, "
            f"{config.dense_epochs} epochs. Its deep, parallel and summed DLoR networks (rank "
            f"{config.correspondence_rank}) from `dlor_network_from_dense`, evaluated in float64 on the test "
            "grid: mean over seeds of the test MSE and of the sup-distance to the dense MLP.",
            "",
        ]
        hs = list(config.hs)
        lines += [
            "| target | network | params | nonlinear layers | " + " | ".join(f"h={h:g}" for h in hs) + " |",
            "|---|---|---|---|" + "---|" * len(hs),
        ]
        for target in config.targets:
            rows = corr[corr["target"] == target]
            if rows.empty:
                continue
            curves = [json.loads(c) for c in rows["curves"]]
            dense_mse = rows["dense_test_mse"].mean()
            lines.append(
                f"| {target} | dense MLP (test MSE) | {int(rows['dense_parameters'].iloc[0])} | {config.dense_depth} | "
                + " | ".join(_fmt(dense_mse) for _ in hs) + " |"
            )
            for mode in CORRESPONDENCE_MODES:
                if mode not in curves[0] or f"{mode}_dlor_parameters" not in rows:
                    continue
                for metric, label in (("test_mse", "test MSE"), ("sup_error", "sup |DLoR − MLP|")):
                    values = np.mean([c[mode][metric] for c in curves], axis=0)
                    lines.append(
                        f"| {target} | {mode} DLoR ({label}) | {int(rows[f'{mode}_dlor_parameters'].iloc[0])} | "
                        f"{int(rows[f'{mode}_dlor_depth'].iloc[0])} | " + " | ".join(_fmt(v) for v in values) + " |"
                    )
        lines += [
            "",
            "Deep evaluates the product of DLoR factors through σ's near-linear regime, parallel (the paper's "
            "wide network) each branch of the sum; both have error O(h²) for tanh at c = 0 (O(h) for σ with "
            "σ''(c) ≠ 0) and converge to the MLP only as h → 0. Summed adds the branches before σ, a linear "
            "re-parametrisation: exact at every h.",
            "",
        ]

    if not train.empty and "spectra" in train:
        lines += ["## Spectra of trained deep layers (largest budget, seed 0)", ""]
        lines += [
            "| target | layer | α | σ_1 | σ_2 | σ_N | #σ within 1e-6 of |α| |",
            "|---|---|---|---|---|---|---|",
        ]
        budget = max(config.budgets)
        for target in config.targets:
            row = _train_row(train, target, "deep", budget, min(depths.values()))
            if row is None:
                continue
            for layer, spectrum in enumerate(json.loads(row["spectra"])):
                sv = np.asarray(spectrum["singular_values"])
                alpha = abs(spectrum["alpha"])
                background = int(np.sum(np.abs(sv - alpha) <= 1e-6 * max(1.0, alpha)))
                lines.append(
                    f"| {target} | {layer + 1} | {spectrum['alpha']:.3f} | {sv[0]:.3f} | {sv[1]:.3f} | {sv[-1]:.3f} | "
                    f"{background}/{len(sv)} |"
                )
        lines += [
            "",
            "An N×N matrix αI + UVᵀ with U, V of rank r acts as αI on the complement of span(U) + span(V), "
            "so at least N − 2r singular values equal |α| exactly (the background); the trained content is in "
            "the few remaining ones, σ_1 above the background.",
            "",
        ]
    return "\n".join(lines)


def _figures(results: pd.DataFrame, config: DLoRSawtoothConfig, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    train, corr = _stage(results, "train"), _stage(results, "correspondence")
    paths: list[Path] = []
    colours = {"deep": "tab:blue", "parallel": "tab:orange", "summed": "tab:green", "wide": "tab:green"}
    budget = max(config.budgets)

    if not train.empty:
        targets = [t for t in config.targets if not train[train["target"] == t].empty]
        fig, axes = plt.subplots(1, len(targets), figsize=(4.2 * len(targets), 3.4), squeeze=False)
        for ax, target in zip(axes[0], targets):
            rows = train[(train["target"] == target) & (train["budget"] == budget)]
            for _, row in rows.iterrows():
                mode = row["mode"]
                curve = json.loads(row["curve"])
                epochs, values = np.asarray(curve["epochs"]), np.asarray(curve["test_mse"], dtype=float)
                ax.plot(epochs, np.median(values, axis=1), color=colours.get(mode, "gray"),
                        label=f"{mode} ({int(row['parameters'])} params)")
                ax.fill_between(epochs, values.min(axis=1), values.max(axis=1), color=colours.get(mode, "gray"), alpha=0.15)
            ax.axhline(config.threshold, color="gray", ls="--", lw=0.8)
            ax.set_yscale("log")
            ax.set_xlabel("epoch")
            ax.set_ylabel("test MSE (median, min–max over seeds)")
            ax.set_title(f"{target}, budget {budget}", fontsize=10)
            ax.legend(fontsize=8)
        paths.append(save_figure(fig, out_dir / "training_curves.png"))

        one_d = [t for t in targets if parse_target(t)[0] == 1]
        if one_d:
            from ..data import sawtooth

            fig, axes = plt.subplots(1, len(one_d), figsize=(4.2 * len(one_d), 3.0), squeeze=False)
            for ax, target in zip(axes[0], one_d):
                grid = np.linspace(0, 1, 513)
                ax.plot(grid, sawtooth(grid[:, None], parse_target(target)[1]), color="black", lw=1, label="target")
                rows = train[(train["target"] == target) & (train["budget"] == budget)]
                for _, row in rows.iterrows():
                    if row["prediction"] in (None, "null"):
                        continue
                    prediction = json.loads(row["prediction"])
                    ax.plot(
                        prediction["x"], prediction["y"], color=colours.get(row["mode"], "gray"), lw=1.2, ls="--",
                        label=f"{row['mode']}, seed 0",
                    )
                ax.set_title(f"{target}: fits after {budget} epochs", fontsize=10)
                ax.legend(fontsize=8)
            paths.append(save_figure(fig, out_dir / "fits.png"))

        fig, axes = plt.subplots(1, len(targets), figsize=(4.2 * len(targets), 3.4), squeeze=False)
        for ax, target in zip(axes[0], targets):
            rows = train[(train["target"] == target) & (train["mode"] == "deep") & (train["budget"] == budget)]
            if rows.empty:
                continue
            spectra = json.loads(rows["spectra"].iloc[0])
            for layer, spectrum in enumerate(spectra):
                s = np.asarray(spectrum["singular_values"])
                ax.scatter(np.full(len(s), layer + 1), s, s=10, color="tab:blue", alpha=0.7)
                ax.scatter([layer + 1], [abs(spectrum["alpha"])], marker="_", s=200, color="tab:red")
            ax.set_yscale("log")
            ax.set_xlabel("deep layer")
            ax.set_ylabel("singular values of αI + UVᵀ")
            ax.set_title(f"{target}: red = |α| (background)", fontsize=10)
        paths.append(save_figure(fig, out_dir / "spectra.png"))

    if not corr.empty:
        targets = [t for t in config.targets if not corr[corr["target"] == t].empty]
        fig, axes = plt.subplots(2, len(targets), figsize=(4.2 * len(targets), 6.2), squeeze=False)
        for column, target in enumerate(targets):
            rows = corr[corr["target"] == target]
            curves = [json.loads(c) for c in rows["curves"]]
            for mode in [m for m in CORRESPONDENCE_MODES if m in curves[0]]:
                h = np.asarray(curves[0][mode]["h"])
                sup = np.mean([c[mode]["sup_error"] for c in curves], axis=0)
                mse = np.mean([c[mode]["test_mse"] for c in curves], axis=0)
                axes[0, column].loglog(h, np.maximum(sup, 1e-17), marker="o", color=colours[mode], label=mode)
                axes[1, column].loglog(h, mse, marker="o", color=colours[mode], label=mode)
            axes[1, column].axhline(rows["dense_test_mse"].mean(), color="black", ls="--", lw=0.8, label="dense MLP")
            axes[0, column].set_title(f"{target}: sup |DLoR − MLP|", fontsize=10)
            axes[1, column].set_title(f"{target}: test MSE", fontsize=10)
            for ax in axes[:, column]:
                ax.set_xlabel("h")
                ax.invert_xaxis()
                ax.legend(fontsize=8)
        paths.append(save_figure(fig, out_dir / "h_convergence.png"))
    return paths


EXPERIMENT = FunctionExperiment(
    name="dlor-sawtooth",
    description=(
        "Deep vs wide DLoR networks on sawtooth targets at matched parameter counts, the h → 0 "
        "correspondence with a dense MLP, spectra of trained layers (Chen et al., arXiv 2605.05659)"
    ),
    config_class=DLoRSawtoothConfig,
    units_fn=_units,
    run_unit_fn=_run_unit,
    report_fn=_report,
    figures_fn=_figures,
)


def run(config: DLoRSawtoothConfig | None = None, out_dir: str | Path | None = None, **runner_options: Any) -> pd.DataFrame:
    """Run ``dlor-sawtooth`` and return one row per unit; see :func:`structnets.runner.experiment.run_experiment`."""
    return run_experiment(EXPERIMENT, config, out_dir, **runner_options)


__all__ = [
    "CORRESPONDENCE_MODES",
    "EXPERIMENT",
    "THRESHOLD",
    "WIDE_MODES",
    "BatchedDLoRNet",
    "DLoRSawtoothConfig",
    "build_batched",
    "cell_comparisons",
    "compare_cell",
    "deep_depths",
    "matched_deep_depth",
    "rank_test",
    "ratio_interval",
    "parse_target",
    "run",
    "train_batched",
    "train_dense",
]
