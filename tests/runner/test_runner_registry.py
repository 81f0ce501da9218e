"""The registry the runner is handed: names to ``module.path:OBJECT`` specs, trusted names for run folders,
specs for worker processes, and the default that ``structnets.experiments.register()`` installs (explicitly:
importing the package installs nothing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from toy_experiment import EXPERIMENT as TOY_EXPERIMENT
from toy_experiment import REGISTRY as TOY_REGISTRY
from toy_experiment import SPEC, ToyConfig

from structnets import experiments
from structnets.runner import UntrustedExperimentError, load_results, report, resolve_experiment, run
from structnets.runner.resolve import experiment_ref, get_registry, resolve_stored_experiment, worker_spec

QUICK = ToyConfig.quick()
N_QUICK = 6  # 2 arms x 2 seeds, then 2 repeats


def test_a_registry_maps_names_to_objects_and_lists_them_when_a_name_is_unknown() -> None:
    assert resolve_experiment("toy", TOY_REGISTRY) is TOY_EXPERIMENT
    assert resolve_experiment(SPEC, {}) is TOY_EXPERIMENT  # a spec needs no registry
    with pytest.raises(ValueError, match=r"unknown experiment 'nope'; valid names: a-toy, toy$"):
        resolve_experiment("nope", {**TOY_REGISTRY, "a-toy": SPEC})
    with pytest.raises(TypeError, match="`registry` must be a Mapping"):
        resolve_experiment("toy", ["toy"])  # type: ignore[arg-type]


def test_experiments_registry_is_a_live_view_of_the_modules_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from structnets.runner import resolve

    assert sorted(experiments.REGISTRY) == experiments.names()
    assert experiments.REGISTRY["lowrank-uci"] == "structnets.experiments.lowrank_uci:EXPERIMENT"
    monkeypatch.setitem(experiments._MODULES, "toy", "toy_experiment")
    assert experiments.REGISTRY["toy"] == SPEC and "toy" in experiments.REGISTRY
    assert resolve_experiment("toy", experiments.REGISTRY) is TOY_EXPERIMENT
    monkeypatch.setattr(resolve, "_default_registry", {})  # restored after the test
    experiments.register()
    assert get_registry() is experiments.REGISTRY  # installed as the default when asked, explicitly
    assert resolve_experiment("toy") is TOY_EXPERIMENT


def test_workers_get_specs_and_refs_name_registered_objects() -> None:
    assert worker_spec("toy", TOY_REGISTRY) == SPEC
    assert worker_spec(SPEC, TOY_REGISTRY) == SPEC
    assert worker_spec("elsewhere:X", {}) == "elsewhere:X"
    assert experiment_ref(TOY_EXPERIMENT, TOY_REGISTRY) == "toy"
    assert experiment_ref(TOY_EXPERIMENT, {}) == SPEC  # a module attribute of the toy's module


def test_a_name_only_the_passed_registry_knows_runs_in_worker_processes_and_reports(
    tmp_path: Path, calls: object
) -> None:
    out = tmp_path / "run"
    registry = {"toy-elsewhere": SPEC}  # neither installed nor known to the worker processes
    frame = run("toy-elsewhere", QUICK, out, jobs=2, registry=registry)
    assert len(frame) == N_QUICK
    assert json.loads((out / "run_info.json").read_text())["experiment_ref"] == "toy-elsewhere"
    pd.testing.assert_frame_equal(frame, run(TOY_EXPERIMENT, QUICK, tmp_path / "in-process"))
    table = (out / "table.md").read_text()
    assert report(out, registry=registry) == table
    exp, config, again = load_results(out, registry=registry)
    assert exp is TOY_EXPERIMENT and config == QUICK and again.equals(frame)
    with pytest.raises(UntrustedExperimentError, match="'toy-elsewhere', which is not a registered experiment"):
        report(out, registry={})


def test_stored_names_and_specs_are_trusted_only_when_the_registry_holds_them() -> None:
    assert resolve_stored_experiment("toy", "toy", "RUN", TOY_REGISTRY) is TOY_EXPERIMENT
    assert resolve_stored_experiment("toy", SPEC, "RUN", TOY_REGISTRY) is TOY_EXPERIMENT  # a registered spec
    for name, ref in (("toy", "toy_experiment:ToyExperiment"), ("toy", "other:EXPERIMENT"), ("evil", "")):
        with pytest.raises(UntrustedExperimentError, match="not a registered experiment"):
            resolve_stored_experiment(name, ref, "RUN", TOY_REGISTRY)
    with pytest.raises(UntrustedExperimentError):
        resolve_stored_experiment("toy", SPEC, "RUN", {})


def test_importing_the_experiments_registers_nothing_until_register_is_called() -> None:
    code = (
        "import structnets.runner as r\n"
        "import structnets.experiments\n"
        "from structnets.runner.resolve import get_registry\n"
        "print(len(get_registry()))\n"
        "try:\n    r.resolve_experiment('lowrank-uci')\nexcept ValueError as e:\n    print(e)\n"
        "structnets.experiments.register()\n"
        "print(type(r.resolve_experiment('lowrank-uci')).__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "0" and lines[2] == "FunctionExperiment"
    assert lines[1].startswith("unknown experiment 'lowrank-uci': no experiment is registered (pass `registry`")
    assert "structnets.experiments.register()" in lines[1]


def test_an_experiments_own_run_names_it_by_its_registered_name(tmp_path: Path) -> None:
    """``run(config)`` of an experiment module hands the runner the registry, so its folder is reported by name."""
    from structnets.experiments import smooth_constant_depth as scd

    out = tmp_path / "run"
    config = scd.SmoothConstantDepthConfig.quick()
    scd.run(config, out)
    assert json.loads((out / "run_info.json").read_text())["experiment_ref"] == "smooth-constant-depth"
    assert report(out, registry=experiments.REGISTRY) == (out / "table.md").read_text()
