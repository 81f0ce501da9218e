"""S seeded DLoR networks of one architecture as one module with a leading seed axis.

Used to train many initialisations of a :func:`structnets.models.dlor_mlp` network at the cost of
about one (Chen, Li, Kim, Lavaei, *Structural Correspondence and Universal Approximation in
Diagonal plus Low-Rank Neural Networks*, arXiv 2605.05659, sawtooth experiments; see
``docs/dlor.md``): every DLoR map of every seed is held in a few stacked tensors, so a training
step is a handful of batched matmuls instead of S·L small ones.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, cast

import torch
from torch import nn

from .._validation import check_int
from ..nn import DLoRBranches, DLoRLinear, DLoRParallel, TakeFirst, ZeroPad
from .dlor_mlp import dlor_mlp


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
        models: S ≥ 1 networks from ``dlor_mlp`` with identical arguments (left unchanged).

    Shape: ``(n, d)`` (shared by all seeds) → ``(S, n, out_features)``.

    Raises:
        TypeError: an entry of ``models`` is not a ``dlor_mlp`` network (ZeroPad … TakeFirst).
        ValueError: ``models`` is empty, or its networks differ in architecture.
    """

    def __init__(self, models: Sequence[nn.Sequential]) -> None:
        super().__init__()
        _check_models(models)
        # A plain list, not a submodule: the template's own parameters must not be trained.
        self._template = [copy.deepcopy(models[0])]
        maps = [_dlor_maps(model) for model in models]
        first: Any = models[0]  # checked above: ZeroPad, DLoR maps and σ, TakeFirst
        self.seeds: int = len(models)
        self.in_features: int = first[0].in_features
        self.width: int = first[0].width
        self.out_features: int = first[-1].out_features
        self.parallel: bool = isinstance(first[1], DLoRParallel)
        self.activation: nn.Module = copy.deepcopy(first[1].activation if self.parallel else first[2])
        self.rank: int = maps[0][0][0][0].U.shape[1]

        def stack(get: Any, layers: Sequence[int] | None = None) -> nn.Parameter:
            layers = range(len(maps[0])) if layers is None else layers
            return nn.Parameter(torch.stack([torch.stack([get(m[layer]) for m in maps]) for layer in layers]).clone())

        self.alpha = stack(lambda layer: torch.stack([b.alpha for b in layer[0]]))
        self.U = stack(lambda layer: torch.cat([b.U for b in layer[0]], 1))
        self.V = stack(lambda layer: torch.cat([b.V for b in layer[0]], 1))
        if self.parallel:
            self.bias = stack(lambda layer: torch.stack([b.bias for b in layer[0]]), range(len(maps[0]) - 1))
            self.out_bias = nn.Parameter(torch.stack([cast(torch.Tensor, m[-1][1]) for m in maps]).clone())
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
            for layer, (branches, maybe_bias) in enumerate(maps):
                rank = branches[0].rank
                bias = cast(torch.Tensor, maybe_bias)  # None only for a parallel layer, not written then
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


def _architecture(model: nn.Sequential) -> list[Any]:
    """Module types and parameter names, shapes and dtypes: equal for networks S can batch."""
    return [type(m).__name__ for m in model] + [(k, tuple(p.shape), p.dtype) for k, p in model.named_parameters()]


def _check_models(models: Sequence[nn.Sequential]) -> None:
    if isinstance(models, nn.Module) or not isinstance(models, Sequence):
        raise TypeError(f"`models` must be a sequence of dlor_mlp networks, got {type(models).__name__}")
    if not models:
        raise ValueError("`models` must hold at least one network, got 0")
    for index, model in enumerate(models):
        if not (
            isinstance(model, nn.Sequential)
            and len(model) >= 3
            and isinstance(model[0], ZeroPad)
            and isinstance(model[-1], TakeFirst)
            and any(isinstance(m, (DLoRLinear, DLoRBranches, DLoRParallel)) for m in model)
        ):
            raise TypeError(
                f"`models` must hold networks built by dlor_mlp (ZeroPad, DLoR maps, TakeFirst), got "
                f"{type(model).__name__} at index {index}"
            )
    reference = _architecture(models[0])
    activations = _activation_states(models[0])
    if any(next(m.parameters(), None) is not None for m, _ in _activation_modules(models[0])):
        # one copy would serve every seed, shared in training and never written back by to_models
        raise ValueError(
            "`models` must use activations without parameters (e.g. Swish(learnable=False)): "
            "a batched activation is one module shared by all seeds"
        )
    for index, model in enumerate(models[1:], start=1):
        if _architecture(model) != reference:
            raise ValueError(
                f"`models` must share one architecture (dlor_mlp with identical arguments); network {index} "
                "differs from network 0"
            )
        # Every seed runs through network 0's activation: one whose state differs (a Swish β)
        # would be computed wrongly (β = 3 run as β = 1 was off by 0.17), so it is refused.
        if not _same_states(_activation_states(model), activations):
            raise ValueError(
                f"`models` must share one activation state (every seed runs through network 0's); network "
                f"{index}'s activation differs from network 0's"
            )


def _activation_modules(model: nn.Sequential) -> list[tuple[nn.Module, dict[str, torch.Tensor]]]:
    """Every activation module of a ``dlor_mlp`` network with its state (parameters and buffers)."""
    modules = [m.activation if isinstance(m, DLoRParallel) else m for m in model]
    skip = (ZeroPad, TakeFirst, DLoRLinear, DLoRBranches)
    return [(m, m.state_dict()) for m in modules if not isinstance(m, skip)]


def _activation_states(model: nn.Sequential) -> list[tuple[str, dict[str, torch.Tensor]]]:
    """repr and state (parameters and buffers, e.g. a Swish β) of every activation of a ``dlor_mlp`` network."""
    return [(repr(m), state) for m, state in _activation_modules(model)]


def _same_states(a: list[tuple[str, dict[str, torch.Tensor]]], b: list[tuple[str, dict[str, torch.Tensor]]]) -> bool:
    return len(a) == len(b) and all(
        name_a == name_b
        and state_a.keys() == state_b.keys()
        and all(torch.equal(state_a[k], state_b[k]) for k in state_a)
        for (name_a, state_a), (name_b, state_b) in zip(a, b)
    )


def _dlor_maps(model: nn.Sequential, live: bool = False) -> list[tuple[list[Any], torch.Tensor | None]]:
    """(branches, bias) of every DLoR map of a ``dlor_mlp`` network, in order (bias None for a
    parallel layer, whose branches carry their own)."""
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
    """Detached α, U, V and bias of one DLoR branch (stacking them must not track gradients)."""

    def __init__(self, branch: Any) -> None:
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
    """S seeded ``dlor_mlp`` networks, batched: network s is initialised under ``seeded(seeds[s])``.

    Args:
        seeds: S ≥ 1 initialisation seeds (ints ≥ 0).
        in_features, width, depth, rank, mode, activation, branches, dtype: the arguments of
            :func:`structnets.models.dlor_mlp` (one output).

    Returns:
        a :class:`BatchedDLoRNet` of the S networks.
    """
    from ..training import seeded

    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence):
        raise TypeError(f"`seeds` must be a sequence of ints >= 0, got {seeds!r:.80} ({type(seeds).__name__})")
    if not seeds:
        raise ValueError("`seeds` must hold at least one seed, got 0")
    checked = [check_int(f"seeds[{index}]", seed, low=0, high=2**63 - 1) for index, seed in enumerate(seeds)]
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"`dtype` must be a floating-point torch.dtype, got {dtype!r}")
    models = []
    for seed in checked:
        with seeded(seed):
            models.append(dlor_mlp(in_features, 1, width, depth, rank, mode, activation, branches, dtype=dtype))
    return BatchedDLoRNet(models)


__all__ = ["BatchedDLoRNet", "build_batched"]
