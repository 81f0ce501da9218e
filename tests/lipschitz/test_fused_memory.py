"""Compiled reads of tensor memory by address (``_fused_memory``) and the batch paths that use them.

A kernel that reads a tensor at its address reads whatever bytes are there: these tests check that
only tensors whose memory is their row-major content are admitted, that the compiled comparison is
``torch.equal``'s, and that every kind of gradient autograd may hand the applied-matrices node (strided,
lazily negated, a zero tensor without storage, another dtype) gives the gradients of its plain copy.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from structnets.nn import CertifiedBatch, GradientStepResidual, NormConstrainedLinear, _fused_certify
from structnets.nn import _fused_memory as memory
from structnets.nn._certified_batch_fused import compute_flat

pytestmark = pytest.mark.skipif(not _fused_certify.AVAILABLE, reason="numba (extra `fast`) is not installed")


class _Marked(torch.Tensor):
    """A tensor subclass (its operations could mean anything: read through torch, never by address)."""


def _equal_at(current: torch.Tensor, stored: np.ndarray) -> bool:
    address, every = memory.addresses([current], current.dtype, [current.numel()])
    assert every
    return bool(memory.call("equal_at", int(address[0]), stored))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_equal_at_is_torch_equal(dtype: torch.dtype) -> None:
    """Fuzz against ``torch.equal``: sizes around the 64-entry blocks, one entry changed anywhere, NaN, ±0."""
    generator = torch.Generator().manual_seed(0)
    rng = np.random.default_rng(0)
    for size in [1, 2, 63, 64, 65, 127, 128, 129, 200, 2500, 39200]:
        stored = torch.randn(size, generator=generator, dtype=dtype)
        snapshot = stored.numpy().copy()
        assert _equal_at(stored, snapshot)
        positions = {0, size - 1, size // 2, int(rng.integers(size))} | ({63, 64} & set(range(size)))
        for position in positions:
            for value in (float("nan"), 1e30, float(np.nextafter(snapshot[position], np.inf))):
                current = stored.clone()
                current[position] = value
                assert _equal_at(current, snapshot) == torch.equal(current, torch.from_numpy(snapshot)) is False
        # NaN equals nothing, itself included; −0.0 equals 0.0
        with_nan = stored.clone()
        with_nan[size // 2] = float("nan")
        assert not _equal_at(with_nan, with_nan.numpy().copy())
        zeros = torch.zeros(size, dtype=dtype)
        assert _equal_at(-zeros, zeros.numpy().copy())


def test_gather_is_cat() -> None:
    generator = torch.Generator().manual_seed(1)
    tensors = [torch.randn(shape, generator=generator) for shape in [(3, 4), (5,), (1, 1), (50, 78)]]
    addresses, every = memory.addresses(tensors, torch.float32, [t.numel() for t in tensors])
    assert every
    out = np.empty(sum(t.numel() for t in tensors), dtype=np.float32)
    memory.call("gather", addresses, np.array([t.numel() for t in tensors], dtype=np.int64), out)
    assert torch.equal(torch.from_numpy(out), torch.cat([t.reshape(-1) for t in tensors]))


def test_only_tensors_whose_memory_is_their_content_are_read_in_place() -> None:
    x = torch.randn(4, 3)
    refused = [
        x.t(),  # strided: its memory is another order
        torch._neg_view(x),  # lazily negated: its memory holds −values
        torch._efficientzerotensor(4, 3),  # no storage
        x.double(),  # another dtype
        torch.empty(4, 3, device="meta"),  # not on the CPU
        x.clone().as_subclass(_Marked),  # a subclass: its own operations, maybe no storage
    ]
    for tensor in refused:
        assert not memory.readable(tensor, torch.float32)
        addresses, every = memory.addresses([x, tensor, None], torch.float32, [12, 12, 12])
        assert not every and addresses[1] == 0 and addresses[0] == x.data_ptr() and addresses[2] == 0
    assert memory.readable(x[1:], torch.float32)  # an offset view: data_ptr is its first entry
    assert memory.addresses([None, x], torch.float32, [5, 12])[1]
    # a tensor with another number of entries than the kernel will read is refused
    found, every = memory.addresses([x], torch.float32, [13])
    assert not every and found[0] == 0


def _flat(dtype: torch.dtype) -> tuple[object, list[torch.nn.Module]]:
    torch.manual_seed(3)
    members = [
        NormConstrainedLinear(20, 9, bound="verified", dtype=dtype),
        GradientStepResidual(9, 12, bound="verified", learnable_step=True, step=1.3, dtype=dtype),
        GradientStepResidual(9, 9, bound="verified", dtype=dtype),
    ]
    with torch.no_grad():
        members[0].raw_weight.mul_(6.0)  # B > 1: a gradient through s
    kinds = ["norm", "tau", "tau"]
    weights = [members[0].raw_weight, members[1].weight, members[2].weight]
    with torch.no_grad():
        result = compute_flat(members, kinds, weights, [m.power_vector for m in members], [False, True, False])
    return result, members


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_every_kind_of_incoming_gradient_gives_its_plain_copys_gradients(dtype: torch.dtype) -> None:
    """Strided, lazily negated, zero-tensor and other-dtype matrix gradients: the host backward reads each
    as the values it stands for (copied first where its memory is not its content)."""
    result, members = _flat(dtype)
    host = result.applied.host_gradients  # type: ignore[attr-defined]
    generator = torch.Generator().manual_seed(4)
    shapes = [
        tuple(m.raw_weight.shape) if isinstance(m, NormConstrainedLinear) else tuple(m.weight.shape) for m in members
    ]
    plain = [torch.randn(shape, generator=generator, dtype=dtype) for shape in shapes]
    value_grad = torch.randn(3, generator=generator, dtype=dtype)
    expected = [g.clone() for g in host(value_grad, plain)]
    strided = [g.t().contiguous().t() for g in plain]
    assert not strided[0].is_contiguous()
    negated = [torch._neg_view(-g) for g in plain]
    for variant in (strided, negated):
        for got, want in zip(host(value_grad, variant), expected, strict=True):
            assert torch.equal(got, want)
    # a zero tensor (no storage) is no gradient
    zeros = [torch._efficientzerotensor(shapes[0], dtype=dtype), plain[1], plain[2]]
    nothing = [torch.zeros(shapes[0], dtype=dtype), plain[1], plain[2]]
    for got, want in zip(host(value_grad, zeros), host(value_grad, nothing), strict=True):
        assert torch.equal(got, want)
    # a lazily negated value gradient; a zero tensor as the value gradient is no value gradient
    for got, want in zip(host(torch._neg_view(-value_grad), plain), expected, strict=True):
        assert torch.equal(got, want)
    zero_value = torch._efficientzerotensor(3, dtype=dtype)
    for got, want in zip(host(zero_value, plain), host(None, plain), strict=True):
        assert torch.equal(got, want)
    # a tensor subclass is read through torch (copied), with its plain copy's gradients
    marked = [g.clone().as_subclass(_Marked) for g in plain]
    for got, want in zip(host(value_grad, marked), expected, strict=True):
        assert torch.equal(got, want)


@pytest.mark.parametrize("layout", ["strided", "negated"])
def test_a_weight_not_read_in_place_is_certified_and_served_as_its_contiguous_copy(layout: str) -> None:
    """A weight whose memory is not its content (``.data`` set to a transposed copy, or to a lazily negated
    view of −W) is copied for the kernel and compared through torch: served, with the certificate of the same
    content stored contiguously."""
    torch.manual_seed(0)
    members = [NormConstrainedLinear(6, 5, bound="verified"), GradientStepResidual(5, 5, bound="verified")]
    strided = copy.deepcopy(members)
    content = strided[1].weight.detach()
    if layout == "strided":
        strided[1].weight.data = content.t().contiguous().t()
    else:
        strided[1].weight.data = torch._neg_view(-content)
    assert torch.equal(strided[1].weight, members[1].weight)
    assert not memory.readable(strided[1].weight, torch.float32)
    x = torch.randn(4, 6)
    grads = []
    for layers in (members, strided):
        batch = CertifiedBatch(layers)
        out = layers[1](layers[0](x))
        (out * torch.arange(5.0)).sum().backward()
        assert batch.batched_calls == 2 and batch.unbatched_calls == 0
        grads.append((out.detach(), layers[0].raw_weight.grad, layers[1].weight.grad, layers[1].power_vector))
    # the kernel's outputs bit for bit; the forward's own products differ in their last bits (BLAS on
    # a transposed operand)
    assert torch.equal(grads[0][3], grads[1][3])
    for a, b in zip(grads[0][:3], grads[1][:3], strict=True):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_kernels_sigmoid_is_torchs_on_a_0d_tensor(dtype: torch.dtype) -> None:
    """θ read in place and sigmoid(θ) formed by the kernel: the bits of ``torch.sigmoid`` on a 0-d θ (a layer's
    own ``step_size()``), over normal, large, tiny, signed-zero, infinite and NaN logits."""
    generator = torch.Generator().manual_seed(7)
    specials = [0.0, -0.0, 1e-30, -1e-30, 15.9, -15.9, 88.7, -88.7, 103.9, -103.9, 750.0, -750.0, float("inf")]
    values = torch.cat(
        [
            torch.randn(4000, generator=generator, dtype=dtype) * 4,
            torch.randn(4000, generator=generator, dtype=dtype) * 40,
            torch.tensor(specials + [-float("inf"), float("nan")], dtype=dtype),
        ]
    )
    logits = [torch.nn.Parameter(v.clone()) for v in values]
    addresses, every = memory.addresses(logits, dtype, [1] * len(logits))
    assert every
    count = len(logits)
    numpy_dtype = values.numpy().dtype
    read, sigmoids = np.empty(count, dtype=numpy_dtype), np.full(count + 3, -1.0, dtype=numpy_dtype)
    positions = np.arange(count, dtype=np.int64) + 3  # written where positions say
    memory.call("logit_sigmoids", addresses, positions, read, sigmoids)
    assert torch.equal(torch.from_numpy(read).nan_to_num(7.0), values.nan_to_num(7.0))
    expected = torch.stack([torch.sigmoid(logit.detach()) for logit in logits])
    got = torch.from_numpy(sigmoids[3:])
    assert (sigmoids[:3] == -1.0).all()
    assert torch.equal(got.nan_to_num(7.0), expected.nan_to_num(7.0))


@pytest.mark.parametrize("fused", [True, False])
def test_a_batch_of_many_learnable_steps_forms_each_layers_own_step(fused: bool) -> None:
    """200 learnable blocks (past the 16 entries where a stacked ``torch.sigmoid`` turns vectorised, whose exp
    differs in the last bit for a few % of θ): the step s the kernel certifies with is each layer's own
    ``step_size()``, bit for bit."""
    torch.manual_seed(1)
    count = 200
    layers = [GradientStepResidual(4, 3, bound="verified", learnable_step=True, step=1.5) for _ in range(count)]
    with torch.no_grad():
        for layer in layers:
            layer.step_logit.add_(torch.randn(()) * 3)
    weights = [layer.weight for layer in layers]
    with torch.no_grad():
        if fused:
            vectors = [layer.power_vector for layer in layers]
            groups = compute_flat(layers, ["tau"] * count, weights, vectors, [True] * count).plan.group_factory()  # type: ignore[misc]
            steps = [float(group.step64[0]) for group in groups]
        else:  # the tensor path's group of one shape
            steps = CertifiedBatch(layers)._group("tau", True, layers).step64.tolist()
    assert steps == [float(layer.step_size().detach()) for layer in layers]


def test_a_step_logit_of_another_dtype_is_read_through_torch() -> None:
    """θ stored in float64 beside float32 weights cannot be read as float32 in place: the batch forms its sigmoid
    through torch (each θ on its own) and the certificate still holds for the τ it serves."""
    torch.manual_seed(2)
    members = [NormConstrainedLinear(6, 5, bound="verified")] + [
        GradientStepResidual(5, 5, bound="verified", learnable_step=True, step=1.9) for _ in range(3)
    ]
    for block in members[1:]:
        block.step_logit.data = block.step_logit.data.double()
    batch = CertifiedBatch(members)
    taus = []
    for block in members[1:]:
        real = block._negated_step_weight

        def spy(block: GradientStepResidual = block, real: object = real) -> torch.Tensor:
            matrix = real()  # type: ignore[operator]
            taus.append(float(-(matrix.detach() / block.weight.detach()).reshape(-1)[0]))
            return matrix

        block._negated_step_weight = spy  # type: ignore[method-assign]
    h = torch.randn(4, 6)
    for member in members:
        h = member(h)
    h.sum().backward()
    assert batch.batched_calls == 4 and batch.unbatched_calls == 0
    for block, tau in zip(members[1:], taus, strict=True):
        sigma = float(torch.linalg.matrix_norm(block.weight.detach().double(), ord=2))
        assert tau * sigma**2 <= 2.0 and tau > 0
