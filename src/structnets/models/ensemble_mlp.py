"""E independent MLPs as one flat (E, P) parameter matrix, with hand-written MSE gradients and Jacobians.

Member e of the ensemble is the MLP d → width × (depth − 1) → 1 whose parameters are row e of
x ∈ R^{E×P}; every layer of every member is evaluated at once by one ``torch.baddbmm``. Members may
use different activations (ReLU, Tanh, GELU, SiLU): they are kept permuted so that each
activation's members are contiguous, and each block applies its own σ.

Besides a differentiable :meth:`EnsembleMLP.forward`, the class gives, without autograd,

* :meth:`EnsembleMLP.mse_and_grad`: the per-member mean squared errors L_e = ‖o_e − y_e‖²/m and
  their gradients ∇L_e (E, P) by one hand-written backward sweep, equal to autograd's to float64
  rounding (tested). It is 1.1–2.8× faster than autograd on ``smoothness-rates``' units (CPU time,
  ``benchmarks/rates_refiners.py --gradients``): no graph, no concatenation of the activation
  blocks, broadcast products for layers with one input or one output, GELU and its derivative in
  one pass, and blocks of points small enough for the per-core cache (the sweep is memory-bound);
* :meth:`EnsembleMLP.jacobian`: the per-point Jacobians (E, m, P) for Gauss–Newton methods; given
  the :meth:`EnsembleMLP.forward_pass` of the same point (Levenberg–Marquardt's accepted trial
  point), it skips its forward sweep: the same numbers, 0.10 → 0.06–0.08 s per Jacobian at E = 12,
  m = 2,048, P = 640 (one core, measured on a loaded machine).

Both accept ``members``, a sorted subset of the (internal) member indices, so optimisers can
evaluate only the members still training. Used by ``smoothness-rates`` (Liu, Wang, Wu, Zhang,
arXiv 2602.19691; ``docs/smoothness.md``) with :mod:`structnets.training.lbfgs` and
:mod:`structnets.training.levenberg_marquardt`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import torch

from .._validation import (
    MAX_LAYERS,
    check_fits_in_memory,
    check_float_dtype,
    check_generator,
    check_int,
    check_names,
    check_real,
    itemsize_of,
)

ACTIVATION_FUNCTIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": torch.relu,
    "tanh": torch.tanh,
    "gelu": torch.nn.functional.gelu,
    "silu": torch.nn.functional.silu,
}
"""The activations an :class:`EnsembleMLP` member may use (σ applied elementwise)."""

_aten = torch.ops.aten

CHUNK_ELEMENTS = 2**17
"""Hidden activations per block of points in :meth:`EnsembleMLP.mse_and_grad` (1 MiB in float64).

The sweep is memory-bound (about 20 elementwise passes over every (E, m, width) activation
array), so it runs over blocks of points whose arrays stay in the per-core cache and sums their
losses and gradients; the result equals the one-block sweep to rounding."""


_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _activate_into(name: str, z: torch.Tensor, out: torch.Tensor) -> None:
    """out ← σ(z); for GELU, z is overwritten with σ′(z) (the backward sweep reads it there).

    ReLU and SiLU use ATen's kernels. Tanh and GELU use their closed forms on vectorised kernels,
    because ATen's float64 ``tanh`` and ``gelu``/``gelu_backward`` are scalar loops here, 10–50×
    slower than ``expm1``/``erf``/``exp`` per element (``benchmarks/rates_refiners.py --gradients``):

    * tanh z = sign(z)·(−m)/(2 + m) with m = expm1(−2|z|) ∈ (−1, 0]: no overflow, and full relative
      accuracy near 0 (expm1 is accurate there); equals ``torch.tanh`` to ~1 ulp.
    * GELU z = z·Φ(z), Φ(z) = ½(1 + erf(z/√2)), and GELU′ z = Φ(z) + z·φ(z), φ(z) = e^{−z²/2}/√(2π):
      ATen's own formulas (the exact, ``approximate="none"`` GELU), evaluated once for both.
    """
    if name == "relu":
        torch.clamp_min(z, 0, out=out)  # ATen's relu is clamp_min(z, 0)
    elif name == "silu":
        _aten.silu.out(z, out=out)
    elif name == "tanh":
        torch.abs(z, out=out)
        out.mul_(-2.0)
        torch.expm1(out, out=out)
        out.div_(out + 2.0).neg_()
        torch.copysign(out, z, out=out)
    else:
        cdf = torch.mul(z, _SQRT_HALF)
        torch.erf(cdf, out=cdf)
        cdf.add_(1.0).mul_(0.5)
        torch.mul(z, cdf, out=out)
        density = torch.mul(z, z)
        density.mul_(-0.5)
        torch.exp(density, out=density)
        density.mul_(_INV_SQRT_2PI).mul_(z)
        torch.add(cdf, density, out=z)  # z now holds GELU′(z)


def _backward_into(name: str, grad: torch.Tensor, z: torch.Tensor, a: torch.Tensor, out: torch.Tensor) -> None:
    """out ← grad ⊙ σ′(z), given a = σ(z) (and, for GELU, z replaced by σ′(z) in :func:`_activate_into`)."""
    if name == "relu":
        _aten.threshold_backward.grad_input(grad, a, 0, grad_input=out)
    elif name == "tanh":
        _aten.tanh_backward.grad_input(grad, a, grad_input=out)  # grad·(1 − a²)
    elif name == "gelu":
        torch.mul(grad, z, out=out)
    else:
        _aten.silu_backward.grad_input(grad, z, grad_input=out)


def _bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Batched product a @ b outside autograd: NumPy's ``matmul`` (OpenBLAS) for CPU float64.

    For the small per-member matrices here it is 3–4× faster than ``torch.bmm`` (MKL) on this
    machine's AMD CPU (20 products of 468 × 14 by 14 × 14: 0.08 against 0.27 ms on one core), so
    a loss-and-gradient sweep of a depth-6 unit is 1.2–1.5× faster; the same numbers to rounding
    (2·10⁻¹⁶ relative on the gradients). Elsewhere (a GPU, other dtypes, tensors that need gradients)
    ``torch.bmm``.
    """
    if (
        a.device.type == "cpu"
        and a.dtype == torch.float64
        and b.dtype == torch.float64
        and not (a.requires_grad or b.requires_grad)
    ):
        return torch.from_numpy(np.matmul(a.numpy(), b.numpy()))
    return torch.bmm(a, b)


def _affine(h: torch.Tensor, W: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """z = hW + b for h (E, m, fan_in), W (E, fan_in, fan_out), b (E, 1, fan_out); differentiable.

    A one-input layer (d = 1) is the broadcast product h·W + b: ``torch.baddbmm`` with an inner
    dimension of 1 runs several times slower than one fused elementwise pass. Outside autograd
    the product goes through :func:`_bmm`.
    """
    if W.shape[1] == 1:
        return torch.addcmul(b, h, W)
    if h.requires_grad or W.requires_grad or b.requires_grad:
        return torch.baddbmm(b, h, W)
    return _bmm(h, W).add_(b)


def _input_grad(delta: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """δWᵀ for δ (E, m, fan_out): a broadcast product when fan_out = 1 (the output layer).

    Wᵀ is copied contiguous first: OpenBLAS multiplies by a transposed right operand 2× slower
    on these small matrices (468 × 14 by 14 × 14: 207 against 91 µs for 20 members on one core),
    and the copy (fan_in × fan_out numbers per member) gives the same products, bit for bit here.
    """
    if W.shape[2] == 1:
        return delta * W.transpose(1, 2)
    return _bmm(delta, W.transpose(1, 2).contiguous())


def _weight_grad(h: torch.Tensor, delta: torch.Tensor) -> torch.Tensor:
    """hᵀδ (E, fan_in, fan_out); for fan_out = 1 as (δᵀh)ᵀ, whose (1 × m)(m × fan_in) product is the fast layout."""
    if delta.shape[2] == 1:
        return _bmm(delta.transpose(1, 2), h).transpose(1, 2)
    return _bmm(h.transpose(1, 2), delta)


class EnsembleForward(NamedTuple):
    """One forward pass of some members, kept so a Jacobian at the same point skips it.

    Levenberg–Marquardt evaluates the residuals at a trial point and, when the step is accepted,
    linearises there: the Jacobian's forward sweep is the one just done (:meth:`EnsembleMLP.jacobian`
    with ``forward=``). The parameters, members and inputs are kept so the Jacobian can check that
    the pass is of the point asked for.

    Attributes:
        x: (E', P) parameters; members: the (E',) internal member indices (None: all E).
        layer_inputs: per layer, its input h_{l−1} (E', m, fan_in); the first is the inputs.
        pre_activations: per hidden layer, z_l (for GELU members σ′(z_l), see ``_activate_into``).
        activations: per hidden layer, σ(z_l).
        outputs: (E', m) outputs.
    """

    x: torch.Tensor
    members: torch.Tensor | None
    layer_inputs: list[torch.Tensor]
    pre_activations: list[torch.Tensor]
    activations: list[torch.Tensor]
    outputs: torch.Tensor

    def rows(self, index: torch.Tensor, members: torch.Tensor) -> EnsembleForward:
        """The same pass restricted to rows ``index`` of it, which are the internal ``members``."""
        if index.numel() == self.x.shape[0] and bool((index == torch.arange(index.numel(), device=index.device)).all()):
            return self._replace(members=members)
        acts = [a[index] for a in self.activations]
        # layer l's input is layer l−1's activation: select each array once
        return EnsembleForward(
            self.x[index],
            members,
            [self.layer_inputs[0][index], *acts],
            [z[index] for z in self.pre_activations],
            acts,
            self.outputs[index],
        )


class EnsembleMLP:
    """E independent MLPs d → width × (depth − 1) → 1 with a flat (E, P) parameter matrix.

    Args:
        activations: E ≥ 1 activation names (relu, tanh, gelu, silu), one per member (a list or tuple).
        d: input dimension; width: hidden width; depth: number of weight layers (2 ≤ depth ≤ 100,000);
            E·P parameters (P = d·w + w + (depth − 2)(w² + w) + w + 1) must fit in memory.
        generator: seeds the initialisation U(±1/√fan_in) of weights and biases (PyTorch's
            default), except the first layer, drawn from U(±input_scale/√d).
        input_scale: first-layer initialisation scale (≥ 1 starts units that already vary on
            the scale of high-frequency targets, cf. random Fourier features).
        dtype: parameter dtype, a real floating-point ``torch.dtype``.

    Raises:
        TypeError: ``activations`` is not a list/tuple of names, ``generator`` is not a
            ``torch.Generator`` (it is required), ``dtype`` is not a floating dtype, or a size is not an int.
        ValueError: an unknown or missing activation name, a size out of range, or a network whose
            parameters cannot fit in memory; each message names the argument.

    Attributes:
        x: (E, P) initial parameters in the internal member order; per layer l, W_l row-major as
            (fan_in, fan_out), then b_l.
        order, inverse: ``x[i]`` is the caller's member ``order[i]``; ``values[inverse]`` puts
            per-member values computed in the internal order back in the caller's order.
        names: activation name of every internal member.
    """

    def __init__(
        self,
        activations: list[str],
        d: int,
        width: int,
        depth: int,
        *,
        generator: torch.Generator,
        input_scale: float = 1.0,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        activations = check_names("activations", activations, tuple(ACTIVATION_FUNCTIONS))
        d = check_int("d", d, low=1)
        width = check_int("width", width, low=1)
        depth = check_int("depth", depth, low=2, high=MAX_LAYERS)
        generator = check_generator("generator", generator)
        input_scale = check_real("input_scale", input_scale, low=0.0, low_open=True)
        dtype = check_float_dtype("dtype", dtype)
        E = len(activations)
        # Counted in Python ints before anything is drawn: a huge d or width must not reach torch.rand.
        parameters = d * width + width + (depth - 2) * (width * width + width) + width + 1
        check_fits_in_memory(
            f"`d`={d}, `width`={width}, `depth`={depth} for {E} members",
            E * parameters,
            itemsize=max(8, itemsize_of(dtype)),  # drawn in float64, then cast
            what="parameters",
        )
        sizes = [d] + [width] * (depth - 1) + [1]
        self.shapes: list[tuple[int, ...]] = []
        chunks = []
        for layer, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            bound = (input_scale if layer == 0 else 1.0) / math.sqrt(fan_in)
            W = (torch.rand(E, fan_in, fan_out, generator=generator, dtype=torch.float64) * 2 - 1) * bound
            b = (torch.rand(E, 1, fan_out, generator=generator, dtype=torch.float64) * 2 - 1) * bound
            self.shapes += [(fan_in, fan_out), (1, fan_out)]
            chunks += [W.reshape(E, -1), b.reshape(E, -1)]
        self.E = E
        self.P = sum(math.prod(shape) for shape in self.shapes)
        groups: dict[str, list[int]] = {}
        for index, name in enumerate(activations):
            groups.setdefault(name, []).append(index)
        # Members run permuted so each activation's members are contiguous; `order`/`inverse`
        # translate between the caller's order and the internal one.
        self.order = torch.tensor([i for members in groups.values() for i in members])
        self.inverse = torch.argsort(self.order)
        self.blocks = [(ACTIVATION_FUNCTIONS[name], len(members)) for name, members in groups.items()]
        self.names = [name for name, members in groups.items() for _ in members]
        self.x = torch.cat(chunks, dim=1).to(dtype)[self.order].contiguous()

    # -- helpers ------------------------------------------------------------------------------

    def _runs(self, members: torch.Tensor | None) -> list[tuple[str, int, int]]:
        """(activation, start, stop) row ranges of the (sub)ensemble's contiguous activation blocks."""
        names = self.names if members is None else [self.names[int(i)] for i in members]
        runs: list[tuple[str, int, int]] = []
        for i, name in enumerate(names):
            if runs and runs[-1][0] == name:
                runs[-1] = (name, runs[-1][1], i + 1)
            else:
                runs.append((name, i, i + 1))
        return runs

    def _layers(self, x: torch.Tensor) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Views (W_l of shape (E, fan_in, fan_out), b_l of shape (E, 1, fan_out)) into x."""
        if x.dim() != 2 or x.shape[1] != self.P:
            raise ValueError(f"`x` must have shape (E, {self.P}), got {tuple(x.shape)}")
        parts = x.split([math.prod(shape) for shape in self.shapes], dim=1)
        rows = x.shape[0]
        weights = [parts[2 * k].view(rows, *self.shapes[2 * k]) for k in range(len(self.shapes) // 2)]
        biases = [parts[2 * k + 1].view(rows, *self.shapes[2 * k + 1]) for k in range(len(self.shapes) // 2)]
        return weights, biases

    def _check_members(self, x: torch.Tensor, inputs: torch.Tensor, members: torch.Tensor | None) -> None:
        rows = self.E if members is None else len(members)
        if x.shape[0] != rows or inputs.dim() != 3 or inputs.shape[0] != rows:
            raise ValueError(
                f"`x` and `inputs` must have {rows} rows (one per member evaluated), got {tuple(x.shape)} and "
                f"{tuple(inputs.shape)}"
            )

    def _hidden(
        self, x: torch.Tensor, inputs: torch.Tensor, members: torch.Tensor | None
    ) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
        """Forward pass without autograd: layer inputs h_l, pre-activations z_l, activations, output."""
        self._check_members(x, inputs, members)
        weights, biases = self._layers(x)
        runs = self._runs(members)
        hs: list[torch.Tensor] = []
        zs: list[torch.Tensor] = []
        acts: list[torch.Tensor] = []
        h = inputs
        for layer, (W, b) in enumerate(zip(weights, biases, strict=True)):
            hs.append(h)
            z = _affine(h, W, b)
            if layer + 1 == len(weights):
                return hs, zs, acts, z.squeeze(-1)
            a = torch.empty_like(z)
            for name, start, stop in runs:
                _activate_into(name, z[start:stop], a[start:stop])
            zs.append(z)
            acts.append(a)
            h = a
        raise AssertionError("unreachable: depth ≥ 2")

    # -- public -------------------------------------------------------------------------------

    def forward(self, x: torch.Tensor, inputs: torch.Tensor, members: torch.Tensor | None = None) -> torch.Tensor:
        """Outputs (E, m) of the members with flat parameters x (E, P) at inputs (E, m, d); differentiable.

        Args:
            x: (E', P) parameters of the members evaluated.
            inputs: (E', m, d) their inputs.
            members: sorted internal indices of the E' members evaluated (None: all E).

        Returns:
            (E', m) outputs o_e(inputs_e).
        """
        self._check_members(x, inputs, members)
        weights, biases = self._layers(x)
        runs = self._runs(members)
        h = inputs
        for layer, (W, b) in enumerate(zip(weights, biases, strict=True)):
            h = _affine(h, W, b)
            if layer + 1 < len(weights):
                fns = [(ACTIVATION_FUNCTIONS[name], stop - start) for name, start, stop in runs]
                parts = h.split([count for _, count in fns])
                h = torch.cat([fn(part) for (fn, _), part in zip(fns, parts, strict=True)])
        return h.squeeze(-1)

    def outputs(self, x: torch.Tensor, inputs: torch.Tensor, members: torch.Tensor | None = None) -> torch.Tensor:
        """Outputs (E', m) like :meth:`forward` (the same numbers), without autograd and without copies.

        Args:
            x: (E', P) parameters; inputs: (E', m, d).
            members: sorted internal indices of the E' members evaluated (None: all E).

        Returns:
            (E', m) outputs, detached.
        """
        return self._hidden(x.detach(), inputs, members)[3]

    def forward_pass(
        self, x: torch.Tensor, inputs: torch.Tensor, members: torch.Tensor | None = None
    ) -> EnsembleForward:
        """:meth:`outputs` with the pass kept (:class:`EnsembleForward`), for a later :meth:`jacobian`."""
        x = x.detach()
        hs, zs, acts, outputs = self._hidden(x, inputs, members)
        return EnsembleForward(x, members, hs, zs, acts, outputs)

    def mse_and_grad(
        self, x: torch.Tensor, inputs: torch.Tensor, targets: torch.Tensor, members: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-member mean squared errors and their gradients, by a hand-written backward sweep.

        L_e = (1/m) Σ_i (o_e(inputs_ei) − targets_ei)², ∂L_e/∂o_ei = (1/m)·2r_ei, then for each
        layer z_l = h_{l−1}W_l + b_l: ∂L/∂W_l = h_{l−1}ᵀδ_l, ∂L/∂b_l = Σ_i δ_l,i and
        δ_{l−1} = (δ_l W_lᵀ) ⊙ σ′(z_{l−1}), over blocks of points (``CHUNK_ELEMENTS``) whose sums
        are added. The same quantities autograd computes on ``((forward(x) − targets)**2).mean(1)``,
        to float64 rounding.

        Args:
            x: (E', P) parameters; inputs: (E', m, d); targets: (E', m).
            members: sorted internal indices of the E' members evaluated (None: all E).

        Returns:
            (losses (E',), gradients (E', P)), both detached.
        """
        x = x.detach()
        self._check_members(x, inputs, members)
        if targets.shape != inputs.shape[:2]:
            raise ValueError(f"`targets` must have shape {tuple(inputs.shape[:2])}, got {tuple(targets.shape)}")
        m = inputs.shape[1]
        width = max(shape[1] for shape in self.shapes[::2])
        chunk = max(1, CHUNK_ELEMENTS // max(1, x.shape[0] * width))
        if chunk >= m:
            squares, grad = self._chunk_sums(x, inputs, targets, members, m)
        else:
            squares = torch.zeros(x.shape[0], dtype=x.dtype, device=x.device)
            grad = torch.zeros_like(x)
            for start in range(0, m, chunk):
                part_squares, part_grad = self._chunk_sums(
                    x, inputs[:, start : start + chunk], targets[:, start : start + chunk], members, m
                )
                squares += part_squares
                grad += part_grad
        return squares / m, grad

    def _chunk_sums(
        self, x: torch.Tensor, inputs: torch.Tensor, targets: torch.Tensor, members: torch.Tensor | None, m: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Σ_i r_ei² and Σ_i ∇(r_ei²/m) over the points of one chunk (m: the total number of points)."""
        weights, _ = self._layers(x)
        hs, zs, acts, out = self._hidden(x, inputs, members)
        residual = out - targets
        squares = (residual * residual).sum(dim=1)
        delta = (residual * (2.0 / m))[:, :, None]
        grad = torch.empty_like(x)
        parts = grad.split([math.prod(shape) for shape in self.shapes], dim=1)
        runs = self._runs(members)
        for layer in reversed(range(len(weights))):
            rows, fan_in, fan_out = weights[layer].shape
            parts[2 * layer].view(rows, fan_in, fan_out).copy_(_weight_grad(hs[layer], delta))
            parts[2 * layer + 1].view(rows, 1, fan_out).copy_(delta.sum(dim=1, keepdim=True))
            if layer > 0:
                grad_a = _input_grad(delta, weights[layer])
                delta = torch.empty_like(grad_a)
                z, a = zs[layer - 1], acts[layer - 1]
                for name, start, stop in runs:
                    _backward_into(name, grad_a[start:stop], z[start:stop], a[start:stop], delta[start:stop])
        return squares, grad

    def jacobian(
        self,
        x: torch.Tensor,
        inputs: torch.Tensor,
        members: torch.Tensor | None = None,
        *,
        out: torch.Tensor | None = None,
        forward: EnsembleForward | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Outputs (E', m) and their Jacobians (E', m, P) with respect to each member's parameters.

        Each output o_{e,i} depends on member e's parameters only, and through the pre-activations
        z_l = h_{l−1}W_l + b_l of point i only, so one backward sweep of the per-point signals
        δ_l = ∂o_i/∂z_l (δ_L = 1, δ_l = (δ_{l+1}W_{l+1}ᵀ) ⊙ σ′(z_l)) gives every row:
        ∂o_i/∂W_l[a, b] = h_{l−1,a}·δ_{l,b} and ∂o_i/∂b_l = δ_l. Cost O(mP), the same as m
        per-point gradients computed together, instead of m backward passes. Columns follow the
        layout of x (per layer: W_l row-major as (fan_in, fan_out), then b_l); they are written
        into one preallocated tensor.

        Args:
            x: (E', P) parameters; inputs: (E', m, d).
            members: sorted internal indices of the E' members evaluated (None: all E).
            out: optional contiguous (E', m, P) tensor of x's dtype and device to write the
                Jacobians into; a caller that linearises repeatedly (Levenberg–Marquardt) saves
                the fresh pages of a new allocation each time (~30 ms per 60 MB here).
            forward: optional :meth:`forward_pass` of these very ``x``, ``inputs`` and ``members``
                (checked, exactly), whose sweep is then reused: the same numbers, one forward
                sweep fewer.

        Returns:
            (outputs (E', m), Jacobians (E', m, P)); the Jacobians are ``out`` when given.
        """
        x = x.detach()
        weights, _ = self._layers(x)
        if forward is None:
            hs, zs, acts, outputs = self._hidden(x, inputs, members)
        else:
            self._check_members(x, inputs, members)
            same_members = (forward.members is None and members is None) or (
                forward.members is not None and members is not None and torch.equal(forward.members, members)
            )
            if not (
                same_members
                and forward.x.shape == x.shape
                and torch.equal(forward.x, x)
                and forward.layer_inputs[0].shape == inputs.shape
                and torch.equal(forward.layer_inputs[0], inputs)
            ):
                raise ValueError("`forward` must be the forward_pass of the same `x`, `inputs` and `members`")
            hs, zs, acts, outputs = forward.layer_inputs, forward.pre_activations, forward.activations, forward.outputs
        rows, m = outputs.shape
        if out is None:
            J = torch.empty(rows, m, self.P, dtype=x.dtype, device=x.device)
        elif (
            out.shape != (rows, m, self.P) or not out.is_contiguous() or out.dtype != x.dtype or out.device != x.device
        ):
            raise ValueError(
                f"`out` must be a contiguous {x.dtype} tensor of shape {(rows, m, self.P)} on {x.device}, got "
                f"{out.dtype} {tuple(out.shape)} on {out.device} (contiguous: {out.is_contiguous()})"
            )
        else:
            J = out
        offsets = [0]
        for shape in self.shapes:
            offsets.append(offsets[-1] + math.prod(shape))
        runs = self._runs(members)
        delta = torch.ones(rows, m, 1, dtype=x.dtype, device=x.device)
        for layer in reversed(range(len(weights))):
            fan_in, fan_out = self.shapes[2 * layer]
            w_cols = J[:, :, offsets[2 * layer] : offsets[2 * layer + 1]].unflatten(2, (fan_in, fan_out))
            torch.mul(hs[layer][:, :, :, None], delta[:, :, None, :], out=w_cols)
            J[:, :, offsets[2 * layer + 1] : offsets[2 * layer + 2]] = delta
            if layer > 0:
                grad_a = _input_grad(delta, weights[layer])
                delta = torch.empty_like(grad_a)
                z, a = zs[layer - 1], acts[layer - 1]
                for name, start, stop in runs:
                    _backward_into(name, grad_a[start:stop], z[start:stop], a[start:stop], delta[start:stop])
        return outputs, J


__all__ = ["ACTIVATION_FUNCTIONS", "EnsembleForward", "EnsembleMLP"]
