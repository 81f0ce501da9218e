"""Review (session 10) of the certified convolutional layers, as a reviewer who wants to break "certified".

Every certificate is compared with an independent float64 measurement: σ₁ of the explicit matrix of the
operator, built here by index arithmetic from the definition of the "same" convolution (no torch
convolution, no FFT), or the float64 Jacobian / secant of the forward.
"""

from __future__ import annotations

import pytest
import torch

from structnets.models import lipschitz_convnet
from structnets.nn import GradientStepConv2d, InvertibleDownsample, NormConstrainedConv2d

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
