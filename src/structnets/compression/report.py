"""What :func:`structnets.compress` did: :class:`LayerCompression` rows and the :class:`CompressionReport`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from torch import nn

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class LayerCompression:
    """One layer that :func:`compress` looked at.

    Attributes:
        name: qualified module name in the compressed model (``model.get_submodule(name)``); a
            projection of an attention layer is named ``<attention>.q_proj`` / ``k_proj`` /
            ``v_proj`` / ``out_proj``.
        in_features, out_features: n and m of the layer's matrix W (for a convolution
            n = c_in·∏kernel_size, m = c_out).
        replaced: True when the layer was replaced.
        method: ``"lowrank"`` or ``"dlor"`` when replaced, else ``"dense"``.
        rank: the rank r used (None when kept dense).
        alpha: α of a DLoR layer (None otherwise).
        params_before, params_after: parameters of the layer, bias included.
        flops_before, flops_after: FLOPs per row (per input vector; per output position of a
            convolution), counted as :func:`structnets.analysis.cost` counts them (2 per
            multiply-add, 1 per bias add).
        relative_error: ‖W − Ŵ‖_F / ‖W‖_F of the new layer's matrix Ŵ against W, in float64 (0 when
            kept dense; 0 for W = 0).
        note: why a layer was kept dense or how it was treated, else ``""``.
        kind: ``"linear"``, ``"hf-conv1d"``, ``"conv1d"`` or ``"conv2d"``.
        rows: rows the layer was applied to in the calibration (or ``example_input``) pass, or None
            without data.
        output_error: ‖(W − Ŵ)X‖_F / ‖W X‖_F on the calibration rows X (the dense model's inputs
            to this layer), or None without calibration.
    """

    name: str
    in_features: int
    out_features: int
    replaced: bool
    method: str
    rank: int | None
    alpha: float | None
    params_before: int
    params_after: int
    flops_before: int
    flops_after: int
    relative_error: float
    note: str = ""
    kind: str = "linear"
    rows: int | None = None
    output_error: float | None = None


@dataclass(frozen=True)
class CompressionReport:
    """What :func:`compress` did.

    Attributes:
        model: the compressed model (a copy of the input unless ``inplace=True``).
        layers: one :class:`LayerCompression` per compressible layer, in module order.
        method: ``"lowrank"`` or ``"dlor"``.
        skipped: ``(name, reason)`` for every module holding weights that was left alone (layers
            that did not qualify, embeddings, normalisations, tied heads, ...).
        calibrated: whether calibration data chose the factors (whitened truncation).
        ridge: the relative ridge of the whitening (λ = ridge·tr(XXᵀ)/n per layer), or None.
        budget: ``("flops", f)`` or ``("params", f)`` for a model-wide budget, else None.
        budget_before, budget_after: the budgeted measure summed over the compressible layers
            (FLOPs of one pass over the calibration / example data, or parameters), or None.
        model_params_before, model_params_after: parameters of the whole model.
        model_flops_before, model_flops_after: FLOPs of one forward pass of the whole model on the
            first calibration (or example) batch, counted by ``torch.utils.flop_counter``
            (matrix products and convolutions, 2 per multiply-add; bias adds and elementwise
            operations are not counted), or None without data.
        notes: model-wide remarks (fallbacks, flags changed).
    """

    model: nn.Module
    layers: tuple[LayerCompression, ...]
    method: str
    skipped: tuple[tuple[str, str], ...] = ()
    calibrated: bool = False
    ridge: float | None = None
    budget: tuple[str, float] | None = None
    budget_before: int | None = None
    budget_after: int | None = None
    model_params_before: int | None = None
    model_params_after: int | None = None
    model_flops_before: int | None = None
    model_flops_after: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def params_before(self) -> int:
        """Parameters of the compressible layers before compression."""
        return sum(layer.params_before for layer in self.layers)

    @property
    def params_after(self) -> int:
        """Parameters of the same layers after compression."""
        return sum(layer.params_after for layer in self.layers)

    @property
    def flops_before(self) -> int:
        """FLOPs per row of the compressible layers before compression (summed over layers)."""
        return sum(layer.flops_before for layer in self.layers)

    @property
    def flops_after(self) -> int:
        """FLOPs per row of the same layers after compression."""
        return sum(layer.flops_after for layer in self.layers)

    @property
    def reached(self) -> float | None:
        """``budget_after / budget_before``: the fraction of the budgeted measure reached, or None."""
        if self.budget_before is None or self.budget_after is None or self.budget_before == 0:
            return None
        return self.budget_after / self.budget_before

    def plan(self) -> dict[str, dict[str, Any]]:
        """The structure of the compressed model, JSON-serialisable: ``{name: {kind, method, rank}}``
        for every replaced layer; with the dense model it rebuilds the factorised skeleton
        (:func:`structnets.compression.skeleton`) into which a compressed state dict loads."""
        return {
            row.name: {"kind": row.kind, "method": row.method, "rank": row.rank} for row in self.layers if row.replaced
        }

    def to_frame(self) -> pd.DataFrame:
        """The per-layer report as a ``pandas.DataFrame``, one row per :class:`LayerCompression`."""
        import pandas as pd

        return pd.DataFrame([asdict(layer) for layer in self.layers])

    def summary(self) -> str:
        """A few lines of text: whole-model and compressible-layer parameters and FLOPs, the budget."""
        lines = []
        if self.model_params_before is not None and self.model_params_after is not None:
            lines.append(
                f"model parameters {self.model_params_before:,} → {self.model_params_after:,} "
                f"({self.model_params_after / max(self.model_params_before, 1):.3f})"
            )
        if self.model_flops_before is not None and self.model_flops_after is not None:
            lines.append(
                f"model FLOPs (one batch, torch.utils.flop_counter) {self.model_flops_before:,} → "
                f"{self.model_flops_after:,} ({self.model_flops_after / max(self.model_flops_before, 1):.3f})"
            )
        replaced = sum(row.replaced for row in self.layers)
        lines.append(
            f"{replaced} of {len(self.layers)} compressible layers replaced ({self.method}"
            + (", calibrated" if self.calibrated else "")
            + f"); their parameters {self.params_before:,} → {self.params_after:,}"
        )
        if self.budget is not None and self.reached is not None:
            lines.append(f"budget {self.budget[0]}={self.budget[1]}: reached {self.reached:.4f}")
        lines.extend(f"skipped {name}: {reason}" for name, reason in self.skipped)
        lines.extend(self.notes)
        return "\n".join(lines)


def count_parameters(model: nn.Module) -> int:
    """Elements of ``model.parameters()`` (shared parameters once)."""
    return sum(p.numel() for p in model.parameters())


def count_flops(model: nn.Module, run: Any) -> int:
    """FLOPs of ``run()`` (one forward pass) as ``torch.utils.flop_counter.FlopCounterMode`` counts them."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        run()
    return int(counter.get_total_flops())


__all__ = ["CompressionReport", "LayerCompression"]
