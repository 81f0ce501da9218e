"""The written policies of the claims page: one rule per kind of claim (issue 31).

Each row names a kind of claim, the rule of :mod:`structnets.claims.rules` that decides every claim of that
kind, and what ``tests/claims/test_rules_simulation.py`` asserts about the rule on simulated results whose
right verdict is known (the rates quoted are the ones those tests measured; the tests assert the stated
thresholds). :func:`policies_markdown` renders them as the table at the top of ``docs/claims.md``.
"""

from __future__ import annotations

from typing import NamedTuple


class Policy(NamedTuple):
    """One kind of claim: how it is decided, and what the simulations show of that rule."""

    kind: str
    rule: str
    simulated: str


POLICIES: tuple[Policy, ...] = (
    Policy(
        "**upper-bound rate** O(x^r) (`upper_bound_rate`)",
        'per cell, least-squares log–log slope ± se (seeds as replicates); one-sided t-test of "slower than r" (by more than a stated tolerance for near-noiseless constructions: 10 % of β, 15 % of s/d), Holm over cells. No cell slower: **reproduced**. A slower cell with settled training (or any slower construction): **refuted**. Slower cells all optimisation-limited (< 80 % of members settled): **not reproduced, optimisation-limited**. Steeper is never a miss. A cell with no fit (NaN slope or se, all sizes equal) or a noisy one on < 2 residual df (3 points), or no cell: not reproduced.',
        'a true rate in 18 cells (7 sizes × 5 seeds): reproduced 95.3 % (the replaced rule, "every cell\'s 95 % interval contains the rate": 39.4 %); one cell truly slower by 0.5: refuted ≥ 90 %; a flat error against n^−1 on 3 sizes × 1 seed (1 df): reproduced 12.6 % before the 2-df floor, 0 % after',
    ),
    Policy(
        "**lower bound** (a cap) (`lower_bound`)",
        "the bounded class not beating the bound is only *consistent* with it. Reproduced only by a contrast that could have failed, in every cell: same-protocol networks of another class beating the cap (one-sided t, Holm), or beating a certified floor of the bounded class. Otherwise **consistent, not tested**. The bounded class significantly beating an asymptotic cap: not reproduced (never refuted by a finite grid).",
        "ReLU and smooth nets both at the cap: reproduced ≤ 1 %",
    ),
    Policy(
        "**predicted exponent** (`predicted_exponent`)",
        "two-sided: two one-sided tests (TOST) against the band predicted ± tolerance (± 0.25, a quarter of the gap between W¹ and W², unless the claim states one). Inside in every cell: reproduced; the interval entirely outside the band in some cell (Holm): refuted; else not reproduced.",
        "on the rate: reproduced ≥ 90 %; 0.8 off (either side): refuted ≥ 90 %; on the band's edge: reproduced ≤ 7 %",
    ),
    Policy(
        '**"not worse" / "keeps accuracy"** (`non_inferiority`)',
        "the lower one-sided test of TOST at a stated margin (accuracy: 0.75 points, above the paper's own gaps of 0.1–0.6 and below a 1-point loss; RMSE: 2.5 % of the dense RMSE), with the Nadeau–Bengio corrected variance (1/J + n_test/n_train)·s² for CV folds. Lower bound above −margin: reproduced; a refutation needs a loss beyond the margin (upper bound below −margin).",
        'equicorrelated folds (ρ = 1/10): a true 1-point loss at margin 0.5 refuted 91.3 %; a true equality refuted 0 %, reproduced 91 %; a loss at the margin called "not worse" 4.8 % (uncorrected t: 12.2 %)',
    ),
    Policy(
        '**"A significantly better than B"** (`superiority`)',
        "two-sided NB-corrected interval above 0: reproduced; entirely below −margin: refuted.",
        "",
    ),
    Policy(
        '**"A beats B across cells"** (`across_cells`)',
        "one pooled stratified test — van Elteren rank-sum for MSE and epochs (exact conditional p when every stratum has ≤ 8 values a side, else normal), exact stratified Mantel–Haenszel (conditional) for success counts; slopes of contrasts that share a control (smooth activations against one ReLU run) by each cell's mean contrast (`rules_trend.pooled_contrast`) — plus the direction in every cell. Pooled significant in A's favour and no cell significantly reversed (Holm): reproduced; pooled significant the other way: refuted; else not reproduced.",
        '6 cells × 5 seeds, no effect: reproduced 2.2 %, refuted 2.1 % (exact p; the normal approximation: 2.9 %, 2.7 %, and 10 % significant on one stratum of 3 vs 3); a 1.2 sd shift: reproduced 98.8 % (the replaced "significant in every cell": < 25 % already for 3 cells); successes 0.8 vs 0.3: reproduced ≥ 85 %, null ≤ 5 %; 2 cells × 3 contrasts on one control, no effect: significant 5.2 % (pooling the 3 as independent, the replaced rule: 18.3 %)',
    ),
    Policy(
        "**performance claim** (`performance_ratio`)",
        "the (1 − α) interval of the geometric-mean ratio over data sets (a deterministic count: the value itself). Entirely within the claim: reproduced; entirely beyond it: refuted; else not reproduced; hardware (device, threads) stated.",
        'a true 0.93 against "≤ 2/3" over 8 data sets: refuted ≥ 99 %; a true 0.62: never refuted',
    ),
    Policy(
        "**trained-network claim** (`enough_seeds`)",
        "the configuration is fixed before the run (the paper's; never the best on the test set) and measured over ≥ 5 seeds; otherwise not reproduced.",
        "",
    ),
    Policy(
        '**"beats a published number"** (`above_reference`)',
        "a trained-network claim (fixed configuration, ≥ 5 seeds) whose one-sided (1 − α) lower confidence bound of the mean over seeds (Student's t) lies above the published number, with the claim's own targets met by the means: reproduced; else not reproduced (a missed target contradicts no theorem).",
        '5 seeds, a true mean equal to the published 62.8 %: called better 4.2 % at seed sd 0.3 and 0.6 points (the replaced rule, "the mean ≥ 63 %": 5.9 % and 22 %); a true 63.5 %, sd 0.3: found 99.4 %',
    ),
    Policy(
        "**density claim** (error → 0, no rate) (`still_falling`)",
        'the error still falls over the upper half of the grid (replicates: a significantly negative slope; one value per size: every step down over at least the last 4 sizes, an exact permutation test of size 1/4! ≈ 4.2 %; fewer sizes decide nothing), not only "last < first".',
        "a curve flat after depth 4: not falling; a plateau measured once per size (medians of 5 seeds, 6 depths): still falling 4.2 % (every step down over the top 3 sizes, the replaced rule: 16 %)",
    ),
    Policy(
        "**density as two sizes grow together** (error → 0 as width and depth grow) (`pooled_trend`)",
        "every replicate's log error against the log size, strata (targets) each with its own intercept: the pooled fixed-effects slope significantly in the claimed direction (two-sided α), every stratum's own slope in that direction and none significantly reversed (Holm) — over the whole grid and again over its upper half (the density policy): reproduced; else not reproduced (a rising error too: the theorem states existence, training may not reach it).",
        "4 strata × 5 sizes × 5 seeds, a true fall of −0.3 per log size (noise sd 0.5): reproduced ≥ 90 %; no trend: reproduced ≤ 5 %, refuted ≤ 5 %; one stratum rising: reproduced ≤ 10 %",
    ),
    Policy(
        "**performance claim growing with a size** (`cost_growth`)",
        "rounds that each time A and B once at every size, interleaved; per size the median of the per-round ratios A/B with its distribution-free (order-statistic) interval, per round the least-squares slope of A − B in the size, and the median slope with its interval. Every ratio interval above 1 and the slope's above 0: reproduced; a ratio interval below 1 or the slope's below 0 (Bonferroni): refuted; else not reproduced; hardware (device, threads, processor, other load) stated.",
        "30 rounds × 4 depths, lognormal noise and drift: 0.5 ms more per block reproduced ≥ 90 %; equal costs reproduced ≤ 5 %, refuted ≤ 5 %; a constant extra cost (higher, not growing) reproduced ≤ 5 %; A at 0.7× refuted ≥ 90 %",
    ),
    Policy(
        "**exact construction**",
        'exact inequalities; "exact" means within the network\'s own float64 rounding bound (`constructive.maxmin_rounding_bound`: scale, depth, max \\|f\\|), not a fixed 10⁻⁹. Whose bound each row tests is stated (ours where the paper gives only a form).',
        "",
    ),
)
"""Every kind of claim the table decides, with its rule; every claim's test text names one of these."""


def policies_markdown() -> str:
    """The policies as a Markdown section: a heading, one paragraph, one table row per :data:`POLICIES` entry."""
    lines = [
        "## Policies: one rule per kind of claim",
        "",
        "Every verdict on this page comes from one rule of `structnets.claims.rules`, applied the same way to every claim "
        "of its kind; each row's *test* column names the rule, its tolerance or margin, and whose bound it tests. "
        "Every rule can reach each of its verdicts, and `tests/claims/test_rules_simulation.py` measures its error "
        "rates on simulated results whose right verdict is known (fixed seeds, < 10 s). All levels are α = 0.05. "
        "Rows whose comparison baseline is vacuous say so first.",
        "",
        "| kind of claim | rule | measured on simulations |",
        "|---|---|---|",
    ]
    lines += [f"| {p.kind} | {p.rule} | {p.simulated} |" for p in POLICIES]
    return "\n".join(lines)


__all__ = ["POLICIES", "Policy", "policies_markdown"]
