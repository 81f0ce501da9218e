"""Bad inputs the generated suite found in the names added after its first table: each is now
refused naming the argument, and the nearby valid input still gives the documented result."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

import structnets.atomic_io as atomic_io
import structnets.constructive as constructive
import structnets.protocol as protocol
import structnets.training as training
from structnets.analysis import load_state_dict
from structnets.models.batched_dlor import build_batched
from structnets.nn import DLoRBranches, DLoRParallel, ResidualExport, TakeFirst, ZeroPad
from structnets.training.lbfgs import adam_phase, batched_lbfgs
from structnets.training.levenberg_marquardt import batched_levenberg_marquardt

HUGE = 10**30


def test_zero_pad_and_take_first_refuse_non_tensors_and_unholdable_widths():
    pad, take = ZeroPad(2, 4), TakeFirst(4, 2)
    x = torch.tensor([[1.0, -2.0]])
    assert torch.equal(pad(x), torch.tensor([[1.0, -2.0, 0.0, 0.0]]))
    assert torch.equal(take(pad(x)), x)
    for layer, bad in ((pad, np.ones((3, 2))), (take, None)):
        with pytest.raises(TypeError, match="`input` must be a torch.Tensor"):
            layer(bad)
    with pytest.raises(ValueError, match="`width`"):
        ZeroPad(2, HUGE)
    with pytest.raises(ValueError, match="`in_features`"):
        ZeroPad(HUGE, HUGE)
    with pytest.raises(ValueError, match="`width`"):
        TakeFirst(HUGE, 2)


@pytest.mark.parametrize("layer", [DLoRBranches, DLoRParallel])
def test_branch_layers_refuse_a_branch_count_beyond_memory_at_once(layer):
    with pytest.raises(ValueError, match="`branches` must be an int in \\[1, 100000\\]"):
        layer(4, 1, HUGE)  # above the module cap: refused before any branch is built
    with pytest.raises(ValueError, match="`branches`=100000, `features`=1000000"):
        layer(10**6, 1, 100_000)  # 3·10¹¹ parameters: refused after building one branch
    torch.manual_seed(0)
    built = layer(4, 1, 3)
    assert len(built.branches) == 3
    if layer is DLoRBranches:
        expected = sum(b.to_dense() for b in built.branches)
        torch.testing.assert_close(built.to_dense(), expected, rtol=0, atol=0)


def test_residual_export_refuses_a_body_that_is_not_a_module():
    with pytest.raises(TypeError, match="`body` must be a torch.nn.Module"):
        ResidualExport("mlp")  # type: ignore[arg-type]
    body = nn.Linear(2, 2)
    x = torch.randn(3, 2)
    torch.testing.assert_close(ResidualExport(body)(x), x + body(x), rtol=0, atol=0)


def test_build_batched_checks_every_seed_and_the_dtype():
    with pytest.raises(TypeError, match="`seeds` must be a sequence"):
        build_batched("01", 1, 4, 2, 1, "deep", "tanh")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"`seeds\[1\]` must be an int in \[0, "):
        build_batched([0, -1], 1, 4, 2, 1, "deep", "tanh")
    with pytest.raises(TypeError, match="`dtype` must be a floating-point torch.dtype"):
        build_batched([0], 1, 4, 2, 1, "deep", "tanh", dtype=torch.int64)
    net = build_batched([3, 5], 1, 4, 2, 1, "deep", "tanh", dtype=torch.float64)
    x = torch.linspace(-1, 1, 7, dtype=torch.float64)[:, None]
    out = net(x)
    assert out.shape[0] == 2 and out.dtype == torch.float64


def test_schedules_check_their_arguments_and_keep_the_closed_forms():
    assert training.cosine_lr(0, 10, 0.1) == 0.1
    assert training.cosine_lr(5, 10, 0.1, 0.02) == pytest.approx(0.02 + 0.08 * 0.5, abs=1e-15)
    assert training.cosine_lr(20, 10, 0.1) == pytest.approx(0.1, abs=1e-15)  # t = 2T: back at lr
    assert training.warmup_cosine_lr(1, 10, 2, 0.1) == 0.1  # lr exactly at step W - 1
    assert training.warmup_cosine_lr(0, 10, 4, 0.1) == 0.1 / 4
    for call, match in (
        (lambda: training.cosine_lr(-1, 10, 0.1), "`step`"),
        (lambda: training.cosine_lr(0, 0, 0.1), "`total_steps`"),
        (lambda: training.cosine_lr(0, 10, "0.1"), "`lr`"),
        (lambda: training.cosine_lr(0, 10, 0.1, 0.2), "`min_lr`"),
        (lambda: training.warmup_cosine_lr(0, 3, 4, 0.1), "`total_steps` must be >= `warmup_steps`=4"),
        (lambda: training.warmup_cosine_lr(0, 10, 0, 0.1), "`warmup_steps`"),
        (lambda: training.warmup_cosine_lr(0, 10, 2, math.nan), "`lr`"),
    ):
        with pytest.raises((TypeError, ValueError), match=match):
            call()


def test_batched_optimisers_refuse_bad_starts_functions_and_constants():
    x0 = torch.ones(2, 3, dtype=torch.float64)

    def quadratic(x: torch.Tensor) -> torch.Tensor:
        return (x**2).sum(-1)

    with pytest.raises(TypeError, match="`x` must be an \\(E, P\\) torch.Tensor"):
        batched_lbfgs(quadratic, np.ones((2, 3)), max_iter=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`x` must be finite"):
        batched_lbfgs(quadratic, torch.full((2, 3), math.nan, dtype=torch.float64), max_iter=3)
    with pytest.raises(TypeError, match="`x` must be a floating-point tensor"):
        adam_phase(quadratic, torch.ones(2, 3, dtype=torch.int64), steps=1, lr=0.1)
    with pytest.raises(TypeError, match="`loss_fn` must be a callable"):
        batched_lbfgs("f", x0, max_iter=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`c1`"):
        batched_lbfgs(quadratic, x0, max_iter=3, c1=1.0)
    with pytest.raises(ValueError, match="`history`"):
        batched_lbfgs(quadratic, x0, max_iter=3, history=HUGE)
    with pytest.raises(ValueError, match="`patience`"):
        batched_lbfgs(quadratic, x0, max_iter=3, patience=HUGE)
    x, result = batched_lbfgs(quadratic, x0, max_iter=50, ftol=0.0, gtol=1e-12)
    assert float(x.abs().max()) <= 1e-10 and bool(result.converged.all())

    A = torch.tensor([[2.0, 0.0], [0.0, 4.0], [1.0, 1.0]], dtype=torch.float64)

    def residual(x: torch.Tensor) -> torch.Tensor:
        return x @ A.T - 1.0

    def jacobian(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return residual(x), A.expand(x.shape[0], 3, 2)

    start = torch.zeros(2, 2, dtype=torch.float64)
    with pytest.raises(TypeError, match="`jacobian_fn` must be callable"):
        batched_levenberg_marquardt(residual, None, start, max_iter=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`x` must be finite"):
        batched_levenberg_marquardt(residual, jacobian, torch.full((2, 2), math.inf, dtype=torch.float64), max_iter=3)
    x, _ = batched_levenberg_marquardt(residual, jacobian, start, max_iter=100)
    expected = torch.linalg.lstsq(A, torch.ones(3, 1, dtype=torch.float64)).solution.T
    torch.testing.assert_close(x, expected.expand(2, 2), rtol=0, atol=1e-9)


def test_load_state_dict_names_the_path_of_an_unreadable_checkpoint(tmp_path):
    (tmp_path / "garbage.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="`path`: checkpoint .* cannot be loaded"):
        load_state_dict(tmp_path / "garbage.pt")
    torch.save([1, 2], tmp_path / "list.pt")
    with pytest.raises(ValueError, match="`path`: checkpoint .* is not a state dict"):
        load_state_dict(tmp_path / "list.pt")
    model = nn.Linear(2, 1)
    torch.save(model.state_dict(), tmp_path / "ok.pt")
    loaded = load_state_dict(tmp_path / "ok.pt")
    assert torch.equal(loaded["weight"], model.weight.detach())


def test_atomic_writers_refuse_bad_paths_flags_and_frames(tmp_path):
    with pytest.raises(TypeError, match="`path` must be a str or os.PathLike"):
        atomic_io.file_mode(3)  # type: ignore[arg-type]  (an int would stat file descriptor 3)
    with pytest.raises(ValueError, match="`path` must name a file"):
        atomic_io.write_text("", "x")
    with pytest.raises(ValueError, match="`path` must name a file, got the folder"):
        atomic_io.write_bytes(tmp_path, b"x")
    with pytest.raises(TypeError, match="`parents` must be a bool, got 'False'"):
        atomic_io.write_text(tmp_path / "a" / "b.txt", "x", parents="False")  # type: ignore[arg-type]
    assert not (tmp_path / "a").exists()
    with pytest.raises(ValueError, match="`suffix`"):
        atomic_io.write_bytes(tmp_path / "c.bin", b"x", suffix="/x")
    with pytest.raises(TypeError, match="`frame` must be a pandas.DataFrame"):
        atomic_io.write_csv(tmp_path / "d.csv", [[1, 2]])  # type: ignore[arg-type]
    atomic_io.write_csv(tmp_path / "d.csv", pd.DataFrame({"a": [1, 2]}))
    assert (tmp_path / "d.csv").read_text() == "a\n1\n2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv"]  # no temporary file left behind


@dataclasses.dataclass(frozen=True)
class _Config:
    seed: int = 0


def test_protocol_refuses_non_dataclasses_bad_units_and_bad_figures(tmp_path):
    assert protocol.config_to_dict(_Config(3)) == {"seed": 3}
    with pytest.raises(TypeError, match="`config` must be a dataclass instance"):
        protocol.config_to_dict(_Config)
    assert protocol.Unit("a/b", {"x": 1}).params == {"x": 1}
    with pytest.raises(TypeError, match="`key` must be a non-empty str"):
        protocol.Unit(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="`params` must be a mapping"):
        protocol.Unit("a", [("x", 1)])  # type: ignore[arg-type]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with pytest.raises(TypeError, match="`fig` must be a matplotlib Figure"):
        protocol.save_figure("fig", tmp_path / "f.png")
    fig = plt.figure(figsize=(1, 1))
    with pytest.raises(ValueError, match="`dpi` must be an int in \\[1, 10000\\], got 0"):
        protocol.save_figure(fig, tmp_path / "f.png", dpi=0)
    assert protocol.save_figure(fig, tmp_path / "f.svg", dpi=20) == tmp_path / "f.png"
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_constructions_refuse_text_complex_and_unholdable_sizes():
    with pytest.raises(TypeError, match="`W` must be a real square matrix, got a complex one"):
        constructive.dlor_sum(np.eye(3, dtype=complex), 1)
    with pytest.raises(TypeError, match="`knots` must be an array of real numbers"):
        constructive.lattice_pieces_1d(["a", "b"], [0.0, 0.0])
    with pytest.raises(TypeError, match="`values` must be an array of real numbers"):
        constructive.max_secant_ratio(np.ones((3, 1)), np.array(["a"] * 3))
    pieces = constructive.lattice_pieces_1d([0.0, 1.0, 2.0], [0.0, 0.5, 0.0])
    with pytest.raises(ValueError, match=r"`x` must be \(n, 1\) points"):
        constructive.evaluate_maxmin(pieces, np.ones((5, 2)))
    with pytest.raises(TypeError, match="`x` must be an array of real numbers"):
        constructive.evaluate_maxmin(pieces, None)
    with pytest.raises(ValueError, match="`x` must be finite"):
        constructive.evaluate_maxmin(pieces, np.array([[0.5], [math.nan]]))
    np.testing.assert_array_equal(
        constructive.evaluate_maxmin(pieces, np.array([0.0, 1.0, 1.5, 2.0])), [0.0, 0.5, 0.25, 0.0]
    )
    with pytest.raises(TypeError, match="`dtype` must be a floating-point torch.dtype"):
        constructive.maxmin_network(pieces, dtype=torch.int64)
    with pytest.raises(ValueError, match="`dim`"):
        constructive.grid_points(HUGE, 3)
    with pytest.raises(ValueError, match="`dim`"):
        constructive.check_target(lambda x: x.sum(1), HUGE, -1.0, 1.0)
    with pytest.raises(ValueError, match="`in_features`"):
        constructive.fit_shallow(lambda x: x.sum(-1), HUGE, 3)
    with pytest.raises(ValueError, match="`neurons`"):
        constructive.fit_shallow(lambda x: x.sum(-1), 1, HUGE)
    with pytest.raises(ValueError, match="`n_pieces`"):
        constructive.random_lattice_target_1d(HUGE, seed=0)
    with pytest.raises(ValueError, match="`M`"):
        constructive.swish_approximator(math.sin, lambda a, x: x, 1, 1.5, HUGE, R=1.0)
    with pytest.raises(ValueError, match="`d`"):
        constructive.swish_approximator(math.sin, lambda a, x: x, HUGE, 1.5, 2, R=1.0)
    assert constructive.grid_points(2, 3).shape == (9, 2)


def test_runner_entry_points_refuse_bad_folders_callbacks_devices_and_registries(tmp_path):
    import structnets.runner as runner

    with pytest.raises(ValueError, match="`backend` must be one of local, ray, got 'LOCAL'"):
        runner.resolve_device("cpu", backend="LOCAL")
    with pytest.raises(ValueError, match="`gpus_per_unit` must be a finite number > 0 or None"):
        runner.resolve_device("cpu", gpus_per_unit=math.nan)
    assert runner.resolve_device("cpu") == "cpu"
    assert runner.resolve_device("auto", backend="ray", gpus_per_unit=0.5) == "cuda"
    with pytest.raises(TypeError, match="`assignments` must be an iterable of 'key=value' strings"):
        runner.parse_overrides(_Config, "seed=1")  # a str would be split into characters
    with pytest.raises(TypeError, match=r"`assignments\[1\]` must be a 'key=value' str"):
        runner.parse_overrides(_Config, ["seed=1", 2])
    assert runner.parse_overrides(_Config, ["seed=1"]) == {"seed": 1}
    with pytest.raises(TypeError, match="`data` \\(a saved config\\) must be a JSON object, got list"):
        runner.config_from_json(_Config, [("seed", 1)])
    with pytest.raises(TypeError, match="`registry` must map names to 'module.path:OBJECT' strings"):
        runner.resolve_experiment("toy", {"toy": 3})
    for call, name in (
        (lambda: runner.run("toy", None, 3, registry={}), "out_dir"),
        (lambda: runner.run("toy", None, tmp_path / "r", progress="print", registry={}), "progress"),
        (lambda: runner.run("toy", None, tmp_path / "r", on_unit=[print], registry={}), "on_unit"),
        (lambda: runner.load_results(1.5), "run_dir"),
        (lambda: runner.report(None), "run_dir"),
        (lambda: runner.compare_runs(tmp_path, object()), "run_b"),
    ):
        with pytest.raises(TypeError, match=f"`{name}` must be"):
            call()
    with pytest.raises(ValueError, match="`run_a` must name a folder"):
        runner.compare_runs("", tmp_path)
    assert not (tmp_path / "r").exists()  # refused before the run folder is created


def test_square_layers_name_a_bad_forward_input():
    from structnets.nn import DLoRLinear, GradientStepResidual, PowerClampedResidual, UnconstrainedResidual

    torch.manual_seed(0)
    x = torch.randn(5, 4, dtype=torch.float64)
    for layer in (
        DLoRLinear(4, 1, dtype=torch.float64),
        DLoRBranches(4, 1, 2, dtype=torch.float64),
        DLoRParallel(4, 1, 2, dtype=torch.float64),
        GradientStepResidual(4, 3, dtype=torch.float64),
        PowerClampedResidual(4, 3, dtype=torch.float64),
        UnconstrainedResidual(4, 3, dtype=torch.float64),
    ):
        with pytest.raises(TypeError, match="`input` must be a torch.Tensor, got ndarray"):
            layer(x.numpy())
        with pytest.raises(ValueError, match=r"`input` must have last dimension features=4, got shape \(5, 3\)"):
            layer(x[:, :3])
        assert layer(x).shape == (5, 4)
    dlor = DLoRLinear(4, 1, dtype=torch.float64)
    torch.testing.assert_close(dlor(x), x @ dlor.to_dense().T + dlor.bias, rtol=1e-12, atol=1e-12)
