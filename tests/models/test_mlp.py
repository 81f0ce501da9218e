"""mlp(): dense and low-rank (bottleneck) Swish MLPs (Li et al., ICML 2025, Sec. 3)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from structnets.models import bottleneck_width, mlp
from structnets.nn import ACTIVATIONS, LowRankLinear, Swish

F64 = torch.float64


def _split(model: nn.Sequential) -> tuple[list[nn.Module], list[nn.Module]]:
    maps = [m for m in model if isinstance(m, (nn.Linear, LowRankLinear))]
    acts = [m for m in model if not isinstance(m, (nn.Linear, LowRankLinear))]
    return maps, acts


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_dense_structure(depth: int) -> None:
    model = mlp(5, 3, 12, depth)
    assert isinstance(model, nn.Sequential)
    assert len(model) == 2 * depth + 1
    maps, acts = _split(model)
    assert len(acts) == depth and all(isinstance(a, Swish) for a in acts)
    assert all(type(m) is nn.Linear for m in maps)
    assert [(m.in_features, m.out_features) for m in maps] == [(5, 12)] + [(12, 12)] * (depth - 1) + [(12, 3)]
    # Alternating: map, σ, map, σ, ..., map.
    assert all(isinstance(model[i], nn.Linear) for i in range(0, len(model), 2))


@pytest.mark.parametrize(
    "width, bottleneck, rank",
    [(12, 4, 4), (12, 1 / 3, 4), (30, 10, 10), (30, 1 / 3, 10), (7, 0.5, 4), (10, 0.01, 1), (9, 9, 9), (9, 1.0, 9)],
)
def test_bottleneck_structure(width: int, bottleneck: int | float, rank: int) -> None:
    depth = 4
    model = mlp(6, 2, width, depth, bottleneck=bottleneck)
    maps, acts = _split(model)
    assert len(acts) == depth
    first, *hidden, last = maps
    assert type(first) is nn.Linear and (first.in_features, first.out_features) == (6, width)
    assert type(last) is nn.Linear and (last.in_features, last.out_features) == (width, 2)
    assert len(hidden) == depth - 1
    for block in hidden:
        assert isinstance(block, LowRankLinear)
        assert (block.in_features, block.out_features, block.rank) == (width, width, rank)
        assert block.V.shape == (rank, width) and block.U.shape == (width, rank)
        assert block.bias is not None
    assert bottleneck_width(width, bottleneck) == rank


def _dense_count(d: int, k: int, w: int, depth: int) -> int:
    return (d * w + w) + (depth - 1) * (w * w + w) + (w * k + k)


def _low_rank_count(d: int, k: int, w: int, depth: int, h: int) -> int:
    # Each hidden block: V (H×w, no bias) + U (w×H) + bias (w).
    return (d * w + w) + (depth - 1) * (2 * h * w + w) + (w * k + k)


@pytest.mark.parametrize("d, k, w, depth, h", [(3, 1, 8, 1, 2), (5, 2, 12, 3, 4), (10, 4, 33, 5, 11)])
def test_parameter_counts(d: int, k: int, w: int, depth: int, h: int) -> None:
    def count(model: nn.Module) -> int:
        return sum(p.numel() for p in model.parameters())

    assert count(mlp(d, k, w, depth)) == _dense_count(d, k, w, depth)
    assert count(mlp(d, k, w, depth, bottleneck=h)) == _low_rank_count(d, k, w, depth, h)
    if depth > 1 and w == 3 * h:
        # The paper's H = width/3: each hidden block drops from w² + w to 2w²/3 + w parameters.
        saved = _dense_count(d, k, w, depth) - _low_rank_count(d, k, w, depth, h)
        assert 3 * saved == (depth - 1) * w * w


def test_forward_shape_dtype_and_equivalence_with_dense_conversion() -> None:
    torch.manual_seed(0)
    model = mlp(4, 3, 9, 3, bottleneck=3, dtype=F64)
    x = torch.randn(2, 5, 4, dtype=F64)
    out = model(x)
    assert out.shape == (2, 5, 3) and out.dtype == F64
    dense = nn.Sequential(*[m.to_linear() if isinstance(m, LowRankLinear) else m for m in model])
    torch.testing.assert_close(dense(x), out, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_names(name: str) -> None:
    model = mlp(3, 2, 6, 3, activation=name)
    _, acts = _split(model)
    assert len(acts) == 3
    assert len({id(a) for a in acts}) == 3  # a name builds fresh modules
    assert model(torch.randn(4, 3)).shape == (4, 2)


def test_activation_module_is_shared() -> None:
    swish = Swish(1.0, learnable=True)
    model = mlp(3, 2, 6, 3, activation=swish)
    _, acts = _split(model)
    assert all(a is swish for a in acts)
    assert sum(p.numel() for p in model.parameters()) == _dense_count(3, 2, 6, 3) + 1


@pytest.mark.parametrize(
    "kwargs, argument, error",
    [
        ({"width": 0}, "width", ValueError),
        ({"width": 8.0}, "width", TypeError),
        ({"depth": 0}, "depth", ValueError),
        ({"depth": True}, "depth", TypeError),
        ({"in_features": 0}, "in_features", ValueError),
        ({"out_features": -2}, "out_features", ValueError),
        ({"bottleneck": 0}, "bottleneck", ValueError),
        ({"bottleneck": 9}, "bottleneck", ValueError),  # > width
        ({"bottleneck": 1.5}, "bottleneck", ValueError),
        ({"bottleneck": 0.0}, "bottleneck", ValueError),
        ({"bottleneck": -0.2}, "bottleneck", ValueError),
        ({"bottleneck": True}, "bottleneck", TypeError),
        ({"bottleneck": "1/3"}, "bottleneck", TypeError),
        ({"activation": "swishh"}, "activation", ValueError),
    ],
)
def test_invalid_arguments_are_named(kwargs: dict, argument: str, error: type[Exception]) -> None:
    arguments = {"in_features": 3, "out_features": 2, "width": 8, "depth": 2, **kwargs}
    with pytest.raises(error, match=f"`{argument}`"):
        mlp(**arguments)


def test_unknown_activation_lists_valid_names() -> None:
    with pytest.raises(ValueError) as info:
        mlp(3, 2, 8, 2, activation="sinusoid")
    message = str(info.value)
    assert "'sinusoid'" in message
    for name in ACTIVATIONS:
        assert repr(name) in message
