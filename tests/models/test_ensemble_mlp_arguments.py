"""``EnsembleMLP`` refuses every bad argument before drawing anything, naming it (the six cases the bad-input
suite once parked as expected failures), and a valid call draws the same parameters as before the checks."""

from __future__ import annotations

import math

import pytest
import torch

from structnets.models.ensemble_mlp import EnsembleMLP


def _make(**changes: object) -> EnsembleMLP:
    kwargs: dict[str, object] = {
        "activations": ["tanh", "relu"],
        "d": 2,
        "width": 3,
        "depth": 3,
        "generator": torch.Generator().manual_seed(0),
    }
    kwargs.update(changes)
    return EnsembleMLP(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "error", "match"),
    [
        ({"activations": None}, TypeError, r"`activations` must be a list of names"),
        ({"activations": "tanh"}, TypeError, r"`activations` must be a list of names"),
        ({"activations": []}, ValueError, r"`activations` must hold at least one name"),
        ({"activations": ["tanh", 3]}, ValueError, r"`activations\[1\]` must be one of"),
        ({"d": 10**30}, ValueError, r"`d`=10{30}.*more than this machine's memory"),
        ({"width": 2**63}, ValueError, r"`width`=9223372036854775808.*memory"),
        ({"depth": 10**12}, ValueError, r"`depth` must be an int in \[2, 100000\]"),
        ({"dtype": torch.int64}, TypeError, r"`dtype` must be a real floating-point torch.dtype"),
        ({"dtype": "float64"}, TypeError, r"`dtype` must be a real floating-point torch.dtype"),
        ({"generator": None}, TypeError, r"`generator` must be a torch.Generator, got None"),
        ({"generator": 0}, TypeError, r"`generator` must be a torch.Generator"),
    ],
)
def test_a_bad_argument_is_refused_naming_it(changes: dict[str, object], error: type, match: str) -> None:
    generator = torch.Generator().manual_seed(0)
    state = generator.get_state()
    with pytest.raises(error, match=match):
        _make(**{"generator": generator, **changes})
    assert torch.equal(generator.get_state(), state)  # refused before anything was drawn


def test_a_valid_call_draws_u_of_plus_minus_one_over_root_fan_in_in_the_documented_layout() -> None:
    """x holds, per member and layer, W (fan_in × fan_out, row-major) then b, each U(±1/√fan_in), the first layer
    U(±input_scale/√d); a tuple of names works as a list does."""
    net = _make(activations=("tanh", "relu"), input_scale=2.0)
    generator = torch.Generator().manual_seed(0)
    expected = []
    for layer, (fan_in, fan_out) in enumerate([(2, 3), (3, 3), (3, 1)]):
        bound = (2.0 if layer == 0 else 1.0) / math.sqrt(fan_in)
        w = (torch.rand(2, fan_in, fan_out, generator=generator, dtype=torch.float64) * 2 - 1) * bound
        b = (torch.rand(2, 1, fan_out, generator=generator, dtype=torch.float64) * 2 - 1) * bound
        expected += [w.reshape(2, -1), b.reshape(2, -1)]
    assert net.P == 2 * 3 + 3 + 3 * 3 + 3 + 3 + 1
    assert torch.equal(net.x, torch.cat(expected, dim=1)[net.order])
