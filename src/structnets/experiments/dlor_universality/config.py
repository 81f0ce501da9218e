"""Targets and configuration of ``dlor-universality``."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch


def _saddle(x: torch.Tensor) -> torch.Tensor:
    return x[:, 0] * x[:, 1]


def _cone(x: torch.Tensor) -> torch.Tensor:
    return torch.sqrt(x[:, 0] ** 2 + x[:, 1] ** 2)


def _ripple(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(math.pi * x[:, 0]) * torch.cos(math.pi * x[:, 1])


def _pair(x: torch.Tensor) -> torch.Tensor:
    return torch.stack([_saddle(x), _cone(x)], dim=1)


TARGETS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], str]] = {
    "saddle": (_saddle, "x₁x₂ (the orthogonal blind spot of rank-1 networks)"),
    "ripple": (_ripple, "sin(πx₁)cos(πx₂)"),
    "cone": (_cone, "‖x‖₂ (continuous, not differentiable at 0)"),
    "pair": (_pair, "(x₁x₂, ‖x‖₂), m = 2"),
}
"""2-D targets on [−1, 1]²: name -> (function of a (rows, 2) float64 tensor, description)."""

FAMILIES: tuple[str, ...] = ("shallow", "deep_r1", "deep_r2", "deep_generic", "wide_exact", "wide_generic")

BLINDSPOT_FLOOR = 4.0 / 135.0
"""min over unit v and g of E(x₁x₂ − g(vᵀx))² for x uniform on [−1, 1]² (at v = (1, 1)/√2): no
network whose first weight is rank 1 goes below it (see the ``dlor-blindspot`` experiment)."""


@dataclass(frozen=True)
class DLoRUniversalityConfig:
    """Configuration of ``dlor-universality``; ``DLoRUniversalityConfig()`` is the full run.

    Attributes:
        targets: names from :data:`TARGETS`.
        neurons: shallow neuron counts J (each a unit per target; depth grows linearly in J).
        activation: σ of every network.
        h: register scale of the deep construction (None: its default, 1e-6 for tanh).
        transfer_h: h of the generic routes (``dlor_network_from_dense``, deep and parallel).
        scale, fit_per_axis, ridge, seed: of the random-feature fit (``fit_shallow``).
        test_per_axis: test grid points per axis.
        generic_max_neurons: the wide generic network (width J, ⌈J/2⌉ branches per layer) is
            built only for J up to this (its cost grows as J³).
        thresholds: sup errors ε at which the report compares parameter counts.
        device: where the constructed networks are evaluated on the test grid: ``"cpu"``
            (default), ``"cuda"`` (``"cuda:N"``) or ``"auto"`` (``structnets run --device``; the
            runner resolves ``auto`` and checks that CUDA is there). Nothing is trained: the
            shallow fit, the constructions and the exact weight-by-weight check run on the CPU in
            float64, then each network moves to the device for its forward pass on the grid, and
            its outputs come back to the CPU for the errors (float64 on both; sums may round
            differently on a GPU). Unit keys do not depend on the device.
    """

    targets: tuple[str, ...] = ("saddle", "ripple", "cone", "pair")
    neurons: tuple[int, ...] = (2, 4, 8, 16, 32, 64, 128, 256)
    activation: str = "tanh"
    h: float | None = None
    transfer_h: float = 1e-4
    scale: float = 4.0
    fit_per_axis: int = 48
    ridge: float = 1e-10
    seed: int = 0
    test_per_axis: int = 101
    generic_max_neurons: int = 128
    thresholds: tuple[float, ...] = (0.3, 0.1, 0.03, 0.01, 0.003, 0.001)
    device: str = "cpu"

    @classmethod
    def quick(cls) -> DLoRUniversalityConfig:
        """The ``--quick`` preset: saddle and pair, J in {4, 12, 48}, coarser grids."""
        return cls(
            targets=("saddle", "pair"), neurons=(4, 12, 48), fit_per_axis=32, test_per_axis=41, generic_max_neurons=16
        )

    def __post_init__(self) -> None:
        from ..._validation import plain_fields

        plain_fields(self)  # NumPy scalars and arrays -> the Python values they equal (JSON stores them)
        from ..._validation import check_seeds

        # NumPy's RandomState and scikit-learn take seeds in [0, 2**32 - 1] only
        for name in ("seed",):
            check_seeds(name, getattr(self, name))
        from ..._validation import check_choice, check_int, check_real
        from ...constructive.dlor_universality import universal_activations
        from ...training.device import check_device

        if not self.targets or not self.neurons:
            raise ValueError(f"`targets` and `neurons` must be non-empty, got {self.targets!r}, {self.neurons!r}")
        for target in self.targets:
            check_choice("targets", target, tuple(TARGETS))
        for j in self.neurons:
            check_int("neurons", j, low=1)
        check_choice("activation", self.activation, universal_activations())
        if self.h is not None:
            check_real("h", self.h, low=0.0, high=1.0, low_open=True)
        check_real("transfer_h", self.transfer_h, low=0.0, high=1.0, low_open=True)
        check_real("scale", self.scale, low=0.0, low_open=True)
        check_int("fit_per_axis", self.fit_per_axis, low=2, high=2000)
        from ..._validation import check_fits_in_memory

        for j in self.neurons:  # fit_shallow's least-squares system: (points + J + 1) × (J + 1) float64
            check_fits_in_memory(
                f"`neurons` entry {j} (`fit_per_axis`={self.fit_per_axis})",
                (self.fit_per_axis**2 + j + 1) * (j + 1),
                what="least-squares entries",
            )
        check_real("ridge", self.ridge, low=0.0)
        check_int("seed", self.seed, low=0)
        check_int("test_per_axis", self.test_per_axis, low=2, high=2000)
        check_int("generic_max_neurons", self.generic_max_neurons, low=0)
        for eps in self.thresholds:
            check_real("thresholds", eps, low=0.0, low_open=True)
        check_device(self.device)
        from ..._validation import check_distinct

        # a repeat gives two units one key, or runs (averages, counts) an entry twice
        for name in ("targets", "neurons", "thresholds"):
            check_distinct(name, getattr(self, name))
