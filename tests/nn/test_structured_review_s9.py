"""Review (session 9) of the structured layers: float64 references for what the docstrings promise."""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.func import functional_call

from structnets.nn import Swish

F64 = torch.float64


def _reference(x: torch.Tensor, beta: float) -> torch.Tensor:
    return x * torch.sigmoid(beta * x)


def test_swish_state_dict_beta_is_used_by_a_default_swish() -> None:
    # Swish() (β = 1, fixed) took the fused SiLU path from its constructor argument and ignored its
    # own `beta` buffer: loading a trained learnable β (the same state_dict key) into a rebuilt
    # Swish() succeeded under strict=True and computed β = 1 (max error 0.20 at β = 2 on [-3, 3]).
    x = torch.linspace(-3, 3, 61, dtype=F64)
    trained = Swish(1.0, learnable=True, dtype=F64)
    with torch.no_grad():
        trained.beta.fill_(2.0)
    rebuilt = Swish(dtype=F64)
    rebuilt.load_state_dict(trained.state_dict())
    torch.testing.assert_close(rebuilt(x), _reference(x, 2.0), rtol=1e-15, atol=1e-15)
    # and back: a β = 1 state makes a β = 2 layer compute β = 1 (that path always read the buffer)
    other = Swish(2.0, dtype=F64)
    other.load_state_dict(Swish(dtype=F64).state_dict())
    torch.testing.assert_close(other(x), _reference(x, 1.0), rtol=1e-15, atol=1e-15)
    # ... and the reloaded β = 1 layer is SiLU again, bit for bit
    rebuilt.load_state_dict(Swish(dtype=F64).state_dict())
    assert torch.equal(rebuilt(x), nn.functional.silu(x))


def test_swish_buffer_changed_in_place_or_swapped_is_used() -> None:
    x = torch.linspace(-3, 3, 61, dtype=F64)
    swish = Swish(dtype=F64)
    with torch.no_grad():
        swish.beta.fill_(3.0)
    torch.testing.assert_close(swish(x), _reference(x, 3.0), rtol=1e-15, atol=1e-15)
    fresh = Swish(dtype=F64)
    got = functional_call(fresh, {"beta": torch.tensor(0.5, dtype=F64)}, (x,))
    torch.testing.assert_close(got, _reference(x, 0.5), rtol=1e-15, atol=1e-15)
    assert torch.equal(fresh(x), nn.functional.silu(x))


def test_swish_fast_path_survives_dtype_moves_and_copies() -> None:
    x = torch.linspace(-3, 3, 61, dtype=F64)
    for module in (Swish().to(F64), copy.deepcopy(Swish(dtype=F64)), Swish().double()):
        assert torch.equal(module(x), nn.functional.silu(x))
    moved = Swish(dtype=F64)
    moved.load_state_dict(Swish(2.0, dtype=F64).state_dict())
    moved = moved.float().double()
    torch.testing.assert_close(moved(x), _reference(x, 2.0), rtol=1e-15, atol=1e-15)


def test_swish_on_the_meta_device_then_materialised() -> None:
    x = torch.linspace(-3, 3, 61, dtype=F64)
    for beta in (1.0, 2.0):
        swish = Swish(beta, device="meta", dtype=F64).to_empty(device="cpu")
        swish.reset_parameters()
        torch.testing.assert_close(swish(x), _reference(x, beta), rtol=1e-15, atol=1e-15)


def test_batched_dlor_refuses_networks_whose_activations_differ() -> None:
    # BatchedDLoRNet ran every seed through model 0's activation: dlor_mlp(..., Swish(3.0)) batched
    # after one with Swish(1.0) was computed with β = 1 (error 0.17), though the docstring promises
    # what models[s] computes for every s; networks that cannot be batched must be refused.
    import pytest

    from structnets.models.batched_dlor import BatchedDLoRNet
    from structnets.models.dlor_mlp import dlor_mlp

    torch.manual_seed(0)
    same = [dlor_mlp(2, 1, 4, 2, 1, "deep", Swish(2.0), dtype=F64) for _ in range(2)]
    x = torch.randn(5, 2, dtype=F64)
    out = BatchedDLoRNet(same)(x)
    for s, model in enumerate(same):
        torch.testing.assert_close(out[s], model(x), rtol=1e-13, atol=1e-13)
    for mode, branches in (("deep", 1), ("parallel", 2)):
        first = dlor_mlp(2, 1, 4, 2, 1, mode, Swish(1.0, learnable=True), branches, dtype=F64)
        second = dlor_mlp(2, 1, 4, 2, 1, mode, Swish(1.0, learnable=True), branches, dtype=F64)
        with torch.no_grad():
            next(m for m in second.modules() if isinstance(m, Swish)).beta.fill_(3.0)
        with pytest.raises(ValueError, match="activation"):
            BatchedDLoRNet([first, second])


def test_forward_and_from_linear_refuse_bad_input_by_name() -> None:
    # RankOneLinear.forward had no check (RuntimeError 'size mismatch ... vec (3)' or a TypeError
    # about '@'), LowRankLinear.forward an AttributeError for a list; DLoRLinear.from_linear of a
    # NaN weight named `weight`, an argument it does not have. DESIGN: errors name the argument.
    import pytest

    from structnets.nn import DLoRLinear, LowRankLinear
    from structnets.nn.dlor_linear import RankOneLinear

    rank_one, low_rank = RankOneLinear(3, 4, dtype=F64), LowRankLinear(3, 4, 2, dtype=F64)
    for layer in (rank_one, low_rank):
        with pytest.raises(ValueError, match="`input`.*3"):
            layer(torch.randn(2, 5, dtype=F64))
        with pytest.raises(ValueError, match="`input`"):
            layer(torch.tensor(1.0, dtype=F64))
        with pytest.raises(TypeError, match="`input`.*list"):
            layer([1.0, 2.0, 3.0])
    x = torch.randn(2, 3, dtype=F64)
    torch.testing.assert_close(rank_one(x), x @ rank_one.to_dense().T + rank_one.bias, rtol=1e-14, atol=1e-14)
    linear = nn.Linear(4, 4)
    with torch.no_grad():
        linear.weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match="`linear`.*non-finite"):
        DLoRLinear.from_linear(linear, 2)


def test_dlor_linear_initialisation_matches_its_docstring() -> None:
    # The docstring said b is drawn "as LowRankLinear" (±1/√r); it is ±1/√N (nn.Linear(N, N)).
    from structnets.nn import DLoRLinear

    torch.manual_seed(0)
    layer = DLoRLinear(400, 5, dtype=F64).requires_grad_(False)
    for tensor, bound in ((layer.V, 400**-0.5), (layer.U, 5**-0.5), (layer.bias, 400**-0.5)):
        assert float(tensor.abs().max()) <= bound
        assert float(tensor.abs().max()) > 0.95 * bound  # 400·5 (or 400) draws reach the edge
    x = torch.randn(20000, 400, dtype=F64)
    low_rank = (x @ layer.V) @ layer.U.T
    # Var = Σ_k U_ik² Σ_j V_jk², about 1/9 on average over i
    want = float((layer.U.square() @ layer.V.square().sum(0)).mean())
    assert abs(float(low_rank.var(0).mean()) - want) < 0.05 * want
    assert abs(want - 1 / 9) < 0.05


def test_batched_dlor_refuses_activations_with_parameters() -> None:
    # A learnable activation became one parameter shared by all seeds (parameters_per_seed 39 for a
    # 40-parameter network) that to_models() did not write back: after a change of the batched β,
    # to_models()[0] differed from the batched seed 0 by 0.21.
    import pytest

    from structnets.models.batched_dlor import BatchedDLoRNet
    from structnets.models.dlor_mlp import dlor_mlp

    models = [dlor_mlp(2, 1, 4, 2, 1, "deep", Swish(1.0, learnable=True), dtype=F64) for _ in range(2)]
    with pytest.raises(ValueError, match="activation.*parameters"):
        BatchedDLoRNet(models)
    fixed = [dlor_mlp(2, 1, 4, 2, 1, "deep", "swish", dtype=F64) for _ in range(2)]
    batched = BatchedDLoRNet(fixed)
    assert batched.parameters_per_seed() == sum(p.numel() for p in fixed[0].parameters())
