"""The certified 1-Lipschitz networks on every device this machine has: the CPU, and CUDA where there is one.

On the CPU the batch's tensor path is forced (numba's kernels run only on the CPU: on CUDA the tensor path is
what runs), so that the same code is exercised here as on a GPU; and each check also runs on the pretend CUDA
device of ``tests/pretend_cuda.py`` (host arithmetic, a host tensor meeting a device one raises). Each check trains a few steps with the
certificate every step (``bound="verified-batched"`` dense ResNet, ``bound="verified"`` convolutional net) and
then measures what the certificate promises on that device: τ·σ₁² ≤ s for every gradient-step block against a
float64 SVD on the host, the network's certified constant ≤ 1, an exported plain-torch copy with the same
outputs, and a first certified forward and backward that agrees with the CPU's. The CUDA cases run on a GPU machine
(``benchmarks/device_check.sh``); here they are skipped.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from pretend_cuda import pretending
from structnets.analysis import lipschitz_upper_bound
from structnets.exporting import export
from structnets.models import lipschitz_convnet, lipschitz_resnet
from structnets.nn import GradientStepConv2d, GradientStepResidual, NormConstrainedLinear, _fused_certify
from structnets.training.fit import make_optimizer


def _train(model: nn.Module, x: torch.Tensor, y: torch.Tensor, steps: int) -> None:
    optimizer = make_optimizer("adam", model, 1e-2, 0.0)
    model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()


def _check_blocks(model: nn.Module) -> int:
    """τ·σ₁(W)² ≤ s of every dense gradient-step block and ‖A‖₂ ≤ 1 of every norm-constrained map, in float64 on the host."""
    checked = 0
    model.eval()
    with torch.no_grad():
        for layer in model.modules():
            if isinstance(layer, GradientStepResidual):
                weight = layer.weight.detach().double().cpu()
                tau = float(layer.tau())
                step = float(layer.step_size())
                assert tau * float(torch.linalg.matrix_norm(weight, ord=2)) ** 2 <= step
                checked += 1
            elif isinstance(layer, NormConstrainedLinear):
                assert float(torch.linalg.matrix_norm(layer.to_dense().double().cpu(), ord=2)) <= 1.0 + 1e-12
                checked += 1
    return checked


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_dense_resnet_trains_certified_on_the_device(
    every_device: str, dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    device = every_device
    monkeypatch.setattr(_fused_certify, "AVAILABLE", False)  # the tensor path, the one CUDA runs
    torch.manual_seed(0)
    model = lipschitz_resnet(20, 3, 16, 3, bound="verified-batched", dtype=dtype).to(device)
    reference = copy.deepcopy(model).cpu()
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(64, 20, generator=generator, dtype=dtype)
    y = torch.randint(3, (64,), generator=generator)
    # one certified training forward and backward: the CPU's outputs and gradients up to the devices' rounding
    # (compared before any optimizer step, which would amplify a last-bit difference of a tiny gradient)
    model.train()
    reference.train()
    loss = nn.functional.cross_entropy(model(x.to(device)), y.to(device))
    grads = torch.autograd.grad(loss, list(model.parameters()))
    reference_loss = nn.functional.cross_entropy(reference(x), y)
    reference_grads = torch.autograd.grad(reference_loss, list(reference.parameters()))
    tolerance = 1e-9 if dtype == torch.float64 else 1e-4
    assert torch.allclose(loss.cpu(), reference_loss, rtol=tolerance)
    for a, b in zip(grads, reference_grads, strict=True):
        assert torch.allclose(a.cpu(), b, rtol=tolerance, atol=tolerance * float(b.abs().max()))
    # six training steps on the device, certified at every one
    batch = model.certified_batch
    calls = batch.batched_calls
    _train(model, x.to(device), y.to(device), 6)
    assert batch.unbatched_calls == 0 and batch.batched_calls == calls + 6 * len(batch.members)
    assert all(p.device.type == device for p in model.parameters())
    assert _check_blocks(model) == len(batch.members)
    assert float(lipschitz_upper_bound(model)) <= 1.0 + 1e-12
    plain = export(model)
    with torch.no_grad():  # the same matrices, multiplied in another operand order: equal up to rounding
        rtol = 1e-12 if dtype == torch.float64 else 1e-5
        assert torch.allclose(plain(x.to(device)), model(x.to(device)), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("padding_mode", ["zeros", "circular"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_convnet_trains_certified_on_the_device(
    every_device: str, padding_mode: str, dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    device = every_device
    monkeypatch.setattr(_fused_certify, "AVAILABLE", False)
    torch.manual_seed(0)
    model = lipschitz_convnet(
        1, 4, image_size=8, channels=(2, 4), depths=(1, 1), head_width=8, head_depth=1,
        padding_mode=padding_mode, bound="verified", dtype=dtype,
    ).to(device)  # fmt: skip
    reference = copy.deepcopy(model).cpu()
    generator = torch.Generator().manual_seed(2)
    x = torch.rand(16, 1, 8, 8, generator=generator, dtype=dtype)
    y = torch.randint(4, (16,), generator=generator)
    # one certified training forward and backward: the CPU's, up to the devices' rounding (TF32 convolutions on a
    # GPU: cuDNN's default for float32)
    model.train()
    reference.train()
    loss = nn.functional.cross_entropy(model(x.to(device)), y.to(device))
    grads = torch.autograd.grad(loss, list(model.parameters()))
    reference_grads = torch.autograd.grad(nn.functional.cross_entropy(reference(x), y), list(reference.parameters()))
    tolerance = 1e-9 if dtype == torch.float64 else (1e-5 if device == "cpu" or pretending() else 1e-2)
    for a, b in zip(grads, reference_grads, strict=True):
        assert torch.allclose(a.cpu(), b, rtol=tolerance, atol=tolerance * float(b.abs().max()))
    _train(model, x.to(device), y.to(device), 4)
    blocks = [layer for layer in model.modules() if isinstance(layer, GradientStepConv2d)]
    assert blocks and all(p.device.type == device for p in model.parameters())
    model.eval()
    assert float(lipschitz_upper_bound(model)) <= 1.0 + 1e-12
    with torch.no_grad():
        for block in blocks:
            # τ·‖W‖_op² ≤ s for the convolution operator on the block's input size, σ₁ measured by power
            # iteration on the float64 operator (on the host): the certificate bounds it from above
            weight = block.weight.detach().double().cpu()
            size = block.input_size  # the size the block is certified for (after the down-sampling before it)
            v = torch.randn(1, weight.shape[1], *size, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
            pad = weight.shape[-1] // 2
            for _ in range(200):
                image = _conv(v, weight, pad, padding_mode)
                v = _conv_transpose(image, weight, pad, padding_mode)
                v = v / v.norm()
            sigma = float(_conv(v, weight, pad, padding_mode).norm())
            assert float(block.tau()) * sigma**2 <= float(block.step_size()) * (1 + 1e-9)
        plain = export(model)
        # float32 convolutions on CUDA may run in TF32 (cuDNN's default), in another operand order for the export
        rtol = 1e-10 if dtype == torch.float64 else (1e-5 if device == "cpu" else 2e-3)
        assert torch.allclose(plain(x.to(device)), model(x.to(device)), rtol=rtol, atol=rtol)


def _conv(v: torch.Tensor, weight: torch.Tensor, pad: int, mode: str) -> torch.Tensor:
    if mode == "circular":
        return nn.functional.conv2d(nn.functional.pad(v, (pad,) * 4, mode="circular"), weight)
    return nn.functional.conv2d(v, weight, padding=pad)


def _conv_transpose(u: torch.Tensor, weight: torch.Tensor, pad: int, mode: str) -> torch.Tensor:
    """The adjoint of :func:`_conv` (autograd's vector-Jacobian product of the linear map)."""
    v = torch.zeros(u.shape[0], weight.shape[1], *u.shape[-2:], dtype=u.dtype, requires_grad=True)
    with torch.enable_grad():
        (grad,) = torch.autograd.grad(_conv(v, weight, pad, mode), v, u)
    return grad
