"""Every CLI subcommand, driven in-process with generated bad arguments: exit 2, one line naming the argument.

Nothing may run or be written: a bad ``--set`` value, ``--jobs``, experiment name or folder is
refused before any unit starts and before the run folder exists.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from structnets import cli

SETTINGS = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # no shrinking: the drawn value is reported as is
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Values no typed config field accepts: non-numbers for numbers, NaN/inf, out of range.
BAD_INT = st.sampled_from(["abc", "1.5", "nan", "inf", "0x", "", "[1]", "1e400", "-1", "0"])
BAD_REAL = st.sampled_from(["abc", "nan", "inf", "-inf", "", "1e400x", "-0.5", "1e400"])
NAMES = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=20).filter(
    lambda name: not name.startswith("-") and name not in {"lowrank-uci", "rank-bounds"}
)


@pytest.fixture(autouse=True)
def _never_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refused command never reaches the runner; if one does, fail instead of running units."""
    from structnets import runner

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the command reached runner.run: the bad argument was not refused up front")

    monkeypatch.setattr(runner, "run", refuse)


def _call(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.err


def _one_line_error(code: int, err: str) -> str:
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.strip().splitlines() if line and not line.startswith(("usage:", " "))]
    assert len(lines) == 1, err
    return lines[0]


@SETTINGS
@given(field=st.sampled_from(["epochs", "batch_size", "patience", "folds"]), value=BAD_INT)
def test_run_refuses_a_bad_int_field_before_the_folder_exists(field: str, value: str, tmp_path_factory, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("run") / "out"
    code, err = _call(
        ["run", "lowrank-uci", "--quick", "--jobs", "1", "--out", str(out), "--set", f"{field}={value}"], capsys
    )
    line = _one_line_error(code, err)
    assert f"`{field}`" in line
    assert not out.exists()


@SETTINGS
@given(field=st.sampled_from(["lr", "weight_decay"]), value=BAD_REAL)
def test_run_refuses_a_bad_real_field_before_the_folder_exists(
    field: str, value: str, tmp_path_factory, capsys
) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("run") / "out"
    argv = ["run", "lowrank-uci", "--quick", "--jobs", "1", "--out", str(out), "--set", f"{field}={value}"]
    code, err = _call(argv, capsys)
    line = _one_line_error(code, err)
    assert f"`{field}`" in line
    assert not out.exists()


@SETTINGS
@given(key=st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12))
def test_run_refuses_an_unknown_key_naming_it(key: str, tmp_path_factory, capsys) -> None:  # type: ignore[no-untyped-def]
    import dataclasses

    from structnets.experiments.lowrank_uci import LowRankUCIConfig

    if key in {f.name for f in dataclasses.fields(LowRankUCIConfig)}:
        return
    out = tmp_path_factory.mktemp("run") / "out"
    code, err = _call(["run", "lowrank-uci", "--out", str(out), "--set", f"{key}=1"], capsys)
    line = _one_line_error(code, err)
    assert repr(key) in line
    assert not out.exists()


@SETTINGS
@given(jobs=st.sampled_from(["0", "-3", "abc", "1.5", "", "nan"]))
def test_run_refuses_bad_jobs(jobs: str, tmp_path_factory, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("run") / "out"
    code, err = _call(["run", "lowrank-uci", "--jobs", jobs, "--out", str(out)], capsys)
    line = _one_line_error(code, err)
    assert "--jobs" in line
    assert not out.exists()


@SETTINGS
@given(name=NAMES, command=st.sampled_from(["run", "show"]))
def test_unknown_experiment_names_list_the_valid_ones(name: str, command: str, tmp_path_factory, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("run") / "out"
    argv = [command, name] + (["--out", str(out)] if command == "run" else [])
    code, err = _call(argv, capsys)
    line = _one_line_error(code, err)
    assert "unknown experiment" in line and "lowrank-uci" in line
    assert not out.exists()


@SETTINGS
@given(
    name=st.text(alphabet="abcdefghij_-.", min_size=1, max_size=12),
    command=st.sampled_from(["report", "compare", "analyze"]),
)
def test_folder_and_file_commands_refuse_missing_paths(name: str, command: str, tmp_path_factory, capsys) -> None:  # type: ignore[no-untyped-def]
    base = tmp_path_factory.mktemp("missing")
    missing = str(base / f"x{name}")
    argv = [command, missing] + ([missing + "b"] if command == "compare" else [])
    code, err = _call(argv, capsys)
    line = _one_line_error(code, err)
    assert missing in line
    assert not Path(missing).exists()


@SETTINGS
@given(content=st.binary(min_size=0, max_size=64))
def test_analyze_refuses_a_file_that_is_no_checkpoint(content: bytes, tmp_path_factory, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path_factory.mktemp("garbage") / "model.pt"
    path.write_bytes(content)
    code, err = _call(["analyze", str(path)], capsys)
    line = _one_line_error(code, err)
    assert str(path) in line
