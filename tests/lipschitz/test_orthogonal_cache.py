"""The forward's polar factor is reused where no gradient can reach it, and only while V's content is unchanged."""

from __future__ import annotations

import copy
import pickle

import pytest
import torch

from structnets.nn import InvertibleDownsample, OrthogonalLinear
from structnets.nn import orthogonal_linear as orthogonal_module


@pytest.fixture
def polar_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    original = orthogonal_module.certified_orthogonal

    def counted(weight: torch.Tensor) -> torch.Tensor:
        calls[0] += 1
        return original(weight)

    monkeypatch.setattr(orthogonal_module, "certified_orthogonal", counted)
    return calls


def _layers() -> list[tuple[torch.nn.Module, torch.Tensor]]:
    torch.manual_seed(0)
    return [
        (OrthogonalLinear(12, 7), torch.randn(5, 12)),
        (InvertibleDownsample(3, 8, factor=2, kind="orthogonal"), torch.randn(2, 3, 4, 4)),
    ]


def test_no_grad_forwards_compute_the_polar_factor_once_per_content(polar_calls: list[int]) -> None:
    for layer, x in _layers():
        layer.eval()
        polar_calls[0] = 0
        with torch.no_grad():
            first = layer(x)
            second = layer(x)
        assert polar_calls[0] == 1 and torch.equal(first, second)
        # an edit of V's content, by every route that bypasses version counters: recomputed
        for edit in ("data", "load_state_dict", "optimizer"):
            if edit == "data":
                layer.raw_weight.data.mul_(1.5)
            elif edit == "load_state_dict":
                layer.load_state_dict({k: v * 0.5 if k == "raw_weight" else v for k, v in layer.state_dict().items()})
            else:
                layer.raw_weight.grad = torch.ones_like(layer.raw_weight)
                torch.optim.SGD([layer.raw_weight], lr=0.1).step()
            before = polar_calls[0]
            with torch.no_grad():
                out = layer(x)
            assert polar_calls[0] == before + 1, edit
            fresh = copy.deepcopy(layer)
            fresh.__dict__.pop("_orthogonal_cache", None)
            with torch.no_grad():
                assert torch.equal(out, fresh(x)), edit  # the recomputed factor, not a stale one


def test_with_gradients_on_the_factor_is_computed_every_call_and_differentiated(polar_calls: list[int]) -> None:
    for layer, x in _layers():
        polar_calls[0] = 0
        layer(x).sum().backward()
        layer(x).sum().backward()
        assert polar_calls[0] == 2
        assert layer.raw_weight.grad is not None and layer.raw_weight.grad.abs().sum() > 0
        # a frozen V with gradients on (an attack on the input): reused, and the input still gets its gradient
        layer.raw_weight.requires_grad_(False)
        polar_calls[0] = 0
        probe = x.clone().requires_grad_(True)
        layer(probe).sum().backward()
        layer(probe).sum().backward()
        assert polar_calls[0] == 1 and probe.grad is not None and probe.grad.abs().sum() > 0


def test_the_public_matrix_is_never_the_cached_one() -> None:
    """A user editing ``to_dense()`` / ``matrix()`` in place cannot change what the forward applies."""
    for layer, x in _layers():
        with torch.no_grad():
            reference = layer(x)
            dense = layer.to_dense() if isinstance(layer, OrthogonalLinear) else layer.matrix()
            dense.mul_(10.0)
            assert torch.equal(layer(x), reference)


def test_a_layer_pickled_without_the_cache_still_runs() -> None:
    for layer, x in _layers():
        with torch.no_grad():
            reference = layer(x)
        layer.__dict__.pop("_orthogonal_cache", None)  # as a module saved before the cache existed
        restored = pickle.loads(pickle.dumps(layer))
        with torch.no_grad():
            assert torch.equal(restored(x), reference)


def test_gradients_flow_through_the_factor_under_vmap() -> None:
    """Under ``torch.func.vmap`` a batched weight reports no ``requires_grad``, yet its gradient is wanted: the
    factor is computed in the graph there, never taken from the cache (each stacked copy gets its own gradient)."""
    for layer, x in _layers():
        stacked = {
            k: torch.stack([v.detach(), 0.5 * v.detach()]).requires_grad_(True) for k, v in layer.named_parameters()
        }

        def run(p: dict[str, torch.Tensor], layer: torch.nn.Module = layer, x: torch.Tensor = x) -> torch.Tensor:
            return torch.func.functional_call(layer, p, (x,))

        out = torch.func.vmap(run)(stacked)
        (grad,) = torch.autograd.grad(out.square().sum(), stacked["raw_weight"])
        for copy_index in range(2):
            single = {k: v[copy_index].detach().requires_grad_(True) for k, v in stacked.items()}
            (expected,) = torch.autograd.grad(run(single).square().sum(), single["raw_weight"])
            assert torch.allclose(grad[copy_index], expected, rtol=1e-4, atol=1e-5) and expected.abs().sum() > 0
