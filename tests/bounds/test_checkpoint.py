"""Checkpoint loading is weights-only and the spectrum table reads the true spectra."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from torch import nn

from structnets.analysis import format_spectrum_table, load_state_dict, spectrum_table
from structnets.models import mlp


class _Payload:
    """An arbitrary object: weights_only loading must refuse to unpickle it."""


def test_table_from_file_equals_table_from_module(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = mlp(6, 3, width=9, depth=3, bottleneck=3)
    path = tmp_path / "model.pt"
    torch.save(model.state_dict(), path)
    from_module = spectrum_table(model)
    from_file = spectrum_table(path)
    assert [row.name for row in from_module] == ["0", "2", "4", "6"]
    assert [row.name for row in from_file] == ["0", "2", "4", "6"]
    for a, b in zip(from_module, from_file):
        assert (a.rows, a.cols, a.rank) == (b.rows, b.cols, b.rank)
        assert a.spectral_norm == pytest.approx(b.spectral_norm, rel=1e-6)
        assert a.schatten[0.5] == pytest.approx(b.schatten[0.5], rel=1e-6)
    assert from_file[1].rank == 3  # the LowRankLinear U V has rank 3
    # a training checkpoint {"state_dict": ...} is accepted too
    torch.save({"state_dict": model.state_dict(), "epoch": 3}, tmp_path / "ckpt.pt")
    assert len(load_state_dict(tmp_path / "ckpt.pt")) == len(model.state_dict())


def test_table_values_of_a_known_matrix() -> None:
    layer = nn.Linear(3, 2, bias=False, dtype=torch.float64)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[3.0, 0.0, 0.0], [0.0, 4.0, 0.0]]))
    (row,) = spectrum_table({"layer.weight": layer.weight}, ps=(0.5, 1.0))
    assert (row.name, row.rows, row.cols, row.rank) == ("layer", 2, 3, 2)
    assert row.spectral_norm == pytest.approx(4.0)
    assert row.frobenius_norm == pytest.approx(5.0)
    assert row.nuclear_norm == pytest.approx(7.0)
    assert row.schatten[0.5] == pytest.approx(2.0 + math.sqrt(3.0))
    assert row.stable_rank == pytest.approx(25 / 16)
    assert row.top_singular_values == pytest.approx((4.0, 3.0))
    assert row.row()["schatten_p=0.5"] == pytest.approx(2.0 + math.sqrt(3.0))
    text = format_spectrum_table([row])
    assert "| layer | 2×3 | 4 | 5 | 7 |" in text


def test_not_a_state_dict_is_refused(tmp_path: Path) -> None:
    torch.save([1, 2, 3], tmp_path / "list.pt")
    with pytest.raises(ValueError, match="not a state dict"):
        load_state_dict(tmp_path / "list.pt")
    torch.save({"a": 1}, tmp_path / "ints.pt")
    with pytest.raises(ValueError, match="not a state dict"):
        load_state_dict(tmp_path / "ints.pt")
    torch.save({"obj": _Payload()}, tmp_path / "object.pt")
    with pytest.raises(ValueError, match="weights_only=True"):
        load_state_dict(tmp_path / "object.pt")
    (tmp_path / "garbage.pt").write_bytes(b"not a pickle")
    with pytest.raises(ValueError, match="cannot be loaded"):
        load_state_dict(tmp_path / "garbage.pt")
    with pytest.raises(FileNotFoundError):
        load_state_dict(tmp_path / "missing.pt")
    torch.save({"bias": torch.ones(3)}, tmp_path / "nomatrix.pt")
    with pytest.raises(ValueError, match="no layer matrices"):
        spectrum_table(tmp_path / "nomatrix.pt")
    with pytest.raises(ValueError, match="finite"):
        spectrum_table({"w.weight": torch.tensor([[float("nan"), 1.0]])})
