"""Calibration: the Gram matrix of each layer's inputs in one streaming pass, and whitened truncation.

For a layer W (m × n) whose inputs on the calibration data are the columns of X (n × N), the
output error of a replacement Ŵ is ‖(W − Ŵ)X‖_F² = tr((W − Ŵ) G₀ (W − Ŵ)ᵀ) with G₀ = X Xᵀ, so the
n × n Gram matrix is all that is needed: it is summed batch by batch from forward pre-hooks,
never storing the activations (O(n²) memory per layer, float64).

Whitened truncation (SVD-LLM, Wang et al. 2024, Thm. 1; ASVD, Yuan et al. 2023): with
S Sᵀ = G = G₀ + λI (Cholesky, S lower triangular) and W S = P Σ Qᵀ,

    Ŵ = [W S]_r S⁻¹ = P_r Σ_r Q_rᵀ S⁻¹,

which minimises ‖(W − Ŵ)S‖_F² = ‖(W − Ŵ)X‖_F² + λ‖W − Ŵ‖_F² over rank-r Ŵ (Eckart–Young on
W S, S invertible), with minimum Σ_{j>r} σ_j(W S)². The ridge λ = ``ridge``·tr(G₀)/n (default
``ridge`` = 1e-6, relative to the mean input energy per coordinate) keeps S invertible when G₀ is
singular (fewer calibration rows than n, or dead inputs); with λ = 0 and G₀ positive definite Ŵ is
the exact minimiser of ‖(W − Ŵ)X‖_F. The factors are U = P_r Σ_r^{1/2}, V = Σ_r^{1/2} Q_rᵀ S⁻¹
(one triangular solve).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from .kinds import Candidate

DEFAULT_RIDGE = 1e-6


@dataclass
class Statistics:
    """What the calibration pass saw at one layer.

    Attributes:
        gram: Σ x xᵀ over every row x the layer was applied to (n × n, float64), or None when only
            rows were counted.
        rows: number of rows (input vectors or patches) seen.
    """

    gram: torch.Tensor | None = None
    rows: int = 0
    finite: bool = True
    calls: int = field(default=0)


def batches(name: str, data: object) -> Iterator[object]:
    """The batches of ``data``: a tensor is one batch; any other iterable (a DataLoader) yields batches."""
    if isinstance(data, torch.Tensor):
        yield data
        return
    if isinstance(data, (str, bytes, dict)) or not isinstance(data, Iterable):
        raise TypeError(f"`{name}` must be a tensor, an iterable of batches or a DataLoader, got {type(data).__name__}")
    yield from data


def call(model: nn.Module, batch: object) -> object:
    """Run ``model`` on one batch: a tensor as the input, a dict as keyword arguments (Hugging Face),
    a tuple/list by its first element (a DataLoader's ``(inputs, targets)``)."""
    if isinstance(batch, torch.Tensor):
        return model(batch)
    if isinstance(batch, dict):
        return model(**batch)
    if isinstance(batch, (tuple, list)) and batch:
        return model(batch[0])
    raise TypeError(f"a batch must be a tensor, a dict of tensors or a (inputs, ...) tuple, got {type(batch).__name__}")


def _inputs(batch: object) -> list[torch.Tensor]:
    if isinstance(batch, torch.Tensor):
        return [batch]
    if isinstance(batch, dict):
        return [v for v in batch.values() if isinstance(v, torch.Tensor)]
    if isinstance(batch, (tuple, list)) and batch:
        first = batch[0]
        return [first] if isinstance(first, torch.Tensor) else []
    return []


def check_batch(name: str, index: int, batch: object, reference: torch.Tensor | None) -> None:
    """Validate one batch against the model's first floating parameter ``reference``."""
    tensors = _inputs(batch)
    if not tensors:
        raise TypeError(
            f"`{name}` batch {index} must be a tensor, a dict of tensors or an (inputs, ...) tuple, "
            f"got {type(batch).__name__}"
        )
    for tensor in tensors:
        if tensor.numel() == 0:
            raise ValueError(f"`{name}` batch {index} is empty (shape {tuple(tensor.shape)})")
        if reference is not None and tensor.device != reference.device:
            raise ValueError(f"`{name}` batch {index} is on {tensor.device}, the model on {reference.device}")
        if tensor.is_floating_point():
            if reference is not None and tensor.dtype != reference.dtype:
                raise TypeError(f"`{name}` batch {index} has dtype {tensor.dtype}, the model {reference.dtype}")
            if not bool(torch.isfinite(tensor).all()):
                raise ValueError(f"`{name}` batch {index} has non-finite values (nan or inf)")
        elif tensor.is_complex():
            raise TypeError(f"`{name}` batch {index} has complex dtype {tensor.dtype}")


@contextmanager
def _eval_without_fast_path(model: nn.Module) -> Iterator[None]:
    """Eval mode, no grad, and torch's fused attention/encoder kernels off (they bypass the hooks)."""
    flags = [(m, m.training) for m in model.modules()]
    fast = torch.backends.mha.get_fastpath_enabled()
    model.eval()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with torch.no_grad():
            yield
    finally:
        torch.backends.mha.set_fastpath_enabled(fast)
        for module, training in flags:
            module.training = training


def collect(
    model: nn.Module,
    items: list[Candidate],
    name: str,
    data: object,
    *,
    gram: bool,
    reference: torch.Tensor | None,
) -> tuple[dict[str, Statistics], object]:
    """One pass of ``model`` over ``data`` (eval mode, no grad) with a forward pre-hook on each layer.

    Args:
        model: the model the layers belong to.
        items: the layers to observe.
        name: the argument's name, for errors (``"calibration"`` or ``"example_input"``).
        data: a tensor, a batch iterable or a DataLoader.
        gram: sum the Gram matrices (else count rows only).
        reference: the model's first floating parameter (dtype and device of valid batches).

    Returns:
        per-layer :class:`Statistics` by name, and the first batch.

    Raises:
        ValueError / TypeError naming ``name`` (and the layer): empty data, a batch of the wrong
        dtype or device, non-finite values, a batch the model cannot run on, non-finite inputs
        reaching a layer.
    """
    stats = {item.name: Statistics() for item in items}
    handles = []

    def hook_for(item: Candidate) -> Callable[[nn.Module, tuple[Any, ...]], None]:
        record = stats[item.name]

        def hook(module: nn.Module, args: tuple[Any, ...]) -> None:
            if not args or not isinstance(args[0], torch.Tensor):
                return
            rows = item.rows(args[0].detach())
            record.rows += rows.shape[0]
            record.calls += 1
            if gram:
                rows64 = rows.to(torch.float64)
                product = rows64.t() @ rows64
                record.gram = product if record.gram is None else record.gram.add_(product)

        return hook

    first: object = None
    count = 0
    try:
        for item in items:
            handles.append(item.module.register_forward_pre_hook(hook_for(item)))
        with _eval_without_fast_path(model):
            for index, batch in enumerate(batches(name, data)):
                check_batch(name, index, batch, reference)
                if first is None:
                    first = batch
                try:
                    call(model, batch)
                except (RuntimeError, ValueError, TypeError, IndexError) as error:
                    raise ValueError(f"`{name}` batch {index} does not fit the model: {error}") from error
                count += 1
    finally:
        for handle in handles:
            handle.remove()
    if count == 0:
        raise ValueError(f"`{name}` is empty: it gave no batch")
    for item in items:
        record = stats[item.name]
        if record.gram is not None and not bool(torch.isfinite(record.gram).all()):
            raise ValueError(f"`{name}` gives non-finite inputs (or Gram overflow) at layer {item.name!r}")
    return stats, first


def whitening(gram: torch.Tensor, ridge: float, layer: str) -> tuple[torch.Tensor, float]:
    """S with S Sᵀ = G₀ + λI, λ = ``ridge``·tr(G₀)/n (float64 Cholesky, lower triangular), and λ.

    Raises:
        ValueError: G₀ + λI is not positive definite (``ridge`` = 0 with singular G₀), naming ``layer``.
    """
    n = gram.shape[0]
    lam = ridge * float(torch.diagonal(gram).sum()) / n
    shifted = gram + lam * torch.eye(n, dtype=gram.dtype, device=gram.device)
    factor, info = torch.linalg.cholesky_ex(shifted)
    if int(info) != 0:
        raise ValueError(
            f"the calibration Gram matrix of layer {layer!r} is singular (rank < {n}); "
            f"give a `ridge` > 0 (got {ridge}) or more calibration rows"
        )
    return factor, lam


@dataclass(frozen=True)
class Spectrum:
    """The SVD W S = P Σ Qᵀ of a layer's (whitened) matrix and what truncation needs from it.

    Attributes:
        left: P (m × k), singular: σ (k,), right_t: Qᵀ (k × n), k = min(m, n).
        factor: S (n × n, lower triangular) or None for plain SVD (S = I).
    """

    left: torch.Tensor
    singular: torch.Tensor
    right_t: torch.Tensor
    factor: torch.Tensor | None

    def factors(self, rank: int) -> tuple[torch.Tensor, torch.Tensor]:
        """U = P_r Σ_r^{1/2} (m × r), V = Σ_r^{1/2} Q_rᵀ S⁻¹ (r × n): U V = [W S]_r S⁻¹."""
        root = self.singular[:rank].sqrt()
        left = self.left[:, :rank] * root
        right = root[:, None] * self.right_t[:rank]
        if self.factor is not None:  # X S = B  ⇔  X = B S⁻¹
            right = torch.linalg.solve_triangular(self.factor, right, upper=False, left=False)
        return left, right


def spectrum(weight: torch.Tensor, factor: torch.Tensor | None) -> Spectrum:
    """The SVD of W S (W if ``factor`` is None), in float64."""
    target = weight if factor is None else weight @ factor
    left, singular, right_t = torch.linalg.svd(target, full_matrices=False)
    return Spectrum(left, singular, right_t, factor)


def output_error(weight: torch.Tensor, approx: torch.Tensor, gram: torch.Tensor) -> float:
    """‖(W − Ŵ)X‖_F / ‖W X‖_F from G₀ = X Xᵀ (0 when W X = 0)."""
    difference = weight - approx
    num = float(torch.einsum("ij,jk,ik->", difference, gram, difference))
    den = float(torch.einsum("ij,jk,ik->", weight, gram, weight))
    return math.sqrt(max(num, 0.0) / den) if den > 0 else 0.0


__all__ = ["DEFAULT_RIDGE", "Spectrum", "output_error", "spectrum", "whitening"]
