"""Session-10 review of the margin-bound calculators and the rank/norm measurements (paper 003).

Every bound of Bartlett et al. (2017), Neyshabur et al. (2018) and the covering bounds is
invariant under the positive-homogeneous rescalings ``A_L → c A_L, γ → c γ`` and
``A_1 → A_1 / c, B → c B`` (ReLU nets: f scales by c, so do the margins); these tests push c to
1e±200, where squares and products of norms leave float64, and compare with c = 1 and with
float64 references written from the papers' formulas.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from torch import nn

from structnets.analysis import balance, bounds, dense_matrices, factor_ranks
from structnets.analysis.covering import schatten_ball_log_covering
from structnets.analysis.margins import margin_for_bounds, margin_loss
from structnets.analysis.spectral import bottleneck_rank, effective_rank, schatten_norm


def _chain(seed: int = 0, scale: float = 1.0) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    shapes = [(8, 5), (6, 8), (3, 6)]
    return [scale * torch.randn(shape, generator=generator, dtype=torch.float64) for shape in shapes]


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-300)


# --- homogeneous rescaling: the last layer and the margin by c, or the input and the first layer


@pytest.mark.parametrize("c", [1e-200, 1e200])
def test_pac_bayes_invariant_when_last_layer_and_margin_rescale(c: float) -> None:
    layers = _chain()
    base = bounds.pac_bayes_bound(layers, n=1000, margin=1.0, input_norm=2.0)
    scaled = bounds.pac_bayes_bound(layers[:-1] + [c * layers[-1]], n=1000, margin=c, input_norm=2.0)
    assert _rel(scaled.total, base.total) < 1e-9
    assert _rel(scaled.kl, base.kl) < 1e-9 and _rel(scaled.stable_rank_sum, base.stable_rank_sum) < 1e-12


@pytest.mark.parametrize("c", [1e-200, 1e200])
def test_pac_bayes_invariant_when_input_and_first_layer_rescale(c: float) -> None:
    layers = _chain()
    base = bounds.pac_bayes_bound(layers, n=1000, margin=1.0, input_norm=2.0)
    scaled = bounds.pac_bayes_bound([layers[0] / c] + layers[1:], n=1000, margin=1.0, input_norm=2.0 * c)
    assert _rel(scaled.total, base.total) < 1e-9


@pytest.mark.parametrize("c", [1e-200, 1e200])
def test_spectral_bound_invariant_when_last_layer_and_margin_rescale(c: float) -> None:
    layers = _chain()
    base = bounds.spectral_bound(layers, n=1000, margin=1.0, input_norm=2.0)
    scaled = bounds.spectral_bound(layers[:-1] + [c * layers[-1]], n=1000, margin=c, input_norm=2.0)
    # c = 1e-200 gave 59,645 against 91,802: the row norms of the scaled layer underflowed to 0
    assert _rel(scaled.total, base.total) < 1e-9
    assert _rel(scaled.norm_ratios[-1], base.norm_ratios[-1]) < 1e-12


def test_spectral_bound_deep_tiny_layers_not_optimistic() -> None:
    """Six layers × 1e-70 with inputs × 1e300 and margin × 1e-120: the same network up to scale."""
    generator = torch.Generator().manual_seed(1)
    layers = [torch.randn(5, 5, generator=generator, dtype=torch.float64) for _ in range(6)]
    base = bounds.spectral_bound(layers, n=1000, margin=1.0, input_norm=1.0)
    scaled = bounds.spectral_bound([1e-70 * a for a in layers], n=1000, margin=1e-120, input_norm=1e300)
    # the product Π‖A_i‖_2 (~1e-420) underflowed to 0: total 0.137 against 279,008
    assert _rel(scaled.total, base.total) < 1e-9
    assert _rel(scaled.sample_complexity, base.sample_complexity) < 1e-6


@pytest.mark.parametrize("p", [0.5, 2.0, 3.0])
@pytest.mark.parametrize("c", [1e-200, 1e200])
def test_rank_sparse_invariant_when_last_layer_and_margin_rescale(p: float, c: float) -> None:
    layers = _chain(scale=0.3)
    base = bounds.rank_sparse_bound(layers, p=p, n=10**9, margin=1.0, input_norm=1.0)
    # p = 2: Σσ^p of the scaled layer underflowed to 0/0 (ZeroDivisionError) or overflowed (OverflowError)
    scaled = bounds.rank_sparse_bound(layers[:-1] + [c * layers[-1]], p=p, n=10**9, margin=c, input_norm=1.0)
    assert base.complexity < 1.0  # not the trivial 8
    assert _rel(scaled.complexity, base.complexity) < 1e-9
    assert scaled.ranks_at_alpha == base.ranks_at_alpha


def test_covering_bound_with_subnormal_lipschitz_scale() -> None:
    """K = e·rms·Π‖A_i‖_2 ≈ 1e-328 and γ = 1e-323: the budget γε/(2K) must be that of γ·1e300, K·1e300."""
    generator = torch.Generator().manual_seed(2)
    layers = [0.5 * torch.randn(5, 5, generator=generator, dtype=torch.float64) for _ in range(6)]
    tiny = bounds.parameter_count_bound([1e-70 * a for a in layers], n=10**9, margin=1e-323, input_norm=1e90)
    # the reference scales K and γ both by 1e300 (layers × 1e-20 instead of × 1e-70)
    reference = bounds.parameter_count_bound(
        [1e-20 * a for a in layers], n=10**9, margin=1e-323 * 1e300, input_norm=1e90
    )
    assert _rel(tiny.complexity, reference.complexity) < 1e-6


def test_covering_bound_with_huge_lipschitz_scale_and_margin() -> None:
    """K ≈ e^755 is not vacuous when γ ≈ e^750: it was refused as 'would be vacuous'."""
    layers = _chain(scale=0.3)
    base = bounds.rank_sparse_bound(layers, p=1.0, n=10**9, margin=1.0, input_norm=1.0)
    big = bounds.rank_sparse_bound(
        layers[:-1] + [1e300 * layers[-1]], p=1.0, n=10**9, margin=1e300, input_norm=1e30, data_norm=1e30 * 10**4.5
    )
    reference = bounds.rank_sparse_bound(layers, p=1.0, n=10**9, margin=1.0, input_norm=1e30, data_norm=1e30 * 10**4.5)
    assert base.complexity < 1.0
    assert _rel(big.complexity, reference.complexity) < 1e-9
    assert big.lipschitz_scale == math.inf or big.lipschitz_scale > 1e300


def test_covering_bound_with_tiny_data_norm() -> None:
    layers = _chain(scale=0.3)
    # rms = ‖X‖_F/√n underflowed to 0: 'math domain error' out of math.log
    tiny = bounds.rank_sparse_bound(layers, p=1.0, n=100, margin=1.0, input_norm=1.0, data_norm=5e-324)
    assert math.isfinite(tiny.total) and tiny.total >= tiny.confidence


def test_default_data_norm_overflow_names_input_norm() -> None:
    layers = _chain()
    for call in (bounds.spectral_bound, bounds.parameter_count_bound):
        with pytest.raises(ValueError, match="`input_norm`"):
            call(layers, n=100, margin=1.0, input_norm=1e308)


# --- float64 references written from the papers


def test_spectral_bound_matches_reference() -> None:
    layers = _chain(seed=3)
    refs = [0.1 * torch.ones_like(a) for a in layers]
    n, gamma, b, delta, rho = 5000, 0.7, 1.5, 0.01, 1.2
    got = bounds.spectral_bound(
        layers, n=n, margin=gamma, input_norm=b, delta=delta, lipschitz=rho, references=refs, data_norm=30.0
    )
    mats = [a.numpy() for a in layers]
    s = [np.linalg.norm(a, 2) for a in mats]
    # ‖Aᵀ − Mᵀ‖_{2,1}: the ℓ2 norms of the columns of Aᵀ − Mᵀ (rows of A − M), summed
    r21 = [np.sum(np.sqrt(np.sum((a - r.numpy()) ** 2, axis=1))) for a, r in zip(mats, refs)]
    r_a = rho**2 * np.prod(s) * sum((x / y) ** (2 / 3) for x, y in zip(r21, s)) ** 1.5
    width = 8
    expected = 8 / n + 72 * 30.0 * math.log(2 * width) * math.log(n) * r_a / (gamma * n)
    expected += 3 * math.sqrt(math.log(2 / delta) / (2 * n))
    assert _rel(got.total, expected) < 1e-12


def test_pac_bayes_matches_reference() -> None:
    layers = _chain(seed=4)
    n, gamma, b, delta, rho = 10**6, 0.3, 1.5, 0.05, 1.0
    got = bounds.pac_bayes_bound(layers, n=n, margin=gamma, input_norm=b, delta=delta, lipschitz=rho)
    mats = [a.numpy() for a in layers]
    d, h = 3, 8
    spec = [np.linalg.norm(a, 2) for a in mats]
    frob = [np.linalg.norm(a, "fro") for a in mats]
    kl = 42**2 * math.e**2 / 2 * d**2 * b**2 * h * math.log(4 * d * h) * np.prod(spec) ** 2
    kl *= sum(f**2 / s**2 for f, s in zip(frob, spec)) / gamma**2
    expected = 4 * math.sqrt((kl + math.log(6 * d * n**2 / delta)) / (n - 1))
    assert _rel(got.total, expected) < 1e-12


# --- bottleneck rank and the margin γ


def test_bottleneck_rank_of_constant_float32_activations_is_zero() -> None:
    """A dead layer (every unit constant) has centred rank 0; float32 rounding of the mean gave 1."""
    constant = torch.full((1000, 5), 0.1)
    assert bottleneck_rank(constant) == [0]
    assert bottleneck_rank(constant.double()) == [0]
    # one varying unit beside constant ones keeps rank 1
    varying = constant.clone()
    varying[:, 2] = torch.linspace(0, 1, 1000)
    assert bottleneck_rank(varying) == [1]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int64])
def test_margin_for_bounds_accepts_any_real_dtype(dtype: torch.dtype) -> None:
    values = torch.tensor([-1.0, 0.5, 1.0, 2.0, 4.0])
    expected = margin_for_bounds(values.double(), 0.5)
    # torch.quantile refused: "quantile() input tensor must be either float or double dtype"
    assert margin_for_bounds(values.to(dtype), 0.5) == expected


def test_margin_for_bounds_past_torch_quantile_size_limit() -> None:
    """More than 2^24 margins: torch.quantile raised 'quantile() input tensor is too large'."""
    values = torch.linspace(-1.0, 3.0, 2**24 + 1, dtype=torch.float64)
    gamma = margin_for_bounds(values, 0.75)
    assert gamma == pytest.approx(2.0, abs=1e-12)  # the 0.75-quantile of an even grid on [-1, 3]


# --- weight decay balance at extreme scales; shared layers


def _balanced(scale: float) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(5)
    return [scale * torch.linalg.qr(torch.randn(4, 4, generator=generator, dtype=torch.float64))[0] for _ in range(3)]


@pytest.mark.parametrize("scale", [1e-120, 1e120])
def test_balanced_chain_equality_at_extreme_scales(scale: float) -> None:
    """c·Q_i (Q_i orthogonal) is balanced: Σ‖A_i‖_F² = L‖Π A_i‖_{S_{2/L}}^{2/L} = 12 c²."""
    layers = _balanced(scale)
    # the product c³ underflowed to 0 (1e-360) or overflowed (a refusal naming `matrix`)
    assert _rel(balance.schatten_end_to_end(layers), 12 * scale**2) < 1e-12
    assert _rel(balance.frobenius_sum(layers), 12 * scale**2) < 1e-12
    # imbalance: 'matrices[0] is zero' at 1e-120, NaN at 1e120
    assert balance.imbalance(layers) < 1e-12


def test_dense_matrices_counts_a_layer_used_twice() -> None:
    shared = nn.Linear(4, 4, bias=False)
    model = nn.Sequential(shared, nn.ReLU(), shared)
    # named_children() listed the shared layer once: a bound on a one-layer network
    assert len(dense_matrices(model)) == 2
    assert factor_ranks(model) == [None, None]
    x = torch.randn(3, 4)
    a1, a2 = dense_matrices(model)
    torch.testing.assert_close(model(x), torch.relu(x @ a1.T) @ a2.T)


def test_complex_margins_refused_by_name() -> None:
    values = torch.tensor([1 + 5j, 2 + 0j, 3j])
    with pytest.raises(TypeError, match="`margin_values`"):
        margin_for_bounds(values, 0.5)
    with pytest.raises(TypeError, match="`margin_values`"):  # was NotImplementedError "le_cpu"
        margin_loss(values, 0.5)


# --- covering numbers at tiny radii; argument types


def test_parameter_count_covering_at_subnormal_radius() -> None:
    """At t = 1e-320, 3√3/t overflowed: the parameter count became +inf and a costlier split was returned."""
    t = 1e-320
    expected = 12 * (math.log(3 * math.sqrt(3)) - math.log(t))
    assert _rel(schatten_ball_log_covering(3, 4, t)[0], expected) < 1e-12
    value, k = schatten_ball_log_covering(3, 4, t, p=1.0, relative_schatten_power=2.0)
    assert value <= expected * (1 + 1e-12)  # never above the parameter count (documented)


def test_schatten_norm_accepts_numpy_real_p() -> None:
    matrix = _chain()[0]
    assert float(schatten_norm(matrix, np.float32(0.5))) == float(schatten_norm(matrix, 0.5))


def test_spectral_bound_references_must_be_a_sequence() -> None:
    layers = _chain()
    references = (torch.zeros_like(a) for a in layers)
    with pytest.raises(ValueError, match="`references`"):  # was "object of type 'generator' has no len()"
        bounds.spectral_bound(layers, n=100, margin=1.0, input_norm=1.0, references=references)  # type: ignore[arg-type]


@pytest.mark.parametrize("c", [1e-200, 1e200])
def test_covering_bounds_invariant_when_input_and_first_layer_rescale(c: float) -> None:
    layers = _chain(scale=0.3)
    scaled = [layers[0] / c] + layers[1:]
    for p in (None, 0.0, 0.5, 2.0):
        if p is None:
            base = bounds.parameter_count_bound(layers, n=10**9, margin=1.0, input_norm=1.0)
            other = bounds.parameter_count_bound(scaled, n=10**9, margin=1.0, input_norm=c)
        else:
            base = bounds.rank_sparse_bound(layers, p=p, n=10**9, margin=1.0, input_norm=1.0)
            other = bounds.rank_sparse_bound(scaled, p=p, n=10**9, margin=1.0, input_norm=c)
        assert base.complexity < 1.0
        assert _rel(other.complexity, base.complexity) < 1e-9


def test_pac_bayes_kl_near_the_top_of_float64_stays_finite() -> None:
    """KL ≈ 1.5e308 (log 709.6) is a float64 number, not inf."""
    layers = _chain()
    base = bounds.pac_bayes_bound(layers, n=1000, margin=1.0, input_norm=2.0)
    gamma = math.sqrt(base.kl / 1.5e308)
    near = bounds.pac_bayes_bound(layers, n=1000, margin=gamma, input_norm=2.0)
    assert math.isfinite(near.kl) and _rel(near.kl, 1.5e308) < 1e-9
    assert math.isinf(bounds.pac_bayes_bound(layers, n=1000, margin=gamma / 2, input_norm=2.0).kl)


def test_covering_at_tiny_radius_raises_no_numpy_overflow_warning() -> None:
    """A Maurey tail cost beyond float64 is +inf (never the chosen cover), without RuntimeWarnings."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value, k = schatten_ball_log_covering(3, 4, 1e-155, p=1.0, relative_schatten_power=2.0)
    assert math.isfinite(value) and k >= 1


def test_parameter_count_bound_single_layer_matches_quadrature() -> None:
    """One layer: log N(ε) = mn log(3√k/t), t = γε/(2K); Dudley's integral by adaptive quadrature."""
    integrate = pytest.importorskip("scipy.integrate")
    generator = torch.Generator().manual_seed(7)
    layer = 0.5 * torch.randn(5, 4, generator=generator, dtype=torch.float64)
    n, gamma, b = 10**7, 0.8, 1.3
    got = bounds.parameter_count_bound([layer], n=n, margin=gamma, input_norm=b)
    k_scale = math.e * b * float(np.linalg.norm(layer.numpy(), 2))

    def root_log_covering(eps: float) -> float:
        t = min(gamma * eps / (2 * k_scale), 1.0)
        return 0.0 if t >= 1 else math.sqrt(20 * math.log(3 * 2 / t))

    alpha = got.dudley_alpha  # 1e-12 here: the integrand is small enough to integrate to the grid's end
    assert 2 * k_scale / gamma > 1.0  # t < 1 on all of [α, 1]: a smooth integrand
    integral, _ = integrate.quad(root_log_covering, alpha, 1.0, limit=400)
    exact = 4 * alpha + 12 / math.sqrt(n) * integral
    # a left Riemann sum of a non-increasing integrand: above the integral, and close to it
    assert exact <= got.rademacher <= exact * (1 + 1e-3)
    assert got.complexity == 2 * got.rademacher


@pytest.mark.parametrize("scale", [1e-170, 1.0, 1e170])
def test_bottleneck_rank_of_constant_activations_at_any_scale(scale: float) -> None:
    generator = torch.Generator().manual_seed(8)
    constant = (scale * torch.rand(1, 7, generator=generator, dtype=torch.float64)).expand(3000, 7).contiguous()
    assert bottleneck_rank(constant) == [0]
    varying = constant.clone()
    varying[:, 3] += scale * 1e-3 * torch.randn(3000, generator=generator, dtype=torch.float64)
    assert bottleneck_rank(varying) == [1]


def test_bottleneck_rank_near_the_top_of_float64() -> None:
    activations = torch.full((1000, 3), 1e306, dtype=torch.float64)
    activations[:, 0] += torch.linspace(0, 1e305, 1000, dtype=torch.float64)
    # the column sums overflowed: rank 0 (and MKL DLASCL errors on stderr)
    assert bottleneck_rank(activations) == [1]
    assert bottleneck_rank(activations, center=False) == [2]


@pytest.mark.parametrize(("scale", "dtype"), [(1e306, torch.float64), (1e37, torch.float32), (1e-300, torch.float64)])
def test_effective_rank_is_scale_free(scale: float, dtype: torch.dtype) -> None:
    generator = torch.Generator().manual_seed(9)
    matrix = torch.randn(50, 30, generator=generator, dtype=torch.float64)
    sigma = np.linalg.svd(matrix.numpy(), compute_uv=False)
    q = sigma / sigma.sum()
    expected = math.exp(-np.sum(q * np.log(q)))  # Roy and Vetterli (2007), float64
    # Σσ_i overflowed: effective rank 1.0 against 27
    assert _rel(float(effective_rank((scale * matrix).to(dtype))), expected) < 1e-5
