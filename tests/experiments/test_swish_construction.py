"""swish-construction end to end on a tiny sweep: every measured error below its bound, report from the table alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from structnets.experiments import get
from structnets.experiments import swish_construction as swish
from structnets.experiments.swish_construction import SwishConstructionConfig

TINY = SwishConstructionConfig(
    targets=("power:1:1.5", "sine:1:3"),
    Ms_1d=(4, 8, 16),
    taus=(2.0, 8.0),
    lams=(64.0,),
    sweep_M_1d=8,
    grid_1d=1001,
)


def test_old_names_still_import() -> None:
    assert get("swish-construction") is swish.EXPERIMENT
    assert swish._report is swish.report_markdown and swish._units is swish.make_units


def test_swish_construction_end_to_end(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    results = swish.run(TINY, run_dir)
    assert len(results) == 2 * (3 + 2 + 1)
    # Theorem (Li et al., Sec. 4): the sup error of the explicit network is below its three-term bound.
    assert (results["error"] <= results["bound"]).all()
    assert (results["bound"] == results["taylor"] + results["leakage"] + results["product"]).all()
    m_sweep = results[results["sweep"] == "M"].sort_values(["target", "M"])
    for _, rows in m_sweep.groupby("target"):
        assert rows["taylor"].is_monotonic_decreasing  # c₄M^{−β} falls with M
    # The report reads the table alone: rendering it from results.csv without a config gives
    # table.md's text (the fixed τ and λ are read from the M-sweep rows).
    table = (run_dir / "table.md").read_text()
    saved = pd.read_csv(run_dir / "results.csv")
    assert swish.report_markdown(saved).strip() == table.strip()
    assert f"τ = {TINY.tau:g}, λ = {TINY.lam:g}" in table
    assert "Measured error ≤ bound in 12 of 12 units" in table
    assert {p.name for p in (run_dir / "figures").iterdir()} >= {"error_vs_M.png", "error_vs_tau.png"}
