"""The applied matrices of a compiled CertifiedBatch computation (``_applied_matrices``, ``_fused_applied``).

On the compiled path a batch hands its members the matrices they apply, −τ·W and fl(V/s), formed from
the content the values certify, and writes their gradients in one call. They must be the layers' own
products bit for bit, their gradients those of the tensor path (autograd through W·(−τ) and V/s with
the values' power-mode gradient), first and second order, and a matrix must reach only the weight
tensor it was formed for.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch import nn

from structnets._division_scale import division_factor
from structnets.functional import division_scale
from structnets.nn import (
    CertifiedBatch,
    GradientStepResidual,
    NormConstrainedLinear,
    _applied_matrices,
    _fused_applied,
    _fused_certify,
)

pytestmark = pytest.mark.skipif(not _fused_certify.AVAILABLE, reason="numba (extra `fast`) is not installed")

F64 = torch.float64


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_applied_matrices_are_the_layers_products_bit_for_bit(dtype: torch.dtype) -> None:
    """−τ·W as ``weight * -tau`` and fl(V/s) as ``weight / division_scale(B, weight)``: the same bits,
    for bounds below, at and above 1 and NaN."""
    generator = torch.Generator().manual_seed(11)
    shapes = [(50, 78), (7, 7), (3, 11), (9, 9), (1, 5), (6, 2), (4, 4)]
    is_tau = [False, True, False, True, False, False, True]
    values = torch.tensor([3.7, 0.031, 1.0, 1.9, 0.25, float("nan"), 0.0], dtype=dtype)
    weights = [torch.randn(r, c, generator=generator, dtype=dtype) * 3 for r, c in shapes]
    numpy_dtype = values.numpy().dtype
    factors = np.array(
        [0.0 if tau else division_factor(dtype, min(r, c), 1, r * c) for tau, (r, c) in zip(is_tau, shapes)],
        dtype=numpy_dtype,
    )
    out = np.empty(sum(r * c for r, c in shapes), dtype=numpy_dtype)
    scales = np.empty(len(shapes), dtype=numpy_dtype)
    _fused_applied.call(
        "applied_matrices", torch.cat([w.reshape(-1) for w in weights]).numpy(), values.numpy(),
        np.array(is_tau), factors, np.array([r for r, _ in shapes]), np.array([c for _, c in shapes]), out, scales,
    )  # fmt: skip
    at = 0
    for b, ((r, c), weight) in enumerate(zip(shapes, weights, strict=True)):
        got = torch.from_numpy(out[at : at + r * c]).view(r, c)
        expected = weight * -values[b] if is_tau[b] else weight / division_scale(values[b], weight)
        assert torch.equal(got, expected) or (got.isnan().all() and expected.isnan().all()), b
        at += r * c


def _members(dtype: torch.dtype) -> list[nn.Module]:
    """A mixed batch: learnable and fixed steps, a norm map with B > 1 (wide) and one with B < 1 (tall)."""
    torch.manual_seed(5)
    members: list[nn.Module] = [
        NormConstrainedLinear(20, 9, bound="verified", dtype=dtype),
        GradientStepResidual(9, 12, bound="verified", learnable_step=True, step=1.3, dtype=dtype),
        GradientStepResidual(9, 9, bound="verified", step=1.7, dtype=dtype),
        NormConstrainedLinear(9, 14, bound="verified", dtype=dtype),
    ]
    with torch.no_grad():
        members[0].raw_weight.mul_(6.0)  # B > 1: s = fl(B·f) and a gradient through s
        members[3].raw_weight.mul_(0.1)  # B < 1: s = 1
    return members


def _loss(members: list[nn.Module], x: torch.Tensor) -> torch.Tensor:
    h = x
    for member in members:
        h = member(h)
    return (h * torch.linspace(-1.0, 2.0, h.shape[-1], dtype=h.dtype)).sum() + (h**2).sum()


def _gradients(
    members: list[nn.Module], x: torch.Tensor, monkeypatch: pytest.MonkeyPatch, fused: bool, second: bool = False
) -> tuple[torch.Tensor, ...]:
    monkeypatch.setattr(_fused_certify, "AVAILABLE", fused)
    members = copy.deepcopy(members)
    batch = CertifiedBatch(members)
    for member in members:
        member.train()
    params = [p for member in members for p in member.parameters()]
    loss = _loss(members, x)
    assert batch.batched_calls == len(members) and batch.unbatched_calls == 0
    if not second:
        return torch.autograd.grad(loss, params)
    first = torch.autograd.grad(loss, params, create_graph=True)
    return torch.autograd.grad(sum((g**2).sum() for g in first), params)


@pytest.mark.parametrize("dtype", [F64, torch.float32])
def test_the_gradients_are_the_tensor_paths(dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch) -> None:
    """One compiled backward for every member's matrix and value = autograd through W·(−τ) and V/s with the
    values' power-mode gradient (the tensor path's guesses differ in their last bits: a relative 1e-9 in float64)."""
    members = _members(dtype)
    x = torch.randn(16, 20, dtype=dtype, generator=torch.Generator().manual_seed(2))
    fused = _gradients(members, x, monkeypatch, True)
    tensor = _gradients(members, x, monkeypatch, False)
    rtol = 1e-9 if dtype == F64 else 2e-4
    for a, b in zip(fused, tensor, strict=True):
        scale = float(b.abs().max())
        assert scale > 0 and torch.allclose(a, b, rtol=rtol, atol=rtol * scale)


def test_the_graph_path_gives_the_host_paths_gradients(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where a gradient cannot go to the compiled call (another device or dtype), autograd through the rebuilt
    expressions writes the same gradients."""
    members = _members(F64)
    x = torch.randn(16, 20, dtype=F64, generator=torch.Generator().manual_seed(3))
    host = _gradients(members, x, monkeypatch, True)
    monkeypatch.setattr(_applied_matrices, "_on_host", lambda dtype, gradients: False)
    graph = _gradients(members, x, monkeypatch, True)
    for a, b in zip(host, graph, strict=True):
        assert torch.allclose(a, b, rtol=1e-12, atol=1e-15 * float(b.abs().max()))


def test_second_derivatives_through_the_matrices_are_the_tensor_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """``create_graph=True`` (gradient penalties): the matrices' second derivatives, τ's and B's those of the surrogate."""
    members = _members(F64)
    x = torch.randn(8, 20, dtype=F64, generator=torch.Generator().manual_seed(4))
    fused = _gradients(members, x, monkeypatch, True, second=True)
    tensor = _gradients(members, x, monkeypatch, False, second=True)
    for a, b in zip(fused, tensor, strict=True):
        assert torch.allclose(a, b, rtol=1e-8, atol=1e-10 * float(b.abs().max()))


def test_a_weight_replaced_by_an_equal_tensor_is_not_served_the_old_ones_matrix() -> None:
    """A matrix's gradient reaches the tensor it was formed from: a block whose weight was replaced (same
    content) after the batch computed is served τ, so its new weight gets the gradient of its product."""
    torch.manual_seed(6)
    members = [
        NormConstrainedLinear(10, 6, bound="verified"),
        GradientStepResidual(6, 8, bound="verified"),
        GradientStepResidual(6, 8, bound="verified"),
    ]
    batch = CertifiedBatch(members)
    served: list[bool] = []
    original = CertifiedBatch.take

    def take(self, bound, weight, kind, matrix=False):  # type: ignore[no-untyped-def]
        result = original(self, bound, weight, kind, matrix)
        served.append(result is not None and result[2])
        return result

    def replace(module: nn.Module, args: tuple[torch.Tensor, ...]) -> None:
        module.weight = nn.Parameter(module.weight.detach().clone())

    handle = members[2].register_forward_pre_hook(replace)
    for member in members:
        member.train()
    CertifiedBatch.take = take  # type: ignore[method-assign]
    try:
        out = members[2](members[1](members[0](torch.randn(4, 10))))
    finally:
        CertifiedBatch.take = original  # type: ignore[method-assign]
        handle.remove()
    out.square().sum().backward()
    assert served == [True, True, False] and batch.batched_calls == 3
    assert members[2].weight.grad is not None and bool(members[2].weight.grad.abs().sum() > 0)


def test_a_subclass_that_redefines_tau_is_served_tau(monkeypatch: pytest.MonkeyPatch) -> None:
    """The forward applies ``self.tau()`` where a subclass redefines it, not the batch's matrix."""

    class HalfStep(GradientStepResidual):
        def tau(self) -> torch.Tensor:
            return 0.5 * super().tau()

    torch.manual_seed(7)
    plain = GradientStepResidual(6, 8, bound="verified", dtype=F64)
    half = HalfStep(6, 8, bound="verified", dtype=F64)
    half.load_state_dict(plain.state_dict())
    x = torch.randn(5, 6, dtype=F64)
    outputs = []
    for block in (plain, half):
        batch = CertifiedBatch([block])
        block.train()
        outputs.append(block(x))
        assert batch.batched_calls == 1
    assert torch.allclose(outputs[1] - x, 0.5 * (outputs[0] - x), rtol=1e-12, atol=1e-15)
    assert not torch.allclose(outputs[1], outputs[0])


@pytest.mark.parametrize("fused", [True, False])
def test_a_computation_is_freed_after_its_step(fused: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """No step's buffers outlive it, and none waits for the cyclic collector (disabled here): a node that kept its
    own outputs formed a cycle through autograd's C++ graph (the matrices' never freed, ≈ 1.6 MB leaked per step
    at 10 × 100; the value's freed only by ``gc.collect``). Both paths: the compiled one and the tensor one."""
    import gc
    import weakref

    from structnets.models import lipschitz_resnet

    monkeypatch.setattr(_fused_certify, "AVAILABLE", fused)
    plans: list[weakref.ref] = []
    original = CertifiedBatch._hand_out

    def recording(self, layers, plan, *args):  # type: ignore[no-untyped-def]
        plans.append(weakref.ref(plan))
        return original(self, layers, plan, *args)

    monkeypatch.setattr(CertifiedBatch, "_hand_out", recording)
    torch.manual_seed(8)
    model = lipschitz_resnet(12, 3, width=8, depth=2, bound="verified-batched")
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(16, 12), torch.randint(3, (16,))
    model.train()
    gc.collect()
    gc.disable()
    try:
        for _ in range(6):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        alive = sum(plan() is not None for plan in plans)
    finally:
        gc.enable()
    assert len(plans) == 6 and alive == 0
