"""Units of ``dlor-universality``: from one shallow fit g per (target, J), every deep and wide
DLoR network of the comparison, and their errors against the target and against g."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd
import torch
from torch import nn

from ...analysis.timing import synchronize
from ...protocol import JSONScalar, Unit
from ...training import torch_threads
from ...training.device import device_param, unit_device
from .config import TARGETS, DLoRUniversalityConfig


def make_units(config: DLoRUniversalityConfig, finished: pd.DataFrame) -> list[Unit]:
    return [
        Unit(
            f"{target}/J={j}",
            {
                "target": target,
                "neurons": j,
                "activation": config.activation,
                "h": config.h,
                "transfer_h": config.transfer_h,
                "scale": config.scale,
                "fit_per_axis": config.fit_per_axis,
                "ridge": config.ridge,
                "seed": config.seed,
                "test_per_axis": config.test_per_axis,
                "generic": j <= config.generic_max_neurons,
                **device_param(config.device),
            },
        )
        for target in config.targets
        for j in config.neurons
    ]


def _errors(out: torch.Tensor, reference: torch.Tensor, shallow: torch.Tensor) -> tuple[float, float, float]:
    """(sup |out − f|, RMS of out − f over points and outputs, sup |out − g|)."""
    diff = out - reference
    return float(diff.abs().max()), float(diff.pow(2).mean().sqrt()), float((out - shallow).abs().max())


def _forward(model: nn.Module, X: torch.Tensor, device: str) -> torch.Tensor:
    """``model(X)`` computed on ``device`` and returned on the CPU, where ``model`` is again afterwards
    (later constructions read its weights there; a float64 round trip is exact)."""
    model.to(device)
    try:
        return model(X.to(device)).cpu()
    finally:
        model.to("cpu")


def _count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def _nonlinear_layers(model: Iterable[nn.Module]) -> int:
    """σ layers of a DLoR network (a DLoRParallel counts once)."""
    from ...nn import ACTIVATIONS, DLoRParallel, activation

    kinds = tuple({type(activation(a)) for a in ACTIVATIONS if a != "identity"})
    return sum(1 for m in model if isinstance(m, (DLoRParallel, *kinds)))


def run_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    with torch_threads(1), torch.no_grad():
        return _run(params)


def _run(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    from ...constructive import dlor_network_from_dense
    from ...constructive.dlor_universality import (
        dlor_from_shallow,
        evaluate_target,
        fit_shallow,
        grid,
        wide_dlor_from_shallow,
    )

    device = unit_device(params)
    synchronize()
    start = time.perf_counter()
    name, J = params["target"], int(params["neurons"])
    function = TARGETS[name][0]
    shallow = fit_shallow(
        function, 2, J, activation=params["activation"], scale=float(params["scale"]),
        points_per_axis=int(params["fit_per_axis"]), ridge=float(params["ridge"]), seed=int(params["seed"]),
    )  # fmt: skip
    X = grid(2, int(params["test_per_axis"]))
    f = evaluate_target(function, X)
    g = shallow(X)
    m = shallow.out_features
    row: dict[str, JSONScalar] = {"target": name, "neurons": J, "out_features": m, "width": 2 + m + 2}
    networks: dict[str, nn.Module] = {}

    def record(family: str, model: nn.Module | None, out: torch.Tensor, params_: int, depth: int) -> None:
        sup, rms, vs_g = _errors(out, f, g)
        row.update(
            {
                f"{family}_params": params_,
                f"{family}_depth": depth,
                f"{family}_sup": sup,
                f"{family}_rms": rms,
                f"{family}_vs_g": vs_g,
            }
        )
        if model is not None:
            networks[family] = model

    record("shallow", None, g, shallow.parameter_count(), 1)
    exact_weights, narrow_gap = True, 0.0
    registers = {}
    for rank in (1, 2):
        built = dlor_from_shallow(shallow, rank=rank, h=params["h"])
        registers[rank] = built
        out = _forward(built.network, X, device)
        record(f"deep_r{rank}", built.network, out, built.parameters, built.depth)
        # Theorem 7's transfer, read weight by weight: each dense weight is αI + UVᵀ exactly.
        layers: list[Any] = [mod for mod in built.network if hasattr(mod, "alpha")]
        linears = [mod for mod in built.narrow if isinstance(mod, nn.Linear)]
        for dlor, linear in zip(layers, linears, strict=True):
            dense = dlor.to_dense()
            dense = dense[: linear.weight.shape[0], : linear.weight.shape[1]]
            exact_weights &= bool(torch.equal(dense, linear.weight)) and bool(
                torch.equal(dlor.bias[: linear.weight.shape[0]], linear.bias)
            )
        narrow_gap = max(narrow_gap, float((_forward(built.narrow, X, device) - out).abs().max()))
    row["register_h"] = registers[2].h
    row["weights_identical"] = exact_weights
    row["narrow_vs_dlor"] = narrow_gap
    generic = dlor_network_from_dense(registers[2].narrow, "deep", float(params["transfer_h"]), rank=2)
    record("deep_generic", generic, _forward(generic, X, device), _count(generic), _nonlinear_layers(generic))
    wide = wide_dlor_from_shallow(shallow)
    record("wide_exact", wide, _forward(wide, X, device), _count(wide), 1)
    if params["generic"]:
        # rank 2 as the deep network, or 1 where the padded width max(J, n) is 2
        rank = min(2, max(J, 2) - 1)
        parallel = dlor_network_from_dense(shallow.to_dense(), "parallel", float(params["transfer_h"]), rank=rank)
        record("wide_generic", parallel, _forward(parallel, X, device), _count(parallel), _nonlinear_layers(parallel))
    else:  # the same columns in every row (the results store requires it); None: not built
        row.update({f"wide_generic_{k}": None for k in ("params", "depth", "sup", "rms", "vs_g")})
    synchronize()
    row["seconds"] = time.perf_counter() - start
    return row
