"""Units of ``lipschitz-mnist``: one training unit per (model, loss, lift, depth, width, seed), one
timing unit per (depth, width) and one constraint-cost unit (fixed-width against gradient-step steps over
depths); pure and seeded."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...protocol import JSONScalar, Unit
from ...training.device import device_param, unit_device
from ..attack_check import attack_params, certify_unit
from ..lipschitz_moons.units import train_classifier
from .config import TIMED_BOUNDS, LipschitzMNISTConfig


def deel_torchlip_available() -> bool:
    """Whether the optional ``deel-torchlip`` package can be imported."""
    import importlib.util

    try:
        return importlib.util.find_spec("deel.torchlip") is not None
    except ModuleNotFoundError:
        return False


def deel_one_lipschitz_layer(layer: Any) -> bool:
    """Whether ``layer`` of an exported deel-torchlip network is a parameter-free 1-Lipschitz map.

    Allow-listed, never assumed: deel's sorting activations (``GroupSort``, ``GroupSort2``,
    ``FullSort``: a permutation of the input on each linear region), pixel-unshuffle (a permutation
    of the coordinates) and flattening. Containers count as themselves only through their children.
    Any other layer has no certified constant here, so the certifiers refuse it.
    """
    from torch import nn

    if isinstance(layer, (nn.PixelUnshuffle, nn.Flatten, nn.Identity)):
        return True
    from deel import torchlip

    return isinstance(layer, (torchlip.GroupSort, torchlip.GroupSort2, torchlip.FullSort))


def check_deel_export(model: Any, computed: Any, probe: Any) -> None:
    """Refuse an export whose output ``computed`` on ``probe`` differs from deel's ``model`` (in eval mode).

    Our certificate is of the export, so it must compute deel's network: deel-torchlip 1.0.5's
    ``vanilla_export`` keeps a layer used twice only once, for instance. ``model``'s train/eval mode
    is restored.
    """
    import torch

    was_training = model.training
    try:
        with torch.no_grad():
            expected = model.eval()(probe)
    finally:
        model.train(was_training)
    if computed.shape != expected.shape or not torch.allclose(computed, expected, rtol=1e-4, atol=1e-5):
        raise ValueError("deel's vanilla_export does not compute its network (e.g. a layer used twice): not certified")


def units(config: LipschitzMNISTConfig, finished: pd.DataFrame) -> list[Unit]:
    """Training units of every model × loss × lift × seed at each depth × width, then its timing unit."""
    result = []
    common = {
        "epochs": config.epochs,
        "batch_size": config.batch_size,
        "temperature": config.temperature,
        "margin": config.margin,
        "hkr_alpha": config.hkr_alpha,
        "maxmin": config.maxmin,
        "radii": list(config.radii),
        "max_train": config.max_train,
        "max_test": config.max_test,
        "ascent_steps": config.ascent_steps,
        **attack_params(config),
        "bound": config.bound,
        **device_param(config.device),
    }
    deel = deel_torchlip_available()
    for depth in config.depths:
        for width in config.widths:
            for model in config.models:
                if model == "unconstrained":
                    variants = [("scaled-ce", "linear")]
                elif model == "deel-torchlip":
                    variants = [(config.losses[0], "spectral")] if deel else []
                else:
                    variants = [(loss, lift) for loss in config.losses for lift in config.lifts]
                for loss, lift in variants:
                    judged = (model, loss, lift, depth, width) == (
                        "gradient-step", config.losses[0], config.lifts[0], config.depths[0], config.widths[0],
                    )  # fmt: skip
                    seeds = dict.fromkeys((*config.seeds, *(config.claim_seeds if judged else ())))
                    for seed in seeds:
                        result.append(
                            Unit(
                                key=f"train/{model}/{loss}/{lift}/depth={depth}/width={width}/seed={seed}",
                                params={
                                    "stage": "train",
                                    "model": model,
                                    "loss": loss,
                                    "lift": lift,
                                    "depth": depth,
                                    "width": width,
                                    "seed": seed,
                                    **common,
                                    "lr": config.fixed_width_lr if model == "fixed-width" else config.lr,
                                },  # fmt: skip
                            )
                        )
            if config.timing_pairs > 0:
                result.append(
                    Unit(
                        key=f"timing/depth={depth}/width={width}",
                        params={
                            "stage": "timing",
                            "depth": depth,
                            "width": width,
                            "batch_size": config.batch_size,
                            "pairs": config.timing_pairs,
                            **device_param(config.device),
                        },
                    )
                )
    if config.cost_rounds > 0:
        result.append(
            Unit(
                key=f"constraint-cost/width={config.widths[0]}",
                params={
                    "stage": "constraint-cost",
                    "width": config.widths[0],
                    "depths": list(config.cost_depths),
                    "rounds": config.cost_rounds,
                    "batch_size": config.batch_size,
                    "lift": config.lifts[0],
                    "bound": config.bound,
                    **device_param(config.device),
                },
            )
        )
    return result


def trained_model(run_dir: Any, key: str) -> Any:
    """The network a ``train/...`` unit of the run folder ``run_dir`` trained, in eval mode.

    Rebuilt from the unit's stored params with :func:`build` and loaded from the weights it saved
    in ``models/`` (checked against the SHA-256 its row records;
    :func:`structnets.runner.unit_models.load_unit_state`). The deel-torchlip network is deel's own
    module (certify its ``vanilla_export``, as the unit does).

    Raises:
        ValueError: ``key`` is not a training unit, or the unit saved no model or its file does not match.
        KeyError, FileNotFoundError: as ``load_unit_state``.
    """
    from ...runner.unit_models import load_unit_state

    if not str(key).startswith("train/"):
        raise ValueError(f"`key` must name a training unit (train/...), got {key!r}")
    params, state = load_unit_state(run_dir, key)
    lift = params.get("lift", "norm-constrained")
    net = build(
        params["model"], int(params["depth"]), int(params["width"]), params.get("bound", "exact"),
        lift if lift in ("norm-constrained", "orthogonal") else "norm-constrained", bool(params.get("maxmin", False)),
    )  # fmt: skip
    net.load_state_dict(state)
    return net.eval()


def build(
    model: str, depth: int, width: int, bound: str = "exact", lift: str = "norm-constrained", maxmin: bool = False
) -> Any:
    """The 784 → 10 network called ``model`` (:data:`~.config.MODELS`) at ``depth`` × ``width``, on the CPU."""
    from ...models import lipschitz_resnet

    if model == "deel-torchlip":
        return _deel_mlp(784, 10, width, depth)
    if model == "unconstrained":
        return lipschitz_resnet(784, 10, width, depth, variant="unconstrained")
    if model == "cpl":
        return lipschitz_resnet(
            784, 10, width, depth, variant="gradient-step", step=2.0, learnable_step=False, bound=bound, lift=lift,
            maxmin=maxmin,
        )  # fmt: skip
    return lipschitz_resnet(784, 10, width, depth, variant=model, bound=bound, lift=lift, maxmin=maxmin)


def _deel_mlp(in_features: int, out_features: int, width: int, depth: int) -> Any:
    """deel-torchlip's 1-Lipschitz MLP: SpectralLinear + GroupSort2, ``depth`` hidden layers."""
    from deel import torchlip

    layers: list[Any] = [torchlip.SpectralLinear(in_features, width), torchlip.GroupSort2()]
    for _ in range(depth - 1):
        layers += [torchlip.SpectralLinear(width, width), torchlip.GroupSort2()]
    layers.append(torchlip.SpectralLinear(width, out_features))
    return torchlip.Sequential(*layers)


def _deel_export(model: Any) -> Any:
    """deel-torchlip model → ``nn.Sequential`` of its exported ``Linear`` layers and GroupSort.

    :func:`structnets.analysis.lipschitz_upper_bound` then certifies it as Π B(W) (B our certified
    float64 bound; GroupSort, a permutation on each linear region, is 1-Lipschitz). deel's own
    normalisation is a spectral-norm estimate followed by Björck iterations, so that product need
    not be ≤ 1.
    """
    import torch
    from torch import nn

    class OneLipschitz(nn.Module):
        def __init__(self, inner: nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input: Any) -> Any:
            return self.inner(input)

        def lipschitz_bound(self) -> float:
            return 1.0

    layers: list[nn.Module] = []
    for layer in model.vanilla_export():
        if isinstance(layer, nn.Linear):
            layers.append(layer)
        elif deel_one_lipschitz_layer(layer):
            layers.append(OneLipschitz(layer))
        else:  # an unknown layer has no certified constant: refuse rather than assume 1
            raise ValueError(f"deel-torchlip export: layer {layer!r} is neither Linear nor a known 1-Lipschitz map")
    exported = nn.Sequential(*layers).eval()
    first = next((layer for layer in layers if isinstance(layer, nn.Linear)), None)
    if first is not None:
        probe = torch.rand(4, first.in_features, generator=torch.Generator().manual_seed(0))
        probe = probe.to(first.weight.device, first.weight.dtype)
        with torch.no_grad():
            check_deel_export(model, exported(probe), probe)
    return exported


def _mnist(max_train: int | None, max_test: int | None, seed: int) -> tuple[Any, Any, Any, Any]:
    """MNIST train/test tensors (CPU), each split subsampled to its cap with ``seed``."""
    import torch

    from ... import data

    dataset = data.load("mnist")
    split = np.asarray(dataset.split)
    X, y = np.asarray(dataset.X, dtype=np.float32), np.asarray(dataset.y, dtype=np.int64)
    rng = np.random.default_rng(seed)
    parts = []
    for name, cap in (("train", max_train), ("test", max_test)):
        index = np.flatnonzero(split == name)
        if cap is not None and cap < len(index):
            index = np.sort(rng.choice(index, size=cap, replace=False))
        parts += [torch.from_numpy(X[index]), torch.from_numpy(y[index])]
    return tuple(parts)  # type: ignore[return-value]


def _run_train(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    from ...runner.checkpoints import unit_checkpoint
    from ...runner.unit_models import save_unit_model
    from ...training.fit import seeded
    from ...training.losses import certified_loss

    seed, depth, width = int(params["seed"]), int(params["depth"]), int(params["width"])
    model_name, loss_name = params["model"], params.get("loss", "scaled-ce")
    lift = params.get("lift", "norm-constrained")
    device = unit_device(params)
    X_train, y_train, X_test, y_test = (t.to(device) for t in _mnist(params["max_train"], params["max_test"], seed))
    # Built on the CPU under the seed, then moved: the same initial weights on every device.
    with seeded(seed):
        model = build(
            model_name, depth, width, params.get("bound", "exact"),
            lift if lift in ("norm-constrained", "orthogonal") else "norm-constrained", bool(params.get("maxmin", False)),
        )  # fmt: skip
    model = model.to(device)
    loss = certified_loss(
        loss_name,
        margin=float(params.get("margin", 0.0)),
        temperature=float(params["temperature"]),
        alpha=float(params.get("hkr_alpha", 0.98)),
    )
    seconds = train_classifier(
        model, X_train, y_train, epochs=int(params["epochs"]), batch_size=int(params["batch_size"]),
        lr=float(params["lr"]), seed=seed, loss=loss, checkpoint=unit_checkpoint(),
    )  # fmt: skip
    saved = save_unit_model(model)  # before certification: what the row's numbers were measured on
    radii = list(params["radii"])
    if model_name in ("deel-torchlip", "unconstrained"):
        import warnings

        evaluated = _deel_export(model).to(device) if model_name == "deel-torchlip" else model
        with warnings.catch_warnings():
            # expected: neither is certified ≤ 1; certified accuracy uses its computed bound (reported)
            warnings.simplefilter("ignore", UserWarning)
            row = certify_unit(evaluated, X_test, y_test, radii, params)
    else:
        row = certify_unit(model, X_test, y_test, radii, params)
    return {
        "stage": "train",
        "model": model_name,
        "loss": loss_name,
        "lift": lift,
        "depth": depth,
        "width": width,
        "seed": seed,
        "n_train": len(y_train),
        "n_test": len(y_test),
        "epochs": int(params["epochs"]),
        "bound": params.get("bound", "exact"),
        "parameters": sum(p.numel() for p in model.parameters()),
        "seconds_per_epoch": seconds,
        **row,
        **saved,
    }


def _run_timing(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    import torch

    from ...analysis.timing import interleaved_ratio
    from ...training.fit import seeded

    depth, width, batch = int(params["depth"]), int(params["width"]), int(params["batch_size"])
    device = unit_device(params)
    generator = torch.Generator().manual_seed(0)
    X = torch.rand(batch, 784, generator=generator).to(device)
    y = torch.randint(10, (batch,), generator=generator).to(device)

    # One training step as the timed call (what the constraint costs per step), not a training
    # loop: the models are never trained here.
    def stepper(model: torch.nn.Module) -> Callable[[], None]:
        model = model.to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
        model.train()

        def step() -> None:
            optimizer.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(X), y).backward()
            optimizer.step()

        return step

    with seeded(0):
        baseline = stepper(build("unconstrained", depth, width))
        modes = {mode: stepper(build("gradient-step", depth, width, mode)) for mode in TIMED_BOUNDS}
    pairs = int(params["pairs"])
    row: dict[str, JSONScalar] = {"stage": "timing", "depth": depth, "width": width, "batch": batch}
    for mode, step in modes.items():
        key = mode.replace("-", "_")
        ratio = interleaved_ratio(step, baseline, pairs=pairs)
        row[f"ratio_{key}"], row[f"ratio_{key}_q1"], row[f"ratio_{key}_q3"] = ratio.median, ratio.q1, ratio.q3
        row[f"step_seconds_{key}"] = ratio.seconds_a
    row["step_seconds_unconstrained"] = ratio.seconds_b  # the baseline of the last pairing
    return {**row, "threads": torch.get_num_threads()}


def _run_constraint_cost(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    """One training step of the fixed-width network against the gradient-step one, at every depth, in rounds.

    Both are ``lipschitz_resnet(784, 10, width, depth, variant)`` with the unit's lift and bound (the
    fixed-width one has a norm-constrained affine map after every block, Theorem 4.1; the gradient-step one
    none, Theorem 3.1), stepped by Adam on one fixed random batch, as the ``timing`` units step theirs.
    Round i times, at every depth (in increasing order when i is even, decreasing when odd), one step of
    each network, the fixed-width first when i + (the depth's index) is even: drift slower than a round
    lands on both sides and on every depth alike. The per-round seconds are stored for
    :func:`structnets.claims.rules.cost_growth`; the share of the CPUs other processes used while it ran
    and the host's processor name state the hardware.
    """
    import json
    import platform
    import time

    import torch

    from ...analysis.timing import other_process_load, synchronize
    from ...training.fit import seeded

    width, batch, rounds = int(params["width"]), int(params["batch_size"]), int(params["rounds"])
    depths = [int(d) for d in params["depths"]]
    device = unit_device(params)
    generator = torch.Generator().manual_seed(0)
    X = torch.rand(batch, 784, generator=generator).to(device)
    y = torch.randint(10, (batch,), generator=generator).to(device)

    def stepper(model: torch.nn.Module) -> Callable[[], None]:
        model = model.to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
        model.train()

        def step() -> None:
            optimizer.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(X), y).backward()
            optimizer.step()

        return step

    def timed(step: Callable[[], None]) -> float:
        synchronize()
        start = time.perf_counter()
        step()
        synchronize()
        return time.perf_counter() - start

    steps = {}
    with seeded(0):
        for depth in depths:
            for name in ("fixed-width", "gradient-step"):
                steps[name, depth] = stepper(build(name, depth, width, params["bound"], params["lift"]))
    for step in steps.values():  # warm-up: allocator, kernel choice, the first Adam step
        for _ in range(3):
            step()
    fixed = np.empty((rounds, len(depths)))
    plain = np.empty((rounds, len(depths)))
    load = other_process_load()
    for i in range(rounds):
        order = range(len(depths)) if i % 2 == 0 else reversed(range(len(depths)))
        for k in order:
            if (i + k) % 2 == 0:
                fixed[i, k] = timed(steps["fixed-width", depths[k]])
                plain[i, k] = timed(steps["gradient-step", depths[k]])
            else:
                plain[i, k] = timed(steps["gradient-step", depths[k]])
                fixed[i, k] = timed(steps["fixed-width", depths[k]])
    other = load()
    return {
        "stage": "constraint-cost",
        "width": width,
        "batch": batch,
        "lift": params["lift"],
        "bound": params["bound"],
        "cost_depths": json.dumps(depths),
        "rounds": rounds,
        # (rounds, depths) seconds of one training step of each network
        "step_seconds_fixed_width": json.dumps(fixed.tolist()),
        "step_seconds_gradient_step": json.dumps(plain.tolist()),
        "cost_ratio_median": json.dumps(np.median(fixed / plain, axis=0).tolist()),
        "threads": torch.get_num_threads(),
        "device": str(device),
        "processor": _processor_name() or platform.machine(),
        "other_load": other,
    }


def _processor_name() -> str | None:
    """The CPU's model name from /proc/cpuinfo (Linux), else None."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def run_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    """A training unit (train, then :func:`~structnets.analysis.certify`), a timing unit or the constraint-cost unit."""
    if params["stage"] == "timing":
        return _run_timing(params)
    if params["stage"] == "constraint-cost":
        return _run_constraint_cost(params)
    return _run_train(params)


__all__ = ["build", "deel_one_lipschitz_layer", "deel_torchlip_available", "run_unit", "units"]
