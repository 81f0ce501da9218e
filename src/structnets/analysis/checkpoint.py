"""Safe loading of saved model states and the per-layer spectrum table of a model.

Checkpoints are read with ``torch.load(weights_only=True)`` only: the unpickler then accepts
tensors and plain containers and refuses arbitrary Python objects, so analysing a file cannot
execute code from it.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    import pandas as pd

from .dense_matrices import _to_dense
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
            f"`path`: checkpoint {str(path)!r} cannot be loaded with torch.load(weights_only=True): "
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
            f"`path`: checkpoint {str(path)!r} is not a state dict: expected a non-empty mapping from "
            f"parameter names to tensors, got {type(content).__name__}"
        )
    bad = [str(k) for k, v in content.items() if not isinstance(k, str) or not isinstance(v, torch.Tensor)]
    if bad:
        raise ValueError(
            f"`path`: checkpoint {str(path)!r} is not a state dict: entries {bad[:5]} are not name → tensor pairs"
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
        kind: the layer kind the matrix comes from (``"Linear"``, ``"DLoRLinear"``,
            ``"NormConstrainedLinear"``, ``"GradientStepResidual W"``, …).
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
    kind: str = ""

    def row(self) -> dict[str, float | int | str]:
        """A flat dict (one column per Schatten exponent, ``schatten_p=0.5`` …)."""
        flat = asdict(self)
        flat = {"name": flat.pop("name"), "kind": flat.pop("kind"), **flat}
        schatten = flat.pop("schatten")
        flat["top_singular_values"] = ", ".join(f"{v:.4g}" for v in self.top_singular_values)
        for p, value in schatten.items():
            flat[f"schatten_p={p:g}"] = value
        return flat


def _group_by_module(state: Mapping[str, torch.Tensor]) -> dict[str, dict[str, torch.Tensor]]:
    """``{module prefix: {leaf name: tensor}}``, modules in order of their first entry."""
    groups: dict[str, dict[str, torch.Tensor]] = {}
    for key, value in state.items():
        prefix, _, leaf = key.rpartition(".")
        groups.setdefault(prefix, {})[leaf] = value
    return groups


def _rebuilt_dense(layer_class: type[nn.Module], name: str, leaves: dict[str, torch.Tensor]) -> torch.Tensor:
    """The applied matrix of a norm-constrained or orthogonal layer, by its own ``to_dense``.

    The layer is rebuilt from its entries and put in eval mode, so the matrix is exactly the one
    the trained layer applies at inference (certified rescaling included).
    """
    raw = leaves["raw_weight"]
    layer = layer_class(int(raw.shape[1]), int(raw.shape[0]), bias="bias" in leaves, dtype=raw.dtype)
    try:
        layer.load_state_dict({k: v for k, v in leaves.items() if k in ("raw_weight", "bias", "power_vector")})
    except (RuntimeError, ValueError) as error:
        raise ValueError(
            f"layer {name!r} ({layer_class.__name__}) cannot be rebuilt from its entries: {error}"
        ) from error
    layer.eval()
    with torch.no_grad():
        return _to_dense(layer)


def _is_dlor(leaves: Mapping[str, torch.Tensor]) -> bool:
    alpha, u, v = leaves.get("alpha"), leaves.get("U"), leaves.get("V")
    return (
        alpha is not None and u is not None and v is not None and alpha.ndim == 0
        and u.ndim == 2 and v.ndim == 2 and u.shape == v.shape and u.shape[0] > u.shape[1]
    )  # fmt: skip


def _dlor_dense(leaves: Mapping[str, torch.Tensor]) -> torch.Tensor:
    u, v = leaves["U"], leaves["V"]
    return leaves["alpha"] * torch.eye(u.shape[0], dtype=u.dtype) + u @ v.T  # DLoRLinear: αI + UVᵀ


def _state_dict_matrices(state: Mapping[str, torch.Tensor]) -> list[tuple[str, torch.Tensor, str]]:
    """``(name, layer matrix, kind)`` of every layer a state dict describes, in the dict's order.

    Layers are recognised by the entries each structnets layer stores (module prefix ``P``):

    ==========================================  ==============================  ==================================
    entries                                     layer                           matrix
    ==========================================  ==============================  ==================================
    ``P.weight`` (2-D)                          ``nn.Linear``                   W
    ``P.weight`` (2-D), ``P.power_vector``      ``GradientStepResidual``        W of x − τWᵀσ(Wx + b)
    ``P.U`` (m×r), ``P.V`` (r×n)                ``LowRankLinear``               U V
    ``P.alpha``, ``P.U``, ``P.V`` (N×r each)    ``DLoRLinear``                  αI + U Vᵀ
    ``P.branches.k.{alpha,U,V}``, ``P.bias``    ``DLoRBranches`` (bias-free     Σ_k (α_k I + U_k V_kᵀ)
    (branches without bias)                     branches summed before σ)
    ``P.u`` (m), ``P.v`` (n)                    ``RankOneLinear``               u vᵀ
    ``P.raw_weight``, ``P.power_vector``        ``NormConstrainedLinear``       V / max(1, B(V))
    ``P.raw_weight`` alone                      ``OrthogonalLinear``            certified polar factor of V
    ==========================================  ==============================  ==================================

    The branches of a ``DLoRParallel`` layer (each with its own bias, σ applied per branch) have
    no common matrix and are listed one by one, as ``P.branches.k``. A state dict does not record
    a ``NormConstrainedLinear``'s ``bound`` mode; its matrix is the eval-mode one with the exact
    certified bound B (what ``bound="exact"`` and ``bound="power"`` apply in eval mode).
    Matrix-valued entries that match none of these are skipped with a ``UserWarning`` naming them.
    """
    groups = _group_by_module(state)
    # DLoRBranches: P holds the shared bias, its branches P.branches.k are bias-free DLoR maps.
    summed: dict[str, list[str]] = {}
    for prefix, leaves in groups.items():
        parent, _, index = prefix.rpartition(".")
        owner, _, container = parent.rpartition(".")
        if container == "branches" and index.isdigit() and _is_dlor(leaves):
            summed.setdefault(owner, []).append(prefix)
    summed = {
        owner: branches for owner, branches in summed.items()
        if set(groups.get(owner, {})) == {"bias"} and all("bias" not in groups[b] for b in branches)
    }  # fmt: skip
    in_summed = {branch: owner for owner, branches in summed.items() for branch in branches}

    from ..nn import NormConstrainedLinear, OrthogonalLinear

    layers: list[tuple[str, torch.Tensor, str]] = []
    skipped: list[str] = []
    for prefix, leaves in groups.items():
        name = prefix or "<root>"
        matrix: torch.Tensor | None = None
        used: set[str] = set()
        if prefix in summed:
            branches = summed[prefix]
            matrix = sum((_dlor_dense(groups[b]) for b in branches[1:]), _dlor_dense(groups[branches[0]]))
            kind = f"DLoRBranches ({len(branches)} summed)"
        elif prefix in in_summed:
            continue
        elif _is_dlor(leaves):
            matrix, kind, used = _dlor_dense(leaves), "DLoRLinear", {"alpha", "U", "V"}
        elif "raw_weight" in leaves and leaves["raw_weight"].ndim == 2:
            layer_class = NormConstrainedLinear if "power_vector" in leaves else OrthogonalLinear
            matrix, kind = _rebuilt_dense(layer_class, name, leaves), layer_class.__name__
            used = {"raw_weight"}
        elif "weight" in leaves and leaves["weight"].ndim == 2:
            matrix, used = leaves["weight"], {"weight"}
            kind = "GradientStepResidual W" if "power_vector" in leaves else "Linear"
        elif "U" in leaves and "V" in leaves:
            u, v = leaves["U"], leaves["V"]
            if u.ndim == 2 and v.ndim == 2 and u.shape[1] == v.shape[0]:
                matrix, kind, used = u @ v, "LowRankLinear", {"U", "V"}  # A = U V
        elif "u" in leaves and "v" in leaves and leaves["u"].ndim == 1 and leaves["v"].ndim == 1:
            matrix, kind, used = torch.outer(leaves["u"], leaves["v"]), "RankOneLinear", {"u", "v"}
        if matrix is not None:
            layers.append((name, matrix, kind))
        skipped += [
            f"{prefix}.{leaf}{tuple(value.shape)}" if prefix else f"{leaf}{tuple(value.shape)}"
            for leaf, value in leaves.items() if value.ndim >= 2 and leaf not in used
        ]  # fmt: skip
    if skipped and layers:
        warnings.warn(
            f"state dict entries {', '.join(skipped[:8])}{' …' if len(skipped) > 8 else ''} belong to no layer "
            "kind spectrum_table knows (nn.Linear or a structnets layer) and are left out of the table",
            UserWarning,
            stacklevel=3,
        )
    return layers


def _module_matrices(model: nn.Module) -> list[tuple[str, torch.Tensor, str]]:
    """``(name, matrix, kind)`` of every layer of a module: the matrices :func:`_state_dict_matrices`
    reads from the module's state dict, computed by the layers themselves in eval mode."""
    from ..nn import DLoRBranches, GradientStepResidual

    layers: list[tuple[str, torch.Tensor, str]] = []

    def walk(module: nn.Module, prefix: str) -> None:
        name = prefix or "<root>"
        if isinstance(module, GradientStepResidual):
            layers.append((name, module.weight.detach().clone(), "GradientStepResidual W"))
            return
        if isinstance(module, nn.Linear):
            layers.append((name, module.weight.detach().clone(), "Linear"))
            return
        if callable(getattr(module, "to_dense", None)):
            kind = type(module).__name__
            if isinstance(module, DLoRBranches):
                kind = f"DLoRBranches ({module.branches_count} summed)"
            layers.append((name, _to_dense(module).detach().clone(), kind))
            return
        own = [(n, p) for n, p in module.named_parameters(recurse=False) if p.ndim >= 2]
        if own:
            names = ", ".join(f"{n}{tuple(p.shape)}" for n, p in own)
            raise TypeError(
                f"module {name!r} ({type(module).__name__}) has matrix parameters {names} but is neither "
                "nn.Linear, a structnets layer nor a layer with to_dense(); spectrum_table cannot read it"
            )
        for child_name, child in module.named_children():
            walk(child, f"{prefix}.{child_name}" if prefix else child_name)

    # Eval mode: the matrices a deployed model applies (certified bounds, no power-iteration step).
    modes = {m: m.training for m in model.modules()}
    model.eval()
    try:
        with torch.no_grad():
            walk(model, "")
    finally:
        for m, training in modes.items():
            m.training = training
    return layers


def spectrum_table(
    source: nn.Module | Mapping[str, torch.Tensor] | str | os.PathLike[str],
    *,
    ps: Sequence[float] = (0.5, 1.0, 2.0),
    rtol: float = 1e-3,
    top: int = 5,
    as_frame: bool = False,
) -> list[LayerSpectrum] | pd.DataFrame:
    """Per-layer spectrum of a model, a state dict or a saved checkpoint.

    Every layer is read as the dense matrix A it applies: ``nn.Linear`` W; ``LowRankLinear`` U V;
    ``DLoRLinear`` αI + UVᵀ; ``DLoRBranches`` Σ_k (α_k I + U_k V_kᵀ); each branch of a
    ``DLoRParallel`` on its own (σ per branch: no common matrix); ``RankOneLinear`` u vᵀ;
    ``NormConstrainedLinear`` V / max(1, B(V)); ``OrthogonalLinear`` its certified polar factor;
    ``GradientStepResidual`` the W of x − τWᵀσ(Wx + b). For a module the layers compute these
    themselves (``to_dense()``, in eval mode, the mode restored afterwards). For a state dict or
    a file (loaded by :func:`load_state_dict`) they are recognised from their entries, in the
    dict's order (see :func:`_state_dict_matrices`; a ``NormConstrainedLinear`` is read with the
    exact certified bound, since a state dict does not record the ``bound`` mode). A module and
    its saved state dict give the same table. Singular values are computed in float64.

    Args:
        source: an ``nn.Module``, a ``{name: tensor}`` mapping, or a path.
        ps: Schatten exponents in (0, ∞) to report ``‖A‖_{S_p}^p`` for.
        rtol: relative threshold of the numerical rank, in [0, 1).
        top: how many leading singular values to keep (≥ 1).
        as_frame: return a ``pandas.DataFrame`` (one row per layer, the columns of
            :meth:`LayerSpectrum.row`) instead of a list.

    Returns:
        one :class:`LayerSpectrum` per layer matrix, in order (or their DataFrame).

    Raises:
        ValueError: no layer matrix found, or a matrix is empty or non-finite.
        TypeError: a module holds a matrix parameter in a module of unknown kind (e.g. ``nn.Conv2d``),
            or a layer matrix is complex.

    Warns:
        UserWarning: a state dict holds matrix entries of no known layer kind (left out).
    """
    from .._validation import check_int, check_real

    rtol = check_real("rtol", rtol, low=0.0, high=1.0, high_open=True)
    top = check_int("top", top, low=1)
    if isinstance(ps, str) or not isinstance(ps, Sequence) or not ps:
        raise ValueError(f"`ps` must be a non-empty sequence of exponents in (0, inf), got {ps!r}")
    ps = tuple(check_real("ps", p, low=0.0, low_open=True) for p in ps)
    if not isinstance(as_frame, bool):
        raise TypeError(f"`as_frame` must be a bool, got {as_frame!r}")
    if isinstance(source, nn.Module):
        layers = _module_matrices(source)
    else:
        state = load_state_dict(source) if isinstance(source, str | os.PathLike) else source
        if not isinstance(state, Mapping):
            raise TypeError(f"`source` must be an nn.Module, a state dict or a path, got {type(source).__name__}")
        for key, value in state.items():
            if not isinstance(key, str) or (not isinstance(value, torch.Tensor) and not key.endswith("_extra_state")):
                raise TypeError(
                    f"`source` must map str names to torch.Tensor values, got {key!r}: {type(value).__name__}"
                )
        layers = _state_dict_matrices(state)
    if not layers:
        raise ValueError(
            "`source` has no layer matrices (no entries of nn.Linear, LowRankLinear, DLoRLinear, RankOneLinear, "
            "NormConstrainedLinear, OrthogonalLinear or GradientStepResidual)"
        )
    table: list[LayerSpectrum] = []
    for name, matrix, kind in layers:
        if not isinstance(matrix, torch.Tensor) or matrix.numel() == 0 or not bool(torch.isfinite(matrix).all()):
            raise ValueError(
                f"layer {name!r} must be a non-empty finite matrix, got {getattr(matrix, 'shape', matrix)!r}"
            )
        if matrix.is_complex():  # the float64 cast below would silently drop the imaginary part
            raise TypeError(f"layer {name!r} must be a real matrix, got dtype {matrix.dtype}")
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
                kind=kind,
            )
        )
    if as_frame:
        import pandas as pd

        return pd.DataFrame([layer.row() for layer in table])
    return table


def format_spectrum_table(table: Sequence[LayerSpectrum]) -> str:
    """Render :func:`spectrum_table` rows as a Markdown table (what ``structnets analyze`` prints).

    Args:
        table: the layers' spectra.

    Returns:
        Markdown text, one row per layer.
    """
    if isinstance(table, (str, bytes)) or not isinstance(table, Sequence):
        raise TypeError(f"`table` must be a sequence of LayerSpectrum, got {type(table).__name__}")
    if not table:
        raise ValueError("`table` must hold at least one LayerSpectrum, got none")
    for row in table:
        if not isinstance(row, LayerSpectrum):
            raise TypeError(f"`table` must hold LayerSpectrum rows (from spectrum_table), got {type(row).__name__}")
    ps = list(table[0].schatten)
    header = (
        "| layer | kind | shape | ‖A‖₂ | ‖A‖_F | ‖A‖_* | "
        + " | ".join(f"‖A‖_S{p:g}^{p:g}" for p in ps)
        + " | rank | stable rank | effective rank | σ_min | top σ |"
    )
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for layer in table:
        cells = [
            layer.name,
            layer.kind or "-",
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
