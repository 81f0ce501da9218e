"""A run folder made on a machine with more memory still reports on a smaller one (session 10).

The configs' memory checks (``check_fits_in_memory``) ran when ``report`` rebuilt the stored
config, so a folder whose config asked for more memory than the reading machine has could not be
reported, read by ``load_results`` or put in a claims table there, though reading it allocates
nothing. A run that resumes the folder (and would allocate) still checks.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from toy_experiment import REGISTRY, ToyConfig

import structnets._validation as validation
from structnets.runner import load_results, report, run


def test_a_folder_reports_on_a_machine_with_less_memory_and_a_resume_still_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    config = ToyConfig.quick()  # arms=2: 16 bytes by the toy's check
    run("toy", config, out, registry=REGISTRY)
    _, _, frame = load_results(out, registry=REGISTRY)
    monkeypatch.setattr(validation, "memory_bytes", lambda: 8)  # a machine with 8 bytes
    with pytest.raises(ValueError, match="more than this machine's memory"):
        ToyConfig.quick()  # the check is live
    _, stored, again = load_results(out, registry=REGISTRY)
    assert stored == config and again.equals(frame)
    assert report(out, registry=REGISTRY)
    # the skip ends with the read: the checks are on again afterwards
    with pytest.raises(ValueError, match="more than this machine's memory"):
        ToyConfig(arms=2)
    # a resume rebuilds the config to run it: refused here
    with pytest.raises(ValueError, match="more than this machine's memory"):
        run("toy", ToyConfig(arms=2, seeds=(0, 1), repeats=2), out, registry=REGISTRY)
