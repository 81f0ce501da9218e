"""Configuration of ``lowrank-compress``: which trained dense nets are compressed, how far, how tuned."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..._validation import check_choice, check_int, check_real
from ...compression import METHODS
from ...training.device import check_device

DATASETS: tuple[str, ...] = ("mnist", "iris", "rice", "bank-marketing", "adult", "real-estate", "abalone",
                             "wine-quality", "bike-sharing")  # fmt: skip
"""Data sets the experiment accepts: MNIST and the eight UCI sets of ``lowrank-uci``."""

ALLOCATIONS: tuple[str, ...] = ("uniform", "budget", "calibrated")
"""How a ratio becomes ranks: ``uniform`` (every layer ``ratio=r``), ``budget`` (``flops=r`` over the
compressed layers, ranks allocated model-wide by error decrease per FLOP) or ``calibrated`` (the same
budget with the whitened truncation on ``calibration_rows`` training rows)."""

MODELS: tuple[str, ...] = ("dense", "compressed", "finetuned", "scratch")
"""The four models of every (data set, ratio, seed): the trained dense net; its compression with
:func:`structnets.compress` (no further training); the compression fine-tuned; and a net of the
compressed architecture trained from a fresh initialisation with the dense net's budget."""


@dataclass(frozen=True)
class LowRankCompressConfig:
    """Configuration of ``lowrank-compress``; ``LowRankCompressConfig()`` is the full run.

    The question it answers (Li et al., ICML 2025, Sec. 5; docs/design.md, "What it is"): can a
    trained dense MLP be made r times cheaper by replacing its weights with truncated SVDs, and is
    that better than training the cheap net from scratch?

    Attributes:
        datasets: data sets (see :data:`DATASETS`); MNIST uses its official 60,000 / 10,000 split,
            a UCI set a seeded hold-out split of ``test_fraction`` (stratified for classification).
        ratios: compression ratios in (0, 1]: ``compress(model, method, ratio=r)`` keeps at most the
            fraction r of each compressed weight's parameters (and so of its FLOPs).
        seeds: repetition seeds; a seed fixes the split (UCI), the subsample, the initialisations and
            the minibatch order, so the four models of one seed form a paired observation.
        width, depth: the dense Swish MLP, :func:`structnets.models.mlp` (``depth`` nonlinear layers).
        method: ``"lowrank"`` (truncated SVD, every ``nn.Linear``) or ``"dlor"`` (αI + UVᵀ, square
            layers only).
        allocation: how each ratio becomes ranks (see :data:`ALLOCATIONS`); ``"uniform"`` is the
            original experiment (its unit keys unchanged), the others add ``/allocation=NAME`` to
            the keys and need ``method="lowrank"``.
        calibration_rows: training rows (the first, of the seeded split) that calibrate
            ``allocation="calibrated"``.
        compress_output: also compress the output layer (a rank-r classifier head); by default it
            stays dense, as in the paper's low-rank nets, whose first and last layers are dense.
        epochs: epochs of the dense net and of the from-scratch net (the same budget).
        finetune_epochs: epochs of fine-tuning after compression.
        batch_size, lr, finetune_lr, weight_decay: Adam options of :func:`structnets.training.fit`.
        max_train, max_test: subsample the training / test rows to at most this many (seeded);
            None keeps all.
        test_fraction: held-out share of a UCI set's rows.
        activation: nonlinearity of every layer.
        architectures: the nets of the accuracy-versus-FLOPs curves on MNIST (see
            :data:`~.curves.ARCHITECTURES`: ``"mlp"``, ``"cnn"``, ``"vit"``); empty: no curves.
        curve_methods: how the curves compress (:data:`~.curves.CURVE_METHODS`: ``"svd"``,
            ``"calibrated"``, ``"tucker"``; Tucker on the CNN only, and only where tensorly-torch
            imports).
        budgets: the curves' model-wide budgets, ``compress(model, flops=b)``: fractions in (0, 1]
            of the compressible layers' FLOPs.
        curve_seeds: seeds of the curves (initialisation, minibatch order, fine-tune batches; the
            MNIST split is the official one), the pairs of the targets' paired tests.
        curve_epochs: epochs of every curve net's training (Adam, ``batch_size``, ``lr``).
        curve_max_train, curve_max_test: subsample the curves' MNIST rows (seeded); None keeps all.
        finetune_steps: Adam steps (``batch_size`` rows each, lr ``finetune_lr``) of the curves'
            recovery fine-tune; every compressed net is scored with 0 and with this many steps.
        timing_batch, timing_pairs: test images per timed forward pass, and interleaved pairs,
            of the compressed-over-dense CPU forward-time ratio.
        device: where the nets train (dense, fine-tuning, from scratch): ``"cpu"`` (default),
            ``"cuda"`` (``"cuda:N"``) or ``"auto"`` (``structnets run --device``; the runner
            resolves ``auto`` and checks that CUDA is there). Every net is built and initialised on
            the CPU from its seed (and data are drawn there), moved to the device for
            :func:`structnets.training.fit` and moved back after it, so the compression (SVD), the
            cost counts and the test scores run on the CPU. Seeds and unit keys do not depend on
            the device; numbers agree across devices up to floating-point rounding.
    """

    datasets: tuple[str, ...] = ("mnist", "bike-sharing")
    ratios: tuple[float, ...] = (1.0, 1 / 2, 1 / 3, 1 / 4, 1 / 8)
    seeds: tuple[int, ...] = (0, 1, 2)
    width: int = 256
    depth: int = 3
    method: str = "lowrank"
    allocation: str = "uniform"
    calibration_rows: int = 2048
    compress_output: bool = False
    epochs: int = 10
    finetune_epochs: int = 2
    batch_size: int = 128
    lr: float = 1e-3
    finetune_lr: float = 2e-4
    weight_decay: float = 0.0
    max_train: int | None = None
    max_test: int | None = None
    test_fraction: float = 0.2
    activation: str = "swish"
    device: str = "cpu"
    architectures: tuple[str, ...] = ("mlp", "cnn", "vit")
    curve_methods: tuple[str, ...] = ("svd", "calibrated", "tucker")
    budgets: tuple[float, ...] = (1 / 2, 1 / 3, 1 / 4)
    curve_seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    curve_epochs: int = 2
    curve_max_train: int | None = None
    curve_max_test: int | None = None
    finetune_steps: int = 100
    timing_batch: int = 256
    timing_pairs: int = 15

    @classmethod
    def quick(cls) -> LowRankCompressConfig:
        """The ``--quick`` preset: at most 4,000 training and 2,000 test rows per set, width 128, 3 ratios, 2 seeds;
        curves on 2,000 / 1,000 MNIST rows, 4 epochs, budgets 1/2 and 1/4, 2 seeds, 10 fine-tune steps."""
        return cls(
            ratios=(1 / 2, 1 / 3, 1 / 8),
            seeds=(0, 1),
            width=128,
            epochs=8,
            finetune_epochs=2,
            max_train=4000,
            max_test=2000,
            budgets=(1 / 2, 1 / 4),
            curve_seeds=(0, 1),
            curve_epochs=4,
            curve_max_train=2000,
            curve_max_test=1000,
            finetune_steps=10,
            timing_batch=128,
            timing_pairs=3,
        )

    def __post_init__(self) -> None:
        from ..._validation import plain_fields

        plain_fields(self)  # NumPy scalars and arrays -> the Python values they equal (JSON stores them)
        from ..._validation import check_seeds

        for name in ("seeds", "curve_seeds"):  # a tuple of ints in [0, 2**32 - 1]; tighter bounds below
            check_seeds(name, getattr(self, name))
        from ..._validation import check_row_cap

        check_row_cap("curve_max_train", self.curve_max_train, low=10, rows=60000, what="the MNIST training split")
        check_row_cap("curve_max_test", self.curve_max_test, low=10, rows=10000, what="the MNIST test split")
        unknown = [name for name in self.datasets if name not in DATASETS]
        if unknown or not (self.datasets or self.architectures) or len(set(self.datasets)) != len(self.datasets):
            raise ValueError(
                f"`datasets` must be a subset of {list(DATASETS)} without repeats, non-empty unless `architectures` "
                f"is, got {self.datasets!r}"
            )
        self._check_curves()
        if not self.ratios:
            raise ValueError("`ratios` must list at least one ratio in (0, 1], got ()")
        for ratio in self.ratios:
            check_real("ratios", ratio, low=0.0, high=1.0, low_open=True)
        keys = [ratio_key(r) for r in self.ratios]
        if len(set(keys)) != len(keys):
            raise ValueError(f"`ratios` must be distinct (to 4 significant digits), got {self.ratios!r}")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"`seeds` must list at least one seed, without repeats, got {self.seeds!r}")
        for seed in self.seeds:
            check_int("seeds", seed, low=0, high=2**31 - 1)
        check_int("width", self.width, low=2)
        check_int("depth", self.depth, low=1, high=100)
        check_choice("method", self.method, METHODS)
        check_choice("allocation", self.allocation, ALLOCATIONS)
        check_int("calibration_rows", self.calibration_rows, low=1)
        if self.allocation != "uniform" and self.method != "lowrank":
            raise ValueError(f"`allocation`={self.allocation!r} needs method='lowrank', got method={self.method!r}")
        if not isinstance(self.compress_output, bool):
            raise TypeError(f"`compress_output` must be a bool, got {self.compress_output!r}")
        if self.method == "dlor" and self.depth < 2:
            raise ValueError(
                f"`depth` must be ≥ 2 for method='dlor' (its only square layers are hidden), got {self.depth}"
            )
        check_int("epochs", self.epochs, low=1)
        from ..._validation import check_network_fits

        check_network_fits(f"`width`={self.width}, `depth`={self.depth}", self.width, self.depth, 784)
        check_int("finetune_epochs", self.finetune_epochs, low=1)
        check_int("batch_size", self.batch_size, low=1)
        check_real("lr", self.lr, low=0.0, low_open=True)
        check_real("finetune_lr", self.finetune_lr, low=0.0, low_open=True)
        check_real("weight_decay", self.weight_decay, low=0.0)
        for name in ("max_train", "max_test"):
            value = getattr(self, name)
            if value is not None:
                check_int(name, value, low=10)
        check_real("test_fraction", self.test_fraction, low=0.05, high=0.5)
        check_choice("activation", self.activation, _activations())
        check_device(self.device)

    def _check_curves(self) -> None:
        from .curves import ARCHITECTURES, CURVE_METHODS

        for name, value, allowed in (("architectures", self.architectures, ARCHITECTURES),
                                     ("curve_methods", self.curve_methods, CURVE_METHODS)):  # fmt: skip
            if not isinstance(value, tuple) or len(set(value)) != len(value) or not set(value) <= set(allowed):
                raise ValueError(f"`{name}` must be a tuple of distinct names from {list(allowed)}, got {value!r}")
        if self.architectures and not self.curve_methods:
            raise ValueError("`curve_methods` must name at least one method when `architectures` is not empty, got ()")
        if self.architectures and not self.budgets:
            raise ValueError("`budgets` must list at least one budget in (0, 1] when `architectures` is not empty")
        for budget in self.budgets:
            check_real("budgets", budget, low=0.0, high=1.0, low_open=True)
        keys = [ratio_key(b) for b in self.budgets]
        if len(set(keys)) != len(keys):
            raise ValueError(f"`budgets` must be distinct (to 4 significant digits), got {self.budgets!r}")
        if self.architectures and (not self.curve_seeds or len(set(self.curve_seeds)) != len(self.curve_seeds)):
            raise ValueError(f"`curve_seeds` must list at least one seed, without repeats, got {self.curve_seeds!r}")
        for seed in self.curve_seeds:
            check_int("curve_seeds", seed, low=0, high=2**31 - 1)
        check_int("curve_epochs", self.curve_epochs, low=1)
        for name in ("curve_max_train", "curve_max_test"):
            value = getattr(self, name)
            if value is not None:
                check_int(name, value, low=10)
        check_int("finetune_steps", self.finetune_steps, low=1)
        check_int("timing_batch", self.timing_batch, low=1)
        check_int("timing_pairs", self.timing_pairs, low=1)


def ratio_key(ratio: float) -> str:
    """The ratio as it appears in unit keys: 4 significant digits (``0.3333``)."""
    return f"{ratio:.4g}"


def _activations() -> tuple[str, ...]:
    from ...nn import ACTIVATIONS

    return tuple(ACTIVATIONS)


def closest_ratio(ratios: list[float], target: float) -> float:
    """The ratio in ``ratios`` nearest ``target`` on a log scale (the 1/3 question: nearest 1/3)."""
    return min(ratios, key=lambda r: abs(math.log(r) - math.log(target)))
