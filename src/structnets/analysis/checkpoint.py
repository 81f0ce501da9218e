"""Safe loading of saved model states and the per-layer spectrum table of a model.

Checkpoints are read with ``torch.load(weights_only=True)`` only: the unpickler then accepts
tensors and plain containers and refuses arbitrary Python objects, so analysing a file cannot
execute code from it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from .dense_matrices import dense_matrices, linear_layers
from .spectral import effective_rank, numerical_rank, schatten_norm, singular_values, stable_rank

__all__ = ["LayerSpectrum", "format_spectrum_table", "load_state_dict", "spectrum_table"]


def load_state_dict(path: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """Load a model state dict saved with ``torch.save(model.state_dict(), path)``.

    Also accepts a dict whose ``"state_dict"`` or ``"model"`` entry is the state dict (the common
    training-checkpoint layout). Loading uses ``torch.load(path, map_location="cpu",
    weights_only=True)``.

    Args:
        path: the ``.pt``/``.pth`` file.

    Returns:
        an ordered ``{parameter name: tensor}`` dict.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file cannot be read as a weights-only pickle, or is not a mapping from
            names to tensors.
    """
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"`path` must be a str or os.PathLike, got {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {str(path)!r} does not exist or is not a file")
    try:
        content = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises UnpicklingError, RuntimeError, EOFError, ...
        raise ValueError(
            f"checkpoint {str(path)!r} cannot be loaded with torch.load(weights_only=True): "
            f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        ) from error
    if isinstance(content, Mapping):
        for key in ("state_dict", "model"):
            inner = content.get(key)
            if isinstance(inner, Mapping):
                content = inner
                break
    if not isinstance(content, Mapping) or not content:
        raise ValueError(
            f"checkpoint {str(path)!r} is not a state dict: expected a non-empty mapping from "
            f"parameter names to tensors, got {type(content).__name__}"
        )
    bad = [str(k) for k, v in content.items() if not isinstance(k, str) or not isinstance(v, torch.Tensor)]
    if bad:
        raise ValueError(
            f"checkpoint {str(path)!r} is not a state dict: entries {bad[:5]} are not "
            "name → tensor pairs"
        )
    return dict(content)


@dataclass(frozen=True)
class LayerSpectrum:
    """Spectral summary of one layer matrix A (m × n).

    Attributes:
        name: the layer's qualified name (module path, or state-dict prefix).
        rows, cols: m and n.
        spectral_norm: σ_1 = ‖A‖_2.
        frobenius_norm: ‖A‖_F = ‖A‖_{S_2}.
        nuclear_norm: ‖A‖_* = ‖A‖_{S_1}.
        schatten: ``{p: ‖A‖_{S_p}^p}`` for the requested p (the rank-sparse bounds' quantity).
        rank: numerical rank at ``rtol`` (``#{σ_i > rtol σ_1}``).
        stable_rank: ‖A‖_F²/‖A‖_2².
        effective_rank: exp of the entropy of σ/Σσ.
        smallest_singular_value: σ_min(m, n).
        top_singular_values: the largest few σ_i, descending.
    """

    name: str
    rows: int
    cols: int
    spectral_norm: float
    frobenius_norm: float
    nuclear_norm: float
    schatten: dict[float, float]
    rank: int
    stable_rank: float
    effective_rank: float
    smallest_singular_value: float
    top_singular_values: tuple[float, ...]

    def row(self) -> dict[str, float | int | str]:
        """A flat dict (one column per Schatten exponent, ``schatten_p=0.5`` …)."""
        flat = asdict(self)
        schatten = flat.pop("schatten")
        flat["top_singular_values"] = ", ".join(f"{v:.4g}" for v in self.top_singular_values)
        for p, value in schatten.items():
            flat[f"schatten_p={p:g}"] = value
        return flat


def _state_dict_matrices(state: Mapping[str, torch.Tensor]) -> list[tuple[str, torch.Tensor]]:
    """Layer matrices of a state dict: ``*.weight`` (2-D) and ``U @ V`` for ``*.U``/``*.V`` pairs."""
    layers: list[tuple[str, torch.Tensor]] = []
    seen_lowrank: set[str] = set()
    for key, value in state.items():
        prefix, _, leaf = key.rpartition(".")
        if leaf == "weight" and value.ndim == 2:
            layers.append((prefix or key, value))
        elif leaf in ("U", "V") and prefix not in seen_lowrank:
            u, v = state.get(f"{prefix}.U" if prefix else "U"), state.get(f"{prefix}.V" if prefix else "V")
            if u is not None and v is not None and u.ndim == 2 and v.ndim == 2 and u.shape[1] == v.shape[0]:
                seen_lowrank.add(prefix)
                layers.append((prefix or key, u @ v))  # LowRankLinear: A = U V
    return layers


def spectrum_table(
    source: nn.Module | Mapping[str, torch.Tensor] | str | os.PathLike[str],
    *,
    ps: Sequence[float] = (0.5, 1.0, 2.0),
    rtol: float = 1e-3,
    top: int = 5,
) -> list[LayerSpectrum]:
    """Per-layer spectrum of a model, a state dict or a saved checkpoint.

    For a module the layers are :func:`structnets.analysis.dense_matrices` (``to_dense()`` or
    ``weight``). For a state dict or a file (loaded by :func:`load_state_dict`) they are the 2-D
    ``*.weight`` entries and ``U @ V`` for each ``prefix.U``/``prefix.V`` pair (``LowRankLinear``),
    in the dict's order. Singular values are computed in float64.

    Args:
        source: an ``nn.Module``, a ``{name: tensor}`` mapping, or a path.
        ps: Schatten exponents in (0, ∞) to report ``‖A‖_{S_p}^p`` for.
        rtol: relative threshold of the numerical rank, in [0, 1).
        top: how many leading singular values to keep (≥ 1).

    Returns:
        one :class:`LayerSpectrum` per layer matrix, in order.

    Raises:
        ValueError: no layer matrix found, or a matrix is empty or non-finite.
    """
    from .._validation import check_int, check_real

    rtol = check_real("rtol", rtol, low=0.0, high=1.0, high_open=True)
    top = check_int("top", top, low=1)
    if isinstance(ps, str) or not isinstance(ps, Sequence) or not ps:
        raise ValueError(f"`ps` must be a non-empty sequence of exponents in (0, inf), got {ps!r}")
    ps = tuple(check_real("ps", p, low=0.0, low_open=True) for p in ps)
    if isinstance(source, nn.Module):
        names = [name for name, _ in linear_layers(source)]
        layers = list(zip(names, dense_matrices(source)))
    else:
        state = load_state_dict(source) if isinstance(source, str | os.PathLike) else source
        if not isinstance(state, Mapping):
            raise TypeError(
                f"`source` must be an nn.Module, a state dict or a path, got {type(source).__name__}"
            )
        layers = _state_dict_matrices(state)
    if not layers:
        raise ValueError("`source` has no layer matrices (no 2-D '*.weight' or 'U'/'V' entries)")
    table: list[LayerSpectrum] = []
    for name, matrix in layers:
        if not isinstance(matrix, torch.Tensor) or matrix.numel() == 0 or not bool(torch.isfinite(matrix).all()):
            raise ValueError(f"layer {name!r} must be a non-empty finite matrix, got {getattr(matrix, 'shape', matrix)!r}")
        matrix = matrix.detach().to(torch.float64)
        sigma = singular_values(matrix)
        table.append(
            LayerSpectrum(
                name=name,
                rows=int(matrix.shape[0]),
                cols=int(matrix.shape[1]),
                spectral_norm=float(sigma[0]),
                frobenius_norm=float(sigma.square().sum().sqrt()),
                nuclear_norm=float(sigma.sum()),
                schatten={p: float(schatten_norm(matrix, p, power=True)) for p in ps},
                rank=int(numerical_rank(matrix, rtol=rtol)),
                stable_rank=float(stable_rank(matrix)),
                effective_rank=float(effective_rank(matrix)),
                smallest_singular_value=float(sigma[-1]),
                top_singular_values=tuple(float(v) for v in sigma[:top]),
            )
        )
    return table


def format_spectrum_table(table: Sequence[LayerSpectrum]) -> str:
    """Render :func:`spectrum_table` rows as a Markdown table (what ``structnets analyze`` prints).

    Args:
        table: the layers' spectra.

    Returns:
        Markdown text, one row per layer.
    """
    if not table:
        raise ValueError("`table` must hold at least one LayerSpectrum, got none")
    ps = list(table[0].schatten)
    header = (
        "| layer | shape | ‖A‖₂ | ‖A‖_F | ‖A‖_* | "
        + " | ".join(f"‖A‖_S{p:g}^{p:g}" for p in ps)
        + " | rank | stable rank | effective rank | σ_min | top σ |"
    )
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for layer in table:
        cells = [
            layer.name,
            f"{layer.rows}×{layer.cols}",
            f"{layer.spectral_norm:.4g}",
            f"{layer.frobenius_norm:.4g}",
            f"{layer.nuclear_norm:.4g}",
            *(f"{layer.schatten[p]:.4g}" for p in ps),
            str(layer.rank),
            f"{layer.stable_rank:.3f}",
            f"{layer.effective_rank:.3f}",
            f"{layer.smallest_singular_value:.3g}",
            ", ".join(f"{v:.4g}" for v in layer.top_singular_values),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)

