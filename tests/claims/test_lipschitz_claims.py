"""The 1-Lipschitz ResNet rows (paper 004) on constructed results whose verdict is known: Theorem 3.1
(density as width and depth grow), the affine-layer constraint cost against depth, and the unit keys
every 004 evaluator names for the claims page's links."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pandas as pd
import pytest

from structnets.claims import CLAIMS, NOT_REPRODUCED, NOT_TESTED, REFUTED, REPRODUCED, Evidence

BY_ID = {claim.id: claim for claim in CLAIMS}


def evidence(claim_id: str, results: pd.DataFrame, config: Any = None) -> Evidence:
    found = BY_ID[claim_id].evaluate(results, config)
    assert found.test and found.ours
    assert set(found.unit_keys) <= set(results.get("key", pd.Series(dtype=object)))
    return found


# --- Theorem 3.1: gradient-step networks dense as width and depth grow -------------------------------

CHAIN = ((2, 1), (3, 2), (4, 4), (6, 8), (8, 16))
"""(width, depth) pairs growing together (lipschitz-density's full preset)."""


def _unbounded(
    slopes: tuple[float, ...] = (-0.4, -0.4),
    *,
    upper: float = 1.0,
    pairs: tuple[tuple[int, int], ...] = CHAIN,
    seeds: int = 5,
    flat_from: int | None = None,
    sd: float = 0.3,
    rng: np.random.Generator | None = None,
) -> pd.DataFrame:
    """lipschitz-density rows: per target an exact unit, fixed-width trained units, and Theorem 3.1 units along
    ``pairs`` whose per-seed sup errors are exp(−2 + slope·log(w·d) + noise) (constant from pair ``flat_from`` on)."""
    rng = rng if rng is not None else np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    for t, slope in enumerate(slopes):
        target = f"t{t}"
        rows.append({"key": f"{target}/exact", "target": target, "model": "exact", "depth": 3, "width": 8,
                     "sup_error_median": 1e-13, "lipschitz_upper": 1.7})  # fmt: skip
        rows += [
            {"key": f"{target}/trained/depth={d}", "target": target, "model": "trained", "depth": d, "width": 4,
             "sup_error_median": 0.1 / d, "lipschitz_upper": 1.0}
            for d in (1, 2, 4, 8)
        ]  # fmt: skip
        for i, (w, d) in enumerate(pairs):
            size = np.log(w * d) if flat_from is None or i < flat_from else np.log(np.prod(pairs[flat_from]))
            errors = np.exp(-2 + slope * size + sd * rng.standard_normal(seeds))
            rows.append({"key": f"{target}/gradient-step/width={w}/depth={d}", "target": target,
                         "model": "gradient-step", "depth": d, "width": w, "sup_error_median": float(np.median(errors)),
                         "sup_errors": json.dumps(errors.tolist()), "lipschitz_upper": upper})  # fmt: skip
    return pd.DataFrame(rows)


def test_unbounded_density_reproduced_when_every_target_still_falls() -> None:
    claim = "004-unbounded-density"
    found = evidence(claim, _unbounded())
    assert found.verdict == REPRODUCED, found.ours
    assert found.units == 2 * len(CHAIN) and all("/gradient-step/" in key for key in found.unit_keys)
    assert "5 seeds" in found.ours and "over the upper half [(4, 4), (6, 8), (8, 16)]" in found.ours
    # lower at the largest than at the smallest, but flat over the upper half: not reproduced
    assert evidence(claim, _unbounded(flat_from=2, sd=0.05)).verdict == NOT_REPRODUCED
    # one target rising: not in every stratum
    assert evidence(claim, _unbounded((-0.4, 0.4), sd=0.05)).verdict == NOT_REPRODUCED
    # a rising error is not a refutation (the theorem is about existence), and 3 seeds decide nothing
    assert evidence(claim, _unbounded((0.4, 0.4))).verdict == NOT_REPRODUCED
    assert evidence(claim, _unbounded(seeds=3, sd=0.05)).verdict == NOT_REPRODUCED
    # a model outside the 1-Lipschitz class the theorem is about refutes, whatever its error
    assert evidence(claim, _unbounded(upper=1.01)).verdict == REFUTED


@pytest.mark.parametrize(("slope", "at_least", "at_most"), [(-0.4, 0.9, 1.0), (0.0, 0.0, 0.05)])
def test_unbounded_density_rule_on_simulated_runs(slope: float, at_least: float, at_most: float) -> None:
    """Over 100 simulated runs (4 targets, 5 seeds, noise sd 0.3 in log): a true fall of −0.4 per log size is
    reproduced ≥ 90 % of the time; no fall ≤ 5 %."""
    rng = np.random.default_rng(1)
    verdicts = [
        BY_ID["004-unbounded-density"].evaluate(_unbounded((slope,) * 4, rng=rng), None).verdict for _ in range(100)
    ]
    assert at_least <= verdicts.count(REPRODUCED) / len(verdicts) <= at_most


def test_unbounded_density_is_not_tested_without_its_family_or_a_growing_grid() -> None:
    claim = "004-unbounded-density"
    only_fixed_width = _unbounded().query("model != 'gradient-step'")
    found = evidence(claim, only_fixed_width)
    assert found.verdict == NOT_TESTED and "Theorem 4.1's fixed width" in found.test
    # width up while depth goes down: not a grid along which both grow
    crossed = _unbounded(pairs=((4, 8), (8, 4), (16, 2)))
    assert evidence(claim, crossed).verdict == NOT_TESTED
    assert evidence(claim, _unbounded().drop(columns=["sup_errors"])).verdict == NOT_TESTED
    # the fixed-width density row reads only the fixed-width units, never Theorem 3.1's
    assert evidence("004-fixed-width-density", _unbounded((-0.4,))).units == 4


# --- the affine layers' constraint cost grows faster with depth -------------------------------------

DEPTHS = (2, 5, 10, 20)


def _cost(extra_per_block: float, *, offset: float = 0.0, factor: float = 1.0, rounds: int = 30, rng=None):
    """lipschitz-mnist rows: a training unit, a timing unit and the constraint-cost unit, whose gradient-step step
    takes 2 ms + 1 ms per block and the fixed-width one factor × that + offset + extra_per_block·depth, with
    lognormal noise per timing and a drift per round."""
    rng = rng if rng is not None else np.random.default_rng(0)
    depth = np.asarray(DEPTHS, dtype=float)
    drift = rng.lognormal(0.0, 0.2, size=(rounds, 1))
    base = 2e-3 + 1e-3 * depth
    plain = base * drift * rng.lognormal(0.0, 0.15, size=(rounds, depth.size))
    fixed = (factor * base + offset + extra_per_block * depth) * drift * rng.lognormal(0.0, 0.15, size=plain.shape)
    rows = [
        {"key": "train/gradient-step/margin-ce/orthogonal/depth=5/width=100/seed=0", "stage": "train",
         "model": "gradient-step", "depth": 5, "width": 100, "seconds_per_epoch": 30.0},
        {"key": "timing/depth=5/width=100", "stage": "timing", "depth": 5, "width": 100, "threads": 1},
        {"key": "constraint-cost/width=100", "stage": "constraint-cost", "width": 100, "batch": 256,
         "lift": "orthogonal", "bound": "exact", "cost_depths": json.dumps(list(DEPTHS)), "rounds": rounds,
         "step_seconds_fixed_width": json.dumps(fixed.tolist()), "step_seconds_gradient_step": json.dumps(plain.tolist()),
         "threads": 1, "device": "cpu", "processor": "Test CPU", "other_load": 0.5},
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_affine_cost_growing_faster_with_depth_is_reproduced() -> None:
    found = evidence("004-affine-constraint-cost", _cost(0.5e-3))
    assert found.verdict == REPRODUCED, found.ours
    assert found.unit_keys == ("constraint-cost/width=100",) and found.units == 1
    assert "cpu, 1 torch thread(s), Test CPU" in found.ours
    # the interval of the extra time per block covers the simulated 0.5 ms
    low, high = map(
        float, re.search(r"extra time per added block [\d.]+ ms \[([\d.]+), ([\d.]+)\]", found.ours).groups()
    )
    assert low <= 0.5 <= high


def test_affine_cost_constant_is_not_reproduced_and_cheaper_is_refuted() -> None:
    claim = "004-affine-constraint-cost"
    # higher at every depth but by a constant: it does not grow faster with depth
    assert evidence(claim, _cost(0.0, offset=3e-3)).verdict == NOT_REPRODUCED
    assert evidence(claim, _cost(0.0, factor=0.7)).verdict == REFUTED


def test_affine_cost_is_not_tested_without_the_constraint_cost_unit() -> None:
    claim = "004-affine-constraint-cost"
    found = evidence(claim, _cost(0.5e-3).query("stage != 'constraint-cost'"))
    assert found.verdict == NOT_TESTED and "cost_rounds" in found.test
    assert evidence(claim, pd.DataFrame()).verdict == NOT_TESTED


@pytest.mark.parametrize(("extra", "at_least", "at_most"), [(0.5e-3, 0.9, 1.0), (0.0, 0.0, 0.05)])
def test_affine_cost_rule_on_simulated_timings(extra: float, at_least: float, at_most: float) -> None:
    """Over 100 simulated constraint-cost units: 0.5 ms more per block (the affine maps) is reproduced ≥ 90 % of the
    time; equal costs ≤ 5 %, and never refuted more than 5 %."""
    rng = np.random.default_rng(1)
    verdicts = [BY_ID["004-affine-constraint-cost"].evaluate(_cost(extra, rng=rng), None).verdict for _ in range(100)]
    assert at_least <= verdicts.count(REPRODUCED) / len(verdicts) <= at_most
    assert verdicts.count(REFUTED) <= 5


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
    # a mean of 63 % from widely spread seeds is not significantly above GloRo's 62.8 % (rule `above_reference`)
    spread = evidence("004-conv-mnist-certified", _conv_runs([0.655, 0.62, 0.64, 0.615, 0.62], [0.976] * 5))
    assert spread.verdict == NOT_REPRODUCED and "63.00 %" in spread.ours and "target met" in spread.ours
    assert "not above GloRo's 62.8 %" in spread.ours and "Student's t" in spread.test
    # one seed meeting the target is not enough seeds (policy `enough_seeds`)
    one = evidence("004-conv-mnist-certified", _conv_runs([0.64], [0.98]))
    assert one.verdict == NOT_REPRODUCED and "target met" in one.ours and "1 seed(s) < 5" in one.ours


def test_a_certified_point_broken_by_the_attack_refutes_the_conv_certificate() -> None:
    runs = _conv_runs([0.632, 0.634], [0.976, 0.978])
    found = evidence("004-conv-one-lipschitz", runs)
    assert found.verdict == REPRODUCED and "not attacked" in found.ours
    runs["attack_points"] = [1000.0, 1000.0]
    runs["attack_broken_0.5"], runs["attack_broken_1.58"] = [0.0, 0.0], [0.0, 0.0]
    found = evidence("004-conv-one-lipschitz", runs)
    assert found.verdict == REPRODUCED and "PGD broke 0 certified point(s) (2000 rows" in found.ours
    runs.loc[1, "attack_broken_1.58"] = 1.0
    found = evidence("004-conv-one-lipschitz", runs)
    assert found.verdict == REFUTED and "PGD broke 1 certified point(s)" in found.ours
