"""The claims table: statistics, run-folder errors, real quick runs against their reports, and the CLI."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from structnets.claims import (
    CLAIMS,
    COLUMNS,
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


def test_evidence_unit_keys_default_empty_and_stored_as_a_tuple() -> None:
    assert Evidence("x", REPRODUCED, "t", 3).unit_keys == ()
    assert Evidence("x", REPRODUCED, "t", 3, ["a=1", "a=2"]).unit_keys == ("a=1", "a=2")  # type: ignore[arg-type]


def test_keys_of_gives_the_key_column_in_row_order_without_repeats() -> None:
    from structnets.claims.evidence import keys_of

    frame = pd.DataFrame({"key": ["b", "a", "b", None], "x": [1, 2, 3, 4]})
    assert keys_of(frame) == ("b", "a")
    assert keys_of(frame[frame["x"] > 5]) == ()
    assert keys_of(pd.DataFrame({"x": [1]})) == ()


@pytest.mark.parametrize(
    ("keys", "error", "match"),
    [
        ("a=1", TypeError, "`unit_keys` must be a tuple"),
        (("a=1", ""), TypeError, "non-empty strings"),
        (("a=1", 2), TypeError, "non-empty strings"),
        (("a=1", "a=1"), ValueError, "must not repeat a key, got 'a=1'"),
        (("a=1", "a=2", "a=3", "a=4"), ValueError, "at most `units` = 3 rows, got 4"),
    ],
)
def test_evidence_rejects_bad_unit_keys(keys: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        Evidence("x", REPRODUCED, "t", 3, keys)  # type: ignore[arg-type]


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


RUNS = ("lipschitz-density", "dlor-universality", "smooth-constant-depth")
"""Three cheap experiments (≈ 10–50 s each at their quick presets) run once for this module."""
LACKING_UNITS: tuple[str, ...] = ()
"""Claims of these experiments that no unit of theirs bears on (their test says what would test them)."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real quick runs of :data:`RUNS` through the command line, one folder each."""
    base = tmp_path_factory.mktemp("claims")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = {}
    for name in RUNS:
        out[name] = base / name
        subprocess.run(
            [sys.executable, "-m", "structnets", "run", name, "--quick", "--jobs", "1", "--out", str(out[name])],
            check=True,
            capture_output=True,
            env=env,
            timeout=900,
        )
    return out


@pytest.fixture(scope="module")
def table(runs: dict[str, Path]) -> pd.DataFrame:
    return claims_table(list(runs.values()))


def _report(runs: dict[str, Path], name: str) -> str:
    return (runs[name] / "table.md").read_text(encoding="utf-8")


def test_claims_from_real_runs(runs: dict[str, Path], table: pd.DataFrame) -> None:
    assert list(table["id"]) == [claim.id for claim in CLAIMS]
    assert set(table["verdict"]) <= set(VERDICTS)
    decided = table[table["experiment"].isin(RUNS)]
    assert set(decided["preset"]) <= {"quick", "custom"}
    # the columns every claim of these experiments reads exist in the real results: none is "not tested",
    # but the rows whose units these experiments do not run (saying so)
    lacking = decided["id"].isin(LACKING_UNITS)
    assert set(decided[lacking]["id"]) == set(LACKING_UNITS) and (decided[lacking]["verdict"] == NOT_TESTED).all()
    assert decided[lacking]["test"].str.contains("Would test it").all()
    decided = decided[~lacking]
    assert (decided["verdict"] != NOT_TESTED).all(), decided[decided["verdict"] == NOT_TESTED]["id"].tolist()
    assert (decided["units"] > 0).all()
    # the rows a claim names (every 004 claim names them) are rows of its run
    for _, row in decided.iterrows():
        keys = set(pd.read_csv(runs[row["experiment"]] / "results.csv")["key"])
        assert set(row["unit keys"]) <= keys and (row["unit keys"] or not row["id"].startswith("004-")), row["id"]
    others = table[~table["experiment"].isin(RUNS)]
    assert (others["verdict"] == NOT_TESTED).all() and (others["run"] == "—").all()
    page = claims_markdown(table)
    line = page.split("Verdicts: ")[1].split("\n")[0].rstrip(".")
    assert sum(int(part.rsplit(": ", 1)[1]) for part in line.split("; ")) == len(CLAIMS)
    for path in runs.values():
        assert str(path) in page
    assert (
        "How a verdict is decided. Each claim is decided by one rule of `structnets.claims.rules`" in page
        and ":class:" not in page
    )


def test_verdicts_agree_with_the_smooth_constant_depth_report(runs: dict[str, Path], table: pd.DataFrame) -> None:
    found = re.search(r"rate reproduced in (\d+) of (\d+) cells", _report(runs, "smooth-constant-depth"))
    assert found is not None
    reproduced, cells = int(found[1]), int(found[2])
    row = table.set_index("id").loc["002-constant-depth-construction"]
    assert f"{reproduced} of {cells} cells reproduced" in row["ours"]
    assert (row["verdict"] == REPRODUCED) == (reproduced == cells)


def test_verdicts_agree_with_the_dlor_universality_report(runs: dict[str, Path], table: pd.DataFrame) -> None:
    report = _report(runs, "dlor-universality")
    by_id = table.set_index("id")
    cheaper = "deep is cheaper in every target" in report
    assert cheaper or "deep is not cheaper in every target" in report
    # the claim is stricter than the report: deep must also beat a wide network built for g directly
    if by_id.loc["001-depth-over-width", "verdict"] == REPRODUCED:
        assert cheaper
    # the blind spot: the report says whether the rank-1 DLoR network goes below the floor on the saddle
    below = "goes below it from J" in report
    assert below or "goes below it at no J run" in report
    if not below:
        assert by_id.loc["001-universality", "verdict"] != REPRODUCED


def test_verdicts_agree_with_the_lipschitz_density_report(runs: dict[str, Path], table: pd.DataFrame) -> None:
    report = _report(runs, "lipschitz-density")
    by_id = table.set_index("id")
    found = re.search(r"Exact construction: largest sup error ([0-9.e+-]+);", report)
    assert found is not None
    # 'exact' is the network's own rounding bound now, which a sup error at 1e-12 is within
    if float(found[1]) <= 1e-12:
        assert by_id.loc["004-maxmin-exact", "verdict"] == REPRODUCED
    certified = re.search(r"Every trained model certified: largest `L upper` [0-9.e+-]+ \((≤ 1|NOT ≤ 1)\)", report)
    assert certified is not None
    assert (by_id.loc["004-fixed-width-density", "verdict"] == REFUTED) == (certified[1] == "NOT ≤ 1")


def test_two_runs_of_one_experiment_are_refused(runs: dict[str, Path], tmp_path: Path) -> None:
    run = runs["lipschitz-density"]
    with pytest.raises(ClaimsError, match=r"two runs of 'lipschitz-density' .*pass one per experiment"):
        claims_table([run, run])
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    with pytest.raises(ClaimsError, match=r"two runs of 'lipschitz-density'.*copy"):
        claims_table([run, copy])


def test_a_run_no_claim_uses_is_refused(runs: dict[str, Path]) -> None:
    only_uci = [claim for claim in CLAIMS if claim.experiment == "lowrank-uci"]
    with pytest.raises(
        ClaimsError, match=r"density.* holds 'lipschitz-density', which no claim uses; claims use: lowrank-uci"
    ):
        claims_table([runs["lipschitz-density"]], only_uci)


@pytest.mark.parametrize("damage", ["missing", "garbage", "truncated"])
def test_a_finished_run_with_a_bad_results_database_is_refused(
    runs: dict[str, Path], tmp_path: Path, damage: str
) -> None:
    copy = tmp_path / "run"
    shutil.copytree(runs["lipschitz-density"], copy)
    database = copy / "results.db"
    if damage == "missing":
        database.unlink()
    elif damage == "garbage":
        database.write_bytes(b"not a database at all")
    else:
        database.write_bytes(database.read_bytes()[:3000])
    with pytest.raises(ClaimsError, match=r"run\b.*results\.db.*re-run the experiment into a new folder") as caught:
        claims_table([copy])
    assert str(copy) in str(caught.value)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "structnets", "claims", *args], capture_output=True, text=True, timeout=300
    )


def test_the_cli_prints_and_writes_the_table(runs: dict[str, Path], tmp_path: Path) -> None:
    out, csv = tmp_path / "claims.md", tmp_path / "claims.csv"
    result = _cli(*(str(p) for p in runs.values()), "--out", str(out), "--csv", str(csv))
    assert result.returncode == 0, result.stderr
    assert "004-maxmin-exact" in out.read_text() and "004-maxmin-exact" in result.stdout
    assert list(pd.read_csv(csv).columns) == list(COLUMNS)
    quiet = _cli("-q", str(runs["lipschitz-density"]))
    assert quiet.returncode == 0 and "004-maxmin-exact" in quiet.stdout and quiet.stderr == ""


def test_the_cli_reports_a_bad_folder_in_one_line_with_status_2(runs: dict[str, Path], tmp_path: Path) -> None:
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    (unfinished / "run_info.json").write_text(json.dumps({"experiment": "lipschitz-density", "status": "running"}))
    run = runs["lipschitz-density"]
    for args, message in (
        ([str(tmp_path / "nope")], "does not exist"),
        ([str(unfinished)], "incomplete run"),
        ([str(run), str(run)], "two runs of"),
    ):
        result = _cli(*args)
        assert result.returncode == 2, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr, result.stderr
        assert result.stdout == ""
