"""A small, pure, seeded minibatch fit loop for ``nn.Module``s.

Built for many small models on a few CPU cores (grid search × 10-fold CV in the low-rank Swish
UCI reproduction, Li et al., ICML 2025, Sec. 5): data become tensors once, each epoch draws one
index permutation from its own ``torch.Generator`` and gathers the data once, minibatches are
contiguous slices of that gather (no ``DataLoader``), evaluation runs under ``torch.no_grad``, and
the loop never touches global RNG or thread settings.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from .._validation import MAX_STEPS, check_choice, check_int, check_real
from .losses import _UNCHECKED, TARGET_KIND, LossFn, get_loss

OptimizerFactory = Callable[[Iterable[nn.Parameter]], torch.optim.Optimizer]
Callback = Callable[[int, Mapping[str, float]], Any]

OPTIMIZERS: tuple[str, ...] = ("adam", "adamw", "sgd")


@dataclass(frozen=True)
class FitResult:
    """What one call of :func:`fit` did.

    Attributes:
        train_loss: per-epoch training loss, the sample-weighted mean of that epoch's minibatch
            losses (taken while the weights move, as in every minibatch loop).
        val_loss: per-epoch loss on the validation set at the end of each epoch, or ``()`` when
            there was no validation set.
        best_epoch: 0-based index into the histories of the best monitored loss.
        best_loss: the monitored loss at ``best_epoch``.
        monitor: ``"val_loss"`` when a validation set was used, else ``"train_loss"``.
        epochs_run: number of epochs actually run (``len(train_loss)``).
        stopped_early: True when patience ran out before ``epochs`` epochs.
        restored_best: True when the weights of ``best_epoch`` were copied back into the model
            (always, when there is a validation set).
        diverged: True when the training loss became non-finite and the loop stopped.
        wall_time: seconds spent in :func:`fit`.
    """

    train_loss: tuple[float, ...]
    val_loss: tuple[float, ...]
    best_epoch: int
    best_loss: float
    monitor: str
    epochs_run: int
    stopped_early: bool
    restored_best: bool
    diverged: bool
    wall_time: float

    @property
    def history(self) -> dict[str, list[float]]:
        """The per-epoch losses as ``{"train_loss": [...], "val_loss": [...]}``."""
        return {"train_loss": list(self.train_loss), "val_loss": list(self.val_loss)}


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run the body with the CPU torch RNG seeded to ``seed``, restoring the outer RNG state after.

    Use it around model construction so initial weights depend only on ``seed``::

        with seeded(0):
            model = mlp(10, 1, width=64, depth=3)

    Args:
        seed: an int in [0, 2**63 − 1].

    Returns:
        a context manager. The global RNG state seen after the block equals the one before it.
        (CUDA generators are forked only when CUDA is already initialised.)
    """
    seed = check_int("seed", seed, low=0, high=2**63 - 1)
    devices = None if torch.cuda.is_available() and torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


def fit(
    model: nn.Module,
    X: np.ndarray | torch.Tensor,
    y: np.ndarray | torch.Tensor,
    *,
    loss: str | LossFn = "mse",
    epochs: int = 100,
    batch_size: int | None = 128,
    lr: float = 1e-3,
    weight_decay: float = 0.0,
    optimizer: str | OptimizerFactory = "adam",
    validation_fraction: float = 0.0,
    validation_data: tuple[Any, Any] | None = None,
    patience: int | None = None,
    min_delta: float = 0.0,
    seed: int = 0,
    callback: Callback | None = None,
) -> FitResult:
    """Train ``model`` in place by minibatch gradient descent on ``loss``; return the history.

    Each epoch draws a permutation of the training rows from a ``torch.Generator`` seeded with
    ``seed`` and takes one optimiser step per slice of ``batch_size`` rows (the last slice may be
    smaller); ``batch_size=None`` or ``>= n`` is full-batch gradient descent. With a validation
    set (``validation_fraction > 0`` or ``validation_data``) the loss on it is computed after every
    epoch under ``torch.no_grad``, the best weights are kept, and they are copied back into
    ``model`` at the end, so the returned model's validation loss is ``result.best_loss``.
    Training stops early once the monitored loss (validation if any, else training) has not
    improved by more than ``min_delta`` for ``patience`` epochs. Given the same initial model and
    ``seed``, two calls on CPU produce bit-identical weights.

    Args:
        model: the module to train; data are moved to the device and floating dtype of its first
            parameter.
        X: (n, *) inputs, a numpy array or tensor; finite (NaN/inf are refused, as by the
            estimators).
        y: (n,) or (n, k) finite targets whose per-sample shape matches the model's output. For ``loss="cross_entropy"``: (n,) class indices; for
            ``"mse"``: real values, a 1-D ``y`` is trained against output (n, 1). For a callable
            loss: integer ``y`` becomes int64, other ``y`` the model's dtype, shape unchanged.
        loss: ``"mse"``, ``"cross_entropy"`` or a callable ``(output, target) -> scalar`` that
            averages over the batch.
        epochs: maximum number of passes over the training rows, in [1, 10⁸].
        batch_size: rows per step (>= 1), or None for full batch.
        lr: learning rate (> 0).
        weight_decay: L2 penalty coefficient (>= 0); decoupled for ``"adamw"``.
        optimizer: ``"adam"``, ``"adamw"``, ``"sgd"`` (momentum 0.9), or a factory
            ``params -> torch.optim.Optimizer`` (then ``lr``/``weight_decay`` are not used).
            Adam/AdamW are ``torch.optim.Adam``/``AdamW(fused=True)`` (``foreach`` where fused
            cannot run); on CPU the same fused kernel is called without ``torch.optim``'s per-step
            overhead once a self-check finds it bit-identical (see ``_FusedAdam``).
        validation_fraction: fraction in [0, 1) of rows held out (at random, seeded) to monitor;
            at least one row is held out when it is > 0.
        validation_data: an explicit ``(X_val, y_val)`` instead; excludes ``validation_fraction``.
        patience: epochs without improvement before stopping (>= 1), or None to run all epochs.
        min_delta: improvement below this (>= 0) does not count as improvement.
        seed: seeds shuffling and the validation split (an int >= 0). Seed model initialisation
            separately, e.g. with :func:`seeded`.
        callback: called as ``callback(epoch, logs)`` after each epoch, with the 0-based epoch and
            ``{"train_loss": ..., "val_loss": ...}`` (``val_loss`` only with a validation set).

    Returns:
        a :class:`FitResult`; the trained weights are in ``model`` (its train/eval mode is left
        as it was on entry).
    """
    start = time.perf_counter()
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be a torch.nn.Module, got {type(model).__name__}")
    loss_fn = _UNCHECKED.get(loss, get_loss(loss)) if isinstance(loss, str) else get_loss(loss)
    target_kind = TARGET_KIND.get(loss) if isinstance(loss, str) else None
    epochs = check_int("epochs", epochs, low=1, high=MAX_STEPS)
    if batch_size is not None:
        batch_size = check_int("batch_size", batch_size, low=1)
    lr = check_real("lr", lr, low=0.0, low_open=True)
    weight_decay = check_real("weight_decay", weight_decay, low=0.0)
    if not callable(optimizer):
        check_choice("optimizer", optimizer, OPTIMIZERS)
    validation_fraction = check_real(
        "validation_fraction", validation_fraction, low=0.0, high=1.0, high_open=True
    )
    if patience is not None:
        patience = check_int("patience", patience, low=1)
    min_delta = check_real("min_delta", min_delta, low=0.0)
    seed = check_int("seed", seed, low=0, high=2**63 - 1)
    if callback is not None and not callable(callback):
        raise TypeError(f"`callback` must be callable or None, got {callback!r}")
    if validation_data is not None and validation_fraction > 0:
        raise ValueError(
            "pass either `validation_fraction` > 0 or `validation_data`, not both "
            f"(got validation_fraction={validation_fraction})"
        )

    device, dtype = _device_and_dtype(model)
    X_t = _as_tensor(X, "X", dtype, device, "real")
    y_t = _as_target(y, "y", dtype, device, target_kind)
    n = _check_rows(X_t, y_t, "X", "y")

    generator = torch.Generator(device="cpu")
    generator.manual_seed(seed)
    if validation_data is not None:
        if not (isinstance(validation_data, tuple | list) and len(validation_data) == 2):
            raise TypeError("`validation_data` must be a pair (X_val, y_val)")
        X_val = _as_tensor(validation_data[0], "validation_data[0]", dtype, device, "real")
        y_val = _as_target(validation_data[1], "validation_data[1]", dtype, device, target_kind)
        _check_rows(X_val, y_val, "validation_data[0]", "validation_data[1]")
        if tuple(X_val.shape[1:]) != tuple(X_t.shape[1:]) or tuple(y_val.shape[1:]) != tuple(y_t.shape[1:]):
            raise ValueError(
                "`validation_data` must have the per-sample shapes of `X` and `y` "
                f"{tuple(X_t.shape[1:])} and {tuple(y_t.shape[1:])}, got "
                f"{tuple(X_val.shape[1:])} and {tuple(y_val.shape[1:])}"
            )
    elif validation_fraction > 0:
        n_val = max(1, round(validation_fraction * n))
        if n - n_val < 1:
            raise ValueError(
                f"`validation_fraction`={validation_fraction} leaves no training rows out of n={n}"
            )
        order = torch.randperm(n, generator=generator).to(device)
        X_val, y_val = X_t[order[:n_val]], y_t[order[:n_val]]
        X_t, y_t = X_t[order[n_val:]], y_t[order[n_val:]]
        n -= n_val
    else:
        X_val = y_val = None

    if target_kind == "real":
        _check_output_shape(model, X_t, y_t)
    elif target_kind == "index":
        _check_class_indices(model, X_t, y_t)
        if y_val is not None:
            _check_class_indices(model, X_t, y_val)
    else:
        _first_output(model, X_t)
    opt = _make_optimizer(optimizer, model, lr, weight_decay)
    step = batch_size if batch_size is not None and batch_size < n else n

    monitor = "val_loss" if X_val is not None else "train_loss"
    live = list(model.state_dict().values())  # detached views sharing the parameters' storage
    best_state = [t.detach().clone() for t in live] if X_val is not None else None
    best_loss, best_epoch, stale = math.inf, 0, 0
    train_hist: list[float] = []
    val_hist: list[float] = []
    stopped_early = diverged = False

    was_training = model.training
    model.train()
    for epoch in range(epochs):
        if step < n:
            perm = torch.randperm(n, generator=generator).to(device)
            X_ep, y_ep = X_t[perm], y_t[perm]
        else:
            X_ep, y_ep = X_t, y_t
        batch_losses = []
        for i in range(0, n, step):
            xb, yb = X_ep[i : i + step], y_ep[i : i + step]
            opt.zero_grad(set_to_none=True)
            batch_loss = loss_fn(model(xb), yb)
            batch_loss.backward()
            opt.step()
            batch_losses.append(batch_loss.detach())
        train_loss = _epoch_mean(batch_losses, n, step)
        train_hist.append(train_loss)
        logs = {"train_loss": train_loss}
        if X_val is not None:
            val_loss = _evaluate(model, loss_fn, X_val, y_val)
            val_hist.append(val_loss)
            logs["val_loss"] = val_loss
        current = logs[monitor]
        if not math.isfinite(train_loss):
            diverged = True
        elif math.isfinite(current) and current < best_loss - min_delta:
            best_loss, best_epoch, stale = current, epoch, 0
            if best_state is not None:
                with torch.no_grad():
                    for saved, tensor in zip(best_state, live, strict=True):
                        saved.copy_(tensor)
        else:
            stale += 1
        if callback is not None:
            callback(epoch, logs)
        if diverged:
            break
        if patience is not None and stale >= patience:
            stopped_early = epoch + 1 < epochs
            break

    restored = False
    if best_state is not None and math.isfinite(best_loss):
        with torch.no_grad():
            for tensor, saved in zip(live, best_state, strict=True):
                tensor.copy_(saved)
        restored = True
    if not math.isfinite(best_loss):  # diverged in the first epoch: nothing better was seen
        best_epoch, best_loss = len(train_hist) - 1, train_hist[-1]
    model.train(was_training)
    return FitResult(
        train_loss=tuple(train_hist),
        val_loss=tuple(val_hist),
        best_epoch=best_epoch,
        best_loss=best_loss,
        monitor=monitor,
        epochs_run=len(train_hist),
        stopped_early=stopped_early,
        restored_best=restored,
        diverged=diverged,
        wall_time=time.perf_counter() - start,
    )


def evaluate(
    model: nn.Module,
    X: np.ndarray | torch.Tensor,
    y: np.ndarray | torch.Tensor,
    *,
    loss: str | LossFn = "mse",
) -> float:
    """Return the mean ``loss`` of ``model`` on ``(X, y)``, computed under ``torch.no_grad``.

    Args:
        model: the module; data move to its device and dtype.
        X: (n, *) inputs.
        y: (n,) or (n, k) targets, converted as in :func:`fit`.
        loss: as in :func:`fit`.

    Returns:
        the loss as a Python float (the model's train/eval mode is restored).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be a torch.nn.Module, got {type(model).__name__}")
    loss_fn = _UNCHECKED.get(loss, get_loss(loss)) if isinstance(loss, str) else get_loss(loss)
    target_kind = TARGET_KIND.get(loss) if isinstance(loss, str) else None
    device, dtype = _device_and_dtype(model)
    X_t = _as_tensor(X, "X", dtype, device, "real")
    y_t = _as_target(y, "y", dtype, device, target_kind)
    _check_rows(X_t, y_t, "X", "y")
    if target_kind == "real":
        _check_output_shape(model, X_t, y_t)
    elif target_kind == "index":
        _check_class_indices(model, X_t, y_t)
    else:
        _first_output(model, X_t)
    return _evaluate(model, loss_fn, X_t, y_t)


def _epoch_mean(batch_losses: list[torch.Tensor], n: int, step: int) -> float:
    # Sample-weighted mean: every slice has `step` rows except possibly the last.
    if len(batch_losses) == 1:
        return float(batch_losses[0])
    values = torch.stack(batch_losses).double()
    last = n - step * (len(batch_losses) - 1)
    return (float(values[:-1].sum()) * step + float(values[-1]) * last) / n


def _evaluate(model: nn.Module, loss_fn: LossFn, X: torch.Tensor, y: torch.Tensor) -> float:
    was_training = model.training
    model.eval()
    with torch.no_grad():
        value = float(loss_fn(model(X), y))
    model.train(was_training)
    return value


def _device_and_dtype(model: nn.Module) -> tuple[torch.device, torch.dtype]:
    for tensor in model.parameters():
        if tensor.is_floating_point():
            return tensor.device, tensor.dtype
    raise ValueError("`model` has no floating-point parameters to train")


def _as_tensor(
    value: Any, name: str, dtype: torch.dtype, device: torch.device, kind: str | None
) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        tensor = value.detach()
    else:
        array = np.asarray(value)
        if array.dtype == object or not (
            np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_
        ):
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
        if kind == "index" and tensor.ndim != 1:
            raise ValueError(f"`{name}` must be 1-D class indices, got shape {tuple(tensor.shape)}")
        return tensor.to(device=device, dtype=torch.int64)
    return tensor.to(device=device, dtype=dtype)


def _as_target(
    value: Any, name: str, dtype: torch.dtype, device: torch.device, kind: str | None
) -> torch.Tensor:
    tensor = _as_tensor(value, name, dtype, device, kind)
    if kind == "real" and tensor.ndim == 1:  # 1-D real targets train against (n, 1) outputs
        tensor = tensor[:, None]
    return tensor


def _check_rows(X: torch.Tensor, y: torch.Tensor, x_name: str, y_name: str) -> int:
    n = X.shape[0]
    if n < 1:
        raise ValueError(f"`{x_name}` must have at least one row, got shape {tuple(X.shape)}")
    if y.shape[0] != n:
        raise ValueError(
            f"`{x_name}` and `{y_name}` must have the same number of rows, got {n} and {y.shape[0]}"
        )
    return n


def _check_output_shape(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> None:
    # A (n, 1) output against a (n,) target would broadcast to (n, n) and train on nonsense.
    out = _first_output(model, X)
    if tuple(out.shape[1:]) != tuple(y.shape[1:]):
        raise ValueError(
            f"`y` has per-sample shape {tuple(y.shape[1:])} but the model outputs "
            f"{tuple(out.shape[1:])}"
        )


def _first_output(model: nn.Module, X: torch.Tensor) -> torch.Tensor:
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


def _check_class_indices(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> None:
    # An out-of-range label makes torch raise an IndexError (or a device assert) mid-evaluation.
    out = _first_output(model, X)
    classes = out.shape[1] if out.ndim >= 2 else 1
    if bool(((y < 0) | (y >= classes)).any()):
        raise ValueError(
            f"`y` must hold class indices in [0, {classes}) for a model with {classes} outputs, "
            f"got values in [{int(y.min())}, {int(y.max())}]"
        )


def _make_optimizer(
    optimizer: str | OptimizerFactory, model: nn.Module, lr: float, weight_decay: float
) -> torch.optim.Optimizer | _FusedAdam:
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("`model` has no trainable parameters")
    if callable(optimizer):
        opt = optimizer(params)
        if not isinstance(opt, torch.optim.Optimizer):
            raise TypeError(
                f"`optimizer` factory must return a torch.optim.Optimizer, got {type(opt).__name__}"
            )
        return opt
    if optimizer in ("adam", "adamw"):
        decoupled = optimizer == "adamw"
        if _FusedAdam.applies(params, decoupled):
            return _FusedAdam(params, lr=lr, weight_decay=weight_decay, decoupled=decoupled)
        return _public_adam(params, lr=lr, weight_decay=weight_decay, decoupled=decoupled)
    return torch.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=weight_decay, foreach=True)


def _public_adam(
    params: list[nn.Parameter], *, lr: float, weight_decay: float, decoupled: bool
) -> torch.optim.Optimizer:
    """``torch.optim.Adam``/``AdamW`` with ``fused=True``, or ``foreach=True`` where fused cannot run.

    The fused implementation runs on CPU (from torch 2.4) and CUDA for real floating dtypes (mixed
    dtypes are grouped); torch checks this only at the first ``step``, so it is checked here, and
    anything else (complex parameters, another device) gets the multi-tensor ``foreach``
    implementation of the same update.
    """
    cls = torch.optim.AdamW if decoupled else torch.optim.Adam
    if all(p.device.type in ("cpu", "cuda") and p.is_floating_point() for p in params):
        return cls(params, lr=lr, weight_decay=weight_decay, fused=True)
    return cls(params, lr=lr, weight_decay=weight_decay, foreach=True)


#: Use the verified private-kernel fast path (:class:`_FusedAdam`) where it applies. Tests set it
#: to False to compare against the public optimiser.
USE_FAST_ADAM = True


class _FusedAdam:
    """Adam / AdamW on CPU as one call of torch's fused kernel per step, without ``Optimizer`` overhead.

    Same update as ``torch.optim.Adam(params, lr, weight_decay=..., fused=True)`` (``AdamW`` when
    ``decoupled``), bit for bit, with betas (0.9, 0.999) and eps 1e-8: m ← β₁m + (1−β₁)g,
    v ← β₂v + (1−β₂)g², θ ← θ − lr·m̂/(√v̂ + ε) (Kingma & Ba 2015). For the small models trained
    here ``torch.optim``'s per-step Python bookkeeping costs more than the arithmetic; calling
    the kernel directly makes a whole training step of a width-64 MLP about a fifth faster on one
    CPU thread (``benchmarks/adam_step.py``; the gain shrinks to a few percent at width 256).

    The kernel, ``torch._fused_adam_``, is private and may change between torch releases, so the
    fast path is taken only where :meth:`applies`: on CPU, when the kernel exists and a one-time
    self-check in this process (a few steps of both optimisers on small tensors, compared with
    ``torch.equal``) finds it bit-identical to the public fused optimiser; everywhere else
    :func:`fit` uses ``torch.optim.Adam(fused=True)`` itself.
    """

    betas = (0.9, 0.999)
    eps = 1e-8

    def __init__(
        self, params: list[nn.Parameter], *, lr: float, weight_decay: float, decoupled: bool
    ) -> None:
        self.params = params
        self.lr = lr
        self.weight_decay = weight_decay
        self._kernel = _private_kernel(decoupled)
        self.exp_avg = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in params]
        self.exp_avg_sq = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in params]
        # One step counter shared by every parameter: incrementing a list of scalar tensors
        # falls back to one op per tensor on CPU, which costs as much as the update itself.
        self.step_count = torch.zeros((), dtype=torch.float32, device=params[0].device)

    @staticmethod
    def supports(params: list[nn.Parameter]) -> bool:
        """Whether the kernel can run: the private kernels exist, one CPU device, one floating dtype."""
        if not (hasattr(torch, "_fused_adam_") and hasattr(torch, "_fused_adamw_")):
            return False
        first = params[0]
        return (
            first.device.type == "cpu"
            and first.dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64)
            and all(p.device == first.device and p.dtype == first.dtype for p in params)
            and not any(p.is_sparse or p.is_complex() for p in params)
        )

    @classmethod
    def applies(cls, params: list[nn.Parameter], decoupled: bool) -> bool:
        """Whether :func:`fit` takes the fast path: :meth:`supports` and the self-check passed."""
        return USE_FAST_ADAM and cls.supports(params) and _fast_adam_verified(params[0].dtype, decoupled)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        if all(p.grad is not None for p in self.params):
            index = range(len(self.params))
        else:  # parameters without a gradient are skipped (their state stays), as in torch.optim
            index = [i for i, p in enumerate(self.params) if p.grad is not None]
            if not index:
                return
        params = [self.params[i] for i in index]
        self.step_count += 1
        self._kernel(
            params,
            [p.grad for p in params],
            [self.exp_avg[i] for i in index],
            [self.exp_avg_sq[i] for i in index],
            [],
            [self.step_count] * len(params),
            amsgrad=False,
            lr=self.lr,
            beta1=self.betas[0],
            beta2=self.betas[1],
            weight_decay=self.weight_decay,
            eps=self.eps,
            maximize=False,
            grad_scale=None,
            found_inf=None,
        )


def _private_kernel(decoupled: bool) -> Callable[..., Any]:
    """torch's private fused Adam (``decoupled=False``) or AdamW kernel."""
    return torch._fused_adamw_ if decoupled else torch._fused_adam_


@functools.cache
def _fast_adam_verified(dtype: torch.dtype, decoupled: bool) -> bool:
    """One-time check that :class:`_FusedAdam` equals public fused Adam bit for bit.

    Runs five steps of each on two small CPU tensors (with weight decay, so the decoupled and
    coupled paths differ) from the same seeded values and gradients. The reference is
    ``torch.optim.adam.adam(..., fused=True)``, the public functional form that
    ``torch.optim.Adam(fused=True).step`` calls; the optimiser class itself would import
    ``torch._dynamo`` on its first ``step`` (seconds), which this path exists to avoid. Any
    exception (a changed private or public signature) or any differing bit (changed arithmetic)
    disables the fast path. ``tests/training/test_fit.py`` compares whole ``fit`` runs against the
    ``torch.optim.Adam`` class as well.
    """
    try:
        from torch.optim.adam import adam as adam_step

        generator = torch.Generator().manual_seed(0)
        shapes = ((7, 5), (5,))
        start = [torch.randn(s, generator=generator, dtype=torch.float64).to(dtype) for s in shapes]
        grads = [
            [torch.randn(s, generator=generator, dtype=torch.float64).to(dtype) for s in shapes]
            for _ in range(5)
        ]
        ours = [nn.Parameter(t.clone()) for t in start]
        fast = _FusedAdam(ours, lr=1e-2, weight_decay=0.1, decoupled=decoupled)
        theirs = [t.clone() for t in start]
        exp_avgs = [torch.zeros_like(t) for t in theirs]
        exp_avg_sqs = [torch.zeros_like(t) for t in theirs]
        steps = [torch.zeros((), dtype=torch.float32) for _ in theirs]
        for step_grads in grads:
            for p, g in zip(ours, step_grads, strict=True):
                p.grad = g.clone()
            fast.step()
            adam_step(
                theirs, [g.clone() for g in step_grads], exp_avgs, exp_avg_sqs, [], steps,
                fused=True, decoupled_weight_decay=decoupled, amsgrad=False,
                beta1=_FusedAdam.betas[0], beta2=_FusedAdam.betas[1], lr=1e-2, weight_decay=0.1,
                eps=_FusedAdam.eps, maximize=False,
            )  # fmt: skip
        return all(torch.equal(a.detach(), b) for a, b in zip(ours, theirs, strict=True))
    except Exception:  # noqa: BLE001  (any failure of a private API means: do not use it)
        return False
