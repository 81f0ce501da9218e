"""``rank-bounds`` configuration: the grid, the training options and the paper's claims."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

DATASETS: tuple[str, ...] = ("mnist", "rice")
TRAIN_ROWS: dict[str, int] = {"mnist": 60_000, "rice": 3_048}
"""Rows of each data set's training split (MNIST's official 60,000; Rice's stratified 80 %)."""
PARTS: tuple[str, ...] = ("mlp", "deep-linear", "fixed-norm")
"""The kinds of unit: trained ReLU MLPs, deep linear nets, and the fixed-norm depth sweep (no training)."""
SUPPLEMENT_FIELDS: tuple[str, ...] = ("parts",)
"""Config fields in which a supplementary run folder may differ from the run it extends (the claims table
merges such folders: same experiment, every other field equal, no unit key in both)."""

PAPER_CLAIMS: tuple[tuple[str, str], ...] = (
    (
        "bottleneck",
        "Trained nets show a bottleneck rank: hidden activations become approximately low-rank, "
        "more so with depth (Sec. 1).",
    ),
    (
        "weight-decay",
        "Weight decay favours low rank: for linear nets Σ‖W_i‖_F² ≥ L‖Π W_i‖_{S_{2/L}}^{2/L}, with "
        "equality at the weight-decay optimum (Sec. 1).",
    ),
    (
        "width-scaling",
        "Sample complexity Õ(W r L²) for small p (linear in width W) vs Õ(W² L) for norm-based "
        "bounds (quadratic in W) (abstract, Sec. 4).",
    ),
    (
        "ordering",
        "The rank-sparse bound beats spectral/Frobenius/PAC-Bayes bounds when r ≪ W (×√W at "
        "r = √W, ×W at r = O(1)) (Sec. 4).",
    ),
)


@dataclass(frozen=True)
class RankBoundsConfig:
    """Configuration of ``rank-bounds``; ``RankBoundsConfig()`` is the full run.

    The full run is sized for two cores (docs/rank_bounds.md, Run time: 189 units, about 3,500
    CPU seconds, projected 29 min with ``--jobs 2`` on two idle cores): 20,000 seeded MNIST training rows (all 3,048 of Rice), 20 epochs, one
    seed, widths 64–1024, depths 2/4/8, weight decay 0/1e-4/1e-3, dense and rank-16 nets.

    Attributes:
        datasets: names from :data:`DATASETS`.
        widths: hidden widths W.
        depths: numbers of weight matrices L (≥ 2; L − 1 hidden layers).
        weight_decays: L2 penalty coefficients passed to Adam.
        ranks: model variants: None is the dense MLP; an int r makes every layer but the output
            a :class:`structnets.nn.LowRankLinear` of rank min(r, W) (an exactly rank-sparse net).
        seeds: initialisation/shuffling seeds.
        n_train, n_test: cap on training/test rows (a seeded subsample; None keeps all).
        epochs, batch_size, lr: training options of :func:`structnets.training.fit`.
        rank_checkpoints: how many times (evenly spaced epochs, last included) ranks are recorded.
        rank_rtol: relative threshold of the weights' and activations' numerical rank
            (``#{σ_i > rank_rtol · σ_1}``).
        probe_size: training rows on which activation ranks are measured.
        margin_quantile: the margin γ is this quantile of the training margins.
        ps: Schatten exponents of the rank-sparse bounds.
        delta: confidence parameter of every bound.
        sample_target: complexity level defining each bound's sample complexity.
        linear_depths: depths of the deep *linear* networks (no activation) trained by
            full-batch gradient descent with weight decay on a synthetic rank-3 regression, where
            theory predicts Σ‖W_i‖_F² = L‖ΠW_i‖_{S_{2/L}}^{2/L} at the optimum (empty: none).
        linear_weight_decays: their weight-decay coefficients λ (loss + λ/2 Σ‖W_i‖_F²).
        linear_width: their width (= input and output dimension).
        linear_steps, linear_lr: gradient steps and step size (0.05 is unstable at depth 8:
            the loss stalls at 2.4 with gradient norm 6; 0.02 converges at every depth).
        norm_depths: depths L of the fixed-norm sweep (:mod:`.fixed_norm`: L alike rank-r W×W layers,
            each of spectral norm s̄, no training; the depth form of the bounds at fixed per-layer
            norm and margin); empty: none.
        norm_spectral: the per-layer spectral norms s̄ of that sweep (1 is the baseline: K = e·B,
            constant in L).
        norm_width, norm_rank: its W and r.
        norm_seeds: its seeds (the layers' singular vectors and values v_j ~ U(0.5, 1)).
        norm_margin: its margin γ (inputs of norm B = 1, zero margin loss).
        norm_n: its n (the bound's value only; the sample complexity does not depend on it).
        parts: which kinds of unit the run makes (a subset of :data:`PARTS`, default all); a run of
            some parts only (e.g. ``--set parts=fixed-norm``) supplements a full run of the same
            config in its own folder, and ``structnets claims`` reads both (:data:`SUPPLEMENT_FIELDS`).
        device: where the MLP units train: ``"cpu"`` (default), ``"cuda"`` (``"cuda:N"``) or
            ``"auto"`` (``structnets run --device``; the runner resolves ``auto`` and checks that
            CUDA is there). Models are built and data drawn on the CPU from their seeds, then
            moved, so seeds and unit keys do not depend on the device; ranks and bounds are
            measured on the CPU, and numbers agree across devices up to floating-point rounding.
            The deep linear units (16 × 16 matrices) always run on the CPU.
    """

    supplement_fields: ClassVar[tuple[str, ...]] = SUPPLEMENT_FIELDS

    datasets: tuple[str, ...] = DATASETS
    widths: tuple[int, ...] = (64, 128, 256, 512, 1024)
    depths: tuple[int, ...] = (2, 4, 8)
    weight_decays: tuple[float, ...] = (0.0, 1e-4, 1e-3)
    ranks: tuple[int | None, ...] = (None, 16)
    seeds: tuple[int, ...] = (0,)
    n_train: int | None = 20_000
    n_test: int | None = None
    epochs: int = 20
    batch_size: int = 256
    lr: float = 1e-3
    rank_checkpoints: int = 4
    rank_rtol: float = 1e-2
    probe_size: int = 1000
    margin_quantile: float = 0.1
    ps: tuple[float, ...] = (0.0, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0)
    delta: float = 0.05
    sample_target: float = 0.1
    linear_depths: tuple[int, ...] = (2, 4, 8)
    linear_weight_decays: tuple[float, ...] = (0.0, 1e-3, 1e-2)
    linear_width: int = 16
    linear_steps: int = 20_000
    linear_lr: float = 0.02
    norm_depths: tuple[int, ...] = (2, 4, 8, 16, 32)
    norm_spectral: tuple[float, ...] = (1.0, 2.0)
    norm_width: int = 32
    norm_rank: int = 4
    norm_seeds: tuple[int, ...] = (0, 1, 2)
    norm_margin: float = 1.0
    norm_n: int = 10_000
    parts: tuple[str, ...] = PARTS
    device: str = "cpu"

    @classmethod
    def quick(cls) -> RankBoundsConfig:
        """The ``--quick`` preset: 2,000 training rows, widths 64–256, depths 2 and 4, 12 epochs."""
        return cls(
            widths=(64, 128, 256),
            depths=(2, 4),
            weight_decays=(0.0, 1e-3),
            ranks=(None, 8),
            seeds=(0,),
            n_train=2000,
            n_test=2000,
            epochs=12,
            batch_size=128,
            rank_checkpoints=4,
            probe_size=500,
            linear_weight_decays=(0.0, 1e-2),
            linear_steps=12_000,  # (1 − ηλ)^{2·steps} = 0.008: converged by the prediction
            norm_depths=(2, 4, 8),
            norm_seeds=(0, 1),
        )

    def __post_init__(self) -> None:
        from ..._validation import plain_fields

        plain_fields(self)  # NumPy scalars and arrays -> the Python values they equal (JSON stores them)
        from ..._validation import check_seeds

        # NumPy's RandomState and scikit-learn take seeds in [0, 2**32 - 1] only
        for name in ("seeds", "norm_seeds"):
            check_seeds(name, getattr(self, name))
        from ..._validation import check_int, check_real
        from ...training.device import check_device

        unknown = [name for name in self.datasets if name not in DATASETS]
        if unknown or not self.datasets:
            raise ValueError(f"`datasets` must be a non-empty subset of {list(DATASETS)}, got {self.datasets!r}")
        for name in ("widths", "depths", "weight_decays", "ranks", "seeds", "ps"):
            if not getattr(self, name):
                raise ValueError(f"`{name}` must be non-empty, got {getattr(self, name)!r}")
        for width in self.widths:
            check_int("widths", width, low=2)
        for depth in self.depths:
            check_int("depths", depth, low=2)
        for decay in self.weight_decays:
            check_real("weight_decays", decay, low=0.0)
        for seed in self.seeds:
            check_int("seeds", seed, low=0)
        for rank in self.ranks:
            if rank is not None:
                check_int("ranks", rank, low=1)
        for p in self.ps:
            check_real("ps", p, low=0.0)
        if self.n_train is not None:
            check_int("n_train", self.n_train, low=50)
        if self.n_test is not None:
            check_int("n_test", self.n_test, low=10)
        check_int("epochs", self.epochs, low=1)
        from ..._validation import check_network_fits

        for width in self.widths:
            check_network_fits(
                f"`widths` entry {width} (`depths` up to {max(self.depths)})", width, max(self.depths), 784
            )
        check_int("batch_size", self.batch_size, low=1)
        check_real("lr", self.lr, low=0.0, low_open=True)
        check_int("rank_checkpoints", self.rank_checkpoints, low=1)
        check_real("rank_rtol", self.rank_rtol, low=0.0, high=1.0, high_open=True)
        check_int("probe_size", self.probe_size, low=10)
        # the probe is X_train[:probe_size]: more rows than the training set has would silently shrink it
        for name in self.datasets:
            rows = TRAIN_ROWS[name] if self.n_train is None else min(TRAIN_ROWS[name], self.n_train)
            if self.probe_size > rows:
                raise ValueError(
                    f"`probe_size` must be at most the training rows of every data set ({name!r} has {rows}"
                    f"{'' if self.n_train is None else f' with n_train={self.n_train}'}), got {self.probe_size}"
                )
        check_real("margin_quantile", self.margin_quantile, low=0.0, high=1.0, low_open=True, high_open=True)
        check_real("delta", self.delta, low=0.0, high=1.0, low_open=True, high_open=True)
        check_real("sample_target", self.sample_target, low=0.0, high=8.0, low_open=True, high_open=True)
        for depth in self.linear_depths:
            check_int("linear_depths", depth, low=2)
        if self.linear_depths and not self.linear_weight_decays:
            raise ValueError(f"`linear_weight_decays` must be non-empty, got {self.linear_weight_decays!r}")
        for decay in self.linear_weight_decays:
            check_real("linear_weight_decays", decay, low=0.0)
        check_int("linear_width", self.linear_width, low=4)
        check_int("linear_steps", self.linear_steps, low=1)
        check_real("linear_lr", self.linear_lr, low=0.0, low_open=True)
        for depth in self.norm_depths:
            check_int("norm_depths", depth, low=1)
        if self.norm_depths and not (self.norm_spectral and self.norm_seeds):
            raise ValueError(
                f"`norm_spectral` and `norm_seeds` must be non-empty when `norm_depths` is, got "
                f"{self.norm_spectral!r} and {self.norm_seeds!r}"
            )
        for norm in self.norm_spectral:
            check_real("norm_spectral", norm, low=0.0, low_open=True)
        check_int("norm_width", self.norm_width, low=2)
        check_int("norm_rank", self.norm_rank, low=1, high=self.norm_width)
        for seed in self.norm_seeds:
            check_int("norm_seeds", seed, low=0)
        check_real("norm_margin", self.norm_margin, low=0.0, low_open=True)
        check_int("norm_n", self.norm_n, low=2)
        if not self.parts:
            raise ValueError(f"`parts` must name at least one of {list(PARTS)}, got ()")
        for part in self.parts:
            if part not in PARTS:
                raise ValueError(f"`parts` entries must be in {list(PARTS)}, got {part!r}")
        if set(self.parts) != set(PARTS):  # a part asked for by name must make units (all parts: empty is none)
            for part, field in (("deep-linear", "linear_depths"), ("fixed-norm", "norm_depths")):
                if part in self.parts and not getattr(self, field):
                    raise ValueError(
                        f"`{field}` must not be empty when `parts` names {part!r} (the part would make no unit), "
                        f"got () with parts={self.parts!r}"
                    )
        check_device(self.device)
        from ..._validation import check_distinct

        # a repeat gives two units one key, or runs (averages, counts) an entry twice
        for name in (
            "datasets",
            "widths",
            "depths",
            "weight_decays",
            "ranks",
            "seeds",
            "ps",
            "linear_depths",
            "linear_weight_decays",
            "norm_depths",
            "norm_spectral",
            "norm_seeds",
            "parts",
        ):
            check_distinct(name, getattr(self, name))


def _p_column(p: float) -> str:
    """Result-column prefix of the rank-sparse bound at Schatten exponent p: ``rs0_05`` for p = 0.05."""
    return "rs" + f"{p:g}".replace(".", "_")
