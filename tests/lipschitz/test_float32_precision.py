"""Lowered float32 matmul precision (TF32, bfloat16) never reaches a certificate's arithmetic.

The float32 Gram test of ``bound="verified-batched"`` is proved for IEEE float32 (u = 2⁻²⁴,
Higham 2002, Thm 10.3), and ``certify`` reads margins off the logits: both must not run under
``torch.set_float32_matmul_precision("medium")`` and its relatives as the user left them.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch

from structnets._float32_precision import float32_matmul_is_ieee, ieee_float32

from .helpers import PRECISION_NODES, precision_node, precision_settings


def _legacy() -> tuple[str | None, bool | None, bool | None]:
    """The legacy flags, None where torch refuses to read one (the two APIs were mixed)."""
    values: list[object] = []
    for read in (
        torch.get_float32_matmul_precision,
        lambda: bool(torch.backends.cuda.matmul.allow_tf32),
        lambda: bool(torch.backends.cudnn.allow_tf32),
    ):
        try:
            values.append(read())
        except RuntimeError:
            values.append(None)
    return values[0], values[1], values[2]  # type: ignore[return-value]


@pytest.fixture
def restore_precision() -> Iterator[None]:
    """Put every precision setting back as it was: legacy flags, then every node, parents first."""
    before, legacy = precision_settings(), _legacy()
    yield
    torch.set_float32_matmul_precision(legacy[0] or "highest")
    torch.backends.cudnn.allow_tf32 = bool(legacy[2])
    for path in PRECISION_NODES:
        precision_node(path).fp32_precision = before[path]
    assert precision_settings() == before and _legacy() == legacy


LOWERING = [
    pytest.param(lambda: torch.set_float32_matmul_precision("medium"), id="legacy-medium"),
    pytest.param(lambda: torch.set_float32_matmul_precision("high"), id="legacy-high"),
    pytest.param(lambda: setattr(torch.backends, "fp32_precision", "bf16"), id="global-bf16"),
    pytest.param(lambda: setattr(torch.backends, "fp32_precision", "tf32"), id="global-tf32"),
    pytest.param(lambda: setattr(torch.backends.mkldnn, "fp32_precision", "bf16"), id="mkldnn-bf16"),
    pytest.param(lambda: setattr(torch.backends.mkldnn.matmul, "fp32_precision", "bf16"), id="mkldnn-matmul-bf16"),
]


def test_default_settings_are_ieee() -> None:
    assert float32_matmul_is_ieee("cpu")
    assert float32_matmul_is_ieee(torch.device("cpu"))
    assert not float32_matmul_is_ieee("meta")  # unknown device kinds: not trusted


@pytest.mark.parametrize("lower", LOWERING)
def test_lowered_cpu_precision_is_seen(lower, restore_precision) -> None:
    lower()
    assert not float32_matmul_is_ieee("cpu")


def test_cuda_legacy_tf32_flag_is_seen(restore_precision) -> None:
    assert float32_matmul_is_ieee("cuda")
    torch.backends.cuda.matmul.allow_tf32 = True
    assert not float32_matmul_is_ieee("cuda")
    assert float32_matmul_is_ieee("cpu")  # a CUDA flag says nothing about oneDNN


def test_a_child_set_to_ieee_wins_over_a_lowered_parent(restore_precision) -> None:
    torch.backends.fp32_precision = "bf16"
    torch.backends.mkldnn.matmul.fp32_precision = "ieee"
    assert float32_matmul_is_ieee("cpu")


@pytest.mark.parametrize("lower", LOWERING)
def test_scope_pins_ieee_and_restores(lower, restore_precision) -> None:
    lower()
    before, legacy = precision_settings(), _legacy()
    with ieee_float32():
        assert float32_matmul_is_ieee("cpu") and float32_matmul_is_ieee("cuda")
        assert torch.backends.cudnn.conv.fp32_precision == "ieee"
        # legacy and new settings agree inside (cuBLAS and cuDNN calls raise where they do not)
        assert _legacy() == ("highest", False, False)
    assert precision_settings() == before and _legacy() == legacy
    with pytest.raises(KeyError), ieee_float32():
        raise KeyError("inside")
    assert precision_settings() == before and _legacy() == legacy


def test_scope_gives_ieee_products(restore_precision) -> None:
    """Inside the scope a float32 product is bit for bit the default-precision one."""
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(7, 100, 784, generator=generator)
    reference = torch.bmm(a, a.mT)
    torch.set_float32_matmul_precision("medium")
    lowered = torch.bmm(a, a.mT)
    if torch.equal(lowered, reference):
        pytest.skip("this CPU computes float32 products the same under 'medium' (no bfloat16 products)")
    with ieee_float32():
        assert torch.equal(torch.bmm(a, a.mT), reference)


def test_precision_rule_takes_float64_where_products_are_not_ieee() -> None:
    from structnets.nn._verified_gram import _precision_for

    assert _precision_for(torch.float32, 50, 50) == torch.float32
    assert _precision_for(torch.float32, 50, 50, ieee=False) == torch.float64
    assert _precision_for(torch.float64, 50, 50, ieee=True) == torch.float64


def test_batched_test_runs_in_float64_under_lowered_precision(restore_precision) -> None:
    """Under bfloat16/TF32 products even an explicit float32 test is taken in float64: the same Q, bit for bit."""
    from structnets.nn._verified_gram import batched_verified_square

    generator = torch.Generator().manual_seed(3)
    weights = torch.randn(4, 30, 50, generator=generator)
    vectors = torch.nn.functional.normalize(torch.randn(4, 50, generator=generator), dim=1)
    margins = torch.full((4,), 1.02, dtype=torch.float64)
    in_float64 = batched_verified_square(weights, vectors, margins, precision=torch.float64)
    in_float32 = batched_verified_square(weights, vectors, margins, precision=torch.float32)
    assert not torch.equal(in_float32[0], in_float64[0])  # the two precisions do differ here
    torch.set_float32_matmul_precision("medium")
    for precision in (None, torch.float32):
        lowered = batched_verified_square(weights, vectors, margins, precision=precision)
        assert torch.equal(lowered[0], in_float64[0]) and torch.equal(lowered[1], in_float64[1])


@pytest.mark.parametrize("fused", [False, True], ids=["tensor-path", "fused-path"])
def test_certified_batch_tests_in_float64_under_lowered_precision(monkeypatch, restore_precision, fused) -> None:
    import structnets.nn._certified_batch as batch_module
    from structnets.models import lipschitz_resnet
    from structnets.nn import _fused_certify

    if fused and not _fused_certify.AVAILABLE:
        pytest.skip("numba (extra `fast`) is not installed")
    monkeypatch.setattr(_fused_certify, "AVAILABLE", fused)
    seen: list[torch.dtype] = []
    if fused:
        original_flat = _fused_certify.run_flat

        def recording_flat(weights, tested, vectors, rows, cols, active, *args):
            # the test precision of each map this call certifies
            seen.extend([torch.float32 if tested.dtype == np.float32 else torch.float64] * int(active.sum()))
            return original_flat(weights, tested, vectors, rows, cols, active, *args)

        monkeypatch.setattr(_fused_certify, "run_flat", recording_flat)
    else:
        original = batch_module._certify_grams

        def recording(gram, *args):
            seen.append(gram.dtype)
            return original(gram, *args)

        monkeypatch.setattr(batch_module, "_certify_grams", recording)
    torch.manual_seed(0)
    model = lipschitz_resnet(12, 3, 8, 2, bound="verified-batched").train()
    x = torch.randn(5, 12)
    model(x).sum().backward()
    assert seen and set(seen) == {torch.float32}
    seen.clear()
    torch.set_float32_matmul_precision("medium")
    model(x).sum().backward()
    # the tensor path's Gram product is torch's (TF32/bfloat16 under "medium": test in float64);
    # the kernel's is SciPy's BLAS, IEEE float32 whatever torch's setting
    assert seen and set(seen) == ({torch.float32} if fused else {torch.float64})
