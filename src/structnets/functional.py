"""Pure tensor maths the layers use: certified spectral-norm bounds, safe rounding, power iteration.

The 1-Lipschitz guarantees of :class:`GradientStepResidual` (step τ ≤ 2/‖W‖₂², Murari, Furuya,
Schönlieb, *Approximation theory for 1-Lipschitz ResNets*, NeurIPS 2025, arXiv 2505.12003, eq. of
the residual layer) and :class:`NormConstrainedLinear` (‖A‖₂ ≤ 1) need a number B with
B ≥ ‖W‖₂ *for certain*. Power iteration only ever gives σ̂ ≤ ‖W‖₂ (a Rayleigh quotient of WᵀW is a
lower bound), so it can undershoot and must not be used for the constraint. The choices here:

* ``"exact"``: λ̂ = largest eigenvalue of the smaller Gram matrix (WWᵀ or WᵀW), formed and
  diagonalised in float64 (LAPACK ``syevd``, backward stable). Rounding: forming G costs at most
  n·γ_n‖W‖₂² ≤ n²·u‖W‖₂² and the eigensolver c·n·u‖G‖₂ (u = 2⁻⁵³); we divide λ̂ by (1 − δ) with
  δ = 8·n²·u + 1e-15, which covers both, so B = √(λ̂ / (1 − δ)) ≥ ‖W‖₂. Cost: one n³ float64
  eigen-solve, n = min(rows, cols) (≈ 0.4 ms at n = 100, 2 ms at n = 200 on one core).
  Differentiable (the gradient of λ_max is v vᵀ for its unit eigenvector v when it is simple).
* ``"frobenius"``: ‖W‖_F ≥ ‖W‖₂; exact arithmetic aside, free, but loose by up to √rank.
* ``"gram"``: Gram iteration (Delattre, Barthélemy, Araujo, Allauzen, ICML 2023): with
  G₀ = W, G_{t+1} = G_tᵀG_t, ‖G_t‖_F^{1/2^t} = (Σ σᵢ^{2^{t+1}})^{1/2^{t+1}} ≥ σ₁ for every t
  (a Schatten-2^{t+1} norm). Each step is rescaled by its Frobenius norm to avoid overflow, and the
  logs of the scales are accumulated. Loose by at most rank^{1/2^{t+1}}.
"""

from __future__ import annotations

import math

import torch

from ._division_scale import division_scale
from ._validation import MAX_STEPS, check_choice, check_int, check_real

BOUNDS: tuple[str, ...] = ("exact", "gram", "frobenius")

# What the constrained layers accept: the certified methods above, plus ``"power"`` (the paper's
# power-iteration estimate while training, uncertified until eval, certified by ``"exact"``) and
# ``"verified"`` (the power estimate with a margin, certified at every training step by a
# Cholesky test, :func:`verified_square_bound`; ``"exact"`` when the test fails and at eval).
LAYER_BOUNDS: tuple[str, ...] = (*BOUNDS, "power", "verified")


def certificate_method(layer_bound: str) -> str:
    """Return the :func:`spectral_norm_bound` method that certifies a layer with ``layer_bound``."""
    check_choice("layer_bound", layer_bound, LAYER_BOUNDS)
    return "exact" if layer_bound in ("power", "verified") else layer_bound


_UNIT_ROUNDOFF_F64 = 2.0**-53


def spectral_norm_bound(weight: torch.Tensor, method: str = "exact", iters: int = 6) -> torch.Tensor:
    """Return a certified upper bound B ≥ ‖weight‖₂ (largest singular value), rounded up.

    Args:
        weight: (m, n) matrix, any floating dtype (float64, float32, float16, bfloat16).
        method: ``"exact"`` (float64 eigenvalue of the Gram matrix with a rounding margin, tight to
            ~1e-12 relative), ``"gram"`` (Gram iteration, ``iters`` squarings) or ``"frobenius"``.
        iters: number of Gram-iteration steps t (only for ``"gram"``), an int in [1, 30].

    Returns:
        a 0-d tensor of ``weight``'s dtype with B ≥ ‖weight‖₂ exactly: the float64 bound is cast to
        the dtype and moved one representable step towards +∞ whenever the cast rounded it down
        (so it may be +∞ in float16 for very large weights, never below ‖W‖₂). Differentiable in
        ``weight``.

    Raises:
        ValueError: ``weight`` has NaN or ±∞ entries (no bound exists).

    Formula: B = √(λ_max(fl(WᵀW)) / (1 − δ)), δ = 8·n²·2⁻⁵³ + 10⁻¹⁵ (``"exact"``);
    B = ‖G_t‖_F^{2^{−t}} (``"gram"``); B = ‖W‖_F (``"frobenius"``); each on W scaled by an exact
    power of two so that neither underflow nor overflow can bias it.
    """
    check_choice("method", method, BOUNDS)
    _check_weight(weight)
    iters = check_int("iters", iters, low=1, high=30)
    # No bound exists for a non-finite W; refuse it (outside compiled graphs, which cannot branch on
    # data: there, and in squared_norm_bound, the result is NaN).
    if not torch.compiler.is_compiling() and not bool(torch.isfinite(weight.detach()).all()):
        raise ValueError("`weight` must be finite: it has NaN or ±inf entries, so no bound on ‖W‖₂ exists")
    square, exponent = _scaled_square(weight, method, iters)
    # √ of the scaled square, rounded up in float64, then the exact power-of-two scale undone.
    return _round_up(_ldexp_round_up(_sqrt_up(square), -exponent), weight.dtype)


def _check_weight(weight: object) -> None:
    if not isinstance(weight, torch.Tensor):
        raise TypeError(f"`weight` must be a torch.Tensor, got {type(weight).__name__}")
    if weight.dim() != 2:
        raise ValueError(f"`weight` must be a 2-D matrix, got shape {tuple(weight.shape)}")
    if not weight.is_floating_point():
        raise TypeError(f"`weight` must have a real floating dtype, got {weight.dtype}")


def squared_norm_bound(weight: torch.Tensor, method: str = "exact", iters: int = 6) -> torch.Tensor:
    """Return a float64 number Q with Q ≥ ‖weight‖₂² exactly (the real number Q stands for).

    The building block of the certified layers: τ = s/Q and A = V/max(1, √Q) are then formed in
    float64 and rounded in the safe direction (:func:`round_down`, :func:`sqrt_round_up`).

    ``weight`` is first multiplied by 2^k (exact) so that max |wᵢⱼ| ∈ [1, 2): the Gram matrix then
    neither overflows nor loses its small entries to underflow, for any finite W between 1e-300
    and 1e300. The scale is divided out at the end in float64; if ‖W‖₂² itself lies outside
    float64's range the result is +∞ (still an upper bound) or rounded up to a subnormal.

    Args:
        weight: (m, n) matrix, any floating dtype.
        method: one of :data:`BOUNDS`.
        iters: Gram-iteration steps (``"gram"`` only).

    Returns:
        a 0-d float64 tensor, differentiable in ``weight``; 0 exactly when W = 0; NaN when W has
        a non-finite entry.
    """
    check_choice("method", method, BOUNDS)
    _check_weight(weight)
    iters = check_int("iters", iters, low=1, high=30)
    square, exponent = _scaled_square(weight, method, iters)
    return _ldexp_round_up(square, -2.0 * exponent)


def _ldexp_round_up(value: torch.Tensor, exponent: torch.Tensor) -> torch.Tensor:
    """value·2^exponent in float64 for value ≥ 1 (or 0, NaN, +∞), never below the exact result.

    Split as 2^a·2^b with b = clamp(exponent, −1022, 1023): 2^a and 2^b are exact, value·2^a stays
    normal (or overflows to +∞, an upper bound), so only the last product can round, and only in
    the subnormal range; a result that lost value there is moved one step up.
    """
    b = exponent.clamp(-1022.0, 1023.0)
    partial = value * torch.exp2(exponent - b)
    result = partial * torch.exp2(b)
    lost = (result.detach() * torch.exp2(-b)) < partial.detach()
    bumped = torch.nextafter(result.detach(), torch.full_like(result.detach(), math.inf))
    # For a scale below 2^-2044 (a subnormal W) the partial product itself can underflow to 0: the
    # exact value·2^exponent > 0 is then below the smallest subnormal 2^-1074, which bounds it (never
    # Q = 0 for a non-zero W)
    vanished = (result.detach() == 0) & (value.detach() > 0)
    adjusted = torch.where(
        vanished, torch.full_like(result.detach(), 2.0**-1074), torch.where(lost, bumped, result.detach())
    )
    return _straight_through(result, adjusted)


def _scaled_square(weight: torch.Tensor, method: str, iters: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(Q', k) with Q' ≥ ‖W·2^k‖₂² in float64, 2^k making max |wᵢⱼ·2^k| ∈ [1, 2); Q' NaN if W is not finite."""
    w = weight.to(torch.float64)
    if w.numel() == 0:
        zero = torch.zeros((), dtype=torch.float64, device=w.device)
        return zero, zero
    peak = w.detach().abs().amax()
    finite_peak = torch.where(torch.isfinite(peak) & (peak > 0), peak, torch.ones_like(peak))
    # 2^k with max |w| · 2^k ∈ [1, 2): frexp gives peak = m·2^e, m ∈ [0.5, 1), so k = 1 − e.
    exponent = 1 - torch.frexp(finite_peak).exponent.to(torch.float64)
    # A non-finite entry would make the eigensolver fail; compute on zeros and report NaN instead
    # (no Python branch on the data, so the function stays traceable by torch.compile).
    finite = torch.isfinite(w).all()
    # A subnormal peak (< 2^-1022) needs k up to 1075, and 2^k overflows above k = 1023 (inf·W, then
    # NaN and a failing eigensolver): scale by two exact powers of two then (the second is 2^0 = 1,
    # the one product as before, for every k ≤ 1000).
    rest = (exponent - 1000.0).clamp_min(0.0)
    scaled = torch.where(finite, w * torch.exp2(exponent - rest) * torch.exp2(rest), torch.zeros_like(w))
    if method == "frobenius":
        # Σ w² summed in float64 errs by at most numel·u relative (plus subnormal losses ≤ numel·2⁻¹⁰⁷⁴
        # against a sum ≥ 1); 4·numel·u + 10⁻¹⁵ covers both and the final product.
        margin = 1.0 + 4.0 * w.numel() * _UNIT_ROUNDOFF_F64 + 1e-15
        square = scaled.square().sum() * margin
    elif method == "gram":
        square = _gram_iteration_square(scaled, iters)
    else:
        square = _exact_square(scaled)
    return torch.where(finite, square, torch.full_like(square, math.nan)), exponent


def _exact_square(scaled: torch.Tensor) -> torch.Tensor:
    rows, cols = scaled.shape
    gram = scaled @ scaled.T if rows <= cols else scaled.T @ scaled
    n = max(rows, cols)
    # Forming G errs by ≤ n·γ_n‖W‖₂² and syevd by c·n·u‖G‖₂; 8n²u covers both for n ≥ 8 (and
    # every n with the 10⁻¹⁵ ≈ 9u slack, which also absorbs the division below).
    delta = 8.0 * n * n * _UNIT_ROUNDOFF_F64 + 1e-15
    top = torch.linalg.eigvalsh(gram)[-1].clamp_min(0.0)
    return top / (1.0 - delta)


def _gram_iteration_square(g: torch.Tensor, iters: int) -> torch.Tensor:
    if g.shape[0] < g.shape[1]:
        g = g.T
    log_scale = torch.zeros((), dtype=torch.float64, device=g.device)
    for t in range(iters):
        norm = torch.linalg.vector_norm(g)
        g = g / norm.clamp_min(torch.finfo(torch.float64).tiny)
        # ‖G_t‖_F = norm; after normalising, the next Gram matrix carries log ‖G_t‖_F · 2^{-t}.
        log_scale = log_scale + torch.log(norm) / 2.0**t
        g = g.T @ g
    # Rounding: each normalised step is accurate to n·u relative; 1e-9 covers 30 steps at n ≤ 10⁴.
    log_scale = log_scale + torch.log(torch.linalg.vector_norm(g)) / 2.0**iters
    return torch.exp(2.0 * log_scale) * (1.0 + 2e-9)


def _straight_through(value: torch.Tensor, adjusted: torch.Tensor) -> torch.Tensor:
    """``adjusted``'s value with ``value``'s gradient (a one-ulp move has no useful derivative)."""
    same = adjusted == value.detach()  # also where both are +∞, for which ∞ − ∞ would give NaN
    return torch.where(same, value, value + (adjusted - value.detach()).detach())


def _check_float64(name: str, value: object) -> None:
    if not isinstance(value, torch.Tensor) or value.dtype != torch.float64:
        got = f"a tensor of dtype {value.dtype}" if isinstance(value, torch.Tensor) else type(value).__name__
        raise TypeError(f"`{name}` must be a float64 torch.Tensor, got {got}")


def _check_float_dtype(dtype: object) -> None:
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"`dtype` must be a real floating torch.dtype (e.g. torch.float32), got {dtype!r}")


def round_up(value: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Cast a float64 tensor to ``dtype`` rounding towards +∞ (the result is ≥ ``value`` exactly).

    A plain cast rounds to nearest, so it can land below the float64 value: then the result is
    moved one representable step up with ``torch.nextafter``. Values above ``dtype``'s range
    become +∞. Gradients pass straight through the rounding.
    """
    _check_float64("value", value)
    _check_float_dtype(dtype)
    return _round_up(value, dtype)


def _round_up(value: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    cast = value.to(dtype)
    if dtype == torch.float64:
        return cast
    up = torch.nextafter(cast.detach(), torch.full_like(cast.detach(), math.inf))
    return _straight_through(cast, torch.where(cast.detach().to(torch.float64) < value.detach(), up, cast.detach()))


def round_down(value: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Cast a non-negative float64 tensor to ``dtype`` rounding towards 0 (result ≤ ``value``).

    Values above ``dtype``'s largest finite number become that number (never +∞).
    """
    _check_float64("value", value)
    _check_float_dtype(dtype)
    if not torch.compiler.is_compiling() and bool((value.detach() < 0).any()):
        raise ValueError("`value` must be non-negative, got a negative entry")
    return _round_down(value, dtype)


def _round_down(value: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    top = torch.finfo(dtype).max
    clamped = value.clamp_max(top)
    cast = clamped.to(dtype)
    if dtype == torch.float64:
        return cast
    down = torch.nextafter(cast.detach(), torch.zeros_like(cast.detach()))
    return _straight_through(cast, torch.where(cast.detach().to(torch.float64) > clamped.detach(), down, cast.detach()))


def sqrt_round_up(square: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Return √square in ``dtype``, rounded up: ≥ the exact square root of the float64 ``square``.

    float64's sqrt is correctly rounded, so one step towards +∞ in float64 makes it an upper
    bound; :func:`round_up` then keeps it one in ``dtype``. A negative ``square`` gives NaN.
    """
    _check_float64("square", square)
    _check_float_dtype(dtype)
    return _round_up(_sqrt_up(square), dtype)


def _sqrt_up(square: torch.Tensor) -> torch.Tensor:
    """float64 √ moved one step up (0 stays 0): ≥ the exact root, as sqrt is correctly rounded."""
    root = torch.sqrt(square)
    up = torch.nextafter(root.detach(), torch.full_like(root.detach(), math.inf))
    return _straight_through(root, torch.where(square.detach() > 0, up, root.detach()))


def tau_round_down(step: torch.Tensor | float, square: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Return the residual step τ = s / Q in ``dtype``, rounded so that τ·Q ≤ s exactly.

    Q ≥ ‖W‖₂² (:func:`squared_norm_bound`); the quotient is formed in float64, moved one step
    towards 0 (a correctly rounded quotient is within half a unit of the true one) and cast to
    ``dtype`` rounding down. So the stored τ satisfies τ·‖W‖₂² ≤ s ≤ 2 in exact arithmetic for
    the stored W, in every dtype. Q = 0 (W = 0) gives τ = 0, where any step is admissible.
    """
    if isinstance(step, torch.Tensor):
        if not step.is_floating_point():
            raise TypeError(f"`step` must be a real number or a floating tensor, got a tensor of dtype {step.dtype}")
    else:
        check_real("step", step, low=0.0, high=2.0)
    _check_float64("square", square)
    _check_float_dtype(dtype)
    if not torch.compiler.is_compiling() and bool((square.detach() < 0).any()):
        raise ValueError("`square` must be non-negative (Q ≥ ‖W‖₂²), got a negative entry")
    return certified_step(step, square, dtype)


def certified_step(step: torch.Tensor | float, square: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """τ = s/Q rounded down in ``dtype``, as :func:`tau_round_down`, without its argument checks.

    For the layers' forward passes: Q comes from :func:`squared_norm_bound` (never negative), and
    :func:`tau_round_down`'s check of Q ≥ 0 reads the tensor on the host at every call, which
    breaks ``torch.func.vmap`` and synchronises a GPU. The rounding argument is the same.

    Args:
        step: s (a float, or a 0-d floating tensor for a learnable step).
        square: 0-d float64 Q ≥ ‖W‖₂² ≥ 0.
        dtype: the weight's dtype.

    Returns:
        0-d τ in ``dtype`` with τ·Q ≤ s exactly (0 where Q = 0); differentiable in s and Q.
    """
    s = torch.as_tensor(step, dtype=torch.float64, device=square.device)
    if s.dtype != torch.float64:
        s = s.to(torch.float64)
    # s/Q overflows float64 for 0 < Q < 2^-1023 (‖W‖₂ below about 2^-511), and the rounding of an
    # infinite quotient gave τ = NaN, a NaN layer. Any Q' ≥ Q certifies: raise a positive Q to
    # 2^-1020 (τ ≤ 2^1021); Q = 0 (τ = 0) and NaN stay as they are.
    square = torch.where(square > 0, square.clamp_min(2.0**-1020), square)
    positive = square > 0
    quotient = s / torch.where(positive, square, torch.ones_like(square))
    quotient = _straight_through(quotient, torch.nextafter(quotient.detach(), torch.zeros_like(quotient.detach())))
    quotient = torch.where(positive, quotient, torch.zeros_like(quotient))
    return _round_down(quotient, dtype)


def spectral_norm_exact(weight: torch.Tensor) -> torch.Tensor:
    """Return ‖weight‖₂ computed by SVD in float64 (a reference, not a certificate).

    Args:
        weight: (m, n) matrix.

    Returns:
        a 0-d float64 tensor σ₁(weight).
    """
    _check_weight(weight)
    return torch.linalg.matrix_norm(weight.detach().to(torch.float64), ord=2)


@torch.no_grad()
def power_iteration(weight: torch.Tensor, vector: torch.Tensor, iters: int = 1) -> torch.Tensor:
    """Update ``vector`` in place by ``iters`` power steps on WᵀW and return the estimate ‖Wv‖.

    The estimate σ̂ = ‖W v‖ with ‖v‖ = 1 is a *lower* bound on ‖W‖₂ (it can undershoot), so it is
    only ever used for monitoring or as a warm start, never to set a certified step.

    Args:
        weight: (m, n) matrix.
        vector: (n,) persistent right-singular-vector estimate, updated in place.
        iters: power steps (≥ 1).

    Returns:
        a 0-d tensor σ̂ ≤ ‖W‖₂.
    """
    _check_weight(weight)
    iters = check_int("iters", iters, low=1, high=MAX_STEPS)
    if not isinstance(vector, torch.Tensor) or vector.shape != (weight.shape[1],) or vector.dtype != weight.dtype:
        got = (
            f"shape {tuple(vector.shape)}, dtype {vector.dtype}"
            if isinstance(vector, torch.Tensor)
            else type(vector).__name__
        )
        raise TypeError(
            f"`vector` must be a torch.Tensor of shape ({weight.shape[1]},) and dtype {weight.dtype} (as `weight`), got {got}"
        )
    w = weight.detach()
    v = vector
    for _ in range(iters):
        v_new = w.T @ (w @ v)
        norm = torch.linalg.vector_norm(v_new)
        if not norm > 0:
            break
        v.copy_(v_new / norm)
    return torch.linalg.vector_norm(w @ v)


@torch.no_grad()
def top_right_singular_vector(weight: torch.Tensor) -> torch.Tensor:
    """Return a unit top right-singular vector of ``weight`` (float64 SVD), in its dtype.

    Args:
        weight: (m, n) matrix.

    Returns:
        an (n,) unit vector v₁ with ‖W v₁‖ = σ₁ (any unit vector when W = 0).
    """
    _check_weight(weight)
    if weight.is_meta or weight.numel() == 0 or not bool(torch.isfinite(weight).all()):
        vector = torch.ones(weight.shape[1], dtype=weight.dtype, device=weight.device)
        return vector / max(1.0, float(weight.shape[1]) ** 0.5)
    vector = torch.linalg.svd(weight.to(torch.float64), full_matrices=False)[2][0]
    return vector.to(weight.dtype)


def power_estimate(weight: torch.Tensor, vector: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One training-time power step: the estimate σ̂ = ‖W v‖ and the next vector, in three products.

    σ̂ is differentiable in W (its gradient (Wv)vᵀ/σ̂ is the gradient of σ₁ once v has converged to
    the top right-singular vector) and is a *lower* bound on ‖W‖₂, as in the paper's training
    (never a certificate). The next vector WᵀWv/‖WᵀWv‖ reuses Wv; when Wv = 0 the old vector is
    kept. ``vector`` is not modified, so it can stay saved for backward: callers store the new one.

    Args:
        weight: (m, n) matrix.
        vector: (n,) unit vector.

    Returns:
        (σ̂, next vector): a 0-d tensor with autograd history and an (n,) detached unit vector.
    """
    _check_weight(weight)
    if not isinstance(vector, torch.Tensor) or vector.shape != (weight.shape[1],):
        got = tuple(vector.shape) if isinstance(vector, torch.Tensor) else type(vector).__name__
        raise ValueError(f"`vector` must be a tensor of shape ({weight.shape[1]},) matching `weight`, got {got}")
    image = weight @ vector
    estimate = torch.linalg.vector_norm(image)
    with torch.no_grad():
        pulled = weight.detach().T @ image.detach()
        norm = torch.linalg.vector_norm(pulled)
        following = torch.where(norm > 0, pulled / norm.clamp_min(torch.finfo(pulled.dtype).tiny), vector)
    return estimate, following


def _gamma(k: int) -> float:
    """γ_k = k·u/(1 − k·u), u = 2⁻⁵³, rounded up (Higham, *Accuracy and Stability*, 2002, §3.1)."""
    ku = k * _UNIT_ROUNDOFF_F64
    return math.nextafter(ku / (1.0 - ku), math.inf)


def verified_square_bound(weight: torch.Tensor, candidate: float) -> float | None:
    """Test whether μ = ``candidate`` ≥ ‖W‖₂² by a Cholesky factorisation of μI − G: a certified Q ≥ ‖W‖₂², or None.

    A cheap certificate for a good guess (a warm power estimate with a margin): if the float64
    Cholesky factorisation of Ã = fl(μI − Ĝ) (Ĝ the computed Gram matrix, n × n) runs to completion,
    R̂ᵀR̂ = Ã + ΔÃ with |ΔÃ| ≤ γ_{n+1}|R̂ᵀ||R̂| (Higham, *Accuracy and Stability of Numerical
    Algorithms*, 2002, Thm. 10.3), so for a unit x, xᵀÃx ≥ −γ_{n+1}‖R̂‖_F² ≥ −γ_{n+1} tr(Ã)/(1 − γ_{n+1})
    =: −c. Forming Ã rounds its diagonal by at most u(μ + max ĝᵢᵢ), and Ĝ differs from WᵀW by at
    most γ_h‖W‖_F² in norm (h the inner dimension). Hence

        λ_max(WᵀW) ≤ Q = μ + c + u(μ + max ĝᵢᵢ) + γ_h‖W‖_F²,

    every term rounded up (with γ_{2(n+1)} and γ_{2h}, twice the textbook constants, for blocked
    LAPACK/BLAS orderings). W is scaled by an exact power of two first, as in
    :func:`squared_norm_bound` (here from μ, which the test compares with σ₁²). Cost: one Gram matrix and one
    n³/3 Cholesky (against the n³ eigen-solve of ``"exact"``) and one host synchronisation. The
    test cannot pass for μ below λ_max(Ĝ) − c, so a returned Q is never far above μ.

    Args:
        weight: (m, k) matrix W, any floating dtype (finite: the layers check it).
        candidate: μ, the guess for ‖W‖₂² (unscaled), a Python float.

    Returns:
        Q (a Python float ≥ ‖W‖₂²) when the factorisation passes; None when it fails, or when W
        or μ is not finite and positive (the caller then takes the exact bound).
    """
    if not (math.isfinite(candidate) and candidate > 0.0):
        return None
    with torch.no_grad():
        # 2^k with μ·2^{2k} ∈ [1, 4): the Gram matrix is then of order 1 (max |wᵢⱼ| ≤ σ₁), so
        # nothing overflows; entries lost to underflow change it by < n·h·2⁻¹⁰⁷⁴, far below the
        # 10⁻²⁹⁰ added to Q below
        exponent = 1 - math.frexp(math.sqrt(candidate))[1]
        mu = math.ldexp(candidate, 2 * exponent)
        scaled = weight.detach().to(torch.float64) * math.ldexp(1.0, exponent)
        rows, cols = scaled.shape
        gram = scaled @ scaled.T if rows <= cols else scaled.T @ scaled
        n, inner = min(rows, cols), max(rows, cols)
        shifted = gram.neg()
        shifted.diagonal().add_(mu)
        _, info = torch.linalg.cholesky_ex(shifted)
        diagonal = torch.diagonal(gram)
        checks = torch.stack((info.to(torch.float64), diagonal.max(), diagonal.sum())).tolist()
    if checks[0] != 0.0 or not (math.isfinite(checks[1]) and math.isfinite(checks[2])):
        return None
    top_diagonal, trace_gram = checks[1], checks[2]
    g_n, g_h = _gamma(2 * (n + 1)), _gamma(2 * inner)
    # ‖W‖_F² = tr(WᵀW) ≤ tr(Ĝ)(1 + γ_h)/(1 − γ_h) (each ĝᵢᵢ within γ_h relative, then n additions)
    frobenius = _up(_up(trace_gram * (1.0 + g_h + _gamma(n))) / (1.0 - g_h))
    trace = _up(_up(n * mu) * (1.0 + _UNIT_ROUNDOFF_F64))
    terms = (
        mu,
        _up(_up(g_n * trace) / (1.0 - g_n)),
        _up(_UNIT_ROUNDOFF_F64 * _up(mu + top_diagonal)),
        _up(g_h * frobenius),
        1e-290,
    )
    total = 0.0
    for term in terms:
        total = _up(total + term)
    scaled_back = math.ldexp(total, -2 * exponent)
    # ldexp is exact unless the result is subnormal; one step up covers that case
    return _up(scaled_back) if scaled_back < math.ldexp(1.0, -1020) else scaled_back


def _up(value: float) -> float:
    """One step towards +∞: ≥ the exact result of the correctly rounded operation that gave ``value``."""
    return math.nextafter(value, math.inf) if math.isfinite(value) else value


def verified_power_square(
    weight: torch.Tensor, vector: torch.Tensor, margin: float
) -> tuple[torch.Tensor | None, torch.Tensor]:
    """A training-time Q ≥ ‖W‖₂², certified: the power estimate σ̂² × (1 + margin), verified by Cholesky.

    One power step (:func:`power_estimate`) gives σ̂ ≤ ‖W‖₂; μ = (1 + margin)·σ̂² is then tested by
    :func:`verified_square_bound`. When it passes, the returned Q has the certified value and the
    gradient of (1 + margin)·σ̂² (the gradient of the paper's power-mode training); when it fails
    (σ̂ lagged behind σ₁ by more than the margin) Q is None and the caller takes the exact bound.

    Args:
        weight: (m, n) matrix W.
        vector: (n,) persistent unit power vector.
        margin: relative margin > 0 added to σ̂².

    Returns:
        (Q or None, the next power vector): Q a 0-d float64 tensor with autograd history.
    """
    estimate, following = power_estimate(weight, vector)
    square = estimate.to(torch.float64).square() * (1.0 + margin)
    verified = verified_square_bound(weight, float(square.detach()))
    if verified is None:
        return None, following
    return _straight_through(square, torch.full_like(square.detach(), verified)), following


def round_operand(tensor: torch.Tensor, operand_dtype: torch.dtype | None) -> torch.Tensor:
    """Return ``tensor`` as an autocast region hands it to a matmul: cast to ``operand_dtype`` unless float64.

    ``torch.autocast`` casts every floating operand of a matmul, linear or convolution but float64
    to its dtype, rounding to nearest (``Tensor.to``); a certificate of a forward run under
    autocast is a certificate of these rounded operands (exact arithmetic on them).

    Args:
        tensor: a parameter (any dtype).
        operand_dtype: the autocast dtype (``torch.float16`` / ``torch.bfloat16``), or None for no
            autocast (the stored values).

    Returns:
        ``tensor`` itself, or its rounded copy.
    """
    if operand_dtype is None or tensor.dtype == torch.float64 or not tensor.is_floating_point():
        return tensor
    return tensor.to(operand_dtype)


__all__ = [
    "BOUNDS",
    "LAYER_BOUNDS",
    "certificate_method",
    "certified_step",
    "division_scale",
    "power_estimate",
    "power_iteration",
    "round_down",
    "round_operand",
    "round_up",
    "spectral_norm_bound",
    "spectral_norm_exact",
    "sqrt_round_up",
    "squared_norm_bound",
    "tau_round_down",
    "top_right_singular_vector",
    "verified_power_square",
    "verified_square_bound",
]
