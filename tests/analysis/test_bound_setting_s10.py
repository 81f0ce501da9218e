"""The checks of a given ``spectra`` at extreme scales, and NumPy exponents (session 10).

``_bound_setting._spectra`` compared Σσ² with ‖A‖_F² and σ₁ with the largest row/column norm on the
unscaled values: for layers near 1e-200 every square underflowed to 0, so any spectrum passed,
all zeros too, and the rank-sparse bound came out optimistic (8e-12 where the true spectrum gives
0.463); near 1e200 the squares overflowed and the true ``layer_spectra`` was refused.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from structnets.analysis import layer_spectra, rank_sparse_bound

COMMON = {"n": 5000, "margin": 0.8, "input_norm": 6.0, "empirical_risk": 0.04, "delta": 0.05, "data_norm": 300.0}


def _chain(scale: float) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    layers = [
        torch.randn(20, 12, generator=g, dtype=torch.float64),
        torch.randn(3, 20, generator=g, dtype=torch.float64),
    ]
    return [layers[0] * scale, layers[1]]


@pytest.mark.parametrize("scale", [1e-200, 1e200])
def test_a_wrong_spectrum_is_refused_and_the_true_one_taken_at_any_scale(scale: float) -> None:
    matrices = _chain(scale)
    spectra = layer_spectra(matrices)
    common = {**COMMON, "margin": 0.8 * scale if scale > 1 else 0.8}
    assert rank_sparse_bound(matrices, p=0.5, spectra=spectra, **common) == rank_sparse_bound(matrices, p=0.5, **common)
    for wrong in (
        torch.zeros_like(spectra[0]),
        spectra[0] * 0.5,
        spectra[0].flip(0).sort(descending=True).values * 0.9,
    ):
        with pytest.raises(ValueError, match=r"spectra\[0\]"):
            rank_sparse_bound(matrices, p=0.5, spectra=[wrong, spectra[1]], **common)


def test_a_zero_layer_takes_only_the_zero_spectrum() -> None:
    matrices = [torch.zeros(4, 3, dtype=torch.float64), torch.eye(2, 4, dtype=torch.float64)]
    spectra = layer_spectra(matrices)
    assert not bool(spectra[0].any())
    with pytest.raises(ValueError, match=r"spectra\[0\].*zero"):
        rank_sparse_bound(
            matrices, p=0.5, spectra=[torch.full((3,), 1e-300, dtype=torch.float64), spectra[1]], **COMMON
        )


@pytest.mark.parametrize("p", [np.float32(0.5), np.float64(0.5), np.int64(1)])
def test_numpy_exponents_are_real_numbers(p: object) -> None:
    matrices = _chain(1.0)
    assert rank_sparse_bound(matrices, p=p, **COMMON) == rank_sparse_bound(matrices, p=float(p), **COMMON)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="`p`"):
        rank_sparse_bound(matrices, p=np.bool_(True), **COMMON)  # type: ignore[arg-type]
