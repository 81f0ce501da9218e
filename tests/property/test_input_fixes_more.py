"""Bad inputs the generated suite recorded as XFAIL in claims, the constant-depth smooth construction,
rank-1 interpolation and the seed-batched trainers: each is now refused before any work, naming the
argument, and the nearby valid input still gives the documented result."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

import structnets.claims as claims
import structnets.constructive as constructive
from structnets.claims import ClaimsError
from structnets.models.batched_dlor import build_batched
from structnets.training import seed_batched

HUGE = 10**30


# -- claims ------------------------------------------------------------------------------------


def test_paired_t_test_refuses_non_finite_and_non_numeric_samples_and_keeps_the_formula():
    a = [1.0, 2.0, 3.0, 4.5]
    b = [4.5, 3.0, 2.0, 1.0]
    with pytest.raises(ValueError, match=r"`a` must be finite, got nan at index 1"):
        claims.paired_t_test(np.array([1.0, math.nan, 3.0, 4.0]), np.array(b))
    with pytest.raises(ValueError, match=r"`b` must be finite, got inf at index 1"):
        claims.paired_t_test(np.array(a), np.array([1.0, math.inf, 3.0, 4.0]))
    for bad in ("abc", None, np.array(["a"] * 4), [1 + 2j] * 4):
        with pytest.raises(TypeError, match="`b` must"):
            claims.paired_t_test(np.array(a), bad)
    with pytest.raises(ValueError, match=r"`a` must be 1-D .* got shape \(4, 2\)"):
        claims.paired_t_test(np.ones((4, 2)), np.ones((4, 2)))
    # lists and integer samples are still accepted: t = mean(d) / (sd(d) / sqrt(n)), d = a - b
    result = claims.paired_t_test(a, b)
    d = np.array(a) - np.array(b)
    assert result.t == pytest.approx(d.mean() / (d.std(ddof=1) / 2.0), rel=1e-12)
    assert result.pairs == 4 and result.mean_difference == d.mean()
    integers = claims.paired_t_test(np.array([3, 5, 4, 6]), np.array([1, 1, 1, 1]))
    assert integers.mean_difference == 3.5
    assert integers.t == pytest.approx(3.5 / (math.sqrt(5 / 3) / 2.0), rel=1e-12)


def test_load_run_names_run_dir_for_non_paths_empty_and_missing_folders(tmp_path: Path):
    for bad in (3, 1.5, None, object(), ["a"]):
        with pytest.raises(TypeError, match=r"`run_dir` must be a run folder path \(str or os.PathLike\)"):
            claims.load_run(bad)
    with pytest.raises(ClaimsError, match=r"`run_dir` must name a run folder, got the empty path ''"):
        claims.load_run("")
    afile = tmp_path / "a.txt"
    afile.write_text("x")
    with pytest.raises(ClaimsError, match=r"a\.txt' \(`run_dir`\) does not exist or is not a folder"):
        claims.load_run(afile)
    with pytest.raises(ClaimsError, match=r"\(`run_dir`\) has no run_info.json"):
        claims.load_run(tmp_path)


def test_claims_table_refuses_a_single_path_and_non_paths_before_reading_any_folder(tmp_path: Path):
    for single in ("runs", tmp_path, b"runs"):
        with pytest.raises(TypeError, match=r"`run_dirs` must be a sequence of run folders, got the single path"):
            claims.claims_table(single)
    for bad in (3, None, {tmp_path}):
        with pytest.raises(TypeError, match=r"`run_dirs` must be a sequence \(list or tuple\)"):
            claims.claims_table(bad)
    with pytest.raises(ClaimsError, match=r"`run_dirs` is empty: give at least one run folder"):
        claims.claims_table([])
    # the entry types are checked before the first folder is read (which is missing here)
    with pytest.raises(TypeError, match=r"`run_dirs\[1\]` must be a run folder path \(str or os.PathLike\), got 3"):
        claims.claims_table([tmp_path / "missing", 3])
    with pytest.raises(ClaimsError, match=r"missing' \(`run_dirs\[0\]`\) does not exist"):
        claims.claims_table((tmp_path / "missing",))


def test_claims_markdown_names_table_and_counts_verdicts_exactly():
    for bad in (None, 3, "abc", [1, 2]):
        with pytest.raises(TypeError, match="`table` must be a pandas DataFrame"):
            claims.claims_markdown(bad)
    with pytest.raises(ValueError, match=r"`table` must have the claims_table columns .* it lacks \['id', 'paper'"):
        claims.claims_markdown(pd.DataFrame({"a": [1]}))
    row = dict.fromkeys(claims.COLUMNS, "x")
    table = pd.DataFrame(
        [{**row, "verdict": claims.REPRODUCED}, {**row, "id": "y", "verdict": claims.REFUTED}],
        columns=list(claims.COLUMNS),
    )
    page = claims.claims_markdown(table)
    counts = "; ".join(f"{v}: {1 if v in (claims.REPRODUCED, claims.REFUTED) else 0}" for v in claims.VERDICTS)
    assert f"Verdicts: {counts}." in page.splitlines()
    # the claim rows only (the policy table's rows start with "| **" too)
    assert sum(line.startswith(("| **x**:", "| **y**:")) for line in page.splitlines()) == 2


# -- the constant-depth smooth construction ------------------------------------------------------


def _line(x: torch.Tensor) -> torch.Tensor:
    return 3.0 * x[:, 0] - 1.0


def _line_derivative(alpha: tuple[int, ...], x: torch.Tensor) -> torch.Tensor:
    return _line(x) if alpha == (0,) else torch.full((x.shape[0],), 3.0, dtype=x.dtype)


def test_smooth_constant_depth_refuses_unholdable_K_naming_it():
    for K in (HUGE, 2**63, 10**12):
        with pytest.raises(ValueError, match=rf"`K`={K} \(d=1\) ask for .* network parameters"):
            constructive.smooth_constant_depth_approximator(_line, 1.5, K, d=1, derivative=_line_derivative, R=0.0)


def test_smooth_constant_depth_R_zero_is_a_polynomial_with_zero_taylor_term():
    """R = 0 is the documented case of f a polynomial of degree <= kappa: T = 0, the error is G + rho."""
    x = torch.linspace(0.0, 1.0, 1001, dtype=torch.float64)[:, None]
    certificates = []
    for R in (0.0, -0.0):
        approx = constructive.smooth_constant_depth_approximator(_line, 1.5, 4, d=1, derivative=_line_derivative, R=R)
        certificate = approx.certificate
        assert certificate.taylor == 0.0 and math.copysign(1.0, certificate.constants["R"]) == 1.0
        with torch.no_grad():
            error = float((approx(x) - _line(x)).abs().max())
        assert error <= certificate.total
        certificates.append((certificate.total, certificate.widths))
    assert certificates[0] == certificates[1]
    for R in (-1e-300, -1.0, math.nan, "0"):
        with pytest.raises((ValueError, TypeError), match="`R`"):
            constructive.smooth_constant_depth_approximator(_line, 1.5, 4, d=1, derivative=_line_derivative, R=R)


# -- rank-1 interpolation ----------------------------------------------------------------------


def test_rank_one_interpolant_names_text_inputs_and_non_float_dtypes():
    x, y = [0.0, 0.5, 1.0], [1.0, 0.0, 2.0]
    for bad in ("abc", ["a", "b", "c"], None, [1j, 2j, 3j]):
        with pytest.raises(TypeError, match="`x` must"):
            constructive.rank_one_interpolant(bad, y)
        with pytest.raises(TypeError, match="`y` must"):
            constructive.rank_one_interpolant(x, bad)
    for dtype in (None, "float64", 3, np.float64, torch.int64, torch.bool, torch.complex64):
        with pytest.raises(TypeError, match="`dtype` must be a floating-point torch.dtype"):
            constructive.rank_one_interpolant(x, y, dtype=dtype)
    # tensors (even ones that require grad) and float32 still work: f(x_i) = y_i
    net = constructive.rank_one_interpolant(torch.tensor(x, requires_grad=True), torch.tensor(y))
    with torch.no_grad():
        assert torch.allclose(
            net(torch.tensor(x, dtype=torch.float64)[:, None])[:, 0], torch.tensor(y).double(), atol=1e-12
        )
    net32 = constructive.rank_one_interpolant(x, y, dtype=torch.float32)
    assert all(p.dtype == torch.float32 for p in net32.parameters())
    with torch.no_grad():
        assert torch.allclose(net32(torch.tensor(x)[:, None])[:, 0], torch.tensor(y), atol=1e-5)


# -- seed-batched trainers ---------------------------------------------------------------------


def _batched() -> nn.Module:
    torch.manual_seed(0)
    return build_batched([0, 1], 2, 4, 2, 1, "deep", "tanh", dtype=torch.float64)


def _data() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    X = torch.rand(8, 2, generator=generator, dtype=torch.float64)
    return X, torch.sin(3 * X[:, 0]) * X[:, 1]


def _regressor() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 1)).double()


def test_train_batched_names_every_bad_argument_before_training():
    X, y = _data()
    kw = {"epochs": 2, "lr": 0.01, "eval_every": 1}
    net = _batched()
    before = [p.detach().clone() for p in net.parameters()]
    cases = [
        ({"net": "mlp"}, TypeError, "`net` must be a torch.nn.Module"),
        ({"X": np.ones((8, 2, 2))}, ValueError, r"`X` must have shape \(n, d\), got shape \(8, 2, 2\)"),
        ({"X": torch.ones(8, 3)}, ValueError, r"`X` of shape \(8, 3\) cannot be fed to `net`"),
        ({"y": None}, TypeError, "`y` must be an"),
        ({"y": torch.ones(8, 2)}, ValueError, r"`y` must have shape \(n,\) or \(n, 1\), got shape \(8, 2\)"),
        ({"X_test": "abc"}, TypeError, "`X_test` must be an"),
        ({"X_test": torch.ones(8, 3)}, ValueError, "`X_test` must have the 2 columns"),
        ({"y_test": torch.ones(5)}, ValueError, "`X_test` and `y_test` must have the same number of rows, got 8 and 5"),
        ({"y_test": torch.full((8,), math.nan)}, ValueError, "`y_test` must be finite"),
        ({"lr": "0.01"}, TypeError, "`lr` must be a real number"),
        ({"epochs": HUGE}, ValueError, "`epochs`"),
    ]
    for change, error, message in cases:
        call = {"net": net, "X": X, "y": y, "X_test": X, "y_test": y, **kw, **change}
        with pytest.raises(error, match=message):
            seed_batched.train_batched(**call)
    assert all(torch.equal(p, q) for p, q in zip(net.parameters(), before, strict=True))


def test_train_batched_takes_column_targets_and_arrays_as_the_same_data():
    """(n, 1) targets and float64 arrays give the same history as (n,) tensors: one conversion."""
    X, y = _data()
    kw = {"epochs": 3, "lr": 0.01, "eval_every": 1}
    reference = seed_batched.train_batched(_batched(), X, y, X, y, **kw)
    columns = seed_batched.train_batched(_batched(), X.numpy(), y[:, None], X, y.numpy(), **kw)
    assert reference.test_curve == columns.test_curve and reference.final_train_mse == columns.final_train_mse
    # epoch 0 is the untrained network: its per-seed MSE in float64
    net = _batched()
    with torch.no_grad():
        start = ((net(X) - y[None, :, None]) ** 2).mean(dim=(1, 2))
    assert reference.test_curve[0] == [float(v) for v in start]


def test_train_dense_and_vmapped_name_text_lr_and_bad_test_data():
    X, y = _data()
    with pytest.raises(TypeError, match="`lr` must be a real number"):
        seed_batched.train_dense(_regressor(), X, y, epochs=1, lr="0.01")
    with pytest.raises(TypeError, match="`model` must be a torch.nn.Module"):
        seed_batched.train_dense("mlp", X, y, epochs=1, lr=0.01)
    models = [_regressor(), _regressor()]
    for change, error, message in (
        ({"lr": "0.01"}, TypeError, "`lr` must be a real number"),
        ({"models": [models[0], "mlp"]}, TypeError, r"`models\[1\]` must be a torch.nn.Module"),
        ({"X_test": torch.ones(8, 3)}, ValueError, "`X_test` must have the 2 columns"),
        ({"y_test": torch.ones(5)}, ValueError, "`X_test` and `y_test` must have the same number of rows"),
        ({"y_test": None}, TypeError, "`y_test` must be an"),
    ):
        call = {"models": models, "X": X, "y": y, "X_test": X, "y_test": y, "epochs": 1, "lr": 0.01, **change}
        with pytest.raises(error, match=message):
            seed_batched.train_vmapped(**call)
    # the final training MSE of train_dense is the model's MSE after training, in float64
    model = _regressor()
    final = seed_batched.train_dense(model, X, y, epochs=2, lr=0.01)
    with torch.no_grad():
        assert final == float(((model(X)[:, 0] - y) ** 2).mean())
