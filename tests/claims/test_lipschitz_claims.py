"""The 1-Lipschitz ResNet rows (paper 004) on constructed results whose verdict is known: Theorem 3.1
(density as width and depth grow), the affine-layer constraint cost against depth, and the unit keys
every 004 evaluator names for the claims page's links."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from structnets.claims import CLAIMS, NOT_REPRODUCED, NOT_TESTED, REFUTED, REPRODUCED, Evidence
from structnets.claims import lipschitz as lipschitz_claims

BY_ID = {claim.id: claim for claim in CLAIMS}


def evidence(claim_id: str, results: pd.DataFrame, config: Any = None) -> Evidence:
    found = BY_ID[claim_id].evaluate(results, config)
    assert found.test and found.ours
    assert set(found.unit_keys) <= set(results.get("key", pd.Series(dtype=object)))
    return found


# --- Theorem 3.1: gradient-step networks dense as width and depth grow -------------------------------

CHAIN = ((4, 1), (8, 2), (16, 4), (32, 8), (64, 16), (128, 32))
"""(width, depth) pairs growing together."""


def _unbounded(medians: tuple[float, ...], *, upper: float = 1.0, pairs: tuple[tuple[int, int], ...] = CHAIN):
    """lipschitz-density rows: an exact unit, fixed-width trained units, and Theorem 3.1 units along ``pairs``."""
    rows = [{"key": "1d/exact", "target": "1d", "model": "exact", "depth": 3, "width": 8, "sup_error_median": 1e-13,
             "lipschitz_upper": 1.7}]  # fmt: skip
    rows += [
        {"key": f"1d/trained/depth={d}", "target": "1d", "model": "trained", "depth": d, "width": 4,
         "sup_error_median": 0.1 / d, "lipschitz_upper": 1.0}
        for d in (1, 2, 4, 8)
    ]  # fmt: skip
    rows += [
        {"key": f"1d/gradient-step/width={w}/depth={d}", "target": "1d", "model": "gradient-step", "depth": d,
         "width": w, "sup_error_median": m, "lipschitz_upper": upper}
        for (w, d), m in zip(pairs, medians, strict=True)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_unbounded_density_reproduced_only_while_the_error_still_falls() -> None:
    claim = "004-unbounded-density"
    falling = _unbounded(tuple(0.2 * 0.6**i for i in range(6)))
    found = evidence(claim, falling)
    assert found.verdict == REPRODUCED and found.units == 6
    assert found.unit_keys == tuple(f"1d/gradient-step/width={w}/depth={d}" for w, d in CHAIN)
    # lower at the largest than at the smallest, but flat over the upper half: not reproduced
    assert evidence(claim, _unbounded((0.2, 0.1, 0.06, 0.06, 0.06, 0.06))).verdict == NOT_REPRODUCED
    assert evidence(claim, _unbounded(tuple(0.2 * 1.1**i for i in range(6)))).verdict == NOT_REPRODUCED
    # a model outside the 1-Lipschitz class the theorem is about refutes, whatever its error
    assert evidence(claim, _unbounded(tuple(0.2 * 0.6**i for i in range(6)), upper=1.01)).verdict == REFUTED


def test_unbounded_density_is_not_tested_without_its_family_or_a_growing_grid() -> None:
    claim = "004-unbounded-density"
    only_fixed_width = _unbounded(tuple(0.2 * 0.6**i for i in range(6))).query("model != 'gradient-step'")
    found = evidence(claim, only_fixed_width)
    assert found.verdict == NOT_TESTED and "Theorem 4.1's fixed width" in found.test
    # width up while depth goes down: not a grid along which both grow
    crossed = _unbounded((0.2, 0.1, 0.05), pairs=((4, 8), (8, 4), (16, 2)))
    assert evidence(claim, crossed).verdict == NOT_TESTED
    # the fixed-width density row reads only the fixed-width units, never Theorem 3.1's
    assert evidence("004-fixed-width-density", _unbounded((0.2, 0.3, 0.4, 0.5, 0.6, 0.7))).units == 4


# --- the affine layers' constraint cost grows faster with depth -------------------------------------

DEPTHS = (5, 10, 20)


def _timed(affine_per_block: float, plain_per_block: float, *, noise: float = 0.0, seeds: int = 3, rng=None,
           schema: str = "mnist") -> pd.DataFrame:  # fmt: skip
    """Training units whose seconds per epoch are 1 + per_block·depth (× lognormal noise of sd ``noise``),
    per model, loss, depth and seed; in lipschitz-mnist's columns (with an unconstrained model and a timing
    unit beside them) or lipschitz-moons' (``variant``, train share)."""
    rng = rng if rng is not None else np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    for model, per_block in (("fixed-width", affine_per_block), ("gradient-step", plain_per_block)):
        for loss in ("margin-ce", "scaled-ce"):
            for depth in DEPTHS:
                for seed in range(seeds):
                    time = (1.0 + per_block * depth) * float(np.exp(noise * rng.standard_normal()))
                    rows.append({"key": f"train/{model}/{loss}/depth={depth}/seed={seed}", "stage": "train",
                                 "model": model, "loss": loss, "lift": "orthogonal", "width": 100, "depth": depth,
                                 "seed": seed, "n_train": 60000, "epochs": 20, "seconds_per_epoch": time})  # fmt: skip
    rows.append({"key": "train/unconstrained/scaled-ce/depth=5/seed=0", "stage": "train", "model": "unconstrained",
                 "loss": "scaled-ce", "lift": "linear", "width": 100, "depth": 5, "seed": 0, "n_train": 60000,
                 "epochs": 20, "seconds_per_epoch": 0.5})  # fmt: skip
    rows.append({"key": "timing/depth=5/width=100", "stage": "timing", "depth": 5, "width": 100, "threads": 2})
    frame = pd.DataFrame(rows)
    if schema == "moons":
        frame = frame[frame["stage"] == "train"].drop(columns=["stage", "loss", "lift", "threads"])
        frame = frame.rename(columns={"model": "variant"}).assign(train_fraction=0.2, sweep="depth")
    return frame


def test_affine_cost_growing_faster_with_depth_is_reproduced() -> None:
    found = evidence("004-affine-constraint-cost", _timed(0.2, 0.1, noise=0.05))
    assert found.verdict == REPRODUCED, found
    assert found.units == 2 * 2 * len(DEPTHS) * 3  # both models' units; the unconstrained one and timing not used
    assert all(key.startswith(("train/fixed-width/", "train/gradient-step/")) for key in found.unit_keys)
    assert "2 torch threads" in found.ours and "extra seconds per epoch per added block 0.1" in found.ours
    assert evidence("004-affine-constraint-cost", _timed(0.2, 0.1, noise=0.05, schema="moons")).verdict == REPRODUCED


def test_affine_cost_growing_slower_is_refuted_and_alike_is_not_reproduced() -> None:
    claim = "004-affine-constraint-cost"
    assert evidence(claim, _timed(0.1, 0.2, noise=0.05)).verdict == REFUTED
    # higher at every depth but by a constant: it does not grow faster with depth
    alike = _timed(0.1, 0.1, noise=0.05)
    alike.loc[alike["model"] == "fixed-width", "seconds_per_epoch"] += 0.5
    assert evidence(claim, alike).verdict == NOT_REPRODUCED


def test_affine_cost_is_not_tested_without_both_models_at_two_depths() -> None:
    claim = "004-affine-constraint-cost"
    no_affine = _timed(0.2, 0.1).query("model != 'fixed-width'")
    found = evidence(claim, no_affine)
    assert found.verdict == NOT_TESTED and "models=fixed-width,gradient-step" in found.test
    one_depth = _timed(0.2, 0.1).query("depth == 5 or stage == 'timing'")
    assert evidence(claim, one_depth).verdict == NOT_TESTED
    assert evidence(claim, pd.DataFrame()).verdict == NOT_TESTED
    untimed = _timed(0.2, 0.1)
    untimed.loc[untimed["model"] == "fixed-width", "seconds_per_epoch"] = np.nan
    assert evidence(claim, untimed).verdict == NOT_TESTED


@pytest.mark.parametrize(("affine", "reproduced_at_least", "reproduced_at_most"), [(0.16, 0.9, 1.0), (0.1, 0.0, 0.1)])
def test_affine_cost_rule_on_simulated_timings(affine: float, reproduced_at_least: float, reproduced_at_most: float):
    """Over 100 simulated runs (10 % timing noise, 2 losses × 3 seeds): a truly faster-growing affine cost
    (0.16 against 0.1 s per block) is reproduced ≥ 90 % of the time; an equal growth ≤ 10 % (level 5 %)."""
    rng = np.random.default_rng(1)
    verdicts = [
        BY_ID["004-affine-constraint-cost"].evaluate(_timed(affine, 0.1, noise=0.1, rng=rng), None).verdict
        for _ in range(100)
    ]
    share = verdicts.count(REPRODUCED) / len(verdicts)
    assert reproduced_at_least <= share <= reproduced_at_most, share
    assert REFUTED not in verdicts or affine == 0.1


def test_within_group_slope_matches_the_fixed_effects_formula() -> None:
    x = np.array([1.0, 2.0, 3.0, 1.0, 2.0, 3.0])
    y = np.array([1.0, 3.0, 5.2, 10.0, 12.1, 13.9])
    groups = np.array(["a", "a", "a", "b", "b", "b"])
    slope, se, df = lipschitz_claims._within_slope(x, y, groups)
    # two intercepts and one slope by least squares, in float64
    design = np.column_stack([x, groups == "a", groups == "b"]).astype(float)
    beta, residual, *_ = np.linalg.lstsq(design, y, rcond=None)
    assert slope == pytest.approx(beta[0], rel=1e-12) and df == 3
    covariance = residual[0] / 3 * np.linalg.inv(design.T @ design)
    assert se == pytest.approx(np.sqrt(covariance[0, 0]), rel=1e-10)


# --- every 004 evaluator names the rows it used -----------------------------------------------------


def test_certificate_rows_name_the_models_they_judged() -> None:
    frame = pd.DataFrame(
        {"key": ["train/gs/0", "train/unc/0"], "model": ["gradient-step", "unconstrained"],
         "lipschitz_upper": [1.0, 50.0], "lipschitz_lower": [0.99, 20.0]}
    )  # fmt: skip
    assert evidence("004-one-lipschitz-mnist", frame).unit_keys == ("train/gs/0",)
    conv = pd.DataFrame(
        {"key": ["a", "b"], "model": ["gradient-step-conv"] * 2, "lipschitz_upper": [1.0, 1.0],
         "lipschitz_lower": [0.9, 0.9], "certified_1.58": [0.5, 0.6], "accuracy": [0.97, 0.98],
         "n_train": [60000] * 2, "n_test": [10000] * 2, "epochs": [20] * 2}
    )  # fmt: skip
    assert evidence("004-conv-one-lipschitz", conv).unit_keys == ("a", "b")
    judged = evidence("004-conv-mnist-certified", conv)
    assert judged.unit_keys == ("a", "b") and judged.units == 2  # every seed of the one configuration


def _conv_runs(certified: list[float], clean: list[float]) -> pd.DataFrame:
    n = len(certified)
    return pd.DataFrame(
        {"key": [f"train/gradient-step-conv/seed={i}" for i in range(n)], "model": ["gradient-step-conv"] * n,
         "lipschitz_upper": [0.99999] * n, "lipschitz_lower": [0.97] * n, "certified_1.58": certified,
         "accuracy": clean, "n_train": [60000] * n, "n_test": [10000] * n, "epochs": [60] * n}
    )  # fmt: skip


def test_conv_target_reads_the_mean_over_seeds_not_the_best_seed() -> None:
    # five seeds whose mean meets 63 % / 97.5 %: reproduced
    assert (
        evidence("004-conv-mnist-certified", _conv_runs([0.632, 0.634, 0.631, 0.635, 0.633], [0.976] * 5)).verdict
        == REPRODUCED
    )
    # the best seed alone would pass (64 %), the mean (62.6 %) does not
    low = evidence("004-conv-mnist-certified", _conv_runs([0.64, 0.62, 0.62, 0.625, 0.625], [0.976] * 5))
    assert low.verdict == NOT_REPRODUCED and "62.60 %" in low.ours and "missed" in low.ours
    # clean accuracy below 97.5 % fails the target although certified accuracy meets it
    assert evidence("004-conv-mnist-certified", _conv_runs([0.64] * 5, [0.974] * 5)).verdict == NOT_REPRODUCED
    # one seed meeting the target is not enough seeds (policy `enough_seeds`)
    one = evidence("004-conv-mnist-certified", _conv_runs([0.64], [0.98]))
    assert one.verdict == NOT_REPRODUCED and "target met" in one.ours and "1 seed(s) < 5" in one.ours
