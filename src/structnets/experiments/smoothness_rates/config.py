"""Configuration of ``smoothness-rates``: the config dataclass, its cells and the width for a parameter budget."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

ACTIVATIONS = ("relu", "tanh", "gelu", "silu")
SMOOTH = ("tanh", "gelu", "silu")
PARTS = ("estimation", "approximation", "relu-floor")
SUPPLEMENT_FIELDS = ("parts", "approx_parameters", "approx_targets", "depths")
"""Config fields in which a supplementary run folder may differ from the run it extends (the claims table
merges such folders: same experiment, every other field equal, no unit key in both)."""


@dataclass(frozen=True)
class SmoothnessRatesConfig:
    """Configuration of ``smoothness-rates``; ``SmoothnessRatesConfig()`` is the full run.

    Attributes:
        targets: (d, s) pairs; each is a lacunary target of smoothness s on [0,1]^d.
        sizes: training-set sizes n (estimation part), a log grid.
        seeds: repetitions (data, noise and initialisation).
        depths: numbers of weight layers L (2 = one hidden layer).
        activations: subset of relu, tanh, gelu, silu.
        noise: σ of the Gaussian label noise.
        budget: c_N in N ≈ c_N n^{d/(2s+d)} (see :func:`estimation_width`).
        steps: full-batch Adam steps of the first phase (cosine-decayed learning rate from ``lr``).
        lr: initial Adam learning rate.
        lbfgs_iters: budget of the second phase, per-member full-batch L-BFGS in float64, in batched
            loss-and-gradient evaluations (a member that backtracks spends one without moving;
            converged members are frozen).
        ftol: relative loss-change tolerance of the L-BFGS convergence test.
        settle_tol: a member counts as *settled* (optimisation not limiting its error) if L-BFGS
            converged, or if the training MSE gained in the second half of the L-BFGS budget is at
            most settle_tol × its measured error (excess risk, or noiseless test MSE).
        min_width: smallest hidden width of the estimation part.
        separation_cells: extra estimation cells ``"d:s:L"`` (L = weight layers) run at that one
            depth, where the ReLU cap predicts a slower rate in n than smooth activations
            (L < s); e.g. ``"1:3:2"``. Settable as ``--set separation_cells=1:3:2,2:4:2``.
        approx_targets: (d, s) pairs of the approximation part; s > L (weight layers) is where the
            ReLU depth cap −min(L, s)/d binds (e.g. s = 3 at L = 2: cap −2 against −3).
        approx_parameters: parameter counts N of the approximation part (a log grid; the width is
            solved from N at each depth, so the depths are compared at equal N). The full preset
            spans one decade, 40–400 in five even log steps; its earlier grid 40–640 cost 36 % of
            the run's unit time in the four N = 640 units alone (Levenberg–Marquardt's JᵀJ grows as
            P²), so ``docs/smoothness.md`` compares both runs' tables.
        lm_iters: budget of an optional third phase of the estimation part, per-member
            Levenberg–Marquardt (0: none; the estimation part uses L-BFGS).
        approx_steps: Adam steps of the approximation part.
        approx_lbfgs_iters: L-BFGS budget of the approximation part (0: none).
        approx_lm_iters: Levenberg–Marquardt budget of the approximation part, after Adam (and
            L-BFGS if any): exact Gauss–Newton curvature, which the noiseless fits need to get
            below the training errors where first-order methods and L-BFGS stall.
        floor_max_pieces: the certified ReLU floor (d = 1 targets) is computed exactly for piece
            bounds up to this many; above it the reported floor is 0 (valid, vacuous).
        approx_train: training points of the approximation part (noiseless).
        approx_seeds: seeds of the approximation part.
        levels: dyadic levels K of the lacunary targets.
        directions: ``"dense"`` (2^{k(d−1)} random wave directions at level k, ~2^{kd} degrees of
            freedom like a generic function of smoothness s) or ``"one"`` (one direction per level:
            every level a ridge function, effectively a one-dimensional problem for a network);
            see :func:`structnets.data.lacunary_target`. The same for d = 1.
        input_scale: first-layer initialisation scale (see :func:`fit_rates_ensemble`).
        test_points: fresh test points per unit.
        parts: which kinds of unit the run makes (a subset of ``estimation``, ``approximation``,
            ``relu-floor``; default all). A run of some parts only extends an earlier run's grid
            with extra units at unchanged keys and params, into its own folder, e.g. the N = 640
            end of the earlier 40–640 approximation grid:
            ``--set parts=approximation,relu-floor approx_parameters=640``; ``structnets claims``
            reads such a folder beside the full run (:data:`SUPPLEMENT_FIELDS`).
        device: where the units train: ``"cpu"`` (default), ``"cuda"`` (``"cuda:N"``) or ``"auto"``
            (``structnets run --device``; the runner resolves ``auto``). CPU units keep the params
            of runs stored before this field existed; keys, seeds and data never depend on it
            (models and data are built on the CPU, then moved), and numbers agree across devices
            up to floating-point rounding (amplified, like any rounding change, along the
            non-converged members' trajectories).
    """

    supplement_fields: ClassVar[tuple[str, ...]] = SUPPLEMENT_FIELDS

    targets: tuple[tuple[int, float], ...] = ((1, 1.0), (2, 2.0))
    separation_cells: tuple[str, ...] = ("1:3:2", "2:4:2")
    sizes: tuple[int, ...] = (50, 100, 200, 500, 1000, 2000, 5000)
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    depths: tuple[int, ...] = (2, 6)
    activations: tuple[str, ...] = ACTIVATIONS
    noise: float = 0.1
    budget: float = 8.0
    steps: int = 300
    lr: float = 1e-2
    lbfgs_iters: int = 2500
    ftol: float = 1e-9
    settle_tol: float = 0.1
    input_scale: float = 10.0
    min_width: int = 6
    approx_targets: tuple[tuple[int, float], ...] = ((1, 3.0), (2, 3.0))
    approx_parameters: tuple[int, ...] = (40, 71, 126, 225, 400)
    lm_iters: int = 0
    approx_steps: int = 300
    approx_lbfgs_iters: int = 0
    approx_lm_iters: int = 1000
    floor_max_pieces: int = 600
    approx_train: int = 2048
    approx_seeds: tuple[int, ...] = (0, 1, 2)
    levels: int = 10
    directions: str = "dense"
    test_points: int = 4096
    parts: tuple[str, ...] = PARTS
    device: str = "cpu"

    @classmethod
    def quick(cls) -> SmoothnessRatesConfig:
        """The ``--quick`` preset: d = 1, s = 1, 6 sizes over two decades, 5 seeds, short training."""
        return cls(
            targets=((1, 1.0),),
            sizes=(20, 50, 125, 300, 800, 2000),
            steps=150,
            lbfgs_iters=450,
            levels=8,
            separation_cells=("1:3:2",),
            approx_targets=((1, 3.0),),
            approx_parameters=(40, 120, 360),
            approx_steps=150,
            approx_lm_iters=300,
            approx_train=512,
            approx_seeds=(0, 1),
            test_points=2048,
        )

    def __post_init__(self) -> None:
        from ..._validation import plain_fields

        plain_fields(self)  # NumPy scalars and arrays -> the Python values they equal (JSON stores them)
        from ..._validation import check_seeds

        # NumPy's RandomState and scikit-learn take seeds in [0, 2**32 - 1] only
        for name in ("seeds", "approx_seeds"):
            check_seeds(name, getattr(self, name))
        from ..._validation import check_choice, check_int, check_real
        from ...training.device import check_device

        cells = parse_separation_cells(self.separation_cells)
        if not self.targets and not cells:
            raise ValueError("`targets` must list at least one (d, s) pair when `separation_cells` is empty, got ()")
        for d, s in self.targets:
            check_int("targets", d, low=1)
            check_real("targets", s, low=0.0, low_open=True)
        for n in self.sizes:
            check_int("sizes", n, low=10)
        for depth in self.depths:
            check_int("depths", depth, low=2)
        for name in self.activations:
            check_choice("activations", name, ACTIVATIONS)
        if not (self.seeds and self.sizes and self.depths and self.activations):
            raise ValueError("`seeds`, `sizes`, `depths` and `activations` must be non-empty")
        check_real("noise", self.noise, low=0.0)
        check_real("budget", self.budget, low=0.0, low_open=True)
        check_int("steps", self.steps, low=0)
        check_real("lr", self.lr, low=0.0, low_open=True)
        check_int("lbfgs_iters", self.lbfgs_iters, low=0)
        check_real("ftol", self.ftol, low=0.0)
        check_real("settle_tol", self.settle_tol, low=0.0)
        check_int("min_width", self.min_width, low=1)
        # 0 test points gave a NaN test error, 0 training points no fit, input_scale <= 0 a first layer of
        # zeros (or a reflected one), levels outside [1, 65536] a failure inside lacunary_target
        check_int("test_points", self.test_points, low=1)
        check_int("approx_train", self.approx_train, low=1)
        check_real("input_scale", self.input_scale, low=0.0, low_open=True)
        check_int("levels", self.levels, low=1, high=65536)
        check_int("approx_steps", self.approx_steps, low=0)
        check_int("approx_lbfgs_iters", self.approx_lbfgs_iters, low=0)
        check_int("lm_iters", self.lm_iters, low=0)
        check_int("approx_lm_iters", self.approx_lm_iters, low=0)
        check_int("floor_max_pieces", self.floor_max_pieces, low=1)
        check_choice("directions", self.directions, ("one", "dense"))
        if not self.parts:
            raise ValueError(f"`parts` must name at least one of {list(PARTS)}, got ()")
        for part in self.parts:
            check_choice("parts", part, PARTS)
        check_device(self.device)
        for d, s in self.approx_targets:
            check_int("approx_targets", d, low=1)
            check_real("approx_targets", s, low=0.0, low_open=True)
        for N in self.approx_parameters:
            check_int("approx_parameters", N, low=8)
        # the approximation and relu-floor parts make one unit per (approx target, depth, N), each fitting
        # every approx seed. Units of no seed cannot run: refused. With every part (the default), an empty
        # approx_targets or approx_parameters means "no such units", as documented runs used it
        # (docs/smoothness.md, c_N = 32); a part named on its own must make units (as rank-bounds' parts)
        if "approximation" in self.parts and self.approx_targets and self.approx_parameters and not self.approx_seeds:
            raise ValueError("`approx_seeds` must not be empty when `parts` includes approximation, got ()")
        if set(self.parts) != set(PARTS):
            named = "approximation" if "approximation" in self.parts else "relu-floor"
            for name in ("approx_targets", "approx_parameters"):
                if named in self.parts and not getattr(self, name):
                    raise ValueError(f"`{name}` must not be empty when `parts` names {named!r}, got ()")
        from ..._validation import check_distinct

        # a repeat gives two units one key, or runs (averages, counts) an entry twice
        for name in (
            "targets",
            "separation_cells",
            "sizes",
            "seeds",
            "depths",
            "activations",
            "approx_targets",
            "approx_parameters",
            "approx_seeds",
            "parts",
        ):
            check_distinct(name, getattr(self, name))
        self._check_targets()
        self._check_widths()

    def _check_targets(self) -> None:
        """Refuse ``levels`` whose dense lacunary target cannot be built for some d of the run.

        A dense target has 2^{k(d−1)} waves at level k: levels=18 at d = 2 (262,143 waves, above the
        generator's limit) was accepted, and every unit of d = 2 then failed after the run folder existed.
        """
        from ...data import lacunary_target

        dims = {d for d, _ in self.targets} | {d for d, _, _ in parse_separation_cells(self.separation_cells)}
        dims |= {d for d, _ in self.approx_targets}
        for d in sorted(dims):
            try:
                lacunary_target(d, 1.0, levels=self.levels, seed=0, directions=self.directions)
            except ValueError as error:
                raise ValueError(f"`levels`={self.levels} cannot build the target for d={d}: {error}") from None

    def _check_widths(self) -> None:
        """Refuse a ``budget`` (with ``sizes``) whose estimation networks overflow or cannot fit in memory.

        units() computes each width from budget·n^{d/(2s+d)}: budget=1e300 raised an OverflowError out of
        it after the run folder existed.
        """
        from ..._validation import check_fits_in_memory

        if "estimation" not in self.parts or not self.sizes:
            return
        for d, s, depth in estimation_cells(self):
            for n in self.sizes:
                try:
                    width = estimation_width(
                        n, d, s, depth, budget=self.budget, min_width=self.min_width, n_min=min(self.sizes)
                    )
                except (OverflowError, ValueError):  # inf·… or an inf square root
                    raise ValueError(
                        f"`budget`={self.budget} makes the estimation width at n={n}, d={d}, s={s:g}, L={depth} "
                        f"overflow; reduce it"
                    ) from None
                check_fits_in_memory(  # one float64 network per (activation, seed) member of the unit's ensemble
                    f"`budget`={self.budget} (n={n}, d={d}, s={s:g}, L={depth})",
                    parameter_count(d, width, depth) * len(self.activations) * len(self.seeds),
                    what="float64 parameters",
                )


def parse_separation_cells(cells: tuple[str, ...]) -> list[tuple[int, float, int]]:
    """Parse ``"d:s:L"`` strings into (d, s, weight layers); a ValueError names the bad cell."""
    out = []
    for cell in cells:
        parts = str(cell).split(":")
        try:
            d, s, depth = int(parts[0]), float(parts[1]), int(parts[2])
            if len(parts) != 3 or d < 1 or not (s > 0 and math.isfinite(s)) or depth < 2:
                raise ValueError
        except (ValueError, IndexError):
            raise ValueError(
                f"`separation_cells` entries must be 'd:s:L' with int d >= 1, float s > 0 and int L >= 2, got {cell!r}"
            ) from None
        out.append((d, s, depth))
    return out


def estimation_cells(config: SmoothnessRatesConfig) -> list[tuple[int, float, int]]:
    """(d, s, L) of every estimation cell: targets × depths, then the separation cells (no repeats)."""
    cells = [(d, float(s), depth) for d, s in config.targets for depth in config.depths]
    for cell in parse_separation_cells(config.separation_cells):
        if cell not in cells:
            cells.append(cell)
    return cells


def width_for_parameters(N: float, d: int, depth: int) -> int:
    """The width w whose MLP (d → w → … → w → 1, ``depth`` weight layers) has about N parameters.

    Parameters: (d+1)w + (depth−2)(w+1)w + (w+1); solved for w (≥ 2).
    """
    a = depth - 2
    b = d + 1 + a + 1
    c = 1 - N
    w = -c / b if a == 0 else (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)
    return max(2, round(w))


def parameter_count(d: int, width: int, depth: int) -> int:
    """Exact parameter count of the MLP d → width × (depth − 1) → 1."""
    return (d + 1) * width + (depth - 2) * (width + 1) * width + width + 1


def estimation_width(n: int, d: int, s: float, depth: int, *, budget: float, min_width: int, n_min: int) -> int:
    """Hidden width of the estimation part: parameter budget N(n) ∝ n^{d/(2s+d)}, solved for width.

    N(n) = N₀·(n/n_min)^{d/(2s+d)} with N₀ = max(budget·n_min^{d/(2s+d)}, parameters of the
    ``min_width`` network). Equal to budget·n^{d/(2s+d)} (the theory's choice, Liu et al.) when the
    minimum width does not bind; otherwise the same growth in n from the smallest network that is
    allowed, so the width still grows with n at every depth (a plain max(min_width, ·) would pin
    deep networks at min_width for every n).
    """
    exponent = d / (2 * s + d)
    N0 = max(budget * n_min**exponent, parameter_count(d, min_width, depth))
    return max(min_width, width_for_parameters(N0 * (n / n_min) ** exponent, d, depth))


__all__ = [
    "ACTIVATIONS",
    "PARTS",
    "SMOOTH",
    "SUPPLEMENT_FIELDS",
    "SmoothnessRatesConfig",
    "estimation_width",
    "parameter_count",
    "parse_separation_cells",
    "width_for_parameters",
]
