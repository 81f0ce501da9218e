"""OrthogonalLinear: the applied matrix is the polar factor, certified ‖A‖₂ ≤ 1 on its stored values
in every dtype, 1-Lipschitz after adversarial training, checkpoints checked."""

from __future__ import annotations

import pytest
import torch

from structnets.nn import OrthogonalLinear
from structnets.nn.orthogonal_linear import certified_orthogonal, polar_factor

from .helpers import measured_lipschitz, train_for_steepness

F64 = torch.float64


@pytest.mark.parametrize("shape", [(6, 11), (11, 6), (7, 7), (1, 9), (10, 100)], ids=str)
def test_polar_factor_is_u_vt_of_the_svd(shape: tuple[int, int]) -> None:
    generator = torch.Generator().manual_seed(0)
    v = torch.randn(*shape, generator=generator, dtype=F64)
    u, _, vt = torch.linalg.svd(v, full_matrices=False)
    torch.testing.assert_close(polar_factor(v), u @ vt, rtol=0, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_certificate_holds_on_stored_values_in_every_dtype(dtype: torch.dtype) -> None:
    # strict: float64 SVD of the stored A (exact to ~1e-15) ≤ certificate ≤ 1, over many random V,
    # including badly scaled and ill-conditioned ones.
    generator = torch.Generator().manual_seed(1)
    worst = 0.0
    for trial in range(60):
        m, n = (int(s) for s in torch.randint(1, 24, (2,), generator=generator))
        v = torch.randn(m, n, generator=generator, dtype=F64) * 10.0 ** float(
            torch.randint(-3, 4, (), generator=generator)
        )
        if trial % 3 == 0 and min(m, n) > 1:  # ill-conditioned: one tiny singular value
            u, s, vt = torch.linalg.svd(v, full_matrices=False)
            s[-1] = s[0] * 1e-9
            v = (u * s) @ vt
        layer = OrthogonalLinear(n, m, dtype=dtype)
        with torch.no_grad():
            layer.raw_weight.copy_(v.to(dtype))
        stored = layer.to_dense().detach()
        assert stored.dtype == dtype
        norm = float(torch.linalg.matrix_norm(stored.to(F64), ord=2))
        certificate = layer.lipschitz_bound()
        assert norm <= certificate <= 1.0
        worst = max(worst, norm)
    assert worst > {torch.float64: 0.999998, torch.float32: 0.999995}.get(dtype, 0.9)  # orthogonal, not shrunk


def test_every_singular_value_is_one_up_to_the_rounding_margin() -> None:
    torch.manual_seed(0)
    layer = OrthogonalLinear(784, 100, dtype=F64)
    s = torch.linalg.svdvals(layer.to_dense().detach())
    assert float(s.max()) <= 1.0 and float(s.min()) >= 1.0 - 1.1e-6
    # the norm-constrained lift of the same V pins only the top singular value
    v = layer.raw_weight.detach()
    shrunk = torch.linalg.svdvals(v / torch.linalg.matrix_norm(v, 2))
    assert float(shrunk.min()) < 0.6


def test_gradient_matches_the_svd_derivative_of_u_vt() -> None:
    generator = torch.Generator().manual_seed(2)
    v = torch.randn(4, 7, generator=generator, dtype=F64, requires_grad=True)
    g = torch.randn(4, 7, generator=generator, dtype=F64)
    (ours,) = torch.autograd.grad((certified_orthogonal(v) * g).sum(), v)

    def reference(w: torch.Tensor) -> torch.Tensor:
        u, _, vt = torch.linalg.svd(w, full_matrices=False)
        return u @ vt

    (want,) = torch.autograd.grad((reference(v) * g).sum(), v)
    scale = float(certified_orthogonal(v.detach())[0, 0] / reference(v.detach())[0, 0])
    torch.testing.assert_close(ours, scale * want, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("dtype", [torch.float32, F64], ids=str)
def test_one_lipschitz_after_steepness_training_and_tampering(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        OrthogonalLinear(5, 8, dtype=dtype), torch.nn.ReLU(), OrthogonalLinear(8, 3, dtype=dtype)
    )
    train_for_steepness(model, 5, steps=30, lr=0.05)
    assert measured_lipschitz(model, 5) <= 1 + 1e-5
    with torch.no_grad():
        model[0].raw_weight.data.mul_(1e3)  # a .data edit: A is recomputed from V at every call
    assert model[0].lipschitz_bound() <= 1.0
    assert measured_lipschitz(model, 5) <= 1 + 1e-5


def test_non_finite_checkpoint_is_rejected_by_name() -> None:
    layer = OrthogonalLinear(3, 2)
    state = layer.state_dict()
    state["raw_weight"][0, 0] = float("nan")
    with pytest.raises(ValueError, match="raw_weight"):
        layer.load_state_dict(state)


def test_non_finite_weight_has_no_certificate() -> None:
    from structnets.analysis import lipschitz_upper_bound

    layer = OrthogonalLinear(3, 2)
    with torch.no_grad():
        layer.raw_weight[0, 0] = float("inf")
    with pytest.raises(ValueError, match="raw_weight"):
        layer.lipschitz_bound()
    with pytest.raises(ValueError, match="OrthogonalLinear"):
        lipschitz_upper_bound(torch.nn.Sequential(layer))


def test_export_is_identical() -> None:
    torch.manual_seed(0)
    layer = OrthogonalLinear(6, 4)
    x = torch.randn(9, 6)
    torch.testing.assert_close(layer.export()(x), layer(x), rtol=0, atol=0)
