"""Packaging: `python -m structnets`, py.typed, the torch range and the exact pins."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import structnets

ROOT = Path(__file__).resolve().parents[1]


def test_python_dash_m_runs_the_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "structnets", "--version"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"structnets {structnets.__version__}"


def test_py_typed_marker_is_in_the_package_and_in_package_data() -> None:
    assert (Path(structnets.__file__).parent / "py.typed").is_file()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in project["tool"]["setuptools"]["package-data"]["structnets"]


def test_pyproject_states_ranges_and_constraints_pin_every_dependency_exactly() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    names = {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower() for r in requirements}  # type: ignore[union-attr]
    torch_requirement = next(r for r in project["dependencies"] if r.startswith("torch"))
    assert "==" not in torch_requirement and "<3" in torch_requirement
    pins = dict(
        line.split("==")
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert pins["torch"] == "2.13.0"
    assert names <= set(pins), f"not pinned in constraints.txt: {sorted(names - set(pins))}"


def test_license_file_is_mit_as_pyproject_says() -> None:
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"] == {"text": "MIT"}


def test_the_script_entry_point_and_python_dash_m_structnets_cli_are_the_same_main() -> None:
    import importlib

    from structnets import cli

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    module_name, _, attr = project["scripts"]["structnets"].partition(":")
    assert getattr(importlib.import_module(module_name), attr) is cli.main
    done = subprocess.run(
        [sys.executable, "-m", "structnets.cli", "--version"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"structnets {structnets.__version__}"


def test_no_test_fixture_ships_in_the_package() -> None:
    package = Path(structnets.__file__).parent
    assert not (package / "runner" / "_toy.py").exists()
    assert not [p for p in package.rglob("*.py") if "toy" in p.stem or p.stem.startswith(("test_", "conftest"))]


def test_no_source_file_is_longer_than_600_lines() -> None:
    """One concept per file: a module past 600 lines is split (docs/design.md, layout)."""
    from pathlib import Path

    import structnets

    root = Path(structnets.__file__).resolve().parent
    long = {
        str(path.relative_to(root)): n
        for path in root.rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert long == {}, long
