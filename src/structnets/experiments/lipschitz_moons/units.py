"""Units of ``lipschitz-moons``: one (train fraction, sweep, depth, width, seed) each, pure and seeded."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ...protocol import JSONScalar, Unit
from ...training.device import device_param, unit_device
from .config import LipschitzMoonsConfig


def units(config: LipschitzMoonsConfig, finished: pd.DataFrame) -> list[Unit]:
    """The depth sweep, the width sweep and the authors-style baseline, per train fraction and seed."""
    grid = [("depth", d, config.depth_sweep_width) for d in config.depths]
    grid += [("width", config.width_sweep_depth, w) for w in config.widths]
    if config.authors_baseline and config.widths:
        grid.append(("authors-style", config.width_sweep_depth, config.widths[0]))
    result = []
    for fraction in config.train_fractions:
        for sweep, depth, width in grid:
            for seed in config.seeds_at(fraction, sweep):
                result.append(
                    Unit(
                        key=f"{sweep}/train={fraction:g}/depth={depth}/width={width}/seed={seed}",
                        params={
                            "sweep": sweep,
                            "train_fraction": fraction,
                            "depth": depth,
                            "width": width,
                            "seed": seed,
                            "n_samples": config.n_samples,
                            "noise": config.noise,
                            "variant": "authors-style" if sweep == "authors-style" else config.variant,
                            "epochs": config.epochs,
                            "batch_size": config.batch_size,
                            "lr": config.lr,
                            "temperature": config.temperature,
                            "radii": list(config.radii),
                            "ascent_steps": config.ascent_steps,
                            **device_param(config.device),
                        },
                    )
                )
    return result


def train_classifier(
    model: Any,
    X: Any,
    y: Any,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    temperature: float = 1.0,
    seed: int,
    loss: Any = None,
    checkpoint: Any = None,
) -> float:
    """Train ``model`` in place with Adam + cosine schedule on ``loss``; return seconds per epoch.

    One call of :func:`structnets.training.fit`: minibatches of ``batch_size`` in a fresh seeded
    permutation every epoch, ``torch.optim.Adam`` (betas 0.9, 0.999) and cosine annealing
    η_t = η(1 + cos(πt/T))/2 over all T = epochs·⌈n/batch_size⌉ steps (Loshchilov & Hutter,
    ICLR 2017), stepped by ``torch.optim.lr_scheduler.CosineAnnealingLR``. That is
    ``fit(..., schedule="cosine")`` up to rounding (the scheduler's recursive form against the closed
    form; the public optimiser against fit's fused kernel); the factories keep the numbers of run
    folders made before ``fit`` had schedules bit for bit. Used by ``lipschitz-moons`` and
    ``lipschitz-mnist`` (Murari, Furuya, Schönlieb, NeurIPS 2025).

    Args:
        model: an ``nn.Module`` (n, d) → (n, k).
        X: (n, d) float tensor; y: (n,) int64 tensor.
        epochs, batch_size, lr: optimisation settings (cosine annealing to 0 over all steps).
        temperature: T of the default loss CE(T·z, y), used only when ``loss`` is None.
        seed: seeds the minibatch order.
        loss: any callable ``(logits (n, k), y (n,)) -> scalar`` (for instance
            :func:`structnets.training.losses.certified_loss`), or a name of
            :data:`structnets.training.losses.CERTIFIED_LOSSES` (with its default options); None
            keeps CE(T·z, y).
        checkpoint: a file to save the training state to after every epoch and to resume from
            (``fit``'s ``checkpoint``; the experiments pass
            :func:`structnets.runner.checkpoints.unit_checkpoint`), or None.

    Returns:
        mean wall-clock seconds per epoch; the model is left in eval mode.
    """
    import math

    import torch

    from ...training import fit
    from ...training.losses import certified_loss

    if loss is None:
        loss_fn = certified_loss("scaled-ce", temperature=temperature)
    elif callable(loss) or isinstance(loss, str):
        loss_fn = certified_loss(loss)
    else:
        raise TypeError(f"`loss` must be a callable (logits, target) -> scalar or a loss name, got {loss!r}")
    steps = int(epochs) * math.ceil(len(X) / batch_size)
    result = fit(
        model,
        X,
        y,
        loss=loss_fn,
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        seed=seed,
        optimizer=lambda parameters: torch.optim.Adam(parameters, lr=lr),
        schedule=lambda optimizer: torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps),
        checkpoint=checkpoint,
    )
    model.eval()
    return result.wall_time / result.epochs_run


def authors_style(in_features: int, out_features: int, width: int, depth: int) -> Any:
    """Our reading of the authors' public code, for comparison only.

    Unconstrained ``nn.Linear`` lift and head; residual blocks x − τWᵀReLU(Wx + b) with
    τ = 2/σ̂², σ̂ = ‖W v‖ from one power step on a persistent vector v per call, in training and in
    evaluation alike (:class:`structnets.nn.PowerClampedResidual`). σ̂ ≤ ‖W‖₂, so τ can exceed
    2/‖W‖₂² and the block is not certified.
    """
    from torch import nn

    from ...nn import PowerClampedResidual

    layers: list[nn.Module] = [nn.Linear(in_features, width)]
    layers += [PowerClampedResidual(width, width, step=2.0, bound="power") for _ in range(depth)]
    layers.append(nn.Linear(width, out_features))
    return nn.Sequential(*layers)


def run_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    """Train one model on its two-moons sample, then certify it on the test points."""
    import torch

    from ...data.moons import make_moons
    from ...models import lipschitz_resnet
    from ...training.fit import seeded

    seed = int(params["seed"])
    device = unit_device(params)
    X_train, y_train, X_test, y_test = make_moons(
        int(params["n_samples"]), float(params["noise"]), float(params["train_fraction"]), seed=seed
    )
    X_train_t = torch.tensor(X_train, dtype=torch.float32, device=device)
    y_train_t = torch.tensor(y_train, device=device)
    X_test_t = torch.tensor(X_test, dtype=torch.float32, device=device)
    y_test_t = torch.tensor(y_test, device=device)
    depth, width = int(params["depth"]), int(params["width"])
    # Built on the CPU under the seed, then moved: the same initial weights on every device.
    with seeded(seed):
        if params["variant"] == "authors-style":
            model = authors_style(2, 2, width, depth)
        else:
            model = lipschitz_resnet(2, 2, width, depth, variant=params["variant"])
    model = model.to(device)
    seconds = train_classifier(
        model,
        X_train_t,
        y_train_t,
        epochs=int(params["epochs"]),
        batch_size=int(params["batch_size"]),
        lr=float(params["lr"]),
        temperature=float(params["temperature"]),
        seed=seed,
    )
    with torch.no_grad():
        train_acc = float((model(X_train_t).argmax(1) == y_train_t).double().mean())
    return {
        "sweep": params["sweep"],
        "train_fraction": float(params["train_fraction"]),
        "depth": depth,
        "width": width,
        "seed": seed,
        "variant": params["variant"],
        "n_train": len(y_train),
        "n_test": len(y_test),
        "parameters": sum(p.numel() for p in model.parameters()),
        "seconds_per_epoch": seconds,
        "train_accuracy": train_acc,
        **_certify_quietly(model, X_test_t, y_test_t, params),
    }


def _certify_quietly(model: Any, X_test: Any, y_test: Any, params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    """:func:`~structnets.analysis.certify`; the authors-style model's "not certified" warning is
    expected (its computed L is reported and used)."""
    import warnings

    from ...analysis.certify import certify

    with warnings.catch_warnings():
        if params["variant"] == "authors-style":
            warnings.simplefilter("ignore", UserWarning)
        row = certify(model, X_test, y_test, list(params["radii"]), ascent_steps=int(params["ascent_steps"]))
    return dict(row)


__all__ = ["authors_style", "run_unit", "train_classifier", "units"]
