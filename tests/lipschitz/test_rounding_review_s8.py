"""Review (s8) of the division rounding scale and of the IEEE float32 scope.

* ``division_scale``: where B ≤ 1 the certificate is min(1, B) = B, proved only by A = V/1 = V (exact);
  any s > 1 leaves ‖fl(V/s)‖ ≤ B(1 + u√(Tr))/s, which exceeds B when s < 1 + u√(Tr), so s must be 1.
  Where B > 1 the argument needs s ≥ B(1 + u√(Tr))/(1 − η√(T·numel)); in float32 torch rounds the
  Python factor f to float32 before the product, a second rounding the factor must cover.
* ``ieee_float32``: torch refuses to read a legacy flag (and cuBLAS refuses to run) where the legacy
  and new precision APIs disagree; the scope must leave them agreeing, and restore the exact state,
  also when two threads' scopes overlap.
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Iterator
from fractions import Fraction

import pytest
import torch

from structnets._float32_precision import float32_matmul_is_ieee, ieee_float32
from structnets.functional import division_scale

from .helpers import PRECISION_NODES, precision_node, precision_settings

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def _up_sqrt(x: float) -> Fraction:
    """≥ √x (the correctly rounded float square root, one step up)."""
    return Fraction(math.nextafter(math.sqrt(x), math.inf))


def _required(dtype: torch.dtype, rank: int, taps: int, numel: int, bound: float) -> Fraction:
    """The smallest s the docstring's argument allows: B(1 + u√(Tr))/(1 − η√(T·numel)), exactly."""
    info = torch.finfo(dtype)
    unit = Fraction(info.eps) / 2 + (Fraction(1, 2**23) if info.bits < 32 else 0)
    eta = Fraction(info.smallest_normal) * Fraction(info.eps) / 2
    return Fraction(bound) * (1 + unit * _up_sqrt(taps * rank)) / (1 - eta * _up_sqrt(taps * numel))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("shape", "taps"), [((64, 64), 1), ((256, 300), 1), ((16, 16, 3, 3), 9), ((40, 8, 5, 5), 25)])
def test_scale_is_one_at_or_below_the_unit_ball(dtype: torch.dtype, shape: tuple[int, ...], taps: int) -> None:
    """The 3000 largest B ≤ 1 of the dtype (the band (1/f, 1] included) give s = 1, so A = V and ‖A‖ ≤ B."""
    weight = torch.zeros(shape, dtype=dtype)
    bound = torch.tensor(1.0, dtype=dtype)
    zero = torch.tensor(0.0, dtype=dtype)
    for _ in range(3000):  # the band (1/f, 1] of every dtype here (float32: f − 1 < 10⁻⁵)
        assert division_scale(bound, weight, taps).item() == 1.0, float(bound)
        bound = torch.nextafter(bound, zero)
    for edge in (0.0, 2.0**-130, 1e-30):
        assert division_scale(torch.tensor(edge, dtype=dtype), weight, taps).item() == 1.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_scale_above_one_meets_the_argument(dtype: torch.dtype) -> None:
    """s ≥ B(1 + u√(Tr))/(1 − η√(T·numel)) exactly, for seeded B > 1 across the dtype's range."""
    rng = random.Random(8)
    top = math.log(60000.0 if dtype == torch.float16 else 1e30)
    for _ in range(1500):
        rank, taps = rng.choice([1, 2, 3, 7, 64, 100, 300]), rng.choice([1, 9, 25])
        weight = torch.empty(rank, rank * rng.choice([1, 3]), dtype=dtype)
        bound = torch.tensor(math.exp(rng.uniform(1e-6, top)), dtype=dtype)
        if float(bound) <= 1.0:
            continue
        scale = division_scale(bound, weight, taps)
        assert float(scale) > 1.0
        if math.isfinite(float(scale)):
            assert Fraction(float(scale)) >= _required(dtype, rank, taps, weight.numel(), float(bound)), float(bound)


def test_scale_keeps_nan_and_infinity() -> None:
    weight = torch.zeros(4, 4)
    assert torch.isnan(division_scale(torch.tensor(math.nan), weight))
    assert division_scale(torch.tensor(math.inf), weight).item() == math.inf


# --- ieee_float32 -------------------------------------------------------------------------------------


def _set_leaves(paths: tuple[str, ...], value: str) -> dict[str, str]:
    before = {path: str(precision_node(path).fp32_precision) for path in paths}
    for path in paths:
        precision_node(path).fp32_precision = value
    return before


def _stored_legacy() -> tuple[str, bool]:
    """torch's stored legacy matmul precision and cuDNN flag, read with leaves that agree with any value.

    torch checks the legacy matmul precision only against TF32/bfloat16 matmul leaves (so with both at
    "ieee" it always answers), and the cuDNN flag against conv and rnn (both "tf32": it answers iff True).
    """
    before = _set_leaves(("mkldnn.matmul", "cuda.matmul"), "ieee")
    matmul = torch.get_float32_matmul_precision()
    for path, value in before.items():
        precision_node(path).fp32_precision = value
    before = _set_leaves(("cudnn.conv", "cudnn.rnn"), "tf32")
    try:
        cudnn = bool(torch.backends.cudnn.allow_tf32)
    except RuntimeError:
        cudnn = False
    for path, value in before.items():
        precision_node(path).fp32_precision = value
    return matmul, cudnn


def _state() -> tuple[dict[str, str], tuple[str, bool]]:
    return precision_settings(), _stored_legacy()


@pytest.fixture
def exact_precision() -> Iterator[None]:
    """Put the whole precision state back (stored legacy values, then every node, parents first)."""
    tree, (matmul, cudnn) = _state()
    yield
    torch.set_float32_matmul_precision(matmul)
    torch.backends.cudnn.allow_tf32 = cudnn
    for path in PRECISION_NODES:
        precision_node(path).fp32_precision = tree[path]
    assert _state() == (tree, (matmul, cudnn))


def _legacy_reads() -> dict[str, object]:
    return {
        "matmul": torch.get_float32_matmul_precision(),
        "cuda": bool(torch.backends.cuda.matmul.allow_tf32),
        "cudnn": bool(torch.backends.cudnn.allow_tf32),
    }


MIXED = [
    pytest.param(["legacy:high", "mkldnn.matmul:bf16"], id="high+mkldnn-bf16"),
    pytest.param(["legacy:medium", "mkldnn.matmul:tf32"], id="medium+mkldnn-tf32"),
    pytest.param(["cuda_allow:1", ":bf16"], id="allow-tf32+global-bf16"),
    pytest.param(["legacy:medium", "cuda_allow:1"], id="medium+allow-tf32"),
    pytest.param(["cudnn.conv:ieee"], id="cudnn-conv-ieee"),
    pytest.param(["cudnn_allow:0", "cudnn.rnn:tf32"], id="cudnn-off+rnn-tf32"),
    pytest.param(["legacy:high"], id="high"),
    pytest.param([":tf32", "mkldnn:bf16"], id="new-only"),
]


def _apply(steps: list[str]) -> None:
    for step in steps:
        key, value = step.split(":")
        if key == "legacy":
            torch.set_float32_matmul_precision(value)
        elif key == "cuda_allow":
            torch.backends.cuda.matmul.allow_tf32 = value == "1"
        elif key == "cudnn_allow":
            torch.backends.cudnn.allow_tf32 = value == "1"
        else:
            precision_node(key).fp32_precision = value


@pytest.mark.parametrize("steps", MIXED)
def test_scope_leaves_legacy_and_new_settings_agreeing(steps: list[str], exact_precision: None) -> None:
    """Inside the scope every legacy flag reads IEEE (cuBLAS raises where torch cannot read them)."""
    _apply(steps)
    before = _state()
    with ieee_float32():
        assert _legacy_reads() == {"matmul": "highest", "cuda": False, "cudnn": False}
        assert float32_matmul_is_ieee("cpu") and float32_matmul_is_ieee("cuda")
        with ieee_float32():
            assert _legacy_reads() == {"matmul": "highest", "cuda": False, "cudnn": False}
        assert _legacy_reads() == {"matmul": "highest", "cuda": False, "cudnn": False}
    assert _state() == before


def test_scope_restores_after_an_exception(exact_precision: None) -> None:
    _apply(["legacy:high", "mkldnn.matmul:bf16"])
    before = _state()
    with pytest.raises(KeyError), ieee_float32():
        raise KeyError("inside")
    assert _state() == before


def test_overlapping_scopes_of_two_threads(exact_precision: None) -> None:
    """A enters, B enters, A leaves: B's scope stays IEEE; when B leaves, the user's state is back."""
    torch.set_float32_matmul_precision("medium")
    before = _state()
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def first() -> None:
        with ieee_float32():
            a_in.set()
            b_in.wait(5)
        a_out.set()

    def second() -> None:
        a_in.wait(5)
        with ieee_float32():
            b_in.set()
            a_out.wait(5)
            seen["ieee"] = float32_matmul_is_ieee("cpu")
            seen["matmul"] = torch.get_float32_matmul_precision()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert seen == {"ieee": True, "matmul": "highest"}
    assert _state() == before


def test_cpu_products_are_ieee_whenever_reported() -> None:
    """float32_matmul_is_ieee never says IEEE where bmm differs bitwise from the IEEE result."""
    gen = torch.Generator().manual_seed(3)
    a, b = torch.randn(2, 32, 200, generator=gen), torch.randn(2, 200, 32, generator=gen)
    with ieee_float32():
        ieee = torch.bmm(a, b)
    lowerings = [
        ["legacy:medium"],
        [":bf16"],
        ["mkldnn:bf16"],
        ["mkldnn.matmul:bf16"],
        ["legacy:medium", "mkldnn.matmul:none"],
    ]
    for steps in lowerings:
        tree, (matmul, cudnn) = _state()
        try:
            _apply(steps)
            if float32_matmul_is_ieee("cpu"):
                assert torch.equal(torch.bmm(a, b), ieee), steps
        finally:
            torch.set_float32_matmul_precision(matmul)
            torch.backends.cudnn.allow_tf32 = cudnn
            for path in PRECISION_NODES:
                precision_node(path).fp32_precision = tree[path]
