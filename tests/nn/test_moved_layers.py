"""Layers that moved into structnets.nn: old import paths, input checks, the power-clamped step."""

from __future__ import annotations

import pytest
import torch

import structnets.models
import structnets.nn
from structnets.nn import DLoRParallel, GradientStepResidual, PowerClampedResidual, TakeFirst, ZeroPad

F64 = torch.float64


@pytest.mark.parametrize(
    ("module", "names"),
    [
        ("structnets.models.lipschitz_resnet", ["UnconstrainedResidual"]),
        ("structnets.models", ["UnconstrainedResidual"]),
    ],
)
def test_old_import_paths_are_gone(module: str, names: list[str]) -> None:
    # the layer lives in structnets.nn only; the re-export shim was removed (CHANGELOG, Removed)
    old = __import__(module, fromlist=names)
    for name in names:
        assert name not in getattr(old, "__all__", ())
        assert name in structnets.nn.__all__
    assert not hasattr(structnets.models, "UnconstrainedResidual")


def test_zero_pad_and_take_first_are_the_embedding_and_projection() -> None:
    x = torch.randn(5, 3, dtype=F64)
    padded = ZeroPad(3, 7)(x)
    assert torch.equal(padded, x @ torch.eye(3, 7, dtype=F64))  # [I_3, 0]ᵀ applied to x
    assert torch.equal(TakeFirst(7, 3)(padded), x)  # TakeFirst ∘ ZeroPad = identity


@pytest.mark.parametrize(
    ("layer", "width", "message"),
    [(ZeroPad(3, 7), 4, "in_features=3"), (TakeFirst(7, 2), 6, "width=7")],
)
def test_wrong_input_width_is_named(layer: torch.nn.Module, width: int, message: str) -> None:
    with pytest.raises(ValueError, match=rf"`input` must have last dimension {message}, got shape \(2, {width}\)"):
        layer(torch.zeros(2, width))
    with pytest.raises(ValueError, match="`input` must have last dimension"):
        layer(torch.tensor(1.0))


def test_dlor_parallel_repr_with_a_module_activation() -> None:
    layer = DLoRParallel(5, 2, 2, torch.nn.Tanh())
    assert "activation=Tanh()" in layer.extra_repr()
    assert DLoRParallel(5, 2, 2, "tanh").extra_repr().count("activation='tanh'") == 1


def _second_singular_vector_start(layer: PowerClampedResidual) -> tuple[float, float]:
    """Point the power vector at W's second right-singular vector; return (σ₁, σ₂)."""
    _, s, vh = torch.linalg.svd(layer.weight.detach())
    with torch.no_grad():
        layer.power_vector.copy_(vh[1])
    return float(s[0]), float(s[1])


def test_power_clamped_training_step_follows_the_power_estimate() -> None:
    # v = second singular vector is an eigenvector of WᵀW: the power step keeps it, σ̂ = σ₂ < σ₁,
    # so the training step τ = 2/σ₂² exceeds the certified 2/σ₁².
    torch.manual_seed(0)
    layer = PowerClampedResidual(5, 5, step=2.0, bound="power", dtype=F64)
    sigma1, sigma2 = _second_singular_vector_start(layer)
    assert sigma2 < 0.9 * sigma1
    x = torch.randn(4, 5, dtype=F64)
    W, b = layer.weight.detach(), layer.bias.detach()
    expected = x - (2.0 / sigma2**2) * torch.relu(x @ W.T + b) @ W
    torch.testing.assert_close(layer(x), expected, rtol=1e-10, atol=1e-12)
    # With every ReLU active the Jacobian is I − τWᵀW, whose extreme eigenvalue 1 − 2σ₁²/σ₂² < −1.
    with torch.no_grad():
        layer.bias.fill_(100.0)
    jac = torch.autograd.functional.jacobian(layer, torch.zeros(5, dtype=F64))
    assert float(torch.linalg.matrix_norm(jac, 2)) == pytest.approx(2 * sigma1**2 / sigma2**2 - 1, rel=1e-8)


def test_power_clamped_eval_equals_certified_gradient_step() -> None:
    torch.manual_seed(1)
    layer = PowerClampedResidual(6, 4, step=2.0, bound="power", dtype=F64)
    torch.manual_seed(1)
    reference = GradientStepResidual(6, 4, step=2.0, bound="power", dtype=F64)
    _second_singular_vector_start(layer)
    layer.eval(), reference.eval()
    x = torch.randn(3, 6, dtype=F64)
    assert torch.equal(layer(x), reference(x))
    sigma1 = float(torch.linalg.matrix_norm(layer.weight.detach(), 2))
    assert float(layer.tau()) <= 2.0 / sigma1**2 * (1 + 1e-12)


def test_power_clamped_weight_norm_bound_is_the_power_estimate() -> None:
    torch.manual_seed(2)
    layer = PowerClampedResidual(5, 8, step=2.0, bound="power", dtype=F64)
    with torch.no_grad():
        layer.power_vector.copy_(torch.nn.functional.normalize(torch.ones(5, dtype=F64), dim=0))
    W = layer.weight.detach()
    v = layer.power_vector.clone()
    with torch.no_grad():  # no power step without gradients
        assert float(layer.weight_norm_bound()) == pytest.approx(float(torch.linalg.vector_norm(W @ v)), rel=1e-15)
    assert torch.equal(layer.power_vector, v)
    estimate = layer.weight_norm_bound()  # one power step v ← WᵀWv/‖WᵀWv‖, then ‖Wv‖
    stepped = W.T @ (W @ v)
    stepped = stepped / torch.linalg.vector_norm(stepped)
    torch.testing.assert_close(layer.power_vector, stepped, rtol=1e-14, atol=1e-15)
    assert estimate.requires_grad
    value = float(estimate.detach())
    assert value == pytest.approx(float(torch.linalg.vector_norm(W @ stepped)), rel=1e-14)
    assert value <= float(torch.linalg.matrix_norm(W, 2)) * (1 + 1e-12)


def test_power_clamped_lipschitz_bound_formula() -> None:
    torch.manual_seed(3)
    layer = PowerClampedResidual(4, 4, step=2.0, bound="power", dtype=F64)
    # training mode: the forward's step follows the moving power estimate, which the bound does not describe
    with pytest.raises(ValueError, match="training mode"):
        layer.lipschitz_bound()
    layer.eval()
    with torch.no_grad():
        tau = float(layer.tau())
    from structnets.functional import spectral_norm_bound

    expected = max(1.0, tau * float(spectral_norm_bound(layer.weight.detach())) ** 2 - 1.0)
    # Q ≥ ‖W‖₂² (tighter than B², B the rounded-up root) with every float operation rounded up:
    # never below τ‖W‖₂² − 1 from a float64 SVD, never above the B² formula by more than an ulp
    sigma = float(torch.linalg.matrix_norm(layer.weight.detach(), ord=2))
    assert max(1.0, tau * sigma**2 - 1.0) <= layer.lipschitz_bound() <= expected * (1 + 1e-15)
    assert 1.0 <= layer.lipschitz_bound() <= 1.0 + 1e-6
