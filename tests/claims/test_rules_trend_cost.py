"""The pooled-trend and cost-growth rules on simulated results where the right verdict is known (issue 31).

``rules_trend.pooled_trend`` decides a density claim as two sizes grow together (004-unbounded-density):
a true fall in every stratum must come out reproduced ≥ 90 % of the time, no trend must be
reproduced ≤ 5 %, one stratum going the wrong way must block it. ``rules.cost_growth`` decides
"A costs more and its cost grows faster with depth" from interleaved timings (004-affine-constraint-cost):
a true extra cost per block must be reproduced ≥ 90 %, equal costs reproduced ≤ 5 % and refuted ≤ 5 %,
a constant offset (costlier, not growing faster) not reproduced, and a cheaper A refuted.
Fixed seeds; each test runs in well under a second.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from structnets.analysis import cost_growth as cost_growth_module
from structnets.claims import rules, rules_trend
from structnets.claims.evidence import NOT_REPRODUCED, REFUTED, REPRODUCED

SIMS = 400
# Theorem 3.1's grid in lipschitz-density: (width, depth) pairs growing together, 5 seeds each, 4 targets
PAIRS = [(2, 1), (3, 2), (4, 4), (6, 8), (8, 16)]
SIZE = np.log([w * d for w, d in PAIRS])
SEEDS, TARGETS = 5, 4


def _grid(slopes: list[float], sd: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """log size, log error and target label of every (target, pair, seed): log error = −1 + slope·log size + noise."""
    x = np.tile(np.repeat(SIZE, SEEDS), TARGETS)
    labels = np.repeat(np.arange(TARGETS), SIZE.size * SEEDS)
    slope = np.asarray(slopes)[labels]
    return x, -1.0 + slope * x + rng.normal(0.0, sd, size=x.size), labels


def _shares(slopes: list[float], sd: float = 0.5, seed: int = 0) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    verdicts = [rules_trend.pooled_trend(*_grid(slopes, sd, rng), claimed_sign=-1).verdict for _ in range(SIMS)]
    return {v: float(np.mean(np.asarray(verdicts) == v)) for v in (REPRODUCED, NOT_REPRODUCED, REFUTED)}


def test_pooled_trend_with_one_stratum_is_the_least_squares_slope_test() -> None:
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=20), rng.normal(size=20)
    test = rules_trend.pooled_trend(x, y, np.zeros(20), claimed_sign=-1)
    reference = stats.linregress(x, y)
    # one stratum: n − G − 1 = n − 2 degrees of freedom, the slope and se of ordinary least squares
    assert test.slope == pytest.approx(reference.slope, rel=1e-12)
    assert test.se == pytest.approx(reference.stderr, rel=1e-10)
    assert test.p == pytest.approx(reference.pvalue, rel=1e-8)
    assert test.df == 18


def test_pooled_trend_ignores_the_strata_levels() -> None:
    # each stratum its own intercept: shifting one stratum's level changes nothing
    rng = np.random.default_rng(2)
    x, y, labels = _grid([-0.3] * TARGETS, 0.5, rng)
    shifted = y + np.where(labels == 2, 7.0, 0.0)
    a, b = (
        rules_trend.pooled_trend(x, y, labels, claimed_sign=-1),
        rules_trend.pooled_trend(x, shifted, labels, claimed_sign=-1),
    )
    assert a.slope == pytest.approx(b.slope, rel=1e-12) and a.p == pytest.approx(b.p, rel=1e-9)


def test_a_true_fall_in_every_stratum_is_reproduced_at_least_90_percent() -> None:
    # −0.3 per unit of log(width·depth): the error halves over the grid's factor 64, noise sd 0.5 in log
    assert _shares([-0.3] * TARGETS)[REPRODUCED] >= 0.90


def test_no_trend_is_rarely_reproduced_or_refuted() -> None:
    shares = _shares([0.0] * TARGETS)
    assert shares[REPRODUCED] <= 0.05 and shares[REFUTED] <= 0.05


def test_one_stratum_going_the_wrong_way_blocks_reproduced() -> None:
    # three targets fall, one rises as fast: the pooled slope still falls, but not in every stratum
    assert _shares([-0.3, -0.3, -0.3, 0.3])[REPRODUCED] <= 0.10


def test_a_rising_error_is_refuted() -> None:
    assert _shares([0.3] * TARGETS)[REFUTED] >= 0.90


def test_median_interval_covers_the_median_at_its_level() -> None:
    rng = np.random.default_rng(3)
    draws = rng.lognormal(0.0, 0.5, size=(2000, 40))  # population median 1
    covered = [low <= 1.0 <= high for low, high in (rules.median_interval(d)[1:] for d in draws)]
    # order statistics: exact coverage 1 − 2·P(Bin(40, ½) ≤ j − 1) = 0.9615 for n = 40
    assert 0.95 <= float(np.mean(covered)) <= 0.975
    assert rules.median_interval([1.0, 2.0, 3.0])[1:] == (-np.inf, np.inf)  # 3 values cannot reach 95 %


DEPTHS = np.array([2.0, 5.0, 10.0, 20.0])
ROUNDS = 30


def _timings(
    rng: np.random.Generator, *, extra_per_block: float, offset: float = 0.0, factor: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """(rounds, depths) seconds: B = 2 ms + 1 ms per block; A = factor·B + offset + extra_per_block·depth;
    lognormal noise (sd 0.15) per timing and a common drift per round (sd 0.2), as on a loaded machine."""
    drift = rng.lognormal(0.0, 0.2, size=(ROUNDS, 1))
    base = 2e-3 + 1e-3 * DEPTHS
    b = base * drift * rng.lognormal(0.0, 0.15, size=(ROUNDS, DEPTHS.size))
    a = (factor * base + offset + extra_per_block * DEPTHS) * drift * rng.lognormal(0.0, 0.15, size=b.shape)
    return a, b


def _cost_shares(seed: int = 0, **kwargs: float) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    verdicts = np.asarray([rules.cost_growth(*_timings(rng, **kwargs), DEPTHS).verdict for _ in range(SIMS)])
    return {v: float(np.mean(verdicts == v)) for v in (REPRODUCED, NOT_REPRODUCED, REFUTED)}


def test_a_true_extra_cost_per_block_is_reproduced_at_least_90_percent() -> None:
    # A's blocks cost 1.5 times B's: 0.5 ms more per block (what the affine maps add)
    assert _cost_shares(extra_per_block=0.5e-3)[REPRODUCED] >= 0.90


def test_equal_costs_are_rarely_reproduced_or_refuted() -> None:
    shares = _cost_shares(extra_per_block=0.0)
    assert shares[REPRODUCED] <= 0.05 and shares[REFUTED] <= 0.05


def test_a_constant_extra_cost_is_not_a_cost_growing_faster() -> None:
    # A costs 3 ms more at every depth: higher, not growing faster with depth
    shares = _cost_shares(extra_per_block=0.0, offset=3e-3)
    assert shares[REPRODUCED] <= 0.05 and shares[REFUTED] <= 0.05


def test_a_cheaper_a_is_refuted() -> None:
    assert _cost_shares(extra_per_block=0.0, factor=0.7)[REFUTED] >= 0.90


def test_cost_growth_refuses_malformed_timings() -> None:
    with pytest.raises(ValueError, match="sizes"):
        rules.cost_growth(np.ones((5, 2)), np.ones((5, 2)), [3, 3])
    with pytest.raises(ValueError, match="a_seconds"):
        rules.cost_growth(np.ones((5, 2)), np.ones((5, 3)), [1, 2])
    with pytest.raises(ValueError, match="positive"):
        rules.cost_growth(np.zeros((5, 2)), np.ones((5, 2)), [1, 2])


def test_cost_growth_verdict_words_are_the_claims_verdicts() -> None:
    # analysis.cost_growth spells them itself (the experiments may not import claims)
    assert (cost_growth_module.REPRODUCED, cost_growth_module.REFUTED, cost_growth_module.NOT_REPRODUCED) == (
        REPRODUCED,
        REFUTED,
        NOT_REPRODUCED,
    )
    assert rules.cost_growth is cost_growth_module.cost_growth
