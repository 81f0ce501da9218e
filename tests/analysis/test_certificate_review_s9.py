"""Ninth-session review of the whole-model certificate: paths on which it fell below the measured constant.

Each test builds a model whose computed function is steeper than the certificate returned before the
fix (measured here by float64 Jacobian spectral norms), and asserts that the certificate now refuses it
with an error naming the module and what it refuses, or certifies it at least the measured constant.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn.utils import parametrize

from structnets.analysis import jacobian_spectral_norms, lipschitz_upper_bound
from structnets.nn import GradientStepResidual, MaxMin

F64 = torch.float64


def _measured(model: nn.Module, features: int, points: int = 64) -> float:
    """Largest float64 ‖J_f(x)‖₂ over random points (a lower bound on the Lipschitz constant)."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(points, features, generator=generator, dtype=F64)
    return float(jacobian_spectral_norms(model, x).max())


def _scaled_linear(scale: float, features: int = 4, cls: type[nn.Linear] = nn.Linear) -> nn.Linear:
    layer = cls(features, features, dtype=F64)
    with torch.no_grad():
        layer.weight.copy_(scale * torch.eye(features, dtype=F64))
    return layer


# ----------------------------------------------------------------------------------------- Sequential.__iter__


class _EveryLayerTwice(nn.Sequential):
    """``nn.Sequential.forward`` runs ``for module in self``: this ``__iter__`` makes it call each slot twice."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(list(self._modules.values()) * 2)


def test_a_sequential_subclass_that_overrides_iter_is_refused() -> None:
    model = _EveryLayerTwice(_scaled_linear(3.0))
    assert _measured(model, 4) == pytest.approx(9.0)  # the forward applies W = 3I twice
    with pytest.raises(ValueError, match=r"`model` \(_EveryLayerTwice\) overrides `__iter__` of Sequential"):
        lipschitz_upper_bound(model)
    with pytest.raises(ValueError, match=r"`model\.0` \(_EveryLayerTwice\) overrides `__iter__`"):
        lipschitz_upper_bound(nn.Sequential(model))


# ----------------------------------------------------------------------------------------- Module._call_impl


class _LoudCallLinear(nn.Linear):
    """``Module.__call__`` runs ``self._call_impl``: overriding it changes every call, not ``forward``."""

    def _call_impl(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return 10.0 * super()._call_impl(*args, **kwargs)


class _LoudCallBlock(GradientStepResidual):
    def _call_impl(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return 10.0 * super()._call_impl(*args, **kwargs)


class _LoudCallChain(nn.Sequential):
    def _call_impl(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        return 10.0 * super()._call_impl(*args, **kwargs)


@pytest.mark.parametrize(
    "build",
    [
        lambda: nn.Sequential(_scaled_linear(1.0, cls=_LoudCallLinear)),
        lambda: nn.Sequential(_LoudCallBlock(4, 4, dtype=F64).eval()),
        lambda: _LoudCallChain(MaxMin(4)),
    ],
    ids=["linear", "gradient-step", "sequential"],
)
def test_a_call_impl_override_is_refused(build) -> None:  # type: ignore[no-untyped-def]
    model = build()
    assert _measured(model, 4) >= 9.99  # every call of the overriding module is scaled by 10
    with pytest.raises(ValueError, match=r"overrides `_call_impl`"):
        lipschitz_upper_bound(model)


def test_a_compiled_call_impl_set_on_the_instance_is_refused() -> None:
    layer = _scaled_linear(1.0)
    layer._compiled_call_impl = lambda x: 10.0 * x  # what Module.__call__ runs instead of _call_impl
    model = nn.Sequential(layer)
    assert _measured(model, 4) == pytest.approx(10.0)
    with pytest.raises(ValueError, match=r"`model\.0` \(Linear\) has `_compiled_call_impl` set"):
        lipschitz_upper_bound(model)


class _CompiledOnTheClass(GradientStepResidual):
    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return super().forward(input)

    def lipschitz_bound(self, *, operand_dtype: torch.dtype | None = None) -> float:
        return super().lipschitz_bound(operand_dtype=operand_dtype)

    _compiled_call_impl = staticmethod(lambda x: 10.0 * x)


def test_a_compiled_call_impl_on_the_class_is_refused() -> None:
    model = nn.Sequential(_CompiledOnTheClass(4, 4, dtype=F64).eval())
    assert _measured(model, 4) == pytest.approx(10.0)
    with pytest.raises(ValueError, match=r"`model\.0` \(_CompiledOnTheClass\) has `_compiled_call_impl` set"):
        lipschitz_upper_bound(model)


def test_module_compile_in_place_is_still_certified() -> None:
    layer = _scaled_linear(3.0)
    layer.compile(backend="eager")  # _compiled_call_impl = torch.compile(layer._call_impl): the same computation
    bound = lipschitz_upper_bound(nn.Sequential(layer, layer))
    assert 9.0 <= bound <= 9.0 * (1 + 1e-12)


# ----------------------------------------------------------------------------------------- helpers of a trusted forward


class _SteeperTau(GradientStepResidual):
    """Overrides the step the forward reads, not ``forward``: the class's certificate of 1 does not cover it."""

    def tau(self) -> torch.Tensor:
        return 50.0 * super().tau()


class _HelperOnly(GradientStepResidual):
    """Adds a method and overrides only ``extra_repr``/``__init__``: the forward is the certified one."""

    def __init__(self, features: int) -> None:
        super().__init__(features, features, dtype=F64)

    def describe(self) -> str:
        return "a block"

    def extra_repr(self) -> str:
        return "helper-only"


def test_a_subclass_overriding_a_method_the_forward_calls_is_refused() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(_SteeperTau(4, 4, dtype=F64).eval())
    assert _measured(model, 4) > 10.0
    with pytest.raises(ValueError, match=r"`model\.0` \(_SteeperTau\) overrides `tau` of GradientStepResidual"):
        lipschitz_upper_bound(model)


def test_a_subclass_overriding_a_linear_method_is_refused() -> None:
    class ScaledWeight(nn.Linear):
        """W as the forward reads it (grad mode on) is 10 × the stored one the certificate reads (no_grad)."""

        def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
            value = super().__getattr__(name)
            return 10.0 * value if name == "weight" and torch.is_grad_enabled() else value

    model = nn.Sequential(_scaled_linear(1.0, cls=ScaledWeight))
    assert _measured(model, 4) == pytest.approx(10.0)
    with pytest.raises(ValueError, match=r"`model\.0` \(ScaledWeight\) overrides `__getattr__` of Linear"):
        lipschitz_upper_bound(model)


def test_a_subclass_that_only_adds_methods_is_still_certified() -> None:
    torch.manual_seed(0)
    block = _HelperOnly(4).eval()
    bound = lipschitz_upper_bound(nn.Sequential(block, block))
    assert bound == 1.0
    assert _measured(nn.Sequential(block, block), 4) <= 1.0 + 1e-12

    class Chain(nn.Sequential):  # a container with an export helper (tests/lipschitz/test_deel_baselines.py)
        def vanilla_export(self) -> nn.Sequential:
            return nn.Sequential(*self)

    chain = Chain(_scaled_linear(3.0), _scaled_linear(3.0))
    assert lipschitz_upper_bound(chain) >= _measured(chain, 4) * (1 - 1e-12)


# ----------------------------------------------------------------------------------------- parametrize.cached


class _DropConnect(nn.Module):
    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        return weight * (torch.rand_like(weight) < 0.5) * 2.0


def test_a_random_parametrization_is_refused_inside_parametrize_cached() -> None:
    """Inside ``parametrize.cached()`` two reads of the weight agree; the forward after it draws again."""
    torch.manual_seed(0)
    layer = nn.Linear(8, 8, dtype=F64)
    parametrize.register_parametrization(layer, "weight", _DropConnect())
    model = nn.Sequential(layer)
    with pytest.raises(ValueError, match=r"parametrization of `model\.0\.weight` gives another tensor"):
        lipschitz_upper_bound(model)
    with parametrize.cached():
        cached = float(torch.linalg.matrix_norm(layer.weight.detach(), ord=2))
        with pytest.raises(ValueError, match=r"parametrization of `model\.0\.weight` gives another tensor"):
            lipschitz_upper_bound(model)
    # each forward after the context draws another W: one draw's norm does not bound the next draws'
    x = torch.randn(64, 8, dtype=F64)
    draws = max(float(jacobian_spectral_norms(model, x[i : i + 1])[0]) for i in range(64))
    assert draws > 1.1 * cached


# ----------------------------------------------------------------------------------------- certify in half precision


def _flipped_within(model: nn.Sequential, x: torch.Tensor, label: int, eps: float) -> bool:
    """Whether a point p of the model's dtype with ‖p − x‖₂ < eps (float64) has a negative margin as evaluated.

    For a linear model the steepest descent of f_y − f_j is along −(w_y − w_j): points along it.
    """
    weight = model[0].weight.detach().to(F64)
    x64 = x.to(F64)
    steps = torch.linspace(0.8, 1.0, 400, dtype=F64)[:, None]
    for j in range(weight.shape[0]):
        if j == label:
            continue
        direction = (weight[label] - weight[j]) / torch.linalg.vector_norm(weight[label] - weight[j])
        points = (x64 - steps * eps * direction).to(x.dtype)
        inside = torch.linalg.vector_norm(points.to(F64) - x64, dim=1) < eps
        with torch.no_grad():
            logits = model(points).to(F64)
        others = torch.cat((logits[:, :label], logits[:, label + 1 :]), dim=1).max(dim=1).values
        if bool((inside & (logits[:, label] < others)).any()):
            return True
    return False


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_certify_refuses_a_half_precision_model_whose_rounding_flips_a_certified_point(dtype: torch.dtype) -> None:
    from structnets.analysis import certified_radii, certify

    torch.manual_seed(1)
    weight = torch.linalg.qr(torch.randn(16, 16, dtype=F64))[0][:10]  # orthonormal rows: L = 1 exactly
    layer = nn.Linear(16, 10, bias=False, dtype=F64)
    with torch.no_grad():
        layer.weight.copy_(weight)
    model = nn.Sequential(layer).to(dtype)
    X = (30 * torch.randn(100, 16, dtype=F64)).to(dtype)
    with torch.no_grad():
        logits = model(X)
    y = logits.argmax(dim=1)
    bound = lipschitz_upper_bound(model)
    radii = certified_radii(logits, y, float(bound))
    # ε 0.5 % below a point's certified radius (so the margin test counts it) ...
    flipped = [i for i in range(len(X)) if _flipped_within(model, X[i], int(y[i]), 0.995 * float(radii[i]))]
    assert flipped, "the half-precision evaluation flipped no point: the test lost its counterexample"
    i = flipped[0]
    eps = 0.995 * float(radii[i])
    # ... yet its evaluation at a point within ε is misclassified: the certified accuracy would count it
    with pytest.raises(ValueError, match=f"computes in {dtype}|holds {dtype} tensors"):
        certify(model, X[i : i + 1], y[i : i + 1], [eps], ascent_steps=0, probe=1, lipschitz=float(bound))


def test_certify_refuses_an_autocast_region() -> None:
    from structnets.analysis import certify

    model = nn.Sequential(_scaled_linear(1.0).float())
    X = torch.randn(4, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with pytest.raises(ValueError, match=r"autocast region to torch\.bfloat16 is active"):
            certify(model, X, torch.zeros(4, dtype=torch.long), [0.1], ascent_steps=0, probe=1, lipschitz=1.5)
    row = certify(model, X, torch.zeros(4, dtype=torch.long), [0.1], ascent_steps=0, probe=1, lipschitz=1.5)
    assert float(row["lipschitz_upper"]) >= 1.0


# ----------------------------------------------------------------------------------------- torch.compile's wrapper


def test_a_compiled_wrapper_whose_orig_mod_was_replaced_is_refused() -> None:
    """``torch.compile(m)`` binds its forward to ``m``; ``opt._orig_mod = other`` changes the walk, not the calls."""
    steep = nn.Sequential(_scaled_linear(10.0))
    compiled = torch.compile(steep, backend="eager")
    assert lipschitz_upper_bound(compiled) >= 10.0
    compiled._orig_mod = nn.Sequential(_scaled_linear(1.0))
    assert _measured(compiled, 4, points=8) == pytest.approx(10.0)  # still runs `steep`
    with pytest.raises(ValueError, match=r"`model` \(OptimizedModule\) runs another module than its `_orig_mod`"):
        lipschitz_upper_bound(compiled)


# ----------------------------------------------------------------------------------------- rounding of the margin test


def _sqrt2_eps_cases(count: int) -> list[float]:
    """Radii ε for which fl(fl(√2)·ε) < √2·ε exactly (compared in squares with exact rationals)."""
    import math
    import random
    from fractions import Fraction

    generator = random.Random(0)
    cases = []
    while len(cases) < count:
        eps = generator.uniform(0.01, 1.0)
        if Fraction(math.sqrt(2.0) * eps) ** 2 < 2 * Fraction(eps) ** 2:
            cases.append(eps)
    return cases


def test_certified_accuracy_counts_no_margin_below_sqrt2_l_eps() -> None:
    """A margin m certifies ε only if m ≥ √2·L·ε exactly: m = fl(√2·ε) < √2·ε must not count (L = 1)."""
    from fractions import Fraction

    from structnets.analysis import certified_accuracy, certified_radii

    for eps in _sqrt2_eps_cases(20):
        margin = 2.0**0.5 * eps  # the rounded product: exactly below √2·ε
        assert 2 * Fraction(eps) ** 2 > Fraction(margin) ** 2
        logits = torch.tensor([[margin, 0.0]], dtype=F64)
        assert certified_accuracy(logits, torch.tensor([0]), eps, 1.0) == 0.0
        assert float(certified_radii(logits, torch.tensor([0]), 1.0)[0]) < eps


def test_certified_radii_never_exceed_the_exact_radius() -> None:
    """r = m/(√2·L) (one logit: |f|/L), compared exactly: never above, for margins that round in float64 too."""
    from fractions import Fraction

    from structnets.analysis import certified_radii

    generator = torch.Generator().manual_seed(0)
    for lipschitz in (1.0, 0.7, 1.0000000000000078, 3.3):
        logits = torch.randn(400, 3, generator=generator, dtype=F64) * torch.tensor([1.0, 1e-9, 1e9], dtype=F64)
        logits[:200, 1] = logits[:200, 0] + 1e-3  # near ties: the float64 difference rounds
        labels = logits.argmax(dim=1)
        radii = certified_radii(logits, labels, lipschitz)
        for row, label, radius in zip(logits.tolist(), labels.tolist(), radii.tolist()):
            exact = Fraction(row[label]) - max(Fraction(v) for j, v in enumerate(row) if j != label)
            assert 2 * (Fraction(radius) * Fraction(lipschitz)) ** 2 <= exact**2
        single = torch.randn(400, generator=generator, dtype=F64)
        radii = certified_radii(single, (single > 0).long(), lipschitz)
        for value, radius in zip(single.tolist(), radii.tolist()):
            assert Fraction(radius) * Fraction(lipschitz) <= abs(Fraction(value))


# ----------------------------------------------------------------------------------------- complex parameters


def test_a_complex_linear_is_refused() -> None:
    """W = 10i·I: ‖Wx − Wy‖ = 10‖x − y‖, but the float64 cast of W keeps its real part 0 (bound 0)."""
    layer = nn.Linear(4, 4, bias=False, dtype=torch.complex128)
    with torch.no_grad():
        layer.weight.copy_(10j * torch.eye(4, dtype=torch.complex128))
    generator = torch.Generator().manual_seed(0)
    x, y = (torch.randn(4, dtype=torch.complex128, generator=generator) for _ in range(2))
    with torch.no_grad():
        ratio = float(torch.linalg.vector_norm(layer(x) - layer(y)) / torch.linalg.vector_norm(x - y))
    assert ratio == pytest.approx(10.0)
    with pytest.raises(ValueError, match=r"parameter `model\.0\.weight` \(Linear\) is complex"):
        lipschitz_upper_bound(nn.Sequential(layer))


def test_a_redefining_linear_inside_a_layer_with_its_own_bound_is_refused() -> None:
    """UnconstrainedResidual reads `inner.weight` (no grad) and checks only that `inner` keeps Linear.forward."""
    from structnets.nn import UnconstrainedResidual

    class GradWeight(nn.Linear):
        def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
            value = super().__getattr__(name)
            return 10.0 * value if name == "weight" and torch.is_grad_enabled() else value

    torch.manual_seed(0)
    block = UnconstrainedResidual(4, 4, dtype=F64)
    inner = GradWeight(4, 4, dtype=F64)
    with torch.no_grad():
        inner.weight.copy_(block.inner.weight)
        inner.bias.copy_(block.inner.bias)
    block.inner = inner
    with torch.no_grad():
        old_bound = 1.0 + float(torch.linalg.matrix_norm(block.outer.weight, ord=2)) * float(
            torch.linalg.matrix_norm(inner.weight, ord=2)
        )
    assert _measured(block, 4) > 1.5 * old_bound  # what the layer's own bound reads, against the forward
    with pytest.raises(ValueError, match=r"`model\.inner` \(GradWeight\) overrides `__getattr__` of Linear"):
        lipschitz_upper_bound(block)


# ----------------------------------------------------------------------------------------- Dropout's rounded scale


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("p", [0.3, 0.1, 0.7])
def test_dropout_in_training_mode_is_certified_at_its_rounded_scale(dtype: torch.dtype, p: float) -> None:
    """The mask is scaled by 1/(1 − p) rounded in the input's dtype (1.4296875 in bfloat16 for p = 0.3)."""
    dropout = nn.Dropout(p).train()
    x = torch.randn(1, 64, dtype=dtype)

    def one_mask(v: torch.Tensor) -> torch.Tensor:
        torch.manual_seed(0)
        return dropout(v)

    jacobian = torch.autograd.functional.jacobian(one_mask, x).reshape(64, 64).to(F64)
    assert float(jacobian.max()) == float(torch.ones((), dtype=dtype).div_(1 - p))  # the operand the map uses
    assert float(torch.linalg.matrix_norm(jacobian, ord=2)) <= lipschitz_upper_bound(nn.Sequential(dropout))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("slope", [1.1, -1.3, 2.7])
def test_leaky_relu_is_certified_at_its_rounded_slope(dtype: torch.dtype, slope: float) -> None:
    """On negative inputs LeakyReLU multiplies by the slope as a dtype rounds it (1.1015625 in bfloat16 for 1.1)."""
    model = nn.Sequential(nn.LeakyReLU(slope))
    x = -torch.rand(1, 8, dtype=dtype) - 0.5
    jacobian = torch.autograd.functional.jacobian(model, x).reshape(8, 8).to(F64)
    assert float(torch.linalg.matrix_norm(jacobian, ord=2)) <= lipschitz_upper_bound(model)


def test_an_in_place_first_layer_does_not_rewrite_the_callers_rows() -> None:
    # LeakyReLU(inplace=True) first rewrote X_test inside certify's forwards and inside pgd_l2 (whose attack
    # then started from, and kept, rewritten points: pgd 0.8 against 0.75 for the out-of-place twin). certify
    # still refuses such a model, at the lower bound (autograd refuses an in-place change of the leaf input),
    # but by then it must not have changed the caller's rows
    from structnets.analysis import certify, pgd_l2
    from structnets.nn import OrthogonalLinear

    torch.manual_seed(0)
    head = OrthogonalLinear(6, 3)
    in_place = nn.Sequential(nn.LeakyReLU(0.5, inplace=True), head).eval()
    twin = nn.Sequential(nn.LeakyReLU(0.5), head).eval()
    X = torch.randn(40, 6)
    y = twin(X).argmax(dim=1).detach()
    y[::5] = (y[::5] + 1) % 3  # some rows wrong, so that the attack has something to do
    kept = X.clone()
    with pytest.raises(ValueError, match="in-place"):
        certify(in_place, X, y, [0.1, 0.3], ascent_steps=5)
    assert torch.equal(X, kept)
    for eps in (0.1, 0.3):
        result = pgd_l2(in_place, X, y, eps, steps=10)
        assert torch.equal(X, kept)
        reference = pgd_l2(twin, X, y, eps, steps=10)
        assert torch.equal(result.points, reference.points)
        assert result.robust_accuracy() == reference.robust_accuracy()


# ------------------------------------------------------------------- a user's L below the model's bounds (session 10)


def test_certify_warns_when_the_users_lipschitz_is_below_the_models_bounds() -> None:
    """A ``lipschitz`` below the model's bounds was used without a word: "certified" figures that may be false.

    ReLU(diag(3, 1, 1, 1)·x) on rows with x₀ < 0: the Jacobian norm at every probe is 1 (the measured
    lower bound), the certified upper bound 3. L = 0.5 is not a Lipschitz constant (warns: false);
    L = 2 may or may not be (warns: holds only if true); L = the upper bound is silent.
    """
    import warnings

    from structnets.analysis import certify

    torch.manual_seed(0)
    first = _scaled_linear(1.0)
    with torch.no_grad():
        first.weight[0, 0] = 3.0
    model = nn.Sequential(first, nn.ReLU(), _scaled_linear(1.0)).float()
    X = torch.randn(64, 4)
    X[:, 0] = -X[:, 0].abs() - 0.1
    y = torch.zeros(64, dtype=torch.long)
    upper = float(lipschitz_upper_bound(model))
    assert upper >= 3.0
    with pytest.warns(UserWarning, match=r"below the model's measured lower bound 1 "):
        row = certify(model, X, y, [0.1], ascent_steps=0, probe=8, lipschitz=0.5)
    assert float(row["lipschitz_used"]) == 0.5 and abs(float(row["lipschitz_lower"]) - 1.0) < 1e-5
    with pytest.warns(UserWarning, match=r"below the model's computed certified upper bound 3"):
        certify(model, X, y, [0.1], ascent_steps=0, probe=8, lipschitz=2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        certify(model, X, y, [0.1], ascent_steps=0, probe=8, lipschitz=upper)
