"""Certified layers compile whole (``fullgraph=True``), export, and build on the meta device."""

from __future__ import annotations

import pytest
import torch

from structnets.analysis import lipschitz_upper_bound
from structnets.models import lipschitz_resnet
from structnets.nn import GradientStepResidual, NormConstrainedLinear


@pytest.mark.parametrize("bound", ["exact", "power"])
def test_eval_model_compiles_fullgraph_and_exports_with_unchanged_outputs(bound: str) -> None:
    torch.manual_seed(0)
    model = lipschitz_resnet(4, 3, width=12, depth=2, bound=bound).eval()
    x = torch.randn(8, 4)
    with torch.no_grad():
        reference = model(x)
        torch._dynamo.reset()
        # aot_eager traces the whole graph (a graph break would raise) without inductor's C++ build.
        compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
        assert torch.equal(compiled(x), reference)
        exported = torch.export.export(model, (x,))
        assert torch.equal(exported.module()(x), reference)
        # The compiled graph recomputes the bound: after a weight edit it still certifies.
        for layer in model.modules():
            if isinstance(layer, GradientStepResidual):
                layer.weight.mul_(10.0)
        assert torch.allclose(compiled(x), model(x), rtol=1e-5, atol=1e-6)
    assert lipschitz_upper_bound(model) <= 1.0


@pytest.mark.parametrize("make", [lambda: GradientStepResidual(5, 7), lambda: NormConstrainedLinear(5, 7)])
def test_meta_construction_then_to_empty_and_reset(make) -> None:  # type: ignore[no-untyped-def]
    with torch.device("meta"):
        layer = make()
    assert layer.power_vector.is_meta
    layer.to_empty(device="cpu")
    torch.manual_seed(0)
    layer.reset_parameters()
    reference = make()
    torch.manual_seed(0)
    reference.reset_parameters()
    x = torch.randn(3, 5)
    layer.eval()
    reference.eval()
    with torch.no_grad():
        assert torch.equal(layer(x), reference(x))
    assert layer.lipschitz_bound() <= 1.0
