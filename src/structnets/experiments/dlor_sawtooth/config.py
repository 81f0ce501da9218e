"""Configuration of ``dlor-sawtooth``: targets, architectures, budgets, and the matched deep depth."""

from __future__ import annotations

import re
from dataclasses import dataclass

THRESHOLD = 1e-3
WIDE_MODES: tuple[str, ...] = ("parallel", "summed")
CORRESPONDENCE_MODES: tuple[str, ...] = ("deep", "parallel", "summed")


def parse_target(name: str) -> tuple[int, int]:
    """``"d<dim>t<teeth>"`` → (dim, teeth); e.g. ``"d1t4"`` is the 1-D sawtooth with 4 teeth."""
    match = re.fullmatch(r"d(\d+)t(\d+)", str(name))
    if not match or int(match.group(1)) < 1 or int(match.group(2)) < 1:
        raise ValueError(f"`targets` entries must look like 'd1t4' (dimension 1, 4 teeth), got {name!r}")
    return int(match.group(1)), int(match.group(2))


@dataclass(frozen=True)
class DLoRSawtoothConfig:
    """Configuration of ``dlor-sawtooth``; ``DLoRSawtoothConfig()`` is the full run.

    Attributes:
        targets: sawtooth targets ``"d<dim>t<teeth>"``: f(x) = (1/d) Σ_i tri(T·x_i) on [0, 1]^d.
        seeds: initialisation seeds (≥ 5 in the full run); data are the same for every seed.
        budgets: training epochs (full-batch Adam steps) of each independent run.
        width, rank: N and r of every DLoR map (N ≥ d + 3, the paper's n + m + 2).
        wide_modes: the wide networks trained against the deep one: ``"parallel"`` (the
            paper's wide network, σ per branch) and/or ``"summed"`` (branches added before σ,
            one DLoR map of rank B·r per layer; called ``"wide"`` before the parallel/summed split).
        wide_depth: nonlinear layers of both wide networks.
        branches: B of the parallel network; summed_branches: B of the summed one (defaults
            4 and 5 give 376 and 372 parameters, both matched by one 15-map deep network, 375).
        deep_depth: depth of the deep network; None picks, for each wide network, the depth
            whose parameter count is closest to it (units shared when the depths coincide).
        alpha_level: two-sided level of the per-cell tests (exact rank test on the final test
            MSE and on the epochs to threshold, Fisher's exact test on the successes); a cell
            is called reproduced only when its test is significant at this level.
        activation: σ of every layer.
        lr: initial Adam learning rate (cosine decay to lr/100 over each budget).
        n_train: training points for d = 1; 4^{d−1}·n_train for dimension d (uniform sample).
        test_points: about this many test points on a regular grid (⌈test_points^{1/d}⌉ per axis).
        eval_every: epochs between test evaluations (epochs to threshold are multiples of it).
        threshold: the test MSE counted as success (1e-3).
        data_seed: seed of the training sample.
        dense_width, dense_depth, dense_epochs, dense_lr: the dense MLP (same σ) of the h → 0
            correspondence (trained full-batch in float32 by Adam with cosine decay).
        hs: the scales h of the correspondence.
        correspondence_seeds: seeds of the dense MLPs.
        correspondence_rank: rank r of the DLoR networks built from the dense MLP.
        device: where units train: ``"cpu"`` (default), ``"cuda"`` (``"cuda:N"``) or ``"auto"``
            (``structnets run --device``; the runner resolves ``auto`` and checks that CUDA is
            there). Networks and data are built and drawn on the CPU from their seeds, then moved,
            so seeds and unit keys do not depend on the device and numbers agree across devices up
            to floating-point rounding. ``train`` units train and evaluate the seed-batched
            networks on the device (spectra are taken on the CPU in float64); ``correspondence``
            units train the dense MLP on the device, then build and check the float64 DLoR
            networks of the h → 0 correspondence on the CPU.
    """

    targets: tuple[str, ...] = ("d1t2", "d1t4", "d2t2")
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    budgets: tuple[int, ...] = (5000, 50000)
    width: int = 8
    rank: int = 1
    wide_modes: tuple[str, ...] = ("parallel", "summed")
    wide_depth: int = 3
    branches: int = 4
    summed_branches: int = 5
    deep_depth: int | None = None
    alpha_level: float = 0.05
    activation: str = "tanh"
    lr: float = 3e-3
    n_train: int = 256
    test_points: int = 1024
    eval_every: int = 50
    threshold: float = THRESHOLD
    data_seed: int = 12345
    dense_width: int = 8
    dense_depth: int = 2
    dense_epochs: int = 5000
    dense_lr: float = 1e-2
    hs: tuple[float, ...] = (1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4)
    correspondence_seeds: tuple[int, ...] = (0, 1, 2)
    correspondence_rank: int = 1
    device: str = "cpu"

    @classmethod
    def quick(cls) -> DLoRSawtoothConfig:
        """The ``--quick`` preset: the 2-tooth 1-D target, budgets of 500 and 2,000 epochs."""
        return cls(
            targets=("d1t2",),
            budgets=(500, 2000),
            eval_every=25,
            dense_epochs=2000,
            correspondence_seeds=(0, 1),
        )

    def __post_init__(self) -> None:
        from ..._validation import plain_fields

        plain_fields(self)  # NumPy scalars and arrays -> the Python values they equal (JSON stores them)
        from ..._validation import check_seeds

        # NumPy's RandomState and scikit-learn take seeds in [0, 2**32 - 1] only
        for name in ("seeds", "data_seed", "correspondence_seeds"):
            check_seeds(name, getattr(self, name))
        from ..._validation import check_choice, check_int, check_real
        from ...nn import ACTIVATIONS
        from ...training.device import check_device

        if not self.targets:
            raise ValueError("`targets` must list at least one target, got ()")
        for target in self.targets:
            dim, _ = parse_target(target)
            if self.width < dim + 1:
                raise ValueError(f"`width` must be >= dim + 1 = {dim + 1} for target {target!r}, got {self.width}")
        if not self.seeds:
            raise ValueError("`seeds` must list at least one seed, got ()")
        if not self.budgets:
            raise ValueError("`budgets` must list at least one budget, got ()")
        for budget in self.budgets:
            check_int("budgets", budget, low=1)
        check_int("width", self.width, low=2)
        check_int("rank", self.rank, low=1, high=self.width - 1)
        if not self.wide_modes or len(set(self.wide_modes)) != len(self.wide_modes):
            raise ValueError(f"`wide_modes` must list distinct modes, got {self.wide_modes!r}")
        for mode in self.wide_modes:
            check_choice("wide_modes", mode, WIDE_MODES)
        check_int("wide_depth", self.wide_depth, low=1)
        check_int("branches", self.branches, low=1)
        check_int("summed_branches", self.summed_branches, low=1)
        check_real("alpha_level", self.alpha_level, low=0.0, high=1.0, low_open=True, high_open=True)
        if self.deep_depth is not None:
            check_int("deep_depth", self.deep_depth, low=1)
        check_choice("activation", self.activation, ACTIVATIONS)
        check_real("lr", self.lr, low=0.0, low_open=True)
        check_int("n_train", self.n_train, low=2)
        check_int("test_points", self.test_points, low=2)
        check_int("eval_every", self.eval_every, low=1)
        check_real("threshold", self.threshold, low=0.0, low_open=True)
        check_int("dense_width", self.dense_width, low=1)
        check_int("dense_depth", self.dense_depth, low=1)
        check_int("dense_epochs", self.dense_epochs, low=1)
        check_real("dense_lr", self.dense_lr, low=0.0, low_open=True)
        for h in self.hs:
            check_real("hs", h, low=0.0, high=1.0, low_open=True)
        if self.correspondence_seeds and not self.hs:  # each correspondence unit sweeps hs (none: it failed)
            raise ValueError(
                f"`hs` must list at least one h when `correspondence_seeds` is not empty, got () with "
                f"correspondence_seeds={self.correspondence_seeds!r}"
            )
        check_int("correspondence_rank", self.correspondence_rank, low=1)
        check_device(self.device)
        from ..._validation import check_distinct, check_distinct_parsed

        check_distinct_parsed("targets", self.targets, parse_target)

        # a repeat gives two units one key, or runs (averages, counts) an entry twice
        for name in ("targets", "seeds", "budgets", "wide_modes", "hs", "correspondence_seeds"):
            check_distinct(name, getattr(self, name))


def matched_deep_depth(width: int, rank: int, wide_depth: int, branches: int, mode: str = "summed") -> int:
    """The deep depth whose parameter count is closest to the ``mode`` wide network's (ties: shallower)."""
    from ...models import dlor_parameter_count

    target = dlor_parameter_count(width, wide_depth, rank, mode, branches)
    per_map = dlor_parameter_count(width, 1, rank, "deep") // 2
    maps = max(2, round(target / per_map))
    return maps - 1


def wide_branches(config: DLoRSawtoothConfig, mode: str) -> int:
    """B of the ``mode`` wide network of ``config``."""
    return config.branches if mode == "parallel" else config.summed_branches


def deep_depths(config: DLoRSawtoothConfig) -> dict[str, int]:
    """The deep depth matched to each wide network of ``config`` (``deep_depth`` if given)."""
    return {
        mode: config.deep_depth
        or matched_deep_depth(config.width, config.rank, config.wide_depth, wide_branches(config, mode), mode)
        for mode in config.wide_modes
    }
