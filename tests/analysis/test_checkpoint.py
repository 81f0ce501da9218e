"""Checkpoint loading is weights-only and the spectrum table reads the true spectra."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from torch import nn

from structnets.analysis import format_spectrum_table, load_state_dict, spectrum_table
from structnets.models import dlor_mlp, lipschitz_resnet, mlp
from structnets.nn import DLoRLinear, GradientStepResidual, NormConstrainedLinear, RankOneLinear


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
    assert "| layer | Linear | 2×3 | 4 | 5 | 7 |" in text


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


def _expected(model: nn.Module) -> list[tuple[str, str, torch.Tensor]]:
    """(name, kind, matrix) the layers themselves give, in eval mode, in float64."""
    from structnets.nn import DLoRBranches, DLoRParallel

    model.eval()
    rows: list[tuple[str, str, torch.Tensor]] = []
    with torch.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, DLoRParallel):
                continue  # its branches are listed one by one
            if isinstance(module, GradientStepResidual):
                rows.append((name, "GradientStepResidual W", module.weight.double()))
            elif isinstance(module, nn.Linear):
                rows.append((name, "Linear", module.weight.double()))
            elif isinstance(module, DLoRBranches):
                rows.append((name, f"DLoRBranches ({module.branches_count} summed)", module.to_dense().double()))
            elif hasattr(module, "to_dense") and not any(name.startswith(r[0] + ".") for r in rows if r[0]):
                rows.append((name, type(module).__name__, module.to_dense().double()))
    return rows


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda: dlor_mlp(3, 2, width=6, depth=2, rank=2, mode="deep"), id="dlor-deep"),
        pytest.param(lambda: dlor_mlp(3, 2, width=6, depth=2, rank=2, mode="summed", branches=3), id="dlor-summed"),
        pytest.param(lambda: dlor_mlp(3, 2, width=6, depth=2, rank=2, mode="parallel", branches=2), id="dlor-parallel"),
        pytest.param(lambda: lipschitz_resnet(4, 2, width=5, depth=2), id="gradient-step"),
        pytest.param(
            lambda: lipschitz_resnet(4, 2, width=5, depth=1, variant="fixed-width", lift="orthogonal"),
            id="fixed-width-orthogonal",
        ),
        pytest.param(lambda: nn.Sequential(RankOneLinear(4, 3), nn.ReLU(), nn.Linear(3, 2)), id="rank-one"),
        pytest.param(lambda: mlp(4, 2, width=6, depth=2, bottleneck=2), id="low-rank"),
    ],
)
def test_every_structured_layer_is_read_from_its_saved_state_dict(build, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = build()
    with torch.no_grad():  # leave the unit ball, so a norm-constrained layer must rescale
        for module in model.modules():
            if isinstance(module, NormConstrainedLinear):
                module.raw_weight.mul_(7.0)
    expected = _expected(model)
    path = tmp_path / "model.pt"
    torch.save(model.state_dict(), path)
    from_file = spectrum_table(path, ps=(1.0,))
    from_module = spectrum_table(model, ps=(1.0,))
    assert [(r.name, r.kind) for r in from_file] == [(name, kind) for name, kind, _ in expected]
    assert [(r.name, r.kind) for r in from_module] == [(r.name, r.kind) for r in from_file]
    for row, (name, _, matrix) in zip(from_file, expected):
        sigma = torch.linalg.svdvals(matrix)
        assert (row.rows, row.cols) == tuple(matrix.shape), name
        assert row.spectral_norm == pytest.approx(float(sigma[0]), rel=1e-5), name
        assert row.nuclear_norm == pytest.approx(float(sigma.sum()), rel=1e-5), name


def test_dlor_matrices_are_alpha_identity_plus_low_rank() -> None:
    torch.manual_seed(1)
    layer = DLoRLinear(5, 1, alpha=3.0, dtype=torch.float64)
    (row,) = spectrum_table(
        {"block.alpha": layer.alpha, "block.U": layer.U, "block.V": layer.V, "block.bias": layer.bias}
    )
    assert row.kind == "DLoRLinear" and (row.rows, row.cols) == (5, 5)
    dense = 3.0 * torch.eye(5, dtype=torch.float64) + layer.U.detach() @ layer.V.detach().T
    assert row.spectral_norm == pytest.approx(float(torch.linalg.matrix_norm(dense, 2)), rel=1e-12)
    # on the 3-dimensional complement of span(u, v), αI + u vᵀ acts as 3I: three singular values are |α|
    assert sum(abs(s - 3.0) < 1e-9 for s in row.top_singular_values) == 3


def test_norm_constrained_lift_and_head_are_rescaled_not_left_out() -> None:
    torch.manual_seed(2)
    model = lipschitz_resnet(6, 3, width=4, depth=1)
    with torch.no_grad():
        model[0].raw_weight.mul_(10.0)
    state = model.state_dict()
    raw_norm = float(torch.linalg.matrix_norm(state["0.raw_weight"].double(), 2))
    table = spectrum_table(state)
    assert [r.name for r in table] == ["0", "1", "2"]
    assert raw_norm > 2.0 and table[0].spectral_norm <= 1.0 + 1e-6
    assert table[0].spectral_norm == pytest.approx(1.0, abs=1e-4)  # V / B(V): the top σ becomes 1


def test_unknown_matrices_are_named_in_a_warning_and_frame_output() -> None:
    state = {"conv.weight": torch.ones(2, 1, 3, 3), "fc.weight": torch.eye(3), "odd.kernel": torch.ones(2, 2)}
    with pytest.warns(UserWarning, match=r"conv\.weight\(2, 1, 3, 3\).*odd\.kernel\(2, 2\)"):
        frame = spectrum_table(state, ps=(0.5,), as_frame=True)
    assert list(frame["name"]) == ["fc"] and list(frame["kind"]) == ["Linear"]
    assert frame.loc[0, "spectral_norm"] == pytest.approx(1.0)
    assert frame.loc[0, "schatten_p=0.5"] == pytest.approx(3.0)
    with pytest.raises(TypeError, match="as_frame"):
        spectrum_table(state, as_frame="yes")
    with pytest.raises(TypeError, match="Conv2d"):
        spectrum_table(nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(2, 1)))
