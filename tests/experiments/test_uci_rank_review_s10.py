"""Review s10 of the lowrank-uci and rank-bounds protocols: leakage, pairing, tests, measurements."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from structnets.experiments.lowrank_uci import table


def _cv_rows(dataset: str, depth: int, width: int, folds: int = 4) -> pd.DataFrame:
    """CV rows of dense and low-rank (H = width/3) nets of the given depth; equal scores where depth 1."""
    rows = []
    for model in ("dense", "lowrank"):
        for fold in range(folds):
            rows.append(
                {
                    "stage": "cv", "dataset": dataset, "task": "regression", "model": model, "fold": fold,
                    "seed": 0, "n_train": 300, "n_test": 100, "ratio": 1.0 if model == "dense" else 1 / 3,
                    "rank": width if model == "dense" else round(width / 3), "depth": depth, "width": width,
                    "rmse": 0.05 + 0.001 * fold, "accuracy": math.nan, "balanced_accuracy": math.nan,
                }
            )  # fmt: skip
    return pd.DataFrame(rows)


def test_depth_one_has_no_bottleneck_so_the_table_claims_no_agreement() -> None:
    # A depth-1 Swish MLP has no hidden map (Linear, σ, Linear): its "low-rank" twin is the same network,
    # so dense = low-rank in every fold and t = 0 says nothing about the paper's claim.
    from structnets.models import mlp

    assert sum(p.numel() for p in mlp(6, 1, 12, 1).parameters()) == sum(
        p.numel() for p in mlp(6, 1, 12, 1, bottleneck=1 / 3).parameters()
    )
    efficiency = pd.DataFrame(
        [
            {
                "stage": "efficiency", "role": "chosen", "dataset": "real-estate", "task": "regression",
                "features": 6, "depth": 1, "width": 12, "rank": 4, "batch": 64, "parameters_dense": 97,
                "parameters_lowrank": 97, "flops_dense": 100, "flops_lowrank": 100, "latency_ratio": 1.0,
                "latency_ratio_q1": 0.9, "latency_ratio_q3": 1.1, "memory_dense": 10, "memory_lowrank": 10,
            }
        ]
    )  # fmt: skip
    select = pd.DataFrame(
        [{"stage": "select", "dataset": "real-estate", "task": "regression", "depth": 1, "width": 12,
          "rmse": 0.07, "accuracy": math.nan, "score": -0.07, "parameters": 97}]
    )  # fmt: skip
    text = table(pd.concat([select, _cv_rows("real-estate", 1, 12), efficiency], ignore_index=True))
    row = next(line for line in text.splitlines() if line.startswith("| real-estate | RMSE |"))
    assert "yes (no significant difference)" not in row
    assert "depth 1" in row
    architecture = next(line for line in text.splitlines() if line.startswith("| real-estate | 1 | 12 |"))
    assert "| 4 |" not in architecture  # no bottleneck of H = 4 exists at depth 1
    assert "| real-estate | 6 | 1 | 12 | 4 |" not in text  # nor in the efficiency table
    # at depth 2 the comparison is real and the verdict stays
    deep = table(_cv_rows("real-estate", 2, 12))
    assert "yes (no significant difference)" in deep


def test_paired_t_matches_hand_formula_on_unequal_differences() -> None:
    from structnets.experiments.lowrank_uci import _paired_test

    rng = np.random.default_rng(3)
    dense = pd.DataFrame({"fold": np.tile(range(5), 2), "seed": np.repeat([0, 1], 5), "accuracy": rng.random(10)})
    low = dense.assign(accuracy=dense["accuracy"] + rng.normal(0.01, 0.02, 10)).sample(frac=1, random_state=1)
    t, p, pairs = _paired_test(low, dense, "accuracy")
    d = low.sort_values(["seed", "fold"])["accuracy"].to_numpy() - dense["accuracy"].to_numpy()
    t_hand = d.mean() / (d.std(ddof=1) / math.sqrt(d.size))
    assert pairs == 10
    assert math.isclose(t, t_hand, rel_tol=1e-12)
    assert math.isclose(p, 2 * stats.t.sf(abs(t_hand), d.size - 1), rel_tol=1e-10)


@pytest.mark.parametrize("seed", [0, 1])
def test_cv_folds_are_stratified_identical_across_models_and_test_rows_never_train(uci_data, seed: int) -> None:
    """Leakage and pairing: the training fold holds no test row, the features are standardised with the
    training fold's statistics, the folds are stratified, and dense and low-rank of a (fold, seed) pair
    see the same rows and the same initialisation seed."""
    from sklearn.model_selection import StratifiedKFold

    from structnets.experiments.lowrank_uci import LowRankUCIConfig, _training_params, units

    X, y, _ = units._dataset_arrays("iris", None)
    X = X + 1e-6 * np.arange(len(X))[:, None]  # iris repeats rows: make each one identifiable
    config = LowRankUCIConfig(datasets=("iris",), folds=3, epochs=3, patience=2, widths=(6,), depths=(2,))
    seen: list[tuple[np.ndarray, np.ndarray, object]] = []
    real_fit = units._timed_fit

    def spy(estimator, X_train, y_train):  # type: ignore[no-untyped-def]
        seconds = real_fit(estimator, X_train, y_train)
        seen.append((X_train.copy(), y_train.copy(), estimator))
        return seconds

    base = {
        "stage": "cv",
        "dataset": "iris",
        "depth": 2,
        "width": 6,
        "folds": 3,
        "seed": seed,
        **_training_params(config),
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(units, "_timed_fit", spy)
        patch.setattr(units, "_dataset_arrays", lambda *args, **kwargs: (X, y, "classification"))
        rows = [
            units._run_cv({**base, "model": model, "bottleneck": ratio, "fold": fold})
            for fold in range(3)
            for model, ratio in (("dense", None), ("lowrank", 1 / 3))
        ]
    splits = list(StratifiedKFold(3, shuffle=True, random_state=seed).split(X, y))
    for fold, (train, test) in enumerate(splits):
        (X_dense, y_dense, dense), (X_low, y_low, low) = seen[2 * fold], seen[2 * fold + 1]
        assert np.array_equal(X_dense, X_low) and np.array_equal(y_dense, y_low)
        assert dense.random_state == low.random_state == 1000 * seed + fold
        assert np.array_equal(X_dense, X[train]) and np.array_equal(y_dense, y[train])
        assert not set(map(bytes, X_dense)) & set(map(bytes, X[test]))  # no test row trains
        assert np.ptp(np.bincount(y_dense)) <= 1  # stratified: 50/50/50 → 33/33/34
        np.testing.assert_allclose(dense.feature_mean_, X[train].mean(axis=0), rtol=1e-12)
        assert rows[2 * fold]["n_test"] == len(test) and rows[2 * fold]["n_train"] == len(train)
    assert sorted(np.concatenate([test for _, test in splits]).tolist()) == list(range(150))


def test_fixed_norm_section_finds_every_schatten_p_column() -> None:
    # _p_column writes p with :g, so p = 1e-05 is the column rs1e-05; the fixed-norm section's "smallest
    # recorded p" must find it rather than silently fall back to the next p.
    from structnets.experiments.rank_bounds.config import _p_column
    from structnets.experiments.rank_bounds.fixed_norm import p_columns

    ps = (1e-05, 0.25, 2.0, 1.5e-07, 3e20)
    rows = pd.DataFrame({f"{_p_column(p)}_sc": [1.0] for p in ps})
    assert p_columns(rows) == {p: f"{_p_column(p)}_sc" for p in sorted(ps)}
