"""Review of ``pgd_l2``, ``certify(attack_points=...)`` and the run folders' saved models.

Each test states a property the code claims, checked against exact answers or float64 references:
the returned points lie in the closed ε-ball of the *given* inputs (float64 distance), a correct
certificate is never reported broken, the result does not depend on ``ATTACK_CHUNK``, the attack
with ``certify``'s defaults finds every point a dense grid breaks, and a run folder's rows stay bound
to readable model files through ``--reuse`` and interrupted runs.
"""

from __future__ import annotations

import math
import os
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import structnets.analysis.attack as attack_module
from structnets.analysis import certify, pgd_l2
from structnets.models import lipschitz_resnet

_TOY_FOLDER = str(Path(__file__).resolve().parents[1] / "runner")


def _distances(points: torch.Tensor, inputs: torch.Tensor | np.ndarray) -> torch.Tensor:
    """‖point − input‖₂ in float64 (the input as the caller gave it)."""
    given = torch.as_tensor(inputs).to(torch.float64)
    return torch.linalg.vector_norm(points.to(torch.float64) - given, dim=1)


# --- the ε-ball ----------------------------------------------------------------------------------


def test_float32_points_lie_in_the_ball_of_their_inputs_at_a_small_radius() -> None:
    """The ball check is made on δ, not on the rounded point x + δ: at ε = 10⁻³ and |x| ≈ 1 the
    float32 rounding of x + δ (≈ 6·10⁻⁸ per coordinate) exceeds the 2⁻²⁰·ε slack of the projection."""
    torch.manual_seed(0)
    model = nn.Linear(50, 3)
    x = torch.rand(200, 50, generator=torch.Generator().manual_seed(0)) * 0.5 + 0.5
    y = torch.randint(0, 3, (200,), generator=torch.Generator().manual_seed(1))
    eps = 1e-3
    result = pgd_l2(model, x, y, eps, steps=5)
    distance = _distances(result.points, x)
    assert int((distance > eps).sum()) == 0, f"{int((distance > eps).sum())} points outside the ε-ball"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_points_lie_in_the_ball_of_their_inputs(dtype: torch.dtype) -> None:
    """Inputs already in the model's dtype (no input rounding): only x + δ is rounded."""
    torch.manual_seed(0)
    model = nn.Linear(20, 2).to(dtype)
    x = torch.randn(400, 20, generator=torch.Generator().manual_seed(0)).to(dtype)
    with torch.no_grad():
        y = model(x).argmax(dim=1)
    eps = 1.0
    result = pgd_l2(model, x, y, eps, steps=50)
    distance = _distances(result.points, x)
    assert int((distance > eps).sum()) == 0, f"{int((distance > eps).sum())} points outside, max {distance.max():.6g}"


def test_float64_inputs_to_a_float32_model_stay_in_the_ball_of_the_given_inputs() -> None:
    """``inputs`` are cast to the model's dtype first; the ball must still be the one around the
    inputs given (0.1 is 1.49·10⁻⁹ away from its float32 rounding, more than ε = 10⁻⁹): such a cast is
    refused by name, and at a radius above the cast's error the points lie in the given inputs' ball."""
    model = nn.Linear(4, 2)
    x = torch.full((3, 4), 0.1, dtype=torch.float64)
    with pytest.raises(ValueError, match="`inputs` cast to the model's dtype"):
        pgd_l2(model, x, torch.zeros(3, dtype=torch.long), 1e-9, steps=2)
    result = pgd_l2(model, x, torch.zeros(3, dtype=torch.long), 1e-6, steps=5)
    assert bool((_distances(result.points, x) <= 1e-6).all()), _distances(result.points, x)


def _shifted_linear() -> nn.Sequential:
    """f(x) = (x₀ − 2⁵³) · (−1) − ½·x₁: one logit, exactly ‖(1, ½)‖ = √1.25-Lipschitz as a real function."""
    shift, head = nn.Linear(2, 2).double(), nn.Linear(2, 1).double()
    with torch.no_grad():
        shift.weight.copy_(torch.eye(2))
        shift.bias.copy_(torch.tensor([-(2.0**53), 0.0]))
        head.weight.copy_(torch.tensor([[-1.0, -0.5]]))
        head.bias.zero_()
    return nn.Sequential(shift, head).eval()


def test_attack_never_breaks_a_point_farther_than_eps_from_the_boundary() -> None:
    """x = (2⁵³ − 1, 0), label 1: f(x) = 1 exactly, so the exact distance to the boundary is
    1/√1.25 ≈ 0.894 > ε = 0.8 and no point of the 0.8-ball changes the prediction. The attack's δ
    has ‖δ‖ < 0.8, but x₀ + δ₀ rounds up to 2⁵³ (float64 spacing 1 there): the returned point is
    ≈ 1.06 from x, outside the ball, with margin −0.18; certify counts the point "broken"."""
    model = _shifted_linear()
    x = torch.tensor([[2.0**53 - 1.0, 0.0]], dtype=torch.float64)
    y = torch.ones(1, dtype=torch.long)
    with torch.no_grad():
        assert float(model(x)) == 1.0
    exact_distance = 1.0 / math.sqrt(1.25)
    eps = 0.8
    assert eps < exact_distance
    result = pgd_l2(model, x, y, eps, steps=50)
    assert float(_distances(result.points, x)[0]) <= eps
    assert float(result.margins[0]) >= 0.0


def test_certify_reports_no_broken_point_for_a_correct_certificate() -> None:
    """The same model and point through certify: certified at 0.8 with the computed L = √1.25
    (radius 0.894), and ``attack_broken_0.8`` must be 0 (it is 1)."""
    model = _shifted_linear()
    x = torch.tensor([[2.0**53 - 1.0, 0.0]], dtype=torch.float64)
    y = torch.ones(1, dtype=torch.long)
    eps = 0.8
    with pytest.warns(UserWarning, match="not certified 1-Lipschitz"):
        row = certify(model, x, y, [eps], ascent_steps=0, attack_points=1)
    assert row["certified_0.8"] == 1.0  # L = √1.25 (computed), radius 0.894 ≥ 0.8
    assert row["attack_broken_0.8"] == 0


# --- exact answers for functions, numpy labels, one logit -------------------------------------------


def test_a_plain_function_with_one_logit_and_numpy_labels_reaches_the_exact_boundary_point() -> None:
    """f(x) = w·x + b (a function, no parameters; output (n,)): the attack ends at x ∓ r·w/‖w‖ with
    r = ε(1 − 2⁻²⁰), margin |f(x)| − r‖w‖ (float64, exact up to rounding)."""
    w = torch.tensor([3.0, -4.0, 12.0], dtype=torch.float64)  # ‖w‖ = 13

    def f(t: torch.Tensor) -> torch.Tensor:
        return t @ w + 0.25

    x = np.array([[0.5, 0.1, 0.2], [-0.3, 0.4, -0.1], [1.0, 1.0, 1.0]])
    z = torch.as_tensor(x) @ w + 0.25
    labels = (z > 0).numpy().astype(np.int32)
    eps = 0.05
    result = pgd_l2(f, x, labels, eps, steps=40)
    radius = eps * (1.0 - 2.0**-20)
    sign = torch.where(z > 0, 1.0, -1.0).to(torch.float64)
    expected_points = torch.as_tensor(x) - sign[:, None] * radius * w / 13.0
    torch.testing.assert_close(result.points, expected_points, rtol=0, atol=1e-12)
    torch.testing.assert_close(result.margins, z.abs() - 13.0 * radius, rtol=0, atol=1e-12)
    assert result.margins.dtype == torch.float64


# --- ATTACK_CHUNK and batch independence ---------------------------------------------------------------


def _start_only_model(t: torch.Tensor) -> torch.Tensor:
    """Two logits (t₀, 0): the margin of label 0 is t₀, so a random start decides the result."""
    return torch.stack([t[:, 0], torch.zeros_like(t[:, 0])], dim=1)


def test_random_restarts_do_not_depend_on_attack_chunk_or_on_the_other_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ATTACK_CHUNK``: "the result does not depend on it". With restarts the shared generator is
    drawn chunk by chunk, so each row's random start depends on the chunking and on n."""
    x = torch.zeros(10, 3, dtype=torch.float64)
    y = torch.zeros(10, dtype=torch.long)
    options = {"steps": 1, "restarts": 2, "seed": 1, "step_size": 1e-9}
    whole = pgd_l2(_start_only_model, x, y, 1.0, **options)
    monkeypatch.setattr(attack_module, "ATTACK_CHUNK", 4)
    chunked = pgd_l2(_start_only_model, x, y, 1.0, **options)
    monkeypatch.undo()
    assert torch.equal(whole.margins, chunked.margins)
    first_half = pgd_l2(_start_only_model, x[:5], y[:5], 1.0, **options)
    assert torch.equal(whole.margins[:5], first_half.margins)


def test_deterministic_attack_is_exact_across_chunk_boundaries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without random starts, n = 2100 > 2·ATTACK_CHUNK: every row is attacked as alone (float64
    linear model: the result is row-local to the last bit), and the rows come back in order."""
    torch.manual_seed(0)
    model = nn.Linear(5, 4).double()
    x = torch.randn(2100, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    y = torch.randint(0, 4, (2100,), generator=torch.Generator().manual_seed(3))
    chunked = pgd_l2(model, x, y, 0.3, steps=4, targets=3)
    monkeypatch.setattr(attack_module, "ATTACK_CHUNK", 10**6)
    whole = pgd_l2(model, x, y, 0.3, steps=4, targets=3)
    torch.testing.assert_close(chunked.margins, whole.margins, rtol=0, atol=1e-12)
    torch.testing.assert_close(chunked.points, whole.points, rtol=0, atol=1e-12)
    for i in (0, 1023, 1024, 2047, 2048, 2099):
        alone = pgd_l2(model, x[i : i + 1], y[i : i + 1], 0.3, steps=4, targets=3)
        torch.testing.assert_close(chunked.margins[i : i + 1], alone.margins, rtol=0, atol=1e-12)


# --- attack strength on a trained 1-Lipschitz ResNet (exact grid reference in 2-D) -------------------


def _blobs_resnet() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    k = 6
    centers = torch.randn(k, 2, generator=generator)
    X = torch.randn(1200, 2, generator=generator) * 0.45
    y = torch.arange(1200) % k
    X = X + centers[y]
    torch.manual_seed(0)
    model = lipschitz_resnet(2, k, 16, 4)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(200):
        optimizer.zero_grad()
        nn.functional.cross_entropy(10.0 * model(X[:900]), y[:900]).backward()
        optimizer.step()
    return model.eval(), X[900:1050], y[900:1050]


def _grid_min_margin(model: nn.Module, X: torch.Tensor, y: torch.Tensor, eps: float) -> torch.Tensor:
    """Minimum margin over a polar grid of the closed ball (an upper bound of the true minimum)."""
    r = torch.linspace(0.0, eps * (1.0 - 2.0**-20), 40)
    t = torch.linspace(0.0, 2.0 * math.pi, 361)[:-1]
    offsets = torch.stack([torch.outer(r, t.cos()).reshape(-1), torch.outer(r, t.sin()).reshape(-1)], dim=1)
    out = []
    with torch.no_grad():
        for i in range(len(X)):
            z = model(X[i] + offsets)
            label = int(y[i])
            others = torch.cat([z[:, :label], z[:, label + 1 :]], dim=1).max(dim=1).values
            out.append((z[:, label] - others).min().double())
    return torch.stack(out)


def test_certify_defaults_find_every_point_a_dense_grid_breaks() -> None:
    """certify attacks with one untargeted and two targeted runs of 50 steps: on a trained 6-class
    1-Lipschitz ResNet in 2-D, every point whose grid minimum is clearly negative is broken."""
    model, X, y = _blobs_resnet()
    for eps in (0.2, 0.4):
        grid = _grid_min_margin(model, X, y, eps)
        result = pgd_l2(model, X, y, eps, steps=50, targets=2)
        missed = (grid < -1e-3) & (result.margins >= 0)
        assert int(missed.sum()) == 0, f"ε={eps}: {int(missed.sum())} breakable points missed"
        assert bool((_distances(result.points, X) <= eps).all())
        with torch.no_grad():
            z = model(result.points).double()
        others = z.scatter(1, y[:, None], -math.inf).max(dim=1).values
        torch.testing.assert_close(result.margins, z.gather(1, y[:, None])[:, 0] - others, rtol=0, atol=1e-5)


# --- run folders: saved models through --reuse and interruptions --------------------------------------


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    if _TOY_FOLDER not in sys.path:
        sys.path.insert(0, _TOY_FOLDER)
    rest = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", _TOY_FOLDER + (os.pathsep + rest if rest else ""))
    import toy_experiment

    return toy_experiment


def test_reusing_a_folder_from_before_saved_models_leaves_a_readable_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toy
) -> None:  # type: ignore[no-untyped-def]
    """``--set seeds=0,1,2 --reuse runs/seed0`` where seed 0 ran before models were saved: the run
    succeeds, but its folder then holds one row of a kind without ``model_file`` beside two with it,
    and ``check_records`` refuses the folder as corrupt (resume, report and load_unit_state fail)."""
    from structnets import runner
    from structnets.runner.store import ResultStore

    old = tmp_path / "old"
    runner.run("toy", toy.ToyConfig(arms=1, seeds=(0,), repeats=1), old, jobs=1, registry=toy.REGISTRY)
    monkeypatch.setenv("STRUCTNETS_TOY_MODELS", "1")
    grown = tmp_path / "grown"
    runner.run("toy", toy.ToyConfig(arms=1, seeds=(0, 1, 2), repeats=1), grown, jobs=1, registry=toy.REGISTRY,
               reuse=[old])  # fmt: skip
    with ResultStore.open_existing(grown / "results.db") as store:
        records = store.records()
    assert len(records) == 4


def test_a_reuse_interrupted_between_commit_and_copy_still_gets_its_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toy
) -> None:  # type: ignore[no-untyped-def]
    """take_reusable commits the row, then copies its file: a run killed in between keeps a finished
    row whose model file never arrives, and resuming (same --reuse) does not repair it."""
    from structnets import atomic_io, runner
    from structnets.runner.unit_models import load_unit_state

    monkeypatch.setenv("STRUCTNETS_TOY_MODELS", "1")
    config = toy.ToyConfig(arms=1, seeds=(0,), repeats=1)
    first = tmp_path / "first"
    runner.run("toy", config, first, jobs=1, registry=toy.REGISTRY)
    real = atomic_io.write_bytes

    def killed(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        if Path(path).parent.name == "models":
            raise KeyboardInterrupt("killed while copying the model")
        return real(path, *args, **kwargs)

    grown = tmp_path / "grown"
    monkeypatch.setattr(atomic_io, "write_bytes", killed)
    with pytest.raises(KeyboardInterrupt):
        runner.run("toy", config, grown, jobs=1, registry=toy.REGISTRY, reuse=[first])
    monkeypatch.setattr(atomic_io, "write_bytes", real)
    runner.run("toy", config, grown, jobs=1, registry=toy.REGISTRY, reuse=[first])  # resume
    _, state = load_unit_state(grown, "stage1/arm=0/seed=0")
    _, original = load_unit_state(first, "stage1/arm=0/seed=0")
    assert all(torch.equal(state[name], original[name]) for name in original)


def test_a_unit_killed_after_saving_but_before_commit_is_rerun_and_its_file_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toy
) -> None:  # type: ignore[no-untyped-def]
    """The row is gone and the file holds stale bytes (a killed unit): the resumed unit rewrites the
    file, and the row's SHA-256 matches it."""
    from structnets import runner
    from structnets.runner.unit_models import load_unit_state

    monkeypatch.setenv("STRUCTNETS_TOY_MODELS", "1")
    config = toy.ToyConfig(arms=1, seeds=(0,), repeats=1)
    out = tmp_path / "run"
    runner.run("toy", config, out, jobs=1, registry=toy.REGISTRY)
    key = "stage1/arm=0/seed=0"
    _, expected = load_unit_state(out, key)
    with sqlite3.connect(out / "results.db") as conn:
        (name,) = conn.execute(
            "SELECT json_extract(result, '$.model_file') FROM results WHERE key = ?", (key,)
        ).fetchone()
        conn.execute("DELETE FROM results WHERE key = ?", (key,))
    (out / name).write_bytes(b"stale bytes of a killed unit")
    runner.run("toy", config, out, jobs=1, registry=toy.REGISTRY)
    _, state = load_unit_state(out, key)
    assert all(torch.equal(state[n], expected[n]) for n in expected)


def test_reuse_does_not_copy_a_file_a_symlink_in_models_points_to(tmp_path: Path) -> None:
    """A run folder is data: a row may only name a file *inside* its models/ folder. A symlink there
    to a file outside the folder must not be followed (its bytes would land in the new run folder)."""
    from structnets.runner.unit_models import MODELS, copy_unit_model

    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"not a model: a private file outside the run folder")
    source, target = tmp_path / "source", tmp_path / "target"
    (source / MODELS).mkdir(parents=True)
    target.mkdir()
    (source / MODELS / "unit-0123456789ab.pt").symlink_to(secret)
    copy_unit_model(source, target, {"model_file": f"{MODELS}/unit-0123456789ab.pt"})
    copied = target / MODELS / "unit-0123456789ab.pt"
    assert not copied.exists() or copied.read_bytes() != secret.read_bytes()
