"""``bound="verified"`` for the conv layers: warm per-frequency power estimates certified by one batched Cholesky test.

Every training-time Q must be ≥ ‖W‖_op² measured independently (σ₁ of the dense float64 matrix of
the operator on a small input, built from ``F.conv2d`` on basis images, no FFT), on random and
adversarial kernels and after edits the power vectors did not see; a test that cannot pass (μ below
the top eigenvalue) must fall back to the exact bound and be counted; eval and certificates use
the exact bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from torch.nn import functional as F

from structnets.conv_norms import (
    conv_squared_norm_bound,
    frequency_matrices,
    gram_matrices,
    rayleigh_quotient,
    resolve_grid,
    scale_kernel,
)
from structnets.models import lipschitz_convnet
from structnets.nn import GradientStepConv2d, NormConstrainedConv2d
from structnets.nn._conv_verified import cholesky_certificate, correlation_gram, training_conv_square

from .helpers import dense_operator_norm

F64 = torch.float64


def dense_norm_squared(kernel: torch.Tensor, n: int, padding_mode: str) -> float:
    """σ₁² of the (c_out·n², c_in·n²) matrix of the "same" convolution on an n × n input (float64 SVD)."""
    return dense_operator_norm(kernel, n, padding_mode) ** 2


def _orthogonal_centre(c: int, generator: torch.Generator) -> torch.Tensor:
    """A 3×3 kernel with an orthogonal centre tap only: every singular value 1 at every frequency."""
    q, _ = torch.linalg.qr(torch.randn(c, c, generator=generator, dtype=F64))
    kernel = torch.zeros(c, c, 3, 3, dtype=F64)
    kernel[:, :, 1, 1] = q
    return kernel


def _checkerboard(c_out: int, c_in: int, generator: torch.Generator) -> torch.Tensor:
    """A rank-one kernel modulated by (−1)^{p+q}: its norm sits at the frequency (π, π), far from ω = 0."""
    u, v = torch.randn(c_out, 1, generator=generator, dtype=F64), torch.randn(1, c_in, generator=generator, dtype=F64)
    sign = torch.tensor([[1.0, -1.0, 1.0], [-1.0, 1.0, -1.0], [1.0, -1.0, 1.0]], dtype=F64)
    return (u @ v)[:, :, None, None] * sign + 1e-3 * torch.randn(c_out, c_in, 3, 3, generator=generator, dtype=F64)


def _kernels() -> list[tuple[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    out = [(f"random {co}x{ci}x{k}", torch.randn(co, ci, k, k, generator=generator, dtype=F64))
           for co, ci, k in ((1, 1, 3), (4, 6, 3), (6, 4, 2), (5, 5, 3))]  # fmt: skip
    out.append(("orthogonal centre", _orthogonal_centre(5, generator)))
    out.append(("checkerboard", _checkerboard(4, 3, generator)))
    # two frequencies with the same top singular value: the kernel plus its modulation by (−1)^p
    base = torch.randn(3, 3, 1, 3, generator=generator, dtype=F64)
    twin = torch.cat((base, base * torch.tensor([1.0, -1.0, 1.0], dtype=F64)[None, None, None, :]), dim=2)
    out.append(("tied frequencies", torch.cat((twin, torch.zeros(3, 3, 1, 3, dtype=F64)), dim=2)))
    return out


KERNELS = _kernels()


@pytest.mark.parametrize("padding_mode", ["zeros", "circular"])
@pytest.mark.parametrize("n", [5, 6])
@pytest.mark.parametrize(("name", "kernel"), KERNELS, ids=[name for name, _ in KERNELS])
def test_verified_bound_is_certified_and_tight(name: str, kernel: torch.Tensor, n: int, padding_mode: str) -> None:
    reference = dense_norm_squared(kernel, n, padding_mode)
    exact = float(conv_squared_norm_bound(kernel, padding_mode, n))
    square, vectors, passed = training_conv_square(kernel, None, 0.01, padding_mode, n)
    assert not passed  # no vectors yet: the exact bound starts them
    assert float(square) >= reference and abs(float(square) - exact) <= 1e-12 * exact
    for _ in range(4):
        square, vectors, passed = training_conv_square(kernel, vectors, 0.01, padding_mode, n)
        assert float(square) >= reference, name
    assert passed, name  # warm vectors: the margin test certifies
    assert float(square) <= 1.0100001 * exact, name  # ≈ (1 + margin)·the exact bound, not a loose one
    if padding_mode == "circular":  # the exact bound is the norm itself there
        assert exact <= reference * (1 + 1e-9)


def test_every_size_bound_verified_too() -> None:
    kernel = KERNELS[3][1]
    square, vectors, _ = training_conv_square(kernel, None, 0.01, "zeros", None)
    square, vectors, passed = training_conv_square(kernel, vectors, 0.01, "zeros", None)
    assert passed
    exact = float(conv_squared_norm_bound(kernel, "zeros", None))
    assert exact <= float(square) <= 1.0101 * exact
    for n in (5, 8):
        assert float(square) >= dense_norm_squared(kernel, n, "zeros")


@pytest.mark.parametrize(
    ("shape", "grid"), [((4, 6, 3, 3), (8, 8)), ((6, 4, 2, 3), (7, 6)), ((3, 3, 3, 3), (3, 3)), ((2, 5, 1, 3), (1, 64))]
)
def test_correlation_gram_matches_the_fft_gram_within_its_error_bound(
    shape: tuple[int, int, int, int], grid: tuple[int, int]
) -> None:
    """Both sides (c_in ≤ c_out and not), even and 1-tap axes, a grid smaller than the correlation (wrapping)."""
    kernel = torch.randn(*shape, generator=torch.Generator().manual_seed(2), dtype=F64)
    gram, relative = correlation_gram(kernel, grid)
    reference = gram_matrices(kernel, grid)
    assert gram.shape == reference.shape and gram.is_contiguous()
    error = float((gram - reference).abs().amax())
    assert error <= 1e-13 * float(reference.abs().amax())
    # the bound covers the difference (the FFT Gram's own error, of the same order, included twice over)
    assert error <= 2.0 * relative * float(kernel.square().sum())
    assert relative <= 1e-12


def test_cholesky_test_passes_above_and_fails_below_the_top_eigenvalue() -> None:
    kernel = KERNELS[2][1]
    scaled, _, _ = scale_kernel(kernel)
    grid, _ = resolve_grid((2, 2), "zeros", (6, 6), None)
    gram = gram_matrices(scaled, grid)
    top = float(torch.linalg.eigvalsh(gram)[..., -1].max())
    certified = cholesky_certificate(gram, top * (1 + 1e-9), 0.0)
    assert certified is not None and top <= certified <= top * (1 + 1e-8)
    assert cholesky_certificate(gram, top * (1 - 1e-9), 0.0) is None
    assert cholesky_certificate(gram, math.nan, 0.0) is None
    assert cholesky_certificate(gram, 0.0, 0.0) is None


def test_lagging_vectors_fall_back_to_the_exact_bound_and_are_counted() -> None:
    torch.manual_seed(0)
    n = 6
    layer = GradientStepConv2d(3, 4, 3, input_size=n, bound="verified", dtype=F64)
    x = torch.randn(2, 3, n, n, dtype=F64)
    layer.train()
    layer(x)
    layer(x)
    bound = layer._bound
    assert (bound.cold_starts, bound.verified_steps, bound.exact_fallbacks) == (1, 1, 0)
    # bottom eigenvectors: power steps stay on them, λ̂ = λ_min ≪ λ_max, the test cannot pass
    scaled, _, _ = scale_kernel(layer.weight.detach())
    bound._vectors = torch.linalg.eigh(gram_matrices(scaled, (n + 2, n + 2)))[1][:, :, 0].contiguous()
    margin = bound.verified_margin
    square = bound.squared(layer.weight, True)
    assert bound.exact_fallbacks == 1 and bound.verified_margin == min(0.08, 2 * margin)
    exact = float(conv_squared_norm_bound(layer.weight.detach(), "zeros", n))
    assert abs(float(square.detach()) - exact) <= 1e-12 * exact
    # the fallback restarted the vectors at the top eigenvectors: the next step passes again
    bound.squared(layer.weight, True)
    assert bound.verified_steps == 2


def _training_square(layer: GradientStepConv2d | NormConstrainedConv2d) -> float:
    weight = layer.weight if isinstance(layer, GradientStepConv2d) else layer.raw_weight
    return float(layer._bound.squared(weight, True).detach())


@pytest.mark.parametrize("edit", ["data", "state_dict", "reset_parameters"])
def test_edits_behind_warm_vectors_never_give_a_stale_bound(edit: str) -> None:
    torch.manual_seed(0)
    n = 5
    generator = torch.Generator().manual_seed(1)
    for layer in (
        GradientStepConv2d(4, 4, 3, input_size=n, bound="verified", dtype=F64),
        NormConstrainedConv2d(4, 4, 3, input_size=n, bound="verified", dtype=F64),
    ):
        layer.train()
        weight = layer.weight if isinstance(layer, GradientStepConv2d) else layer.raw_weight
        for _ in range(3):
            _training_square(layer)
        assert layer._bound.verified_steps == 2
        # a much larger norm at the checkerboard frequency, which the warm vectors never saw
        new = weight.detach() + 10.0 * _checkerboard(4, 4, generator)
        if edit == "data":
            weight.data.copy_(new)
        elif edit == "state_dict":
            state = layer.state_dict()
            state["weight" if isinstance(layer, GradientStepConv2d) else "raw_weight"] = new
            layer.load_state_dict(state)
        else:
            with torch.no_grad():
                layer.reset_parameters()
                weight.mul_(50.0)
        measured = dense_norm_squared(weight, n, "zeros")
        exact = float(conv_squared_norm_bound(weight.detach(), "zeros", n))
        for _ in range(2):  # certified by the test (the vectors re-converge in two steps) or by the fallback
            square = _training_square(layer)
            assert measured <= square <= 1.09 * exact
        assert layer._bound.exact_fallbacks + layer._bound.verified_steps == 4


def test_gradient_is_that_of_the_top_eigenvalue_at_the_maximising_frequency() -> None:
    kernel = KERNELS[1][1].clone().requires_grad_(True)
    n, margin = 6, 0.02
    _, vectors, _ = training_conv_square(kernel.detach(), None, margin, "zeros", n)
    square, vectors, passed = training_conv_square(kernel, vectors, margin, "zeros", n)
    assert passed
    (grad,) = torch.autograd.grad(square, kernel)
    # independent: λ_max of K̂(ω)ᴴK̂(ω) by eigvalsh, with K̂ from torch's FFT, at the maximising frequency
    spectrum = frequency_matrices(kernel, (n + 2, n + 2))
    tops = torch.linalg.eigvalsh(spectrum.conj().transpose(-2, -1) @ spectrum)[..., -1]
    (reference,) = torch.autograd.grad((1 + margin) * tops.max(), kernel)
    torch.testing.assert_close(grad, reference, rtol=1e-7, atol=1e-9)
    # the differentiable Rayleigh quotient itself, against finite differences
    scaled = kernel.detach().clone().requires_grad_(True)
    vector = vectors[int(tops.detach().flatten().argmax())]
    assert torch.autograd.gradcheck(
        lambda k: rayleigh_quotient(k, int(tops.detach().flatten().argmax()), (n + 2, n + 2), vector), (scaled,)
    )


def test_eval_and_certificates_use_the_exact_bound() -> None:
    torch.manual_seed(0)
    n = 6
    verified = GradientStepConv2d(3, 5, 3, input_size=n, bound="verified", dtype=F64)
    exact = GradientStepConv2d(3, 5, 3, input_size=n, dtype=F64)
    exact.load_state_dict(verified.state_dict())
    x = torch.randn(2, 3, n, n, dtype=F64)
    verified.train(), exact.train()
    for _ in range(3):
        verified(x)
    train_tau = float(verified.tau().detach())
    assert verified._bound.verified_steps == 3  # two forwards and this τ after the cold start
    assert train_tau <= float(exact.tau().detach())  # the verified Q ≥ the exact one
    assert verified.lipschitz_bound() == 1.0
    export_in_train = verified.export()
    verified.eval(), exact.eval()
    assert torch.equal(verified.tau(), exact.tau())
    assert torch.equal(verified(x), exact(x))
    assert torch.equal(export_in_train(x), exact.export()(x))
    assert verified._bound.verified_steps == 3  # none of these ran the training path


def test_non_finite_weights_give_nan_and_the_clear_errors() -> None:
    for value in (math.nan, math.inf):
        layer = GradientStepConv2d(2, 3, 3, input_size=5, bound="verified", dtype=F64)
        lift = NormConstrainedConv2d(2, 3, 3, input_size=5, bound="verified", dtype=F64)
        layer.train(), lift.train()
        x = torch.randn(1, 2, 5, 5, dtype=F64)
        layer(x), layer(x), lift(x), lift(x)
        with torch.no_grad():
            layer.weight[0, 0, 0, 0] = value
            lift.raw_weight[0, 0, 0, 0] = value
        assert math.isnan(_training_square(layer)) and math.isnan(_training_square(lift))
        for module, name in ((layer, "weight"), (lift, "raw_weight")):
            with pytest.raises(ValueError, match=f"`{name}` has non-finite"):
                module.lipschitz_bound()
            fresh = type(module)(2, 3, 3, input_size=5, bound="verified", dtype=F64)
            with pytest.raises(ValueError, match="must be finite"):
                fresh.load_state_dict(module.state_dict())


def test_bound_option_is_validated_by_name() -> None:
    for build in (
        lambda: GradientStepConv2d(2, 3, 3, bound="power"),
        lambda: NormConstrainedConv2d(2, 3, 3, bound="Exact"),
        lambda: lipschitz_convnet(1, 10, 8, channels=(4, 8), depths=(1, 1), bound="fast"),
    ):
        with pytest.raises(ValueError, match="`bound`"):
            build()
    layer = GradientStepConv2d(2, 3, 3)
    assert layer.bound == "exact" and "bound='exact'" in repr(layer)
    layer.bound = "verified"
    assert layer._bound.mode == "verified"
    with pytest.raises(ValueError, match="`bound`"):
        layer.bound = "gram"
    assert layer.bound == "verified"


def test_verified_training_keeps_every_step_certified() -> None:
    """A short training of a small convnet at lr 5e-3: every training-time Q ≥ the measured ‖W‖_op²."""
    torch.manual_seed(0)
    model = lipschitz_convnet(1, 10, 8, channels=(4, 6), depths=(1, 1), head_width=16, head_depth=1,
                              bound="verified", dtype=F64)  # fmt: skip
    convs = [m for m in model if isinstance(m, (GradientStepConv2d, NormConstrainedConv2d))]
    assert len(convs) == 3 and all(m.bound == "verified" for m in model if hasattr(m, "bound"))
    sizes = {id(convs[0]): 8, id(convs[1]): 8, id(convs[2]): 4}
    seen: list[tuple[float, float]] = []

    def recording(module: GradientStepConv2d | NormConstrainedConv2d) -> Callable[..., torch.Tensor]:
        original = module._bound.squared

        def squared(weight: torch.Tensor, training: bool = False) -> torch.Tensor:
            value = original(weight, training)
            if training and torch.is_grad_enabled():
                seen.append((float(value.detach()), dense_norm_squared(weight, sizes[id(module)], "zeros")))
            return value

        return squared

    for m in convs:
        m._bound.squared = recording(m)  # type: ignore[method-assign]
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    x, y = torch.randn(32, 1, 8, 8, dtype=F64), torch.randint(0, 10, (32,))
    model.train()
    for _ in range(15):
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    assert len(seen) == 45 and all(q >= measured for q, measured in seen)
    passed = sum(m._bound.verified_steps for m in convs)
    assert passed >= 36  # most steps certified by the Cholesky test, not the fallback


@pytest.mark.parametrize("padding_mode", ["zeros", "circular"])
def test_verified_bound_at_the_conv_floor_margin_stays_above_the_operator_norm_through_training(
    padding_mode: str,
) -> None:
    """The conv floor margin (5·10⁻⁴, not the dense 10⁻²) keeps every training Q ≥ σ₁² of the operator
    matrix, and buys tightness: once the vectors are warm, Q ≤ (1 + 2·floor) × the exact bound's Q (for
    zero padding that Q is the (n + k − 1)-torus norm, itself above σ₁²)."""
    from structnets.nn._conv_common import CONV_VERIFIED_MARGIN

    assert CONV_VERIFIED_MARGIN < 0.01
    torch.manual_seed(0)
    n = 5
    layer = GradientStepConv2d(3, 3, 3, padding_mode=padding_mode, input_size=n, bound="verified", dtype=F64)
    assert layer._bound.verified_margin == CONV_VERIFIED_MARGIN
    optimizer = torch.optim.Adam(layer.parameters(), lr=0.02)
    x = torch.randn(8, 3, n, n, dtype=F64)
    layer.train()
    ratios = []
    for _ in range(25):
        square = float(layer._bound.squared(layer.weight, True).detach())
        truth = dense_norm_squared(layer.weight, n, padding_mode)
        assert square >= truth
        ratios.append(square / float(conv_squared_norm_bound(layer.weight.detach(), padding_mode, n)))
        optimizer.zero_grad()
        layer(x).square().sum().backward()
        optimizer.step()
    bound = layer._bound
    assert bound.verified_steps >= 20 and bound.verified_margin < 0.01
    passed_late = ratios[-5:]
    assert max(passed_late) <= 1.0 + 2.0 * max(bound.verified_margin, CONV_VERIFIED_MARGIN) + 1e-9
