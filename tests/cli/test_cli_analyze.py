"""`structnets analyze`: the spectrum table of a saved state dict, and clean errors."""

import torch

from structnets.cli import main
from structnets.models import mlp


def test_analyze_prints_one_row_per_layer_with_exact_norms(tmp_path, capsys):
    model = mlp(5, 2, 8, 2)
    path = tmp_path / "model.pt"
    torch.save(model.state_dict(), path)
    assert main(["analyze", str(path), "--p", "1"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| layer")]
    assert [r.split("|")[1].strip() for r in rows] == ["0", "2", "4"]
    spectral = float(rows[0].split("|")[3])
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
