"""The compression targets' claim rows (000-compress-*): they decide as the lowrank-compress report's targets do."""

from __future__ import annotations

import numpy as np
import pandas as pd

from structnets.claims import CLAIMS, NOT_REPRODUCED, NOT_TESTED, REFUTED, REPRODUCED
from structnets.experiments.lowrank_compress import targets

BY_ID = {claim.id: claim for claim in CLAIMS}
IDS = ("000-compress-calibrated-not-worse", "000-compress-half-flops-one-point")


def _rows(gain: float, loss: float, seeds: int = 5, noise: float = 0.002) -> pd.DataFrame:
    """Curve rows of two architectures: calibrated − svd = ``gain`` in every cell, calibrated(1/2, 0) − dense = ``loss``."""
    rng = np.random.default_rng(1)
    out = []
    for architecture in ("mlp", "cnn"):
        for s in range(seeds):
            dense = 0.98 + rng.normal(0, noise)
            out.append(dict(stage="curve", architecture=architecture, method="dense", seed=s, budget=None,
                            finetune_steps=0, accuracy=dense, key=f"curve/{architecture}/dense/seed={s}"))  # fmt: skip
            for budget in (0.5, 0.25):
                for steps in (0, 10):
                    svd = dense + loss - gain + rng.normal(0, noise) - (0.05 if budget == 0.25 else 0.0)
                    cal = svd + gain + rng.normal(0, noise)
                    for method, acc in (("svd", svd), ("calibrated", cal)):
                        key = f"curve/{architecture}/{method}/flops={budget}/steps={steps}/seed={s}"
                        out.append(dict(stage="curve", architecture=architecture, method=method, seed=s,
                                        budget=budget, finetune_steps=steps, accuracy=acc, key=key))  # fmt: skip
    return pd.DataFrame(out)


def _evidence(claim_id: str, results: pd.DataFrame):
    return BY_ID[claim_id].evaluate(results, None)


def test_registered_for_the_experiment() -> None:
    for claim_id in IDS:
        assert BY_ID[claim_id].experiment == "lowrank-compress"


def test_verdicts_follow_the_data_and_agree_with_the_report() -> None:
    good = _rows(gain=0.01, loss=-0.002)
    assert _evidence(IDS[0], good).verdict == REPRODUCED
    assert _evidence(IDS[1], good).verdict == REPRODUCED
    worse = _rows(gain=-0.03, loss=-0.03)  # calibrated 3 points below plain SVD, 3 points below dense
    assert _evidence(IDS[0], worse).verdict == REFUTED
    assert _evidence(IDS[1], worse).verdict == REFUTED
    few = _rows(gain=0.01, loss=-0.002, seeds=3)  # every cell holds, but fewer than 5 seeds
    assert _evidence(IDS[0], few).verdict == NOT_REPRODUCED
    noisy = _rows(gain=-0.0075, loss=-0.01, noise=0.03)
    assert _evidence(IDS[1], noisy).verdict == NOT_REPRODUCED
    for results in (good, worse, few, noisy):
        assert _evidence(IDS[0], results).verdict == targets.verdict(targets.calibrated_vs_svd(results))
        assert _evidence(IDS[1], results).verdict == targets.verdict(targets.half_flops(results))
    evidence = _evidence(IDS[1], good)
    assert evidence.units == len(evidence.unit_keys) == 2 * 2 * 5  # calibrated and dense rows of 2 models × 5 seeds
    assert all(key.startswith("curve/") for key in evidence.unit_keys)


def test_not_tested_without_curve_rows() -> None:
    mlp_part = pd.DataFrame({"model": ["dense"], "dataset": ["mnist"], "accuracy": [0.98], "seed": [0]})
    for claim_id in IDS:
        assert _evidence(claim_id, mlp_part).verdict == NOT_TESTED
        assert _evidence(claim_id, _rows(0.01, 0.0).query("method != 'calibrated'")).verdict == NOT_TESTED
