"""A :class:`~structnets.nn.CertifiedBatch` computation by the compiled kernel (float32/float64, CPU).

The same test, values, gradient factors and flags as the tensor path of ``_certified_batch``, but
each group of equal-shape maps is one call of :func:`._fused_certify.certify_group`, and the glue
around the calls is kept to a few tensor operations per group (issue 26: at 5 × 50 the Python and
tensor glue around the kernel, not the kernel, was most of the certified step's extra time). What
the kernel does not need never becomes a tensor: margins and fixed steps go in as NumPy arrays,
s = 2·sigmoid(θ) and ds/dθ of learnable steps are formed in the kernel, every group writes its
values and factors into one array per computation, so nothing is concatenated afterwards.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from . import _fused_certify
from ._power_mode_gradient import _Group, _Plan
from ._verified_gram import _PRECISION, _precision_for, verified_ratio

_NUMPY: dict[torch.dtype, np.dtype[Any]] = {torch.float32: np.dtype(np.float32), torch.float64: np.dtype(np.float64)}


def fused_place(dtype: torch.dtype, device: torch.device) -> bool:
    """Whether a place (dtype, device) runs the compiled kernel: numba present, float32/float64 weights, the CPU."""
    return _fused_certify.AVAILABLE and device.type == "cpu" and dtype in _NUMPY


class LogitValue(float):
    """The value of a 0-d step logit θ a τ was formed with (compared as a number: NaN matches nothing)."""

    __slots__ = ()


class FusedGroup:
    """One group's stacked inputs for the kernel (called under ``torch.no_grad``).

    ``inputs`` are the members' weights (the tensors that get a gradient, with the step logits θ
    of learnable steps appended here); ``steps`` are the fixed step floats (τ maps) or None.
    """

    __slots__ = ("kind", "layers", "inputs", "snapshot", "vectors", "margins", "sigmoid", "steps", "entry_steps")

    def __init__(
        self, kind: str, layers: list[Any], inputs: list[torch.Tensor], learnable: bool, margins: list[float]
    ) -> None:
        self.kind, self.layers, self.inputs = kind, layers, inputs
        self.snapshot = torch.stack(inputs)  # the content certified (take compares against it)
        self.vectors = torch.stack([layer.power_vector for layer in layers])
        self.margins = margins
        self.sigmoid: torch.Tensor | None = None
        self.steps: list[float] | None = None
        self.entry_steps: list[Any]  # what each member's τ is formed with: θ's content, the float, or None
        if learnable:
            logits = [layer.step_logit for layer in layers]
            inputs += logits
            stacked = torch.stack(logits)
            self.sigmoid = torch.sigmoid(stacked)  # s = 2·sigmoid(θ) and ds/dθ: formed by the kernel
            self.entry_steps = [LogitValue(value) for value in stacked.tolist()]
        elif kind == "tau":
            self.steps = [layer.step for layer in layers]
            self.entry_steps = list(self.steps)
        else:
            self.entry_steps = [None] * len(layers)


def compute_fused(groups: list[FusedGroup]) -> tuple[_Plan, list[_Group], np.ndarray, list[torch.Tensor]]:
    """Certify every group of one place (dtype, CPU) by one kernel call each.

    Returns the plan (values with their gradient factors), the groups as :class:`_Group` (what the
    power-mode gradient reads), the flags (entries × 3: passed and usable, retried, usable) and
    the next power vectors, in the order of the groups' members.
    """
    dtype = groups[0].snapshot.dtype
    numpy_dtype = _NUMPY[dtype]
    total = sum(len(group.layers) for group in groups)
    values = np.empty(total, dtype=numpy_dtype)
    slopes = np.empty(total, dtype=numpy_dtype)
    inverses = np.empty(total, dtype=numpy_dtype)
    factors = np.empty(total, dtype=numpy_dtype)
    flags = np.empty((total, 3), dtype=np.bool_)
    step_slopes = np.empty(total, dtype=numpy_dtype)
    steps = np.empty(total, dtype=np.float64)
    margins = np.empty(total, dtype=np.float64)
    following: list[torch.Tensor] = []
    formed: list[_Group] = []
    offset = 0
    with _fused_certify.single_threaded_blas():
        for group in groups:
            count = len(group.layers)
            part = slice(offset, offset + count)
            offset += count
            rows, cols = group.snapshot.shape[-2:]
            n, inner = min(rows, cols), max(rows, cols)
            # the kernel's Gram product is SciPy's BLAS: IEEE float32 whatever torch's matmul precision
            precision = _precision_for(dtype, n, inner, True)
            margins[part] = group.margins
            if group.steps is not None:
                steps[part] = group.steps
            elif group.kind == "norm":
                steps[part] = 1.0
            left = np.empty((count, rows), dtype=numpy_dtype)
            ahead = np.empty((count, cols), dtype=numpy_dtype)
            sigmoid = group.sigmoid.numpy() if group.sigmoid is not None else np.empty(0, dtype=numpy_dtype)
            _fused_certify.run_kernel(
                group.snapshot.numpy(), group.vectors.numpy(), margins[part], steps[part], group.kind == "tau",
                _NUMPY[precision], verified_ratio(n, inner, precision), _PRECISION[precision][1], sigmoid,
                values[part], slopes[part], inverses[part], factors[part], flags[part], ahead, left, step_slopes[part],
            )  # fmt: skip
            following.extend(torch.from_numpy(ahead).unbind(0))
            learnable = group.sigmoid is not None
            formed.append(
                _Group(
                    group.kind,
                    group.layers,
                    group.snapshot,
                    group.vectors,
                    None,
                    None,
                    torch.from_numpy(steps[part]),
                    group.entry_steps,
                    None,
                    group.inputs,
                    torch.from_numpy(left),
                    torch.from_numpy(step_slopes[part]) if learnable else None,
                )
            )
    plan = _Plan(
        torch.from_numpy(values),
        torch.from_numpy(slopes),
        torch.from_numpy(inverses),
        formed,
        torch.from_numpy(factors),
        torch.from_numpy(flags[:, 2]),
    )
    return plan, formed, flags, following


__all__ = ["FusedGroup", "LogitValue", "compute_fused", "fused_place"]
