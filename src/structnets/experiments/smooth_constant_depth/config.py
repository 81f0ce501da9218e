"""Configuration of ``smooth-constant-depth``."""

from __future__ import annotations

from dataclasses import dataclass

from ..._validation import check_int, check_real
from ...constructive.smooth_constant_depth_gadgets import ACTIVATIONS
from ..swish_construction.config import parse_target


@dataclass(frozen=True)
class SmoothConstantDepthConfig:
    """Configuration of ``smooth-constant-depth``; ``SmoothConstantDepthConfig()`` is the full sweep.

    Attributes:
        targets: ``"family:d:s"`` specs (as in ``swish-construction``: power, sine, lacunary),
            d ∈ {1, 2, 3}; the construction is built with s = the target's smoothness.
        activations: subset of gelu, silu, tanh.
        Ks_1d, Ks_2d, Ks_3d: cells per axis swept for d = 1, 2 and 3.
        tau: sharpness of the sigmoidal partition of unity.
        grid_1d, grid_2d, grid_3d: points per axis of the uniform evaluation grid (every knot and
            every cell boundary is added) for the sup error.
        l2_points: scrambled Sobol points (seed 0) whose RMS error is the L² error; the sup error
            is the maximum over the grid and these points.
        floor_points: sample points on the segment where the certified ReLU floor is computed.
    """

    targets: tuple[str, ...] = (
        "sine:1:1", "sine:1:2", "sine:1:3", "sine:1:4",
        "sine:2:1", "sine:2:2", "sine:2:3", "sine:2:4",
        "sine:3:1", "sine:3:2", "sine:3:3",
    )  # fmt: skip
    activations: tuple[str, ...] = ACTIVATIONS
    Ks_1d: tuple[int, ...] = (4, 8, 16, 32, 64)
    Ks_2d: tuple[int, ...] = (2, 4, 8, 16, 32)
    Ks_3d: tuple[int, ...] = (2, 3, 4, 6, 8)
    tau: float = 8.0
    grid_1d: int = 20001
    grid_2d: int = 101
    grid_3d: int = 11
    floor_points: int = 1024
    l2_points: int = 4096

    @classmethod
    def quick(cls) -> SmoothConstantDepthConfig:
        """The ``--quick`` preset (well under 30 s on one core)."""
        return cls(
            targets=("sine:1:1", "sine:1:3", "sine:2:2", "sine:3:1"),
            activations=("gelu", "tanh"),
            Ks_1d=(4, 8, 16),
            Ks_2d=(2, 3),
            Ks_3d=(2, 3),
            grid_1d=4001,
            grid_2d=41,
            grid_3d=7,
            floor_points=256,
        )

    def Ks(self, d: int) -> tuple[int, ...]:
        """The K swept for dimension d."""
        return {1: self.Ks_1d, 2: self.Ks_2d, 3: self.Ks_3d}[d]

    def grid(self, d: int) -> int:
        """Points per axis of the uniform evaluation grid for dimension d."""
        return {1: self.grid_1d, 2: self.grid_2d, 3: self.grid_3d}[d]

    def __post_init__(self) -> None:
        from ..._validation import plain_fields

        plain_fields(self)  # NumPy scalars and arrays -> the Python values they equal (JSON stores them)
        if not self.targets:
            raise ValueError("`targets` must list at least one target, got ()")
        for spec in self.targets:
            d = parse_target(spec).d
            if d not in (1, 2, 3):
                raise ValueError(f"`targets` must have d in {{1, 2, 3}}, got d={d} in {spec!r}")
        if not self.activations:
            raise ValueError("`activations` must list at least one activation, got ()")
        for name in self.activations:
            if name not in ACTIVATIONS:
                raise ValueError(f"`activations` entries must be one of {list(ACTIVATIONS)}, got {name!r}")
        for name in ("Ks_1d", "Ks_2d", "Ks_3d"):
            for K in getattr(self, name):
                try:
                    check_int(name, K, low=1)
                except (TypeError, ValueError) as error:
                    raise type(error)(f"{error} (each entry is a `K`, cells per axis)") from None
        for spec in self.targets:  # a target with no K has no unit (and the report died on a KeyError)
            d = parse_target(spec).d
            if not self.Ks(d):
                raise ValueError(f"`Ks_{d}d` must list at least one K: target {spec!r} has d = {d}, got ()")
        check_real("tau", self.tau, low=0.0, low_open=True)
        check_int("grid_1d", self.grid_1d, low=11)
        check_int("grid_2d", self.grid_2d, low=11)
        check_int("grid_3d", self.grid_3d, low=3)
        check_int("floor_points", self.floor_points, low=16)
        check_int("l2_points", self.l2_points, low=16)
        from ..._validation import check_distinct, check_distinct_parsed

        check_distinct_parsed(
            "targets", self.targets, lambda spec: (spec.split(":")[0], parse_target(spec).d, parse_target(spec).beta)
        )

        # a repeat gives two units one key, or runs (averages, counts) an entry twice
        for name in ("targets", "activations", "Ks_1d", "Ks_2d", "Ks_3d"):
            check_distinct(name, getattr(self, name))
