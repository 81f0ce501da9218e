"""The certificate never claims less than the model computes: every path that edits weights, every dtype.

Each test here is one way a user changes a constrained model (fused/foreach optimizers after an
eval pass, ``.data`` and ``copy_`` edits, ``load_state_dict``, ``functional_call``, ``deepcopy``,
``.to(dtype)``), followed by an *exact* check on the stored parameters: for every gradient-step
block τ·σ₁(W)² ≤ 2 and for every norm-constrained map σ₁(V)/max(1, B) ≤ 1, with σ₁ from a float64
SVD of the stored values (its error, ~n·2⁻⁵³ relative, is far below the certified margins, which
are ≥ 8n²·2⁻⁵³ relative). No tolerance above exact arithmetic is allowed.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
from torch import nn
from torch.func import functional_call

from structnets.analysis import certified_accuracy, lipschitz_upper_bound
from structnets.functional import spectral_norm_bound, squared_norm_bound
from structnets.models import lipschitz_resnet
from structnets.nn import GradientStepResidual, NormConstrainedLinear

F64 = torch.float64
DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16]


def _sigma_max_scaled(weight: torch.Tensor) -> tuple[float, int]:
    """σ₁(W) as (σ₁(W·2^k), k) with W·2^k of max entry in [1, 2): no float64 under/overflow."""
    w = weight.detach().to(F64)
    peak = float(w.abs().max())
    if peak == 0.0:
        return 0.0, 0
    k = 1 - math.frexp(peak)[1]
    return float(torch.linalg.matrix_norm(w * 2.0**k, ord=2)), k


def _tau_times_sigma_squared(tau: torch.Tensor, weight: torch.Tensor) -> float:
    """τ·σ₁(W)² for the stored τ and W, without under/overflow (errs by a few ulps only)."""
    sigma, k = _sigma_max_scaled(weight)
    t = float(tau.detach().to(F64))
    if sigma == 0.0 or t == 0.0:
        return 0.0
    mantissa, exponent = math.frexp(t)
    return math.ldexp(mantissa * sigma * sigma, exponent - 2 * k)


def _assert_exactly_certified(model: nn.Module) -> None:
    """Every block of ``model`` (eval mode) satisfies its constraint on the stored values."""
    checked = 0
    with torch.no_grad():
        for name, layer in model.named_modules():
            if isinstance(layer, GradientStepResidual):
                value = _tau_times_sigma_squared(layer.tau(), layer.weight)
                assert value <= 2.0, f"{name}: τ·‖W‖₂² = {value!r} > 2"
                checked += 1
            elif isinstance(layer, NormConstrainedLinear):
                bound = float(layer._scale().to(F64))
                sigma, k = _sigma_max_scaled(layer.raw_weight)
                # A = V / scale, so ‖A‖₂ ≤ 1 exactly when ‖V‖₂ ≤ scale.
                assert math.ldexp(sigma, -k) <= bound, f"{name}: ‖V‖₂ = {math.ldexp(sigma, -k)!r} > scale {bound!r}"
                checked += 1
    assert checked > 0


def _secant_ratio(model: nn.Module, points: torch.Tensor, seed: int = 0) -> float:
    """Largest ‖f(x) − f(y)‖/‖x − y‖ over random nearby pairs (a lower bound on Lip(f))."""
    generator = torch.Generator().manual_seed(seed)
    other = points + 0.3 * torch.randn(points.shape, generator=generator, dtype=points.dtype)
    with torch.no_grad():
        num = torch.linalg.vector_norm(model(points) - model(other), dim=-1)
    den = torch.linalg.vector_norm(points - other, dim=-1)
    return float((num / den).max())


def _model(dtype: torch.dtype = torch.float32, bound: str = "exact") -> nn.Sequential:
    torch.manual_seed(0)
    return lipschitz_resnet(4, 3, width=12, depth=3, bound=bound, dtype=dtype)


def _steep_training(model: nn.Module, optimizer: torch.optim.Optimizer, steps: int = 30) -> None:
    """Adversarial steps that reward steepness: every weight is pushed to break its constraint."""
    generator = torch.Generator().manual_seed(1)
    dtype = next(model.parameters()).dtype
    x = torch.randn(64, 4, generator=generator, dtype=dtype)
    y = x + 0.05 * torch.randn(64, 4, generator=generator, dtype=dtype)
    model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        ratio = torch.linalg.vector_norm(model(x) - model(y), dim=-1) / torch.linalg.vector_norm(x - y, dim=-1)
        (-ratio.mean() - 0.1 * sum(p.square().sum() for p in model.parameters())).backward()
        optimizer.step()
    model.eval()


OPTIMIZERS = {
    "adam-fused": lambda params: torch.optim.Adam(params, lr=0.2, fused=True),
    "adam-foreach": lambda params: torch.optim.Adam(params, lr=0.2, foreach=True),
    "sgd-fused": lambda params: torch.optim.SGD(params, lr=1.0, momentum=0.9, fused=True),
    "adamw-foreach": lambda params: torch.optim.AdamW(params, lr=0.2, foreach=True),
}


@pytest.mark.parametrize("bound", ["exact", "power"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_certificate_holds_after_eval_pass_then_fused_or_foreach_training(name: str, bound: str) -> None:
    model = _model(bound=bound)
    points = torch.randn(128, 4, generator=torch.Generator().manual_seed(2))
    model.eval()
    model(points)  # fills every cache: a stale one would be used below
    _steep_training(model, OPTIMIZERS[name](model.parameters()))
    _assert_exactly_certified(model)
    assert lipschitz_upper_bound(model) <= 1.0
    assert _secant_ratio(model, points) <= 1.0 + 1e-5


EDITS = {
    "data-mul": lambda p: p.data.mul_(10.0),
    "no-grad-copy": lambda p: p.copy_(p * 7.0 + 0.5),
    "data-assign": lambda p: setattr(p, "data", p.data * 9.0),
    "set-from-other": lambda p: p.data.copy_(torch.randn_like(p) * 20.0),
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_certificate_follows_in_place_edits_of_the_weights(edit: str) -> None:
    model = _model()
    points = torch.randn(128, 4, generator=torch.Generator().manual_seed(3))
    model.eval()
    model(points)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                EDITS[edit](p)
    _assert_exactly_certified(model)
    assert lipschitz_upper_bound(model) <= 1.0
    assert _secant_ratio(model, points) <= 1.0 + 1e-5


def test_norm_constrained_linear_bound_follows_a_data_edit() -> None:
    layer = NormConstrainedLinear(6, 6).eval()
    before = layer.lipschitz_bound()
    with torch.no_grad():
        layer.raw_weight.data.mul_(0.5)
    after = layer.lipschitz_bound()
    sigma = float(torch.linalg.matrix_norm(layer.raw_weight.detach().to(F64), ord=2))
    assert sigma <= after < before  # the edit halved ‖V‖ below 1: the certificate must see it
    assert after <= 1.0


def test_certificate_after_load_state_dict_deepcopy_to_dtype_and_functional_call() -> None:
    model = _model().eval()
    points = torch.randn(64, 4, generator=torch.Generator().manual_seed(4))
    model(points)
    other = _model()
    with torch.no_grad():
        for p in other.parameters():
            if p.dim() == 2:
                p.mul_(25.0)
    model.load_state_dict(other.state_dict())
    _assert_exactly_certified(model)
    assert _secant_ratio(model, points) <= 1.0 + 1e-5

    clone = copy.deepcopy(model)
    with torch.no_grad():
        for p in clone.parameters():
            p.mul_(3.0)
    _assert_exactly_certified(clone)
    assert _secant_ratio(clone, points) <= 1.0 + 1e-5

    wide = clone.to(F64)
    _assert_exactly_certified(wide)
    assert _secant_ratio(wide, points.to(F64)) <= 1.0 + 1e-12

    params = {name: value.detach() * 40.0 for name, value in model.named_parameters()}
    buffers = dict(model.named_buffers())
    other_point = points + 0.3
    with torch.no_grad():
        a = functional_call(model, {**params, **buffers}, (points,))
        b = functional_call(model, {**params, **buffers}, (other_point,))
    ratio = torch.linalg.vector_norm(a - b, dim=-1) / torch.linalg.vector_norm(points - other_point, dim=-1)
    assert float(ratio.max()) <= 1.0 + 1e-5


def _random_weights(dtype: torch.dtype, count: int, seed: int) -> list[torch.Tensor]:
    """Random matrices of varied shape, rank and scale (within the dtype's comfortable range)."""
    generator = torch.Generator().manual_seed(seed)
    info = torch.finfo(dtype)
    log_low, log_high = math.log2(info.tiny) / 4, math.log2(info.max) / 4
    weights = []
    for i in range(count):
        rows, cols = (int(v) for v in torch.randint(1, 24, (2,), generator=generator))
        w = torch.randn(rows, cols, generator=generator, dtype=F64)
        if i % 3 == 1:  # low rank: a top singular value of high multiplicity-free structure
            w = w[:, :1] @ w[:1, :]
        if i % 5 == 2:  # graded columns
            w = w * torch.logspace(0, -6, cols, dtype=F64)
        scale = 2.0 ** float(torch.empty((), dtype=F64).uniform_(log_low, log_high, generator=generator))
        weights.append((w * scale).to(dtype))
    return weights


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_bound_and_step_hold_in_exact_arithmetic_for_every_dtype(dtype: torch.dtype) -> None:
    """B ≥ ‖W‖₂ and τ·‖W‖₂² ≤ s on the stored values, strict ≤, over 300 random matrices per dtype."""
    for i, w in enumerate(_random_weights(dtype, 300, seed=hash(str(dtype)) % 1000)):
        sigma, k = _sigma_max_scaled(w)
        bound = spectral_norm_bound(w)
        assert bound.dtype == dtype
        assert math.ldexp(sigma, -k) <= float(bound.to(F64)), (i, tuple(w.shape))
        layer = GradientStepResidual(w.shape[1], w.shape[0], dtype=dtype).eval()
        with torch.no_grad():
            layer.weight.copy_(w)
        assert _tau_times_sigma_squared(layer.tau(), layer.weight) <= 2.0, (i, tuple(w.shape))
        ncl = NormConstrainedLinear(w.shape[1], w.shape[0], dtype=dtype).eval()
        with torch.no_grad():
            ncl.raw_weight.copy_(w)
        with torch.no_grad():
            assert math.ldexp(sigma, -k) <= max(1.0, float(ncl._scale().to(F64)))


@pytest.mark.parametrize("scale", [1e-300, 1e-160, 1e-20, 1.0, 1e20, 1e160, 1e300])
def test_float64_bound_is_certified_and_tight_at_extreme_scales(scale: float) -> None:
    w = torch.randn(9, 7, generator=torch.Generator().manual_seed(5), dtype=F64) * scale
    sigma, k = _sigma_max_scaled(w)
    exact = math.ldexp(sigma, -k)
    for method in ("exact", "gram", "frobenius"):
        bound = float(spectral_norm_bound(w, method))
        assert exact <= bound, method
        assert math.isfinite(bound)
    assert float(spectral_norm_bound(w)) <= exact * (1 + 1e-11)
    # ‖W‖₂² itself may leave float64's range; the squared bound is then +∞ or at least the true value.
    square = float(squared_norm_bound(w))
    assert square >= exact * exact or square == math.inf or square >= 2.0**-1074


def test_bound_of_zero_and_non_finite_weights() -> None:
    assert float(spectral_norm_bound(torch.zeros(3, 4))) == 0.0
    with pytest.raises(ValueError, match="`weight` must be finite"):
        spectral_norm_bound(torch.tensor([[1.0, math.nan]]))
    assert math.isnan(float(squared_norm_bound(torch.tensor([[1.0, math.inf]]))))
    layer = GradientStepResidual(3, 3).eval()
    with torch.no_grad():
        layer.weight.zero_()
    assert float(layer.tau().detach()) == 0.0
    with torch.no_grad():
        layer.weight[0, 0] = math.inf
    with pytest.raises(ValueError, match="non-finite"):
        lipschitz_upper_bound(nn.Sequential(layer))


def test_power_layer_in_training_mode_is_refused_by_name() -> None:
    model = _model(bound="power")
    model.train()
    with pytest.raises(ValueError, match=r"layer `model\.0` \(NormConstrainedLinear\).*\.eval\(\)"):
        lipschitz_upper_bound(model)
    with torch.no_grad():
        for layer in model.modules():
            if isinstance(layer, GradientStepResidual):
                layer.power_vector.copy_(torch.randn_like(layer.power_vector) * 1e-3)  # tampered
    model.eval()
    assert lipschitz_upper_bound(model) <= 1.0
    _assert_exactly_certified(model)


def test_upper_bound_product_is_rounded_up() -> None:
    # 0.1·0.3 rounds to nearest *below* the exact product of the two floats; the bound must not.
    from fractions import Fraction

    from structnets.analysis._certificate_rules import _multiply_round_up

    a, b = 0.1, 0.3
    assert Fraction(a * b) < Fraction(a) * Fraction(b)
    assert Fraction(_multiply_round_up(a, b)) >= Fraction(a) * Fraction(b)
    assert _multiply_round_up(1.0, 0.7) == 0.7


def _pgd_l2(model: nn.Module, x: torch.Tensor, y: torch.Tensor, eps: float, steps: int, restarts: int) -> torch.Tensor:
    """ℓ₂ PGD on the margin f_y − max_{j≠y} f_j inside ‖δ‖ ≤ eps; returns which points were broken."""
    broken = torch.zeros(x.shape[0], dtype=torch.bool)
    generator = torch.Generator().manual_seed(7)
    for restart in range(restarts):
        delta = torch.randn(x.shape, generator=generator, dtype=x.dtype)
        delta = delta / torch.linalg.vector_norm(delta, dim=1, keepdim=True) * eps * (restart / max(1, restarts - 1))
        for _ in range(steps):
            delta.requires_grad_(True)
            logits = model(x + delta)
            true = logits.gather(1, y[:, None])[:, 0]
            others = logits.scatter(1, y[:, None], -math.inf).max(dim=1).values
            margin = true - others
            (grad,) = torch.autograd.grad(margin.sum(), delta)
            with torch.no_grad():
                broken |= margin.detach() < 0
                step = grad / torch.linalg.vector_norm(grad, dim=1, keepdim=True).clamp_min(1e-12)
                delta = delta - 0.1 * eps * step
                norm = torch.linalg.vector_norm(delta, dim=1, keepdim=True)
                delta = delta * torch.clamp(eps / norm.clamp_min(1e-12), max=1.0)
        with torch.no_grad():
            broken |= model(x + delta).argmax(dim=1) != y
    return broken


def test_pgd_attack_breaks_no_point_that_a_trained_model_certifies() -> None:
    from structnets.data import make_moons

    torch.manual_seed(0)
    features, labels, _, _ = make_moons(800, noise=0.1, train_fraction=0.5, seed=0)
    x = torch.as_tensor(features, dtype=F64)
    y = torch.as_tensor(labels).long()
    model = lipschitz_resnet(2, 2, width=16, depth=4, dtype=F64)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02, fused=True)
    model.eval()
    model(x)
    model.train()
    for _ in range(150):
        optimizer.zero_grad()
        logits = model(x)
        onehot = nn.functional.one_hot(y, 2).to(F64)
        nn.functional.cross_entropy(8.0 * (logits - 0.3 * onehot), y).backward()
        optimizer.step()
    model.eval()
    eps = 0.1
    lipschitz = lipschitz_upper_bound(model)
    assert lipschitz <= 1.0
    with torch.no_grad():
        logits = model(x)
    certified = certified_accuracy(logits, y, eps, lipschitz=lipschitz)
    assert certified > 0.5  # enough certified points for the attack to be a real test
    true = logits.gather(1, y[:, None])[:, 0]
    others = logits.scatter(1, y[:, None], -math.inf).max(dim=1).values
    mask = (true - others) >= math.sqrt(2.0) * lipschitz * eps
    broken = _pgd_l2(model, x[mask], y[mask], eps, steps=60, restarts=4)
    assert int(broken.sum()) == 0
    # The attack is real: at 4ε it breaks some of the points certified at ε.
    assert int(_pgd_l2(model, x[mask], y[mask], 4 * eps, steps=60, restarts=2).sum()) > 0
