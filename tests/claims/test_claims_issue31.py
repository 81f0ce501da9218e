"""The claim rows of issue 31 (000-flops, 001 decompositions and spectra, 003 depth and p-interpolation)
on results tables whose right verdict is known: one reproduced, one not, and not tested."""

from __future__ import annotations

from typing import Any

import pandas as pd

from structnets.analysis import cost
from structnets.claims import CLAIMS, NOT_TESTED, REFUTED, REPRODUCED, VERDICTS, Evidence
from structnets.models import bottleneck_width, mlp

BY_ID = {claim.id: claim for claim in CLAIMS}


def evidence(claim_id: str, results: pd.DataFrame, config: Any = None) -> Evidence:
    found = BY_ID[claim_id].evaluate(results, config)
    assert isinstance(found, Evidence) and found.verdict in VERDICTS
    assert found.test and found.ours
    return found


# --- 000-flops ----------------------------------------------------------------------------------


def _efficiency_row(features: int, out: int, depth: int, width: int, ratio: float, batch: int = 8) -> dict[str, Any]:
    """An efficiency row as lowrank-uci's unit writes it: the FLOPs that analysis.cost counts on mlp()."""
    dense = cost(mlp(features, out, width, depth), (batch, features))
    low = cost(mlp(features, out, width, depth, bottleneck=ratio), (batch, features))
    return {
        "key": f"efficiency/{features}/{depth}/{width}",
        "stage": "efficiency",
        "features": features,
        "depth": depth,
        "width": width,
        "rank": bottleneck_width(width, ratio),
        "batch": batch,
        "flops_dense": dense.flops,
        "flops_lowrank": low.flops,
    }


def test_flops_counts_the_factorised_hidden_blocks() -> None:
    # 𝓗 = 48, 96: H = 𝓗/3 exactly; 𝓗 = 32: H = round(32/3) = 11 > 𝓗/3 (2H < 𝓗 holds)
    table = pd.DataFrame(
        [
            _efficiency_row(4, 3, 2, 48, 1 / 3),
            _efficiency_row(108, 2, 3, 96, 1 / 3),
            _efficiency_row(12, 1, 4, 48, 1 / 3),
            _efficiency_row(12, 1, 3, 32, 1 / 3),
        ]
    )
    whole = table["flops_lowrank"] / table["flops_dense"]
    assert (whole > 2 / 3).all()  # the dense input and output layers: the whole-network ratio is no test
    found = evidence("000-flops", table)
    assert found.verdict == REPRODUCED
    assert "≤ 2/3 in 3 of 3 rows" in found.ours and "counted = 2H/𝓗 in 4 of 4" in found.ours
    assert "1 rows with 𝓗/3 < H < 𝓗/2" in found.ours and "0.6875" in found.ours
    assert found.unit_keys == tuple(table["key"][:3])
    # a hidden block left dense in one network that claims H = 𝓗/3: its counted ratio is 1
    dense_block = table.copy()
    dense_block.loc[1, "flops_lowrank"] = dense_block.loc[1, "flops_dense"]
    assert evidence("000-flops", dense_block).verdict == REFUTED
    # only rows whose H exceeds 𝓗/3, or no hidden block at all: nothing the claim covers
    assert evidence("000-flops", table.iloc[3:]).verdict == NOT_TESTED
    assert evidence("000-flops", pd.DataFrame([_efficiency_row(4, 3, 1, 48, 1 / 3)])).verdict == NOT_TESTED
