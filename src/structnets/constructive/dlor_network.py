"""The deep, parallel and summed DLoR networks of a dense MLP (Chen, Li, Kim, Lavaei, arXiv 2605.05659)."""

from __future__ import annotations

import math
from typing import cast

import torch
from torch import nn

from .._validation import check_int, check_real
from .dlor_decompositions import _ldexp, dlor_sum, product_factors
from .dlor_factor import F64, DLoRFactor, _check_finite, _load_factor

# --------------------------------------------------------------------------------------------
# The DLoR network of a dense MLP


def dlor_network_from_dense(
    mlp: nn.Module,
    mode: str,
    h: float = 1e-3,
    *,
    rank: int = 1,
    center: float | None = None,
    dtype: torch.dtype = F64,
) -> nn.Sequential:
    """The DLoR network of the structural correspondence for a dense MLP.

    ``mlp`` is ``Linear, σ, Linear, σ, …, Linear`` (as built by :func:`structnets.models.mlp`;
    hidden maps may also be any module with ``to_dense()`` and ``bias``), with maps
    x ↦ W_ℓ x + b_ℓ, ℓ = 1 … L. Let N = max(n, m, widths); every W_ℓ is zero-padded to N×N
    (the padded units stay at 0 before σ, and their outgoing columns are 0). The returned
    network has the layout of :func:`structnets.models.dlor_mlp` (zero-padded input, output
    read from the first m coordinates), in float64:

    * ``mode="summed"``: layer ℓ is the sum of the K terms
      of :func:`dlor_sum` (W_ℓ), bias b_ℓ, followed by the same σ:
      ``dlor_mlp(n, m, N, L − 1, rank, "summed", branches=K)``. Exact (a sum before σ is
      linear): the error is rounding only, whatever ``h``.
    * ``mode="parallel"``, the paper's wide network (the additive decomposition "mapped
      through the nonlinear activation forms a set of parallel layers"): with W_ℓ = Σ_k M_k
      (:func:`dlor_sum`, K terms), hidden layer ℓ becomes a :class:`DLoRParallel` of K branches
      a ↦ Σ_k σ(h M_k a + c) (K·N units, σ per branch), then one DLoR map with α = 1/(hs),
      U = V = 0 and bias b_ℓ − Kσ(c)/(hs), then σ: Σ_k λ_h(M_k a) + b_ℓ = W_ℓ a + b_ℓ + O(h)
      before σ. The output map (no σ) is the exact sum of its K branches. Network:
      ``ZeroPad, [DLoRParallel, DLoRLinear, σ] × (L − 1), DLoRBranches, TakeFirst``; sup error
      O(h), O(h²) when σ''(c) = 0, exactly 0 for ReLU once h·max|M_k a| < c: it converges to
      the MLP only as h → 0.
    * ``mode="deep"``: W_ℓ = M_1 ⋯ M_K by :func:`dlor_product`'s Householder construction
      without its pivot shift, the exact scale 2^e in M_1 (:func:`_network_product`: every
      partial product stays of the size of W, also for singular W); the product is evaluated by
      K DLoR layers, each but the last followed by σ used in its near-linear regime around
      the operating point c: with s = σ'(c), λ_h(z) = (σ(hz + c) − σ(c))/(h s) = z + O(h z²).
      Layer 1 computes hM_K a + c (α and U scaled by h, bias c·1); the middle layers
      compute h M_j λ_h(·) + c, i.e. weight M_j/s and bias c − (σ(c)/s)·M_j 1; the last
      computes M_1 λ_h(·) + b_ℓ, weight M_1/(hs) and bias b_ℓ − σ(c)/(hs)·M_1 1, and is
      followed by the MLP's σ (none after W_L). All weights stay DLoR (a DLoR matrix times a
      scalar is DLoR). It is ``dlor_mlp(n, m, N, L·K − 1, rank, "deep")``; the sup-error
      against the MLP is O(h), O(h²) when σ''(c) = 0 (tanh, sigmoid at c = 0), and exactly 0
      for ReLU once h·max|z| < c.

    Chen et al. (arXiv 2605.05659): tracking these Taylor remainders is how the paper carries
    universal approximation from dense networks over to DLoR networks.

    Args:
        mlp: the dense network (an ``nn.Sequential``; its parameters are read, not changed).
        mode: ``"deep"``, ``"parallel"`` or ``"summed"``.
        h: the scale of the near-linear regime, in (0, 1] (ignored by ``"summed"``, which is exact).
        rank: r of every DLoR factor, in [1, N − 1].
        center: the operating point c of σ; default 1 for ReLU, 0 otherwise. σ'(c) must be ≠ 0.
        dtype: dtype of the returned network (float64 by default: at h = 1e-4 the quotient
            λ_h loses about log10(1/h) digits to cancellation).

    Returns:
        an ``nn.Sequential``: as built by :func:`structnets.models.dlor_mlp` for deep and summed;
        the layout above for parallel.
    """
    if not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise TypeError(f"`dtype` must be a floating-point torch.dtype, got {dtype!r}")
    from ..models.dlor_mlp import dlor_mlp, resolve_mode
    from ..nn import DLoRBranches, DLoRLinear, DLoRParallel, TakeFirst, ZeroPad

    mode = resolve_mode(mode)
    h = check_real("h", h, low=0.0, high=1.0, low_open=True)
    maps, sigma = _dense_layers(mlp)
    in_features, out_features = maps[0][0].shape[1], maps[-1][0].shape[0]
    width = max(2, *(w.shape[0] for w, _ in maps), in_features)
    rank = check_int("rank", rank, low=1, high=width - 1)
    padded = [(_pad_square(w, width), _pad_vector(b, width)) for w, b in maps]
    zero = DLoRFactor(0.0, torch.zeros(width, rank, dtype=F64), torch.zeros(width, rank, dtype=F64))

    if mode == "summed":
        terms = [dlor_sum(w, rank) for w, _ in padded]
        branches = max(len(t) for t in terms)
        network = dlor_mlp(in_features, out_features, width, len(maps) - 1, rank, "summed", sigma, branches, dtype=F64)
        dlor_layers = [m for m in network if isinstance(m, DLoRBranches)]
        for layer, factors, (_, bias) in zip(dlor_layers, terms, padded, strict=True):
            for branch, factor in zip(layer.branches, [*factors, *[zero] * (branches - len(factors))], strict=True):
                _load_factor(cast(DLoRLinear, branch), factor, None)
            _load_bias(layer, bias)
        return network.to(dtype)

    c = (1.0 if isinstance(sigma, nn.ReLU) else 0.0) if center is None else check_real("center", center)
    value, slope = _value_and_slope(sigma, c)
    if slope == 0.0 or not math.isfinite(slope):
        raise ValueError(f"`center` must be a point where the activation's slope is non-zero, got {c} (slope {slope})")

    if mode == "parallel":
        layers: list[nn.Module] = [ZeroPad(in_features, width)]
        for index, (weight, bias) in enumerate(padded):
            summands = dlor_sum(weight, rank)
            if index == len(padded) - 1:  # the output map has no σ: a sum of branches is exact
                last = DLoRBranches(width, rank, len(summands), dtype=F64)
                for branch, factor in zip(last.branches, summands, strict=True):
                    _load_factor(cast(DLoRLinear, branch), factor, None)
                _load_bias(last, bias)
                layers += [last, TakeFirst(width, out_features)]
                break
            # a ↦ Σ_k σ(h M_k a + c) = Kσ(c) + hs·W a + O(h²): the parallel layer (K·N units) ...
            parallel = DLoRParallel(width, rank, len(summands), _clone_activation(sigma), dtype=F64)
            for branch, factor in zip(parallel.branches, summands, strict=True):
                _load_factor(cast(DLoRLinear, branch), _scale(factor, h), torch.full((width,), c, dtype=F64))
            # ... then S ↦ σ(S/(hs) − Kσ(c)/(hs) + b) = σ(W a + b + O(h)): one DLoR map αI (U = V = 0)
            recentre = DLoRLinear(width, rank, dtype=F64)
            _load_factor(
                recentre, DLoRFactor(1.0 / (h * slope), zero.U, zero.V), bias - len(summands) * value / (h * slope)
            )
            layers += [parallel, recentre, _clone_activation(sigma)]
        return nn.Sequential(*layers).to(dtype)

    unpadded = [_network_product(w, rank) for w, _ in padded]
    count = max(len(p) for p in unpadded)
    identity = DLoRFactor(1.0, torch.zeros(width, rank, dtype=F64), torch.zeros(width, rank, dtype=F64))
    products = [[*p, *[identity] * (count - len(p))] for p in unpadded]
    network = dlor_mlp(in_features, out_features, width, len(maps) * count - 1, rank, "deep", sigma, dtype=F64)
    deep_layers = iter([m for m in network if isinstance(m, DLoRLinear)])
    ones = torch.ones(width, dtype=F64)
    for factors, (_, bias) in zip(products, padded, strict=True):
        if count == 1:
            _load_factor(next(deep_layers), factors[0], bias)
            continue
        for position, factor in enumerate(reversed(factors)):  # M_K acts first
            if position == 0:  # a (exact input or activation) ↦ h M_K a + c
                scaled, layer_bias = _scale(factor, h), torch.full((width,), c, dtype=F64)
            elif position < count - 1:  # λ_h(z) ↦ h M_j λ_h(z) + c
                scaled = _scale(factor, 1.0 / slope)
                layer_bias = c - (value / slope) * (factor.dense() @ ones)
            else:  # λ_h(z) ↦ M_1 λ_h(z) + b_ℓ
                scaled = _scale(factor, 1.0 / (h * slope))
                layer_bias = bias - (value / (h * slope)) * (factor.dense() @ ones)
            _load_factor(next(deep_layers), scaled, layer_bias)
    return network.to(dtype)


def _network_product(weight: torch.Tensor, rank: int) -> list[DLoRFactor]:
    """W = M_1 ⋯ M_K for the deep network: no pivot shift; the exact scale 2^e on M_1 (applied
    last) when e > 0, on M_K (applied first) when e < 0.

    The layers evaluate M_K first, then M_{K−1}, … one at a time, each output offset by c
    (and σ(c) taken off again): a rounding of ε·max(|c|, |σ(c)|)/h per layer, multiplied by the
    factors still to come. :func:`dlor_product`'s pivot shift makes those factors as large as
    2^m‖R‖ (m ≈ 56 for a singular W, e.g. a bottleneck layer UV, whose rounded pivots are
    ~1e−17) while its first factor shrinks the input by 2^{e−m}: the deep network of
    ``mlp(3, 2, 5, 3, "relu", bottleneck=2)`` was off by 3.6e2 at h = 1e−3 (1/h growth). Unshifted
    (:func:`.dlor_decompositions.product_factors`), every partial product is bounded by about
    ‖W̃‖ + 1 with max|W̃| in [1, 2). Where the scale s = 2^e goes decides the rest: applied
    last it multiplies both the O(h z²) remainders and the rounding by s, applied first it
    multiplies the remainders by s² (z carries s) and leaves the rounding alone; the smaller of
    the two is taken.
    """
    factors, scale = product_factors(weight, rank, shift_pivots=False)
    index = 0 if scale > 0 else len(factors) - 1
    if scale != 0:
        factor = factors[index]
        factors[index] = DLoRFactor(math.ldexp(factor.alpha, scale), _ldexp(factor.U, scale), factor.V)
    return factors


def _load_bias(layer: nn.Module, bias: torch.Tensor) -> None:
    """Copy ``bias`` into the bias of a DLoR branch layer built with one."""
    target = getattr(layer, "bias", None)
    if not isinstance(target, torch.Tensor):
        raise ValueError(f"`layer` ({type(layer).__name__}) has no bias to load")
    with torch.no_grad():
        target.copy_(bias)


def _dense_layers(mlp: nn.Module) -> tuple[list[tuple[torch.Tensor, torch.Tensor]], nn.Module]:
    """The affine maps (W_ℓ, b_ℓ) in float64 and the (single) activation of a dense MLP."""
    if not isinstance(mlp, nn.Sequential) or len(mlp) < 3 or len(mlp) % 2 == 0:
        raise ValueError(
            "`mlp` must be an nn.Sequential Linear, σ, Linear, …, Linear (odd length ≥ 3), "
            f"got {type(mlp).__name__} of length {len(mlp) if isinstance(mlp, nn.Sequential) else '?'}"
        )
    maps = []
    for index, module in enumerate(list(mlp)[0::2]):
        to_dense = getattr(module, "to_dense", None)
        if isinstance(module, nn.Linear):
            weight = module.weight
        elif callable(to_dense):
            weight = to_dense()
        else:
            raise ValueError(f"`mlp`[{2 * index}] must be an affine layer, got {type(module).__name__}")
        bias = getattr(module, "bias", None)
        if bias is None:
            bias = torch.zeros(weight.shape[0])
        maps.append((weight.detach().to("cpu", F64), bias.detach().to("cpu", F64)))
    for (w, _), (w_next, _) in zip(maps, maps[1:]):
        if w.shape[0] != w_next.shape[1]:
            raise ValueError(f"`mlp` has mismatched layer shapes {tuple(w.shape)} then {tuple(w_next.shape)}")
    activations = list(mlp)[1::2]
    first = activations[0]
    # repr alone misses state: a Swish shows its initial β, not a trained or loaded one
    if any(type(a) is not type(first) or repr(a) != repr(first) or not _same_state(a, first) for a in activations):
        raise ValueError(
            "`mlp` must use one activation throughout (same type, arguments, parameters and buffers), got "
            f"{[repr(a) for a in activations]}"
        )
    for w, b in maps:
        _check_finite("mlp", w)
        _check_finite("mlp", b)
    return maps, _clone_activation(first)


def _same_state(a: nn.Module, b: nn.Module) -> bool:
    state_a, state_b = a.state_dict(), b.state_dict()
    return state_a.keys() == state_b.keys() and all(
        state_a[k].shape == state_b[k].shape and bool((state_a[k] == state_b[k]).all()) for k in state_a
    )


def _clone_activation(module: nn.Module) -> nn.Module:
    import copy

    return copy.deepcopy(module).to(F64)


def _value_and_slope(sigma: nn.Module, c: float) -> tuple[float, float]:
    with torch.enable_grad():  # callers may build networks under no_grad
        point = torch.tensor(c, dtype=F64, requires_grad=True)
        out = sigma(point)
        (slope,) = torch.autograd.grad(out, point)
    return float(out.detach()), float(slope)


def _scale(factor: DLoRFactor, s: float) -> DLoRFactor:
    return DLoRFactor(s * factor.alpha, s * factor.U, factor.V)


def _pad_square(weight: torch.Tensor, size: int) -> torch.Tensor:
    out = torch.zeros(size, size, dtype=F64)
    out[: weight.shape[0], : weight.shape[1]] = weight
    return out


def _pad_vector(vector: torch.Tensor, size: int) -> torch.Tensor:
    out = torch.zeros(size, dtype=F64)
    out[: vector.shape[0]] = vector
    return out
