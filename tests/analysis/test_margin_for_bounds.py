"""margin_for_bounds: the quantile of the training margins, or of the positive ones."""

from __future__ import annotations

import pytest
import torch

from structnets.analysis import margin_for_bounds, margin_loss

F64 = torch.float64


def test_quantile_of_the_margins_when_positive() -> None:
    values = torch.arange(1, 11, dtype=F64)  # 1, 2, ..., 10
    # torch.quantile interpolates linearly: position q·(n − 1) = 0.1·9 = 0.9 → 1.9
    assert margin_for_bounds(values, 0.1) == pytest.approx(1.9, abs=1e-15)
    assert margin_for_bounds(values, 0.5) == pytest.approx(5.5, abs=1e-15)
    # R̂_γ at that γ pays at least the fraction q of the sample
    assert margin_loss(values, margin_for_bounds(values, 0.1)) >= 0.1


def test_falls_back_to_the_positive_margins_then_to_the_fallback() -> None:
    values = torch.tensor([-3.0, -2.0, -1.0, 0.0, 2.0, 4.0], dtype=F64)
    # the 0.5-quantile of all margins is −0.5 ≤ 0; of the positive ones (2, 4) it is 3
    assert float(torch.quantile(values, 0.5)) < 0
    assert margin_for_bounds(values, 0.5) == 3.0
    assert margin_for_bounds(-values.abs() - 1, 0.5) == 1e-3
    assert margin_for_bounds(-values.abs() - 1, 0.5, fallback=0.25) == 0.25


def test_bad_input_names_the_argument() -> None:
    values = torch.ones(4, dtype=F64)
    with pytest.raises(ValueError, match="`quantile`"):
        margin_for_bounds(values, 1.0)
    with pytest.raises(ValueError, match="`fallback`"):
        margin_for_bounds(values, 0.5, fallback=0.0)
    with pytest.raises(ValueError, match="`margin_values`"):
        margin_for_bounds(torch.ones(2, 2), 0.5)
    with pytest.raises(ValueError, match="`margin_values` must be finite"):
        margin_for_bounds(torch.tensor([1.0, float("nan")]), 0.5)
