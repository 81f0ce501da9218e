"""Margin-aware losses for certified training: values against float64 hand computations, gradcheck,
what each loss's zero set means for the certified margin, bad input named."""

from __future__ import annotations

import math

import pytest
import torch

from structnets.experiments.lipschitz_moons import train_classifier
from structnets.training.losses import (
    CERTIFIED_LOSSES,
    certified_loss,
    hkr,
    margin_cross_entropy,
    multiclass_hinge,
    scaled_cross_entropy,
)

F64 = torch.float64
Z = [[1.0, -0.5, 0.25], [0.1, 0.3, -2.0], [-1.0, 2.0, 0.5], [0.0, 0.2, 0.7]]
Y = [0, 1, 1, 2]


def _ref_margin_ce(z: list[list[float]], y: list[int], m: float, t: float) -> float:
    total = 0.0
    for row, label in zip(z, y):
        shifted = [t * (v - (m if j == label else 0.0)) for j, v in enumerate(row)]
        total += math.log(sum(math.exp(s) for s in shifted)) - shifted[label]
    return total / len(z)


def _ref_hinge(z: list[list[float]], y: list[int], m: float) -> float:
    return sum(
        max(0.0, m - (row[label] - max(v for j, v in enumerate(row) if j != label))) for row, label in zip(z, y)
    ) / len(z)


def _ref_hkr(z: list[list[float]], y: list[int], m: float, alpha: float) -> float:
    n, k = len(z), len(z[0])
    hinge = 0.0
    for row, label in zip(z, y):
        for j, v in enumerate(row):
            sign = 1.0 if j == label else -1.0
            hinge += (k - 1.0 if j == label else 1.0) * max(0.0, m / 2 - sign * v)
    hinge /= n * k
    kr = 0.0
    for c in range(k):
        pos = [z[i][c] for i in range(n) if y[i] == c]
        neg = [z[i][c] for i in range(n) if y[i] != c]
        if pos and neg:
            kr += sum(pos) / len(pos) - sum(neg) / len(neg)
    kr /= k
    return alpha * hinge - (1 - alpha) * kr


@pytest.mark.parametrize("margin, temperature", [(0.0, 1.0), (2.2, 4.0), (1.0, 0.5), (3.0, 16.0)])
def test_margin_cross_entropy_matches_float64_formula(margin: float, temperature: float) -> None:
    got = margin_cross_entropy(torch.tensor(Z, dtype=F64), torch.tensor(Y), margin=margin, temperature=temperature)
    assert float(got) == pytest.approx(_ref_margin_ce(Z, Y, margin, temperature), rel=1e-14, abs=1e-14)


def test_margin_zero_is_the_scaled_cross_entropy() -> None:
    z, y = torch.tensor(Z, dtype=F64), torch.tensor(Y)
    assert float(margin_cross_entropy(z, y, margin=0.0, temperature=3.0)) == pytest.approx(
        float(scaled_cross_entropy(z, y, temperature=3.0)), rel=1e-15
    )
    assert float(scaled_cross_entropy(z, y, temperature=3.0)) == pytest.approx(
        _ref_margin_ce(Z, Y, 0.0, 3.0), rel=1e-14
    )


@pytest.mark.parametrize("margin", [0.0, 0.5, 2.2])
def test_multiclass_hinge_matches_float64_formula(margin: float) -> None:
    got = multiclass_hinge(torch.tensor(Z, dtype=F64), torch.tensor(Y), margin=margin)
    assert float(got) == pytest.approx(_ref_hinge(Z, Y, margin), rel=1e-14, abs=1e-15)


@pytest.mark.parametrize("margin, alpha", [(1.0, 0.5), (2.2, 0.98), (0.5, 0.0), (1.5, 1.0)])
def test_hkr_matches_float64_formula(margin: float, alpha: float) -> None:
    got = hkr(torch.tensor(Z, dtype=F64), torch.tensor(Y), margin=margin, alpha=alpha)
    assert float(got) == pytest.approx(_ref_hkr(Z, Y, margin, alpha), rel=1e-13, abs=1e-14)


def test_hkr_class_absent_from_batch_contributes_no_kr_term() -> None:
    z = torch.tensor([[0.3, -0.2, 0.9], [1.0, 0.1, -0.4]], dtype=F64)
    y = torch.tensor([0, 0])  # class 0 in every row, classes 1 and 2 in none
    assert float(hkr(z, y, margin=1.0, alpha=0.0)) == 0.0


@pytest.mark.parametrize(
    "loss",
    [
        lambda z, y: margin_cross_entropy(z, y, margin=1.3, temperature=2.5),
        lambda z, y: scaled_cross_entropy(z, y, temperature=0.7),
        lambda z, y: multiclass_hinge(z, y, margin=1.5),
        lambda z, y: hkr(z, y, margin=1.2, alpha=0.7),
    ],
    ids=["margin-ce", "scaled-ce", "hinge", "hkr"],
)
def test_gradcheck(loss) -> None:  # type: ignore[no-untyped-def]
    generator = torch.Generator().manual_seed(0)
    z = torch.randn(6, 4, generator=generator, dtype=F64, requires_grad=True)
    y = torch.tensor([0, 1, 2, 3, 1, 0])
    assert torch.autograd.gradcheck(lambda t: loss(t, y), (z,))


def test_hinge_is_zero_exactly_when_every_margin_reaches_m() -> None:
    z = torch.tensor([[3.0, 0.8, 0.0], [0.0, -1.0, 2.2]], dtype=F64)  # margins 2.2 and 2.2
    y = torch.tensor([0, 2])
    assert float(multiclass_hinge(z, y, margin=2.2)) == 0.0
    assert float(multiclass_hinge(z, y, margin=2.3)) == pytest.approx(0.1, abs=1e-12)


def test_margin_ce_keeps_pushing_a_correct_point_whose_margin_is_below_m() -> None:
    # a point classified correctly with margin 0.5: plain CE at T = 4 has a small gradient, the
    # margin loss (m = 2.2) a gradient close to its maximum −T (it still counts as a mistake).
    z = torch.tensor([[0.5, 0.0]], dtype=F64, requires_grad=True)
    y = torch.tensor([0])
    (plain,) = torch.autograd.grad(scaled_cross_entropy(z, y, temperature=4.0), z)
    (margin,) = torch.autograd.grad(margin_cross_entropy(z, y, margin=2.2, temperature=4.0), z)
    assert float(-margin[0, 0]) == pytest.approx(4.0 / (1.0 + math.exp(4.0 * (0.5 - 2.2))), rel=1e-12)
    assert float(-margin[0, 0]) > 5 * float(-plain[0, 0])


def test_certified_loss_binds_options_and_passes_callables() -> None:
    z, y = torch.tensor(Z, dtype=F64), torch.tensor(Y)
    assert set(CERTIFIED_LOSSES) == {"margin-ce", "scaled-ce", "hinge", "hkr"}
    assert float(certified_loss("margin-ce", margin=1.0, temperature=2.0)(z, y)) == pytest.approx(
        _ref_margin_ce(Z, Y, 1.0, 2.0)
    )
    assert float(certified_loss("hinge", margin=0.5)(z, y)) == pytest.approx(_ref_hinge(Z, Y, 0.5))
    assert float(certified_loss("hkr", margin=0.5, alpha=0.3)(z, y)) == pytest.approx(_ref_hkr(Z, Y, 0.5, 0.3))
    custom = lambda z, y: z.sum()  # noqa: E731
    assert certified_loss(custom) is custom


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"name": "margin"}, "loss"),
        ({"margin": -0.1}, "margin"),
        ({"temperature": 0.0}, "temperature"),
        ({"temperature": -1.0}, "temperature"),
        ({"alpha": 1.5}, "alpha"),
        ({"margin": float("nan")}, "margin"),
    ],
)
def test_bad_options_are_named(kwargs: dict, argument: str) -> None:
    with pytest.raises(ValueError, match=f"`{argument}`") as info:
        certified_loss(**kwargs)
    if argument == "loss":
        assert all(name in str(info.value) for name in CERTIFIED_LOSSES)


def test_pure_functions_reject_negative_margin_and_bad_shapes() -> None:
    z, y = torch.tensor(Z, dtype=F64), torch.tensor(Y)
    for fn in (margin_cross_entropy, multiclass_hinge, hkr):
        with pytest.raises(ValueError, match="`margin`"):
            fn(z, y, margin=-1.0)
    with pytest.raises(ValueError, match="`target`"):
        margin_cross_entropy(z, y[:2])
    with pytest.raises(ValueError, match="`output`"):
        multiclass_hinge(z[:, 0], y)


def test_train_classifier_accepts_any_callable_loss_and_names() -> None:
    torch.manual_seed(0)
    X, y = torch.randn(40, 3), torch.randint(0, 2, (40,))
    calls = []

    def loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        calls.append(logits.shape[0])
        return certified_loss("hinge", margin=1.0)(logits, target)

    model = torch.nn.Linear(3, 2)
    before = model.weight.detach().clone()
    train_classifier(model, X, y, epochs=2, batch_size=16, lr=0.01, seed=0, loss=loss)
    assert calls == [16, 16, 8] * 2  # every minibatch of every epoch went through the callable
    assert not torch.equal(model.weight, before)
    train_classifier(torch.nn.Linear(3, 2), X, y, epochs=1, batch_size=16, lr=0.01, seed=0, loss="hkr")
    with pytest.raises(ValueError, match="`loss`"):
        train_classifier(torch.nn.Linear(3, 2), X, y, epochs=1, batch_size=16, lr=0.01, seed=0, loss="cross-entropyy")
    with pytest.raises(TypeError, match="`loss`"):
        train_classifier(torch.nn.Linear(3, 2), X, y, epochs=1, batch_size=16, lr=0.01, seed=0, loss=3)
