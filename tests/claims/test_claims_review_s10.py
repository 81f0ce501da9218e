"""Claims evaluators fixed after the session-10 review of lowrank-uci and rank-bounds."""

from __future__ import annotations

import numpy as np
import pandas as pd
from test_evaluators import _noise, uci, verdict

from structnets.claims.bounds import _p_columns
from structnets.claims.evidence import NOT_TESTED, REPRODUCED


def test_uci_not_worse_is_not_tested_when_the_grid_chose_depth_1() -> None:
    """At depth 1 the low-rank net is the dense net (scores equal in every fold): "not worse" by construction."""
    dense = 0.9 + _noise(1, 0.01)
    table = uci("iris", {"lowrank": dense.copy(), "dense": dense})
    assert verdict("000-uci-iris", table) == REPRODUCED  # no depth column: decided as before
    assert verdict("000-uci-iris", table.assign(depth=2)) == REPRODUCED
    assert verdict("000-uci-iris", table.assign(depth=1)) == NOT_TESTED


def test_p_columns_read_the_exponent_form_rank_bounds_writes() -> None:
    """``rs1e-05_sc`` (p = 1e-05 written with :g) was skipped: the smallest p read 0.5 instead of 1e-05."""
    frame = pd.DataFrame(columns=["rs1e-05_sc", "rs0_5_sc", "rs2_sc", "rs3e+20_sc", "spectral_sc"])
    assert _p_columns(frame) == {1e-05: "rs1e-05_sc", 0.5: "rs0_5_sc", 2.0: "rs2_sc", 3e20: "rs3e+20_sc"}
    assert np.isclose(min(_p_columns(frame)), 1e-05)
