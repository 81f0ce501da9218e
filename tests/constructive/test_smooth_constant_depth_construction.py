"""The constant-depth smooth-activation construction (Liu et al., Theorems 4.1/4.4): error ≤ its
stated bound in float64, polynomial reproduction, fixed depth, weight bound, gadget maths."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import torch

from structnets.constructive.smooth_constant_depth import parameter_estimate, smooth_constant_depth_approximator
from structnets.constructive.smooth_constant_depth_gadgets import (
    UNIT_ROUNDOFF,
    _stencil,
    activation_derivative,
    derivative_sup,
    make_gadget,
    partition,
    partition_moments,
)
from structnets.data import power_target, sine_target

ACTS = ("gelu", "silu", "tanh")


def _points(d: int, K: int, n: int) -> torch.Tensor:
    """A dense grid plus every knot k/K and every cell boundary (k + ½)/K."""
    axis = torch.cat(
        [
            torch.linspace(0, 1, n, dtype=torch.float64),
            torch.arange(K + 1, dtype=torch.float64) / K,
            (torch.arange(K, dtype=torch.float64) + 0.5) / K,
        ]
    )
    return torch.cartesian_prod(*[axis] * d).reshape(-1, d)


def _sup_error(approx, f, d: int, K: int, n: int) -> float:
    x = _points(d, K, n)
    with torch.no_grad():
        return float((approx(x) - f(x)).abs().max())


@pytest.mark.parametrize("activation", ACTS)
@pytest.mark.parametrize(
    ("target", "K"),
    [
        (sine_target(1, 1.0), 5),
        (power_target(1, 1.5), 8),
        (sine_target(1, 2.0), 6),
        (power_target(1, 3.0), 7),
        (sine_target(1, 4.0), 9),
        (sine_target(2, 1.0), 4),
        (power_target(2, 1.5), 3),
    ],
    ids=["sine1-s1", "power1-s1.5", "sine1-s2", "power1-s3", "sine1-s4", "sine2-s1", "power2-s1.5"],
)
def test_sup_error_is_below_the_stated_bound(activation: str, target, K: int) -> None:
    approx = smooth_constant_depth_approximator(target, target.beta, K, activation)
    cert = approx.certificate
    error = _sup_error(approx, target, target.d, K, 4001 if target.d == 1 else 61)
    assert error <= cert.total
    assert cert.taylor > 0 and cert.gadgets >= 0 and cert.rounding > 0
    # the bound is not vacuous: within a factor 40 of the measured error
    assert cert.total <= 40 * error


def test_sup_error_below_bound_at_d2_s3() -> None:
    f = sine_target(2, 3.0)
    approx = smooth_constant_depth_approximator(f, 3.0, 3, "gelu")
    assert _sup_error(approx, f, 2, 3, 41) <= approx.certificate.total


@pytest.mark.parametrize("activation", ACTS)
def test_error_falls_like_K_to_the_minus_s(activation: str) -> None:
    f = sine_target(1, 3.0)
    Ks = [8, 16, 32]
    errors = [_sup_error(smooth_constant_depth_approximator(f, 3.0, K, activation), f, 1, K, 2001) for K in Ks]
    slope = np.polyfit(np.log(Ks), np.log(errors), 1)[0]
    assert abs(slope + 3.0) < 0.3


def _poly1(x: torch.Tensor) -> torch.Tensor:
    t = x[:, 0]
    return 0.7 - 2.0 * t + 3.0 * t**2 - 1.5 * t**3


def _poly1_derivative(alpha: tuple[int, ...], x: torch.Tensor) -> torch.Tensor:
    t = x[:, 0]
    return [_poly1(x), -2.0 + 6.0 * t - 4.5 * t**2, 6.0 - 9.0 * t, torch.full_like(t, -9.0)][alpha[0]]


def _poly2(x: torch.Tensor) -> torch.Tensor:
    a, b = x[:, 0], x[:, 1]
    return 1.0 + a - 2.0 * b + 0.5 * a * a + 3.0 * a * b - b * b


def _poly2_derivative(alpha: tuple[int, ...], x: torch.Tensor) -> torch.Tensor:
    a, b = x[:, 0], x[:, 1]
    table = {
        (0, 0): _poly2(x),
        (1, 0): 1.0 + a + 3.0 * b,
        (0, 1): -2.0 + 3.0 * a - 2.0 * b,
        (2, 0): torch.ones_like(a),
        (1, 1): torch.full_like(a, 3.0),
        (0, 2): torch.full_like(a, -2.0),
    }
    return table[tuple(alpha)]


@pytest.mark.parametrize("activation", ACTS)
def test_polynomials_of_degree_below_s_are_reproduced_up_to_gadgets_and_rounding(activation: str) -> None:
    # degree 3 < s = 4 (d = 1) and degree 2 < s = 3 (d = 2): every Taylor patch is the polynomial,
    # so R = 0, the Taylor term vanishes and only the gadget and rounding terms remain.
    for f, deriv, d, s, K in ((_poly1, _poly1_derivative, 1, 4.0, 6), (_poly2, _poly2_derivative, 2, 3.0, 3)):
        approx = smooth_constant_depth_approximator(f, s, K, activation, d=d, derivative=deriv, R=0.0)
        cert = approx.certificate
        assert cert.taylor == 0.0
        error = _sup_error(approx, f, d, K, 2001 if d == 1 else 41)
        assert error <= cert.gadgets + cert.rounding
        assert error < 1e-5


@pytest.mark.parametrize("activation", ACTS)
def test_depth_is_fixed_as_K_s_and_d_grow(activation: str) -> None:
    # 3 weight layers at d = 1, 4 at every d >= 2 (one-layer polarised d-fold products)
    for d in (1, 2, 3):
        for s in {1: (1.0, 3.0), 2: (1.0, 2.0), 3: (1.0, 2.0)}[d]:
            for K in {1: (1, 2, 5, 17), 2: (1, 2, 5), 3: (1, 2)}[d]:
                approx = smooth_constant_depth_approximator(sine_target(d, s), s, K, activation)
                cert = approx.certificate
                depth = 3 if d == 1 else 4
                assert cert.depth == depth and cert.paper_depth == depth + 1
                linears = [m for m in approx.network if isinstance(m, torch.nn.Linear)]
                assert len(linears) == depth
                assert all(m.weight.dtype == torch.float64 for m in linears)
                assert cert.widths == tuple(m.out_features for m in linears[:-1])
                assert cert.parameters == sum(p.numel() for p in approx.network.parameters())


@pytest.mark.parametrize("activation", ACTS)
def test_weight_bound_holds_and_grows_linearly_in_K(activation: str) -> None:
    bounds = {}
    for K in (4, 8, 16):
        approx = smooth_constant_depth_approximator(sine_target(1, 3.0), 3.0, K, activation)
        cert = approx.certificate
        actual = max(float(p.detach().abs().max()) for p in approx.network.parameters())
        assert actual == cert.max_weight <= cert.weight_bound
        norms = [float(m.weight.detach().abs().sum(1).max()) for m in approx.network if isinstance(m, torch.nn.Linear)]
        assert tuple(norms) == cert.layer_norms
        bounds[K] = cert.weight_bound
    assert bounds[16] <= 4 * bounds[4] + 1e-9


def test_parameter_count_grows_like_K_to_the_d() -> None:
    for d, ratio in ((1, 2.0), (2, 4.0)):
        counts = [
            smooth_constant_depth_approximator(sine_target(d, 2.0), 2.0, K, "gelu").certificate.parameters
            for K in (4, 8)
        ]
        assert counts[1] <= ratio * counts[0]
        assert counts[1] > counts[0]


@pytest.mark.parametrize("name", ACTS)
def test_closed_form_derivatives_match_autograd(name: str) -> None:
    z = torch.linspace(-6, 6, 97, dtype=torch.float64, requires_grad=True)
    fn = {"gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu, "tanh": torch.tanh}[name]
    value = fn(z)
    for q in range(0, 7):
        expected = value.detach().numpy()
        got = activation_derivative(name, q, z.detach().numpy())
        assert np.allclose(got, expected, rtol=1e-9, atol=1e-11), (name, q)
        (value,) = torch.autograd.grad(value.sum(), z, create_graph=True)
    for q in (1, 3, 6):
        dense = np.abs(activation_derivative(name, q, np.linspace(-40, 40, 400_001))).max()
        assert dense <= derivative_sup(name, q) <= dense * 1.01 + 1e-9


@pytest.mark.parametrize(("power", "n"), [(1, 1), (1, 3), (2, 1), (2, 4), (3, 2), (3, 5)])
def test_stencil_moments_are_exact(power: int, n: int) -> None:
    omega, order, moment = _stencil(power, n)
    nodes = range(-n, n + 1)
    for q in range(order):
        total = sum(w * Fraction(i) ** q for w, i in zip(omega, nodes))
        assert total == (math.factorial(power) if q == power else 0)
    assert sum(w * Fraction(i) ** order for w, i in zip(omega, nodes)) != 0
    assert order == (2 * n + 2 if power % 2 == 0 else 2 * n + 1)
    assert moment > 0


@pytest.mark.parametrize("name", ACTS)
@pytest.mark.parametrize("power", [1, 2, 3])
@pytest.mark.parametrize("bound", [1.0, 7.5])
def test_gadget_error_and_product_error_bounds(name: str, power: int, bound: float) -> None:
    g = make_gadget(name, power, bound)
    z = np.linspace(-bound, bound, 20001)
    rounding = 64 * UNIT_ROUNDOFF * sum(abs(w) for w in g.weights) * (1 + abs(g.centre) + g.node_range(bound))
    assert np.max(np.abs(g(z) - z**power)) <= g.truncation + rounding
    if g.exact:
        assert g.truncation == 0.0 and np.allclose(g(z), z, rtol=1e-14, atol=1e-14)
    if power == 2:
        a = np.linspace(-bound / 2, bound / 2, 401)[:, None]
        b = np.array([-bound / 2, -1e-3, 0.0, 0.37, bound / 2])[None, :]
        product = (g(a + b) - g(a - b)) / 4
        assert np.all(np.abs(product - a * b) <= np.abs(b) * g.slope_error / 2 + 2 * rounding)


@pytest.mark.parametrize("name", ACTS)
def test_partition_of_unity_and_its_moments(name: str) -> None:
    K, tau = 7, 8.0
    t = np.linspace(0, K, 7001)
    phi = partition(name, tau, K, t)
    assert np.max(np.abs(phi.sum(1) - 1)) < 1e-13
    lam, lam1, moment = partition_moments(name, tau, K, 2.5)
    rng = np.random.default_rng(0)
    t = rng.uniform(0, K, 5000)
    phi = np.abs(partition(name, tau, K, t))
    assert np.max(phi.sum(1)) <= lam and np.max(phi) <= lam1
    assert np.max((phi * np.abs(t[:, None] - np.arange(K + 1)) ** 2.5).sum(1)) <= moment
    if name == "tanh":  # logistic bumps are nonnegative: Λ = 1 up to the grid allowance
        assert lam < 1 + 1e-6


def test_bad_input_raises_naming_the_argument() -> None:
    f = sine_target(1, 2.0)
    with pytest.raises(ValueError, match="`s`"):
        smooth_constant_depth_approximator(f, 0.0, 4, "gelu", R=1.0)
    with pytest.raises(ValueError, match="`s`"):
        smooth_constant_depth_approximator(f, -1.0, 4, "gelu", R=1.0)
    for K in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="`K`"):
            smooth_constant_depth_approximator(f, 2.0, K, "gelu")
    with pytest.raises(ValueError, match="`activation`"):
        smooth_constant_depth_approximator(f, 2.0, 4, "relu")
    with pytest.raises(ValueError, match="`f`"):
        smooth_constant_depth_approximator(3.0, 2.0, 4, "gelu", d=1, derivative=lambda a, x: x[:, 0], R=1.0)

    def infinite(x: torch.Tensor) -> torch.Tensor:
        return 1.0 / (x[:, 0] - 0.5)

    with pytest.raises(ValueError, match="`f`"):
        smooth_constant_depth_approximator(infinite, 1.0, 4, "gelu", d=1, derivative=lambda a, x: infinite(x), R=1.0)
    with pytest.raises(ValueError, match="`d`"):
        smooth_constant_depth_approximator(
            lambda x: x[:, 0], 1.0, 2, "gelu", d=0, derivative=lambda a, x: x[:, 0], R=1.0
        )
    with pytest.raises(ValueError, match="`s`"):
        smooth_constant_depth_approximator(f, 3.0, 4, "gelu")  # above the target's smoothness
    with pytest.raises(ValueError, match="`tau`"):
        smooth_constant_depth_approximator(f, 2.0, 4, "gelu", tau=0.0)


@pytest.mark.parametrize("activation", ACTS)
def test_structured_rounding_bound_is_below_the_unit_by_unit_one(activation: str) -> None:
    # both bound the float64 error; the structured one passes a form's error through a gadget by
    # its slope instead of Σ|w_i||i|/λ, so it is the smaller where products cancel
    for d, s, K in ((1, 4.0, 16), (2, 3.0, 4)):
        cert = smooth_constant_depth_approximator(sine_target(d, s), s, K, activation).certificate
        assert 0 < cert.rounding <= cert.constants["rounding_unstructured"]


# ---------------------------------------------------------------------------------------------
# d = 3: the same construction, with the d-fold products made by polarisation in one layer

_A3 = (2.0, -1.5, 1.0)


def _ridge3(x: torch.Tensor) -> torch.Tensor:
    """sin(a·x + 0.3): not a sum of one-dimensional terms, so every mixed derivative enters."""
    return torch.sin(x @ torch.tensor(_A3, dtype=torch.float64) + 0.3)


def _ridge3_derivative(alpha: tuple[int, ...], x: torch.Tensor) -> torch.Tensor:
    factor = math.prod(a**k for a, k in zip(_A3, alpha))
    return factor * torch.sin(x @ torch.tensor(_A3, dtype=torch.float64) + 0.3 + sum(alpha) * math.pi / 2)


def _ridge3_R(s: float) -> float:
    # |D^α f(x) − D^α f(y)| ≤ Π|a_i|^{α_i} min(2, ‖a‖₁‖x − y‖_∞) ≤ ‖a‖_∞^κ 2^{1−γ} ‖a‖₁^γ ‖x − y‖_∞^γ
    kappa = math.ceil(s) - 1
    gamma = s - kappa
    return max(abs(a) for a in _A3) ** kappa * 2 ** (1 - gamma) * sum(abs(a) for a in _A3) ** gamma


@pytest.mark.parametrize("activation", ACTS)
@pytest.mark.parametrize(("s", "K"), [(1.0, 4), (2.0, 3), (3.0, 2)])
def test_d3_sup_error_is_below_the_stated_bound(activation: str, s: float, K: int) -> None:
    approx = smooth_constant_depth_approximator(
        _ridge3, s, K, activation, d=3, derivative=_ridge3_derivative, R=_ridge3_R(s)
    )
    cert = approx.certificate
    error = _sup_error(approx, _ridge3, 3, K, 9)
    assert error <= cert.total
    assert cert.depth == 4 and cert.taylor > 0 and cert.rounding > 0
    # measured 25–121x: the d = 3 Taylor constant C_T·d·Λ² is worst case over every direction
    assert cert.total <= 300 * error


def test_d3_sine_error_below_bound_and_falls_with_K() -> None:
    f = sine_target(3, 2.0)
    errors = []
    for K in (2, 4):
        approx = smooth_constant_depth_approximator(f, 2.0, K, "gelu")
        errors.append(_sup_error(approx, f, 3, K, 7))
        assert errors[-1] <= approx.certificate.total
    assert errors[1] < errors[0] / 2  # O(K^{−s}) with s = 2: measured 1.81 → 0.69


_POLY3 = ((0.5, (0, 0, 0)), (1.0, (1, 0, 0)), (-2.0, (0, 1, 1)), (1.5, (1, 1, 1)), (1.0, (0, 0, 2)), (-0.7, (2, 1, 0)))


def _poly3_derivative(alpha: tuple[int, ...], x: torch.Tensor) -> torch.Tensor:
    total = torch.zeros(x.shape[0], dtype=torch.float64)
    for c, e in _POLY3:
        if all(a <= k for a, k in zip(alpha, e)):
            term = torch.full((x.shape[0],), c, dtype=torch.float64)
            for i in range(3):
                term = term * math.perm(e[i], alpha[i]) * x[:, i] ** (e[i] - alpha[i])
            total = total + term
    return total


def _poly3(x: torch.Tensor) -> torch.Tensor:
    return _poly3_derivative((0, 0, 0), x)


@pytest.mark.parametrize(("activation", "K"), [("gelu", 2), ("silu", 1), ("tanh", 1)])
def test_d3_polynomials_of_degree_below_s_are_reproduced(activation: str, K: int) -> None:
    # degree 3 < s = 4 with the monomial x₁x₂x₃: T = 0, and what is left is the three-fold products
    # of hidden layer 2 (cells and monomials), the products of hidden layer 3 and rounding
    approx = smooth_constant_depth_approximator(_poly3, 4.0, K, activation, d=3, derivative=_poly3_derivative, R=0.0)
    cert = approx.certificate
    assert cert.taylor == 0.0
    error = _sup_error(approx, _poly3, 3, K, 9)
    assert error <= cert.gadgets + cert.rounding
    assert error < 1e-7  # measured 6e-10 to 4e-9


@pytest.mark.parametrize("name", ACTS)
@pytest.mark.parametrize("power", [2, 3])
def test_higher_derivative_error_and_polarised_product_bound(name: str, power: int) -> None:
    bound = 2.5
    g = make_gadget(name, power, bound)
    z = np.linspace(-bound, bound, 4001)
    m = power - 1  # the order the m-fold product needs
    exact = np.zeros_like(z)
    for i, w in zip(g.nodes, g.weights):
        exact = exact + w * (i / g.scale) ** m * activation_derivative(name, m, g.centre + i * z / g.scale)
    target = math.factorial(power) / math.factorial(power - m) * z ** (power - m)
    rounding = 64 * UNIT_ROUNDOFF * sum(abs(w) * (abs(i) / g.scale) ** m for i, w in zip(g.nodes, g.weights))
    assert np.max(np.abs(exact - target)) <= g.derivative_error(m) + rounding
    assert g.derivative_error(1) == g.slope_error
    # Π a_i by polarisation errs by ≤ |a_2⋯a_m| sup|e^{(m−1)}|/m!
    rng = np.random.default_rng(power)
    a = rng.uniform(-bound / power, bound / power, size=(2000, power))
    a[:10, 1] = 0.0  # a zero factor: the product must vanish up to rounding
    signs = list(itertools.product((1.0, -1.0), repeat=power - 1))
    approx = sum(math.prod(e) * g(a[:, 0] + a[:, 1:] @ np.array(e)) for e in signs) / (
        2 ** (power - 1) * math.factorial(power)
    )
    allowed = np.abs(np.prod(a[:, 1:], axis=1)) * g.derivative_error(power - 1) / math.factorial(power)
    value_rounding = 64 * UNIT_ROUNDOFF * sum(abs(w) for w in g.weights) * (1 + abs(g.centre) + g.node_range(bound))
    assert np.all(np.abs(approx - np.prod(a, axis=1)) <= allowed + len(signs) * value_rounding)


def test_parameter_estimate_bounds_the_count_and_large_builds_are_refused() -> None:
    for d, s, K in ((1, 3.0, 16), (2, 2.0, 5), (3, 2.0, 2), (3, 3.0, 1)):
        for name in ACTS:
            approx = smooth_constant_depth_approximator(sine_target(d, s), s, K, name)
            estimate = parameter_estimate(d, K, approx.kappa, name)
            assert approx.certificate.parameters <= estimate <= 2 * approx.certificate.parameters
    with pytest.raises(ValueError, match=r"`K`=400 \(d=3\) ask for .*network parameters"):
        smooth_constant_depth_approximator(sine_target(3, 3.0), 3.0, 400, "gelu")
