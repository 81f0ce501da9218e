"""``run(..., reuse=[DIR])`` / ``structnets run --reuse DIR``: finished units taken from other run folders.

A unit is taken only when the other folder finished it with exactly the params this run gives it;
the outputs then equal those of a run that computed every unit; anything else runs; bad folders
are refused by name before anything is written.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from toy_experiment import ToyConfig

from structnets.runner import CorruptStoreError, StoreError, run

TOY = "toy_experiment:EXPERIMENT"


def _rows(out: Path) -> dict[str, tuple[str, str, str]]:
    with sqlite3.connect(out / "results.db") as conn:
        return {k: (p, r, f) for k, p, r, f in conn.execute("SELECT key, params, result, finished FROM results")}


def test_a_run_with_more_seeds_takes_the_finished_ones_and_equals_a_full_run(
    tmp_path: Path, calls: Callable[[], Counter[str]]
) -> None:
    first = tmp_path / "seed0"
    run(TOY, ToyConfig(seeds=(0,)), first)
    assert sum(calls().values()) == 4 + 3  # 4 arms × 1 seed, then 3 repeats of the best arm
    before = sum(calls().values())

    grown = tmp_path / "seeds012"
    frame = run(TOY, ToyConfig(seeds=(0, 1, 2)), grown, reuse=[first])
    ran = sum(calls().values()) - before
    # the 4 stage-1 units of seed 0 were taken; the stage-2 units depend on the new stage-1
    # results: taken only if the best arm (hence their params) stayed the same
    stage2_same = set(pd.read_csv(first / "results.csv").query("stage == 2")["arm"]) == set(
        frame.query("stage == 2")["arm"]
    )
    assert ran == 4 * 2 + (0 if stage2_same else 3)

    fresh = tmp_path / "fresh"
    expected = run(TOY, ToyConfig(seeds=(0, 1, 2)), fresh)
    pd.testing.assert_frame_equal(frame, expected)
    assert (grown / "table.md").read_text() == (fresh / "table.md").read_text()
    # a taken row is the stored row, unchanged (its times say when it really ran)
    taken, source = _rows(grown), _rows(first)
    for key in [k for k in source if k.startswith("stage1/")]:
        assert taken[key] == source[key]
    info = json.loads((grown / "run_info.json").read_text())
    assert info["units"]["reused_this_session"] == 4 + (3 if stage2_same else 0)
    assert info["units"]["run_this_session"] == ran


def test_units_with_other_params_are_never_taken(tmp_path: Path, calls: Callable[[], Counter[str]]) -> None:
    first = tmp_path / "scaled"
    run(TOY, ToyConfig(seeds=(0,), scale=2.0), first)
    before = sum(calls().values())
    out = tmp_path / "plain"
    frame = run(TOY, ToyConfig(seeds=(0,)), out, reuse=[first])
    assert sum(calls().values()) - before == 7  # same keys, other params: everything ran
    assert json.loads((out / "run_info.json").read_text())["units"]["reused_this_session"] == 0
    pd.testing.assert_frame_equal(frame, run(TOY, ToyConfig(seeds=(0,)), tmp_path / "fresh"))


def test_a_resumed_run_keeps_its_own_units_and_takes_only_missing_ones(
    tmp_path: Path, calls: Callable[[], Counter[str]]
) -> None:
    out = tmp_path / "out"
    run(TOY, ToyConfig(seeds=(0, 1)), out)
    own = _rows(out)
    other = tmp_path / "other"
    run(TOY, ToyConfig(seeds=(0, 1)), other)
    before = sum(calls().values())
    run(TOY, ToyConfig(seeds=(0, 1)), out, reuse=[other])  # a finished folder: nothing to take or run
    assert sum(calls().values()) == before
    assert _rows(out) == own


def test_several_folders_each_give_their_units(tmp_path: Path, calls: Callable[[], Counter[str]]) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    run(TOY, ToyConfig(arms=1, seeds=(0,), repeats=1), a)
    run(TOY, ToyConfig(arms=1, seeds=(1,), repeats=1), b)
    before = sum(calls().values())
    out = tmp_path / "both"
    run(TOY, ToyConfig(arms=1, seeds=(0, 1), repeats=1), out, reuse=[a, b])
    # both stage-1 units taken; stage 2 (arm 0 is the only arm: same params as in a and b) taken from a
    assert sum(calls().values()) == before
    rows = _rows(out)
    assert rows["stage1/arm=0/seed=0"] == _rows(a)["stage1/arm=0/seed=0"]
    assert rows["stage1/arm=0/seed=1"] == _rows(b)["stage1/arm=0/seed=1"]


def test_bad_reuse_folders_are_refused_by_name_before_anything_is_written(tmp_path: Path) -> None:
    source = tmp_path / "source"
    run(TOY, ToyConfig.quick(), source)
    out = tmp_path / "out"
    with pytest.raises(TypeError, match=r"`reuse` must be a sequence of run folders, got the single path"):
        run(TOY, ToyConfig.quick(), out, reuse=str(source))  # type: ignore[arg-type]
    with pytest.raises(StoreError, match=r"`reuse` folder .*missing has no results\.db"):
        run(TOY, ToyConfig.quick(), out, reuse=[tmp_path / "missing"])
    with pytest.raises(StoreError, match=r"`reuse` folder .* is given twice"):
        run(TOY, ToyConfig.quick(), out, reuse=[source, tmp_path / "." / "source"])
    with pytest.raises(StoreError, match=r"`reuse` folder .* is the output folder itself"):
        run(TOY, ToyConfig.quick(), source, reuse=[source])
    assert not out.exists()
    # a run of another experiment
    other = tmp_path / "other"
    other.mkdir()
    with sqlite3.connect(source / "results.db") as conn, sqlite3.connect(other / "results.db") as copy:
        conn.backup(copy)
    with sqlite3.connect(other / "results.db") as conn:
        conn.execute("UPDATE meta SET value = 'lowrank-uci' WHERE name = 'experiment'")
    with pytest.raises(StoreError, match=r"holds a run of 'lowrank-uci', not of 'toy'"):
        run(TOY, ToyConfig.quick(), out, reuse=[other])
    assert not out.exists()
    # a damaged database is refused and left as it was
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "results.db").write_bytes(b"not a database" * 100)
    with pytest.raises(CorruptStoreError):
        run(TOY, ToyConfig.quick(), out, reuse=[damaged])
    assert (damaged / "results.db").read_bytes() == b"not a database" * 100 and not out.exists()
