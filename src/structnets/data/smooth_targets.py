"""Target functions on [0,1]^d of known smoothness, with their derivatives and Hölder constants.

Used by the low-rank Swish construction (Li et al., ICML 2025) and the smoothness-adaptivity rate
experiments (Liu, Wang, Wu, Zhang, arXiv 2602.19691). Three families:

* :func:`power_target` — f(x) = Σ_i |x_i − c_i|^β. Hölder smoothness exactly β (β not an even
  integer): D^κ of |u|^β is β(β−1)…(β−κ+1)·sign(u)^κ|u|^{β−κ}, which is (β−κ)-Hölder and no
  better at u = 0. One point singularity per coordinate: the *sup*-norm approximation rate is
  exactly M^{−β}, which is what the construction's Taylor term predicts.
* :func:`sine_target` — f(x) = Σ_i sin(ω x_i + φ_i): C^∞, so in C^{β,R} for every β with
  R = 2^{1−γ} ω^β (γ = β − κ), the constant that grows with β.
* :func:`lacunary_target` — a Weierstrass-type series
  f(x) = Σ_{k=0}^{K−1} 2^{−ks} cos(2π 2^k ⟨θ_k, x⟩ + φ_k), θ_k unit directions.
  Why its smoothness is exactly s (for the infinite series, K = ∞): the k-th term has frequency
  2^k and amplitude 2^{−ks}, so the Sobolev norm Σ_k (2^{2kt})·2^{−2ks} is finite iff t < s
  (f ∈ H^t for every t < s and not for t > s), and the Littlewood–Paley blocks have sup-norm
  exactly 2^{−ks}, the characterisation of the Hölder–Zygmund space C^s (Besov B^s_{∞,∞}) and no
  smaller one. The irregularity is spread over the whole cube (not at one point), so the L²
  minimax rate n^{−2s/(2s+d)} is not beaten by local adaptivity. We truncate at K levels: the
  truncated function is smooth, but indistinguishable from the series below frequency 2^K; keep
  2^K well above the resolution n^{1/(2s+d)} of the largest sample used.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from .._validation import check_fits_in_memory, check_int, check_real


@dataclass(frozen=True)
class SmoothTarget:
    """A function on [0,1]^d with known Hölder smoothness.

    Attributes:
        name: short id, e.g. ``"power(d=2, beta=1.5)"``.
        d: input dimension.
        beta: smoothness β (Hölder; for ``lacunary`` also Sobolev s, in the sense above).
        R: Hölder constant: |D^α f(x) − D^α f(y)| ≤ R ‖x − y‖_∞^{β−κ} for all |α| = κ = ⌈β⌉ − 1.
        function: (n, d) float tensor → (n,) values.
        derivative: ``derivative(alpha, x)`` = D^α f(x) for a multi-index tuple ``alpha``.
        sup_norm: a bound on ‖f‖_∞ over [0,1]^d.
        singular_coordinates: per axis i, the values c with f not smooth on the hyperplane x_i = c
            (the kinks of |x_i − c_i|^β); () for a smooth target. A grid that measures a sup error
            must contain them: the error of a smooth approximant peaks there, and a uniform grid
            that misses c by h under-reads it by ~h^β (power β = 0.5, M = 256, 40,001 points: 7 %).
    """

    name: str
    d: int
    beta: float
    R: float
    function: Callable[[torch.Tensor], torch.Tensor]
    derivative: Callable[[tuple[int, ...], torch.Tensor], torch.Tensor]
    sup_norm: float
    singular_coordinates: tuple[tuple[float, ...], ...] = ()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.function(x)

    def sample(self, n: int, noise: float = 0.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Draw n points uniform on [0,1]^d and y = f(x) + noise·ε, ε ~ N(0, 1).

        Args:
            n: number of points (≥ 1).
            noise: standard deviation σ ≥ 0 of the additive Gaussian noise.
            seed: seeds a ``numpy.random.Generator``.

        Returns:
            X of shape (n, d) and y of shape (n,), float64 arrays.
        """
        n = check_int("n", n, low=1)
        noise = check_real("noise", noise, low=0.0)
        seed = check_int("seed", seed, low=0)
        check_fits_in_memory(f"`n`={n} (d={self.d})", n * (self.d + 2), what="float64 values")
        rng = np.random.default_rng(seed)
        X = rng.random((n, self.d))
        y = self.function(torch.from_numpy(X)).numpy() + noise * rng.standard_normal(n)
        return X, y


def _falling(beta: float, k: int) -> float:
    return math.prod(beta - j for j in range(k))


def _check_alpha(alpha: tuple[int, ...], d: int) -> tuple[int, ...]:
    alpha = tuple(alpha)
    if len(alpha) != d or any(int(a) != a or a < 0 for a in alpha):
        raise ValueError(f"`alpha` must be a tuple of {d} non-negative ints, got {alpha!r}")
    return tuple(int(a) for a in alpha)


def _check_points(x: torch.Tensor, d: int) -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or x.ndim != 2 or x.shape[1] != d:
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"`x` must be a tensor of shape (n, d={d}), got {shape}")
    return x


def power_target(d: int, beta: float, center: tuple[float, ...] | None = None) -> SmoothTarget:
    """f(x) = Σ_i |x_i − c_i|^β, of Hölder smoothness exactly β.

    Args:
        d: input dimension (≥ 1).
        beta: β > 0, not an even integer (then |u|^β is a polynomial).
        center: c ∈ [0,1]^d; default c_i = frac(i·φ + 1/π) with φ the golden ratio, so the
            singularities avoid dyadic grid points.

    Returns:
        a :class:`SmoothTarget` with R = β(β−1)…(β−κ+1)·(2^{1−γ} if κ odd else 1), γ = β − κ:
        ||u|^γ − |v|^γ| ≤ |u − v|^γ, and for opposite signs u^γ + v^γ ≤ 2^{1−γ}(u + v)^γ.
    """
    d = check_int("d", d, low=1)
    beta = check_real("beta", beta, low=0.0, low_open=True)
    if beta == round(beta) and round(beta) % 2 == 0:
        raise ValueError(f"`beta` must not be an even integer (|u|^beta is then a polynomial), got {beta}")
    if center is None:
        golden = (1 + math.sqrt(5)) / 2
        center = tuple((i * golden + 1 / math.pi) % 1.0 for i in range(d))
    if len(center) != d:
        raise ValueError(f"`center` must have d={d} entries, got {center!r}")
    c = torch.tensor([check_real("center", v, low=0.0, high=1.0) for v in center], dtype=torch.float64)
    kappa = math.ceil(beta) - 1
    gamma = beta - kappa
    R = abs(_falling(beta, kappa)) * (2 ** (1 - gamma) if kappa % 2 else 1.0)

    def function(x: torch.Tensor) -> torch.Tensor:
        x = _check_points(x, d)
        return (x - c.to(x)).abs().pow(beta).sum(-1)

    def derivative(alpha: tuple[int, ...], x: torch.Tensor) -> torch.Tensor:
        alpha = _check_alpha(alpha, d)
        x = _check_points(x, d)
        if sum(alpha) == 0:
            return function(x)
        nonzero = [i for i, a in enumerate(alpha) if a > 0]
        if len(nonzero) > 1:  # separable: mixed partials vanish
            return torch.zeros(x.shape[0], dtype=x.dtype)
        i, k = nonzero[0], alpha[nonzero[0]]
        if k > kappa:
            raise ValueError(f"`alpha` of order {k} exceeds kappa={kappa}: that derivative need not exist")
        u = x[:, i] - c[i].to(x)
        return _falling(beta, k) * torch.sign(u) ** k * u.abs().pow(beta - k)

    sup = float(sum(max(ci, 1 - ci) ** beta for ci in c.tolist()))
    kinks = tuple((float(ci),) for ci in c.tolist())
    return SmoothTarget(f"power(d={d}, beta={beta:g})", d, beta, R, function, derivative, sup, kinks)


def sine_target(d: int, beta: float, omega: float = 2 * math.pi) -> SmoothTarget:
    """f(x) = Σ_i sin(ω x_i + i), C^∞, viewed in C^{β,R} with R = 2^{1−γ} ω^β.

    |ω^κ(sin^{(κ)}(ωu) − sin^{(κ)}(ωv))| ≤ ω^κ min(2, ω|u−v|) ≤ 2^{1−γ} ω^{κ+γ} |u − v|^γ.
    """
    d = check_int("d", d, low=1)
    beta = check_real("beta", beta, low=0.0, low_open=True)
    omega = check_real("omega", omega, low=0.0, low_open=True)
    kappa = math.ceil(beta) - 1
    gamma = beta - kappa
    phases = torch.arange(d, dtype=torch.float64)

    def function(x: torch.Tensor) -> torch.Tensor:
        x = _check_points(x, d)
        return torch.sin(omega * x + phases.to(x)).sum(-1)

    def derivative(alpha: tuple[int, ...], x: torch.Tensor) -> torch.Tensor:
        alpha = _check_alpha(alpha, d)
        x = _check_points(x, d)
        if sum(alpha) == 0:
            return function(x)
        nonzero = [i for i, a in enumerate(alpha) if a > 0]
        if len(nonzero) > 1:
            return torch.zeros(x.shape[0], dtype=x.dtype)
        i, k = nonzero[0], alpha[nonzero[0]]
        return omega**k * torch.sin(omega * x[:, i] + phases[i].to(x) + k * math.pi / 2)

    R = 2 ** (1 - gamma) * omega**beta
    return SmoothTarget(f"sine(d={d}, omega={omega:.3g})", d, beta, R, function, derivative, float(d))


def lacunary_target(d: int, s: float, levels: int = 10, seed: int = 0, directions: str = "one") -> SmoothTarget:
    """Weierstrass-type f(x) = Σ_{k<K} 2^{−ks} cos(2π 2^k ⟨θ_k, x⟩ + φ_k), smoothness exactly s.

    Args:
        d: input dimension (≥ 1).
        s: smoothness s > 0 (see the module docstring for why it is exact).
        levels: K, the number of dyadic frequency levels (≥ 1).
        seed: seeds the unit directions θ (θ = 1 for d = 1) and phases φ.
        directions: ``"one"``: one direction θ_k per level, as above; every level is then a ridge
            function, which a network learns at the cost of a one-dimensional problem.
            ``"dense"``: level k is M_k = 2^{k(d−1)} waves in independent random directions,
            2^{−ks} M_k^{−1/2} Σ_j cos(2π 2^k ⟨θ_{k,j}, x⟩ + φ_{k,j}), so it carries ~2^{kd} degrees
            of freedom like a generic level-k Littlewood–Paley block (the count behind the
            d-dimensional minimax rate). Its L² energy per level is still 2^{−2ks}/2 (f ∈ H^t iff
            t < s) and its sup-norm is 2^{−ks}·O(√(log M_k)) for random phases (Salem–Zygmund), so
            it is in C^{s−ε} for every ε > 0. Identical to ``"one"`` for d = 1.

    Returns:
        a :class:`SmoothTarget`; R = 2^{1−γ}(2π)^s Σ_terms a_t 2^{k_t s} ‖θ_t‖_∞^κ ‖θ_t‖_1^γ with a_t
        the amplitude of term t (a valid Hölder constant of the truncated series, growing with K as
        it must for exact smoothness s); sup_norm = Σ_t a_t.
    """
    d = check_int("d", d, low=1)
    s = check_real("s", s, low=0.0, low_open=True)
    levels = check_int("levels", levels, low=1, high=_MAX_TERMS)
    seed = check_int("seed", seed, low=0)
    if directions not in ("one", "dense"):
        raise ValueError(f"`directions` must be 'one' or 'dense', got {directions!r}")
    check_fits_in_memory(f"`d`={d}, `levels`={levels}", levels * d, what="float64 values")
    counts = [1 if directions == "one" else 2 ** (k * (d - 1)) for k in range(levels)]
    if sum(counts) > _MAX_TERMS:
        raise ValueError(
            f"`levels` gives {sum(counts)} waves for d={d} with directions='dense' (at most {_MAX_TERMS}); "
            f"use fewer levels, got {levels}"
        )
    rng = np.random.default_rng(seed)
    level = np.repeat(np.arange(levels), counts)
    theta = rng.standard_normal((len(level), d))
    theta /= np.linalg.norm(theta, axis=1, keepdims=True)
    if d == 1:
        theta[:] = 1.0
    phase = rng.uniform(0, 2 * math.pi, len(level))
    freq = torch.from_numpy(2 * math.pi * (2.0**level)[:, None] * theta)  # (terms, d)
    weight = 1.0 / np.sqrt(np.asarray(counts, dtype=float)[level])  # M_k^{−1/2}
    amp = torch.from_numpy(2.0 ** (-s * level) * weight)
    phi = torch.from_numpy(phase)
    kappa = math.ceil(s) - 1
    gamma = s - kappa

    def function(x: torch.Tensor) -> torch.Tensor:
        x = _check_points(x, d)
        return torch.cos(x @ freq.to(x).T + phi.to(x)) @ amp.to(x)

    def derivative(alpha: tuple[int, ...], x: torch.Tensor) -> torch.Tensor:
        alpha = _check_alpha(alpha, d)
        x = _check_points(x, d)
        order = sum(alpha)
        factor = torch.prod(freq.to(x) ** torch.tensor(alpha, dtype=x.dtype), dim=1)  # (terms,)
        return torch.cos(x @ freq.to(x).T + phi.to(x) + order * math.pi / 2) @ (amp.to(x) * factor)

    norms = np.abs(theta)
    R = 2 ** (1 - gamma) * (2 * math.pi) ** s * float(np.sum(weight * norms.max(1) ** kappa * norms.sum(1) ** gamma))
    sup = float(amp.sum())
    tag = "" if directions == "one" else ", dense"
    return SmoothTarget(f"lacunary(d={d}, s={s:g}, K={levels}{tag})", d, s, R, function, derivative, sup)


# Waves of a dense lacunary target: 2^16 keeps evaluation on 10^4 points under ~10^9 flops.
_MAX_TERMS = 2**16


__all__ = ["SmoothTarget", "lacunary_target", "power_target", "sine_target"]
