"""lipschitz_upper_bound / lipschitz_lower_bound / certified_accuracy on models with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from structnets.analysis import certified_accuracy, lipschitz_lower_bound, lipschitz_upper_bound

F64 = torch.float64


def test_linear_map_bounds_meet_at_the_spectral_norm() -> None:
    torch.manual_seed(0)
    layer = nn.Linear(6, 4, dtype=F64)
    sigma = float(torch.linalg.matrix_norm(layer.weight.detach(), 2))
    upper = lipschitz_upper_bound(layer)
    lower = lipschitz_lower_bound(layer, torch.randn(10, 6, dtype=F64), steps=5)
    assert sigma <= upper <= sigma * (1 + 1e-10)
    assert lower == pytest.approx(sigma, rel=1e-10)  # the Jacobian of a linear map is W


def test_unconstrained_mlp_bounds_are_ordered_and_product_rule_holds() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 2)).double()
    upper = lipschitz_upper_bound(model)
    norms = [float(torch.linalg.matrix_norm(m.weight.detach(), 2)) for m in model if isinstance(m, nn.Linear)]
    assert upper == pytest.approx(math.prod(norms), rel=1e-9)
    lower = lipschitz_lower_bound(model, torch.randn(64, 3, dtype=F64), steps=40)
    assert 0 < lower <= upper


def test_gradient_ascent_improves_on_jacobian_at_inputs() -> None:
    # f(x) = sin(3x)/3 has Lip(f) = 1, attained only at x = kπ/3; the inputs sit where |f'| ≤ 0.37.
    def model(x: torch.Tensor) -> torch.Tensor:
        return torch.sin(3 * x) / 3

    x = torch.linspace(0.4, 0.45, 8, dtype=F64)[:, None]
    at_inputs = lipschitz_lower_bound(model, x, steps=0)
    assert at_inputs == pytest.approx(abs(math.cos(3 * 0.4)), rel=1e-9)
    ascended = lipschitz_lower_bound(model, x, steps=300, lr=0.02, pairs=8)
    assert 0.9 < ascended <= 1.0 + 1e-12


def test_unknown_layer_is_named() -> None:
    with pytest.raises(TypeError, match="BatchNorm1d"):
        lipschitz_upper_bound(nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)))


def test_certified_accuracy_on_hand_made_logits() -> None:
    logits = torch.tensor(
        [
            [3.0, 1.0, 0.0],  # label 0, margin 2
            [0.0, 1.0, 0.5],  # label 1, margin 0.5
            [1.0, 2.0, 0.0],  # label 0: wrong
            [1.0, 1.0, 0.0],  # label 0: tie counts as wrong
        ]
    )
    labels = torch.tensor([0, 1, 0, 0])
    assert certified_accuracy(logits, labels, 0.0) == 0.5
    # margin 2 certifies ε ≤ 2/√2 = √2 (L = 1); margin 0.5 certifies ε ≤ 0.5/√2 ≈ 0.3536.
    assert certified_accuracy(logits, labels, 0.35) == 0.5
    assert certified_accuracy(logits, labels, 0.36) == 0.25
    assert certified_accuracy(logits, labels, math.sqrt(2) - 1e-9) == 0.25
    assert certified_accuracy(logits, labels, math.sqrt(2) + 1e-9) == 0.0
    assert certified_accuracy(logits, labels, 0.7, lipschitz=0.5) == 0.5  # √2·0.5·0.7 = 0.495 ≤ 0.5
    assert certified_accuracy(logits, labels, 0.71, lipschitz=0.5) == 0.25  # 0.502 > 0.5
    assert certified_accuracy(logits.numpy(), labels.numpy(), 0.0) == 0.5


def test_certified_accuracy_binary_single_logit() -> None:
    z = np.array([0.8, -0.3, 0.1, -2.0])
    y = np.array([1, 0, 0, 0])
    assert certified_accuracy(z, y, 0.0) == 0.75
    assert certified_accuracy(z, y, 0.5) == 0.5
    assert certified_accuracy(z[:, None], y, 0.9) == 0.25


def test_certified_accuracy_guarantee_holds_under_attack() -> None:
    """Points certified at ε keep their prediction under every perturbation we try of norm < ε."""
    from structnets.models import lipschitz_resnet

    torch.manual_seed(0)
    model = lipschitz_resnet(2, 3, width=6, depth=3, dtype=F64).eval()
    x = torch.randn(200, 2, dtype=F64)
    with torch.no_grad():
        logits = model(x)
    labels = logits.argmax(1)
    eps = 0.05
    z = logits.clone()
    top = z.gather(1, labels[:, None])[:, 0]
    z.scatter_(1, labels[:, None], -math.inf)
    certified = top - z.max(1).values >= math.sqrt(2) * eps
    assert certified.any()
    for _ in range(20):
        delta = torch.randn_like(x)
        delta = 0.999 * eps * delta / delta.norm(dim=1, keepdim=True)
        with torch.no_grad():
            assert torch.equal(model(x + delta).argmax(1)[certified], labels[certified])


@pytest.mark.parametrize(
    "kwargs, argument",
    [({"eps": -0.1}, "eps"), ({"eps": float("nan")}, "eps"), ({"lipschitz": 0.0}, "lipschitz")],
)
def test_certified_accuracy_bad_arguments(kwargs: dict, argument: str) -> None:
    args = {"logits": torch.zeros(2, 3), "labels": torch.tensor([0, 1]), "eps": 0.1, **kwargs}
    with pytest.raises(ValueError, match=f"`{argument}`"):
        certified_accuracy(**args)
    with pytest.raises(ValueError, match="`labels`"):
        certified_accuracy(torch.zeros(2, 3), torch.tensor([0, 3]), 0.1)


def test_logits_without_a_column_are_refused_naming_logits() -> None:
    from structnets.analysis import certified_radii

    labels = torch.zeros(3, dtype=torch.long)
    with pytest.raises(ValueError, match=r"`logits` must hold at least one column.*\(3, 0\)"):
        certified_accuracy(torch.zeros(3, 0), labels, 0.1)
    with pytest.raises(ValueError, match="`logits`"):
        certified_radii(torch.zeros(3, 0), labels)
