"""Argument conversion and checks shared by :func:`~structnets.training.fit`, :func:`~structnets.training.evaluate`
and the batched-ensemble trainer: data become tensors on the model's device and dtype once, with
errors that name the argument (``docs/design.md``, convention 2).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from .losses import LossFn


def epoch_mean(batch_losses: list[torch.Tensor], n: int, step: int) -> float:
    # Sample-weighted mean: every slice has `step` rows except possibly the last.
    if len(batch_losses) == 1:
        return float(batch_losses[0])
    values = torch.stack(batch_losses).double()
    last = n - step * (len(batch_losses) - 1)
    return (float(values[:-1].sum()) * step + float(values[-1]) * last) / n


def evaluate_loss(model: nn.Module, loss_fn: LossFn, X: torch.Tensor, y: torch.Tensor) -> float:
    was_training = model.training
    model.eval()
    with torch.no_grad():
        value = float(loss_fn(model(X), y))
    model.train(was_training)
    return value


def device_and_dtype(model: nn.Module) -> tuple[torch.device, torch.dtype]:
    for tensor in model.parameters():
        if tensor.is_floating_point():
            return tensor.device, tensor.dtype
    raise ValueError("`model` has no floating-point parameters to train")


def as_tensor(
    value: Any, name: str, dtype: torch.dtype, device: torch.device, kind: str | None, index_ndim: int | None = 1
) -> torch.Tensor:
    """``value`` as a finite real tensor on ``device``: class indices as int64 (``kind="index"``, ``index_ndim``-D;
    None: any shape, as the stacked ensemble's (E, n) labels, checked by the caller), else of ``dtype``."""
    if isinstance(value, torch.Tensor):
        tensor = value.detach()
    else:
        array = np.asarray(value)
        if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
            raise TypeError(f"`{name}` must be numeric, got an array of dtype {array.dtype}")
        if not array.flags.writeable:  # torch warns on read-only memory; a copy is cheap here
            array = array.copy()
        tensor = torch.from_numpy(np.ascontiguousarray(array))
    if tensor.ndim == 0:
        raise ValueError(f"`{name}` must have a leading sample dimension, got a scalar")
    if tensor.is_complex():
        raise TypeError(f"`{name}` must be real, got complex dtype {tensor.dtype}")
    if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
        bad = int((~torch.isfinite(tensor)).sum())
        raise ValueError(f"`{name}` must be finite, got {bad} NaN or infinite entries")
    integral = not (tensor.is_floating_point() or tensor.is_complex())
    if kind == "index" or (kind is None and integral):
        if not integral:
            if not bool(torch.all(tensor == torch.round(tensor))):
                raise ValueError(f"`{name}` must hold integer class indices for this loss")
        if kind == "index" and index_ndim is not None and tensor.ndim != index_ndim:
            raise ValueError(f"`{name}` must be {index_ndim}-D class indices, got shape {tuple(tensor.shape)}")
        return tensor.to(device=device, dtype=torch.int64)
    return tensor.to(device=device, dtype=dtype)


def as_target(value: Any, name: str, dtype: torch.dtype, device: torch.device, kind: str | None) -> torch.Tensor:
    tensor = as_tensor(value, name, dtype, device, kind)
    if kind == "real" and tensor.ndim == 1:  # 1-D real targets train against (n, 1) outputs
        tensor = tensor[:, None]
    return tensor


def check_rows(X: torch.Tensor, y: torch.Tensor, x_name: str, y_name: str) -> int:
    n = X.shape[0]
    if n < 1:
        raise ValueError(f"`{x_name}` must have at least one row, got shape {tuple(X.shape)}")
    if y.shape[0] != n:
        raise ValueError(f"`{x_name}` and `{y_name}` must have the same number of rows, got {n} and {y.shape[0]}")
    return n


def check_output_shape(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> None:
    # A (n, 1) output against a (n,) target would broadcast to (n, n) and train on nonsense.
    out = first_output(model, X)
    if tuple(out.shape[1:]) != tuple(y.shape[1:]):
        raise ValueError(f"`y` has per-sample shape {tuple(y.shape[1:])} but the model outputs {tuple(out.shape[1:])}")


def first_output(model: nn.Module, X: torch.Tensor) -> torch.Tensor:
    """The model's output on the first row, or a ValueError naming `X` when it cannot take X."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            return model(X[:1])
    except RuntimeError as error:  # e.g. (n, d) with d not the model's input size
        raise ValueError(
            f"`X` of shape {tuple(X.shape)} cannot be fed to `model`: {str(error).splitlines()[0]}"
        ) from error
    finally:
        model.train(was_training)


def check_class_indices(model: nn.Module, X: torch.Tensor, y: torch.Tensor, y_name: str = "y") -> None:
    # An out-of-range label makes torch raise an IndexError (or a device assert) mid-evaluation.
    out = first_output(model, X)
    if out.ndim != 2 or out.shape[1] < 2:
        # one logit per row makes the cross-entropy identically 0 (labels 0) or an error: as the checked loss refuses
        raise ValueError(
            f"`model` must output (n, K) logits with K >= 2 for the cross-entropy, got per-sample shape {tuple(out.shape[1:])}"
        )
    classes = out.shape[1]
    if bool(((y < 0) | (y >= classes)).any()):
        raise ValueError(
            f"`{y_name}` must hold class indices in [0, {classes}) for a model with {classes} outputs, "
            f"got values in [{int(y.min())}, {int(y.max())}]"
        )


def check_target_against_model(
    model: nn.Module, X: torch.Tensor, y: torch.Tensor, target_kind: str | None, y_name: str = "y"
) -> None:
    """Check that ``model`` takes ``X`` and that ``y`` (the argument ``y_name``) fits its output for the loss's
    target kind.

    ``"real"``: the per-sample shapes of output and target agree (no broadcasting); ``"index"``:
    (n, K ≥ 2) logits and labels in [0, K); ``None`` (a callable loss): only that the model runs on ``X``.
    """
    if target_kind == "real":
        check_output_shape(model, X, y)
    elif target_kind == "index":
        check_class_indices(model, X, y, y_name)
    else:
        first_output(model, X)
