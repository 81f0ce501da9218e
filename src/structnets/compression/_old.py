"""Compress the ``nn.Linear`` layers of any model into low-rank or DLoR layers: :func:`compress`.

A trained dense layer W (out × in) is replaced by

* ``"lowrank"``: :meth:`structnets.nn.LowRankLinear.from_linear`, the truncated SVD W_r, the
  best rank-r approximation in Frobenius and spectral norm (Eckart–Young); r·(in + out)
  parameters instead of in·out (the bias-free bottleneck of Li et al., ICML 2025);
* ``"dlor"`` (square layers only): :meth:`structnets.nn.DLoRLinear.from_linear`, αI + UVᵀ with the
  best α and the truncated SVD of W − αI (:func:`structnets.nn.dlor_linear.dlor_approximation`);
  2·N·r + 1 parameters (Chen, Li, Kim, Lavaei, arXiv 2605.05659).

The rank of each layer comes from exactly one of ``rank`` (the same r for every layer, capped at
the layer's largest), ``ratio`` (the largest r whose weight keeps at most that fraction of the
dense weight's parameters) or ``energy`` (the smallest r whose approximation keeps at least that
fraction of ‖W‖_F², i.e. relative Frobenius error ≤ √(1 − energy)).
"""

from __future__ import annotations

import copy
import fnmatch
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import nn

from ._validation import check_choice, check_int, check_real
from .nn.dlor_linear import DLoRLinear, dlor_approximation
from .nn.low_rank_linear import LowRankLinear

if TYPE_CHECKING:
    import pandas as pd

METHODS: tuple[str, ...] = ("lowrank", "dlor")


@dataclass(frozen=True)
class LayerCompression:
    """One ``nn.Linear`` that :func:`compress` looked at.

    Attributes:
        name: qualified module name in the model (``model.get_submodule(name)``).
        in_features, out_features: the layer's shape.
        replaced: True when the layer was replaced.
        method: ``"lowrank"`` or ``"dlor"`` when replaced, else ``"dense"``.
        rank: the rank r used (None when kept dense).
        alpha: α of a DLoR layer (None otherwise).
        params_before, params_after: parameters of the layer, bias included.
        flops_before, flops_after: FLOPs per input row, counted as
            :func:`structnets.analysis.cost` counts them (2 per multiply-add, 1 per add).
        relative_error: ‖W − Ŵ‖_F / ‖W‖_F of the new layer's dense weight Ŵ against W, in
            float64 (0 when kept dense; 0 for W = 0).
        note: why a layer was kept dense, else ``""``.
    """

    name: str
    in_features: int
    out_features: int
    replaced: bool
    method: str
    rank: int | None
    alpha: float | None
    params_before: int
    params_after: int
    flops_before: int
    flops_after: int
    relative_error: float
    note: str = ""


@dataclass(frozen=True)
class CompressionReport:
    """What :func:`compress` did.

    Attributes:
        model: the compressed model (a copy of the input unless ``inplace=True``).
        layers: one :class:`LayerCompression` per qualifying ``nn.Linear``, in module order.
        method: ``"lowrank"`` or ``"dlor"``.
        skipped: ``(name, reason)`` for each ``nn.Linear`` that did not qualify.
    """

    model: nn.Module
    layers: tuple[LayerCompression, ...]
    method: str
    skipped: tuple[tuple[str, str], ...] = ()

    @property
    def params_before(self) -> int:
        """Parameters of the qualifying layers before compression."""
        return sum(layer.params_before for layer in self.layers)

    @property
    def params_after(self) -> int:
        """Parameters of the same layers after compression."""
        return sum(layer.params_after for layer in self.layers)

    @property
    def flops_before(self) -> int:
        """FLOPs per input row of the qualifying layers before compression."""
        return sum(layer.flops_before for layer in self.layers)

    @property
    def flops_after(self) -> int:
        """FLOPs per input row of the same layers after compression."""
        return sum(layer.flops_after for layer in self.layers)

    def to_frame(self) -> pd.DataFrame:
        """The per-layer report as a ``pandas.DataFrame``, one row per :class:`LayerCompression`."""
        import pandas as pd

        return pd.DataFrame([layer.__dict__ for layer in self.layers])


def compress(
    model: nn.Module,
    method: str = "lowrank",
    rank: int | None = None,
    ratio: float | None = None,
    energy: float | None = None,
    *,
    min_params: int = 0,
    include: str | Sequence[str] | None = None,
    exclude: str | Sequence[str] | None = None,
    inplace: bool = False,
) -> CompressionReport:
    """Replace every qualifying ``nn.Linear`` of ``model`` by a low-rank or DLoR layer.

    By default the model is **copied** (``copy.deepcopy``) and the copy compressed, so the trained
    dense model stays usable for comparison; ``inplace=True`` replaces the layers of ``model``
    itself. Either way the compressed model is ``report.model``. A layer used at several places in
    the model is replaced by one new layer at all of them.

    A layer qualifies when it is exactly ``nn.Linear`` (subclasses such as the output projection
    inside ``nn.MultiheadAttention``, whose owner reads ``.weight`` directly, are left alone),
    its name matches ``include`` and not ``exclude``, its weight has at least ``min_params``
    entries, it is not tied to another module's parameter, and it can be factored:
    min(in, out) ≥ 2 for ``"lowrank"``; square with N ≥ 2 for ``"dlor"``.

    Ranks, from exactly one of:

    * ``rank``: r for every layer, capped at the layer's largest (min(in, out) for low-rank,
      N − 1 for DLoR). At the largest low-rank r the outputs equal the dense ones to rounding.
    * ``ratio``: keep at most this fraction of each weight's parameters: the largest r with
      r·(in + out) ≤ ratio·in·out (low-rank) or 2·N·r + 1 ≤ ratio·N² (DLoR), at least 1.
    * ``energy``: the smallest r with ‖W − Ŵ‖_F² ≤ (1 − energy)·‖W‖_F² (Σ_{i≤r} σ_i² ≥
      energy·Σ σ_i² for low-rank). A layer where that r would not save parameters is kept dense
      (reported with a note): the dense layer is then both exact and cheaper.

    Hooks registered on a replaced ``nn.Linear`` are not carried over. The new layers' parameters
    follow ``requires_grad`` of the old weight, and their train/eval mode the old layer's.

    Args:
        model: any ``nn.Module`` (an ``nn.Linear`` itself too: then ``report.model`` is the new layer).
        method: ``"lowrank"`` or ``"dlor"``.
        rank: an int ≥ 1, at most the largest rank of a qualifying layer.
        ratio: a real in (0, 1].
        energy: a real in (0, 1].
        min_params: an int ≥ 0: layers whose weight has fewer entries are left dense.
        include: a glob pattern or patterns (``fnmatch``, e.g. ``"encoder.*"``) on qualified module
            names; only matching layers qualify. None: all.
        exclude: glob pattern(s); matching layers never qualify.
        inplace: replace the layers of ``model`` itself instead of a copy.

    Returns:
        a :class:`CompressionReport` with the compressed model and one row per qualifying layer.

    Raises:
        ValueError: a bad argument (named), or no ``nn.Linear`` of ``model`` qualifies (the message
            says why each was skipped).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be a torch.nn.Module, got {type(model).__name__}")
    check_choice("method", method, METHODS)
    given = {k: v for k, v in (("rank", rank), ("ratio", ratio), ("energy", energy)) if v is not None}
    if len(given) != 1:
        shown = ", ".join(f"{k}={v!r}" for k, v in given.items()) or "none"
        raise ValueError(f"give exactly one of `rank`, `ratio`, `energy`; got {shown}")
    if ratio is not None:
        ratio = check_real("ratio", ratio, low=0.0, high=1.0, low_open=True)
    if energy is not None:
        energy = check_real("energy", energy, low=0.0, high=1.0, low_open=True)
    if rank is not None:
        rank = check_int("rank", rank, low=1)
    min_params = check_int("min_params", min_params, low=0)
    includes = _patterns("include", include)
    excludes = _patterns("exclude", exclude)
    if not isinstance(inplace, bool):
        raise TypeError(f"`inplace` must be a bool, got {inplace!r}")

    target = model if inplace else copy.deepcopy(model)
    tied = _tied_parameters(target)
    chosen: list[tuple[str, nn.Linear]] = []
    skipped: list[tuple[str, str]] = []
    for name, module in target.named_modules():
        if not isinstance(module, nn.Linear):
            continue
        reason = _why_not(name, module, method, min_params, includes, excludes, tied)
        if reason:
            skipped.append((name or "<model>", reason))
        else:
            chosen.append((name, module))
    if not chosen:
        found = f"{len(skipped)} nn.Linear layer(s)" if skipped else "no nn.Linear layer"
        details = "; ".join(f"{n}: {r}" for n, r in skipped[:10]) + (" …" if len(skipped) > 10 else "")
        raise ValueError(
            f"`model` has no nn.Linear that qualifies for method={method!r}: found {found}"
            + (f" ({details})" if details else "")
        )
    if rank is not None:
        largest = max(_max_rank(module, method) for _, module in chosen)
        if rank > largest:
            raise ValueError(
                f"`rank` must be an int in [1, {largest}] (the largest rank of a qualifying layer "
                f"for method={method!r}), got {rank}"
            )

    replacements: dict[int, nn.Module] = {}
    layers: list[LayerCompression] = []
    for name, linear in chosen:
        new, row = _compress_layer(name, linear, method, rank, ratio, energy)
        layers.append(row)
        if new is not None:
            new.train(linear.training)
            replacements[id(linear)] = new
    if id(target) in replacements:
        target = replacements[id(target)]
    else:
        _replace_children(target, replacements)
    return CompressionReport(model=target, layers=tuple(layers), method=method, skipped=tuple(skipped))


def _patterns(name: str, value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise TypeError(f"`{name}` must be a glob pattern string, a sequence of them, or None; got {value!r}")


def _tied_parameters(model: nn.Module) -> set[int]:
    """ids of parameters that appear under more than one module (tied weights)."""
    owners: dict[int, set[int]] = {}
    for module in model.modules():
        for parameter in module.parameters(recurse=False):
            owners.setdefault(id(parameter), set()).add(id(module))
    return {pid for pid, mods in owners.items() if len(mods) > 1}


def _why_not(
    name: str,
    module: nn.Linear,
    method: str,
    min_params: int,
    includes: tuple[str, ...],
    excludes: tuple[str, ...],
    tied: set[int],
) -> str:
    if type(module) is not nn.Linear:
        return f"a subclass of nn.Linear ({type(module).__name__}) whose owner may read .weight directly"
    if includes and not any(fnmatch.fnmatchcase(name, p) for p in includes):
        return f"name does not match include={list(includes)}"
    if any(fnmatch.fnmatchcase(name, p) for p in excludes):
        return f"name matches exclude={list(excludes)}"
    size = module.in_features * module.out_features
    if size < min_params:
        return f"weight has {size} entries < min_params={min_params}"
    if id(module.weight) in tied or (module.bias is not None and id(module.bias) in tied):
        return "its parameters are tied to another module"
    if method == "dlor" and module.in_features != module.out_features:
        return f"not square ({module.out_features}×{module.in_features}); dlor needs in_features == out_features"
    if min(module.in_features, module.out_features) < 2:
        return f"shape {module.out_features}×{module.in_features} cannot be factored (min dimension < 2)"
    if not module.weight.is_floating_point() or module.weight.is_complex():
        return f"weight dtype {module.weight.dtype} is not real floating point"
    return ""


def _max_rank(module: nn.Linear, method: str) -> int:
    low = min(module.in_features, module.out_features)
    return low if method == "lowrank" else low - 1


def _params(method: str, m: int, n: int, r: int, bias: bool) -> int:
    """Parameters of a layer mapping n → m (bias included)."""
    weight = {"dense": m * n, "lowrank": r * (m + n), "dlor": 2 * n * r + 1}[method]
    return weight + (m if bias else 0)


def _flops(method: str, m: int, n: int, r: int, bias: bool) -> int:
    """FLOPs per input row, as ``structnets.analysis.cost`` counts them (2·macs + adds)."""
    if method == "dense":
        macs, adds = m * n, 0
    elif method == "lowrank":
        macs, adds = r * (m + n), 0
    else:  # αx + U(Vᵀx): 2·N·r + N multiply-adds, N adds to sum the two
        macs, adds = 2 * n * r + n, n
    return 2 * macs + adds + (m if bias else 0)


def _rank_for(method: str, linear: nn.Linear, rank: int | None, ratio: float) -> int:
    m, n = linear.out_features, linear.in_features
    largest = _max_rank(linear, method)
    if rank is not None:
        return min(rank, largest)
    if method == "lowrank":
        r = math.floor(ratio * m * n / (m + n) + 1e-9)
    else:
        r = math.floor((ratio * n * n - 1) / (2 * n) + 1e-9)
    return max(1, min(r, largest))


def _saving_ranks(method: str, m: int, n: int) -> int:
    """The largest r whose weight has fewer parameters than the dense one (0 if none)."""
    if method == "lowrank":
        return min((m * n - 1) // (m + n), min(m, n))
    return min((n * n - 2) // (2 * n), n - 1)


@torch.no_grad()
def _compress_layer(
    name: str,
    linear: nn.Linear,
    method: str,
    rank: int | None,
    ratio: float | None,
    energy: float | None,
) -> tuple[nn.Module | None, LayerCompression]:
    m, n = linear.out_features, linear.in_features
    bias = linear.bias is not None
    weight = linear.weight.detach().to(torch.float64)
    total = float(weight.square().sum())

    def row(
        new: nn.Module | None, r: int | None, alpha: float | None, error: float, note: str = ""
    ) -> LayerCompression:
        kind = method if new is not None else "dense"
        return LayerCompression(
            name=name, in_features=n, out_features=m, replaced=new is not None, method=kind,
            rank=r, alpha=alpha,
            params_before=_params("dense", m, n, 0, bias), params_after=_params(kind, m, n, r or 0, bias),
            flops_before=_flops("dense", m, n, 0, bias), flops_after=_flops(kind, m, n, r or 0, bias),
            relative_error=error, note=note,
        )  # fmt: skip

    if energy is not None:
        r = _energy_rank(method, weight, energy, total)
        if r is None:
            note = (
                f"kept dense: no rank that saves parameters keeps energy {energy} of ‖W‖_F² "
                f"(a {method} layer saves parameters only up to rank {_saving_ranks(method, m, n)})"
            )
            return None, row(None, None, None, 0.0, note)
    else:
        r = _rank_for(method, linear, rank, ratio if ratio is not None else 1.0)
    new: LowRankLinear | DLoRLinear
    if method == "lowrank":
        new = LowRankLinear.from_linear(linear, r)
        alpha = None
    else:
        new = DLoRLinear.from_linear(linear, r)
        alpha = float(new.alpha.detach())
    difference = float((weight - new.to_dense().detach().to(torch.float64)).square().sum())
    error = math.sqrt(difference / total) if total > 0 else 0.0
    return new, row(new, r, alpha, error)


def _energy_rank(method: str, weight: torch.Tensor, energy: float, total: float) -> int | None:
    """Smallest r whose best approximation has error² ≤ (1 − energy)·‖W‖², among parameter-saving r."""
    m, n = weight.shape
    hi = _saving_ranks(method, m, n)
    if hi < 1:
        return None
    allowed = (1.0 - energy) * total
    if method == "lowrank":
        sigma_sq = torch.linalg.svdvals(weight).square()
        tail = torch.flip(torch.cumsum(torch.flip(sigma_sq, (0,)), 0), (0,))  # tail[k] = Σ_{i≥k} σ_i²
        tail = torch.cat((tail, tail.new_zeros(1)))
        for r in range(1, hi + 1):
            if float(tail[r]) <= allowed:
                return r
        return None

    def fits(r: int) -> bool:
        return dlor_approximation(weight, r).error ** 2 <= allowed

    # α = 0 is among dlor_approximation's candidates, so a DLoR layer of rank r is never worse
    # than the truncated SVD of rank r: the low-rank energy rank, if it saves parameters, fits.
    low_rank = _energy_rank("lowrank", weight, energy, total) if hi >= 1 else None
    if low_rank is not None and low_rank <= hi:
        hi = low_rank
    elif not fits(hi):
        return None
    lo_bad, hi_good = 0, hi  # invariant: hi_good fits; every r ≤ lo_bad was found not to (or r = 0)
    while hi_good - lo_bad > 1:
        mid = (lo_bad + hi_good) // 2
        if fits(mid):
            hi_good = mid
        else:
            lo_bad = mid
    return hi_good


def _replace_children(root: nn.Module, replacements: dict[int, nn.Module]) -> None:
    """Swap every child whose id is in ``replacements``, at every place it occurs."""
    for parent in _unique_modules(root):
        for child_name, child in list(parent._modules.items()):
            if child is not None and id(child) in replacements:
                parent._modules[child_name] = replacements[id(child)]


def _unique_modules(root: nn.Module) -> Iterator[nn.Module]:
    seen: set[int] = set()
    stack = [root]
    while stack:
        module = stack.pop()
        if id(module) in seen:
            continue
        seen.add(id(module))
        yield module
        stack.extend(child for child in module._modules.values() if child is not None)


__all__ = ["METHODS", "CompressionReport", "LayerCompression", "compress"]
