"""Measured training memory equals the hand count; interleaved timing recovers known ratios."""

import time

import pytest
import torch

from structnets.analysis.memory import saved_activation_bytes, training_memory_bytes
from structnets.analysis.timing import interleaved_ratio, other_process_load, settle_before_pair
from structnets.models import mlp


@pytest.mark.parametrize("dtype, size", [(torch.float32, 4), (torch.float64, 8)])
def test_saved_activations_match_hand_count(dtype, size):
    # depth-2 MLP: Linear saves its input (B×d); each SiLU saves its input (B×w) and the next
    # Linear saves the SiLU output (B×w): B·(d + 4w) elements. A rank-H block adds its B×H middle.
    batch, d, width, rank = 64, 7, 12, 4
    inputs = torch.randn(batch, d, dtype=dtype)
    dense = mlp(d, 3, width, 2, dtype=dtype)
    low = mlp(d, 3, width, 2, bottleneck=rank, dtype=dtype)
    assert saved_activation_bytes(dense, inputs) == batch * (d + 4 * width) * size
    assert saved_activation_bytes(low, inputs) == batch * (d + 4 * width + rank) * size


def test_training_memory_counts_parameters_gradients_and_adam_state():
    model = mlp(5, 2, 8, 1)
    inputs = torch.randn(10, 5)
    parameter_bytes = sum(p.numel() for p in model.parameters()) * 4
    expected = 4 * parameter_bytes + saved_activation_bytes(model, inputs)
    assert training_memory_bytes(model, inputs) == expected
    assert training_memory_bytes(model, inputs, optimizer_slots=0) == expected - 2 * parameter_bytes


class _Clock:
    """A virtual ``time`` module: the timed callables advance it by exact amounts (no sleeping,
    so a loaded machine cannot move the measured ratios)."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch) -> _Clock:
    import structnets.analysis.timing as timing

    fake = _Clock()
    monkeypatch.setattr(timing, "time", fake)
    return fake


def test_interleaved_ratio_recovers_a_known_ratio(clock):
    order = []

    def a():
        order.append("a")
        clock.advance(0.004)

    def b():
        order.append("b")
        clock.advance(0.002)

    result = interleaved_ratio(a, b, pairs=8, warmup=1)
    assert result.median == pytest.approx(2.0, rel=1e-9) and result.best == pytest.approx(2.0, rel=1e-9)
    assert result.q1 <= result.median <= result.q3
    assert result.seconds_a == pytest.approx(0.004, rel=1e-9) and result.seconds_b == pytest.approx(0.002, rel=1e-9)
    assert result.pairs == 8
    # warm-up a, b; then pairs alternate (a, b), (b, a), ...
    assert order == ["a", "b"] + ["a", "b", "b", "a"] * 4


@pytest.mark.parametrize("argument, value", [("pairs", 0), ("warmup", -1), ("repeat", 0)])
def test_interleaved_ratio_rejects_bad_counts(argument, value):
    with pytest.raises(ValueError, match=argument):
        interleaved_ratio(lambda: None, lambda: None, **{argument: value})


def test_interleaved_ratio_calibrates_repeat_and_calls_before_pair(clock):
    calls = []
    result = interleaved_ratio(
        lambda: clock.advance(0.001), lambda: clock.advance(0.0015), pairs=4, warmup=0, repeat=None,
        target_seconds=0.005, before_pair=lambda: calls.append(1),
    )  # fmt: skip
    assert calls == [1, 1, 1, 1]
    assert result.repeat == 5  # 5 ms samples of the faster, 1 ms call
    assert result.best == pytest.approx(1 / 1.5, rel=1e-9) and result.median == pytest.approx(1 / 1.5, rel=1e-9)


def test_other_process_load_subtracts_our_own_cpu_time(monkeypatch):
    # /proc/stat: 1000 jiffies pass, 400 idle -> 600 busy; this process used 2 s = 2·CLK_TCK of
    # them, so others used (600 − 2·CLK_TCK) / 1000.
    import os

    import structnets.analysis.timing as timing

    ticks = iter([(10_000, 5_000), (11_000, 5_400)])
    times = iter([(1.0, 0.5, 0, 0, 0), (2.5, 1.0, 0, 0, 0)])
    monkeypatch.setattr(timing, "_cpu_ticks", lambda: next(ticks))
    monkeypatch.setattr(timing.os, "times", lambda: next(times))
    hz = os.sysconf("SC_CLK_TCK")
    assert other_process_load()() == pytest.approx(max(0.0, (600 - 2 * hz) / 1000))


def test_settle_before_pair_is_disabled_by_zero_wait_and_bounded_otherwise():
    assert settle_before_pair(0.0) is None
    hook = settle_before_pair(0.5, threshold=1.1)  # every window is quiet below 110 %
    if hook is None:
        pytest.skip("no /proc/stat on this platform")
    start = time.perf_counter()
    hook()
    assert time.perf_counter() - start < 0.5
