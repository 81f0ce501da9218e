"""Configuration of ``dlor-blindspot``."""

from __future__ import annotations

from dataclasses import dataclass

from .decompose import DECOMPOSE_KINDS


@dataclass(frozen=True)
class DLoRBlindspotConfig:
    """Configuration of ``dlor-blindspot``; ``DLoRBlindspotConfig()`` is the full run.

    Attributes:
        widths: network widths N (≥ 2, the DLoR input is zero-padded to N).
        depth: nonlinear layers of every network.
        seeds: initialisation seeds (batched within a unit).
        activation: σ of every layer.
        epochs, lr: full-batch Adam steps and initial learning rate (cosine decay).
        n_train: training points, uniform on [−1, 1]² (seed ``data_seed``).
        test_per_axis: test grid points per axis.
        interpolation_sizes: data set sizes n of the rank-1 interpolation stage.
        data_seed: seed of the training sample.
        floor_samples, floor_directions: Monte Carlo sample and number of directions θ of the
            blind-spot floor estimate (400 bins).
        decompose_sizes: matrix sizes N of the ``decompose`` stage (Theorems 3–4: the additive and
            multiplicative DLoR decompositions of dense matrices, to rounding); empty: no such stage.
        decompose_kinds: the matrices decomposed at each N (:data:`.decompose.DECOMPOSE_KINDS`), at
            ranks 1, 2, N/4 and N − 1.
        decompose_seed: seed of those matrices.
        device: where the ``train`` units train and evaluate their networks: ``"cpu"`` (default),
            ``"cuda"`` (``"cuda:N"``) or ``"auto"`` (``structnets run --device``; the runner resolves
            ``auto`` and checks that CUDA is there). Networks and data are built and drawn on the
            CPU from their seeds, then moved, so seeds and unit keys do not depend on the device and
            numbers agree across devices up to floating-point rounding. The ``floor`` and
            ``interpolate`` units (NumPy and the exact float64 rank-1 interpolants) run on the CPU.
    """

    widths: tuple[int, ...] = (2, 4, 8, 16, 32, 64)
    depth: int = 2
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    activation: str = "tanh"
    epochs: int = 3000
    lr: float = 1e-2
    n_train: int = 1024
    test_per_axis: int = 64
    interpolation_sizes: tuple[int, ...] = (4, 16, 64, 256, 1024)
    data_seed: int = 7
    floor_samples: int = 400_000
    floor_directions: int = 180
    decompose_sizes: tuple[int, ...] = (4, 16, 64)
    decompose_kinds: tuple[str, ...] = DECOMPOSE_KINDS
    decompose_seed: int = 31
    device: str = "cpu"

    @classmethod
    def quick(cls) -> DLoRBlindspotConfig:
        """The ``--quick`` preset: widths 2, 8, 32; 3 seeds; 1,000 epochs; decompositions at N = 4, 16."""
        return cls(
            widths=(2, 8, 32),
            seeds=(0, 1, 2),
            epochs=1000,
            interpolation_sizes=(4, 16, 64, 256),
            decompose_sizes=(4, 16),
        )

    def __post_init__(self) -> None:
        from ..._validation import plain_fields

        plain_fields(self)  # NumPy scalars and arrays -> the Python values they equal (JSON stores them)
        from ..._validation import check_seeds

        # NumPy's RandomState and scikit-learn take seeds in [0, 2**32 - 1] only
        for name in ("seeds", "data_seed", "decompose_seed"):
            check_seeds(name, getattr(self, name))
        from ..._validation import check_choice, check_int, check_real
        from ...nn import ACTIVATIONS
        from ...training.device import check_device

        if not self.widths or not self.seeds:
            raise ValueError(f"`widths` and `seeds` must be non-empty, got {self.widths!r}, {self.seeds!r}")
        for width in self.widths:
            check_int("widths", width, low=2)
        check_int("depth", self.depth, low=1)
        check_choice("activation", self.activation, ACTIVATIONS)
        check_int("epochs", self.epochs, low=1)
        check_real("lr", self.lr, low=0.0, low_open=True)
        check_int("n_train", self.n_train, low=2)
        check_int("test_per_axis", self.test_per_axis, low=2)
        for n in self.interpolation_sizes:
            check_int("interpolation_sizes", n, low=1)
        check_int("floor_samples", self.floor_samples, low=1000)
        check_int("floor_directions", self.floor_directions, low=1)
        for size in self.decompose_sizes:
            check_int("decompose_sizes", size, low=2, high=512)
        for kind in self.decompose_kinds:
            check_choice("decompose_kinds", kind, DECOMPOSE_KINDS)
        if self.decompose_sizes and not self.decompose_kinds:  # the stage would silently make no unit
            raise ValueError(
                f"`decompose_kinds` must name at least one of {list(DECOMPOSE_KINDS)} when `decompose_sizes` is not "
                f"empty, got () with decompose_sizes={self.decompose_sizes!r}"
            )
        check_int("decompose_seed", self.decompose_seed, low=0)
        check_device(self.device)
        from ..._validation import check_distinct

        # a repeat gives two units one key, or runs (averages, counts) an entry twice
        for name in ("widths", "seeds", "interpolation_sizes", "decompose_sizes", "decompose_kinds"):
            check_distinct(name, getattr(self, name))
