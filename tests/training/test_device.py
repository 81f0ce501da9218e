"""The shared ``device`` helpers: the config check, the unit param and the unit's torch device."""

from __future__ import annotations

import pytest
import torch

import structnets.training as training
from structnets.training.device import check_device, device_param, unit_device


@pytest.mark.parametrize("device", ["cpu", "cuda", "auto", "cuda:0", "cuda:12", "cuda:127"])
def test_check_device_accepts_the_names_and_returns_them(device: str) -> None:
    assert check_device(device) == device


@pytest.mark.parametrize(
    "device",
    # torch refuses "cuda:01" and wraps an index >= 128 (int8: "cuda:128" is cuda:-128, "cuda:255" plain "cuda");
    # str.isdigit took "²" and "٣"
    [
        "gpu",
        "CUDA",
        "cuda:",
        "cuda:-1",
        "cuda:x",
        "cuda:1.0",
        "",
        " cpu",
        None,
        0,
        b"cpu",
        "cuda:01",
        "cuda:128",
        "cuda:255",
        "cuda:99999999999999999999",
        "cuda:²",
        "cuda:٣",
        "cuda:1\n",
    ],
)
def test_check_device_refuses_anything_else_naming_the_argument_and_value(device: object) -> None:
    with pytest.raises(ValueError, match=r"^`device` must be one of 'cpu', 'cuda', 'cuda:N', 'auto', got ") as info:
        check_device(device)
    assert repr(device) in str(info.value)


def test_check_device_names_the_given_argument() -> None:
    with pytest.raises(ValueError, match=r"^`train_device` must be one of .* got 'tpu'$"):
        check_device("tpu", "train_device")


def test_device_param_is_empty_on_the_cpu_so_old_unit_params_are_unchanged() -> None:
    params = {"seed": 3, "width": 8}
    assert {**params, **device_param("cpu")} == params
    assert device_param("cuda") == {"device": "cuda"}
    assert device_param("cuda:1") == {"device": "cuda:1"}
    assert device_param("auto") == {"device": "auto"}


def test_unit_device_reads_the_param_and_defaults_to_the_cpu() -> None:
    assert unit_device({}) == "cpu"
    assert unit_device({"seed": 0}) == "cpu"
    assert unit_device({"device": "cuda:1"}) == "cuda:1"
    # round trip through the param
    for device in ("cpu", "cuda", "cuda:2"):
        assert unit_device(device_param(device)) == device


def test_unit_device_resolves_auto_by_cuda_availability(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert unit_device({"device": "auto"}) == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert unit_device({"device": "auto"}) == "cuda"


def test_unit_device_auto_matches_this_machine() -> None:
    assert unit_device(device_param("auto")) == ("cuda" if torch.cuda.is_available() else "cpu")


def test_exported_from_structnets_training() -> None:
    assert training.check_device is check_device
    assert training.device_param is device_param
    assert training.unit_device is unit_device
    assert {"check_device", "device_param", "unit_device"} <= set(training.__all__)


def test_fit_and_seed_batched_times_wait_for_the_device(monkeypatch):
    """The wall times `fit` and `train_batched` report are read after a CUDA synchronise."""
    import structnets.analysis.timing as timing
    from structnets.models import mlp
    from structnets.training import fit, seeded, synchronized_clock

    calls: list[int] = []
    monkeypatch.setattr(timing, "synchronize", lambda: calls.append(1))
    before = synchronized_clock()
    assert calls == [1] and isinstance(before, float)
    with seeded(0):
        model = mlp(2, 1, 4, 2)
    result = fit(model, torch.zeros(8, 2), torch.zeros(8, 1), epochs=1, batch_size=8)
    assert len(calls) == 2 and result.wall_time >= 0.0
