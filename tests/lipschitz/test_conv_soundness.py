"""The convolutional certificates against independent measurements (float64 throughout).

The reference operator is torch's own ``F.conv2d`` on an explicitly padded input, stated here
again (not the layers' helpers); its norm is measured (1) exactly, as σ₁ of the dense matrix of
the operator on an n × n input (built by applying it to every basis image), and (2) by power
iteration on x ↦ Wᵀ W x with Wᵀ taken by autograd. Neither uses an FFT. Kernels are random and
adversarially trained to push the measured norm above the certificate.
"""

from __future__ import annotations

import math

import pytest
import torch

from structnets.analysis import jacobian_spectral_norms, lipschitz_lower_bound, lipschitz_upper_bound
from structnets.conv_norms import circular_conv_norm, conv_norm_bound, conv_squared_norm_bound
from structnets.models import lipschitz_convnet
from structnets.nn import GradientStepConv2d, NormConstrainedConv2d

from .helpers import dense_operator_norm, reference_conv

F64 = torch.float64


def power_norm(kernel: torch.Tensor, n: int, padding_mode: str, iters: int = 200, seed: int = 0) -> float:
    """Power iteration on WᵀW with Wᵀ from autograd (a lower bound on ‖W‖_op)."""
    generator = torch.Generator().manual_seed(seed)
    k = kernel.detach().to(F64)
    x = torch.randn(1, k.shape[1], n, n, generator=generator, dtype=F64)
    for _ in range(iters):
        x = x.detach().requires_grad_(True)
        y = reference_conv(x, k, padding_mode)
        (pulled,) = torch.autograd.grad(y, x, grad_outputs=y)
        x = pulled / pulled.norm()
    return float(reference_conv(x.detach(), k, padding_mode).norm())


KERNELS = [((1, 1), (3, 3)), ((6, 4), (3, 3)), ((4, 6), (2, 2)), ((5, 5), (4, 3)), ((3, 2), (1, 1)), ((2, 3), (5, 5))]


@pytest.mark.parametrize("padding_mode", ["zeros", "circular"])
@pytest.mark.parametrize(("channels", "kernel_size"), KERNELS)
def test_certificates_bound_the_measured_norm_on_random_kernels(
    channels: tuple[int, int], kernel_size: tuple[int, int], padding_mode: str
) -> None:
    generator = torch.Generator().manual_seed(sum(channels) + 7 * sum(kernel_size))
    kernel = torch.randn(*channels, *kernel_size, generator=generator, dtype=F64)
    every_size = float(conv_norm_bound(kernel))
    for n in (max(kernel_size), 6, 9):
        exact = dense_operator_norm(kernel, n, padding_mode)
        assert power_norm(kernel, n, padding_mode) <= exact * (1 + 1e-12)
        sized = float(conv_norm_bound(kernel, padding_mode, n))
        assert exact <= sized, (n, exact, sized)
        assert sized <= every_size * (1 + 1e-9), (n, sized, every_size)  # margins differ by ~1e-12
        if padding_mode == "circular":
            # Sedghi et al.: the per-size circular certificate is the exact norm (rounded up)
            assert sized <= exact * (1 + 1e-9)
            assert abs(float(circular_conv_norm(kernel, n)) - exact) <= 1e-10 * exact


@pytest.mark.parametrize(("channels", "kernel_size"), KERNELS)
def test_circular_certificate_within_one_percent_of_power_iteration(
    channels: tuple[int, int], kernel_size: tuple[int, int]
) -> None:
    generator = torch.Generator().manual_seed(3)
    kernel = torch.randn(*channels, *kernel_size, generator=generator, dtype=F64)
    for n in (7, 12):
        measured = power_norm(kernel, n, "circular", iters=400)
        certificate = float(conv_norm_bound(kernel, "circular", n))
        assert measured <= certificate
        assert certificate <= 1.01 * measured, (n, measured, certificate)


@pytest.mark.parametrize("kernel_size", [(3, 3), (2, 2), (3, 2), (5, 5)])
def test_every_size_bound_is_within_one_percent_of_the_supremum(kernel_size: tuple[int, int]) -> None:
    generator = torch.Generator().manual_seed(11)
    kernel = torch.randn(4, 3, *kernel_size, generator=generator, dtype=F64)
    bound = float(conv_norm_bound(kernel))
    # circular norms on fine (prime) grids sample the torus densely: all ≤ the bound, the finest within 1 %
    fine = [float(circular_conv_norm(kernel, n)) for n in (61, 127, 257)]
    assert max(fine) <= bound
    assert bound <= 1.01 * max(fine)


def _adversarial_kernel(
    shape: tuple[int, ...], objective: str, padding_mode: str, n: int, steps: int = 25, seed: int = 0
) -> torch.Tensor:
    """Ascend measured norm / certificate over the kernel (Adam), where the certificate is most likely to fail."""
    generator = torch.Generator().manual_seed(seed)
    kernel = torch.randn(*shape, generator=generator, dtype=F64).requires_grad_(True)
    optimizer = torch.optim.Adam([kernel], lr=0.05)
    x0 = torch.randn(1, shape[1], n, n, generator=generator, dtype=F64)
    for _ in range(steps):
        optimizer.zero_grad()
        if objective == "torus":
            # the sup of σ₁(K̂(ω)) between the bound's sampling points, seen on a fine prime grid
            spectrum = torch.fft.fft2(kernel, s=(n, n)).permute(2, 3, 0, 1)
            measured = torch.linalg.matrix_norm(spectrum, ord=2).amax()
            certificate = conv_squared_norm_bound(kernel).sqrt()
        else:
            x = x0.clone().requires_grad_(True)
            for _ in range(15):  # differentiable power iteration on the operator (Wᵀ by autograd)
                y = reference_conv(x, kernel, padding_mode)
                (pulled,) = torch.autograd.grad(y, x, grad_outputs=y, create_graph=True)
                x = pulled / pulled.norm()
            measured = reference_conv(x, kernel, padding_mode).norm()
            certificate = conv_squared_norm_bound(kernel, padding_mode, n).sqrt()
        (-(measured / certificate)).backward()
        optimizer.step()
    return kernel.detach()


@pytest.mark.parametrize(
    ("objective", "padding_mode", "shape", "n"),
    [
        ("torus", "zeros", (1, 1, 3, 3), 61),
        ("torus", "zeros", (3, 2, 2, 2), 61),
        ("torus", "zeros", (2, 2, 3, 3), 61),
        ("operator", "zeros", (1, 1, 3, 3), 5),
        ("operator", "zeros", (4, 3, 2, 2), 6),
        ("operator", "circular", (3, 4, 3, 3), 6),
        ("operator", "circular", (1, 1, 2, 2), 5),
    ],
)
def test_certificates_hold_on_adversarially_trained_kernels(
    objective: str, padding_mode: str, shape: tuple[int, ...], n: int
) -> None:
    kernel = _adversarial_kernel(shape, objective, padding_mode, n)
    every_size = float(conv_norm_bound(kernel))
    if objective == "torus":
        assert float(circular_conv_norm(kernel, n)) <= every_size
        for m in (4, 7, 10):
            assert dense_operator_norm(kernel, m, "zeros") <= every_size
        return
    exact = dense_operator_norm(kernel, n, padding_mode)
    sized = float(conv_norm_bound(kernel, padding_mode, n))
    assert exact <= sized <= every_size
    if padding_mode == "circular":
        assert sized <= exact * (1 + 1e-9)


def test_certificate_covers_scales_near_float64_limits() -> None:
    generator = torch.Generator().manual_seed(5)
    base = torch.randn(3, 2, 3, 3, generator=generator, dtype=F64)
    for scale in (2.0**-900, 2.0**-400, 2.0**-60, 2.0**60, 2.0**400):
        kernel = base * scale
        # exact power-of-two scaling: the norm scales exactly, the certificate must still cover it
        exact = dense_operator_norm(base, 5, "circular") * scale
        bound = float(conv_norm_bound(kernel, "circular", 5))
        assert exact <= bound
        if scale >= 2.0**-400:  # below, ‖K‖² underflows float64 and Q rounds up to a subnormal (still a bound)
            assert bound <= exact * (1 + 1e-9)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_certificate_rounds_up_in_every_dtype(dtype: torch.dtype) -> None:
    generator = torch.Generator().manual_seed(9)
    kernel = torch.randn(4, 3, 3, 3, generator=generator).to(dtype)
    bound = conv_norm_bound(kernel, "circular", 6)
    assert bound.dtype == dtype
    assert float(bound) >= dense_operator_norm(kernel.to(F64), 6, "circular")


# ---------------------------------------------------------------------------------------------- blocks


def _block_operator_check(layer: GradientStepConv2d, n: int) -> None:
    """τ·σ₁(W)² ≤ 2 with σ₁ of the dense operator matrix of the stored kernel at size n (exact arithmetic up to SVD)."""
    tau = float(layer.tau().detach().to(F64))
    sigma = dense_operator_norm(layer.weight.detach().to(F64), n, layer.padding_mode)
    assert tau * sigma**2 <= float(layer.step_size().detach()) * (1 + 1e-12) <= 2.0 * (1 + 1e-12)


def _flat(layer: torch.nn.Module, channels: int, n: int):  # type: ignore[no-untyped-def]
    def f(x: torch.Tensor) -> torch.Tensor:
        return layer(x.reshape(-1, channels, n, n)).reshape(x.shape[0], -1)

    f.parameters = layer.parameters  # type: ignore[attr-defined]
    return f


def _steepen(layer: torch.nn.Module, channels: int, n: int, steps: int = 30, seed: int = 0) -> None:
    """Adversarial training: maximise the secant ratio over the parameters (pushes against the constraint)."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(16, channels, n, n, generator=generator, dtype=F64)
    y = x + 0.05 * torch.randn(x.shape, generator=generator, dtype=F64)
    optimizer = torch.optim.Adam(layer.parameters(), lr=0.1)
    layer.train()
    for _ in range(steps):
        optimizer.zero_grad()
        ratio = (layer(x) - layer(y)).flatten(1).norm(dim=1) / (x - y).flatten(1).norm(dim=1)
        (-ratio.mean()).backward()
        optimizer.step()
    layer.eval()


@pytest.mark.parametrize("padding_mode", ["zeros", "circular"])
@pytest.mark.parametrize(
    ("channels", "hidden", "kernel_size", "sized"),
    [(1, 1, 3, True), (3, 5, 2, False), (4, 4, 3, False), (2, 6, (3, 2), True)],
)
def test_gradient_step_block_is_one_lipschitz_measured(
    channels: int, hidden: int, kernel_size: int | tuple[int, int], sized: bool, padding_mode: str
) -> None:
    n = 6
    torch.manual_seed(channels + hidden)
    layer = GradientStepConv2d(
        channels, hidden, kernel_size, padding_mode=padding_mode, step=1.9, input_size=n if sized else None, dtype=F64
    )
    _steepen(layer, channels, n)
    assert lipschitz_upper_bound(layer) == 1.0
    _block_operator_check(layer, n)
    if not sized:
        for m in (3, 9):
            _block_operator_check(layer, m)
    f = _flat(layer, channels, n)
    points = torch.randn(64, channels * n * n, dtype=F64)
    assert float(jacobian_spectral_norms(f, points).max()) <= 1.0 + 1e-12
    assert lipschitz_lower_bound(f, points, steps=20, pairs=16, lr=0.05) <= 1.0 + 1e-12


def test_norm_constrained_conv_is_certified_on_adversarial_kernels() -> None:
    torch.manual_seed(0)
    for padding_mode in ("zeros", "circular"):
        for sized in (True, False):
            layer = NormConstrainedConv2d(
                3, 5, 3, padding_mode=padding_mode, input_size=6 if sized else None, dtype=F64
            )
            _steepen(layer, 3, 6, steps=20)
            sigma = dense_operator_norm(layer.kernel().detach(), 6, padding_mode)
            assert sigma <= layer.lipschitz_bound() <= 1.0
            assert sigma >= 0.9  # steepened onto the unit ball: the certificate is not vacuous


def test_convnet_certificate_bounds_its_measured_constant() -> None:
    torch.manual_seed(0)
    model = lipschitz_convnet(1, 3, 8, channels=(2, 4), depths=(1, 1), head_width=8, head_depth=1, flat_input=True,
                              dtype=F64)  # fmt: skip
    _steepen_flat = torch.randn(32, 64, dtype=F64)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(15):
        optimizer.zero_grad()
        y = _steepen_flat + 0.05 * torch.randn_like(_steepen_flat)
        ratio = (model(_steepen_flat) - model(y)).norm(dim=1) / (_steepen_flat - y).norm(dim=1)
        (-ratio.mean()).backward()
        optimizer.step()
    model.eval()
    upper = lipschitz_upper_bound(model)
    assert upper <= 1.0
    lower = lipschitz_lower_bound(model, torch.randn(64, 64, dtype=F64), steps=20, pairs=16, lr=0.05)
    assert 0.0 < lower <= upper * (1 + 1e-12)


def test_certificate_is_never_stale() -> None:
    """Optimizer steps (foreach and fused Adam), .data edits and state-dict loads after a cached eval pass."""
    torch.manual_seed(0)
    n = 5
    layer = GradientStepConv2d(3, 4, 3, step=1.5, learnable_step=False, input_size=n, dtype=F64)
    lift = NormConstrainedConv2d(3, 3, 3, input_size=n, dtype=F64)
    x = torch.randn(2, 3, n, n, dtype=F64)

    def check() -> None:
        with torch.no_grad():
            layer.eval(), lift.eval()
            layer(x), lift(x)  # a cached pass
        _block_operator_check(layer, n)
        assert dense_operator_norm(lift.kernel().detach(), n, "zeros") <= lift.lipschitz_bound()

    check()
    for kwargs in ({"foreach": True}, {"fused": True}):
        optimizer = torch.optim.Adam([*layer.parameters(), *lift.parameters()], lr=0.5, **kwargs)
        layer.train(), lift.train()
        optimizer.zero_grad()
        (layer(x).square().sum() + lift(x).square().sum()).backward()
        with torch.no_grad():
            layer.eval(), lift.eval()
            layer(x), lift(x)
        optimizer.step()  # after the cached pass: the cache must see the new content
        check()
    with torch.no_grad():
        layer.weight.data.mul_(3.0)
        lift.raw_weight.data.mul_(3.0)
    check()
    state = {k: v * 2.0 for k, v in layer.state_dict().items()}
    layer.load_state_dict(state)
    lift.load_state_dict({k: v * 2.0 for k, v in lift.state_dict().items()})
    check()
    assert math.isfinite(float(layer.tau().detach()))
