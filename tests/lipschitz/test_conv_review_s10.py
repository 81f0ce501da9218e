"""Review (session 10) of the certified convolutional layers, as a reviewer who wants to break "certified".

Every certificate is compared with an independent float64 measurement: σ₁ of the explicit matrix of the
operator, built here by index arithmetic from the definition of the "same" convolution (no torch
convolution, no FFT), or the float64 Jacobian / secant of the forward.
"""

from __future__ import annotations

import pytest
import torch

from structnets import export
from structnets.analysis import certified_radii, lipschitz_upper_bound, pgd_l2
from structnets.conv_norms import conv_squared_norm_bound
from structnets.models import lipschitz_convnet
from structnets.nn import (
    FlatToImage,
    GradientStepConv2d,
    InvertibleDownsample,
    L2NormPool2d,
    NormConstrainedConv2d,
)

F64 = torch.float64


def conv_matrix(kernel: torch.Tensor, n1: int, n2: int, padding_mode: str) -> torch.Tensor:
    """The (c_out·n₁n₂, c_in·n₁n₂) float64 matrix of y[o, i, j] = Σ K[o, c, p, q] x[c, i + p − b_h, j + q − b_w].

    b = (k − 1)//2 taps before (zero outside the image, or indices modulo n for circular padding):
    the definition, written with indices only. Linear in the kernel, so differentiable through it.
    """
    c_out, c_in, kh, kw = kernel.shape
    bh, bw = (kh - 1) // 2, (kw - 1) // 2
    rows, cols, taps = [], [], []
    for i in range(n1):
        for j in range(n2):
            for p in range(kh):
                for q in range(kw):
                    a, b = i + p - bh, j + q - bw
                    if padding_mode == "circular":
                        a, b = a % n1, b % n2
                    elif not (0 <= a < n1 and 0 <= b < n2):
                        continue
                    rows.append(i * n2 + j)
                    cols.append(a * n2 + b)
                    taps.append(p * kw + q)
    k = kernel.to(F64).reshape(c_out, c_in, kh * kw)
    pixels = n1 * n2
    matrix = torch.zeros(c_out, pixels, c_in, pixels, dtype=F64)
    values = k[:, :, taps].permute(2, 0, 1)  # (entries, c_out, c_in)
    index = torch.tensor(rows) * pixels + torch.tensor(cols)
    flat = matrix.permute(1, 3, 0, 2).reshape(pixels * pixels, c_out, c_in)
    flat = flat.index_add(0, index, values)
    return flat.reshape(pixels, pixels, c_out, c_in).permute(2, 0, 3, 1).reshape(c_out * pixels, c_in * pixels)


def operator_norm(kernel: torch.Tensor, n1: int, n2: int, padding_mode: str) -> float:
    return float(torch.linalg.matrix_norm(conv_matrix(kernel.detach(), n1, n2, padding_mode), ord=2))


@pytest.mark.parametrize("make", [
    lambda d: GradientStepConv2d(1, 1, 3, dtype=d),
    lambda d: NormConstrainedConv2d(1, 1, 3, dtype=d),
    lambda d: InvertibleDownsample(1, 4, 2, dtype=d),
    lambda d: lipschitz_convnet(1, 2, image_size=4, channels=(1,), depths=(1,), dtype=d),
])  # fmt: skip
@pytest.mark.parametrize("dtype", [torch.complex64, torch.int32, torch.bool])
def test_a_dtype_without_a_certificate_is_refused_by_name(make, dtype: torch.dtype) -> None:  # type: ignore[no-untyped-def]
    """A complex kernel has no certificate here: the conv layers were built, then their first forward raised a
    TypeError naming `kernel` (an argument the user never gave), and an orthogonal InvertibleDownsample ran on,
    silently dropping the imaginary part of V; an integer dtype raised torch's "Only Tensors of floating point
    and complex dtype can require gradients", which names nothing."""
    with pytest.raises(TypeError, match="`dtype` must be a real floating-point torch.dtype"):
        make(dtype)


def test_the_index_reference_is_the_padded_convolution() -> None:
    """The reference matrix applied to x equals F.conv2d on the explicitly padded x (both paddings, odd and even
    kernels), so the measurements below rest on the operator the layers compute."""
    generator = torch.Generator().manual_seed(0)
    for kernel_size, padding_mode in [((3, 3), "zeros"), ((2, 3), "circular"), ((4, 1), "zeros"), ((2, 2), "circular")]:
        kernel = torch.randn(3, 2, *kernel_size, generator=generator, dtype=F64)
        x = torch.randn(2, 5, 4, generator=generator, dtype=F64)
        kh, kw = kernel_size
        pads = ((kw - 1) // 2, kw // 2, (kh - 1) // 2, kh // 2)
        padded = torch.nn.functional.pad(x[None], pads, mode="constant" if padding_mode == "zeros" else "circular")
        expected = torch.nn.functional.conv2d(padded, kernel)[0].reshape(-1)
        got = conv_matrix(kernel, 5, 4, padding_mode) @ x.reshape(-1)
        torch.testing.assert_close(got, expected, rtol=0, atol=1e-13)


ASCENT_CASES = [
    # (c_in, c_out, kernel_size, n, padding_mode, per_size)
    (1, 1, (1, 1), 1, "zeros", True),
    (1, 1, (2, 2), 2, "circular", True),
    (2, 3, (2, 2), 2, "zeros", True),
    (1, 2, (3, 3), 3, "zeros", False),
    (3, 2, (3, 3), 3, "circular", True),
    (2, 2, (2, 3), 5, "zeros", True),
    (1, 1, (5, 5), 5, "circular", True),
    (2, 1, (5, 5), 7, "zeros", False),
    (2, 2, (1, 4), 7, "circular", False),
]


@pytest.mark.parametrize(("c_in", "c_out", "kernel_size", "n", "padding_mode", "per_size"), ASCENT_CASES)
def test_kernels_trained_to_beat_the_certificate_never_do(
    c_in: int, c_out: int, kernel_size: tuple[int, int], n: int, padding_mode: str, per_size: bool
) -> None:
    """Adam ascent on σ₁(operator)² / Q, σ₁ of the index-built float64 matrix on the exact n × n input (1×1 to
    7×7, odd and even kernels, both paddings, the per-size and the every-size bound): the certified Q stays ≥
    σ₁² for the trained kernel in float64, float32 and bfloat16 (measured worst ratio 1 − 1.1·10⁻¹³, at the exact
    circular per-size bound)."""
    generator = torch.Generator().manual_seed(c_in * 100 + n)
    kernel = torch.randn(c_out, c_in, *kernel_size, generator=generator, dtype=F64).requires_grad_(True)
    size = (n, n) if per_size else None
    optimizer = torch.optim.Adam([kernel], lr=0.05)
    taps = torch.eye(kernel.numel(), dtype=F64)
    basis = torch.stack([conv_matrix(t.reshape(kernel.shape), n, n, padding_mode).reshape(-1) for t in taps], 1)
    for _ in range(25):
        optimizer.zero_grad()
        matrix = (basis @ kernel.reshape(-1)).reshape(c_out * n * n, c_in * n * n)
        ratio = torch.linalg.matrix_norm(matrix, ord=2).square() / conv_squared_norm_bound(kernel, padding_mode, size)
        (-ratio).backward()
        optimizer.step()
    for dtype in (F64, torch.float32, torch.bfloat16):
        stored = kernel.detach().to(dtype)
        certified = float(conv_squared_norm_bound(stored, padding_mode, size))
        assert operator_norm(stored, n, n, padding_mode) ** 2 <= certified, (dtype, certified)


def test_every_size_certificate_holds_at_every_size_it_may_meet() -> None:
    """One every-size Q (input_size=None) against the exact operator on 1×1 to 9×9 and 28×28 inputs, both
    paddings, for a kernel trained to peak between the sampled frequencies of a small circular grid."""
    generator = torch.Generator().manual_seed(3)
    kernel = torch.randn(1, 1, 3, 3, generator=generator, dtype=F64)
    certified = float(conv_squared_norm_bound(kernel))
    for n in [*range(3, 10), 28]:
        for padding_mode in ("zeros", "circular"):
            measured = operator_norm(kernel, n, n, padding_mode) if n < 10 else None
            if measured is None:  # 28×28: the circular norm, exact by the DFT, and the zero one below it
                spectrum = torch.fft.fft2(kernel[0, 0], s=(n, n))
                measured = float(spectrum.abs().amax())
            assert measured**2 <= certified, (n, padding_mode)


def jacobian_norm(layer: torch.nn.Module, x: torch.Tensor, steps: int = 15) -> float:
    """‖J(x)‖₂ of the layer at x by power iteration on JᵀJ through autograd (float64, the exact input size)."""
    generator = torch.Generator().manual_seed(7)
    v = torch.randn(x.shape, generator=generator, dtype=F64)
    norm = 0.0
    for _ in range(steps):
        v = v / torch.linalg.vector_norm(v)
        _, jv = torch.autograd.functional.jvp(layer, x, v)
        _, v = torch.autograd.functional.vjp(layer, x, jv)
        norm = float(torch.linalg.vector_norm(jv.detach()))
    return norm


@pytest.mark.parametrize(
    ("padding_mode", "kernel_size", "input_size", "n", "bound"),
    [
        ("zeros", 3, 28, 28, "exact"),
        ("circular", 2, None, 7, "verified"),
        ("zeros", (2, 3), None, 5, "verified"),
        ("circular", 3, 6, 6, "exact"),
    ],
)
def test_blocks_trained_for_steepness_stay_nonexpansive(
    padding_mode: str, kernel_size: int | tuple[int, int], input_size: int | None, n: int, bound: str
) -> None:
    """A GradientStepConv2d at the full step s = 2, trained by Adam to maximise ‖f(x) − f(y)‖/‖x − y‖, has
    ‖J(x)‖₂ ≤ 1 at every probed point (float64, power iteration through autograd on the exact input size), in
    eval mode and in training mode (where ``bound="verified"`` sets τ). With circular padding at one size the
    bound is exact, and a bias that opens every unit makes the probe see τ‖W‖_op² − 1 itself: a τ 15 % too large
    (a mutation of the step) fails there."""
    torch.manual_seed(0)
    layer = GradientStepConv2d(
        2, 4, kernel_size, padding_mode=padding_mode, input_size=input_size, step=2.0, learnable_step=False,
        bound=bound, dtype=F64,
    )  # fmt: skip
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(8, 2, n, n, generator=generator, dtype=F64)
    y = x + 0.05 * torch.randn(x.shape, generator=generator, dtype=F64)
    optimizer = torch.optim.Adam(layer.parameters(), lr=0.1)
    layer.train()
    for _ in range(15):
        optimizer.zero_grad()
        ratio = (layer(x) - layer(y)).flatten(1).norm(dim=1) / (x - y).flatten(1).norm(dim=1)
        (-ratio.mean()).backward()
        optimizer.step()
    assert float(ratio.detach().max()) <= 1.0 + 1e-12
    if input_size is not None and padding_mode == "circular":
        with torch.no_grad():  # every unit active (D = I): J = I − τWᵀW, whose norm is τ‖W‖₂² − 1 at s = 2
            layer.bias.fill_(1e3)
    for mode in ("train", "eval"):
        getattr(layer, mode)()
        for point in x[:2]:
            if n <= 7:  # the dense float64 Jacobian, σ₁ by SVD
                dense = torch.autograd.functional.jacobian(layer, point[None]).reshape(point.numel(), -1)
                measured = float(torch.linalg.matrix_norm(dense, ord=2))
            else:
                measured = jacobian_norm(layer, point[None])
            assert measured <= 1.0 + 1e-12, (mode, measured)
    assert lipschitz_upper_bound(layer) == 1.0


def test_pgd_breaks_no_certified_point_of_a_trained_convnet() -> None:
    """ℓ₂ PGD (untargeted and targeted, 25 steps) against every point a trained circular-padding
    ``lipschitz_convnet`` certifies, each at (a group-wise lower end of) its certified radius: none is broken,
    while at 3× the largest radius the same attack breaks most of them (so it is a real attack)."""
    generator = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    direction = torch.randn(64, generator=generator, dtype=F64)

    def data(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.randn(n, 64, generator=generator, dtype=F64)
        return x, (x @ direction > 0).long() + 2 * (x[:, :32].sum(1) > 0).long()

    model = lipschitz_convnet(1, 4, image_size=8, channels=(2, 4), depths=(1, 1), head_width=8, head_depth=1,
                              padding_mode="circular", flat_input=True, dtype=F64)  # fmt: skip
    x, y = data(256)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-2)
    for _ in range(25):
        optimizer.zero_grad()
        logits = model(x)
        torch.nn.functional.cross_entropy(4 * (logits - 0.5 * torch.nn.functional.one_hot(y, 4)), y).backward()
        optimizer.step()
    model.eval().requires_grad_(False)
    lipschitz = float(lipschitz_upper_bound(model))
    assert lipschitz <= 1.0
    x_test, y_test = data(32)
    with torch.no_grad():
        radii = certified_radii(model(x_test), y_test, lipschitz)
    certified = torch.nonzero(radii > 0).squeeze(1)
    certified = certified[torch.argsort(radii[certified])]
    assert len(certified) >= 8, len(certified)
    for group in certified.split(8):
        attack = pgd_l2(model, x_test[group], y_test[group], float(radii[group].min()), steps=25, targets=1)
        assert bool((attack.margins >= 0).all()), attack.margins
    attack = pgd_l2(model, x_test[certified], y_test[certified], 3 * float(radii.max()), steps=25, targets=1)
    assert int((attack.margins < 0).sum()) >= len(certified) // 2


@pytest.mark.parametrize("padding_mode", ["zeros", "circular"])
@pytest.mark.parametrize("kernel_size", [1, 2, 3, (2, 3), (4, 1)])
def test_export_gives_the_same_outputs_in_float64(padding_mode: str, kernel_size: int | tuple[int, int]) -> None:
    """``structnets.export`` of a trained conv stack (lift, block, down-sampling, pooled head): plain torch layers
    whose float64 outputs equal the model's to 10⁻¹⁴ relative on odd and even sizes the layers accept."""
    torch.manual_seed(1)
    model = torch.nn.Sequential(
        NormConstrainedConv2d(2, 3, kernel_size, padding_mode=padding_mode, dtype=F64),
        GradientStepConv2d(3, 5, kernel_size, padding_mode=padding_mode, step=1.9, bound="verified", dtype=F64),
        InvertibleDownsample(3, 6, 2, kind="norm-constrained", dtype=F64),
    )
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(4.0)  # push every certified map onto its constraint
    for n in (4, 6):
        x = torch.randn(3, 2, n, n, dtype=F64)
        model.train()
        model(x).square().sum().backward()  # a verified training step leaves the vectors warm
        model.eval()
        plain = export(model)
        # plain torch, but for the documented three-line residual wrapper
        assert {type(m).__name__ for m in plain.modules() if type(m).__module__.startswith("structnets")} == {
            "ResidualExport"
        }
        with torch.no_grad():
            expected, got = model(x), plain(x)
        torch.testing.assert_close(got, expected, rtol=1e-14, atol=1e-14 * float(expected.abs().max()))


@pytest.mark.parametrize("layer", [L2NormPool2d(), FlatToImage(1, 2, 2)])
def test_a_non_tensor_input_is_a_type_error_naming_input(layer: torch.nn.Module) -> None:
    """Every layer raises TypeError for an input that is not a tensor; these two raised ValueError ("`input` must
    have shape (N, C, H, W), got list"), so a caller catching the library's TypeError missed them."""
    with pytest.raises(TypeError, match="`input` must be a torch.Tensor, got list"):
        layer([[1.0, 2.0, 3.0, 4.0]])
    with pytest.raises(ValueError, match="`input` must have shape"):
        layer(torch.zeros(2, 3, 5))
