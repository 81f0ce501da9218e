"""The DLoR experiments' library parts: the seed-batched DLoR model equals its seeds' networks, one
batched training equals separate trainings, the per-cell tests, the blind-spot floor. (End-to-end
runs: tests/experiments/test_dlor_*.py.)"""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
import torch

from structnets.experiments import dlor_blindspot as blindspot
from structnets.experiments import dlor_sawtooth as sawtooth_exp
from structnets.models import dlor_mlp, dlor_parameter_count, rank_one_mlp
from structnets.models.batched_dlor import BatchedDLoRNet, build_batched
from structnets.training.seed_batched import train_batched, train_vmapped

F64 = torch.float64


@pytest.mark.parametrize(("mode", "depth", "branches"), [("deep", 3, 1), ("summed", 2, 3), ("parallel", 2, 3)])
def test_batched_net_equals_each_seed_model(mode: str, depth: int, branches: int) -> None:
    models = []
    for seed in range(3):
        torch.manual_seed(seed)
        models.append(dlor_mlp(2, 1, 6, depth, 2, mode, "tanh", branches, dtype=F64))
    net = BatchedDLoRNet(models)
    x = torch.rand(11, 2, dtype=F64)
    out = net(x)
    assert out.shape == (3, 11, 1)
    for s, model in enumerate(models):
        torch.testing.assert_close(out[s], model(x), rtol=1e-12, atol=1e-12)
    assert sum(p.numel() for p in net.parameters()) == 3 * dlor_parameter_count(6, depth, 2, mode, branches)
    assert net.parameters_per_seed() == dlor_parameter_count(6, depth, 2, mode, branches)
    # alpha, U, V, bias (+ out_bias for parallel): all layers and seeds stacked
    assert len(list(net.parameters())) == (5 if mode == "parallel" else 4)
    for s, rebuilt in enumerate(net.to_models()):
        torch.testing.assert_close(rebuilt(x), models[s](x), rtol=0, atol=0)
        first = rebuilt[1]
        dense = sum(b.to_dense() for b in first.branches) if mode == "parallel" else first.to_dense()
        torch.testing.assert_close(net.dense(0)[s], dense, rtol=1e-13, atol=1e-13)


def _train_separately(model: torch.nn.Module, X, y, epochs: int, lr: float) -> None:
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs, eta_min=lr / 100)
    for _ in range(epochs):
        optimizer.zero_grad()
        ((model(X)[:, 0] - y) ** 2).mean().backward()
        optimizer.step()
        scheduler.step()


@pytest.mark.parametrize("mode", ["deep", "summed", "parallel"])
def test_batched_training_equals_separate_trainings(mode: str) -> None:
    """Adam is elementwise and Σ_s MSE_s separates, so one batched run = S separate runs."""
    torch.manual_seed(0)
    X, y = torch.rand(40, 1, dtype=F64), torch.rand(40, dtype=F64)
    models = []
    for seed in range(3):
        torch.manual_seed(seed)
        models.append(dlor_mlp(1, 1, 4, 2, 1, mode, "tanh", 1 if mode == "deep" else 2, dtype=F64))
    separate = [copy.deepcopy(m) for m in models]
    net = BatchedDLoRNet(models)
    history = train_batched(net, X, y, X, y, epochs=7, lr=1e-2, eval_every=3)
    assert history.eval_epochs == [0, 3, 6, 7]
    for s, model in enumerate(separate):
        _train_separately(model, X, y, epochs=7, lr=1e-2)
        torch.testing.assert_close(net.to_models()[s](X), model(X), rtol=1e-10, atol=1e-10)
        mse = float(((model(X)[:, 0] - y) ** 2).mean().detach())
        assert math.isclose(history.final_test_mse[s], mse, rel_tol=1e-9)


def test_vmapped_training_equals_separate_trainings() -> None:
    X, y = torch.rand(30, 2, dtype=F64), torch.rand(30, dtype=F64)
    models = []
    for seed in range(2):
        torch.manual_seed(seed)
        models.append(rank_one_mlp(2, 1, 5, 2, "tanh", dtype=F64))
    separate = [copy.deepcopy(m) for m in models]
    test, train, trained = train_vmapped(models, X, y, X, y, epochs=6, lr=1e-2)
    for s, model in enumerate(separate):
        _train_separately(model, X, y, epochs=6, lr=1e-2)
        torch.testing.assert_close(trained[s](X), model(X), rtol=1e-10, atol=1e-10)
        assert math.isclose(test[s], train[s])


def test_epochs_to_threshold_is_the_first_evaluation_below_it() -> None:
    torch.manual_seed(0)
    net = BatchedDLoRNet([dlor_mlp(1, 1, 4, 1, 1, "deep", "tanh", dtype=F64)])
    X = torch.rand(20, 1, dtype=F64)
    with torch.no_grad():
        y = net(X)[0, :, 0] + 0.01  # MSE exactly 1e-4 at epoch 0
    history = train_batched(net, X, y, X, y, epochs=2, lr=1e-3, eval_every=1, threshold=2e-4)
    assert history.epochs_to_threshold == [0]
    history = train_batched(net, X, y, X, y, epochs=2, lr=1e-3, eval_every=1, threshold=1e-12)
    assert history.epochs_to_threshold == [None]


@pytest.mark.parametrize("mode", ["summed", "parallel"])
@pytest.mark.parametrize(("width", "rank", "wide_depth", "branches"), [(8, 1, 3, 4), (16, 2, 1, 4), (10, 3, 2, 2)])
def test_matched_depth_matches_parameter_counts(
    width: int, rank: int, wide_depth: int, branches: int, mode: str
) -> None:
    depth = sawtooth_exp.matched_deep_depth(width, rank, wide_depth, branches, mode)
    wide = dlor_parameter_count(width, wide_depth, rank, mode, branches)
    per_layer = 2 * width * rank + 1 + width
    assert abs(dlor_parameter_count(width, depth, rank, "deep") - wide) <= per_layer / 2


def test_default_wide_networks_share_one_matched_deep_network() -> None:
    config = sawtooth_exp.DLoRSawtoothConfig()
    assert sawtooth_exp.deep_depths(config) == {"parallel": 14, "summed": 14}
    counts = {
        "deep": dlor_parameter_count(8, 14, 1, "deep"),
        "parallel": dlor_parameter_count(8, 3, 1, "parallel", 4),
        "summed": dlor_parameter_count(8, 3, 1, "summed", 5),
    }
    assert counts == {"deep": 375, "parallel": 376, "summed": 372}


# --------------------------------------------------------------------------------------------
# Per-cell statistics


def test_rank_test_equals_scipys_exact_mann_whitney_without_ties() -> None:
    from scipy import stats

    rng = np.random.default_rng(0)
    for shift in (0.0, 0.5, 2.0, 10.0):
        a, b = rng.normal(0, 1, 5), rng.normal(shift, 1, 5)
        expected = stats.mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue
        assert math.isclose(sawtooth_exp.rank_test(a, b), expected, rel_tol=1e-12)
    assert math.isclose(sawtooth_exp.rank_test([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]), 2 / 252)
    assert math.isclose(sawtooth_exp.rank_test([1, 2, 3, 4, 6], [5, 7, 8, 9, 10]), 4 / 252)


def test_rank_test_counts_never_reached_as_slowest() -> None:
    inf = math.inf
    assert math.isclose(sawtooth_exp.rank_test([100, 200, 300, 400, 500], [inf] * 5), 2 / 252)
    assert sawtooth_exp.rank_test([inf] * 5, [inf] * 5) == 1.0  # all tied: no evidence either way
    with pytest.raises(ValueError, match="`a` and `b` must be non-empty"):
        sawtooth_exp.rank_test([], [1.0])


def test_ratio_interval_is_welchs_interval_on_log10() -> None:
    from scipy import stats

    rng = np.random.default_rng(1)
    deep, wide = 10 ** rng.normal(-4, 0.2, 5), 10 ** rng.normal(-3.8, 0.4, 5)
    ratio, low, high = sawtooth_exp.ratio_interval(deep, wide, 0.95)
    welch = stats.ttest_ind(np.log10(wide), np.log10(deep), equal_var=False)
    interval = welch.confidence_interval(0.95)
    assert math.isclose(math.log10(ratio), np.log10(wide).mean() - np.log10(deep).mean(), rel_tol=1e-12)
    assert math.isclose(math.log10(low), interval.low, rel_tol=1e-10)
    assert math.isclose(math.log10(high), interval.high, rel_tol=1e-10)
    assert all(math.isnan(v) for v in sawtooth_exp.ratio_interval([1e-3, math.inf], [1e-3, 2e-3]))


def _cell(mse: list[float], epochs: list[int | None]) -> dict:
    return {"final_test_mse": json.dumps(mse), "epochs_to_threshold": json.dumps(epochs)}


def test_compare_cell_calls_a_claim_reproduced_only_when_significant() -> None:
    separated = sawtooth_exp.compare_cell(
        _cell([1e-5, 2e-5, 3e-5, 4e-5, 5e-5], [100, 150, 200, 250, 300]),
        _cell([1e-4, 2e-4, 3e-4, 4e-4, 5e-4], [None] * 5),
    )
    assert separated["verdict_mse"] == "reproduced" and math.isclose(separated["p_mse"], 2 / 252)
    assert separated["verdict_success"] == "reproduced" and math.isclose(separated["p_success"], 2 / 252)
    assert separated["verdict_speed"] == "reproduced"
    assert separated["ratio_low"] > 1
    # the d2t2 cell at 50,000 epochs: deep 2.6e-4 [1.5e-4, 4.2e-4], wide 4.0e-4 [2.6e-4, 4.5e-4]
    overlapping = sawtooth_exp.compare_cell(
        _cell([1.5e-4, 2.2e-4, 2.6e-4, 3.0e-4, 4.2e-4], [3000, 4000, 4150, 4500, 5000]),
        _cell([2.6e-4, 3.5e-4, 4.0e-4, 4.3e-4, 4.5e-4], [3500, 3800, 3850, 4200, 6000]),
    )
    assert overlapping["verdict_mse"] == "not significant" and overlapping["p_mse"] > 0.05
    assert overlapping["ratio_low"] < 1 < overlapping["ratio_high"]
    assert overlapping["verdict_success"] == "not significant" and overlapping["p_success"] == 1.0
    reversed_cell = sawtooth_exp.compare_cell(
        _cell([1e-4, 2e-4, 3e-4, 4e-4, 5e-4], [1, 2, 3, 4, 5]), _cell([1e-5, 2e-5, 3e-5, 4e-5, 5e-5], [1, 2, 3, 4, 5])
    )
    assert reversed_cell["verdict_mse"] == "reversed" and reversed_cell["verdict_speed"] == "not significant"


def test_parse_target() -> None:
    assert sawtooth_exp.parse_target("d2t4") == (2, 4)
    for bad in ("d0t2", "2x4", "d1t0"):
        with pytest.raises(ValueError, match="`targets`"):
            sawtooth_exp.parse_target(bad)


def test_ridge_floor_of_the_saddle_is_4_over_135() -> None:
    """Best ridge fit of x₁x₂ on [−1, 1]² is along (1, 1)/√2 with MSE E[(√2 − |t|)⁴]/45 = 4/135."""
    X, y = blindspot.saddle_data(200_000, seed=3)
    floor, theta = blindspot.ridge_floor(X, y, directions=36, bins=200)
    assert abs(floor - 4 / 135) < 0.03 * 4 / 135
    assert min(abs(theta - np.pi / 4), abs(theta - 3 * np.pi / 4)) < 1e-9
    # a ridge target has no floor
    X2 = np.random.default_rng(0).uniform(-1, 1, (50_000, 2))
    ridge_floor, _ = blindspot.ridge_floor(X2, np.sin(3 * (X2[:, 0] - X2[:, 1])), directions=36, bins=200)
    assert ridge_floor < 1e-3


def test_trained_rank_one_networks_stay_above_the_floor_and_dlor_goes_below() -> None:
    X, y = (torch.as_tensor(a, dtype=torch.float32) for a in blindspot.saddle_data(512, seed=0))
    X_test, y_test = (torch.as_tensor(a, dtype=torch.float32) for a in blindspot.saddle_grid(40))
    rank_one = [rank_one_mlp(2, 1, 16, 2, "tanh") for _ in range(2)]
    test, _, trained = train_vmapped(rank_one, X, y, X_test, y_test, epochs=300, lr=1e-2)
    assert min(test) >= 0.9 * 4 / 135
    for net in trained:  # training cannot remove the blind spot
        net = net.double()
        v = net[0].v.detach()
        w = torch.stack([-v[1], v[0]])
        x = X_test.double()
        torch.testing.assert_close(net(x + 0.2 * w), net(x), rtol=0, atol=1e-12)
    torch.manual_seed(0)
    dlor = [dlor_mlp(2, 1, 16, 2, 1, "deep", "tanh") for _ in range(2)]
    test, _, _ = train_vmapped(dlor, X, y, X_test, y_test, epochs=300, lr=1e-2)
    assert max(test) < 0.5 * 4 / 135


def test_build_batched_seeds_each_network() -> None:
    from structnets.training import seeded

    net = build_batched([3, 5], 2, 6, 2, 1, "summed", "tanh", 2, dtype=F64)
    x = torch.rand(9, 2, dtype=F64)
    for s, seed in enumerate((3, 5)):
        with seeded(seed):
            model = dlor_mlp(2, 1, 6, 2, 1, "summed", "tanh", 2, dtype=F64)
        torch.testing.assert_close(net(x)[s], model(x), rtol=1e-12, atol=1e-12)


def test_one_batched_step_moves_each_coordinate_by_lr() -> None:
    """Adam's first step is θ − lr·g/(|g| + ε) (bias-corrected moments m̂ = g, v̂ = g²), with g the
    gradient of Σ_s MSE_s, whose part for seed s is the gradient of that seed's own MSE."""
    torch.manual_seed(0)
    net = BatchedDLoRNet([dlor_mlp(1, 1, 4, 2, 1, "deep", "tanh", dtype=F64) for _ in range(2)])
    X, y = torch.rand(12, 1, dtype=F64), torch.rand(12, dtype=F64)
    start = [p.detach().clone() for p in net.parameters()]
    loss = ((net(X) - y.reshape(1, -1, 1)) ** 2).mean(dim=(1, 2)).sum()
    grads = torch.autograd.grad(loss, list(net.parameters()))
    train_batched(net, X, y, X, y, epochs=1, lr=0.01, eval_every=1, schedule="constant")
    for p, p0, g in zip(net.parameters(), start, grads, strict=True):
        torch.testing.assert_close(p.detach(), p0 - 0.01 * g / (g.abs() + 1e-8), rtol=0, atol=1e-15)


def test_bad_input_is_named() -> None:
    model = dlor_mlp(1, 1, 4, 1, 1, "deep", "tanh")
    with pytest.raises(ValueError, match="`models`"):
        BatchedDLoRNet([])
    with pytest.raises(TypeError, match="`models`"):
        BatchedDLoRNet([torch.nn.Sequential(torch.nn.Linear(1, 1))])
    with pytest.raises(TypeError, match="`models`"):
        BatchedDLoRNet(model)
    with pytest.raises(ValueError, match="`models`"):
        BatchedDLoRNet([model, dlor_mlp(1, 1, 4, 2, 1, "deep", "tanh")])
    with pytest.raises(ValueError, match="`seeds`"):
        build_batched([], 1, 4, 1, 1, "deep", "tanh")
    X, y = torch.rand(5, 1), torch.rand(5)
    net = BatchedDLoRNet([model])
    for kwargs, name in (({"epochs": 0}, "epochs"), ({"lr": -1.0}, "lr"), ({"schedule": "step"}, "schedule")):
        arguments = {"epochs": 1, "lr": 0.1, "eval_every": 1} | kwargs
        with pytest.raises(ValueError, match=f"`{name}`"):
            train_batched(net, X, y, X, y, **arguments)
    with pytest.raises(ValueError, match="`eval_every`"):
        train_batched(net, X, y, X, y, epochs=1, lr=0.1, eval_every=0)
    with pytest.raises(ValueError, match="`threshold`"):
        train_batched(net, X, y, X, y, epochs=1, lr=0.1, eval_every=1, threshold=0.0)
    with pytest.raises(ValueError, match="`models`"):
        train_vmapped([], X, y, X, y, epochs=1, lr=0.1)
