"""The pretend CUDA device (``tests/pretend_cuda.py``) catches the device bugs it is there for, and computes what
the host computes.

Each check below is a bug class that a CPU-only suite misses and a GPU run would raise on: a host tensor made
without ``device=`` meeting a device tensor, ``.numpy()`` on a device tensor. The pretend device must raise on
each, let through what CUDA lets through (0-d host tensors, copies between devices, host index tensors), keep
values and gradients bit-identical to the host's, and leave ``torch.cuda`` as it was afterwards.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from pretend_cuda import DeviceMixError, PretendCudaTensor, pretend_cuda
from structnets.analysis import lipschitz_upper_bound
from structnets.analysis._certificate_rules import CertificateRefused
from structnets.models import lipschitz_resnet
from structnets.models.ensemble_mlp import EnsembleForward


def test_every_way_onto_the_device_gives_a_cuda_tensor_with_the_hosts_values(monkeypatch: pytest.MonkeyPatch) -> None:
    host = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    with pretend_cuda(monkeypatch):
        made = [
            host.to("cuda"), host.to(torch.device("cuda")), host.cuda(), host.to(device="cuda"),
            torch.tensor(host.tolist(), device="cuda"), torch.as_tensor(host, device="cuda"),
        ]  # fmt: skip
        for tensor in made:
            assert isinstance(tensor, PretendCudaTensor) and tensor.device == torch.device("cuda", 0) and tensor.is_cuda
            assert torch.equal(tensor.cpu(), host) and type(tensor.cpu()) is torch.Tensor
        assert host.to("cuda", torch.float64).dtype == torch.float64
        assert torch.zeros(2, device="cuda").device.type == "cuda"
        assert torch.arange(3, device=made[0].device).device.type == "cuda"
        assert made[0].new_zeros(2).device.type == "cuda" and torch.zeros_like(made[0]).device.type == "cuda"
        assert (made[0] @ made[1].T).cpu().equal(host @ host.T)
        assert made[0].tolist() == host.tolist() and float(made[0].sum()) == float(host.sum())
        # storages told apart by address, as on a GPU (training_memory_bytes counts by them); device addresses
        # are not host memory
        a, b = made[0], made[1]
        assert a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()
        assert a[1:].untyped_storage().data_ptr() == a.untyped_storage().data_ptr()
        assert a.data_ptr() != b.data_ptr() and a.data_ptr() >= 2**57


def test_host_tensors_beside_device_tensors_raise_as_on_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    with pretend_cuda(monkeypatch):
        x = torch.randn(4, device="cuda")
        with pytest.raises(DeviceMixError, match=r"aten\.add\.Tensor: expected all tensors to be on the same device"):
            x + torch.ones(4)
        with pytest.raises(DeviceMixError, match="aten.eq.Tensor"):
            _ = x == torch.arange(4)  # the EnsembleForward.rows bug, fixed: torch.arange(n) without device=
        with pytest.raises(DeviceMixError):
            nn.functional.linear(x, torch.ones(2, 4))
        with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
            x.numpy()
        # what CUDA takes: 0-d host tensors, copies between devices, host indices
        assert (x + torch.tensor(2.0)).device.type == "cuda"
        host = torch.zeros(4)
        host.copy_(x)
        assert torch.equal(host, x.cpu())
        x.copy_(torch.ones(4))
        assert torch.equal(x.cpu(), torch.ones(4))
        assert x[torch.tensor([0, 2])].device.type == "cuda"
        x[torch.tensor([1])] = torch.tensor(5.0)
        assert float(x[1]) == 5.0
        # and what it refuses: device indices into a host tensor, values from the other device
        with pytest.raises(DeviceMixError, match="indices on cuda for a host tensor"):
            torch.ones(4)[torch.tensor([0, 2], device="cuda")]
        with pytest.raises(DeviceMixError, match="values and the indexed tensor on different devices"):
            x[torch.tensor([0, 1])] = torch.ones(2)
        assert x.cpu().numpy().shape == (4,)


def test_gradients_and_a_dtype_change_after_the_move_match_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    host = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 2))
    x = torch.randn(9, 5)
    with pretend_cuda(monkeypatch):
        device = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 2))
        device.load_state_dict(host.state_dict())
        device = device.to("cuda")
        host(x).square().sum().backward()
        device(x.to("cuda")).square().sum().backward()
        for a, b in zip(host.parameters(), device.parameters(), strict=True):
            assert b.grad is not None and b.grad.device.type == "cuda" and torch.equal(a.grad, b.grad.cpu())
        # `param.data = new` (Module.to's dtype change) must carry the new values, not only the new dtype
        twin = copy.deepcopy(device)  # a deep copy holds its own values, on the device
        assert all(isinstance(p, nn.Parameter) and p.device.type == "cuda" for p in twin.parameters())
        assert torch.equal(twin(x.to("cuda")).cpu(), device(x.to("cuda")).cpu())
        doubled = device.to(torch.float64)
        assert torch.equal(doubled(x.double().to("cuda")).cpu(), host.double()(x.double()))


class _PassThrough(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        return func(*args, **(kwargs or {}))


def test_gradients_through_lazy_conjugates_match_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """``.conj()`` makes a lazily conjugated view; behind a wrapper without that bit autograd went wrong (found on the
    convolutions' exact bound, whose gradient came out 80 % off while its value was right)."""
    x = torch.randn(3, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))

    def top(x: torch.Tensor) -> torch.Tensor:
        m = torch.complex(x, 2 * x.flip(0))
        return torch.linalg.eigvalsh(m.conj().T @ m)[-1] + (m.conj() * m).real.sum()

    host = x.clone().requires_grad_()
    top(host).backward()
    with pretend_cuda(monkeypatch):
        device = x.clone().to("cuda").requires_grad_()
        value = top(device)
        value.backward()
        assert float(value.detach()) == pytest.approx(float(top(x)), rel=1e-14)
        assert device.grad is not None and torch.allclose(device.grad.cpu(), host.grad, rtol=1e-12, atol=1e-12)


def test_the_certificate_still_refuses_other_modes_and_torch_cuda_is_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    model = lipschitz_resnet(4, 2, 6, 1)
    available = torch.cuda.is_available()
    with monkeypatch.context() as patch, pretend_cuda(patch):
        assert torch.cuda.is_available()
        assert float(lipschitz_upper_bound(model.to("cuda"))) <= 1.0
        with _PassThrough(), pytest.raises(CertificateRefused, match=r"torch function mode is active \(_PassThrough\)"):
            lipschitz_upper_bound(model)
    assert torch.cuda.is_available() == available
    assert type(torch.zeros(1)) is torch.Tensor


def test_ensemble_forward_rows_keeps_its_index_on_the_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bug the pretend device found: ``index == torch.arange(n)`` compared a device index with host numbers."""
    with pretend_cuda(monkeypatch):
        x = torch.randn(3, 5, device="cuda")
        forward = EnsembleForward(x, None, [x], [], [], torch.randn(3, 2, device="cuda"))
        members = torch.arange(3, device="cuda")
        assert forward.rows(torch.arange(3, device="cuda"), members).members is members
        assert torch.equal(forward.rows(torch.tensor([2, 0], device="cuda"), members).x.cpu(), x.cpu()[[2, 0]])
