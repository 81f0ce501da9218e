"""Configuration of ``lipschitz-moons`` and the value the paper's authors' code gave."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..._validation import check_choice, check_int, check_real

# re-exported: the helpers lived here before structnets.training.device
from ...training.device import check_device as check_device
from ...training.device import device_param as device_param
from ...training.device import unit_device as unit_device

PAPER_TRAIN_FRACTION = 0.2
"""The paper's two-moons training share, where the claims are judged."""

PAPER_LIPSCHITZ_AUTHORS_CODE = (19.0, 25.0)
"""Measured Lipschitz constants of two-moons models trained with the authors' public code (as
described to us): lift unconstrained, τ clamped with an undershooting power-method estimate."""


@dataclass(frozen=True)
class LipschitzMoonsConfig:
    """Configuration of ``lipschitz-moons``; ``LipschitzMoonsConfig()`` is the full run.

    Attributes:
        n_samples, noise: the two-moons sample (paper: 4000, 0.1).
        train_fractions: shares of points used for training (paper: 0.2; also 0.8).
        depths: depth sweep at width ``depth_sweep_width`` (paper: 2–64 at width 5).
        widths: width sweep at depth ``width_sweep_depth`` (paper: 10–40 at depth 10).
        variant: ``"gradient-step"`` or ``"fixed-width"`` (see :func:`lipschitz_resnet`).
        epochs, batch_size, lr: Adam with a cosine schedule over all steps (paper: batch 256).
        temperature: logits are multiplied by this inside the cross-entropy only (a 1-Lipschitz
            network's logits are small; the model itself stays 1-Lipschitz).
        radii: ℓ₂ radii for certified accuracy.
        seeds: repetition seeds (data sample, split and initialisation).
        claim_seeds: further seeds, at the paper's train share 0.2 only (both sweeps), so that the
            claims judged there (``004-moons-accuracy``, ``004-stable-training``) rest on ≥ 5 seeds of
            a configuration fixed before the run; merged with ``seeds`` (``()`` in the quick preset).
        ascent_steps: gradient-ascent steps of the Lipschitz lower bound.
        authors_baseline: also train, at depth ``width_sweep_depth`` and the first width of
            ``widths``, the "authors-style" model (unconstrained lift and head, τ = 2/σ̂² with σ̂ a
            one-step persistent power estimate, used in training *and* evaluation), to measure the
            gap described for the authors' code.
        device: where units train and certify: ``"cpu"`` (default), ``"cuda"`` (``"cuda:N"``)
            or ``"auto"`` (``structnets run --device``; the runner resolves ``auto`` and checks
            ``cuda`` before any unit runs). Seeds, data and initial weights do not depend on it;
            numbers agree across devices up to floating-point rounding.
    """

    n_samples: int = 4000
    noise: float = 0.1
    train_fractions: tuple[float, ...] = (0.2, 0.8)
    depths: tuple[int, ...] = (2, 4, 8, 16, 32, 64)
    depth_sweep_width: int = 5
    widths: tuple[int, ...] = (10, 20, 30, 40)
    width_sweep_depth: int = 10
    variant: str = "gradient-step"
    epochs: int = 300
    batch_size: int = 256
    lr: float = 1e-2
    temperature: float = 10.0
    radii: tuple[float, ...] = (0.05, 0.1, 0.2)
    seeds: tuple[int, ...] = (0,)
    claim_seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    ascent_steps: int = 100
    authors_baseline: bool = True
    device: str = "cpu"

    def seeds_at(self, fraction: float, sweep: str) -> tuple[int, ...]:
        """The seeds of one (train share, sweep): ``seeds``, plus ``claim_seeds`` at the paper's share
        0.2 in the depth and width sweeps (in order, without repeats)."""
        extra = self.claim_seeds if fraction == PAPER_TRAIN_FRACTION and sweep in ("depth", "width") else ()
        return tuple(dict.fromkeys((*self.seeds, *extra)))

    @classmethod
    def quick(cls) -> LipschitzMoonsConfig:
        """The ``--quick`` preset: depths 2 and 8, widths 10 and 20, 30 epochs."""
        return cls(depths=(2, 8), widths=(10, 20), epochs=30, ascent_steps=30, claim_seeds=())

    def __post_init__(self) -> None:
        from ..._validation import plain_fields

        plain_fields(self)  # NumPy scalars and arrays -> the Python values they equal (JSON stores them)
        from ..._validation import check_seeds

        # NumPy's RandomState and scikit-learn take seeds in [0, 2**32 - 1] only
        for name in ("seeds", "claim_seeds"):
            check_seeds(name, getattr(self, name))
        check_int("n_samples", self.n_samples, low=20)
        from ..._validation import check_fits_in_memory

        check_fits_in_memory(f"`n_samples`={self.n_samples}", 3 * self.n_samples, what="coordinates and labels")
        check_real("noise", self.noise, low=0.0)
        if not self.train_fractions:
            raise ValueError("`train_fractions` must be non-empty, got ()")
        for fraction in self.train_fractions:
            check_real("train_fractions", fraction, low=0.0, high=1.0, low_open=True, high_open=True)
            # the stratified split (scikit-learn) needs both moons on each side: ≥ 2 rows per side
            n_train = math.floor(fraction * self.n_samples)
            if min(n_train, self.n_samples - n_train) < 2:
                raise ValueError(
                    f"`train_fractions` entry {fraction} of `n_samples`={self.n_samples} gives {n_train} training and "
                    f"{self.n_samples - n_train} test points; the stratified split needs at least 2 on each side"
                )
        for depth in self.depths:
            check_int("depths", depth, low=1)
        check_int("width_sweep_depth", self.width_sweep_depth, low=1)
        for width in self.widths:
            check_int("widths", width, low=1)
        check_int("depth_sweep_width", self.depth_sweep_width, low=1)
        if not self.depths and not self.widths:  # no sweep: a run of no units
            raise ValueError("`depths` and `widths` must not both be empty (no sweep to run), got () and ()")
        check_choice("variant", self.variant, ("gradient-step", "fixed-width"))
        from ..._validation import check_network_fits

        for width in self.widths:
            check_network_fits(
                f"`widths` entry {width} (`width_sweep_depth`={self.width_sweep_depth})", width, self.width_sweep_depth
            )
        for depth in self.depths:
            check_network_fits(
                f"`depths` entry {depth} (`depth_sweep_width`={self.depth_sweep_width})", self.depth_sweep_width, depth
            )
        check_int("epochs", self.epochs, low=1)
        check_int("batch_size", self.batch_size, low=1)
        check_real("lr", self.lr, low=0.0, low_open=True)
        check_real("temperature", self.temperature, low=0.0, low_open=True)
        for radius in self.radii:
            check_real("radii", radius, low=0.0, low_open=True)
        if not self.seeds:
            raise ValueError("`seeds` must list at least one seed, got ()")
        for seed in (*self.seeds, *self.claim_seeds):
            check_int("seeds", seed, low=0)
        check_int("ascent_steps", self.ascent_steps, low=0)
        if not isinstance(self.authors_baseline, bool):
            raise TypeError(f"`authors_baseline` must be a bool, got {self.authors_baseline!r}")
        check_device(self.device)
        from ..._validation import check_distinct

        # a repeat gives two units one key, or runs (averages, counts) an entry twice
        for name in ("train_fractions", "depths", "widths", "radii", "seeds", "claim_seeds"):
            check_distinct(name, getattr(self, name))
