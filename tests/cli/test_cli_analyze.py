"""`structnets analyze`: the spectrum table of a saved state dict, and clean errors."""

import pytest
import torch

from structnets.cli import main
from structnets.models import dlor_mlp, lipschitz_resnet, mlp


def test_analyze_prints_one_row_per_layer_with_exact_norms(tmp_path, capsys):
    model = mlp(5, 2, 8, 2)
    path = tmp_path / "model.pt"
    torch.save(model.state_dict(), path)
    assert main(["analyze", str(path), "--p", "1"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| layer")]
    assert [r.split("|")[1].strip() for r in rows] == ["0", "2", "4"]
    spectral = float(rows[0].split("|")[4])
    assert abs(spectral - torch.linalg.matrix_norm(model[0].weight.detach(), 2).item()) < 1e-3


def test_analyze_rejects_a_non_state_dict_without_traceback(tmp_path, capsys):
    path = tmp_path / "bad.pt"
    torch.save({"a": [1, 2]}, path)
    assert main(["analyze", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "state dict" in err and "Traceback" not in err


def test_data_verify_with_a_missing_folder_is_a_usage_error(tmp_path, capsys):
    assert main(["data", "verify", "--data-dir", str(tmp_path / "nowhere")]) == 2
    assert "data_dir" in capsys.readouterr().err


def _rows(out):
    return [line.split("|") for line in out.splitlines() if line.startswith("| ") and not line.startswith("| layer")]


def test_analyze_reads_a_dlor_state_dict(tmp_path, capsys):
    torch.manual_seed(0)
    model = dlor_mlp(3, 2, width=6, depth=2, rank=2, mode="parallel", branches=2)
    path = tmp_path / "dlor.pt"
    torch.save(model.state_dict(), path)
    assert main(["analyze", str(path)]) == 0
    rows = _rows(capsys.readouterr().out)
    assert [(r[1].strip(), r[2].strip(), r[3].strip()) for r in rows] == [
        ("1.branches.0", "DLoRLinear", "6×6"),
        ("1.branches.1", "DLoRLinear", "6×6"),
        ("2.branches.0", "DLoRLinear", "6×6"),
        ("2.branches.1", "DLoRLinear", "6×6"),
        ("3", "DLoRBranches (2 summed)", "6×6"),
    ]
    dense = model[1].branches[1].to_dense().detach().double()
    assert float(rows[1][4]) == pytest.approx(torch.linalg.matrix_norm(dense, 2).item(), rel=1e-3)


def test_analyze_includes_norm_constrained_lift_and_head_and_csv(tmp_path, capsys):
    torch.manual_seed(0)
    model = lipschitz_resnet(4, 2, width=5, depth=2)
    path = tmp_path / "resnet.pt"
    torch.save(model.state_dict(), path)
    assert main(["analyze", str(path), "--format", "csv", "--p", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("name,kind,rows,cols,spectral_norm")
    kinds = [line.split(",")[:4] for line in lines[1:]]
    assert kinds == [
        ["0", "NormConstrainedLinear", "5", "4"],
        ["1", "GradientStepResidual W", "5", "5"],
        ["2", "GradientStepResidual W", "5", "5"],
        ["3", "NormConstrainedLinear", "2", "5"],
    ]


def test_analyze_warns_about_matrices_it_cannot_read(tmp_path, capsys):
    path = tmp_path / "mixed.pt"
    torch.save({"conv.weight": torch.ones(2, 1, 3, 3), "fc.weight": torch.eye(3)}, path)
    assert main(["analyze", str(path)]) == 0
    captured = capsys.readouterr()
    assert "warning:" in captured.err and "conv.weight(2, 1, 3, 3)" in captured.err
    assert len(_rows(captured.out)) == 1
