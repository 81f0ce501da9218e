"""Devices and GPUs in the runner: --device resolution and checks, Ray GPU requests, CUDA-synchronised timing."""

from __future__ import annotations

import json
import sqlite3
import sys
import types
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch
from toy_experiment import ToyConfig

from structnets.analysis import timing
from structnets.runner import BackendUnavailableError, InvalidConfigError, run
from structnets.runner.backends import make_backend
from structnets.runner.device import apply_device, resolve_device
from structnets.runner.errors import DeviceUnavailableError

TOY = "toy_experiment:EXPERIMENT"
QUICK = ToyConfig.quick()


@pytest.fixture
def no_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)


def test_auto_is_cpu_without_cuda_and_cuda_with_it(no_cuda: None, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_device("auto") == "cpu"
    assert resolve_device("cpu") == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("auto") == "cuda"
    assert resolve_device("cuda:1") == "cuda:1"
    with pytest.raises(DeviceUnavailableError, match=r"'cuda:2' but only 2 CUDA device"):
        resolve_device("cuda:2")
    with pytest.raises(InvalidConfigError, match="must be one of cpu, cuda, auto .*got 'gpu'"):
        resolve_device("gpu")


def test_cuda_without_cuda_fails_before_the_run_folder_or_any_unit(
    no_cuda: None, tmp_path: Path, calls: Callable[[], Counter[str]]
) -> None:
    out = tmp_path / "run"
    with pytest.raises(DeviceUnavailableError, match=r"`device`='cuda' but CUDA is not available.*--device auto"):
        run(TOY, QUICK, out, device="cuda")
    # the config's own value is checked the same way
    with pytest.raises(DeviceUnavailableError):
        run(TOY, ToyConfig(arms=2, device="cuda"), out)
    assert not out.exists() and sum(calls().values()) == 0


def test_device_is_stored_resolved_and_reaches_the_units(no_cuda: None, tmp_path: Path) -> None:
    frame = run(TOY, QUICK, tmp_path / "auto", device="auto")
    assert set(frame["device"]) == {"cpu"}
    stored = json.loads((tmp_path / "auto" / "run_info.json").read_text())["config"]
    assert stored["device"] == "cpu"  # auto is resolved before it is stored


def test_units_are_seeded_the_same_on_every_device(fake_cuda: None) -> None:
    from structnets.experiments import lowrank_uci

    cpu = apply_device(lowrank_uci.LowRankUCIConfig.quick(), "cpu", experiment="lowrank-uci")
    gpu = apply_device(lowrank_uci.LowRankUCIConfig.quick(), "auto", experiment="lowrank-uci")
    assert (cpu.device, gpu.device) == ("cpu", "cuda")
    units_cpu = lowrank_uci.EXPERIMENT.units(cpu, pd.DataFrame({"key": []}))
    units_gpu = lowrank_uci.EXPERIMENT.units(gpu, pd.DataFrame({"key": []}))
    assert [u.key for u in units_cpu] == [u.key for u in units_gpu] and units_cpu
    for a, b in zip(units_cpu, units_gpu):
        assert b.params["device"] == "cuda" and "device" not in a.params
        assert {k: v for k, v in b.params.items() if k != "device"} == dict(a.params)


def test_experiment_without_device_field_refuses_cuda_only() -> None:
    @dataclass(frozen=True)
    class Plain:
        n: int = 1

    config = Plain()
    assert apply_device(config, "cpu", experiment="cpu-only") is config
    assert apply_device(config, "auto", experiment="cpu-only") is config
    assert apply_device(config, None, experiment="cpu-only") is config
    with pytest.raises(InvalidConfigError, match="'cpu-only' cannot run on 'cuda': its config has no `device` field"):
        apply_device(config, "cuda", experiment="cpu-only")


def test_old_run_without_the_device_field_still_resumes(
    tmp_path: Path, calls: Callable[[], Counter[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    first = run(TOY, QUICK, out)
    with sqlite3.connect(out / "results.db") as conn:  # as stored before the field existed
        (text,) = conn.execute("SELECT value FROM meta WHERE name = 'config'").fetchone()
        config = json.loads(text)
        del config["device"]
        conn.execute("UPDATE meta SET value = ? WHERE name = 'config'", (json.dumps(config),))
    again = run(TOY, QUICK, out)
    pd.testing.assert_frame_equal(first, again)
    assert max(calls().values()) == 1  # nothing reran
    from structnets.runner import ConfigMismatchError

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # auto is now cuda: not the stored cpu
    with pytest.raises(ConfigMismatchError, match='device: stored "<missing>", requested "cuda"'):
        run(TOY, QUICK, out, device="auto")


class _Ref:
    def __init__(self, value: Any) -> None:
        self.value = value


class _FakeRay(types.ModuleType):
    """Just enough of Ray to run tasks in this process and record what they request."""

    def __init__(self, gpus: float) -> None:
        super().__init__("ray")
        self.gpus = gpus
        self.options: list[dict[str, Any]] = []
        self.started = False

    def is_initialized(self) -> bool:
        return self.started

    def init(self, **kwargs: Any) -> None:
        self.started = True

    def shutdown(self) -> None:
        self.started = False

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": 4.0, "GPU": self.gpus}

    def remote(self, **options: Any) -> Callable[[Callable[..., Any]], Any]:
        self.options.append(options)

        def wrap(fn: Callable[..., Any]) -> Any:
            # the task runs at once; its "object ref" is a fresh object holding the result
            return types.SimpleNamespace(remote=lambda *args: _Ref(fn(*args)))

        return wrap

    def wait(self, refs: list[Any], num_returns: int = 1) -> tuple[list[Any], list[Any]]:
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref: Any) -> Any:
        return ref.value

    def cancel(self, ref: Any, force: bool = False) -> None:
        pass


def test_ray_tasks_request_the_gpus_asked_for(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, no_cuda: None) -> None:
    fake = _FakeRay(gpus=2.0)
    monkeypatch.setitem(sys.modules, "ray", fake)
    # on Ray the units run on the cluster, so cuda is not checked against this machine
    frame = run(TOY, QUICK, tmp_path / "gpu", backend="ray", gpus_per_unit=0.5, device="cuda")
    assert fake.options == [{"num_cpus": 1, "num_gpus": 0.5}]
    assert set(frame["device"]) == {"cuda"} and len(frame) == 6
    assert json.loads((tmp_path / "gpu" / "run_info.json").read_text())["gpus_per_unit"] == 0.5
    run(TOY, QUICK, tmp_path / "cpu", backend="ray")
    assert fake.options[-1] == {"num_cpus": 1}  # no GPU request unless asked


def test_ray_gpu_requests_are_checked_before_any_unit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, calls: Callable[[], Counter[str]]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", _FakeRay(gpus=0.0))
    with pytest.raises(BackendUnavailableError, match="gpus_per_unit`=1 but the Ray cluster has 0 GPU"):
        run(TOY, QUICK, tmp_path / "a", backend="ray", gpus_per_unit=1.0)
    assert sum(calls().values()) == 0
    with pytest.raises(DeviceUnavailableError, match="needs `gpus_per_unit` > 0"):
        run(TOY, QUICK, tmp_path / "b", backend="ray", device="cuda")
    assert resolve_device("auto", backend="ray", gpus_per_unit=None) == "cpu"
    assert resolve_device("auto", backend="ray", gpus_per_unit=0.25) == "cuda"


def test_gpus_per_unit_is_refused_without_ray_or_when_not_positive(tmp_path: Path) -> None:
    sys.modules.pop("ray", None)
    with pytest.raises(ValueError, match="`gpus_per_unit` applies to the ray backend only"):
        run(TOY, QUICK, tmp_path / "local", gpus_per_unit=1.0)
    with pytest.raises(ValueError, match="`gpus_per_unit` must be a finite number > 0"):
        make_backend("ray", None, TOY, None, gpus_per_unit=0)  # type: ignore[arg-type]
    assert not (tmp_path / "local").exists()
    try:
        import ray  # noqa: F401
    except ImportError:
        with pytest.raises(BackendUnavailableError, match="pip install 'structnets\\[ray\\]'"):
            make_backend("ray", None, TOY, None, gpus_per_unit=1.0)  # type: ignore[arg-type]


def test_timing_synchronises_cuda_before_and_after(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: events.append("sync"))
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    timing._seconds(lambda: events.append("call"), 2)
    assert events == ["call", "call"]  # CPU only: CUDA is left alone
    events.clear()
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    timing._seconds(lambda: events.append("call"), 2)
    assert events == ["sync", "call", "call", "sync"]
    events.clear()
    timing.interleaved_ratio(lambda: events.append("a"), lambda: events.append("b"), pairs=1, warmup=0)
    assert events == ["sync", "a", "sync", "sync", "b", "sync"]
