"""Convolutional 1-Lipschitz layers: the adjoint, exports with equal outputs, refusals by name, the model."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from structnets import export
from structnets.analysis import lipschitz_upper_bound
from structnets.models import lipschitz_convnet
from structnets.nn import (
    FlatToImage,
    GradientStepConv2d,
    GradientStepResidual,
    InvertibleDownsample,
    L2NormPool2d,
    NormConstrainedConv2d,
)
from structnets.nn._conv_common import conv_same, conv_same_adjoint

F64 = torch.float64


@pytest.mark.parametrize("padding_mode", ["zeros", "circular"])
@pytest.mark.parametrize("kernel_size", [(3, 3), (2, 2), (4, 3), (1, 1), (5, 2)])
def test_adjoint_is_exact(kernel_size: tuple[int, int], padding_mode: str) -> None:
    """⟨Wx, y⟩ = ⟨x, Wᵀy⟩ in float64, and Wᵀ equals autograd's vector-Jacobian product."""
    generator = torch.Generator().manual_seed(0)
    weight = torch.randn(5, 3, *kernel_size, generator=generator, dtype=F64)
    x = torch.randn(2, 3, 7, 6, generator=generator, dtype=F64, requires_grad=True)
    out = conv_same(x, weight, None, padding_mode)
    assert out.shape == (2, 5, 7, 6)
    y = torch.randn(out.shape, generator=generator, dtype=F64)
    (vjp,) = torch.autograd.grad(out, x, grad_outputs=y)
    adjoint = conv_same_adjoint(y, weight, padding_mode)
    torch.testing.assert_close(adjoint, vjp, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("padding_mode", ["zeros", "circular"])
@pytest.mark.parametrize("kernel_size", [3, 2, (3, 2)])
def test_exports_compute_the_same_outputs(kernel_size: int | tuple[int, int], padding_mode: str) -> None:
    torch.manual_seed(0)
    x = torch.randn(3, 4, 8, 8, dtype=F64)
    layers = [
        GradientStepConv2d(4, 6, kernel_size, padding_mode=padding_mode, dtype=F64),
        NormConstrainedConv2d(4, 5, kernel_size, padding_mode=padding_mode, input_size=8, dtype=F64),
        InvertibleDownsample(4, 8, 2, dtype=F64),
        InvertibleDownsample(4, 20, 2, kind="norm-constrained", dtype=F64),
    ]
    for layer in layers:
        layer.eval()
        plain = layer.export()
        assert all(
            type(m).__module__.startswith("torch.") for m in plain.modules() if type(m).__name__ != "ResidualExport"
        )
        torch.testing.assert_close(plain(x), layer(x), rtol=1e-12, atol=1e-12)


def test_model_certifies_exports_and_matches() -> None:
    torch.manual_seed(0)
    model = lipschitz_convnet(1, 10, 12, channels=(4, 8), depths=(1, 1), head_width=16, head_depth=1,
                              flat_input=True, dtype=F64)  # fmt: skip
    model.eval()
    assert lipschitz_upper_bound(model) <= 1.0
    plain = export(model)
    x = torch.rand(5, 144, dtype=F64)
    torch.testing.assert_close(plain(x), model(x), rtol=1e-10, atol=1e-10)
    # plain torch layers, and the three-line residual wrapper x + body(x) the dense blocks export to as well
    assert {type(m).__name__ for m in plain.modules() if type(m).__module__.startswith("structnets")} == {
        "ResidualExport"
    }
    pooled = lipschitz_convnet(2, 3, (8, 6), channels=(4, 4), depths=(1, 0), head="pool", head_width=None, head_depth=0,
                               size_specific=False, padding_mode="circular", dtype=F64)  # fmt: skip
    assert pooled(torch.rand(2, 2, 8, 6, dtype=F64)).shape == (2, 3)
    assert lipschitz_upper_bound(pooled.eval()) <= 1.0


@pytest.mark.parametrize(
    ("bound", "head_bound", "conv_mode", "head_mode"),
    [
        ("exact", None, "exact", "exact"),
        ("verified", None, "verified", "verified"),
        ("verified", "exact", "verified", "exact"),
        ("exact", "verified", "exact", "verified"),
    ],
)
def test_head_bound_sets_the_dense_head_apart_from_the_convolutions(
    bound: str, head_bound: str | None, conv_mode: str, head_mode: str
) -> None:
    model = lipschitz_convnet(1, 10, 12, channels=(4, 8), depths=(1, 1), head_width=16, head_depth=2,
                              bound=bound, head_bound=head_bound, dtype=F64)  # fmt: skip
    convs = [m for m in model if isinstance(m, (GradientStepConv2d, NormConstrainedConv2d))]
    heads = [m for m in model if isinstance(m, GradientStepResidual)]
    assert len(convs) == 3 and len(heads) == 2
    assert {m.bound for m in convs} == {conv_mode} and {m.bound for m in heads} == {head_mode}
    # training with either mix stays certified: eval-mode certificate ≤ 1 after Adam steps
    _adam_steps(model, torch.rand(6, 1, 12, 12, dtype=F64))
    assert lipschitz_upper_bound(model.eval()) <= 1.0


def _adam_steps(model: nn.Module, x: torch.Tensor, steps: int = 3) -> None:
    """A few large Adam steps on ‖f(x)‖² in training mode (the verified bounds' path)."""
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        model(x).square().sum().backward()
        optimizer.step()


@pytest.mark.parametrize("bound", ["exact", "verified"])
def test_channels_last_model_computes_the_same_maps_and_stays_certified(bound: str) -> None:
    """``model.to(memory_format=torch.channels_last)`` (what lipschitz-mnist-conv trains): same outputs,
    gradients and certificates as the NCHW model, every activation in NHWC, certified ≤ 1 after training."""
    torch.manual_seed(0)
    nchw = lipschitz_convnet(1, 10, 12, channels=(4, 8), depths=(1, 1), head_width=16, head_depth=1,
                             flat_input=True, bound=bound, head_bound="exact", dtype=F64)  # fmt: skip
    nhwc = copy.deepcopy(nchw).to(memory_format=torch.channels_last)
    x = torch.rand(5, 144, dtype=F64)
    h = x
    with torch.no_grad():  # no training-mode state (the verified bound's power vectors) is touched
        for layer in nhwc:
            h = layer(h)
            if h.dim() == 4 and h.shape[1] > 1:
                assert h.is_contiguous(memory_format=torch.channels_last) and not h.is_contiguous()
    for model in (nchw, nhwc):
        model.train()
        model(x).square().sum().backward()
    torch.testing.assert_close(nhwc(x), nchw(x), rtol=1e-12, atol=1e-12)
    for (name, a), b in zip(nchw.named_parameters(), nhwc.parameters()):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-9, atol=1e-12, msg=name)
    assert lipschitz_upper_bound(nhwc.eval()) == pytest.approx(lipschitz_upper_bound(nchw.eval()), rel=1e-12)
    _adam_steps(nhwc, x)
    assert lipschitz_upper_bound(nhwc.eval()) <= 1.0
    torch.testing.assert_close(export(nhwc)(x), nhwc(x), rtol=1e-10, atol=1e-10)


def test_certificate_accounts_for_every_call_position() -> None:
    """One norm-constrained convolution used twice in a Sequential is counted twice (B² when B < 1)."""
    torch.manual_seed(0)
    lift = NormConstrainedConv2d(2, 2, 3, dtype=F64)
    with torch.no_grad():
        lift.raw_weight.mul_(0.01)  # inside the unit ball: constant B < 1
    single = lipschitz_upper_bound(nn.Sequential(lift))
    assert single < 1.0
    assert lipschitz_upper_bound(nn.Sequential(lift, lift)) >= single * single * (1 - 1e-15)
    assert lipschitz_upper_bound(nn.Sequential(lift, lift)) < single


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (lambda: GradientStepConv2d(2, 3, 3, stride=2), "stride"),
        (lambda: GradientStepConv2d(2, 3, 3, dilation=2), "dilation"),
        (lambda: GradientStepConv2d(2, 4, 3, groups=2), "groups"),
        (lambda: NormConstrainedConv2d(2, 3, 3, stride=(1, 2)), "stride"),
        (lambda: NormConstrainedConv2d(2, 3, 3, groups=2), "groups"),
        (lambda: GradientStepConv2d(2, 3, 3, padding_mode="reflect"), "padding_mode"),
        (lambda: GradientStepConv2d(2, 3, 5, input_size=4), "kernel_size"),
        (lambda: GradientStepConv2d(2, 3, 0), "kernel_size"),
        (lambda: GradientStepConv2d(2, 3, 3, step=2.0), "step"),
        (lambda: InvertibleDownsample(2, 3, 2, kind="haar"), "kind"),
        (lambda: lipschitz_convnet(1, 10, 14, channels=(4, 8, 8)), "image_size"),
        (lambda: lipschitz_convnet(1, 10, 28, channels=(4, 8), depths=(1,)), "depths"),
        (lambda: lipschitz_convnet(1, 10, 28, bound="power"), "bound"),
        (lambda: lipschitz_convnet(1, 10, 28, head_bound="power"), "head_bound"),
    ],
)
def test_bad_arguments_are_refused_by_name(build, name: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError), match=f"`{name}`"):
        build()


def test_bad_inputs_are_refused_by_name() -> None:
    layer = GradientStepConv2d(2, 3, 5)
    with pytest.raises(ValueError, match="smaller than the 5×5 kernel"):
        layer(torch.randn(1, 2, 4, 8))
    with pytest.raises(ValueError, match="`input` must have shape"):
        layer(torch.randn(1, 3, 8, 8))
    sized = NormConstrainedConv2d(2, 3, 3, input_size=8)
    with pytest.raises(ValueError, match="input_size"):
        sized(torch.randn(1, 2, 9, 8))
    with pytest.raises(ValueError, match="multiple of factor=2"):
        InvertibleDownsample(2, 8)(torch.randn(1, 2, 7, 8))
    with pytest.raises(ValueError, match=r"\(N, 12\)"):
        FlatToImage(3, 2, 2)(torch.randn(2, 13))
    with pytest.raises(ValueError, match="N, C, H, W"):
        L2NormPool2d()(torch.randn(2, 3))


def test_non_finite_weights_refuse_the_certificate() -> None:
    for layer, name in (
        (GradientStepConv2d(2, 3, 3), "weight"),
        (NormConstrainedConv2d(2, 3, 3), "raw_weight"),
        (InvertibleDownsample(2, 8), "raw_weight"),
    ):
        with torch.no_grad():
            getattr(layer, name)[0].view(-1)[0] = float("nan")
        with pytest.raises(ValueError, match="non-finite"):
            layer.lipschitz_bound()
        with pytest.raises(ValueError, match="non-finite"):
            lipschitz_upper_bound(nn.Sequential(layer))
        fresh = type(layer)(2, 3, 3) if not isinstance(layer, InvertibleDownsample) else InvertibleDownsample(2, 8)
        with pytest.raises(ValueError, match="must be finite"):
            fresh.load_state_dict(layer.state_dict())


def test_l2_norm_pool_and_flat_to_image() -> None:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(64, 3, 4, 5, generator=generator, dtype=F64)
    y = torch.randn(64, 3, 4, 5, generator=generator, dtype=F64)
    pool = L2NormPool2d()
    torch.testing.assert_close(pool(x), x.square().sum(dim=(2, 3)).sqrt())
    ratios = (pool(x) - pool(y)).norm(dim=1) / (x - y).flatten(1).norm(dim=1)
    assert float(ratios.max()) <= 1.0
    # a pair on one ray is stretched exactly to 1: the constant is attained
    same_ray = (pool(2 * x[:1]) - pool(x[:1])).norm() / x[:1].norm()
    assert abs(float(same_ray) - 1.0) < 1e-12
    flat = FlatToImage(3, 4, 5)
    image = flat(x.flatten(1))
    assert torch.equal(image, x)
    assert torch.equal(flat.export()(x.flatten(1)), image)


def test_gradient_step_conv_trains_and_tau_is_differentiable() -> None:
    torch.manual_seed(0)
    layer = GradientStepConv2d(2, 4, 3, input_size=6, dtype=F64)
    x = torch.randn(4, 2, 6, 6, dtype=F64)
    layer.train()
    layer(x).square().sum().backward()
    assert layer.weight.grad is not None and bool(torch.isfinite(layer.weight.grad).all())
    assert layer.step_logit.grad is not None
    # τ's own gradient through the bound: d(τ)/dW matches finite differences of the certified τ
    weight = layer.weight.detach().clone().requires_grad_(True)
    layer.weight = nn.Parameter(weight)
    tau = layer.tau()
    (grad,) = torch.autograd.grad(tau, layer.weight)
    direction = torch.randn_like(weight)
    h = 1e-6
    with torch.no_grad():
        layer.weight.add_(h * direction)
        plus = float(layer.tau())
        layer.weight.sub_(2 * h * direction)
        minus = float(layer.tau())
    assert abs((plus - minus) / (2 * h) - float((grad * direction).sum())) <= 1e-5 * max(1.0, abs(plus - minus) / h)


@pytest.mark.parametrize("padding_mode", ["zeros", "circular"])
@pytest.mark.parametrize("kernel_size", [3, 2])
def test_gradcheck_input_and_every_parameter(kernel_size: int, padding_mode: str) -> None:
    torch.manual_seed(0)
    layer = GradientStepConv2d(2, 3, kernel_size, padding_mode=padding_mode, input_size=5, dtype=F64)
    lift = NormConstrainedConv2d(2, 2, kernel_size, padding_mode=padding_mode, dtype=F64)
    with torch.no_grad():
        lift.raw_weight.mul_(10.0)  # outside the unit ball: the rescaling is active
    x = torch.randn(1, 2, 5, 5, dtype=F64, requires_grad=True)
    for module in (layer, lift):
        names = [name for name, _ in module.named_parameters()]

        def f(input: torch.Tensor, *params: torch.Tensor, module: nn.Module = module, names: list[str] = names):
            return torch.func.functional_call(module, dict(zip(names, params)), (input,))

        params = tuple(p.detach().clone().requires_grad_(True) for p in module.parameters())
        assert torch.autograd.gradcheck(f, (x, *params), atol=1e-6, rtol=1e-5)
