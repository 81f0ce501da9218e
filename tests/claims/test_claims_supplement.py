"""A supplementary run folder read beside the run it extends (issue 31): merged only when it differs in the
config class's ``supplement_fields`` alone and shares no unit key; every other second folder is refused."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from structnets.claims import CLAIMS, NOT_TESTED, ClaimsError, claims_table
from structnets.experiments.rank_bounds import RankBoundsConfig
from structnets.experiments.rank_bounds import run as run_rank_bounds

BOUNDS = [claim for claim in CLAIMS if claim.experiment == "rank-bounds"]

TINY = replace(
    RankBoundsConfig.quick(),
    linear_depths=(2,),
    linear_weight_decays=(0.0, 0.05),
    linear_steps=1000,  # flow factor (1 − 0.1·0.05)^2000 < 0.01: judged by 003-weight-decay
    linear_lr=0.1,
    norm_depths=(2, 3, 4),
    norm_width=8,
    norm_rank=2,
    norm_seeds=(0, 1),
    ps=(0.0, 2.0),
)
"""A config whose deep-linear and fixed-norm parts run in seconds (no data set, no MLP training)."""


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("supplement")
    out = {
        "linear": base / "linear",
        "norm": base / "norm",
        "norm-wide": base / "norm-wide",
    }
    run_rank_bounds(replace(TINY, parts=("deep-linear",)), out["linear"], jobs=1)
    run_rank_bounds(replace(TINY, parts=("fixed-norm",)), out["norm"], jobs=1)
    run_rank_bounds(replace(TINY, parts=("fixed-norm",), norm_width=6, norm_depths=(2,)), out["norm-wide"], jobs=1)
    return out


def test_a_supplementary_folder_is_merged(folders: dict[str, Path]) -> None:
    alone = claims_table([folders["linear"]], BOUNDS).set_index("id")
    assert alone.loc["003-depth-dependence", "verdict"] == NOT_TESTED
    table = claims_table([folders["linear"], folders["norm"]], BOUNDS).set_index("id")
    # each part decides its own row from the merged results
    assert table.loc["003-weight-decay", "units"] == 2 and table.loc["003-depth-dependence", "units"] == 12
    assert table.loc["003-depth-dependence", "verdict"] != NOT_TESTED
    # the folder with more rows is the run; the row names the other as its supplement
    run, preset = table.loc["003-weight-decay", "run"], table.loc["003-weight-decay", "preset"]
    assert run == str(folders["norm"]) and f"with {folders['linear']} (custom)" in preset
    # the order the folders are given in changes nothing
    again = claims_table([folders["norm"], folders["linear"]], BOUNDS).set_index("id")
    assert list(again["verdict"]) == list(table["verdict"]) and list(again["ours"]) == list(table["ours"])


def test_a_second_folder_that_is_no_supplement_is_refused(folders: dict[str, Path]) -> None:
    with pytest.raises(ClaimsError, match=r"two runs of 'rank-bounds' .*shares no unit key \(12 shared"):
        claims_table([folders["norm"], folders["norm"]], BOUNDS)
    with pytest.raises(
        ClaimsError, match=r"differs only in \['parts'\] \(these differ in \['norm_depths', 'norm_width'\]\)"
    ):
        claims_table([folders["linear"], folders["norm-wide"]], BOUNDS)
