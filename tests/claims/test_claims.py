"""The claims table: verdict logic on tables with known answers, run-folder errors, and one real run."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from structnets.claims import (
    CLAIMS,
    NOT_REPRODUCED,
    NOT_TESTED,
    REFUTED,
    REPRODUCED,
    VERDICTS,
    ClaimsError,
    Evidence,
    claims_markdown,
    claims_table,
    paired_t_test,
)
from structnets.claims import lipschitz as lipschitz_claims
from structnets.claims import lowrank as lowrank_claims

CLAIMS_BY_ID = {claim.id: claim for claim in CLAIMS}


def test_claim_ids_are_unique_and_name_registered_experiments() -> None:
    from structnets import experiments

    assert len(CLAIMS_BY_ID) == len(CLAIMS)
    names = set(experiments.names())
    for claim in CLAIMS:
        assert claim.experiment in names, claim.id
        assert claim.id[:3] in {"000", "001", "002", "003", "004"}


def test_paired_t_test_matches_the_formula() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=12), rng.normal(size=12)
    result = paired_t_test(a, b)
    d = a - b
    t = d.mean() / (d.std(ddof=1) / math.sqrt(len(d)))
    assert result.t == pytest.approx(t, rel=1e-12)
    assert result.p == pytest.approx(2 * stats.t.sf(abs(t), len(d) - 1), rel=1e-10)
    assert result.pairs == 12 and result.mean_difference == pytest.approx(d.mean())


def test_paired_t_test_degenerate_cases() -> None:
    same = paired_t_test(np.ones(5), np.ones(5))
    assert (same.t, same.p, same.significant()) == (0.0, 1.0, False)
    shifted = paired_t_test(np.ones(5) + 0.5, np.ones(5))
    assert shifted.t == math.inf and shifted.significant()
    assert not paired_t_test(np.ones(1), np.zeros(1)).significant()
    with pytest.raises(ValueError, match="one shape"):
        paired_t_test(np.ones(3), np.ones(4))


def test_evidence_rejects_an_unknown_verdict() -> None:
    with pytest.raises(ValueError, match="`verdict` must be one of"):
        Evidence("x", "sort of", "t", 1)


def _cv_rows(dataset: str, task: str, low: np.ndarray, dense: np.ndarray) -> pd.DataFrame:
    metric = "accuracy" if task == "classification" else "rmse"
    records = []
    for fold, (lo, de) in enumerate(zip(low, dense)):
        for model, value in (("lowrank", lo), ("dense", de)):
            records.append(
                {
                    "stage": "cv",
                    "dataset": dataset,
                    "task": task,
                    "model": model,
                    "fold": fold,
                    "seed": 0,
                    metric: value,
                }
            )
    return pd.DataFrame(records)


@pytest.mark.parametrize(
    ("shift", "expected"),
    [(0.0, REPRODUCED), (-0.05, REFUTED), (+0.05, REPRODUCED)],
)
def test_uci_no_degradation_claim(shift: float, expected: str) -> None:
    rng = np.random.default_rng(1)
    dense = 0.9 + 0.01 * rng.normal(size=10)
    low = dense + shift + 0.001 * rng.normal(size=10)
    evidence = CLAIMS_BY_ID["000-uci-iris"].evaluate(_cv_rows("iris", "classification", low, dense), None)
    # a significant loss of accuracy refutes "not significantly worse"; a significant gain does not
    assert evidence.verdict == expected
    assert evidence.units == 20


@pytest.mark.parametrize(
    ("shift", "expected"),
    [(-0.03, REPRODUCED), (+0.03, REFUTED), (0.0, NOT_REPRODUCED)],
)
def test_bike_sharing_claim_needs_low_rank_significantly_better(shift: float, expected: str) -> None:
    rng = np.random.default_rng(2)
    dense = 0.1 + 0.005 * rng.normal(size=10)
    low = dense + shift + (0.0005 * rng.normal(size=10) if shift else 0.0)
    evidence = CLAIMS_BY_ID["000-uci-bike-sharing"].evaluate(_cv_rows("bike-sharing", "regression", low, dense), None)
    assert evidence.verdict == expected


def test_uci_claim_without_rows_is_not_tested() -> None:
    evidence = CLAIMS_BY_ID["000-uci-adult"].evaluate(_cv_rows("iris", "classification", np.ones(3), np.ones(3)), None)
    assert evidence.verdict == NOT_TESTED


def test_construction_claims_detect_a_violated_bound_and_a_wide_bottleneck() -> None:
    ok = pd.DataFrame(
        {
            "error": [0.1, 0.2],
            "bound": [0.2, 0.2],
            "ranks": ["1", "4 3"],
            "width": [12, 12],
            "unpadded_width": [12, 12],
            "padding": [0, 0],
            "paper_width": [20, 20],
        }
    )
    assert lowrank_claims._construction_bound(ok, None).verdict == REPRODUCED
    assert lowrank_claims._construction_bottleneck(ok, None).verdict == REPRODUCED
    broken = ok.assign(error=[0.1, 0.2000001], ranks=["1", "5 3"])
    assert lowrank_claims._construction_bound(broken, None).verdict == REFUTED
    assert lowrank_claims._construction_bottleneck(broken, None).verdict == REFUTED  # 3·5 > 12


def test_certificate_claim_refutes_a_bound_above_one_or_a_lower_bound_above_the_certificate() -> None:
    evaluate = lipschitz_claims._certified("model", ("gradient-step",))
    frame = pd.DataFrame(
        {"model": ["gradient-step", "unconstrained"], "lipschitz_upper": [1.0, 50.0], "lipschitz_lower": [0.99, 20.0]}
    )
    assert evaluate(frame, None).verdict == REPRODUCED  # the unconstrained model is not judged
    assert evaluate(frame.assign(lipschitz_upper=[1.0000001, 50.0]), None).verdict == REFUTED
    assert evaluate(frame.assign(lipschitz_lower=[1.0, 20.0], lipschitz_upper=[0.999, 50.0]), None).verdict == REFUTED


def test_no_run_folder_is_an_error() -> None:
    with pytest.raises(ClaimsError, match="at least one run folder"):
        claims_table([])


def test_missing_and_unfinished_run_folders_are_named(tmp_path: Path) -> None:
    with pytest.raises(ClaimsError, match="does not exist"):
        claims_table([tmp_path / "nope"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ClaimsError, match="no run_info.json"):
        claims_table([tmp_path / "empty"])
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    (unfinished / "run_info.json").write_text(
        json.dumps({"experiment": "lipschitz-density", "status": "interrupted", "units": {"total": 9, "finished": 4}})
    )
    with pytest.raises(ClaimsError, match=r"incomplete run .* 4 of 9 .*structnets run lipschitz-density"):
        claims_table([unfinished])
    (unfinished / "run_info.json").write_text("{not json")
    with pytest.raises(ClaimsError, match="unreadable"):
        claims_table([unfinished])


@pytest.fixture(scope="module")
def density_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real, small run of lipschitz-density through the command line."""
    out = tmp_path_factory.mktemp("claims") / "density"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run(
        [sys.executable, "-m", "structnets", "run", "lipschitz-density", "--quick", "--jobs", "1", "--out", str(out)],
        check=True,
        capture_output=True,
        env=env,
        timeout=600,
    )
    return out


def test_claims_from_a_real_run(density_run: Path) -> None:
    table = claims_table([density_run])
    assert list(table["id"]) == [claim.id for claim in CLAIMS]
    assert set(table["verdict"]) <= set(VERDICTS)
    decided = table[table["experiment"] == "lipschitz-density"]
    assert set(decided["preset"]) == {"quick"}
    # the exact max-min construction is exact in float64 on every quick target
    exact = table.set_index("id").loc["004-maxmin-exact"]
    assert exact["verdict"] == REPRODUCED and exact["units"] > 0
    others = table[table["experiment"] != "lipschitz-density"]
    assert (others["verdict"] == NOT_TESTED).all()
    page = claims_markdown(table)
    line = page.split("Verdicts: ")[1].split("\n")[0].rstrip(".")
    counted = sum(int(part.rsplit(": ", 1)[1]) for part in line.split("; "))
    assert counted == len(CLAIMS)
    assert str(density_run) in page


def test_two_runs_of_one_experiment_are_refused(density_run: Path) -> None:
    with pytest.raises(ClaimsError, match="two runs of 'lipschitz-density'"):
        claims_table([density_run, density_run])


def test_the_cli_prints_and_writes_the_table(density_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "claims.md"
    result = subprocess.run(
        [sys.executable, "-m", "structnets", "claims", str(density_run), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "004-maxmin-exact" in out.read_text()
    missing = subprocess.run(
        [sys.executable, "-m", "structnets", "claims", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert missing.returncode != 0 and "does not exist" in missing.stderr and "Traceback" not in missing.stderr
