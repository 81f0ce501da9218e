"""Lipschitz constants in ℓ₂: certified upper bounds, empirical lower bounds, certified accuracy.

Upper bound: Lip(f ∘ g) ≤ Lip(f)·Lip(g), so a sequential model's constant is at most the product
of its layers' certified constants (``layer.lipschitz_bound()`` where a layer provides it, the
certified spectral bound of ``nn.Linear`` weights, known constants of activations).

Lower bound: any ‖J_f(x)‖₂ and any ratio ‖f(x) − f(y)‖/‖x − y‖ is ≤ Lip(f); we take the largest
over the given inputs and over pairs improved by gradient ascent on the ratio.

Certified accuracy: if f is L-Lipschitz in ℓ₂ and the margin m(x) = f_y(x) − max_{j≠y} f_j(x)
satisfies m(x) ≥ √2·L·ε, no perturbation with ‖δ‖₂ < ε changes the prediction, because each
difference f_y − f_j is √2·L-Lipschitz (Tsuzuku, Sato, Sugiyama, NeurIPS 2018, Prop. 1). For one
output (binary, sign of f) the margin is |f(x)| and the factor is L.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import torch
from torch import nn

from .._validation import MAX_STEPS, check_fits_in_memory, check_int, check_real
from ._certificate_rules import LipschitzBound, certify_model
from ._certificate_rules import _multiply_round_up as _multiply_round_up  # used by lipschitz_mnist_conv


@torch.no_grad()
def lipschitz_upper_bound(
    model: nn.Module, *, trust_hooks: bool = False, autocast_dtype: torch.dtype | None = None
) -> LipschitzBound:
    """Return a certified upper bound on the ℓ₂ Lipschitz constant of ``model`` as it will compute.

    The certificate is for exact arithmetic on the operands the forward uses (the stored
    parameters, or their autocast rounding); floating-point evaluation adds a rounding error of
    order depth × unit round-off (measured in ``docs/lipschitz.md``). The model is walked call by
    call: an ``nn.Sequential`` slot by slot (a module at k positions counts k times), every
    parameter and buffer checked finite *now*, and anything the walk cannot see refused (the rules
    and why: :mod:`structnets.analysis._certificate_rules`, ``docs/lipschitz.md``).

    Args:
        model: an ``nn.Sequential`` (or nested ones) of layers each of which either has a
            ``lipschitz_bound()`` method (the structnets layers), is an ``nn.Linear`` (bound
            B(W) ≥ ‖W‖₂, certified float64 Gram eigenvalue rounded up), a ``Dropout`` (1 in eval
            mode, 1/(1 − p) in training mode), a ``LeakyReLU`` (max(1, |slope|)), or one of the
            activations with a known constant (ReLU, Tanh, ...); or ``torch.compile`` of such a model.
        trust_hooks: certify a model with forward hooks or pre-hooks on the stated assumption that
            they change no output (each is named in the result's ``assumptions``); by default
            such a model is refused.
        autocast_dtype: certify the forward as it runs under ``torch.autocast`` to this dtype
            (``torch.float16`` or ``torch.bfloat16``): matmul operands rounded to it. None: the
            dtype of an autocast region active now for the model's device, else no rounding.

    Returns:
        a :class:`LipschitzBound` (a float): Π over call positions of their certified constants,
        each product rounded up, ≥ the true Lipschitz constant of the exact-arithmetic model, with
        ``assumptions`` (empty unless ``trust_hooks``) and ``operand_dtype``.

    Raises:
        TypeError: naming a layer whose Lipschitz constant is unknown.
        ValueError: naming the module, hook or tensor where the certificate does not hold as the
            model computes (a ``bound="power"`` layer in training mode, non-finite parameters or
            steps, hooks, a forward replaced on the instance, an active torch-function mode, a
            layer that cannot certify reduced-precision operands under autocast).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be an nn.Module, got {type(model).__name__}")
    return certify_model(model, trust_hooks=trust_hooks, autocast_dtype=autocast_dtype)


def jacobian_spectral_norms(model: Callable[[torch.Tensor], torch.Tensor], inputs: torch.Tensor) -> torch.Tensor:
    """Return ‖J_f(xᵢ)‖₂ for every row xᵢ of ``inputs``.

    Args:
        model: a function ``(n, d) -> (n, k)`` acting row by row.
        inputs: (n, d) points.

    Returns:
        (n,) float64 tensor of Jacobian spectral norms (each a lower bound on Lip(f)).
    """
    if not callable(model):
        raise TypeError(f"`model` must be callable (n, d) -> (n, k), got {type(model).__name__}")
    x = _points(inputs, "inputs")
    params = [p for p in getattr(model, "parameters", lambda: [])()]
    if params and params[0].is_floating_point():
        x = x.to(params[0].dtype)
    x = x.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        try:
            out = model(x)
        except RuntimeError as error:  # e.g. a (n, d) that does not match the model's input size
            raise ValueError(f"`model` cannot be applied to `inputs` of shape {tuple(x.shape)}: {error}") from error
        if not torch.is_tensor(out) or out.dim() not in (1, 2) or out.shape[0] != x.shape[0]:
            raise ValueError(
                f"`model` must map `inputs` (n, d) to (n, k) or (n,), got "
                f"{tuple(out.shape) if torch.is_tensor(out) else type(out).__name__}"
            )
        if out.dim() == 1:
            out = out[:, None]
        rows = []
        for k in range(out.shape[1]):
            (grad,) = torch.autograd.grad(out[:, k].sum(), x, retain_graph=k + 1 < out.shape[1])
            rows.append(grad)
    jac = torch.stack(rows, dim=1).to(torch.float64)  # (n, k, d)
    return torch.linalg.matrix_norm(jac, ord=2)


def lipschitz_lower_bound(
    model: Callable[[torch.Tensor], torch.Tensor],
    inputs: torch.Tensor | np.ndarray,
    *,
    steps: int = 50,
    lr: float = 0.01,
    pairs: int = 64,
    seed: int = 0,
) -> float:
    """Return an empirical lower bound on the ℓ₂ Lipschitz constant of ``model``.

    Two estimates, both ≤ Lip(f): (1) max over ``inputs`` of the Jacobian spectral norm
    ‖J_f(x)‖₂; (2) gradient ascent (Adam, ``steps`` steps) on r(x, y) = ‖f(x) − f(y)‖/‖x − y‖
    from ``pairs`` starting pairs (inputs and nearby points, and random pairs of inputs).

    Args:
        model: a function ``(n, d) -> (n, k)``; its mode is left as is (call ``eval()`` first to
            measure the deployed model).
        inputs: (n, d) points.
        steps: ascent steps (≥ 0).
        lr: Adam step size (> 0).
        pairs: number of pairs ascended (≥ 1).
        seed: seeds the choice of pairs.

    Returns:
        max of all Jacobian norms and all ratios seen (a float ≤ Lip(f)).
    """
    if not callable(model):
        raise TypeError(f"`model` must be callable (n, d) -> (n, k), got {type(model).__name__}")
    steps = check_int("steps", steps, low=0, high=MAX_STEPS)
    lr = check_real("lr", lr, low=0.0, low_open=True)
    pairs = check_int("pairs", pairs, low=1)
    seed = check_int("seed", seed, low=0, high=2**63 - 1)
    x = _points(inputs, "inputs")
    check_fits_in_memory(f"`pairs`={pairs} (d={x.shape[1]})", 4 * pairs * x.shape[1], what="values")
    params = [p for p in getattr(model, "parameters", lambda: [])()]
    dtype = params[0].dtype if params else x.dtype if x.is_floating_point() else torch.float32
    x = x.to(dtype)
    best = float(jacobian_spectral_norms(model, x).max())
    if steps == 0:
        return best
    generator = torch.Generator().manual_seed(seed)
    n = x.shape[0]
    a_index = torch.randint(n, (pairs,), generator=generator)
    b_index = torch.randint(n, (pairs,), generator=generator)
    a = x[a_index].clone()
    half = pairs // 2
    b = x[b_index].clone()
    # half the pairs start local (a + small offset), half are random pairs of inputs.
    scale = x.std().clamp_min(1e-3) * 1e-2
    # drawn on the CPU generator, then moved: the same pairs on every device
    b[:half] = a[:half] + scale * torch.randn(a[:half].shape, generator=generator, dtype=dtype).to(x.device)
    a.requires_grad_(True)
    b.requires_grad_(True)
    optimizer = torch.optim.Adam([a, b], lr=lr)
    requires = [p.requires_grad for p in params]
    for p in params:
        p.requires_grad_(False)
    try:
        for _ in range(steps):
            optimizer.zero_grad()
            ratio = _ratios(model, a, b)
            best = max(best, float(ratio.detach().max()))
            (-ratio.sum()).backward()
            optimizer.step()
        with torch.no_grad():
            best = max(best, float(_ratios(model, a, b).max()))
    finally:
        for p, flag in zip(params, requires):
            p.requires_grad_(flag)
    return best


def _points(inputs: torch.Tensor | np.ndarray, name: str) -> torch.Tensor:
    """``inputs`` as a non-empty, finite, real (n, d) tensor, or an error naming ``name``."""
    if torch.is_tensor(inputs):
        x = inputs
    else:
        try:
            array = np.asarray(inputs)
        except (TypeError, ValueError) as error:
            raise TypeError(
                f"`{name}` must be a real (n, d) array or tensor, got {type(inputs).__name__}: {error}"
            ) from None
        if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
            raise TypeError(f"`{name}` must be a real (n, d) array or tensor, got dtype {array.dtype}")
        x = torch.from_numpy(np.ascontiguousarray(array))
    if x.is_complex() or x.dtype == torch.bool:
        raise TypeError(f"`{name}` must be real, got dtype {x.dtype}")
    if x.dim() != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"`{name}` must be a non-empty (n, d) array, got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        x = x.to(torch.get_default_dtype())
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"`{name}` must be finite, got NaN or infinite entries")
    return x


def _ratios(model: Callable[[torch.Tensor], torch.Tensor], a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out_a, out_b = model(a), model(b)
    num = torch.linalg.vector_norm((out_a - out_b).reshape(a.shape[0], -1).to(torch.float64), dim=1)
    den = torch.linalg.vector_norm((a - b).to(torch.float64), dim=1)
    return torch.where(den > 0, num / den.clamp_min(1e-300), torch.zeros_like(num))


def certified_accuracy(
    logits: torch.Tensor | np.ndarray,
    labels: torch.Tensor | np.ndarray,
    eps: float,
    lipschitz: float = 1.0,
) -> float:
    """Fraction of points correctly classified with a margin that certifies ℓ₂ radius ``eps``.

    Multiclass (k ≥ 2 logits): correct and f_y − max_{j≠y} f_j ≥ √2·L·ε (Tsuzuku et al. 2018).
    One logit (binary, class 1 iff f > 0): correct and |f| ≥ L·ε. ε = 0 gives clean accuracy
    (ties count as wrong). The margin is rounded down and √2·L·ε up, so a counted point satisfies
    the inequality exactly (fl(√2)·ε rounded to nearest is below √2·ε for 8 % of ε).

    Args:
        logits: (n, k) or (n,) / (n, 1) outputs of an L-Lipschitz model.
        labels: (n,) class indices (0/1 for one logit).
        eps: ℓ₂ radius ≥ 0.
        lipschitz: L > 0, a certified upper bound of the model's Lipschitz constant.

    Returns:
        the certified accuracy in [0, 1].
    """
    eps = check_real("eps", eps, low=0.0)
    lipschitz = check_real("lipschitz", lipschitz, low=0.0, low_open=True)
    z = _real_array(logits, "logits").to(torch.float64)
    y = _real_array(labels, "labels")
    if y.is_floating_point():
        if not bool(torch.isfinite(y).all()) or not bool((y == torch.round(y)).all()):
            raise ValueError("`labels` must hold integer class indices, got non-integer values")
    y = y.long()
    if z.dim() not in (1, 2):
        raise ValueError(f"`logits` must be (n, k) or (n,), got shape {tuple(z.shape)}")
    if not bool(torch.isfinite(z).all()):
        raise ValueError("`logits` must be finite, got NaN or infinite entries")
    if z.dim() == 2 and z.shape[1] == 0:
        raise ValueError(f"`logits` must hold at least one column (class score), got shape {tuple(z.shape)}")
    if z.dim() == 2 and z.shape[1] == 1:
        z = z[:, 0]
    if y.dim() != 1 or z.shape[0] != y.shape[0]:
        raise ValueError(f"`labels` must be (n,) matching `logits` {tuple(z.shape)}, got {tuple(y.shape)}")
    if z.shape[0] == 0:
        raise ValueError("`logits` must hold at least one row, got 0")
    if z.dim() == 1:
        if ((y != 0) & (y != 1)).any():
            raise ValueError("`labels` must be 0/1 for a single logit")
        signed = torch.where(y == 1, z, -z)
        ok = (signed > 0) & (signed >= _multiply_round_up(lipschitz, eps))
        return float(ok.double().mean())
    k = z.shape[1]
    if ((y < 0) | (y >= k)).any():
        raise ValueError(f"`labels` must be in [0, {k}), got values outside")
    margin = _margins_round_down(z, y)
    ok = (margin > 0) & (margin >= _sqrt2_times_round_up(_multiply_round_up(lipschitz, eps)))
    return float(ok.double().mean())


def _sqrt2_times_round_up(value: float) -> float:
    """A float t ≥ √2·value exactly (value ≥ 0): fl(√2)·value can round below it (e.g. value = 0.8459776330097977)."""
    product = math.sqrt(2.0) * value
    while math.isfinite(product) and Fraction(product) ** 2 < 2 * Fraction(value) ** 2:
        product = math.nextafter(product, math.inf)
    return product


def _margins_round_down(z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """f_y − max_{j≠y} f_j per row of float64 logits ``z`` (n, k), each ≤ the exact difference.

    The float64 difference rounds to nearest, possibly up; its rounding error is recovered exactly
    (Knuth's TwoSum) and the result moved one ulp down where the exact difference is smaller.
    """
    true = z.gather(1, y[:, None])[:, 0]
    others = -z.scatter(1, y[:, None], -math.inf).max(dim=1).values
    total = true + others
    back = total - true
    error = (true - (total - back)) + (others - back)
    below = torch.isfinite(total) & (error < 0)
    return torch.where(below, torch.nextafter(total, torch.full_like(total, -math.inf)), total)


def _real_array(value: torch.Tensor | np.ndarray, name: str) -> torch.Tensor:
    if torch.is_tensor(value):
        tensor = value.detach()
    else:
        try:
            array = np.asarray(value)
        except (TypeError, ValueError) as error:
            raise TypeError(f"`{name}` must be a real array or tensor, got {type(value).__name__}: {error}") from None
        if not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
            raise TypeError(f"`{name}` must be a real array or tensor, got dtype {array.dtype}")
        tensor = torch.from_numpy(np.ascontiguousarray(array))
    if tensor.is_complex():
        raise TypeError(f"`{name}` must be real, got dtype {tensor.dtype}")
    return tensor


__all__ = [
    "LipschitzBound",
    "certified_accuracy",
    "jacobian_spectral_norms",
    "lipschitz_lower_bound",
    "lipschitz_upper_bound",
]
