"""The accuracy-versus-FLOPs curves of ``lowrank-compress``: an MLP, a CNN and a small ViT on MNIST.

Each architecture (:data:`ARCHITECTURES`) is trained on MNIST, then compressed by each method of
:data:`CURVE_METHODS` at model-wide FLOP budgets b (a fraction of the compressible layers' FLOPs,
counted once per row: per image, per output position of a convolution, per token):

* ``svd``: ``structnets.compress(model, flops=b, example_input=X)``: ranks allocated model-wide
  by error decrease per FLOP from the singular values, each layer its truncated SVD (Eckart–Young);
* ``calibrated``: the same with ``calibration=X``: the whitened truncation Ŵ = [W S]_r S⁻¹,
  S Sᵀ = X Xᵀ + λI, the minimiser of ‖(W − Ŵ)X‖_F over rank r (SVD-LLM, Wang et al. 2024), and
  the allocation from the whitened singular values;
* ``tucker`` (convolutional nets only; tensorly-torch): every convolution the ``svd`` allocation
  factorised becomes a Tucker-2 convolution (``tltorch.FactorizedConv.from_conv``, factorization
  ``"tucker"``: 1×1 conv c_in → r_in, k×k conv r_in → r_out, 1×1 conv r_out → c_out; Kim et al.,
  ICLR 2016) with ranks r_in ≈ ρ·c_in, r_out ≈ ρ·c_out, ρ the largest that costs no more FLOPs than
  the ``svd`` arm gave that layer; every other layer is as in ``svd``. So ``tucker`` and ``svd``
  spend the same FLOPs layer by layer and differ only in how a convolution's kernel is factorised.
  Tucker-2 of a matrix is its truncated SVD, so on nets without convolutions (the MLP; the ViT,
  whose one convolution, the patch embedding, has one input channel) the arm is not run.

X is the first ``calibration_rows`` training images. Every compressed model is scored as it is
and after ``finetune_steps`` Adam steps on the training set (the recovery fine-tune), and its CPU
forward time on ``timing_batch`` test images is measured against the uncompressed model's
(:func:`structnets.analysis.timing.interleaved_ratio`: interleaved pairs, the median of per-pair
ratios). Units are pure and seeded: the compressed units retrain their dense net (bit-identical on
the CPU) unless a worker still holds it (:func:`trained`).
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import nn

from ...protocol import JSONScalar, Unit
from ...training.device import device_param, unit_device

ARCHITECTURES: tuple[str, ...] = ("mlp", "cnn", "vit")
"""The trained nets of the curves: the experiment's Swish MLP on flattened images; a small CNN
(two 3×3 convolutions, 16 and 32 channels, each followed by ReLU and 2×2 max-pooling, then
Linear(1568, 128), ReLU, Linear(128, 10)); a small vision transformer (7×7 patch embedding by a
strided convolution to 64 features, learned position embedding, two pre-norm
``nn.TransformerEncoderLayer`` of 4 heads and feed-forward width 128, mean-pooled tokens, a
LayerNorm and a linear head)."""

CURVE_METHODS: tuple[str, ...] = ("svd", "calibrated", "tucker")
"""How the curves compress: plain SVD, calibrated (whitened) SVD, tensorly-torch Tucker (see the module docstring)."""

TUCKER_ARCHITECTURES: tuple[str, ...] = ("cnn",)
"""Architectures with convolutions of more than one input channel, where Tucker-2 differs from SVD."""

_DENSE_FIELDS: tuple[str, ...] = (
    "architecture", "seed", "width", "depth", "activation", "epochs", "batch_size", "lr", "max_train", "max_test",
)  # fmt: skip


def tucker_available() -> bool:
    """Whether tensorly-torch (``tltorch``) and tensorly import here (the ``compress`` extra)."""
    try:
        import tensorly  # noqa: F401
        import tltorch  # noqa: F401
    except ImportError:
        return False
    return True


def budget_key(budget: float) -> str:
    """A budget as it appears in unit keys: 4 significant digits (``0.3333``)."""
    return f"{budget:.4g}"


def curve_units(config: Any) -> list[Unit]:
    """The curve units of ``config`` (a :class:`~.config.LowRankCompressConfig`), (architecture, seed) first.

    Per (architecture, seed): ``curve/ARCH/dense/seed=S``, then for each method, budget and
    fine-tune steps (0 and ``finetune_steps``) ``curve/ARCH/METHOD/flops=B/steps=K/seed=S``. The
    Tucker arm is there for :data:`TUCKER_ARCHITECTURES` only, and only when tensorly-torch imports.
    """
    out: list[Unit] = []
    tucker = tucker_available()
    for architecture in config.architectures:
        for seed in config.curve_seeds:
            dense = {
                "stage": "curve", "architecture": architecture, "seed": seed, "width": config.width,
                "depth": config.depth, "activation": config.activation, "epochs": config.curve_epochs,
                "batch_size": config.batch_size, "lr": config.lr, "max_train": config.curve_max_train,
                "max_test": config.curve_max_test, **device_param(config.device),
            }  # fmt: skip
            out.append(Unit(key=f"curve/{architecture}/dense/seed={seed}", params={"method": "dense", **dense}))
            for method in config.curve_methods:
                if method == "tucker" and (architecture not in TUCKER_ARCHITECTURES or not tucker):
                    continue
                for budget in config.budgets:
                    for steps in (0, config.finetune_steps):
                        params = {
                            **dense, "method": method, "budget": budget, "finetune_steps": steps,
                            "finetune_lr": config.finetune_lr, "calibration_rows": config.calibration_rows,
                            "timing_batch": config.timing_batch, "timing_pairs": config.timing_pairs,
                        }  # fmt: skip
                        key = f"curve/{architecture}/{method}/flops={budget_key(budget)}/steps={steps}/seed={seed}"
                        out.append(Unit(key=key, params=params))
    return out


# --------------------------------------------------------------------------------------------
# Data and models


@functools.lru_cache(maxsize=1)
def _images(
    seed: int, max_train: int | None, max_test: int | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """MNIST as (n, 1, 28, 28) float32 pixels in [0, 1]: the official split, subsampled (seeded) when asked."""
    from ... import data

    loaded = data.load("mnist")
    split = np.asarray(loaded.split)
    train, test = np.flatnonzero(split == "train"), np.flatnonzero(split == "test")
    rng = np.random.default_rng(seed)
    if max_train is not None and max_train < len(train):
        train = np.sort(rng.choice(train, size=max_train, replace=False))
    if max_test is not None and max_test < len(test):
        test = np.sort(rng.choice(test, size=max_test, replace=False))
    X = torch.as_tensor(loaded.X, dtype=torch.float32).reshape(-1, 1, 28, 28)
    y = torch.as_tensor(loaded.y, dtype=torch.int64)
    return X[train], y[train], X[test], y[test]


def images(params: Mapping[str, Any]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(X_train, y_train, X_test, y_test) of a curve unit; X as (n, 1, 28, 28)."""
    optional = [None if params[k] is None else int(params[k]) for k in ("max_train", "max_test")]
    return _images(int(params["seed"]), optional[0], optional[1])


class _Flatten(nn.Module):
    """(n, 1, 28, 28) → (n, 784), so that every architecture takes the same images."""

    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.body = body

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x.flatten(1))


class SmallViT(nn.Module):
    """A small vision transformer for 28×28 images: patch embedding, encoder, mean pooling, head.

    Args:
        patch: the patch side (28 divisible by it); ``dim``: token features; ``heads``,
            ``layers``, ``feedforward``: of the ``nn.TransformerEncoder`` (pre-norm, no dropout);
            ``classes``: outputs.
    """

    def __init__(
        self, patch: int = 7, dim: int = 64, heads: int = 4, layers: int = 2, feedforward: int = 128, classes: int = 10
    ) -> None:
        super().__init__()
        tokens = (28 // patch) ** 2
        self.embed = nn.Conv2d(1, dim, patch, stride=patch)
        self.position = nn.Parameter(torch.zeros(1, tokens, dim))
        layer = nn.TransformerEncoderLayer(
            dim, heads, feedforward, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)
        nn.init.normal_(self.position, std=0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.embed(x).flatten(2).transpose(1, 2) + self.position
        return self.head(self.norm(self.encoder(tokens).mean(dim=1)))


def build(params: Mapping[str, Any]) -> nn.Module:
    """The untrained net of a curve unit, initialised from its seed (see :data:`ARCHITECTURES`)."""
    from ...models import mlp
    from ...training.fit import seeded

    architecture = str(params["architecture"])
    with seeded(int(params["seed"])):
        if architecture == "mlp":
            return _Flatten(mlp(784, 10, int(params["width"]), int(params["depth"]), str(params["activation"])))
        if architecture == "cnn":
            return nn.Sequential(
                nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10),
            )  # fmt: skip
        if architecture == "vit":
            return SmallViT()
    raise ValueError(f"`architecture` must be one of {list(ARCHITECTURES)}, got {architecture!r}")


def _train(model: nn.Module, params: Mapping[str, Any], X: torch.Tensor, y: torch.Tensor) -> float:
    from ...training.fit import fit

    device = unit_device(params)
    model.to(device)
    result = fit(
        model, X.to(device), y.to(device), loss="cross_entropy", epochs=int(params["epochs"]),
        batch_size=int(params["batch_size"]), lr=float(params["lr"]), seed=int(params["seed"]),
    )  # fmt: skip
    model.to("cpu")
    return result.wall_time


@functools.lru_cache(maxsize=1)
def _trained_cached(key: str) -> tuple[nn.Module, float]:
    params = json.loads(key)
    X_train, y_train, _, _ = images(params)
    model = build(params)
    seconds = _train(model, params, X_train, y_train)
    return model.eval(), seconds


def trained(params: Mapping[str, Any]) -> tuple[nn.Module, float]:
    """The trained dense net of a curve unit and its training seconds (shared: never modify it)."""
    fields = (*_DENSE_FIELDS, "device") if "device" in params else _DENSE_FIELDS
    return _trained_cached(json.dumps({k: params[k] for k in fields}, sort_keys=True))


def finetune(
    model: nn.Module, X: torch.Tensor, y: torch.Tensor, *, steps: int, batch_size: int, lr: float, seed: int,
    device: str = "cpu",
) -> float:  # fmt: skip
    """``steps`` Adam steps of cross-entropy on minibatches drawn with replacement (seeded); returns seconds.

    Batch t is ``batch_size`` rows drawn uniformly by a ``torch.Generator`` seeded with ``seed``, so
    the same model, data and seed give the same weights on the CPU.
    """
    start = time.perf_counter()
    generator = torch.Generator().manual_seed(seed)
    model.to(device).train()
    optimiser = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    for _ in range(steps):
        rows = torch.randint(len(y), (batch_size,), generator=generator)
        optimiser.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(X[rows].to(device)), y[rows].to(device))
        loss.backward()
        optimiser.step()
    model.to("cpu").eval()
    return time.perf_counter() - start


@torch.no_grad()
def accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor, batch: int = 2000) -> float:
    """Fraction of ``X`` whose argmax logit is ``y`` (eval mode, batches of ``batch``)."""
    was_training = model.training
    model.eval()
    correct = sum(int((model(X[i : i + batch]).argmax(1) == y[i : i + batch]).sum()) for i in range(0, len(y), batch))
    model.train(was_training)
    return correct / len(y)


def model_flops(model: nn.Module, x: torch.Tensor) -> int:
    """Whole-model FLOPs of one forward pass on ``x`` (``torch.utils.flop_counter``: 2 per multiply–add).

    torch's fused attention and encoder kernels are switched off while counting: the counter does
    not see inside them (the dense ViT would count its patch embedding and head only).
    """
    from ...compression.report import count_flops

    fast = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with torch.no_grad():
            return count_flops(model, lambda: model(x))
    finally:
        torch.backends.mha.set_fastpath_enabled(fast)


# --------------------------------------------------------------------------------------------
# The compression arms


def tucker_flops(c_in: int, c_out: int, kernel: int, r_in: int, r_out: int, bias: bool, positions_ratio: float) -> int:
    """FLOPs per output position of a Tucker-2 convolution, as compress counts a layer (2 per MAC, 1 per bias add).

    1×1 conv c_in → r_in on the input positions (``positions_ratio`` = input / output positions),
    k×k conv r_in → r_out (k×k = ``kernel`` taps), 1×1 conv r_out → c_out with the bias.
    """
    macs = c_in * r_in * positions_ratio + r_in * r_out * kernel + r_out * c_out
    return int(math.ceil(2 * macs)) + (c_out if bias else 0)


def tucker_ranks(c_in: int, c_out: int, kernel: int, bias: bool, positions_ratio: float, limit: int) -> tuple[int, int]:
    """(r_out, r_in) = (⌈ρ·c_out⌉, ⌈ρ·c_in⌉) with the largest ρ on a grid of 1/64 whose FLOPs are ≤ ``limit``; ≥ 1 each."""
    best = (1, 1)
    for step in range(1, 65):
        rho = step / 64
        r_out, r_in = min(c_out, math.ceil(rho * c_out)), min(c_in, math.ceil(rho * c_in))
        if tucker_flops(c_in, c_out, kernel, r_in, r_out, bias, positions_ratio) <= limit:
            best = (r_out, r_in)
    return best


def _positions(model: nn.Module, names: list[str], x: torch.Tensor) -> dict[str, float]:
    """Input positions / output positions of each named convolution on one pass of ``x``."""
    ratios: dict[str, float] = {}
    handles = []
    for name in names:

        def hook(module: nn.Module, inputs: Any, output: torch.Tensor, name: str = name) -> None:
            ratios[name] = float(np.prod(inputs[0].shape[2:]) / np.prod(output.shape[2:]))

        handles.append(model.get_submodule(name).register_forward_hook(hook))
    try:
        with torch.no_grad():
            model(x)
    finally:
        for handle in handles:
            handle.remove()
    return ratios


def _set(model: nn.Module, name: str, module: nn.Module) -> None:
    parent, _, child = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, child, module)


def compress_arm(
    dense: nn.Module, method: str, budget: float, X_calibration: torch.Tensor
) -> tuple[nn.Module, dict[str, JSONScalar]]:
    """The compressed copy of ``dense`` by ``method`` at ``flops=budget``, and its cost columns.

    Returns:
        (model, columns): ``budget_reached`` (the compressible layers' FLOPs after / before, as
        :func:`structnets.compress` counts them, per image), ``layers_replaced``, ``rank_min``,
        ``rank_max``, ``relative_error_mean`` (‖W − Ŵ‖_F / ‖W‖_F over the replaced layers),
        ``output_error_mean`` (‖(W − Ŵ)X‖_F / ‖WX‖_F on the calibration images; calibrated arm
        only) and ``tucker_ranks`` (``name:r_out×r_in`` of each Tucker convolution).
    """
    from ...compression import compress

    if method == "calibrated":
        report = compress(dense, "lowrank", flops=budget, calibration=X_calibration)
    else:
        report = compress(dense, "lowrank", flops=budget, example_input=X_calibration)
    model = report.model
    rows = {row.name: row for row in report.layers}
    budget_before = int(report.budget_before or 0)
    budget_after = int(report.budget_after or 0)
    tucker: list[str] = []
    if method == "tucker":
        import tltorch

        convs = [r.name for r in report.layers if r.replaced and r.kind == "conv2d"]
        ratios = _positions(dense, convs, X_calibration[:1])
        for name in convs:
            row = rows[name]
            conv = dense.get_submodule(name)
            assert isinstance(conv, nn.Conv2d)
            kernel = int(np.prod(conv.kernel_size))
            bias = conv.bias is not None
            r_out, r_in = tucker_ranks(conv.in_channels, conv.out_channels, kernel, bias, ratios[name], row.flops_after)
            factorised = tltorch.FactorizedConv.from_conv(
                conv, rank=(r_out, r_in, *conv.kernel_size), factorization="tucker", implementation="factorized",
                decompose_weights=True,
            )  # fmt: skip
            _set(model, name, factorised)
            flops = tucker_flops(conv.in_channels, conv.out_channels, kernel, r_in, r_out, bias, ratios[name])
            budget_after += (flops - row.flops_after) * int(row.rows or 0)  # rows: output positions counted
            tucker.append(f"{name}:{r_out}x{r_in}")
    replaced = [r for r in report.layers if r.replaced]
    ranks = [int(r.rank) for r in replaced if r.rank is not None]
    output_errors = [float(r.output_error) for r in replaced if r.output_error is not None]
    columns: dict[str, JSONScalar] = {
        "budget_reached": budget_after / budget_before if budget_before else math.nan,
        "layers_replaced": len(replaced),
        "layers_compressible": len(report.layers),
        "rank_min": min(ranks) if ranks else None,
        "rank_max": max(ranks) if ranks else None,
        "relative_error_mean": float(np.mean([r.relative_error for r in replaced])) if replaced else 0.0,
        "output_error_mean": float(np.mean(output_errors)) if output_errors else None,
        "tucker_ranks": " ".join(tucker) if tucker else None,
    }
    return model, columns


def forward_ratio(model: nn.Module, dense: nn.Module, X: torch.Tensor, pairs: int) -> Any:
    """CPU forward time of ``model`` over ``dense`` on ``X``: :func:`~structnets.analysis.timing.interleaved_ratio`."""
    from ...analysis.timing import interleaved_ratio

    model.eval()
    dense.eval()

    def forward(net: nn.Module):
        def call() -> None:
            with torch.no_grad():
                net(X)

        return call

    return interleaved_ratio(forward(model), forward(dense), pairs=pairs, warmup=2, repeat=None)


# --------------------------------------------------------------------------------------------
# The unit body


_LATENCY_COLUMNS = ("latency_ratio", "latency_ratio_q1", "latency_ratio_q3", "latency_seconds", "latency_dense_seconds")


def run_curve_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    """One curve row: test accuracy, FLOPs, parameters and (without fine-tuning) the forward-time ratio."""
    method = str(params["method"])
    if method not in ("dense", *CURVE_METHODS):
        raise ValueError(f"`method` must be one of {['dense', *CURVE_METHODS]}, got {method!r}")
    X_train, y_train, X_test, y_test = images(params)
    dense, dense_seconds = trained(params)
    one = X_test[:1]
    dense_flops = model_flops(dense, one)
    row: dict[str, JSONScalar] = {
        "stage": "curve", "architecture": str(params["architecture"]), "method": method, "seed": int(params["seed"]),
        "budget": None if method == "dense" else float(params["budget"]),
        "finetune_steps": 0 if method == "dense" else int(params["finetune_steps"]),
        "n_train": len(y_train), "n_test": len(y_test), "epochs": int(params["epochs"]),
        "threads": torch.get_num_threads(),
    }  # fmt: skip
    if method == "dense":
        final = dense
        row |= {"budget_reached": 1.0, "layers_replaced": 0, "train_seconds": dense_seconds, "latency_ratio": 1.0}
        row |= dict.fromkeys(_LATENCY_COLUMNS[1:])
    else:
        calibration = X_train[: int(params["calibration_rows"])]
        start = time.perf_counter()
        final, columns = compress_arm(dense, method, float(params["budget"]), calibration)
        row |= columns | {"compress_seconds": time.perf_counter() - start}
        steps = int(params["finetune_steps"])
        row["train_seconds"] = 0.0
        if steps > 0:
            row["train_seconds"] = finetune(
                final, X_train, y_train, steps=steps, batch_size=int(params["batch_size"]),
                lr=float(params["finetune_lr"]), seed=10_000 + int(params["seed"]), device=unit_device(params),
            )  # fmt: skip
            # The same layers as the steps=0 unit, timed there; every row of a kind has the same columns.
            row |= dict.fromkeys(_LATENCY_COLUMNS)
        else:
            timing = X_test[: int(params["timing_batch"])]
            ratio = forward_ratio(final, dense, timing, int(params["timing_pairs"]))
            row |= {"latency_ratio": ratio.median, "latency_ratio_q1": ratio.q1, "latency_ratio_q3": ratio.q3,
                    "latency_seconds": ratio.seconds_a, "latency_dense_seconds": ratio.seconds_b}  # fmt: skip
    flops = model_flops(final, one)
    return {
        **row,
        "parameters": sum(p.numel() for p in final.parameters()),
        "parameters_dense": sum(p.numel() for p in dense.parameters()),
        "flops": flops,
        "flops_dense": dense_flops,
        "flops_ratio": flops / dense_flops,
        "accuracy": accuracy(final, X_test, y_test),
    }
