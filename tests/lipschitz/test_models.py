"""lipschitz_resnet: every variant 1-Lipschitz in fact, certified bound ≤ 1, exports identical."""

from __future__ import annotations

import io

import pytest
import torch

from structnets.analysis import lipschitz_upper_bound
from structnets.models import export_model, lipschitz_resnet

from .helpers import measured_lipschitz, train_for_steepness

F64 = torch.float64


@pytest.mark.parametrize(
    "variant, kwargs",
    [
        ("gradient-step", {}),
        ("gradient-step", {"learnable_step": False, "step": 2.0, "hidden": 12}),
        ("fixed-width", {}),
        ("gradient-step", {"bound": "power"}),
        ("gradient-step", {"lift": "orthogonal"}),
        ("gradient-step", {"lift": "orthogonal", "maxmin": True, "learnable_step": False, "step": 2.0}),
        ("fixed-width", {"lift": "orthogonal"}),
    ],
    ids=[
        "gs-learnable",
        "cpl-fixed-step",
        "fixed-width",
        "gs-power",
        "gs-orthogonal",
        "cpl-orthogonal-maxmin",
        "fw-orthogonal",
    ],
)
@pytest.mark.parametrize("dtype", [torch.float32, F64], ids=str)
def test_model_is_one_lipschitz_after_steepness_training(variant: str, kwargs: dict, dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    model = lipschitz_resnet(5, 3, width=8, depth=4, variant=variant, dtype=dtype, **kwargs)
    train_for_steepness(model, 5, steps=30, lr=0.05)
    assert lipschitz_upper_bound(model) <= 1.0
    assert measured_lipschitz(model, 5) <= 1 + 1e-5
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    torch.manual_seed(1)
    fresh = lipschitz_resnet(5, 3, width=8, depth=4, variant=variant, dtype=dtype, **kwargs).eval()
    fresh.load_state_dict(torch.load(buffer))
    assert measured_lipschitz(fresh, 5) <= 1 + 1e-5
    x = torch.randn(20, 5, dtype=dtype)
    torch.testing.assert_close(fresh(x), model(x), rtol=0, atol=0)
    exported = export_model(model)
    torch.testing.assert_close(exported(x), model(x), rtol=0, atol=1e-6)


def test_unconstrained_variant_is_not_one_lipschitz_and_bounds_are_ordered() -> None:
    torch.manual_seed(0)
    model = lipschitz_resnet(5, 3, width=8, depth=3, variant="unconstrained", dtype=F64)
    train_for_steepness(model, 5, steps=30, lr=0.05)
    lower = measured_lipschitz(model, 5)
    assert lower > 1.5
    assert lipschitz_upper_bound(model) >= lower


def test_layout() -> None:
    model = lipschitz_resnet(4, 2, width=6, depth=3, variant="fixed-width", hidden=10)
    names = [type(m).__name__ for m in model]
    assert names == ["NormConstrainedLinear"] + ["GradientStepResidual", "NormConstrainedLinear"] * 3 + [
        "NormConstrainedLinear"
    ]
    assert model[1].hidden == 10
    assert model(torch.randn(7, 4)).shape == (7, 2)


def test_orthogonal_lift_and_maxmin_layout_and_certificate() -> None:
    model = lipschitz_resnet(6, 3, width=4, depth=2, lift="orthogonal", maxmin=True, dtype=F64).eval()
    names = [type(m).__name__ for m in model]
    assert names == ["OrthogonalLinear"] + ["GradientStepResidual", "MaxMin"] * 2 + ["OrthogonalLinear"]
    # the lift preserves every direction in its row space (all singular values ≈ 1), unlike V/max(1, B(V))
    singular = torch.linalg.svdvals(model[0].to_dense().detach())
    assert float(singular.min()) >= 1 - 1.1e-6 and float(singular.max()) <= 1.0
    assert lipschitz_upper_bound(model) <= 1.0
    plain = lipschitz_resnet(6, 3, width=4, depth=2, dtype=F64)
    assert float(torch.linalg.svdvals(plain[0].to_dense().detach()).min()) < 0.99


def test_fixed_width_defaults_to_d_plus_3_and_holds_the_theorems_max_min_block_exactly() -> None:
    # Fixed-width theorem (Murari, Furuya, Schönlieb 2025): width d + 3 suffices; its blocks carry
    # max{x1, x2} and min{x1, x2}. With d = 2 (width 5), a lift that embeds x, one gradient step
    # with w = (−1, 1, 0, 0, 0)/√2 and τ = 2/‖w‖² = 2 sorts the pair: z1 + σ(z2 − z1) = max.
    model = lipschitz_resnet(
        2, 1, None, depth=1, variant="fixed-width", hidden=1, step=2.0, learnable_step=False, dtype=F64
    )
    assert [m.in_features if hasattr(m, "in_features") else m.features for m in model][1:] == [5, 5, 5]
    lift, block, between, head = model
    with torch.no_grad():
        lift.raw_weight.copy_(torch.eye(5, 2, dtype=F64))
        lift.bias.zero_()
        block.weight.copy_(torch.tensor([[-1.0, 1.0, 0.0, 0.0, 0.0]], dtype=F64) / 2**0.5)
        block.bias.zero_()
        between.raw_weight.copy_(torch.eye(5, dtype=F64))
        between.bias.zero_()
        head.raw_weight.copy_(torch.eye(1, 5, dtype=F64))
        head.bias.zero_()
    model.eval()
    x = torch.randn(1000, 2, dtype=F64) * 3
    torch.testing.assert_close(model(x)[:, 0], x.max(dim=1).values, rtol=0, atol=1e-12)
    assert lipschitz_upper_bound(model) <= 1.0 + 1e-12


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        ({"width": 0}, "width"),
        ({"width": None}, "width"),
        ({"depth": 0}, "depth"),
        ({"depth": 2.0}, "depth"),
        ({"variant": "cpl"}, "variant"),
        ({"step": 0.0}, "step"),
        ({"step": 2.0}, "step"),
        ({"hidden": -1}, "hidden"),
        ({"in_features": 0}, "in_features"),
        ({"lift": "polar"}, "lift"),
        ({"maxmin": 1}, "maxmin"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict, argument: str) -> None:
    base = {"in_features": 3, "out_features": 2, "width": 4, "depth": 2}
    with pytest.raises((ValueError, TypeError), match=f"`{argument}`"):
        lipschitz_resnet(**{**base, **kwargs})


def test_input_feature_mismatch_is_an_error() -> None:
    model = lipschitz_resnet(3, 2, width=4, depth=2)
    with pytest.raises(ValueError, match="in_features=3"):
        model(torch.randn(5, 4))
    with pytest.raises(ValueError, match="features=6"):
        lipschitz_resnet(3, 2, width=6, depth=1)[1](torch.randn(2, 5))
