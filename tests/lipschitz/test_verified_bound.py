"""``bound="verified"``: a warm power estimate certified by one Cholesky test at every training step.

The test of :func:`structnets.functional.verified_square_bound` must pass for every μ a hair above
‖W‖₂² and fail for every μ a hair below (else it certifies nothing, or never helps); and every
training step of a ``"verified"`` model must use a step τ with τ·‖W‖₂² ≤ 2 on the stored values,
checked against a float64 SVD, through fused optimizer steps and fallbacks.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from structnets.analysis import lipschitz_upper_bound
from structnets.functional import verified_power_square, verified_square_bound
from structnets.models import lipschitz_resnet
from structnets.nn import GradientStepResidual, NormConstrainedLinear

from .helpers import measured_lipschitz

F64 = torch.float64


def _sigma_squared(weight: torch.Tensor) -> float:
    return float(torch.linalg.matrix_norm(weight.detach().to(F64), ord=2)) ** 2


def _matrices(dtype: torch.dtype) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    out = []
    for rows, cols in ((1, 1), (1, 7), (7, 1), (30, 50), (50, 30), (64, 64)):
        out.append(torch.randn(rows, cols, generator=generator, dtype=F64))
    u, v = torch.randn(40, 1, generator=generator, dtype=F64), torch.randn(1, 25, generator=generator, dtype=F64)
    out.append(u @ v)  # rank 1: one dominant direction
    q, _ = torch.linalg.qr(torch.randn(32, 32, generator=generator, dtype=F64))
    out.append(q)  # orthogonal: every singular value 1, the hardest case for a margin test
    decay = torch.randn(40, 40, generator=generator, dtype=F64) * torch.logspace(0, -12, 40, dtype=F64)
    out.append(decay)  # ill-conditioned
    return [m.to(dtype) for m in out]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("scale", [1e-30, 1.0, 1e30])
def test_the_test_passes_just_above_and_fails_just_below_the_norm(dtype: torch.dtype, scale: float) -> None:
    if dtype in (torch.float16, torch.bfloat16):
        scale = {1e-30: 1e-2, 1.0: 1.0, 1e30: 1e2}[scale]
    for matrix in _matrices(dtype):
        weight = (matrix.to(F64) * scale).to(dtype)
        sigma2 = _sigma_squared(weight)
        if sigma2 == 0.0:
            continue
        above = verified_square_bound(weight, sigma2 * (1 + 1e-8))
        assert above is not None, f"{tuple(weight.shape)}: μ = σ₁²(1 + 1e-8) failed"
        # certified, and barely looser than the guess (the rounding terms are ~n²u)
        assert sigma2 <= above <= sigma2 * (1 + 1e-8) * (1 + 1e-9)
        assert verified_square_bound(weight, sigma2 * (1 - 1e-8)) is None


def test_non_finite_or_non_positive_guesses_are_not_certified() -> None:
    weight = torch.randn(5, 4)
    for guess in (0.0, -1.0, math.inf, math.nan):
        assert verified_square_bound(weight, guess) is None
    bad = weight.clone()
    bad[0, 0] = math.nan
    assert verified_square_bound(bad, 1e6) is None


def test_verified_power_square_has_the_power_gradient_and_a_certified_value() -> None:
    torch.manual_seed(1)
    weight = torch.randn(12, 9, dtype=F64, requires_grad=True)
    vector = torch.linalg.svd(weight.detach())[2][0]  # converged: σ̂ = σ₁
    square, _ = verified_power_square(weight, vector, 0.01)
    assert square is not None
    sigma2 = _sigma_squared(weight)
    assert sigma2 <= float(square.detach()) <= sigma2 * 1.01 * (1 + 1e-9)
    square.backward()
    u, s, vh = torch.linalg.svd(weight.detach())
    # d[(1 + m)σ₁²]/dW = (1 + m)·2σ₁·u₁v₁ᵀ at a converged vector
    expected = 1.01 * 2 * s[0] * torch.outer(u[:, 0], vh[0])
    assert torch.allclose(weight.grad, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("fused", [False, True])
def test_every_training_step_of_a_verified_model_is_certified(fused: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # Failures are rare at these sizes: some are forced, so the Lanczos test and the exact fallback
    # (with the restart of its power vector) run inside the loop as well.
    from structnets.nn import _verified_gram

    real, quick, calls = _verified_gram.batched_verified_square, _verified_gram.verified_square_bound, [0]

    def sometimes_failing_quick(*args: object, **kwargs: object) -> float | None:
        calls[0] += 1
        return None if calls[0] % 7 == 0 else quick(*args, **kwargs)  # type: ignore[arg-type]

    def sometimes_failing(*args: object, **kwargs: object) -> tuple[torch.Tensor, ...]:
        square, passed, following, retried = real(*args, **kwargs)  # type: ignore[arg-type]
        return square, passed & (calls[0] % 14 != 0), following, retried

    # every 7th step the one-power-step test fails (the Lanczos test runs), every 14th both do (the exact bound)
    monkeypatch.setattr(_verified_gram, "verified_square_bound", sometimes_failing_quick)
    monkeypatch.setattr(_verified_gram, "batched_verified_square", sometimes_failing)
    torch.manual_seed(2)
    model = lipschitz_resnet(20, 4, width=16, depth=3, step=2.0, learnable_step=False, bound="verified")
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(128, 20, generator=generator)
    y = torch.randint(4, (128,), generator=generator)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05, fused=fused)  # large steps: fallbacks happen
    model.train()
    for _ in range(25):
        for layer in model:
            # the τ and scale this very training step uses (grad on, training mode)
            if isinstance(layer, GradientStepResidual):
                value = float(layer.tau().detach().to(F64)) * _sigma_squared(layer.weight)
                assert value <= 2.0, f"τ·‖W‖₂² = {value!r} > 2 in training"
            elif isinstance(layer, NormConstrainedLinear):
                sigma = math.sqrt(_sigma_squared(layer.raw_weight))
                assert sigma <= float(layer._scale().detach().to(F64)) * (1 + 1e-7) or sigma <= 1.0
        assert lipschitz_upper_bound(model) <= 1.0  # no refusal in training: every step is certified
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    counts = [
        (layer._bound.verified_steps, layer._bound.exact_fallbacks) for layer in model if hasattr(layer, "_bound")
    ]
    assert sum(v for v, _ in counts) > sum(f for _, f in counts) > 0  # mostly verified; the fallback ran too
    model.eval()
    assert measured_lipschitz(model, 20) <= lipschitz_upper_bound(model) * (1 + 1e-5) <= 1.0 + 1e-5


def test_verified_mode_eval_and_no_grad_use_the_exact_certificate() -> None:
    torch.manual_seed(4)
    exact = GradientStepResidual(8, 8, step=2.0, bound="exact")
    verified = GradientStepResidual(8, 8, step=2.0, bound="verified")
    verified.load_state_dict(exact.state_dict())
    x = torch.randn(16, 8)
    for mode in ("eval", "no_grad"):
        if mode == "eval":
            exact.eval(), verified.eval()
            assert torch.equal(exact(x), verified(x))
        else:
            exact.train(), verified.train()
            with torch.no_grad():
                assert torch.equal(exact(x), verified(x))
    verified.train()
    # training with a gradient: the verified τ is at most the margin (1–8 %) shorter than the exact one
    assert 1 / 1.09 <= float((verified.tau() / exact.tau()).detach()) <= 1.0
