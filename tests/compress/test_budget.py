"""Model-wide budgets: within 2 % of the target, and the allocation finds the layers that matter."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from structnets import compress
from structnets.compression.allocation import Option, budget_ranks


def _mlp(seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(40, 96), nn.Tanh(), nn.Linear(96, 96), nn.Tanh(), nn.Linear(96, 64), nn.Tanh(), nn.Linear(64, 6)
    )


@pytest.mark.parametrize("measure", ["flops", "params"])
@pytest.mark.parametrize("target", [0.2, 0.35, 0.5, 0.8])
def test_budget_is_met_within_two_percent_and_reported(measure: str, target: float) -> None:
    model = _mlp()
    x = torch.randn(64, 40, generator=torch.Generator().manual_seed(1))
    report = compress(model, calibration=x, **{measure: target})
    assert target - 0.02 <= report.reached <= target
    assert report.budget == (measure, target)
    if measure == "params":
        assert report.budget_after == report.params_after and report.budget_before == report.params_before
    else:
        assert report.budget_after == sum(row.rows * row.flops_after for row in report.layers)
    assert f"reached {report.reached:.4f}" in report.summary()


def test_greedy_takes_the_largest_error_decrease_per_cost_first() -> None:
    # Two equal-shaped layers, one with a fast-decaying spectrum: it needs few ranks, the other many.
    fast = torch.tensor([0.9, 0.09, 0.009, 0.001] + [0.0] * 12)
    flat = torch.full((16,), 1 / 16)
    options = [Option(16, 16, False, 1, fast, 16), Option(16, 16, False, 1, flat, 16)]
    ranks, before, after, least = budget_ranks(options, 0.5, "params")
    assert before == 2 * 256 and least == 2 * 32 and after <= 256
    assert ranks[0] is not None and ranks[1] is not None and ranks[0] < ranks[1]
    # Each step the greedy took for the flat layer removed 1/16 per 32 entries; the fast layer's
    # next step (σ² share 0 after rank 4) would remove nothing.
    assert ranks[0] <= 4


def _digits() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    y = torch.tensor(digits.target)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    return x[order[:1200]], y[order[:1200]], x[order[1200:]], y[order[1200:]]


def test_digits_allocation_keeps_the_class_head_and_the_accuracy() -> None:
    """The issue's example: a uniform ratio of 1/3 gives the 10-class head rank 3 and loses much
    accuracy; the budgeted allocation at the same 1/3 of the parameters keeps it close by itself."""
    x, y, x_test, y_test = _digits()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(150):
        optimiser.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimiser.step()

    def accuracy(net: nn.Module) -> float:
        with torch.no_grad():
            return float((net(x_test).argmax(1) == y_test).float().mean())

    dense = accuracy(model)
    assert dense > 0.93
    uniform = compress(model, ratio=1 / 3)
    assert uniform.layers[2].rank == 3  # the head: 3·(128 + 10) ≤ 1280/3
    budgeted = compress(model, params=1 / 3, calibration=x)
    assert 1 / 3 - 0.02 <= budgeted.reached <= 1 / 3
    assert budgeted.params_after <= uniform.params_after
    head = budgeted.layers[2]
    assert not head.replaced or head.rank >= 9  # the head is kept (near) whole
    assert accuracy(budgeted.model) >= dense - 0.02
    assert accuracy(budgeted.model) > accuracy(uniform.model) + 0.1
