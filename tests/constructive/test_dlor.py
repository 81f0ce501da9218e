"""Constructions of the DLoR paper, checked exactly in float64."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from structnets.constructive import dlor_network_from_dense, dlor_product, dlor_sum, rank_one_interpolant
from structnets.constructive.dlor import DLoRFactor, dense_product, dense_sum
from structnets.models import mlp
from structnets.nn import DLoRLinear, LowRankLinear, RankOneLinear, TakeFirst, ZeroPad

F64 = torch.float64
SIZES_AND_RANKS = [(n, r) for n in (2, 3, 5, 8, 16, 33) for r in sorted({1, 2, n // 2, n - 1}) if 1 <= r <= n - 1]


def _relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.linalg.matrix_norm(a - b) / max(float(torch.linalg.matrix_norm(b)), 1e-300))


def _random(n: int, seed: int) -> torch.Tensor:
    return torch.randn(n, n, generator=torch.Generator().manual_seed(seed), dtype=F64)


def _check_factors(factors: list[DLoRFactor], n: int, r: int) -> None:
    for f in factors:
        assert f.U.shape == f.V.shape == (n, r)
        assert f.U.dtype == f.V.dtype == F64
        torch.testing.assert_close(f.dense(), f.alpha * torch.eye(n, dtype=F64) + f.U @ f.V.T, rtol=0, atol=0)


# --------------------------------------------------------------------------------------------
# dlor_sum


@pytest.mark.parametrize(("n", "r"), SIZES_AND_RANKS)
def test_dlor_sum_reconstructs_random_matrices(n: int, r: int) -> None:
    W = _random(n, 10 * n + r)
    factors = dlor_sum(W, r)
    _check_factors(factors, n, r)
    assert _relative(dense_sum(factors), W) <= 1e-10
    assert len(factors) == math.ceil(n / r)  # a generic W − τI has full rank


def test_dlor_sum_uses_one_term_for_alpha_identity_plus_rank_r() -> None:
    g = torch.Generator().manual_seed(0)
    U, V = torch.randn(10, 3, generator=g, dtype=F64), torch.randn(10, 3, generator=g, dtype=F64)
    V = V - V.mean(0)  # choose tr(UVᵀ) = 0 so τ = tr(W)/N is exactly the 2.5 of 2.5·I
    V[:, 0] -= (U[:, 0] @ V[:, 0]) / (U[:, 0] @ U[:, 0]) * U[:, 0]
    V[:, 1] -= (U[:, 1] @ V[:, 1]) / (U[:, 1] @ U[:, 1]) * U[:, 1]
    V[:, 2] -= (U[:, 2] @ V[:, 2]) / (U[:, 2] @ U[:, 2]) * U[:, 2]
    W = 2.5 * torch.eye(10, dtype=F64) + U @ V.T
    factors = dlor_sum(W, 3)
    assert len(factors) == 1
    assert math.isclose(factors[0].alpha, 2.5, rel_tol=1e-12)
    assert _relative(dense_sum(factors), W) <= 1e-12


def test_dlor_sum_partial_sums_are_best_low_rank_approximations() -> None:
    W = _random(8, 1)
    factors = dlor_sum(W, 2)
    tau = float(torch.trace(W)) / 8
    singular = torch.linalg.svdvals(W - tau * torch.eye(8, dtype=F64))
    partial = sum((f.U @ f.V.T for f in factors[:2]), torch.zeros(8, 8, dtype=F64))
    residual = W - tau * torch.eye(8, dtype=F64) - partial
    # Eckart–Young: the error of the best rank-4 approximation is √(Σ_{i>4} σ_i²)
    best = float(singular[4:].square().sum().sqrt())
    assert math.isclose(float(torch.linalg.matrix_norm(residual)), best, rel_tol=1e-10)


# --------------------------------------------------------------------------------------------
# dlor_product


@pytest.mark.parametrize(("n", "r"), SIZES_AND_RANKS)
def test_dlor_product_reconstructs_random_matrices(n: int, r: int) -> None:
    W = _random(n, 1000 + 10 * n + r)
    factors = dlor_product(W, r)
    _check_factors(factors, n, r)
    assert all(f.alpha == 1.0 for f in factors[:-1])
    mantissa, _ = math.frexp(factors[-1].alpha)
    assert mantissa == 0.5  # the last α is the exact power-of-two scale
    assert len(factors) <= math.ceil((2 * n - 1) / r)
    assert _relative(dense_product(factors), W) <= 1e-10


def _scaled_relative(a: torch.Tensor, b: torch.Tensor) -> float:
    """‖a − b‖_F/‖b‖_F computed after an exact power-of-two rescaling (no overflow at 1e±300)."""
    exponent = math.frexp(float(b.abs().max()))[1]
    a, b = (torch.from_numpy(np.ldexp(t.numpy(), -exponent)) for t in (a, b))
    return float(torch.linalg.matrix_norm(a - b) / torch.linalg.matrix_norm(b))


SCALES = [1e-300, 1e-250, 1e-200, 1e-155, 1e-100, 1e-20, 1e-12, 1e-8, 1.0, 1e8, 1e100, 1e154, 1e200, 1e250, 1e300]


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize(("n", "r"), [(2, 1), (7, 3), (40, 5)])
def test_decompositions_are_exact_at_every_scale(scale: float, n: int, r: int) -> None:
    """Regression: 1e-8·[[1,2],[3,4]] gave 3.3e-10, 1e-12·randn(40, 40) 5.5e-6, NaN beyond 1e±155."""
    base = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=F64) if n == 2 else _random(n, n)
    W = scale * base
    product = dense_product(dlor_product(W, r))
    total = dense_sum(dlor_sum(W, r))
    assert torch.isfinite(product).all() and torch.isfinite(total).all()
    assert _scaled_relative(product, W) <= 1e-10
    assert _scaled_relative(total, W) <= 1e-10


def _orthogonal(n: int, seed: int) -> torch.Tensor:
    return torch.linalg.qr(_random(n, seed))[0]


def _jacobi_singular_values(A: torch.Tensor) -> np.ndarray:
    """Singular values by one-sided (Hestenes) Jacobi: relatively accurate for A = B·D with B well
    conditioned and D diagonal (Demmel & Veselić 1992), unlike bidiagonalisation."""
    A = A.numpy().copy()
    A = np.ldexp(A, -math.frexp(float(np.abs(A).max()))[1])
    n = A.shape[1]
    for _ in range(100):
        rotated = False
        for i in range(n - 1):
            for j in range(i + 1, n):
                a, b, c = A[:, i] @ A[:, i], A[:, j] @ A[:, j], A[:, i] @ A[:, j]
                if c == 0.0 or abs(c) <= 1e-17 * math.sqrt(a * b):
                    continue
                rotated = True
                zeta = (b - a) / (2 * c)
                t = math.copysign(1.0, zeta) / (abs(zeta) + math.sqrt(1 + zeta * zeta))
                cs = 1 / math.sqrt(1 + t * t)
                sn = cs * t
                left = A[:, i].copy()
                A[:, i] = cs * left - sn * A[:, j]
                A[:, j] = sn * left + cs * A[:, j]
        if not rotated:
            break
    return np.sort(np.linalg.norm(A, axis=0))[::-1]


GRADINGS = {
    "1e-10 in the middle": [1.0, 1e-10, 1.0],
    "geometric to 1e-12": list(np.logspace(0, -12, 6)),
    "shuffled to 1e-14": [1e-3, 1.0, 1e-14, 1e-7, 0.5, 1e-11, 2.0],
}


@pytest.mark.parametrize("grading", list(GRADINGS))
@pytest.mark.parametrize("side", ["columns", "rows"])
@pytest.mark.parametrize("scale", [1e-250, 1.0, 1e250])
@pytest.mark.parametrize("r", [1, 2])
def test_dlor_product_keeps_small_singular_values_of_graded_matrices(
    grading: str, side: str, scale: float, r: int
) -> None:
    """W = Q·D (columns graded) or D·Q (rows graded), Q orthogonal: σ(W) = D exactly. The
    reconstruction is columnwise (rowwise) accurate, so even σ_min = 1e-14·σ_max is right."""
    d = torch.tensor(GRADINGS[grading], dtype=F64)
    n = len(d)
    Q = _orthogonal(n, 7 * n + r)
    W = scale * (Q * d if side == "columns" else d[:, None] * Q)
    product = dense_product(dlor_product(W, r))
    pieces = product.unbind(1) if side == "columns" else product.unbind(0)
    references = W.unbind(1) if side == "columns" else W.unbind(0)
    for piece, reference in zip(pieces, references, strict=True):
        error = torch.linalg.vector_norm((piece - reference) / scale) / torch.linalg.vector_norm(reference / scale)
        assert float(error) <= 1e-10
    singular = _jacobi_singular_values(product if side == "columns" else product.T)
    expected = np.sort(np.abs(d.numpy()))[::-1]
    exponent = math.frexp(float(np.abs(W.numpy()).max()))[1]
    singular = np.ldexp(singular, exponent) / scale
    np.testing.assert_allclose(singular, expected, rtol=1e-10, atol=0)


def test_dlor_product_of_a_graded_diagonal_has_the_exact_smallest_singular_value() -> None:
    W = torch.diag(torch.tensor([1.0, 1e-10, 1.0], dtype=F64))
    for r in (1, 2):
        product = dense_product(dlor_product(W, r))
        assert torch.equal(product, W)  # regression: σ_min was wrong by 8e-8 relative
        assert float(torch.linalg.svdvals(product)[-1]) == 1e-10


@pytest.mark.parametrize("grading", list(GRADINGS))
def test_dlor_sum_of_graded_matrices_is_normwise_exact(grading: str) -> None:
    """dlor_sum adds τ/K·I to every diagonal entry, so a diagonal entry ≪ τ is a difference of
    two numbers of size τ: normwise exact (≤ 1e-10), and σ_min is only Weyl-accurate,
    |σ̂_min − σ_min| ≤ ‖Ŵ − W‖₂ (documented; use dlor_product for relative accuracy)."""
    d = torch.tensor(GRADINGS[grading], dtype=F64)
    W = _orthogonal(len(d), 3) * d
    total = dense_sum(dlor_sum(W, 1))
    assert _relative(total, W) <= 1e-10
    gap = abs(float(torch.linalg.svdvals(total)[-1]) - float(d.abs().min()))
    assert gap <= float(torch.linalg.matrix_norm(total - W, ord=2)) + 1e-15


def _singular_cases() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    low = torch.randn(7, 2, generator=g, dtype=F64) @ torch.randn(2, 7, generator=g, dtype=F64)
    zero_column = torch.randn(6, 6, generator=g, dtype=F64)
    zero_column[:, 2] = 0
    zero_row = torch.randn(6, 6, generator=g, dtype=F64)
    zero_row[0] = 0
    nilpotent = torch.triu(torch.randn(5, 5, generator=g, dtype=F64), diagonal=1)
    projection = torch.eye(4, dtype=F64)
    projection[3, 3] = 0
    return {
        "rank-2 of 7": low,
        "zero column": zero_column,
        "zero first row": zero_row,
        "nilpotent": nilpotent,
        "projection": projection,
        "zero": torch.zeros(3, 3, dtype=F64),
        "rank-1 ones": torch.ones(4, 4, dtype=F64),
    }


@pytest.mark.parametrize("name", list(_singular_cases()))
@pytest.mark.parametrize("r", [1, 2])
def test_dlor_product_is_exact_for_singular_matrices(name: str, r: int) -> None:
    """Documented behaviour: no error; the product is exactly W and some factors are singular."""
    W = _singular_cases()[name]
    factors = dlor_product(W, r)
    product = dense_product(factors)
    if float(torch.linalg.matrix_norm(W)) == 0.0:
        assert torch.count_nonzero(product) == 0
    else:
        assert _relative(product, W) <= 1e-10
    singular_factors = [f for f in factors if abs(float(torch.linalg.det(f.dense()))) < 1e-12]
    assert singular_factors, "a singular product needs a singular factor"


@pytest.mark.parametrize("permutation", [[1, 0], [2, 0, 1], [4, 3, 2, 1, 0], [0, 1, 2, 5, 3, 4]])
def test_dlor_product_of_a_permutation_is_exact(permutation: list[int]) -> None:
    P = torch.eye(len(permutation), dtype=F64)[permutation]
    factors = dlor_product(P, 1)
    assert torch.equal(dense_product(factors), P)  # no rounding at all: entries 0, ±1
    # one reflector per transposition: N − (number of cycles) factors, nothing for R = I
    seen, cycles = set(), 0
    for start in range(len(permutation)):
        if start not in seen:
            cycles += 1
            while start not in seen:
                seen.add(start)
                start = permutation[start]
    assert len(factors) == len(permutation) - cycles


def test_a_transposition_is_a_single_rank_one_dlor_factor() -> None:
    e = torch.eye(5, dtype=F64)
    d = e[1] - e[3]
    transposition = e - torch.outer(d, d)  # I − (e_i − e_j)(e_i − e_j)ᵀ swaps i and j
    assert torch.equal(transposition, e[[0, 3, 2, 1, 4]])
    factors = dlor_product(transposition, 1)
    assert len(factors) == 1 and factors[0].alpha == 1.0
    torch.testing.assert_close(factors[0].dense(), transposition, rtol=0, atol=1e-15)


def test_dlor_product_of_identity_is_one_identity_factor() -> None:
    factors = dlor_product(np.eye(4), 2)
    assert len(factors) == 1 and torch.equal(factors[0].dense(), torch.eye(4, dtype=F64))


def test_factors_load_into_dlor_layers() -> None:
    W = _random(6, 5)
    for factor in dlor_product(W, 2) + dlor_sum(W, 2):
        layer = factor.to_layer()
        assert isinstance(layer, DLoRLinear) and layer.rank == 2
        torch.testing.assert_close(layer.to_dense(), factor.dense(), rtol=0, atol=0)


def test_inputs_may_be_lists_arrays_or_float32_tensors() -> None:
    W = [[2.0, 1.0], [0.5, -1.0]]
    for value in (W, np.array(W), torch.tensor(W, dtype=torch.float32)):
        assert _relative(dense_product(dlor_product(value, 1)), torch.tensor(W, dtype=F64)) <= 1e-15
        assert _relative(dense_sum(dlor_sum(value, 1)), torch.tensor(W, dtype=F64)) <= 1e-15


@pytest.mark.parametrize("function", [dlor_sum, dlor_product])
@pytest.mark.parametrize(
    ("W", "rank", "error", "pattern"),
    [
        (np.ones((3, 4)), 1, ValueError, r"`W` must be a square matrix, got shape \(3, 4\)"),
        (np.ones(4), 1, ValueError, r"`W` must be a square matrix, got shape \(4,\)"),
        (np.ones((1, 1)), 1, ValueError, r"`W` must be at least 2×2, got shape \(1, 1\)"),
        (np.array([[1.0, np.nan], [0.0, 1.0]]), 1, ValueError, r"`W` must be finite, got nan at index \(0, 1\)"),
        (np.array([[1.0, 0.0], [np.inf, 1.0]]), 1, ValueError, r"`W` must be finite, got inf at index \(1, 0\)"),
        (np.eye(4), 0, ValueError, r"`rank` must be an int in \[1, 3\], got 0"),
        (np.eye(4), 4, ValueError, r"`rank` must be an int in \[1, 3\], got 4"),
        (np.eye(4), 2.0, TypeError, r"`rank` must be an int"),
        ("matrix", 1, TypeError, r"`W` must be a real square matrix"),
    ],
)
def test_bad_input_names_the_argument_and_value(function, W, rank, error, pattern) -> None:
    with pytest.raises(error, match=pattern):
        function(W, rank)


# --------------------------------------------------------------------------------------------
# rank_one_interpolant


@pytest.mark.parametrize("activation", ["relu", "tanh", "sigmoid", "swish", "softplus"])
@pytest.mark.parametrize("d", [1, 2, 5])
def test_rank_one_interpolant_fits_exactly(activation: str, d: int) -> None:
    rng = np.random.default_rng(d)
    x = rng.uniform(-3, 3, (50, d)) if d > 1 else rng.uniform(-3, 3, 50)
    y = rng.normal(0, 2, 50)
    net = rank_one_interpolant(x, y, activation)
    inputs = torch.as_tensor(x if d > 1 else x[:, None])
    with torch.no_grad():
        assert float((net(inputs)[:, 0] - torch.as_tensor(y)).abs().max()) <= 1e-8
    # Purely rank-1: two RankOneLinear maps around σ, every weight of rank exactly 1.
    linear = [m for m in net if isinstance(m, RankOneLinear)]
    assert len(linear) == 2 and len(net) == 3
    assert all(int(torch.linalg.matrix_rank(m.to_dense())) == 1 for m in linear)
    assert linear[0].out_features == 50


def test_rank_one_interpolant_is_blind_orthogonally_to_its_projection() -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (30, 2))
    net = rank_one_interpolant(X, X[:, 0] * X[:, 1])
    v = net[0].v.detach()
    w = torch.stack([-v[1], v[0]])
    grid = torch.rand(100, 2, dtype=F64)
    torch.testing.assert_close(net(grid + 0.3 * w), net(grid), rtol=0, atol=1e-10)


def test_rank_one_interpolant_single_point() -> None:
    net = rank_one_interpolant([0.5], [2.0])
    with torch.no_grad():
        assert abs(float(net(torch.tensor([[0.5]], dtype=F64))) - 2.0) <= 1e-12


@pytest.mark.parametrize(
    ("x", "y", "pattern"),
    [
        ([0.0, 1.0, 0.0], [1.0, 2.0, 3.0], r"`x` must have distinct inputs, got x\[0\] == x\[2\] == 0.0"),
        (
            [[0.0, 1.0], [2.0, 1.0], [0.0, 1.0]],
            [1.0, 2.0, 3.0],
            r"`x` must have distinct inputs, got x\[0\] == x\[2\] == \[0.0, 1.0\]",
        ),
        ([0.0, 1.0], [1.0], r"`y` must have shape \(2,\)"),
        ([0.0, np.nan], [1.0, 2.0], r"`x` must be finite, got nan"),
        ([0.0, 1.0], [1.0, np.inf], r"`y` must be finite, got inf"),
        ([], [], r"`x` must have shape"),
    ],
)
def test_rank_one_interpolant_rejects_bad_data(x, y, pattern) -> None:
    with pytest.raises(ValueError, match=pattern):
        rank_one_interpolant(x, y)


NEAR_COINCIDENT = ([0.0, 1e-9, 1e8, 2e8 + 1, 3.3e8], [0.0, 1.0, 0.0, 1.0, -1.0])


def test_rank_one_interpolant_failure_names_near_coincident_inputs_without_advising_relu_to_relu() -> None:
    """Regression: the message said "use 'relu'" even when the activation already was ReLU."""
    x, y = NEAR_COINCIDENT
    with pytest.raises(ValueError) as caught:
        rank_one_interpolant(x, y, "relu")
    message = str(caught.value)
    assert message.startswith("`activation`='relu': the interpolation system was solved only to a residual of")
    assert "nearly coincident" in message and "x[0] and x[1]" in message and "gap of 1e-09" in message
    assert "Merge or drop near-duplicate inputs" in message
    assert "use activation='relu'" not in message and "use 'relu'" not in message


def test_rank_one_interpolant_failure_suggests_relu_only_for_other_activations() -> None:
    x, y = [0.0, 1e-6, 1e3, 2e3 + 1, 3.3e3], [0.0, 1.0, 0.0, 1.0, -1.0]
    rank_one_interpolant(x, y, "relu")  # ReLU's triangular solve succeeds on these inputs ...
    with pytest.raises(
        ValueError, match=r"`activation`='gelu'.*nearly coincident.*x\[0\] and x\[1\].*use activation='relu'"
    ):
        rank_one_interpolant(x, y, "gelu")  # ... and gelu's near-triangular one does not


def test_rank_one_interpolant_failure_in_two_dimensions_gives_the_unprojected_distance() -> None:
    x, y = NEAR_COINCIDENT
    X = np.stack([np.asarray(x), np.zeros(5)], 1)
    with pytest.raises(
        ValueError, match=r"nearly coincident at this scale: x\[\d\] and x\[\d\] .*apart before the projection"
    ):
        rank_one_interpolant(X, y, "relu")


def test_rank_one_interpolant_rejects_the_identity_activation() -> None:
    with pytest.raises(ValueError, match="`activation`"):
        rank_one_interpolant([0.0, 1.0], [0.0, 1.0], "identity")


# --------------------------------------------------------------------------------------------
# dlor_network_from_dense

HS = (1e-1, 1e-2, 1e-3, 1e-4)


def _dense(activation: str, in_features: int = 2, width: int = 6, depth: int = 2, seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    return mlp(in_features, 1, width, depth, activation, dtype=F64)


def _sup_errors(dense: nn.Sequential, mode: str, rank: int = 2, **kwargs) -> list[float]:
    x = torch.rand(300, dense[0].in_features, generator=torch.Generator().manual_seed(1), dtype=F64) * 2 - 1
    with torch.no_grad():
        reference = dense(x)
        networks = [dlor_network_from_dense(dense, mode, h, rank=rank, **kwargs) for h in HS]
        return [float((network(x) - reference).abs().max()) for network in networks]


@pytest.mark.parametrize("activation", ["swish", "tanh", "relu", "gelu"])
def test_summed_network_is_exact_at_every_h(activation: str) -> None:
    assert max(_sup_errors(_dense(activation), "summed")) <= 1e-12


def test_the_removed_wide_alias_is_refused() -> None:
    with pytest.raises(ValueError, match="`mode`='wide' was removed"):
        dlor_network_from_dense(_dense("tanh"), "wide", 1e-2)


@pytest.mark.parametrize(
    ("activation", "order"), [("swish", 1), ("gelu", 1), ("softplus", 1), ("tanh", 2), ("sigmoid", 2)]
)
@pytest.mark.parametrize("mode", ["deep", "parallel"])
def test_deep_and_parallel_networks_converge_only_as_h_falls(activation: str, order: int, mode: str) -> None:
    """σ per branch (the paper's wide network) and σ between factors (deep) both use σ's
    near-linear regime: sup error O(h), O(h²) when σ''(0) = 0, and clearly non-zero at h = 0.1."""
    errors = _sup_errors(_dense(activation), mode)
    assert errors[0] >= 1e-7  # not exact: unlike "summed", these are not linear re-parametrisations
    assert errors[-1] <= 1e-3
    for coarse, fine in zip(errors[1:], errors[2:]):
        assert 0.5 * 10**order <= coarse / fine <= 2 * 10**order, errors


def test_parallel_network_is_branches_through_sigma_then_a_recentring_map() -> None:
    from structnets.nn import DLoRBranches, DLoRParallel

    dense = _dense("tanh", depth=3)
    net = dlor_network_from_dense(dense, "parallel", 1e-2, rank=2)
    kinds = [type(m).__name__ for m in net]
    assert kinds == ["ZeroPad"] + ["DLoRParallel", "DLoRLinear", "Tanh"] * 3 + ["DLoRBranches", "TakeFirst"]
    parallel = [m for m in net if isinstance(m, DLoRParallel)]
    assert all(m.branches_count == 3 for m in parallel)  # ⌈6/2⌉ terms of dlor_sum per 6×6 weight
    x = torch.rand(7, 2, dtype=F64)
    with torch.no_grad():
        z = net[0](x)
        manual = sum(torch.tanh(b(z)) for b in net[1].branches)
        torch.testing.assert_close(net[1](z), manual, rtol=0, atol=0)
    assert isinstance(net[-2], DLoRBranches)


@pytest.mark.parametrize(
    ("activation", "order"), [("swish", 1), ("gelu", 1), ("softplus", 1), ("tanh", 2), ("sigmoid", 2)]
)
def test_deep_network_error_falls_as_h_falls(activation: str, order: int) -> None:
    """O(h) in general, O(h²) when σ''(0) = 0: a factor ≈ 10^order per decade of h."""
    errors = _sup_errors(_dense(activation), "deep")
    assert errors[-1] <= 1e-3
    for coarse, fine in zip(errors[1:], errors[2:]):
        assert 0.5 * 10**order <= coarse / fine <= 2 * 10**order, errors


def test_deep_relu_network_is_exact_in_the_linear_region() -> None:
    errors = _sup_errors(_dense("relu"), "deep")
    assert max(errors[1:]) <= 1e-10  # h·max|z| < c = 1 from h = 1e-2 on


@pytest.mark.parametrize("mode", ["deep", "parallel", "summed"])
def test_network_has_no_dense_matrix(mode: str) -> None:
    net = dlor_network_from_dense(_dense("tanh"), mode, 1e-3, rank=1)
    allowed = (ZeroPad, TakeFirst, DLoRLinear, nn.Tanh)
    for module in net:
        if hasattr(module, "branches"):
            assert all(isinstance(b, DLoRLinear) for b in module.branches)
        else:
            assert isinstance(module, allowed), type(module)
    assert all(p.dtype == F64 for p in net.parameters())


def test_narrow_dense_network_is_zero_padded() -> None:
    dense = _dense("tanh", in_features=5, width=3, depth=3)  # width < input size: N = 5
    errors = _sup_errors(dense, "summed", rank=1)
    assert max(errors) <= 1e-12
    assert _sup_errors(dense, "deep", rank=4)[-1] <= 1e-5
    assert _sup_errors(dense, "parallel", rank=4)[-1] <= 1e-5


def test_low_rank_hidden_layers_are_accepted() -> None:
    dense = _dense("tanh", depth=3)
    torch.manual_seed(0)
    dense[2] = LowRankLinear(6, 6, 2, dtype=F64)
    assert max(_sup_errors(dense, "summed")) <= 1e-12


def test_dlor_network_from_dense_rejects_bad_arguments() -> None:
    dense = _dense("tanh")
    with pytest.raises(ValueError, match="`mode`"):
        dlor_network_from_dense(dense, "tall", 1e-3)
    for h in (0.0, 2.0, float("nan")):
        with pytest.raises(ValueError, match="`h`"):
            dlor_network_from_dense(dense, "deep", h)
    with pytest.raises(ValueError, match="`rank`"):
        dlor_network_from_dense(dense, "deep", 1e-3, rank=6)
    with pytest.raises(ValueError, match="`mlp`"):
        dlor_network_from_dense(nn.Linear(2, 2), "deep", 1e-3)
    mixed = nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
    with pytest.raises(ValueError, match="one activation"):
        dlor_network_from_dense(mixed, "summed", 1e-3)
    with pytest.raises(ValueError, match="`center`"):
        dlor_network_from_dense(_dense("relu"), "deep", 1e-3, center=-1.0)


def test_rank_one_interpolant_fits_a_thousand_random_points_in_two_dimensions() -> None:
    """Regression: the full dlor-blindspot preset's 1,024 saddle points (smallest projected gap
    5e-7 against a spread of 2) were refused, though float64 fits them to 1e-10: the tolerance
    now allows rounding amplified by spread/gap (8u·S/δ ≈ 3.5e-9 here)."""
    from structnets.experiments.dlor_blindspot.targets import saddle_data

    X, y = saddle_data(1024, seed=1025)
    net = rank_one_interpolant(X, y)
    with torch.no_grad():
        error = float((net(torch.as_tensor(X))[:, 0] - torch.as_tensor(y)).abs().max())
    assert error <= 1e-9
