"""Configuration of ``lipschitz-density``."""

from __future__ import annotations

from dataclasses import dataclass

from ..._validation import check_int, check_real
from ...training.device import check_device


@dataclass(frozen=True)
class LipschitzDensityConfig:
    """Configuration of ``lipschitz-density``; ``LipschitzDensityConfig()`` is the full run.

    Attributes:
        pieces_1d: one 1-D target (on [−1, 1]) per entry, with that many linear pieces.
        groups_2d: one 2-D max-min target (on [−1, 1]²) per entry, with that many groups.
        group_size_2d: pieces per group of the 2-D targets.
        target_seed: seed of every target's generator.
        depths: residual blocks L of the trained fixed-width networks.
        width: residual width; None is the theorem's d + 3.
        seeds: initialisation seeds, trained together (vectorised).
        steps, lr: full-batch Adam steps with a cosine schedule from ``lr`` to 0.
        step: initial s of every block's learnable step τ = s/‖W‖₂², in (0, 2) (see
            :func:`fit_fixed_width`; 1.9 fits better than the builder's default 1, measured).
        train_per_axis_1d, train_per_axis_2d: training grid points per axis (1-D and 2-D targets).
        eval_per_axis_1d, eval_per_axis_2d: evaluation grid points per axis (sup error and RMSE).
        tolerance: sup error at which a depth counts as "reached" in the report.
        unbounded_widths, unbounded_depths: the (width, depth) pairs, growing together, of the
            ``gradient-step`` units (Theorem 3.1's family G_{d,σ}: lift, gradient-step blocks, head, no
            maps between the blocks, dense as width and depth grow): one unit per target and pair,
            trained as the fixed-width units are (same steps, lr, step, grids); ``()`` for none.
        unbounded_seeds: the seeds of every ``gradient-step`` unit (≥ 5 for the claim).
        device: where the ``trained`` units train: ``"cpu"`` (default), ``"cuda"`` (``"cuda:N"``)
            or ``"auto"`` (``structnets run --device``; the runner resolves ``auto`` and checks
            that CUDA is there). The networks are built on the CPU from their seeds and trained
            (float64) on the device; the trained weights come back to the CPU, where the errors,
            secant ratios and Lipschitz certificates are computed, as are the ``exact`` units'
            max-min networks and lattice bounds. Seeds and unit keys do not depend on the device;
            numbers agree across devices up to floating-point rounding.
    """

    pieces_1d: tuple[int, ...] = (4, 12)
    groups_2d: tuple[int, ...] = (2, 6)
    group_size_2d: int = 3
    target_seed: int = 0
    depths: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    width: int | None = None
    seeds: tuple[int, ...] = (0, 1, 2)
    steps: int = 2000
    lr: float = 1e-2
    step: float = 1.9
    train_per_axis_1d: int = 257
    train_per_axis_2d: int = 21
    eval_per_axis_1d: int = 8193
    eval_per_axis_2d: int = 257
    tolerance: float = 0.02
    unbounded_widths: tuple[int, ...] = (2, 3, 4, 6, 8)
    unbounded_depths: tuple[int, ...] = (1, 2, 4, 8, 16)
    unbounded_seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    device: str = "cpu"

    @classmethod
    def quick(cls) -> LipschitzDensityConfig:
        """The ``--quick`` preset: one 1-D and one 2-D target, depths 1 and 2, 100 steps, 2 seeds; gradient-step
        (width, depth) (2, 1), (3, 2), (4, 3)."""
        return cls(
            pieces_1d=(4,),
            groups_2d=(2,),
            group_size_2d=2,
            depths=(1, 2),
            seeds=(0, 1),
            steps=100,
            train_per_axis_1d=65,
            train_per_axis_2d=13,
            eval_per_axis_1d=1025,
            eval_per_axis_2d=65,
            unbounded_widths=(2, 3, 4),
            unbounded_depths=(1, 2, 3),
            unbounded_seeds=(0, 1),
        )

    def __post_init__(self) -> None:
        from ..._validation import plain_fields

        plain_fields(self)  # NumPy scalars and arrays -> the Python values they equal (JSON stores them)
        from ..._validation import check_seeds

        # NumPy's RandomState and scikit-learn take seeds in [0, 2**32 - 1] only
        for name in ("target_seed", "seeds", "unbounded_seeds"):
            check_seeds(name, getattr(self, name))

        if not self.pieces_1d and not self.groups_2d:
            raise ValueError("`pieces_1d` and `groups_2d` must not both be empty (no targets), got () and ()")
        for count in self.pieces_1d:
            check_int("pieces_1d", count, low=1)
        for count in self.groups_2d:
            check_int("groups_2d", count, low=1)
        check_int("group_size_2d", self.group_size_2d, low=1)
        check_int("target_seed", self.target_seed, low=0)
        if not self.depths:
            raise ValueError("`depths` must list at least one depth, got ()")
        for depth in self.depths:
            check_int("depths", depth, low=1)
        if self.width is not None:
            check_int("width", self.width, low=1)
        if not self.seeds:
            raise ValueError("`seeds` must list at least one seed, got ()")
        for seed in self.seeds:
            check_int("seeds", seed, low=0)
        check_int("steps", self.steps, low=1)
        check_real("lr", self.lr, low=0.0, low_open=True)
        check_real("step", self.step, low=0.0, high=2.0, low_open=True, high_open=True)
        check_int("train_per_axis_1d", self.train_per_axis_1d, low=2)
        check_int("train_per_axis_2d", self.train_per_axis_2d, low=2)
        check_int("eval_per_axis_1d", self.eval_per_axis_1d, low=2)
        check_int("eval_per_axis_2d", self.eval_per_axis_2d, low=2)
        check_real("tolerance", self.tolerance, low=0.0, low_open=True)
        self._check_memory()
        if len(self.unbounded_widths) != len(self.unbounded_depths):
            raise ValueError(
                "`unbounded_widths` and `unbounded_depths` must have one entry per (width, depth) pair, got "
                f"{len(self.unbounded_widths)} and {len(self.unbounded_depths)}"
            )
        for width in self.unbounded_widths:
            check_int("unbounded_widths", width, low=1)
        for depth in self.unbounded_depths:
            check_int("unbounded_depths", depth, low=1)
        pairs = list(zip(self.unbounded_widths, self.unbounded_depths))
        if len(set(pairs)) != len(pairs) or any(b[0] < a[0] or b[1] < a[1] for a, b in zip(pairs, pairs[1:])):
            raise ValueError(
                f"`unbounded_widths` and `unbounded_depths` must give distinct (width, depth) pairs that grow "
                f"together (each ≥ the one before in both), got {pairs}"
            )
        if pairs and not self.unbounded_seeds:
            raise ValueError(
                "`unbounded_seeds` must list at least one seed when there are (width, depth) pairs, got ()"
            )
        for seed in self.unbounded_seeds:
            check_int("unbounded_seeds", seed, low=0)
        check_device(self.device)
        from ..._validation import check_distinct

        # a repeat gives two units one key, or runs (averages, counts) an entry twice
        for name in ("pieces_1d", "groups_2d", "depths", "seeds", "unbounded_seeds"):
            check_distinct(name, getattr(self, name))

    def _check_memory(self) -> None:
        """The sizes the targets and grids allocate (:mod:`structnets.constructive.lipschitz_targets`'s own
        checks), refused here: units() raised them after the run folder existed (a traceback out of
        ``structnets run lipschitz-density --set pieces_1d=1000000000000``)."""
        import math

        from ..._validation import check_fits_in_memory

        for count in self.pieces_1d:
            check_fits_in_memory(f"`pieces_1d` entry {count}", 4 * count, what="knots and values")
        for groups in self.groups_2d:
            check_fits_in_memory(
                f"`groups_2d` entry {groups} (`group_size_2d`={self.group_size_2d})",
                2 * groups * self.group_size_2d,
                what="slopes",
            )
        for name, dim, used in (
            ("train_per_axis_1d", 1, self.pieces_1d),
            ("eval_per_axis_1d", 1, self.pieces_1d),
            ("train_per_axis_2d", 2, self.groups_2d),
            ("eval_per_axis_2d", 2, self.groups_2d),
        ):
            points = getattr(self, name)
            if not used:
                continue  # no target of that dimension: the grid is never built
            if dim * math.log2(points) > 64:
                raise ValueError(f"`{name}`={points} asks for more than 2**64 grid points")
            check_fits_in_memory(f"`{name}`={points}", points**dim * dim, what="coordinates")


__all__ = ["LipschitzDensityConfig"]
