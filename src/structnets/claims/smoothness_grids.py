"""The two N grids of the smoothness-rates approximation part (issue 31, item 4).

The full preset's grid is N = 40–400 (five even log steps); the earlier one was 40, 80, 160, 320, 640,
and its top is where the smooth curves flatten. A supplementary folder of the N = 640 units
(``structnets run smoothness-rates --set parts=approximation,relu-floor approx_parameters=640``) read
beside the full run gives the grid 40–640; the claims show every cell's whole-grid and upper-half
slopes over both grids, the Tanh / certified ReLU-floor ratio at each grid's largest N, and say in the
verdict text over which grid the flattening is there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def approximation_grids(long: pd.DataFrame, config: Any) -> list[tuple[str, pd.DataFrame]]:
    """The N grids the approximation rows span: the full preset's (N up to its largest, 400) and, when the
    rows reach beyond it (a supplementary folder adding N = 640, the end of the earlier 40–640 grid), the
    whole recorded grid; each as (label, the long table's rows on it: every non-approximation row kept).

    A row's nominal N is the entry of ``config.approx_parameters`` whose width it was trained at
    (:func:`width_for_parameters` at its d and depth); its ``parameters`` column is the exact count.
    """
    from ..experiments.smoothness_rates.config import SmoothnessRatesConfig, width_for_parameters

    approx = long["part"] == "approximation"
    grid = tuple(getattr(config, "approx_parameters", ()) or ())
    nominal = pd.Series(np.nan, index=long.index)
    for N in grid:
        for (d, depth), group in long[approx].groupby(["d", "depth"]):
            hit = group.index[group["width"] == width_for_parameters(N, int(d), int(depth))]
            nominal.loc[hit] = N
    nominal = nominal.fillna(long["parameters"].astype(float))
    if not approx.any():
        return [("no approximation rows", long)]
    preset_largest = max(SmoothnessRatesConfig().approx_parameters)
    low, high = int(nominal[approx].min()), int(nominal[approx].max())
    whole = [(f"N = {low}–{high}", long)]
    if high <= preset_largest:
        return whole
    return [(f"N = {low}–{preset_largest}", long[~approx | (nominal <= preset_largest)]), *whole]


def grids_sentence(counts: list[tuple[str, int, int, int]], verdicts: dict[str, str] | None = None) -> str:
    """The verdict text's sentence on the flattening over each N grid, and (``verdicts`` given) on the
    verdict of each."""
    if len(counts) < 2:
        return ""
    parts = [
        f"over {label} in {flat} of {total} cells ({limited} of those optimisation-limited)"
        for label, flat, total, limited in counts
    ]
    if verdicts is None:
        return (
            " Both N grids of the approximation cells: the upper half of the grid is significantly flatter than "
            "the whole grid " + "; ".join(parts) + "."
        )
    same = len(set(verdicts.values())) == 1
    return (
        " Both N grids (the full preset's and, with the supplementary units, the earlier grid's end): the upper half "
        "of the grid is significantly flatter than the whole grid "
        + "; ".join(parts)
        + "; the verdict is drawn on the whole recorded grid"
        + (
            f" and is the same on {counts[0][0]} alone."
            if same
            else f" ({counts[0][0]} alone: {verdicts.get(counts[0][0], '—')})."
        )
    )


__all__ = ["approximation_grids", "grids_sentence"]
