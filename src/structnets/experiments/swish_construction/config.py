"""Configuration of ``swish-construction``: target specs and the swept grids of M, τ and λ."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...data import SmoothTarget

FAMILIES = ("power", "sine", "lacunary")


def parse_target(spec: str) -> SmoothTarget:
    """``"family:d:beta"`` → a :class:`structnets.data.SmoothTarget` (e.g. ``"power:1:1.5"``)."""
    from ...data import lacunary_target, power_target, sine_target

    try:
        family, d, beta = spec.split(":")
        d_value, beta_value = int(d), float(beta)
    except ValueError as error:
        raise ValueError(f"`targets` entries must look like 'power:1:1.5', got {spec!r}") from error
    if family not in FAMILIES:
        raise ValueError(f"`targets` family must be one of {list(FAMILIES)}, got {family!r} in {spec!r}")
    try:
        if family == "power":
            target = power_target(d_value, beta_value)
        elif family == "sine":
            target = sine_target(d_value, beta_value)
        else:
            target = lacunary_target(d_value, beta_value, levels=4)
    except (ValueError, OverflowError) as error:  # e.g. (2π)^β past the float range: an OverflowError
        raise ValueError(f"`targets` entry {spec!r}: {error}") from None
    # Both constructions (swish_approximator, smooth_constant_depth_approximator) divide by k! up to the
    # Taylor order ⌈β⌉ − 1 and need a finite Hölder constant R: past them every unit failed on an overflow
    order = math.ceil(target.beta) - 1
    if order > 170 or not math.isfinite(target.R):
        raise ValueError(
            f"`targets` entry {spec!r} is out of range: the constructions need the Taylor order ⌈β⌉ − 1 <= 170 "
            f"(170! is the last factorial a float holds) and a finite constant R, got order {order} and R={target.R:g}"
        )
    return target


@dataclass(frozen=True)
class SwishConstructionConfig:
    """Configuration of ``swish-construction``; ``SwishConstructionConfig()`` is the full sweep.

    Attributes:
        targets: ``"family:d:beta"`` specs (families: power, sine, lacunary).
        Ms_1d, Ms_2d: grid resolutions M swept for d = 1 and d ≥ 2 (at ``tau``, ``lam``).
        taus: bump sharpness values swept at M = ``sweep_M`` (and ``lam``).
        lams: product scales swept at M = ``sweep_M`` (and ``tau``).
        tau, lam: the fixed values while another parameter is swept.
        sweep_M_1d, sweep_M_2d: M used in the τ and λ sweeps.
        grid_1d, grid_2d: points per axis of the dense evaluation grid.
    """

    targets: tuple[str, ...] = ("power:1:0.5", "power:1:1.5", "sine:1:3", "power:2:1.5", "sine:2:2")
    Ms_1d: tuple[int, ...] = (4, 8, 16, 32, 64, 128, 256)
    Ms_2d: tuple[int, ...] = (4, 8, 16, 32)
    taus: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
    lams: tuple[float, ...] = (4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0)
    tau: float = 40.0
    lam: float = 1e4
    sweep_M_1d: int = 32
    sweep_M_2d: int = 8
    grid_1d: int = 40001
    grid_2d: int = 301

    @classmethod
    def quick(cls) -> SwishConstructionConfig:
        """The ``--quick`` preset: smaller M and coarser grids (about a minute on one core)."""
        return cls(
            Ms_1d=(4, 8, 16, 32, 64),
            Ms_2d=(4, 8, 16),
            taus=(0.5, 2.0, 8.0, 32.0),
            lams=(4.0, 64.0, 1024.0, 16384.0),
            sweep_M_2d=6,
            grid_1d=20001,
            grid_2d=121,
        )

    def __post_init__(self) -> None:
        from ..._validation import plain_fields

        plain_fields(self)  # NumPy scalars and arrays -> the Python values they equal (JSON stores them)
        from ..._validation import check_int, check_real

        if not self.targets:
            raise ValueError("`targets` must list at least one target, got ()")
        for spec in self.targets:
            parse_target(spec)
        for name in ("Ms_1d", "Ms_2d"):
            for M in getattr(self, name):
                check_int(name, M, low=1)
        for spec in self.targets:  # the M sweep is each target's main result: none would be an empty row
            name = "Ms_1d" if parse_target(spec).d == 1 else "Ms_2d"
            if not getattr(self, name):
                raise ValueError(f"`{name}` must list at least one M: target {spec!r} sweeps it, got ()")
        check_int("sweep_M_1d", self.sweep_M_1d, low=1)
        check_int("sweep_M_2d", self.sweep_M_2d, low=1)
        for value in self.taus:
            check_real("taus", value, low=0.0, low_open=True)
        check_real("tau", self.tau, low=0.0, low_open=True)
        for value in self.lams:
            check_real("lams", value, low=0.0, low_open=True)
        check_real("lam", self.lam, low=0.0, low_open=True)
        check_int("grid_1d", self.grid_1d, low=11)
        check_int("grid_2d", self.grid_2d, low=11)
        self._check_memory()

    def _check_memory(self) -> None:
        """Refuse an M or a grid whose unit cannot fit in memory, before the run folder exists.

        The units would fail (``swish_approximator``'s own check) or exhaust memory one by one; the
        sizes are those of :func:`.units.make_units` and :func:`structnets.constructive.swish_approximator`.
        """
        import math

        from ..._validation import check_fits_in_memory

        for spec in self.targets:
            d = parse_target(spec).d
            name, Ms, sweep = ("Ms_1d", self.Ms_1d, "sweep_M_1d") if d == 1 else ("Ms_2d", self.Ms_2d, "sweep_M_2d")
            for field, M in [(name, M) for M in Ms] + [(sweep, getattr(self, sweep))]:
                if d * math.log2(M + 1) > 64:
                    raise ValueError(f"`{field}` entry M={M} asks for (M+1)^d > 2**64 grid points for target {spec!r}")
                check_fits_in_memory(f"`{field}` entry M={M} (target {spec!r}, d={d})", 6 * (M + 1) ** d * (d + 1))
            grid = "grid_1d" if d == 1 else "grid_2d"
            if d >= 2 and 2 * math.log2(self.grid_2d) > 64:  # grid_2d ** (2 / d) would overflow a float first
                raise ValueError(f"`{grid}`={getattr(self, grid)} asks for more than 2**64 grid points for {spec!r}")
            per_axis = self.grid_1d if d == 1 else max(11, round(self.grid_2d ** (2 / d)))
            if d * math.log2(per_axis) > 64:
                raise ValueError(f"`{grid}`={getattr(self, grid)} asks for more than 2**64 grid points for {spec!r}")
            check_fits_in_memory(
                f"`{grid}`={getattr(self, grid)} (target {spec!r}, d={d})", 2 * per_axis**d * d, what="grid values"
            )
        from ..._validation import check_distinct, check_distinct_parsed

        check_distinct_parsed(
            "targets", self.targets, lambda spec: (spec.split(":")[0], parse_target(spec).d, parse_target(spec).beta)
        )

        # a repeat gives two units one key, or runs (averages, counts) an entry twice
        for name in ("targets", "Ms_1d", "Ms_2d", "taus", "lams"):
            check_distinct(name, getattr(self, name))


__all__ = ["FAMILIES", "SwishConstructionConfig", "parse_target"]
