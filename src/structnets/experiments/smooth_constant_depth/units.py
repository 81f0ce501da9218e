"""Units of ``smooth-constant-depth``: one (target, activation, K) each — build the constant-depth
network, measure its sup error, and certify the best error any ReLU network of the same depth and
parameter count can reach on a segment of the domain."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import torch

from ...data import SmoothTarget
from ...protocol import JSONScalar, Unit
from ..swish_construction.config import parse_target
from .config import SmoothConstantDepthConfig


def make_units(config: SmoothConstantDepthConfig, finished: pd.DataFrame) -> list[Unit]:
    units: list[Unit] = []
    for spec in config.targets:
        target = parse_target(spec)
        d = target.d
        # the sup is read at the target's kinks too (since s10): flagged so older folders show as changed
        kinks = {"sup_at_kinks": True} if target.singular_coordinates else {}
        for name in config.activations:
            for K in config.Ks(d):
                units.append(
                    Unit(
                        key=f"{spec}/{name}/K={K}",
                        params={
                            "target": spec,
                            "activation": name,
                            "K": K,
                            "tau": config.tau,
                            "grid": config.grid(d),
                            "floor_points": config.floor_points,
                            "l2_points": config.l2_points,
                            **kinks,
                        },
                    )  # fmt: skip
                )
    return units


def relu_max_pieces(parameters: int, weight_layers: int, d: int) -> int:
    """An upper bound on the linear pieces, along any segment, of a ReLU MLP ℝ^d → ℝ with
    ``weight_layers`` affine maps and at most ``parameters`` dense parameters (weights and biases).

    Along a segment x = p + tv every first-layer unit is affine in t, so the restriction is a
    ReLU net ℝ → ℝ with the same hidden widths and ≤ Π_l (w_l + 1) pieces
    (:func:`structnets.analysis.relu_piece_bound`). Maximised over widths with
    N(w) = Σ_l (w_{l−1} + 1) w_l + w_H + 1 ≤ parameters (w_0 = d): exactly for one and two hidden
    layers; for three, for each w₂ the product (w₁ + 1)(w₃ + 1) under the linear constraint
    a w₁ + b w₃ ≤ C (a = d + 1 + w₂, b = w₂ + 2, C = N − 1 − w₂) is ≤ (C + a + b)²/(4ab) (AM–GM).
    """
    hidden = weight_layers - 1
    N = parameters
    if hidden == 1:
        return max(0, (N - 1) // (d + 2)) + 1
    if hidden == 2:
        w1 = np.arange(1, max(2, N // (d + 1) + 1), dtype=np.float64)
        w2 = np.floor((N - 1 - (d + 1) * w1) / (w1 + 2))
        ok = w2 >= 1
        return int(np.max(((w1 + 1) * (w2 + 1))[ok])) if ok.any() else 1
    if hidden == 3:
        w2 = np.arange(1, max(2, N), dtype=np.float64)
        a, b, C = d + 1 + w2, w2 + 2, N - 1 - w2
        ok = C >= a + b
        if not ok.any():
            return 1
        bound = (w2 + 1) * (C + a + b) ** 2 / (4 * a * b)
        return int(math.floor(float(np.max(bound[ok])) * (1 + 1e-12)))
    raise ValueError(f"`weight_layers` must be 2, 3 or 4, got {weight_layers}")


def _segment(target: SmoothTarget, t: torch.Tensor) -> torch.Tensor:
    """Points of the segment used for the floor: x = t (d = 1), the diagonal (t, …, t) (d ≥ 2)."""
    return t.reshape(-1, 1).repeat(1, target.d)


def curvature_floor(target: SmoothTarget, pieces: int) -> float:
    """sup error ≥ c(ℓ/m)²/16 for any m-piece linear function on a segment where |g''| ≥ c on an
    interval of length ℓ (g the restriction of f; on a piece of length δ, a function with
    e'' ≥ c has second difference ≥ cδ²/4, so its distance to every line is ≥ cδ²/16).
    0 when f has no second derivative (κ < 2 for a power target)."""
    delta = 1e-4
    t = torch.arange(0, 1 + delta / 2, delta, dtype=torch.float64)
    x = _segment(target, t)
    try:
        # along the diagonal g'' = Σ_{i,j} ∂_i∂_j f = Σ_i ∂_i² f + 2 Σ_{i<j} ∂_i∂_j f
        g2 = torch.zeros_like(t)
        for i in range(target.d):
            for j in range(i, target.d):
                alpha = [0] * target.d
                alpha[i] += 1
                alpha[j] += 1
                term = target.derivative(tuple(alpha), x) * (1 if i == j else 2)
                g2 = g2 + term
    except ValueError:
        return 0.0
    values = g2.numpy()
    slack = 2 * float(np.max(np.abs(np.diff(values))))  # ≥ δ·sup|g'''| between grid points
    top = float(np.max(np.abs(values)))
    best = 0.0
    for q in (0.2, 0.4, 0.6, 0.8):
        c = q * top
        for sign in (1.0, -1.0):
            run = longest = 0
            for above in sign * values >= c:
                run = run + 1 if above else 0
                longest = max(longest, run)
            length = max(0, longest - 1) * delta
            best = max(best, max(0.0, c - slack) * (length / pieces) ** 2 / 16)
    return best


def relu_floor(target: SmoothTarget, parameters: int, weight_layers: int, points: int) -> dict[str, float]:
    """The certified floor: no ReLU net with this depth and parameter count has a smaller sup
    error on [0,1]^d than max(√(DP floor), curvature floor) on the segment."""
    from ...analysis import piecewise_linear_floor

    pieces = relu_max_pieces(parameters, weight_layers, target.d)
    t = torch.linspace(0, 1, points, dtype=torch.float64)
    y = target(_segment(target, t)).numpy()
    m = min(pieces, points)
    dp = float(piecewise_linear_floor(t.numpy(), y, m)[m - 1]) if m < points // 2 else 0.0
    curvature = curvature_floor(target, pieces)
    return {"relu_pieces": float(pieces), "relu_floor_dp": math.sqrt(dp), "relu_floor_curvature": curvature,
            "relu_floor": max(math.sqrt(dp), curvature)}  # fmt: skip


def run_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    from ...analysis.rates import relu_depth_cap_exponent
    from ...constructive import smooth_constant_depth_approximator

    target = parse_target(params["target"])
    K, d = int(params["K"]), target.d
    start = time.perf_counter()
    approx = smooth_constant_depth_approximator(target, target.beta, K, params["activation"], tau=float(params["tau"]))
    build = time.perf_counter() - start
    cert = approx.certificate
    n = int(params["grid"])
    axis = torch.cat(
        [
            torch.linspace(0, 1, n, dtype=torch.float64),
            torch.arange(K + 1, dtype=torch.float64) / K,
            (torch.arange(K, dtype=torch.float64) + 0.5) / K,
        ]
    )
    # and the target's kinks on each axis, where the error of the smooth network peaks (power:1:0.5, K = 8:
    # 0.2371 on the grid against 0.2448 at the kink)
    kinks = target.singular_coordinates or ((),) * d
    axes = [torch.cat([axis, torch.tensor(kinks[i], dtype=torch.float64)]) for i in range(d)]
    points = torch.cartesian_prod(*axes).reshape(-1, d)
    error = 0.0
    with torch.no_grad():
        for chunk in points.split(4096):
            error = max(error, float((approx(chunk) - target(chunk)).abs().max()))
        # L²: RMS over scrambled Sobol points (a quasi-Monte Carlo estimate of ‖net − f‖_{L²([0,1]^d)});
        # a uniform grid would sit on the knots k/K for the K dividing its spacing and bias it low
        sobol = torch.quasirandom.SobolEngine(d, scramble=True, seed=0).draw(
            int(params["l2_points"]), dtype=torch.float64
        )
        square_sum = 0.0
        for chunk in sobol.split(4096):
            residual = (approx(chunk) - target(chunk)).abs()
            square_sum += float((residual**2).sum())
            # the sup is taken over the grid and the Sobol points: at d = 3 a coarse grid that
            # sits on the knots misses it (measured: RMS above the grid's max at K = 8)
            error = max(error, float(residual.max()))
        l2_error = math.sqrt(square_sum / sobol.shape[0])
    measured = time.perf_counter() - start
    floor = relu_floor(target, cert.parameters, cert.depth, int(params["floor_points"]))
    return {
        "target": params["target"],
        "activation": params["activation"],
        "d": d,
        "s": target.beta,
        "K": K,
        "R": target.R,
        "error": error,
        "l2_error": l2_error,
        "taylor": cert.taylor,
        "gadgets": cert.gadgets,
        "rounding": cert.rounding,
        "rounding_unstructured": cert.constants["rounding_unstructured"],
        "bound": cert.total,
        "parameters": cert.parameters,
        "nonzero_parameters": cert.nonzero_parameters,
        "depth": cert.depth,
        "paper_depth": cert.paper_depth,
        "widths": " ".join(str(w) for w in cert.widths),
        "max_weight": cert.max_weight,
        "weight_bound": cert.weight_bound,
        "relu_cap_exponent": relu_depth_cap_exponent(target.beta, d, cert.depth),
        **floor,
        "grid_points": int(points.shape[0]),
        "build_seconds": build,
        "seconds": measured,
        "floor_seconds": time.perf_counter() - start - measured,
    }
