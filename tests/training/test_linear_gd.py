"""Full-batch gradient descent on deep linear networks through the data's second moments."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from structnets.training import fit
from structnets.training.linear_gd import deep_linear_gradient_descent

F64 = torch.float64


def _problem(depth: int, width: int = 6, n: int = 40, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, width, generator=g, dtype=F64)
    Y = X @ torch.randn(width, width, generator=g, dtype=F64).T + 0.1 * torch.randn(n, width, generator=g, dtype=F64)
    weights = [torch.randn(width, width, generator=g, dtype=F64) / width**0.5 for _ in range(depth)]
    return weights, X, Y


def _by_fit(weights, X, Y, steps: int, lr: float, weight_decay: float) -> list[torch.Tensor]:
    layers = [nn.Linear(w.shape[1], w.shape[0], bias=False, dtype=F64) for w in weights]
    with torch.no_grad():
        for layer, w in zip(layers, weights):
            layer.weight.copy_(w)
    fit(
        nn.Sequential(*layers), X, Y, loss=lambda out, y: 0.5 * (out - y).square().sum() / out.shape[0],
        epochs=steps, batch_size=None,
        optimizer=lambda params: torch.optim.SGD(params, lr=lr, weight_decay=weight_decay),
    )  # fmt: skip
    return [layer.weight.detach() for layer in layers]


@pytest.mark.parametrize("depth", [1, 2, 4])
@pytest.mark.parametrize("weight_decay", [0.0, 0.05])
def test_equals_fit_with_full_batch_sgd(depth: int, weight_decay: float) -> None:
    """The same iterates as autograd + torch.optim.SGD(weight_decay) on the full batch, to rounding."""
    weights, X, Y = _problem(depth)
    ours = deep_linear_gradient_descent(weights, X, Y, steps=300, lr=0.05, weight_decay=weight_decay)
    reference = _by_fit(weights, X, Y, steps=300, lr=0.05, weight_decay=weight_decay)
    for a, b in zip(ours, reference, strict=True):
        assert a.dtype == F64
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    # the inputs are not modified
    assert torch.equal(weights[0], _problem(depth)[0][0])


def test_one_layer_converges_to_the_ridge_solution() -> None:
    """L = 1: the minimiser of (1/2n)‖XWᵀ − Y‖² + (λ/2)‖W‖² is W* = Σ_yx (Σ_xx + λI)⁻¹."""
    weights, X, Y = _problem(1, n=80)
    lam = 0.1
    n = X.shape[0]
    ridge = (Y.T @ X / n) @ torch.linalg.inv(X.T @ X / n + lam * torch.eye(X.shape[1], dtype=F64))
    (trained,) = deep_linear_gradient_descent(weights, X, Y, steps=4000, lr=0.2, weight_decay=lam)
    torch.testing.assert_close(trained, ridge, rtol=1e-9, atol=1e-9)


def test_weight_decay_balances_the_layers() -> None:
    """Along gradient descent with λ > 0 the imbalance W₂ᵀW₂ − W₁W₁ᵀ decays as (1 − ηλ)^{2k}."""
    weights, X, Y = _problem(2, n=60)
    lr, lam, steps = 0.05, 0.05, 400

    def imbalance(ws: list[torch.Tensor]) -> float:
        return float(torch.linalg.matrix_norm(ws[1].T @ ws[1] - ws[0] @ ws[0].T))

    trained = deep_linear_gradient_descent(weights, X, Y, steps=steps, lr=lr, weight_decay=lam)
    measured = imbalance(trained) / imbalance(weights)
    predicted = (1 - lr * lam) ** (2 * steps)
    assert 0.5 * predicted <= measured <= 2.0 * predicted


def test_callback_sees_the_current_weights_at_the_requested_steps() -> None:
    weights, X, Y = _problem(3)
    seen: dict[int, list[torch.Tensor]] = {}
    final = deep_linear_gradient_descent(
        weights, X, Y, steps=20, lr=0.05, callback=lambda step, ws: seen.setdefault(step, [w.clone() for w in ws]),
        callback_steps={5, 20},
    )  # fmt: skip
    assert sorted(seen) == [5, 20]
    for a, b in zip(seen[20], final, strict=True):
        assert torch.equal(a, b)
    first5 = deep_linear_gradient_descent(weights, X, Y, steps=5, lr=0.05)
    for a, b in zip(seen[5], first5, strict=True):
        assert torch.equal(a, b)
    every: list[int] = []
    deep_linear_gradient_descent(weights, X, Y, steps=3, lr=0.05, callback=lambda step, ws: every.append(step))
    assert every == [1, 2, 3]


def test_bad_arguments_are_named() -> None:
    weights, X, Y = _problem(2)
    with pytest.raises(ValueError, match="`weights`"):
        deep_linear_gradient_descent([], X, Y, steps=1, lr=0.1)
    with pytest.raises(ValueError, match=r"`weights\[1\]`"):
        deep_linear_gradient_descent([weights[0], torch.zeros(3, 4, dtype=F64)], X, Y, steps=1, lr=0.1)
    with pytest.raises(ValueError, match="`X`"):
        deep_linear_gradient_descent(weights, X[:, :3], Y, steps=1, lr=0.1)
    with pytest.raises(ValueError, match="rows"):
        deep_linear_gradient_descent(weights, X, Y[:5], steps=1, lr=0.1)
    with pytest.raises(ValueError, match="finite"):
        deep_linear_gradient_descent(weights, X * np.nan, Y, steps=1, lr=0.1)
    with pytest.raises(ValueError, match="`steps`"):
        deep_linear_gradient_descent(weights, X, Y, steps=0, lr=0.1)
    with pytest.raises(ValueError, match="`lr`"):
        deep_linear_gradient_descent(weights, X, Y, steps=1, lr=0.0)
    with pytest.raises(ValueError, match="`weight_decay`"):
        deep_linear_gradient_descent(weights, X, Y, steps=1, lr=0.1, weight_decay=-1.0)
    with pytest.raises(TypeError, match="`callback`"):
        deep_linear_gradient_descent(weights, X, Y, steps=1, lr=0.1, callback=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`callback_steps`"):
        deep_linear_gradient_descent(weights, X, Y, steps=1, lr=0.1, callback=print, callback_steps=[0])


def test_divergence_stops_quietly_with_non_finite_weights() -> None:
    """Too large a step: the loop stops soon after the weights overflow, without numpy warnings."""
    weights, X, Y = _problem(3)
    steps: list[int] = []
    out = deep_linear_gradient_descent(weights, X, Y, steps=10_000, lr=50.0, callback=lambda s, ws: steps.append(s))
    assert not all(bool(torch.isfinite(w).all()) for w in out)
    assert len(steps) < 1000
