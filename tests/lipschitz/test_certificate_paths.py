"""Every path a user (or a library) can take through a certified model: refused, or certified ≥ measured.

Each test is one row of issue 30's table, or a further path found the same way (an attacker who owns
the training script but not the library). A path either raises a ``ValueError`` that names what is
refused, or its certificate is compared against an independent measurement of what the model
computes: Jacobian norms at random points and gradient ascent on secants
(:func:`tests.lipschitz.helpers.measured_lipschitz`), or a float64 twin of the model with the
operands an autocast region rounds.
"""

from __future__ import annotations

import math
import pickle

import pytest
import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from structnets.analysis import LipschitzBound, certify, jacobian_spectral_norms, lipschitz_upper_bound
from structnets.models import lipschitz_resnet
from structnets.nn import (
    GradientStepResidual,
    MaxMin,
    NormConstrainedLinear,
    OrthogonalLinear,
    PowerClampedResidual,
    UnconstrainedResidual,
)

from .helpers import measured_lipschitz, train_for_steepness

F64 = torch.float64


def _tight_model(dtype: torch.dtype = torch.float32, *, learnable_step: bool = False) -> nn.Sequential:
    """A 4 → 3 gradient-step ResNet (lift, 3 blocks, head) trained for steepness: a tight certificate."""
    torch.manual_seed(0)
    model = lipschitz_resnet(4, 3, width=12, depth=3, step=2.0 if not learnable_step else 1.0,
                             learnable_step=learnable_step, dtype=dtype)  # fmt: skip
    train_for_steepness(model, 4, steps=30)
    return model.eval()


def _slack(model: nn.Module) -> float:
    """Relative room for floating-point evaluation of the measurement (64 ulps of the dtype, ≥ 10⁻¹⁰).

    The certificate is for exact arithmetic; a measured Jacobian or secant carries the rounding of
    the forward pass, a few ulps per layer, amplified by cancellation in f(x) − f(y) for close
    pairs (3·10⁻¹⁴ relative seen in float64). The paths refused here undershoot by factors.
    """
    return 1.0 + max(64 * torch.finfo(next(model.parameters()).dtype).eps, 1e-10)


def _assert_sound(model: nn.Module, features: int, **kwargs: object) -> float:
    """The certificate of ``model`` is ≥ its measured Lipschitz constant; returns the certificate."""
    bound = lipschitz_upper_bound(model, **kwargs)  # type: ignore[arg-type]
    measured = measured_lipschitz(model, features)
    assert measured <= bound * _slack(model), f"certificate {bound!r} < measured {measured!r}"
    return bound


# ----------------------------------------------------------------------------------------- steps


@pytest.mark.parametrize("value", [20.0, -20.0, math.inf, -math.inf, math.nan, 2.0 + 1e-12])
def test_a_fixed_step_outside_its_range_is_refused_when_set(value: float) -> None:
    model = _tight_model()
    block = model[1]
    with pytest.raises(ValueError, match="`step`"):
        block.step = value
    assert block.step == 2.0  # unchanged
    assert lipschitz_upper_bound(model) <= 1.0


def test_a_learnable_block_refuses_a_step_outside_the_open_interval() -> None:
    block = GradientStepResidual(4, 4, step=1.0, learnable_step=True)
    with pytest.raises(ValueError, match="`step`"):
        block.step = 2.0
    block.step = 1.5  # inside (0, 2): accepted
    assert block.step == 1.5


def test_a_step_written_behind_the_setter_is_refused_at_certification() -> None:
    model = _tight_model()
    model[1].__dict__["_step"] = 20.0  # bypasses the property, as object.__setattr__ would
    with pytest.raises(ValueError, match=r"model\.1.*`step`"):
        lipschitz_upper_bound(model)


def test_the_step_is_checked_after_torch_compile_too() -> None:
    model = _tight_model()
    compiled = torch.compile(model, backend="eager")
    with pytest.raises(ValueError, match="`step`"):
        model[1].step = 20.0
    # the compiled wrapper is certified through its original module, by the same rules
    assert lipschitz_upper_bound(compiled) == lipschitz_upper_bound(model) <= 1.0
    model[0].register_forward_pre_hook(lambda module, args: (50 * args[0],))
    with pytest.raises(ValueError, match=r"forward pre-hook .* on `model\._orig_mod\.0`"):
        lipschitz_upper_bound(compiled)


@pytest.mark.parametrize(
    ("where", "name"),
    [(1, "bias"), (0, "bias"), (4, "bias"), (1, "weight"), (2, "step_logit"), (1, "power_vector")],
)
@pytest.mark.parametrize("value", [math.inf, math.nan])
def test_a_non_finite_parameter_or_buffer_is_refused_by_name(where: int, name: str, value: float) -> None:
    model = _tight_model(learnable_step=True)
    with torch.no_grad():
        getattr(model[where], name).view(-1)[0] = value
    with pytest.raises(ValueError, match=rf"`model\.{where}\.{name}`.*non-finite"):
        lipschitz_upper_bound(model)
    with pytest.raises(ValueError, match="non-finite"):
        certify(model, torch.randn(8, 4), torch.zeros(8, dtype=torch.long), [0.1], ascent_steps=0)


def test_a_layer_refuses_non_finite_steps_and_biases_on_its_own() -> None:
    block = GradientStepResidual(4, 4, step=1.0, learnable_step=True)
    with torch.no_grad():
        block.step_logit.fill_(math.nan)
    with pytest.raises(ValueError, match="step_logit"):
        block.lipschitz_bound()
    lift = NormConstrainedLinear(4, 4)
    with torch.no_grad():
        lift.bias[0] = math.inf
    with pytest.raises(ValueError, match="bias"):
        lift.lipschitz_bound()


# ----------------------------------------------------------------------------------------- hooks


def test_a_forward_pre_hook_on_the_lift_is_refused_naming_it() -> None:
    model = _tight_model()

    def scale_input(module: nn.Module, args: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        return (50 * args[0],)

    handle = model[0].register_forward_pre_hook(scale_input)
    # the hook does change the model: measured ≈ 50× the unhooked constant
    assert measured_lipschitz(model, 4) > 10
    with pytest.raises(ValueError, match=r"forward pre-hook `.*scale_input` on `model\.0` \(NormConstrainedLinear\)"):
        lipschitz_upper_bound(model)
    with pytest.raises(ValueError, match="scale_input"):
        certify(model, torch.randn(8, 4), torch.zeros(8, dtype=torch.long), [0.1], ascent_steps=0)
    handle.remove()
    assert lipschitz_upper_bound(model) <= 1.0


def test_a_forward_hook_on_the_model_is_refused_or_recorded_when_trusted() -> None:
    model = _tight_model()

    def record(module: nn.Module, args: object, output: torch.Tensor) -> None:
        """A logging hook: changes nothing."""

    model.register_forward_hook(record)
    with pytest.raises(ValueError, match=r"forward hook `.*record` on `model` \(Sequential\)"):
        lipschitz_upper_bound(model)
    trusted = lipschitz_upper_bound(model, trust_hooks=True)
    assert isinstance(trusted, LipschitzBound) and trusted <= 1.0
    assert len(trusted.assumptions) == 1 and "record" in trusted.assumptions[0]
    assert "assumptions" in repr(trusted)
    row = certify(model, torch.randn(8, 4), torch.zeros(8, dtype=torch.long), [0.1], ascent_steps=0, trust_hooks=True)
    assert "record" in str(row["lipschitz_assumptions"])
    untrusted = lipschitz_upper_bound(nn.Sequential(MaxMin(4)))
    assert untrusted.assumptions == () and repr(untrusted) == "1.0"


def test_an_output_scaling_forward_hook_on_the_model_is_refused() -> None:
    model = _tight_model()
    model.register_forward_hook(lambda module, args, output: 50 * output)
    assert measured_lipschitz(model, 4) > 10
    with pytest.raises(ValueError, match=r"forward hook .* on `model`"):
        lipschitz_upper_bound(model)


def test_a_hook_inside_a_layer_with_its_own_bound_is_refused() -> None:
    block = UnconstrainedResidual(4, 4)
    block.inner.register_forward_hook(lambda module, args, output: 50 * output)
    with pytest.raises(ValueError, match=r"`model\.0\.inner`"):
        lipschitz_upper_bound(nn.Sequential(block))


def test_a_global_module_hook_is_refused() -> None:
    handle = nn.modules.module.register_module_forward_hook(lambda module, args, output: output)
    try:
        with pytest.raises(ValueError, match="global forward hook"):
            lipschitz_upper_bound(nn.Sequential(MaxMin(4)))
    finally:
        handle.remove()
    assert lipschitz_upper_bound(nn.Sequential(MaxMin(4))) == 1.0


# ----------------------------------------------------------------------------------------- positions


def test_a_linear_used_twice_counts_twice() -> None:
    linear = nn.Linear(3, 3, bias=False, dtype=F64)
    with torch.no_grad():
        linear.weight.copy_(3.0 * torch.eye(3, dtype=F64))
    model = nn.Sequential(linear, linear)
    bound = _assert_sound(model, 3)
    assert 9.0 <= bound <= 9.0 * (1 + 1e-12)


def test_one_unconstrained_block_at_three_positions_counts_three_times() -> None:
    torch.manual_seed(1)
    block = UnconstrainedResidual(6, 6, dtype=F64)
    with torch.no_grad():
        block.inner.weight.mul_(4.0)
        block.outer.weight.mul_(4.0)
    one = lipschitz_upper_bound(nn.Sequential(block))
    model = nn.Sequential(block, block, block)
    bound = _assert_sound(model, 6)
    assert bound >= one**3 * (1 - 1e-12)
    nested = nn.Sequential(nn.Sequential(block, block), nn.Sequential(block, block))
    assert lipschitz_upper_bound(nested) >= one**4 * (1 - 1e-12)


def test_a_block_shared_between_positions_of_a_certified_resnet() -> None:
    model = _tight_model()
    shared = nn.Sequential(model[0], model[1], model[1], model[1], model[4])
    _assert_sound(shared, 4)
    assert lipschitz_upper_bound(shared) <= 1.0


# ----------------------------------------------------------------------------------------- modes


def test_setting_bound_changes_the_mode_the_forward_uses() -> None:
    layer = GradientStepResidual(6, 6, step=2.0, bound="power")
    model = nn.Sequential(layer)
    train_for_steepness(model, 6, steps=20)  # leaves eval mode
    model.train()
    with pytest.raises(ValueError, match="bound='power' is in training mode"):
        lipschitz_upper_bound(model)
    layer.bound = "exact"  # one source of truth: the forward now uses the exact bound too
    assert layer._bound.mode == "exact"
    bound = lipschitz_upper_bound(model)
    with torch.enable_grad():
        measured = measured_lipschitz(model, 6)
    assert measured <= bound * _slack(model) and bound <= 1.0
    with pytest.raises(ValueError, match="`bound`"):
        layer.bound = "spectral"
    assert layer.bound == "exact"
    lift = NormConstrainedLinear(4, 4, bound="exact")
    lift.bound = "power"
    assert lift._bound.mode == "power"
    with pytest.raises(ValueError, match="training mode"):
        lipschitz_upper_bound(lift)


@pytest.mark.parametrize("p", [0.5, 0.2, 0.9])
def test_dropout_in_training_mode_is_certified_by_one_over_one_minus_p(p: float) -> None:
    torch.manual_seed(2)
    linear = nn.Linear(8, 8, dtype=F64)
    model = nn.Sequential(linear, nn.Dropout(p))
    model.train()
    bound = lipschitz_upper_bound(model)
    spectral = lipschitz_upper_bound(nn.Sequential(linear))
    assert bound >= spectral / (1 - p) * (1 - 1e-15)
    # one forward = one fixed mask: the Jacobian of that map, measured through autograd
    points = torch.randn(64, 8, dtype=F64)
    assert float(jacobian_spectral_norms(model, points).max()) <= bound * _slack(model)
    model.eval()
    assert lipschitz_upper_bound(model) == spectral


def test_dropout_p_outside_its_range_is_refused() -> None:
    dropout = nn.Dropout(0.5)
    dropout.p = 1.5
    with pytest.raises(ValueError, match=r"p=1\.5"):
        lipschitz_upper_bound(nn.Sequential(dropout))
    dropout.p = 1.0
    assert lipschitz_upper_bound(nn.Sequential(nn.Linear(2, 2), dropout)) == 0.0


def test_power_clamped_residual_in_training_mode_is_refused() -> None:
    block = PowerClampedResidual(4, 4, step=2.0, bound="power")
    with pytest.raises(ValueError, match="training mode"):
        lipschitz_upper_bound(nn.Sequential(block))
    block.eval()
    assert lipschitz_upper_bound(nn.Sequential(block)) <= 1.0 + 1e-6


# ----------------------------------------------------------------------------------------- autocast


def _rounded_twin(model: nn.Sequential, dtype: torch.dtype) -> nn.Module:
    """The model with the operands autocast rounds, in float64 exact-ish arithmetic (the issue's measurement)."""

    class Twin(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = x.to(F64)
            for layer in model:
                if isinstance(layer, GradientStepResidual):
                    w, tau = layer.weight.detach(), layer.tau().detach()
                    b = w.to(dtype).to(F64)
                    c = (-(w * -tau).to(dtype)).to(F64)
                    x = x - torch.relu(x @ b.T + layer.bias.detach().to(dtype).to(F64)) @ c
                elif isinstance(layer, (NormConstrainedLinear, OrthogonalLinear)):
                    a = layer.to_dense().detach().to(dtype).to(F64)
                    x = x @ a.T + layer.bias.detach().to(dtype).to(F64)
                else:
                    x = layer(x)
            return x

    return Twin()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_certificate_under_autocast_covers_the_rounded_operands(dtype: torch.dtype) -> None:
    model = _tight_model()
    plain = lipschitz_upper_bound(model)
    with torch.autocast("cpu", dtype=dtype):
        inside = lipschitz_upper_bound(model)
    assert inside.operand_dtype == dtype
    assert inside == lipschitz_upper_bound(model, autocast_dtype=dtype)
    assert plain <= 1.0 < inside  # rounding the operands can make the map steeper than 1
    twin = _rounded_twin(model, dtype)
    generator = torch.Generator().manual_seed(3)
    points = torch.randn(512, 4, generator=generator, dtype=F64)
    assert float(jacobian_spectral_norms(twin, points).max()) <= inside * (1 + 1e-12)  # float64 twin
    # the autocast forward itself matches the twin to the rounding of its activations
    with torch.autocast("cpu", dtype=dtype):
        autocast_out = model(points[:16].float()).double()
    assert torch.allclose(autocast_out, twin(points[:16]), atol=0.05, rtol=0.05)


def test_orthogonal_linear_alone_under_autocast() -> None:
    torch.manual_seed(4)
    layer = OrthogonalLinear(32, 16).eval()
    stored = lipschitz_upper_bound(layer)
    assert stored <= 1.0
    rounded = float(torch.linalg.matrix_norm(layer.to_dense().detach().to(torch.bfloat16).to(F64), ord=2))
    assert rounded > 1.0  # the 1.00225-type overshoot
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert lipschitz_upper_bound(layer) >= rounded


def test_a_layer_that_cannot_certify_rounded_operands_is_refused_under_autocast() -> None:
    class Halve(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return 0.5 * x

        def lipschitz_bound(self) -> float:
            return 0.5

    model = nn.Sequential(nn.Linear(2, 2), Halve())
    assert lipschitz_upper_bound(model) > 0
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with pytest.raises(ValueError, match=r"`model\.1` \(Halve\) cannot certify matmul operands"):
            lipschitz_upper_bound(model)
    with pytest.raises(ValueError, match="autocast_dtype"):
        lipschitz_upper_bound(model, autocast_dtype=torch.int8)


def test_float64_models_are_untouched_by_autocast() -> None:
    model = _tight_model(F64)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert lipschitz_upper_bound(model) == lipschitz_upper_bound(model, autocast_dtype=None) <= 1.0


# ----------------------------------------------------------------------------------------- overrides


def test_a_forward_or_method_replaced_on_the_instance_is_refused() -> None:
    model = _tight_model()
    model[1].forward = lambda x: 50 * x  # type: ignore[method-assign]
    with pytest.raises(ValueError, match=r"`model\.1` .* method `forward` replaced on the instance"):
        lipschitz_upper_bound(model)
    model = _tight_model()
    model[2].tau = lambda: torch.tensor(50.0)  # type: ignore[method-assign]
    with pytest.raises(ValueError, match="method `tau`"):
        lipschitz_upper_bound(model)


def test_a_subclass_that_overrides_forward_is_refused() -> None:
    class Steeper(GradientStepResidual):
        def forward(self, input: torch.Tensor) -> torch.Tensor:
            return 50 * super().forward(input)

    with pytest.raises(ValueError, match=r"overrides forward\(\) of GradientStepResidual"):
        lipschitz_upper_bound(nn.Sequential(Steeper(4, 4)))

    class Chain(nn.Sequential):
        def forward(self, input: torch.Tensor) -> torch.Tensor:
            return 50 * super().forward(input)

    with pytest.raises(ValueError, match="overrides forward"):
        lipschitz_upper_bound(Chain(MaxMin(4)))

    class LoudLinear(nn.Linear):
        def forward(self, input: torch.Tensor) -> torch.Tensor:
            return 50 * super().forward(input)

    with pytest.raises(TypeError, match="LoudLinear"):
        lipschitz_upper_bound(nn.Sequential(LoudLinear(2, 2)))
    block = UnconstrainedResidual(2, 2)
    block.inner = LoudLinear(2, 2)
    with pytest.raises(ValueError, match="plain nn.Linear"):
        lipschitz_upper_bound(block)


def test_a_subclass_with_its_own_certificate_is_trusted() -> None:
    class Halved(GradientStepResidual):
        def forward(self, input: torch.Tensor) -> torch.Tensor:
            return 0.5 * super().forward(input)

        def lipschitz_bound(self, *, operand_dtype: torch.dtype | None = None) -> float:
            return 0.5 * super().lipschitz_bound(operand_dtype=operand_dtype)

    model = nn.Sequential(Halved(4, 4, dtype=F64)).eval()
    assert _assert_sound(model, 4) == 0.5


def test_tensor_subclasses_and_torch_function_modes_are_refused() -> None:
    class Loud(nn.Parameter):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            result = super().__torch_function__(func, types, args, kwargs or {})
            return 50 * result if func is torch.nn.functional.linear else result

    linear = nn.Linear(2, 2)
    linear.weight = Loud(linear.weight.detach().clone())
    with pytest.raises(ValueError, match=r"`model\.0\.weight` .* own __torch_function__"):
        lipschitz_upper_bound(nn.Sequential(linear))

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            return func(*args, **(kwargs or {}))

    with Mode(), pytest.raises(ValueError, match="torch function mode is active"):
        lipschitz_upper_bound(nn.Sequential(nn.Linear(2, 2)))
    with torch.device("cpu"):  # a device context is a mode too, and harmless
        assert lipschitz_upper_bound(nn.Sequential(MaxMin(2))) == 1.0


def test_invalid_bounds_and_slopes_and_lazy_layers_are_refused() -> None:
    class Broken(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x

        def lipschitz_bound(self) -> float:
            return math.nan

    with pytest.raises(ValueError, match="invalid Lipschitz bound nan"):
        lipschitz_upper_bound(nn.Sequential(Broken()))
    leaky = nn.LeakyReLU(0.1)
    leaky.negative_slope = math.inf
    with pytest.raises(ValueError, match="negative_slope"):
        lipschitz_upper_bound(nn.Sequential(leaky))
    with pytest.raises(ValueError, match="lazy module"):
        lipschitz_upper_bound(nn.Sequential(nn.LazyLinear(3)))


def test_the_bound_pickles_with_its_assumptions() -> None:
    model = _tight_model()
    model.register_forward_hook(lambda module, args, output: None)
    bound = lipschitz_upper_bound(model, trust_hooks=True, autocast_dtype=torch.bfloat16)
    again = pickle.loads(pickle.dumps(bound))
    assert again == bound and again.assumptions == bound.assumptions and again.operand_dtype == torch.bfloat16
    assert float(again) == float(bound) and f"{again:.3f}" == f"{float(bound):.3f}"


def test_a_random_parametrization_is_refused_and_a_deterministic_one_is_certified() -> None:
    from torch.nn.utils import parametrize

    class Double(nn.Module):
        def forward(self, weight: torch.Tensor) -> torch.Tensor:
            return 2.0 * weight

    torch.manual_seed(5)
    linear = nn.Linear(4, 4, dtype=F64)
    parametrize.register_parametrization(linear, "weight", Double())
    model = nn.Sequential(linear)
    _assert_sound(model, 4)  # the parametrized weight is the one certified

    class Noisy(nn.Module):
        def forward(self, weight: torch.Tensor) -> torch.Tensor:
            return weight * (1 + torch.rand(()))

    noisy = nn.Linear(4, 4, dtype=F64)
    parametrize.register_parametrization(noisy, "weight", Noisy())
    with pytest.raises(ValueError, match=r"parametrization of `model\.0\.weight` gives another tensor"):
        lipschitz_upper_bound(nn.Sequential(noisy))
    dropped = nn.Linear(4, 4, dtype=F64)
    parametrize.register_parametrization(dropped, "weight", nn.Dropout(0.5))
    with pytest.raises(ValueError, match="Dropout.*training mode makes"):
        lipschitz_upper_bound(nn.Sequential(dropped))
    dropped.eval()
    assert lipschitz_upper_bound(nn.Sequential(dropped)) > 0


# ----------------------------------------------------------------------------------------- fuzzing


def _pool(generator: torch.Generator) -> list[nn.Module]:
    """Modules of width 5 to compose: steep, contracting, mode-dependent and parameter-free ones."""
    torch.manual_seed(int(torch.randint(2**31, (1,), generator=generator)))
    steep = nn.Linear(5, 5, dtype=F64)
    with torch.no_grad():
        steep.weight.mul_(3.0)
    block = UnconstrainedResidual(5, 7, dtype=F64)
    step = GradientStepResidual(5, 9, step=2.0, dtype=F64)
    with torch.no_grad():
        step.weight.mul_(5.0)  # large W: τ adapts, the block stays 1-Lipschitz
    return [steep, block, step, NormConstrainedLinear(5, 5, dtype=F64), nn.Dropout(0.3), nn.LeakyReLU(-1.5),
            MaxMin(5), nn.Tanh(), PowerClampedResidual(5, 5, step=2.0, bound="gram", dtype=F64)]  # fmt: skip


@pytest.mark.parametrize("seed", range(40))
def test_random_compositions_with_repeated_modules_are_never_undercertified(seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    pool = _pool(generator)
    slots = int(torch.randint(1, 7, (1,), generator=generator))
    chosen = [pool[int(i)] for i in torch.randint(len(pool), (slots,), generator=generator)]
    if slots > 2 and bool(torch.rand((), generator=generator) < 0.5):
        chosen = [nn.Sequential(*chosen[:2]), *chosen[2:], nn.Sequential(*chosen[:2])]  # a nested repeat
    model = nn.Sequential(*chosen)
    model.train(bool(torch.rand((), generator=generator) < 0.5))
    bound = lipschitz_upper_bound(model)
    points = torch.randn(64, 5, generator=generator, dtype=F64)
    # one forward per Jacobian: in training mode one dropout mask, the map the bound must cover
    measured = float(jacobian_spectral_norms(model, points).max())
    assert measured <= bound * (1 + 1e-10), f"{model}: certificate {bound!r} < measured {measured!r}"


def test_a_convolutional_step_outside_its_range_is_refused_when_set() -> None:
    from structnets.nn import GradientStepConv2d

    block = GradientStepConv2d(3, 4, 3, learnable_step=False, step=2.0)
    for value in (20.0, -20.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="`step`"):
            block.step = value
    block.__dict__["_step"] = 20.0
    with pytest.raises(ValueError, match="`step`"):
        lipschitz_upper_bound(nn.Sequential(block))
