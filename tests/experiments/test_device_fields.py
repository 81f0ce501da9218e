"""The ``device`` field of the experiments that train (``structnets run NAME --device``).

For dlor-blindspot, dlor-sawtooth, dlor-universality, lipschitz-density, lipschitz-mnist-conv and
lowrank-compress: the config refuses a bad device naming ``device``; ``device="cpu"`` leaves every unit's key and params as
the default config's (old run folders resume); a tiny unit gives bit-identical results with the
default, ``"cpu"`` and ``"auto"`` (on a machine without CUDA: ``auto`` means the CPU); and
``--device cuda`` without CUDA is a one-line error before the run folder exists. Each tiny unit, a small run of
each of the five other training experiments, and the CLI's lipschitz-mnist-conv run (and its resume) also run with
``device="cuda"``, giving the CPU run's columns: on a GPU where there is one (``benchmarks/device_check.sh``), and
everywhere on the pretend device of ``tests/pretend_cuda.py``, which fails on a host tensor meeting a device one.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch

from pretend_cuda import pretending
from structnets.cli import main
from structnets.experiments import get, names
from structnets.runner.device import has_device_field

# name -> (tiny config overrides, keys of units that train (or evaluate) on the device, their timing columns)
TINY: dict[str, tuple[dict[str, Any], list[str], tuple[str, ...]]] = {
    "dlor-blindspot": (
        dict(widths=(2,), seeds=(0, 1), epochs=15, n_train=32, test_per_axis=6, interpolation_sizes=(3,),
             floor_samples=1000, floor_directions=2),
        ["train/dlor/width=2", "train/rank1/width=2"],
        ("seconds",),
    ),
    "dlor-sawtooth": (
        dict(targets=("d1t2",), seeds=(0, 1), budgets=(12,), width=4, wide_modes=("parallel",), wide_depth=1,
             branches=2, n_train=16, test_points=16, eval_every=4, dense_width=4, dense_epochs=12, hs=(1e-2,),
             correspondence_seeds=(0,)),
        ["train/d1t2/parallel/depth=1/branches=2/budget=12", "correspondence/d1t2/seed=0"],
        ("seconds", "fit_seconds"),
    ),
    "dlor-universality": (
        dict(targets=("pair",), neurons=(3,), fit_per_axis=8, test_per_axis=7, generic_max_neurons=3),
        ["pair/J=3"],
        ("seconds",),
    ),
    "lipschitz-density": (
        dict(pieces_1d=(3,), groups_2d=(), depths=(1,), seeds=(0, 1), steps=8, train_per_axis_1d=9,
             eval_per_axis_1d=33),
        ["1d-K3-s0/trained/depth=1"],
        ("seconds",),
    ),
    "lipschitz-mnist-conv": (
        dict(channels=(2, 4), depths=(0, 1), head_width=8, head_depth=1, epochs=1, max_train=128, max_test=64,
             ascent_steps=2, batch_size=64, attack_points=16, attack_steps=5),
        ["train/gradient-step-conv/seed=0"],
        ("seconds_per_epoch",),
    ),
    "lowrank-compress": (
        dict(datasets=("iris",), ratios=(0.5,), seeds=(0,), width=8, depth=2, epochs=3, finetune_epochs=2,
             batch_size=32, architectures=()),
        ["dense/iris/seed=0", "finetuned/iris/ratio=0.5/seed=0", "scratch/iris/ratio=0.5/seed=0"],
        ("train_seconds",),
    ),
}  # fmt: skip
EXPERIMENTS = sorted(TINY)

NO_DEVICE: dict[str, str] = {
    "swish-construction": "a pure construction: the explicit Swish network is built and evaluated in float64, "
    "nothing is trained",
    "smooth-constant-depth": "a pure construction: explicit constant-depth networks and their error bounds in "
    "float64, nothing is trained",
}
"""Registered experiments that legitimately have no ``device`` field, and why."""


def _config_class(name: str) -> Any:
    return get(name).config_class


def _units(name: str, **fields: Any) -> list[Any]:
    overrides = TINY[name][0] if name in TINY else {}
    config = _config_class(name)(**{**overrides, **fields})
    return get(name).units(config, pd.DataFrame())


def _reset_caches(name: str) -> None:
    """Forget lowrank-compress's cached dense nets, so that every run below trains its own."""
    if name == "lowrank-compress":
        from structnets.experiments.lowrank_compress import units

        units._trained_dense_cached.cache_clear()
        units._arrays.cache_clear()


def _row(name: str, key: str, **fields: Any) -> tuple[dict[str, Any], str]:
    """(the unit's params, its result row as canonical JSON without the timing columns)."""
    _reset_caches(name)
    unit = next(u for u in _units(name, **fields) if u.key == key)
    row = get(name).run_unit(unit.params)
    kept = {k: v for k, v in row.items() if k not in TINY[name][2]}
    return dict(unit.params), json.dumps(kept, sort_keys=True, default=repr)


@pytest.mark.parametrize("name", EXPERIMENTS)
@pytest.mark.parametrize("device", ["gpu", "CUDA", "cuda:", "cuda:x", "", None, 0])
def test_config_refuses_a_bad_device_naming_it(name: str, device: object) -> None:
    with pytest.raises(ValueError, match=r"^`device` must be one of 'cpu', 'cuda', 'cuda:N', 'auto', got "):
        _config_class(name)(device=device)


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_device_field_defaults_to_cpu_and_accepts_every_name(name: str) -> None:
    cls = _config_class(name)
    assert cls().device == "cpu" and cls.quick().device == "cpu"
    for device in ("cpu", "cuda", "cuda:1", "auto"):
        assert cls(device=device).device == device  # availability is the runner's check, not the config's


@pytest.mark.parametrize("name", EXPERIMENTS)
@pytest.mark.parametrize("preset", ["full", "quick", "tiny"])
def test_cpu_units_are_the_default_units_and_other_devices_add_only_the_device(name: str, preset: str) -> None:
    cls = _config_class(name)
    base = {"full": cls(), "quick": cls.quick(), "tiny": cls(**TINY[name][0])}[preset]

    def units(device: str | None) -> list[tuple[str, dict[str, Any]]]:
        config = base if device is None else dataclasses.replace(base, device=device)
        return [(u.key, dict(u.params)) for u in get(name).units(config, pd.DataFrame())]

    default = units(None)
    assert units("cpu") == default  # resume compatibility: CPU params are those stored before the field
    assert all("device" not in params for _, params in default)
    for device in ("cuda", "cuda:1", "auto"):
        other = units(device)
        assert [k for k, _ in other] == [k for k, _ in default]  # keys never depend on the device
        carried = 0
        for (_, params), (_, base_params) in zip(other, default, strict=True):
            if "device" in params:
                assert params.pop("device") == device
                carried += 1
            assert params == base_params
        assert carried >= 1  # at least the training units carry it
    # the units the tiny runs below use are among those that carry it
    if preset == "tiny":
        keys = {k for k, params in units("cuda") if "device" in params}
        assert set(TINY[name][1]) <= keys


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_tiny_units_are_bit_identical_on_cpu_and_auto_without_cuda(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    from structnets.data.files import DataFileError

    for key in TINY[name][1]:
        try:
            default_params, default = _row(name, key)
        except (DataFileError, OSError) as error:  # a data set with no copy and no network
            pytest.skip(f"data not available: {error}")
        cpu_params, cpu = _row(name, key, device="cpu")
        auto_params, auto = _row(name, key, device="auto")
        assert cpu_params == default_params and "device" not in default_params
        assert auto_params == {**default_params, "device": "auto"}
        assert cpu == default, key
        assert auto == default, key
        assert any(isinstance(v, float) and math.isfinite(v) and v != 0.0 for v in json.loads(default).values())


def _same_columns(cpu: dict[str, Any], cuda: dict[str, Any], where: str) -> None:
    assert cuda.keys() == cpu.keys(), where
    for column, value in cpu.items():
        if isinstance(value, float) and math.isfinite(value):
            assert isinstance(cuda[column], float) and math.isfinite(cuda[column]), (where, column)


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_tiny_units_run_on_cuda_with_the_cpus_columns(name: str, cuda_device: str) -> None:
    """``device="cuda"``: each tiny unit runs on the GPU and gives the CPU run's columns, finite where the CPU's are
    (on a GPU the values differ by the devices' rounding, amplified by training: not compared). On the pretend
    device, which computes on the host, the values themselves must be the CPU's (1e-6 relative)."""
    from structnets.data.files import DataFileError

    for key in TINY[name][1]:
        try:
            _, cpu = _row(name, key, device="cpu")
        except (DataFileError, OSError) as error:
            pytest.skip(f"data not available: {error}")
        params, cuda = _row(name, key, device=cuda_device)
        assert params["device"] == "cuda"
        _same_columns(json.loads(cpu), json.loads(cuda), key)
        if pretending():  # host arithmetic: the CPU's numbers up to the rounding of other kernel paths
            _close(json.loads(cpu), json.loads(cuda), key)


def _close(cpu: Any, cuda: Any, where: str, rel_tol: float = 1e-6) -> None:
    """Equal values, floats within ``rel_tol`` (NaN = NaN); strings holding JSON compared as their values."""
    if isinstance(cpu, str) and isinstance(cuda, str) and cpu != cuda:
        cpu, cuda = json.loads(cpu), json.loads(cuda)
    if isinstance(cpu, dict):
        assert isinstance(cuda, dict) and cpu.keys() == cuda.keys(), where
        for key in cpu:
            _close(cpu[key], cuda[key], f"{where}/{key}", rel_tol)
    elif isinstance(cpu, list):
        assert isinstance(cuda, list) and len(cpu) == len(cuda), where
        for index, (a, b) in enumerate(zip(cpu, cuda, strict=True)):
            _close(a, b, f"{where}[{index}]", rel_tol)
    elif isinstance(cpu, float) and isinstance(cuda, float):
        assert (math.isnan(cpu) and math.isnan(cuda)) or math.isclose(cpu, cuda, rel_tol=rel_tol, abs_tol=1e-9), (
            where,
            cpu,
            cuda,
        )
    else:
        assert cpu == cuda, (where, cpu, cuda)


# the five experiments with their own device tests, each as a whole small run (name -> config overrides of quick)
SMALL_RUNS: dict[str, dict[str, Any]] = {
    "lipschitz-moons": dict(n_samples=240, train_fractions=(0.5,), depths=(2,), depth_sweep_width=4, widths=(5,),
                            width_sweep_depth=2, epochs=4, ascent_steps=4, radii=(0.02, 0.1)),
    "lipschitz-mnist": dict(depths=(1,), widths=(8,), models=("gradient-step",), losses=("margin-ce",),
                            lifts=("orthogonal",), epochs=1, max_train=256, max_test=128, ascent_steps=2,
                            timing_pairs=2, batch_size=64, cost_depths=(1, 2), cost_rounds=2, attack_points=16,
                            attack_steps=5),
    "lowrank-uci": dict(datasets=("iris",), folds=2, depths=(1,), widths=(6,), sensitivity=(0.5,), epochs=4,
                        batch_size=64, patience=2, max_rows=120, latency_batch=64, latency_pairs=2),
    "smoothness-rates": dict(targets=((1, 1.0),), sizes=(20, 40), seeds=(0,), depths=(2,), steps=20, lbfgs_iters=30,
                             separation_cells=(), approx_targets=((1, 3.0),), approx_parameters=(10, 20),
                             approx_steps=20, approx_lm_iters=15, approx_train=64, approx_seeds=(0,), levels=4,
                             test_points=256),
    "rank-bounds": dict(datasets=("rice",), widths=(16,), depths=(3,), weight_decays=(0.0,), ranks=(None, 2),
                        n_train=300, n_test=200, epochs=2, probe_size=100, rank_checkpoints=2, linear_depths=(),
                        norm_depths=()),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SMALL_RUNS))
def test_small_runs_of_the_other_experiments_run_on_cuda_with_the_cpus_columns(
    name: str, cuda_device: str, tmp_path: Path
) -> None:
    """The runner with ``device="cuda"``: every unit of a small run trains on the device, with the CPU run's columns."""
    from structnets import runner
    from structnets.data.files import DataFileError

    experiment = get(name)
    config = dataclasses.replace(experiment.config_class.quick(), **SMALL_RUNS[name])
    try:
        cpu = runner.run(experiment, config, tmp_path / "cpu", jobs=1)
    except (DataFileError, OSError) as error:
        pytest.skip(f"data not available: {error}")
    cuda = runner.run(experiment, config, tmp_path / "cuda", jobs=1, device=cuda_device)
    assert len(cuda) == len(cpu) > 0
    on_device = [u.key for u in experiment.units(dataclasses.replace(config, device="cuda"), pd.DataFrame())
                 if u.params.get("device") == "cuda"]  # fmt: skip
    assert on_device, name  # some units of each run train on the device
    by_key = cuda.set_index("key")
    for row in cpu.to_dict("records"):
        mine = {k: v for k, v in row.items() if k != "device"}
        theirs = {k: v for k, v in by_key.loc[row["key"]].to_dict().items() if k != "device"} | {"key": row["key"]}
        _same_columns(mine, theirs, row["key"])
        if pretending():  # host arithmetic: the CPU's numbers, but for timings and training's amplified rounding
            kept = [k for k in mine if not TIMING.search(k)]
            _close({k: mine[k] for k in kept}, {k: theirs[k] for k in kept}, row["key"], rel_tol=1e-4)


#: columns that measure time (lipschitz-mnist's step-cost ratios, lowrank-uci's latency ratios) or name files by the
#: trained bytes, which no two runs share; rank-bounds' rank ratios and lowrank-uci's bottleneck `ratio` are compared
TIMING = re.compile(r"seconds|latency|other_load|^ratio_|^cost_ratio|model_file|model_sha256")


def test_the_cli_runs_lipschitz_mnist_conv_on_cuda_and_resumes(
    cuda_device: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``structnets run lipschitz-mnist-conv --device cuda``: the run folder records the device, the report is
    written, and the same command again resumes (every unit already done)."""
    overrides = ["channels=2,4", "depths=0,1", "head_width=8", "head_depth=1", "epochs=1", "max_train=128",
                 "max_test=64", "ascent_steps=2", "batch_size=64"]  # fmt: skip
    argv = ["run", "lipschitz-mnist-conv", "--quick", "--device", cuda_device, "--out", str(tmp_path / "run"), "--set"]
    argv += overrides
    from structnets.data.files import DataFileError

    try:
        assert main(argv) == 0
    except (DataFileError, OSError) as error:
        pytest.skip(f"data not available: {error}")
    first = capsys.readouterr()
    assert "[1/1] train/gradient-step-conv/seed=0 finished" in first.err + first.out
    info = json.loads((tmp_path / "run" / "run_info.json").read_text())
    assert info["config"]["device"] == "cuda"
    table = (tmp_path / "run" / "table.md").read_text()
    assert main(argv) == 0
    again = capsys.readouterr()
    assert "finished in" not in again.err + again.out  # nothing retrained
    assert (tmp_path / "run" / "table.md").read_text() == table


def test_fit_fixed_width_refuses_a_bad_device_and_matches_on_cpu() -> None:
    from structnets.experiments.lipschitz_density.fixed_width import fit_fixed_width

    def target(x: np.ndarray) -> np.ndarray:
        return np.abs(x[:, 0]) - 0.5

    with pytest.raises(ValueError, match=r"^`device` must be one of .* got 'gpu'$"):
        fit_fixed_width(target, 1, 1, steps=2, train_per_axis=5, device="gpu")
    first = fit_fixed_width(target, 1, 2, seeds=(0, 1), steps=5, train_per_axis=9)
    second = fit_fixed_width(target, 1, 2, seeds=(0, 1), steps=5, train_per_axis=9, device="cpu")
    for a, b in zip(first, second, strict=True):
        assert all(p.device.type == "cpu" for p in a.parameters())
        for (name_a, pa), (name_b, pb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
            assert name_a == name_b and torch.equal(pa, pb)
    assert not all(torch.equal(p, q) for p, q in zip(first[0].parameters(), first[1].parameters(), strict=True))


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_cli_device_cuda_without_cuda_exits_2_before_the_run_folder(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "run"
    assert main(["run", name, "--quick", "--device", "cuda", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: `device`='cuda' but CUDA is not available"), err
    assert "\n" not in err
    assert not out.exists()


def _has_device(name: str) -> bool:
    return has_device_field(_config_class(name)())


@pytest.mark.parametrize("name", names())
def test_every_experiment_that_trains_has_a_device_field(name: str) -> None:
    if name in NO_DEVICE:
        assert not _has_device(name), f"{name} has a device field now: take it off NO_DEVICE"
        return
    assert _has_device(name), f"{name} trains but its config has no `device` field (or list it in NO_DEVICE)"
    field = next(f for f in dataclasses.fields(_config_class(name)) if f.name == "device")
    assert field.default == "cpu" and field.type in (str, "str")


def test_the_lists_name_registered_experiments() -> None:
    registered = set(names())
    # the experiments that train besides the five above (each with its own device tests)
    trained = {"lowrank-uci", "lipschitz-moons", "lipschitz-mnist", "rank-bounds", "smoothness-rates"}
    assert set(NO_DEVICE) | set(TINY) | trained <= registered
    assert not set(NO_DEVICE) & (set(TINY) | trained)
