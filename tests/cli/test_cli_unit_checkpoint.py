"""A ``structnets run`` killed (SIGKILL) inside a long training unit resumes that unit from its last epoch.

The run folder keeps the unit's ``fit`` checkpoint in ``checkpoints/``; the second run loads it,
trains only the remaining epochs and ends with the results of an uninterrupted run (every column
but the timing), then deletes the checkpoint.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from structnets.cli import main
from structnets.training import checkpoint as ckpt

SETTINGS = {
    "channels": "2,4", "depths": "0,1", "head_width": "8", "head_depth": "1", "epochs": "30",
    "max_train": "1024", "max_test": "64", "ascent_steps": "2", "batch_size": "64",
}  # fmt: skip
ARGS = ["lipschitz-mnist-conv", "--quick", "--no-progress", "--jobs", "1"]
for _name, _value in SETTINGS.items():
    ARGS += ["--set", f"{_name}={_value}"]
TIMING = ["seconds_per_epoch"]


@pytest.fixture(scope="module", autouse=True)
def _mnist() -> None:
    from structnets import data
    from structnets.data.files import DataFileError

    try:
        data.load("mnist")
    except (DataFileError, OSError) as error:  # no copy and no network
        pytest.skip(f"MNIST not available: {error}")


def _saved_epoch(folder: Path) -> int:
    files = list(folder.glob("*.ckpt")) if folder.exists() else []
    if not files:
        return 0
    try:
        state = ckpt.load(files[0])
    except (ckpt.CheckpointUnusable, OSError):
        return 0
    return 0 if state is None else int(state["next_epoch"])


def test_kill_9_inside_a_unit_resumes_at_its_last_epoch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reference = tmp_path / "reference"
    assert main(["run", *ARGS, "--out", str(reference)]) == 0
    assert not (reference / "checkpoints").exists()  # removed once the unit's result was committed

    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "structnets", "run", *ARGS, "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    try:
        while _saved_epoch(out / "checkpoints") < 3:
            if proc.poll() is not None:
                pytest.fail(f"the run ended before it was killed ({proc.returncode}): {proc.stderr.read()}")
            if time.monotonic() > deadline:
                pytest.fail("no checkpoint of epoch 3 within 120 s")
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    killed_at = _saved_epoch(out / "checkpoints")
    assert 3 <= killed_at < 30
    assert not (out / "results.csv").exists()

    loaded: list[int] = []
    load = ckpt.load

    def spy(path: Path) -> dict | None:
        state = load(path)
        loaded.append(-1 if state is None else int(state["next_epoch"]))
        return state

    monkeypatch.setattr(ckpt, "load", spy)
    assert main(["run", *ARGS, "--out", str(out)]) == 0
    assert loaded == [killed_at]  # the unit resumed from the epoch it had saved, not from the start
    assert not (out / "checkpoints").exists()
    ours, theirs = pd.read_csv(out / "results.csv"), pd.read_csv(reference / "results.csv")
    pd.testing.assert_frame_equal(ours.drop(columns=TIMING), theirs.drop(columns=TIMING))
