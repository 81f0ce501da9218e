"""structnets.export: any module, recursively, to plain torch layers with the same outputs."""

from __future__ import annotations

import io

import pytest
import torch
from torch import nn

from structnets import export
from structnets.models import lipschitz_resnet, mlp
from structnets.nn import (
    DLoRLinear,
    GradientStepResidual,
    LowRankLinear,
    MaxMin,
    NormConstrainedLinear,
    RankOneLinear,
    Swish,
)
from structnets.nn.gradient_step_residual import ResidualExport

F64 = torch.float64


class Mixed(nn.Module):
    """A user-defined module holding every kind of structnets layer, nested in containers."""

    def __init__(self, bound: str = "exact") -> None:
        super().__init__()
        self.lift = NormConstrainedLinear(6, 8, bound=bound)
        self.body = nn.Sequential(
            GradientStepResidual(8, 5, bound=bound), MaxMin(8), DLoRLinear(8, 2, alpha=0.7), Swish()
        )
        self.branches = nn.ModuleDict({"low": LowRankLinear(8, 8, 3), "one": RankOneLinear(8, 8)})
        self.tail = nn.ModuleList([Swish(beta=2.0), nn.Linear(8, 3)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.body(self.lift(x))
        h = self.branches["low"](h) + self.branches["one"](h)
        for layer in self.tail:
            h = layer(h)
        return h


def _plain(module: nn.Module) -> bool:
    """A torch.nn module, the residual wrapper export builds, or a user-defined container."""
    origin = type(module).__module__
    return origin.startswith("torch.nn") or type(module) in (ResidualExport, Mixed, Swish)


@pytest.mark.parametrize("bound", ["exact", "power"])
def test_every_structnets_layer_exports_and_outputs_are_unchanged(bound: str) -> None:
    torch.manual_seed(0)
    model = Mixed(bound).to(F64)
    x = torch.randn(9, 6, dtype=F64)
    model.train()
    model(x)  # one training pass: the power estimates move; the export uses the eval-mode maps
    model.eval()
    before = model(x)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    plain = export(model)
    assert all(_plain(m) for m in plain.modules()), [type(m) for m in plain.modules() if not _plain(m)]
    assert type(plain.lift) is nn.Linear and type(plain.body[2]) is nn.Linear
    assert type(plain.branches["one"]) is nn.Linear
    low = plain.branches["low"]  # the factorisation is kept: Linear(8, 3, bias=False) → Linear(3, 8)
    assert type(low) is nn.Sequential and [type(m) for m in low] == [nn.Linear, nn.Linear]
    assert (low[0].in_features, low[0].out_features, low[0].bias, low[1].out_features) == (8, 3, None, 8)
    assert isinstance(plain.body[0], ResidualExport) and isinstance(plain.body[1], ResidualExport)
    assert type(plain.body[3]) is nn.SiLU  # Swish with β = 1 is SiLU
    assert type(plain.tail[0]) is Swish  # β = 2 has no torch module: kept, it has no structure
    assert plain.body[1].body[0].weight.dtype == F64  # MaxMin gets the model's dtype
    torch.testing.assert_close(plain(x), before, rtol=1e-12, atol=1e-12)
    # The input model is not changed, not even its power vectors.
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())
    assert type(model.lift) is NormConstrainedLinear


def test_export_keeps_train_flags_and_shared_modules() -> None:
    torch.manual_seed(1)
    shared = LowRankLinear(5, 5, 2)
    model = nn.Sequential(shared, nn.Tanh(), shared, nn.Dropout(0.1))
    model.train()
    model[3].eval()
    plain = export(model)
    assert plain[0] is plain[2] and type(plain[0]) is nn.Sequential
    assert type(export(model, densify=True)[0]) is nn.Linear
    assert plain.training and plain[0].training and not plain[3].training
    assert isinstance(model[0], LowRankLinear) and model[0] is model[2]  # the original is intact


def test_a_structnets_layer_as_the_model_returns_its_export() -> None:
    layer = DLoRLinear(4, 1, dtype=F64)
    plain = export(layer)
    assert type(plain) is nn.Linear
    x = torch.randn(3, 4, dtype=F64)
    torch.testing.assert_close(plain(x), layer(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("variant", ["gradient-step", "fixed-width", "unconstrained"])
def test_lipschitz_resnet_exports_like_export_model(variant: str) -> None:
    from structnets.models import export_model

    torch.manual_seed(2)
    model = lipschitz_resnet(4, 2, width=6, depth=2, variant=variant, dtype=F64).eval()
    x = torch.randn(8, 4, dtype=F64)
    plain = export(model)
    assert not any(isinstance(m, (GradientStepResidual, NormConstrainedLinear)) for m in plain.modules())
    torch.testing.assert_close(plain(x), model(x), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(plain(x), export_model(model)(x), rtol=1e-12, atol=1e-12)


def test_low_rank_mlp_exports_to_linear_layers_only() -> None:
    torch.manual_seed(3)
    model = mlp(5, 2, width=12, depth=3, bottleneck=4, dtype=F64)
    plain = export(model)
    assert not any(isinstance(m, (LowRankLinear, Swish)) for m in plain.modules())
    x = torch.randn(6, 5, dtype=F64)
    torch.testing.assert_close(plain(x), model(x), rtol=1e-12, atol=1e-12)


def test_exported_state_dict_round_trips_with_weights_only_load() -> None:
    torch.manual_seed(4)
    first = export(Mixed().to(F64).eval())
    buffer = io.BytesIO()
    torch.save(first.state_dict(), buffer)
    buffer.seek(0)
    torch.manual_seed(5)
    second = export(Mixed().to(F64).eval())
    x = torch.randn(4, 6, dtype=F64)
    assert not torch.equal(second(x), first(x))
    second.load_state_dict(torch.load(buffer, weights_only=True))
    assert torch.equal(second(x), first(x))


def test_export_rejects_a_non_module() -> None:
    with pytest.raises(TypeError, match="`model` must be a torch.nn.Module, got Tensor"):
        export(torch.zeros(2))  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["deep", "summed", "parallel"])
def test_dlor_networks_export_with_the_same_outputs(mode: str) -> None:
    from structnets.models import dlor_mlp
    from structnets.nn import DLoRBranches

    torch.manual_seed(6)
    branches = {} if mode == "deep" else {"mode": mode, "branches": 3}
    model = dlor_mlp(3, 2, width=8, depth=3, rank=2, dtype=F64, **branches)
    plain = export(model)
    assert not any(isinstance(m, (DLoRLinear, DLoRBranches, Swish)) for m in plain.modules())
    x = torch.randn(5, 3, dtype=F64)
    torch.testing.assert_close(plain(x), model(x), rtol=1e-12, atol=1e-12)
