"""The suite every structured layer passes (docs/design.md, conventions 1-4 and 9).

Each test is parametrised over :data:`cases.CASES`; a new layer joins by adding one ``LayerCase``.
"""

from __future__ import annotations

import ast
import copy
import inspect

import pytest
import torch
from torch import nn
from torch.func import functional_call

from .cases import CASES, INVALID, Invalid, LayerCase

F64 = torch.float64
STRUCTURED = [case for case in CASES if case.structured]
AFFINE_STRUCTURED = [case for case in STRUCTURED if case.affine]


def _ids(cases: list[LayerCase]) -> list[str]:
    return [case.name for case in cases]


def _build(case: LayerCase, dtype: torch.dtype = F64, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return case.factory(dtype)


def _reference(case: LayerCase, layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``x Wᵀ + b`` from the layer's own dense matrix, or a nonlinear layer's formula, in float64."""
    if case.reference is not None:
        return case.reference(layer, x)
    out = x @ case.dense(layer).T
    bias = getattr(layer, "bias", None)
    return out if bias is None else out + bias


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
@pytest.mark.parametrize("leading", [(), (7,), (2, 3), (2, 1, 4), (0,)], ids=str)
def test_output_equals_reference(case: LayerCase, leading: tuple[int, ...]) -> None:
    layer = _build(case)
    with torch.no_grad():  # non-zero bias, so a dropped or doubled bias cannot pass
        if getattr(layer, "bias", None) is not None:
            layer.bias.uniform_(0.5, 1.5)
    x = torch.randn(*leading, case.in_features, dtype=F64)
    out = layer(x)
    expected = _reference(case, layer, x)
    assert out.shape == expected.shape == (*leading, expected.shape[-1])
    assert out.dtype == F64
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_non_contiguous_input(case: LayerCase) -> None:
    layer = _build(case)
    base = torch.randn(case.in_features, 5, 3, dtype=F64)
    x = base.permute(2, 1, 0)  # (3, 5, in), strided
    assert not x.is_contiguous()
    torch.testing.assert_close(layer(x), _reference(case, layer, x), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(layer(x), layer(x.contiguous()), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_gradcheck_input_and_every_parameter(case: LayerCase) -> None:
    layer = _build(case)
    names = [name for name, _ in layer.named_parameters()]
    params = tuple(p.detach().clone().requires_grad_(True) for _, p in layer.named_parameters())
    x = torch.randn(2, 3, case.in_features, dtype=F64, requires_grad=True)

    def fn(x: torch.Tensor, *ps: torch.Tensor) -> torch.Tensor:
        return functional_call(layer, dict(zip(names, ps, strict=True)), (x,))

    assert torch.autograd.gradcheck(fn, (x, *params))
    assert torch.autograd.gradgradcheck(fn, (x, *params))


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")  # torch.func internals
@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_function_transforms_see_the_dense_jacobian(case: LayerCase) -> None:
    """torch.func (reverse, forward mode, vmap) works on the layer: ∂y/∂x = W at any x (affine),
    or the Jacobian of the reference formula (nonlinear)."""
    layer = _build(case)
    x = torch.randn(case.in_features, dtype=F64)
    if case.affine:
        jacobian = case.dense(layer).detach()
    else:
        jacobian = torch.autograd.functional.jacobian(lambda v: _reference(case, layer, v), x).detach()
    torch.testing.assert_close(torch.func.jacrev(layer)(x), jacobian, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(torch.func.jacfwd(layer)(x), jacobian, rtol=1e-12, atol=1e-12)
    xs = torch.randn(4, 3, case.in_features, dtype=F64)
    torch.testing.assert_close(torch.func.vmap(layer)(xs), layer(xs), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_wrong_input_size_is_rejected(case: LayerCase) -> None:
    if case.elementwise:
        pytest.skip("an elementwise layer (an activation) has no input size to reject")
    layer = _build(case)
    with pytest.raises((ValueError, RuntimeError)):
        layer(torch.randn(3, case.in_features + 1, dtype=F64))


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_gradients_match_dense_reference(case: LayerCase) -> None:
    """Backward of the layer equals backward of ``x Wᵀ + b`` with W = dense(layer)."""
    layer = _build(case)
    x = torch.randn(4, 2, case.in_features, dtype=F64, requires_grad=True)
    grad_out = torch.randn(4, 2, _reference(case, layer, x).shape[-1], dtype=F64)
    params = [p for p in layer.parameters()]
    got = torch.autograd.grad(layer(x), [x, *params], grad_out)
    want = torch.autograd.grad(_reference(case, layer, x), [x, *params], grad_out)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_state_dict_round_trip(case: LayerCase) -> None:
    source = _build(case, seed=1)
    target = _build(case, seed=2)
    x = torch.randn(3, case.in_features, dtype=F64)
    if not source.state_dict():  # a parameter-free layer (MaxMin): nothing to load, same function
        assert torch.equal(source(x), target(x))
        return
    assert not torch.equal(source(x), target(x))  # different seeds, so loading must do the work
    target.load_state_dict(source.state_dict())
    assert torch.equal(source(x), target(x))
    assert source.state_dict().keys() == target.state_dict().keys()


def _repr_kwargs(layer: nn.Module) -> dict[str, object]:
    call = ast.parse(f"f({layer.extra_repr()})", mode="eval").body
    assert isinstance(call, ast.Call) and not call.args, f"extra_repr must be key=value pairs: {layer.extra_repr()}"
    return {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_repr_shows_constructor_arguments(case: LayerCase) -> None:
    layer = _build(case)
    kwargs = _repr_kwargs(layer)
    signature = inspect.signature(type(layer).__init__)
    arguments = {name for name, p in signature.parameters.items() if name not in {"self", "device", "dtype"}}
    assert set(kwargs) == arguments, f"repr {layer!r} must name exactly {sorted(arguments)}"
    assert type(layer).__name__ in repr(layer)
    rebuilt = type(layer)(**kwargs, dtype=F64)  # the repr is enough to rebuild the layer
    assert rebuilt.extra_repr() == layer.extra_repr()
    assert {n: p.shape for n, p in rebuilt.named_parameters()} == {n: p.shape for n, p in layer.named_parameters()}


@pytest.mark.parametrize("case", STRUCTURED, ids=_ids(STRUCTURED))
def test_constructor_signature_convention(case: LayerCase) -> None:
    """Shape arguments, then options, then keyword-only device/dtype; no **kwargs (convention 1)."""
    parameters = inspect.signature(type(_build(case)).__init__).parameters
    kinds = {name: p.kind for name, p in parameters.items()}
    assert kinds.get("device") is inspect.Parameter.KEYWORD_ONLY
    assert kinds.get("dtype") is inspect.Parameter.KEYWORD_ONLY
    assert inspect.Parameter.VAR_KEYWORD not in kinds.values()
    assert inspect.Parameter.VAR_POSITIONAL not in kinds.values()


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_reset_parameters_reinitialises_every_parameter(case: LayerCase) -> None:
    layer = _build(case)
    with torch.no_grad():
        for p in layer.parameters():
            p.fill_(float("nan"))
    torch.manual_seed(3)
    layer.reset_parameters()
    first = {n: p.detach().clone() for n, p in layer.named_parameters()}
    assert all(torch.isfinite(p).all() for p in first.values()), "reset_parameters left a parameter untouched"
    assert all(p.abs().sum() > 0 for p in first.values())
    torch.manual_seed(3)
    layer.reset_parameters()  # seeded, so reproducible
    for n, p in layer.named_parameters():
        assert torch.equal(p, first[n])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_dtype_argument(case: LayerCase, dtype: torch.dtype) -> None:
    layer = _build(case, dtype)
    tensors = [*layer.parameters(), *(b for b in layer.buffers() if b.is_floating_point())]
    assert tensors or not case.affine, "an affine layer must hold its weight"
    assert all(t.dtype == dtype for t in tensors)
    assert layer(torch.randn(2, case.in_features, dtype=dtype)).dtype == dtype


@pytest.mark.parametrize("case", AFFINE_STRUCTURED, ids=_ids(AFFINE_STRUCTURED))
def test_to_dense_shape_dtype_and_autograd(case: LayerCase) -> None:
    layer = _build(case)
    out_features = layer(torch.zeros(1, case.in_features, dtype=F64)).shape[-1]
    dense = layer.to_dense()
    assert dense.shape == (out_features, case.in_features)
    assert dense.dtype == F64
    # to_dense is differentiable, so analysis tools (norms, ranks) can be used as penalties.
    dense.sum().backward()
    assert all(p.grad is not None for n, p in layer.named_parameters() if n != "bias")


@pytest.mark.parametrize("case", AFFINE_STRUCTURED, ids=_ids(AFFINE_STRUCTURED))
def test_to_linear_has_identical_outputs(case: LayerCase) -> None:
    layer = _build(case)
    if not hasattr(layer, "to_linear"):
        pytest.skip("layer has no to_linear")
    linear = layer.to_linear()
    assert isinstance(linear, nn.Linear)
    x = torch.randn(5, case.in_features, dtype=F64)
    torch.testing.assert_close(linear(x), layer(x), rtol=1e-12, atol=1e-12)
    assert linear.weight.dtype == F64


@pytest.mark.parametrize("bad", INVALID, ids=[bad.id for bad in INVALID])
def test_invalid_constructor_argument_is_named(bad: Invalid) -> None:
    with pytest.raises(bad.error) as info:
        bad.layer(**bad.kwargs)
    message = str(info.value)
    assert f"`{bad.argument}`" in message
    value = bad.kwargs[bad.argument]
    assert repr(value) in message or str(value) in message, f"message must show the value: {message}"


def test_every_structured_layer_type_has_invalid_argument_cases() -> None:
    """A layer added to CASES must also list how its constructor rejects bad arguments."""
    covered = {bad.layer for bad in INVALID}
    for case in STRUCTURED:
        assert type(_build(case)) in covered, f"add Invalid(...) entries for {case.name}"


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_stacked_copies_under_vmap_have_each_copys_gradients(case: LayerCase) -> None:
    """E copies stacked (``torch.func.stack_module_state``) and run under ``vmap(functional_call)``, as
    the batched-ensemble trainer does: outputs and parameter gradients equal each copy's own."""
    layers = [_build(case, seed=s) for s in range(3)]
    x = torch.randn(3, 4, case.in_features, dtype=F64)
    grad_out = torch.randn(3, 4, layers[0](x[0]).shape[-1], dtype=F64)
    params, buffers = torch.func.stack_module_state(layers)
    base = copy.deepcopy(layers[0]).to("meta")
    out = torch.func.vmap(lambda p, b, v: functional_call(base, (p, b), (v,)))(params, buffers, x)
    if params:
        stacked_grads = torch.autograd.grad(out, list(params.values()), grad_out)
    for e, layer in enumerate(layers):
        alone = layer(x[e])
        torch.testing.assert_close(out[e], alone, rtol=1e-12, atol=1e-12)
        if params:
            names = [n for n, _ in layer.named_parameters()]
            own = torch.autograd.grad(alone, [dict(layer.named_parameters())[n] for n in names], grad_out[e])
            for name, got, want in zip(names, stacked_grads, own, strict=True):
                torch.testing.assert_close(got[e], want, rtol=1e-10, atol=1e-12, msg=f"{case.name}: {name}")
