"""GradientStepResidual, NormConstrainedLinear, MaxMin: 1-Lipschitz in fact, exports, checkpoints."""

from __future__ import annotations

import ast
import io

import pytest
import torch
from torch import nn
from torch.func import functional_call

from structnets.analysis import jacobian_spectral_norms, lipschitz_upper_bound
from structnets.nn import GradientStepResidual, MaxMin, NormConstrainedLinear, UnconstrainedResidual

from .helpers import measured_lipschitz, train_for_steepness

F64 = torch.float64
TOL = 1 + 1e-5


def _layers(dtype: torch.dtype) -> dict[str, tuple[nn.Module, int]]:
    torch.manual_seed(0)
    return {
        "gs-exact": (GradientStepResidual(6, 9, dtype=dtype), 6),
        "gs-learnable": (GradientStepResidual(5, 3, step=1.5, learnable_step=True, dtype=dtype), 5),
        "gs-gram-nobias": (GradientStepResidual(4, 8, bias=False, bound="gram", dtype=dtype), 4),
        "gs-frobenius": (GradientStepResidual(7, 7, bound="frobenius", dtype=dtype), 7),
        "gs-power": (GradientStepResidual(6, 12, bound="power", dtype=dtype), 6),
        "ncl-exact": (NormConstrainedLinear(6, 6, dtype=dtype), 6),
        "ncl-wide": (NormConstrainedLinear(3, 10, bound="gram", dtype=dtype), 3),
        "ncl-power": (NormConstrainedLinear(8, 5, bound="power", dtype=dtype), 8),
    }


@pytest.mark.parametrize("dtype", [torch.float32, F64], ids=str)
@pytest.mark.parametrize("name", list(_layers(F64)))
def test_one_lipschitz_after_steepness_training_and_after_reload(name: str, dtype: torch.dtype) -> None:
    layer, features = _layers(dtype)[name]
    train_for_steepness(layer, features, steps=40, lr=0.1)
    before = measured_lipschitz(layer, features)
    assert before <= TOL, f"{name}: measured Lipschitz {before}"
    assert lipschitz_upper_bound(layer) <= 1.0
    buffer = io.BytesIO()
    torch.save(layer.state_dict(), buffer)
    buffer.seek(0)
    fresh, _ = _layers(dtype)[name]
    fresh.load_state_dict(torch.load(buffer))
    fresh.eval()
    x = torch.randn(32, features, dtype=dtype)
    torch.testing.assert_close(fresh(x), layer(x), rtol=0, atol=0)
    assert measured_lipschitz(fresh, features) <= TOL


def test_steepness_training_breaks_an_unconstrained_block() -> None:
    """Negative control: the same training pushes an unconstrained residual well above 1."""
    block = UnconstrainedResidual(6, 9, dtype=F64)
    train_for_steepness(block, 6, steps=40, lr=0.1)
    assert measured_lipschitz(block, 6) > 2.0


def test_step_is_certified_and_exact_bound_gives_two_over_norm_squared() -> None:
    layer = GradientStepResidual(5, 7, dtype=F64)
    sigma = torch.linalg.matrix_norm(layer.weight.detach(), 2)
    torch.testing.assert_close(layer.tau(), 2.0 / sigma**2, rtol=1e-10, atol=0)
    assert float(layer.tau().detach()) <= 2.0 / float(sigma) ** 2
    # With every ReLU active the Jacobian is I − τWᵀW: its extreme eigenvalue is exactly 1 − τσ₁² = −1.
    with torch.no_grad():
        layer.bias.fill_(100.0)
    x = torch.zeros(1, 5, dtype=F64)
    assert float(jacobian_spectral_norms(layer, x)[0]) == pytest.approx(1.0, abs=1e-9)
    # ...so any larger step (an undershooting norm estimate) breaks 1-Lipschitzness:
    steeper = torch.eye(5, dtype=F64) - 1.05 * layer.tau() * layer.weight.T @ layer.weight
    assert float(torch.linalg.matrix_norm(steeper.detach(), 2)) > 1.04


def test_power_mode_trains_on_estimate_but_evaluates_certified() -> None:
    layer = GradientStepResidual(6, 6, bound="power", dtype=F64)
    with torch.no_grad():
        layer.power_vector.copy_(torch.linalg.svd(layer.weight)[2][-1])  # worst start: smallest direction
    train_estimate = float(layer.weight_norm_bound().detach())
    sigma = float(torch.linalg.matrix_norm(layer.weight.detach(), 2))
    assert train_estimate <= sigma
    layer.eval()
    assert float(layer.weight_norm_bound()) >= sigma
    # eval bound is cached and refreshed when the weight changes in place
    with torch.no_grad():
        layer.weight.mul_(3.0)
    assert float(layer.weight_norm_bound()) == pytest.approx(3 * sigma, rel=1e-10)


@pytest.mark.parametrize("name", list(_layers(F64)))
def test_export_has_identical_outputs(name: str) -> None:
    layer, features = _layers(torch.float32)[name]
    train_for_steepness(layer, features, steps=5)
    exported = layer.export()
    assert not any(
        type(m).__module__.startswith("structnets.nn.") and not type(m).__name__ == "ResidualExport"
        for m in exported.modules()
    )
    x = torch.randn(50, features)
    torch.testing.assert_close(exported(x), layer(x), rtol=0, atol=1e-6)


def test_maxmin_is_pairwise_sort_and_exports_as_gradient_step() -> None:
    for features in (1, 2, 5, 8):
        layer = MaxMin(features)
        x = torch.randn(4, 3, features, dtype=F64)
        out = layer(x)
        pairs = features // 2
        head = x[..., : 2 * pairs].unflatten(-1, (pairs, 2)).sort(dim=-1, descending=True).values.flatten(-2)
        torch.testing.assert_close(out[..., : 2 * pairs], head, rtol=0, atol=0)
        if features % 2:
            assert torch.equal(out[..., -1], x[..., -1])
        torch.testing.assert_close(layer.export(dtype=F64)(x), out, rtol=0, atol=1e-12)
        if features > 1:
            assert float(jacobian_spectral_norms(layer, x.reshape(-1, features)).max()) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="`input`"):
        MaxMin(4)(torch.zeros(2, 3))


@pytest.mark.parametrize("name", ["gs-exact", "gs-learnable", "gs-gram-nobias", "gs-frobenius"])
def test_gradcheck_input_and_parameters(name: str) -> None:
    layer, features = _layers(F64)[name]
    names = [n for n, _ in layer.named_parameters()]
    params = tuple(p.detach().clone().requires_grad_(True) for _, p in layer.named_parameters())
    x = torch.randn(3, features, dtype=F64, requires_grad=True)

    def fn(x: torch.Tensor, *ps: torch.Tensor) -> torch.Tensor:
        return functional_call(layer, dict(zip(names, ps, strict=True)), (x,))

    assert torch.autograd.gradcheck(fn, (x, *params))


@pytest.mark.parametrize("name", list(_layers(F64)))
def test_state_dict_round_trip_and_repr_rebuild(name: str) -> None:
    layer, features = _layers(F64)[name]
    call = ast.parse(f"f({layer.extra_repr()})", mode="eval").body
    kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}
    torch.manual_seed(5)
    other = type(layer)(**kwargs, dtype=F64)
    assert other.extra_repr() == layer.extra_repr()
    x = torch.randn(4, features, dtype=F64)
    other.eval(), layer.eval()
    assert not torch.equal(other(x), layer(x))
    other.load_state_dict(layer.state_dict())
    assert torch.equal(other(x), layer(x))


@pytest.mark.parametrize("name", list(_layers(F64)))
def test_nan_checkpoint_is_rejected_by_name(name: str) -> None:
    layer, _ = _layers(F64)[name]
    state = layer.state_dict()
    key = next(k for k in state if "weight" in k)
    state[key] = torch.full_like(state[key], float("nan"))
    with pytest.raises(ValueError, match=key):
        layer.load_state_dict(state)


def test_checkpoint_breaking_the_norm_constraint_is_reprojected() -> None:
    layer = NormConstrainedLinear(5, 4, dtype=F64)
    state = layer.state_dict()
    state["raw_weight"] = 50.0 * torch.randn(4, 5, dtype=F64)
    layer.load_state_dict(state)
    dense = layer.to_dense()
    assert float(torch.linalg.matrix_norm(dense.detach(), 2)) <= 1.0 + 1e-12
    torch.testing.assert_close(dense, state["raw_weight"] / torch.linalg.matrix_norm(state["raw_weight"], 2))
    small = 0.3 * torch.eye(4, 5, dtype=F64)
    state["raw_weight"] = small
    layer.load_state_dict(state)
    assert torch.equal(layer.to_dense(), small)  # inside the ball: untouched
