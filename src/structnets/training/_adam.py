"""Adam for the fit loop: torch's fused Adam/AdamW, and a verified direct call of its kernel on CPU.

Same update as ``torch.optim.Adam``/``AdamW`` (Kingma & Ba 2015; Loshchilov & Hutter 2019 for the
decoupled weight decay), with betas (0.9, 0.999) and eps 1e-8.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import nn

OptimizerFactory = Callable[[Iterable[nn.Parameter]], torch.optim.Optimizer]

OPTIMIZERS: tuple[str, ...] = ("adam", "adamw", "sgd")


def make_optimizer(
    optimizer: str | OptimizerFactory,
    model: nn.Module,
    lr: float,
    weight_decay: float,
    *,
    public: bool = False,
) -> torch.optim.Optimizer | FusedAdam:
    """The optimiser :func:`~structnets.training.fit` steps: a factory's, Adam/AdamW (fused) or SGD.

    ``public=True`` always returns a ``torch.optim.Optimizer`` (a learning-rate scheduler needs
    one), never the kernel fast path; the updates are the same bit for bit.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("`model` has no trainable parameters")
    return optimizer_for(optimizer, params, lr, weight_decay, public=public)


def optimizer_for(
    optimizer: str | OptimizerFactory,
    params: list[Any],
    lr: float,
    weight_decay: float,
    *,
    public: bool = False,
) -> torch.optim.Optimizer | FusedAdam:
    """:func:`make_optimizer` for a list of leaf tensors (e.g. the stacked parameters of an ensemble)."""
    if callable(optimizer):
        opt = optimizer(params)
        if not isinstance(opt, torch.optim.Optimizer):
            raise TypeError(f"`optimizer` factory must return a torch.optim.Optimizer, got {type(opt).__name__}")
        return opt
    if optimizer in ("adam", "adamw"):
        decoupled = optimizer == "adamw"
        if not public and FusedAdam.applies(params, decoupled):
            return FusedAdam(params, lr=lr, weight_decay=weight_decay, decoupled=decoupled)
        return public_adam(params, lr=lr, weight_decay=weight_decay, decoupled=decoupled)
    return torch.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=weight_decay, foreach=True)


def public_adam(
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


#: Use the verified private-kernel fast path (:class:`FusedAdam`) where it applies. Tests set it
#: to False to compare against the public optimiser.
USE_FAST_ADAM = True


class FusedAdam:
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
    :func:`~structnets.training.fit` uses ``torch.optim.Adam(fused=True)`` itself.
    """

    betas = (0.9, 0.999)
    eps = 1e-8

    def __init__(self, params: list[nn.Parameter], *, lr: float, weight_decay: float, decoupled: bool) -> None:
        self.params = params
        self.lr = lr
        self.weight_decay = weight_decay
        self._kernel = private_kernel(decoupled)
        self.exp_avg = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in params]
        self.exp_avg_sq = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in params]
        # One step counter shared by every parameter: incrementing a list of scalar tensors
        # falls back to one op per tensor on CPU, which costs as much as the update itself.
        self.step_count = torch.zeros((), dtype=torch.float32, device=params[0].device)
        # torch.optim counts each parameter's own steps: once a step skips a parameter (no gradient),
        # the counts part and each parameter keeps its own (its bias correction uses it).
        self.param_steps: list[torch.Tensor] | None = None

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
        """Whether :func:`~structnets.training.fit` takes the fast path: :meth:`supports` and the self-check passed."""
        return USE_FAST_ADAM and cls.supports(params) and fast_adam_verified(params[0].dtype, decoupled)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            p.grad = None

    def state_dict(self) -> dict[str, Any]:
        """The moments and the step count, or the per-parameter counts once they parted (for ``fit``'s
        checkpoints); lr and weight decay are ``fit``'s arguments."""
        step: torch.Tensor | list[torch.Tensor] = (
            self.step_count if self.param_steps is None else list(self.param_steps)
        )
        return {"exp_avg": list(self.exp_avg), "exp_avg_sq": list(self.exp_avg_sq), "step": step}

    @torch.no_grad()
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Copy :meth:`state_dict` back (same parameters, shapes and order)."""
        for name in ("exp_avg", "exp_avg_sq"):
            mine, theirs = getattr(self, name), state[name]
            if len(theirs) != len(mine) or any(a.shape != b.shape for a, b in zip(mine, theirs, strict=True)):
                raise ValueError(f"the saved Adam state `{name}` does not match the parameters")
            for a, b in zip(mine, theirs, strict=True):
                a.copy_(b)
        step = state["step"]
        if isinstance(step, list | tuple):
            if len(step) != len(self.params):
                raise ValueError("the saved Adam state `step` does not match the parameters")
            self.param_steps = [
                torch.as_tensor(s, dtype=torch.float32, device=self.step_count.device).clone() for s in step
            ]
        else:
            self.step_count.copy_(step)
            self.param_steps = None

    @torch.no_grad()
    def step(self) -> None:
        index: range | list[int]
        if all(p.grad is not None for p in self.params):
            index = range(len(self.params))
        else:  # parameters without a gradient are skipped (their state and step count stay), as in torch.optim
            index = [i for i, p in enumerate(self.params) if p.grad is not None]
            if not index:
                return
        params = [self.params[i] for i in index]
        if self.param_steps is None and len(index) < len(self.params):
            self.param_steps = [self.step_count.clone() for _ in self.params]
        if self.param_steps is None:
            self.step_count += 1
            steps = [self.step_count] * len(params)
        else:
            steps = [self.param_steps[i] for i in index]
            torch._foreach_add_(steps, 1)
        self._kernel(
            params,
            [p.grad for p in params],
            [self.exp_avg[i] for i in index],
            [self.exp_avg_sq[i] for i in index],
            [],
            steps,
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


def private_kernel(decoupled: bool) -> Callable[..., Any]:
    """torch's private fused Adam (``decoupled=False``) or AdamW kernel."""
    return torch._fused_adamw_ if decoupled else torch._fused_adam_


@functools.cache
def fast_adam_verified(dtype: torch.dtype, decoupled: bool) -> bool:
    """One-time check that :class:`FusedAdam` equals public fused Adam bit for bit.

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
        grads = [[torch.randn(s, generator=generator, dtype=torch.float64).to(dtype) for s in shapes] for _ in range(5)]
        ours = [nn.Parameter(t.clone()) for t in start]
        fast = FusedAdam(ours, lr=1e-2, weight_decay=0.1, decoupled=decoupled)
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
                beta1=FusedAdam.betas[0], beta2=FusedAdam.betas[1], lr=1e-2, weight_decay=0.1,
                eps=FusedAdam.eps, maximize=False,
            )  # fmt: skip
        return all(torch.equal(a.detach(), b) for a, b in zip(ours, theirs, strict=True))
    except Exception:  # noqa: BLE001  (any failure of a private API means: do not use it)
        return False
