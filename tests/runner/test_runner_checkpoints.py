"""Units' checkpoint files: one per unit in ``checkpoints/``, kept while the unit is unfinished, deleted once committed."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import toy_experiment

from structnets import runner
from structnets.runner.checkpoints import CHECKPOINTS, checkpoint_file, unit_checkpoint


def _log(folder: Path) -> list[tuple[str, str]]:
    lines = (folder / "log").read_text().splitlines()
    return [tuple(line.split("\t")) for line in lines]  # type: ignore[misc]


@pytest.mark.parametrize("jobs", [1, 2])
def test_each_unit_gets_its_own_file_which_is_deleted_when_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    log = tmp_path / "log"
    log.mkdir()
    monkeypatch.setenv("STRUCTNETS_TOY_CHECKPOINTS", str(log))
    out = tmp_path / "run"
    config = toy_experiment.ToyConfig.quick()
    runner.run("toy", config, out, jobs=jobs, registry=toy_experiment.REGISTRY)
    calls = _log(log)
    keys = [key for key, _ in calls]
    assert len(keys) == len(set(keys)) == 6
    paths = [Path(path) for _, path in calls]
    assert all(path.parent == out / CHECKPOINTS and path.suffix == ".ckpt" for path in paths)
    assert len(set(paths)) == len(paths)
    assert not (out / CHECKPOINTS).exists()  # every file deleted with its commit, then the empty folder


def _failed_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str) -> tuple[Path, Path]:
    """(run folder, toy checkpoint log) of a quick toy run whose unit ``key`` failed; later runs do not fail."""
    log = tmp_path / "log"
    log.mkdir()
    monkeypatch.setenv("STRUCTNETS_TOY_CHECKPOINTS", str(log))
    monkeypatch.setenv("STRUCTNETS_TOY_FAIL_KEYS", key)
    out = tmp_path / "run"
    with pytest.raises(runner.UnitFailedError):
        runner.run("toy", toy_experiment.ToyConfig.quick(), out, jobs=1, registry=toy_experiment.REGISTRY)
    monkeypatch.delenv("STRUCTNETS_TOY_FAIL_KEYS")
    return out, log


def test_a_failed_unit_keeps_its_checkpoint_for_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    out, log = _failed_run(tmp_path, monkeypatch, "stage1/arm=1/seed=0")
    config = toy_experiment.ToyConfig.quick()
    kept = list((out / CHECKPOINTS).iterdir())
    failed = dict(_log(log))["stage1/arm=1/seed=0"]
    assert kept == [Path(failed)]
    with caplog.at_level(logging.INFO, logger="structnets.runner"):
        runner.run("toy", config, out, jobs=1, registry=toy_experiment.REGISTRY)
    resumed = [r.getMessage() for r in caplog.records if "resumes from its training checkpoint" in r.getMessage()]
    assert resumed == [f"stage1/arm=1/seed=0 resumes from its training checkpoint in {out / CHECKPOINTS}"]
    assert [line for line in _log(log) if line[0] == "stage1/arm=1/seed=0"] == [("stage1/arm=1/seed=0", failed)] * 2
    assert not (out / CHECKPOINTS).exists()


def test_changed_params_get_another_file(tmp_path: Path) -> None:
    params = {"lr": 1e-3, "seed": 0}
    assert checkpoint_file(tmp_path, "train/a", params) == checkpoint_file(tmp_path, "train/a", dict(params))
    assert checkpoint_file(tmp_path, "train/a", params) != checkpoint_file(tmp_path, "train/a", {**params, "lr": 2e-3})
    assert checkpoint_file(tmp_path, "train/a", params) != checkpoint_file(tmp_path, "train/b", params)


def test_outside_a_run_there_is_no_checkpoint() -> None:
    assert unit_checkpoint() is None


def test_a_finished_run_deletes_orphans_and_keeps_foreign_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file of no unit (a unit rerun with changed params, a cut write) is deleted when the run finishes."""
    out, _ = _failed_run(tmp_path, monkeypatch, "stage1/arm=0/seed=0")
    config = toy_experiment.ToyConfig.quick()
    folder = out / CHECKPOINTS
    (folder / "0123abcd.ckpt").write_text("old params")
    (folder / ".0123abcd.ckpt.x1y2.tmp").write_text("cut short")
    runner.run("toy", config, out, jobs=1, registry=toy_experiment.REGISTRY)
    assert not folder.exists()

    (out / CHECKPOINTS).mkdir()
    (out / CHECKPOINTS / "notes.txt").write_text("mine")
    (out / CHECKPOINTS / "0123abcd.ckpt").write_text("old params")
    runner.run("toy", config, out, jobs=1, registry=toy_experiment.REGISTRY)
    assert [p.name for p in (out / CHECKPOINTS).iterdir()] == ["notes.txt"]


def test_a_file_in_place_of_the_folder_is_refused_before_any_unit(tmp_path: Path, calls) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / CHECKPOINTS).write_text("not a folder")
    with pytest.raises(runner.RunnerError, match="is not a folder"):
        runner.run("toy", toy_experiment.ToyConfig.quick(), out, jobs=1, registry=toy_experiment.REGISTRY)
    assert sum(calls().values()) == 0
    assert (out / CHECKPOINTS).read_text() == "not a folder"
