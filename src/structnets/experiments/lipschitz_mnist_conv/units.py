"""Units of ``lipschitz-mnist-conv``: one training unit per (model, seed); pure and seeded."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ...protocol import JSONScalar, Unit
from ...training.device import device_param, unit_device
from ..attack_check import attack_params, certify_unit
from ..lipschitz_mnist.units import _mnist, check_deel_export, deel_one_lipschitz_layer, deel_torchlip_available
from ..lipschitz_moons.units import train_classifier
from .config import LipschitzMNISTConvConfig


def units(config: LipschitzMNISTConvConfig, finished: pd.DataFrame) -> list[Unit]:
    """One training unit per model × seed (``deel-torchlip-conv`` only where the package is installed)."""
    deel = deel_torchlip_available()
    common = {
        "channels": list(config.channels),
        "depths": list(config.depths),
        "hidden_channels": list(config.hidden_channels) or list(config.channels),
        "kernel_size": config.kernel_size,
        "padding_mode": config.padding_mode,
        "head_width": config.head_width,
        "head_depth": config.head_depth,
        "size_specific": config.size_specific,
        "bound": config.bound,
        "head_bound": config.head_bound,
        "channels_last": config.channels_last,
        "margin": config.margin,
        "temperature": config.temperature,
        "epochs": config.epochs,
        "batch_size": config.batch_size,
        "lr": config.lr,
        "radii": list(config.radii),
        "max_train": config.max_train,
        "max_test": config.max_test,
        "ascent_steps": config.ascent_steps,
        **attack_params(config),
        **device_param(config.device),
    }
    result = []
    for model in config.models:
        if model == "deel-torchlip-conv" and not deel:
            continue
        for seed in config.seeds:
            result.append(Unit(key=f"train/{model}/seed={seed}", params={"model": model, "seed": seed, **common}))
    return result


def build(params: Mapping[str, Any]) -> Any:
    """The 784 → 10 network of a unit (flat rows in), on the CPU."""
    from torch import nn

    from ...models import lipschitz_convnet
    from ...nn import FlatToImage

    channels, depths = list(params["channels"]), list(params["depths"])
    if params["model"] == "deel-torchlip-conv":
        return nn.Sequential(FlatToImage(1, 28, 28), _deel_convnet(channels, depths, int(params["kernel_size"])))
    head_width = int(params["head_width"])
    return lipschitz_convnet(
        1, 10, 28, channels=channels, depths=depths, hidden_channels=list(params["hidden_channels"]),
        kernel_size=int(params["kernel_size"]), padding_mode=str(params["padding_mode"]),
        head_width=head_width or None, head_depth=int(params["head_depth"]),
        size_specific=bool(params["size_specific"]), flat_input=True, bound=str(params.get("bound", "exact")),
        head_bound=str(params.get("head_bound", params.get("bound", "exact"))),
    )  # fmt: skip


def trained_model(run_dir: Any, seed: int = 0, model: str = "gradient-step-conv") -> Any:
    """The network unit ``train/<model>/seed=<seed>`` of the run folder ``run_dir`` trained, in eval mode.

    Rebuilt from the unit's stored params and loaded from the weights it saved in ``models/``
    (checked against the SHA-256 its row records; :func:`structnets.runner.unit_models.load_unit_state`),
    in the memory format it was trained and certified in. For example, to attack it yourself::

        net = trained_model("runs/full36-lipschitz-mnist-conv")
        X, y = ...  # MNIST test rows as flat (n, 784) float32 in [0, 1], as the unit reads them
        structnets.analysis.pgd_l2(net, X, y, 1.58, steps=100, targets=9)

    Raises:
        KeyError, FileNotFoundError, ValueError: as ``load_unit_state`` (no such unit, no model saved,
            a file that does not match its row).
    """
    import torch

    from ...runner.unit_models import load_unit_state

    params, state = load_unit_state(run_dir, f"train/{model}/seed={seed}")
    net = build(params)
    net.load_state_dict(state)
    if params["model"] == "gradient-step-conv" and bool(params.get("channels_last", False)):
        net = net.to(memory_format=torch.channels_last)
    return net.eval()


def _deel_convnet(channels: list[int], depths: list[int], kernel_size: int) -> Any:
    """deel-torchlip's convolutional 1-Lipschitz network of the same stages: SpectralConv2d + GroupSort2,
    ℓ₂-norm-preserving ``InvertibleDownSampling`` between stages, ``SpectralLinear`` head."""
    from deel import torchlip
    from torch import nn

    side = 28 // 2 ** (len(channels) - 1)
    layers: list[Any] = [torchlip.SpectralConv2d(1, channels[0], kernel_size, padding="same"), torchlip.GroupSort2()]
    for s, (c, depth) in enumerate(zip(channels, depths)):
        for _ in range(depth):
            layers += [torchlip.SpectralConv2d(c, c, kernel_size, padding="same"), torchlip.GroupSort2()]
        if s + 1 < len(channels):
            layers += [torchlip.InvertibleDownSampling(2), torchlip.SpectralConv2d(4 * c, channels[s + 1], 1),
                       torchlip.GroupSort2()]  # fmt: skip
    layers += [nn.Flatten(), torchlip.SpectralLinear(channels[-1] * side * side, 10)]
    return torchlip.Sequential(*layers)


def _deel_certified(model: Any) -> Any:
    """deel's network, exported to plain torch, wrapped so our certifier sees Π of its layers' bounds.

    Its ``vanilla_export`` gives ``nn.Conv2d``/``nn.Linear`` layers. Each convolution is certified
    for the one input size it sees (recorded by a forward pass at the image size of ``model[0]``, a
    :class:`~structnets.nn.FlatToImage`), with the per-size bound our own network is certified
    with (:func:`structnets.conv_norms.conv_norm_bound` with ``input_size``: the circular norm on
    the (n + k − 1)-grid, which bounds the zero-padded convolution for any padding ≤ k − 1 per
    side); the wrapper refuses inputs of another size. Each linear map gets the certified spectral
    bound. The product runs over the layers' *calls* in one forward pass (a layer used twice counts
    twice), so only chains of ``nn.Sequential`` are accepted; the allow-listed parameter-free maps
    (:func:`~structnets.experiments.lipschitz_mnist.units.deel_one_lipschitz_layer`: GroupSort,
    pixel-unshuffle, flattening) 1; any other layer is refused with a ``ValueError``. (Until
    2026-12-06 the convolutions had our every-size bound, up to 1 % looser per layer than the
    per-size one ours get: the baseline's certificate must not be looser than ours.)
    """
    import math
    from fractions import Fraction

    import torch
    from torch import nn

    from ...conv_norms import conv_norm_bound
    from ...functional import spectral_norm_bound

    flat, inner = model[0], model[1]
    image = (flat.channels, flat.height, flat.width)

    def leaf_calls(chain: nn.Module) -> list[tuple[nn.Module, tuple[int, int]]]:
        """Every leaf call of one forward pass at the image size, in order, with its input size.

        Recorded afresh at every certification, so that a layer appended or replaced after wrapping
        is counted; a layer called twice counts twice in the product.
        """
        for layer in chain.modules():
            # a container computes more than its children (a residual sum, a branch): only plain chains
            if next(layer.children(), None) is not None and type(layer) is not nn.Sequential:
                raise ValueError(f"deel container {type(layer).__name__} is not a plain nn.Sequential chain")
        calls: list[tuple[nn.Module, tuple[int, int]]] = []

        def record(layer: nn.Module, args: tuple[Any, ...]) -> None:
            calls.append((layer, (int(args[0].shape[-2]), int(args[0].shape[-1]))))

        hooks = [m.register_forward_pre_hook(record) for m in chain.modules() if next(m.children(), None) is None]
        parameter = next(chain.parameters(), None)
        try:
            with torch.no_grad():
                chain(torch.zeros(1, *image, dtype=parameter.dtype if parameter is not None else None,
                                  device=parameter.device if parameter is not None else None))  # fmt: skip
        finally:
            for hook in hooks:
                hook.remove()
        return calls

    exported = inner.vanilla_export().eval()
    leaf_calls(exported)  # refuses a container before anything else runs
    parameter = next(exported.parameters())
    probe = torch.rand(4, *image, generator=torch.Generator().manual_seed(0)).to(parameter.device, parameter.dtype)
    with torch.no_grad():
        check_deel_export(inner, exported(probe), probe)

    class Certified(nn.Module):
        def __init__(self, inner: nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input: Any) -> Any:
            if tuple(input.shape[-3:]) != image:
                raise ValueError(
                    f"`input` must be {image[0]}×{image[1]}×{image[2]} images (the certificate is for that size), "
                    f"got shape {tuple(input.shape)}"
                )
            return self.inner(input)

        @torch.no_grad()
        def lipschitz_bound(self) -> float:
            product = 1.0
            for layer, size in leaf_calls(self.inner):
                if isinstance(layer, nn.Conv2d):
                    kernel = layer.kernel_size
                    padding = (kernel[0] // 2, kernel[1] // 2) if layer.padding == "same" else layer.padding
                    if (
                        layer.stride != (1, 1)
                        or layer.dilation != (1, 1)
                        or layer.groups != 1
                        or layer.padding_mode != "zeros"
                        or isinstance(padding, str)
                        or any(p > k - 1 for p, k in zip(padding, kernel, strict=True))
                    ):
                        raise ValueError(
                            f"deel layer {layer} is not a stride-1 ungrouped zero-padded convolution "
                            "(padding ≤ kernel − 1)"
                        )
                    value = float(conv_norm_bound(layer.weight.to(torch.float64), "zeros", input_size=size))
                elif isinstance(layer, nn.Linear):
                    value = float(spectral_norm_bound(layer.weight.to(torch.float64)))
                elif deel_one_lipschitz_layer(layer):
                    continue  # the allow-listed parameter-free maps are 1-Lipschitz
                else:  # an unknown layer has no certified constant: refuse rather than assume 1
                    raise ValueError(f"deel layer {layer!r} has no certified Lipschitz constant here")
                exact = Fraction(product) * Fraction(value)
                product = product * value
                if math.isfinite(product) and Fraction(product) < exact:
                    product = math.nextafter(product, math.inf)
            return product

    return nn.Sequential(flat, Certified(exported)).eval()


def run_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    """Train one network with the margin loss, then certify it on the test rows."""
    import warnings

    from ...runner.checkpoints import unit_checkpoint
    from ...runner.unit_models import save_unit_model
    from ...training.fit import seeded
    from ...training.losses import certified_loss

    seed = int(params["seed"])
    device = unit_device(params)
    X_train, y_train, X_test, y_test = (t.to(device) for t in _mnist(params["max_train"], params["max_test"], seed))
    with seeded(seed):
        model = build(params)
    model = model.to(device)
    if params["model"] == "gradient-step-conv" and bool(params.get("channels_last", False)):
        import torch

        # NHWC: every convolution, pixel (un)shuffle and their gradients follow the weights' layout
        model = model.to(memory_format=torch.channels_last)
    loss = certified_loss("margin-ce", margin=float(params["margin"]), temperature=float(params["temperature"]))
    seconds = train_classifier(
        model, X_train, y_train, epochs=int(params["epochs"]), batch_size=int(params["batch_size"]),
        lr=float(params["lr"]), seed=seed, loss=loss, checkpoint=unit_checkpoint(),
    )  # fmt: skip
    saved = save_unit_model(model)  # before certification: what the row's numbers were measured on
    radii = list(params["radii"])
    if params["model"] == "deel-torchlip-conv":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # deel's product of bounds may exceed 1 (reported)
            row = certify_unit(_deel_certified(model).to(device), X_test, y_test, radii, params)
    else:
        row = certify_unit(model, X_test, y_test, radii, params)
    return {
        "model": str(params["model"]),
        "seed": seed,
        "n_train": len(y_train),
        "n_test": len(y_test),
        "epochs": int(params["epochs"]),
        "parameters": sum(p.numel() for p in model.parameters()),
        "seconds_per_epoch": seconds,
        **row,
        **saved,
    }


__all__ = ["build", "run_unit", "trained_model", "units"]
