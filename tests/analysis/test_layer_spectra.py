"""``layer_spectra``: several bounds of one network share one SVD per layer and stay the same numbers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from structnets.analysis import (
    layer_spectra,
    pac_bayes_bound,
    parameter_count_bound,
    rank_sparse_bound,
    rank_sparse_bounds,
    spectral_bound,
)

COMMON: dict[str, Any] = {"n": 5000, "margin": 0.8, "input_norm": 6.0, "empirical_risk": 0.04, "delta": 0.05}


def _chain(seed: int) -> list[torch.Tensor]:
    """A float32 chain 12 → 20 → 20 → 3 with one exactly rank-2 layer (the tolerance path)."""
    g = torch.Generator().manual_seed(seed)
    low = torch.randn(20, 2, generator=g) @ torch.randn(2, 20, generator=g)
    return [torch.randn(20, 12, generator=g), low, torch.randn(3, 20, generator=g)]


CALLS: dict[str, Callable[..., Any]] = {
    "parameter_count": lambda m, **k: parameter_count_bound(m, data_norm=300.0, **COMMON, **k),
    "parameter_count_equal": lambda m, **k: parameter_count_bound(m, allocation="equal", **COMMON, **k),
    "parameter_count_factors": lambda m, **k: parameter_count_bound(m, factor_ranks=[None, 2, None], **COMMON, **k),
    "rank_sparse": lambda m, **k: rank_sparse_bound(m, p=0.5, data_norm=300.0, **COMMON, **k),
    "rank_sparse_grid": lambda m, **k: rank_sparse_bounds(m, ps=[0.0, 0.25, 1.0, 2.0], **COMMON, **k),
    "rank_sparse_truncate": lambda m, **k: rank_sparse_bounds(
        m, ps=[0.0, 1.0], tail_covering="truncate", **COMMON, **k
    ),
    "spectral": lambda m, **k: spectral_bound(m, data_norm=300.0, **COMMON, **k),
    "pac_bayes": lambda m, **k: pac_bayes_bound(m, **COMMON, **k),
}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_shared_spectra_give_the_same_bound(name: str, seed: int) -> None:
    matrices = _chain(seed)
    spectra = layer_spectra(matrices)
    assert [s.dtype for s in spectra] == [torch.float64] * 3
    assert [tuple(s.shape) for s in spectra] == [(12,), (20,), (3,)]
    assert CALLS[name](matrices, spectra=spectra) == CALLS[name](matrices)  # every field, exactly


def test_spectra_are_the_float64_singular_values() -> None:
    matrices = _chain(2)
    for matrix, sigma in zip(matrices, layer_spectra(matrices), strict=True):
        torch.testing.assert_close(sigma, torch.linalg.svdvals(matrix.double()), rtol=0, atol=0)
        assert float(sigma[0]) == float(torch.linalg.matrix_norm(matrix.double(), ord=2))


def _bad(index: int, value: Any) -> list[Any]:
    spectra: list[Any] = list(layer_spectra(_chain(0)))
    spectra[index] = value
    return spectra


@pytest.mark.parametrize(
    "spectra, message",
    [
        (torch.ones(3, dtype=torch.float64), "sequence of 3"),
        (lambda: list(layer_spectra(_chain(0)))[:2], "sequence of 3"),
        (lambda: _bad(0, layer_spectra(_chain(0))[0].float()), "spectra\\[0\\]` must be a float64"),
        (
            lambda: _bad(1, torch.ones(19, dtype=torch.float64)),
            "spectra\\[1\\]` must be a float64 tensor of shape \\(20,\\)",
        ),
        (lambda: _bad(2, torch.tensor([3.0, -1.0, 0.0], dtype=torch.float64)), "non-negative"),
        (lambda: _bad(2, torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)), "non-increasing"),
        (lambda: _bad(2, torch.tensor([float("nan"), 1.0, 0.5], dtype=torch.float64)), "finite"),
        (lambda: _bad(0, layer_spectra(_chain(1))[0]), "are not the singular values of `matrices\\[0\\]`"),
    ],
)
def test_bad_spectra_are_named(spectra: Any, message: str) -> None:
    value = spectra() if callable(spectra) else spectra
    for call in (CALLS["parameter_count"], CALLS["spectral"], CALLS["pac_bayes"], CALLS["rank_sparse_grid"]):
        with pytest.raises(ValueError, match=message):
            call(_chain(0), spectra=value)


@pytest.mark.parametrize("name", ["parameter_count", "rank_sparse", "spectral", "pac_bayes"])
def test_given_spectra_are_the_ones_used(name: str) -> None:
    """A spectrum with a larger σ₁ and the same energy passes the checks and changes ‖A‖_2, so the bound moves."""
    matrices = _chain(0)
    spectra = layer_spectra(matrices)
    moved = []
    for s in spectra:
        s = s.clone()
        s[0] *= 1.01  # σ₁ up, the rest scaled down to keep Σσ² (and the order)
        s[1:] *= ((spectra[len(moved)].square().sum() - s[0] ** 2) / s[1:].square().sum()).sqrt()
        moved.append(s)
    assert CALLS[name](matrices, spectra=moved) != CALLS[name](matrices)


def test_a_too_small_spectral_norm_is_refused() -> None:
    """A flat spectrum of the same energy has σ₁ below a column norm: it would make the bounds optimistic."""
    matrices = _chain(0)
    flat = [torch.full_like(s, float(s.square().mean().sqrt())) for s in layer_spectra(matrices)]
    for call in (CALLS["parameter_count"], CALLS["spectral"], CALLS["pac_bayes"]):
        with pytest.raises(ValueError, match="below the largest row or column norm"):
            call(matrices, spectra=flat)
