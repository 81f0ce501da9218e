"""Units' trained models: one file per unit in ``models/``, bound to its row by a SHA-256, kept and reusable."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import torch
import toy_experiment

from structnets import runner
from structnets.runner.unit_models import MODELS, load_unit_state, model_file, save_unit_model


def _expected(arm: int, seed: int) -> dict[str, torch.Tensor]:
    torch.manual_seed(1000 * arm + seed)
    return torch.nn.Linear(3, 2).state_dict()


@pytest.mark.parametrize("jobs", [1, 2])
def test_every_unit_saves_its_model_and_it_loads_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    monkeypatch.setenv("STRUCTNETS_TOY_MODELS", "1")
    out = tmp_path / "run"
    frame = runner.run("toy", toy_experiment.ToyConfig.quick(), out, jobs=jobs, registry=toy_experiment.REGISTRY)
    assert len(set(frame["model_file"])) == len(frame) == len(list((out / MODELS).iterdir()))
    for row in frame.itertuples():
        params, state = load_unit_state(out, row.key)
        assert params["arm"] == row.arm and params["seed"] == row.seed
        assert out / row.model_file == model_file(out / MODELS, row.key, params)
        expected = _expected(row.arm, row.seed)
        assert state.keys() == expected.keys()
        assert all(torch.equal(state[name], expected[name]) for name in state)


def test_a_reused_row_brings_its_model_along(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRUCTNETS_TOY_MODELS", "1")
    first = tmp_path / "first"
    runner.run("toy", toy_experiment.ToyConfig(seeds=(0,)), first, registry=toy_experiment.REGISTRY)
    grown = tmp_path / "grown"
    frame = runner.run("toy", toy_experiment.ToyConfig(seeds=(0, 1)), grown, registry=toy_experiment.REGISTRY,
                       reuse=[first])  # fmt: skip
    for row in frame.query("seed == 0 and stage == 1").itertuples():
        _, state = load_unit_state(grown, row.key)
        assert torch.equal(state["weight"], _expected(row.arm, 0)["weight"])
        assert (grown / row.model_file).read_bytes() == (first / row.model_file).read_bytes()


def test_outside_a_run_folder_nothing_is_saved_but_the_columns_are_there() -> None:
    assert save_unit_model(torch.nn.Linear(2, 2)) == {"model_file": None, "model_sha256": None}


def test_bad_folders_keys_and_files_are_refused_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(FileNotFoundError, match="not a run folder"):
        load_unit_state(tmp_path, "stage1/arm=0/seed=0")
    plain = tmp_path / "plain"
    runner.run("toy", toy_experiment.ToyConfig.quick(), plain, registry=toy_experiment.REGISTRY)
    with pytest.raises(ValueError, match="saved no model"):
        load_unit_state(plain, "stage1/arm=0/seed=0")
    monkeypatch.setenv("STRUCTNETS_TOY_MODELS", "1")
    out = tmp_path / "run"
    runner.run("toy", toy_experiment.ToyConfig.quick(), out, registry=toy_experiment.REGISTRY)
    with pytest.raises(KeyError, match="stage1/arm=9/seed=0"):
        load_unit_state(out, "stage1/arm=9/seed=0")
    with sqlite3.connect(out / "results.db") as conn:
        (name,) = conn.execute("SELECT json_extract(result, '$.model_file') FROM results LIMIT 1").fetchone()
        (key,) = conn.execute("SELECT key FROM results LIMIT 1").fetchone()
    path = out / name
    path.write_bytes(path.read_bytes()[:-10])  # truncated
    with pytest.raises(ValueError, match="does not match the SHA-256"):
        load_unit_state(out, key)
    path.unlink()
    with pytest.raises(FileNotFoundError):
        load_unit_state(out, key)


def _reseal(conn: sqlite3.Connection, key: str) -> None:
    """Recompute an edited row's checksum: the row stands for one that other code wrote so."""
    from structnets.runner.store import row_digest

    columns = "key, params, result, started, finished, worker, host, wall_s"
    row = conn.execute(f"SELECT {columns} FROM results WHERE key = ?", (key,)).fetchone()
    conn.execute("UPDATE results SET digest = ? WHERE key = ?", (row_digest(*row), key))


@pytest.mark.parametrize("name", ["../results.db", "models/../results.db", "/etc/passwd", "models/sub/x.pt", "x.pt"])
def test_a_row_naming_a_file_outside_models_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv("STRUCTNETS_TOY_MODELS", "1")
    out = tmp_path / "run"
    runner.run("toy", toy_experiment.ToyConfig.quick(), out, registry=toy_experiment.REGISTRY)
    with sqlite3.connect(out / "results.db") as conn:
        (key,) = conn.execute("SELECT key FROM results LIMIT 1").fetchone()
        conn.execute("UPDATE results SET result = json_set(result, '$.model_file', ?) WHERE key = ?", (name, key))
        _reseal(conn, key)
    with pytest.raises(ValueError, match="not a file of its models/ folder"):
        load_unit_state(out, key)


@pytest.mark.parametrize("key", ["train/a..b/seed=0", "..", "lr=0.5/x", "../../etc"])
def test_every_key_gets_a_name_that_loads(tmp_path: Path, key: str) -> None:
    """The names the runner writes are names ``load_unit_state`` accepts (dots in keys, ``..``)."""
    from structnets.runner.unit_models import _is_model_name

    path = model_file(tmp_path / MODELS, key, {"lr": 0.5})
    assert path.parent == tmp_path / MODELS and _is_model_name(f"{MODELS}/{path.name}")
