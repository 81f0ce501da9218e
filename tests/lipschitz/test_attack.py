"""``pgd_l2`` and ``certify(attack_points=...)``: the attack against exact answers, and the check it gives.

For a linear classifier the smallest ℓ₂ perturbation that changes a correct prediction is known in
closed form: min_j (z_y − z_j)/‖w_y − w_j‖ (leaving the polyhedron where class y wins means crossing
one of its faces). The attack must find every point whose distance is clearly below ε, and can never
"break" one whose distance is above ε (every point it returns is checked to lie in the ball).
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from structnets.analysis import certify, pgd_l2
from structnets.models import lipschitz_resnet


def _linear(d: int, k: int, seed: int) -> nn.Linear:
    torch.manual_seed(seed)
    model = nn.Linear(d, k).double()
    return model


def _exact_distance(model: nn.Linear, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Closed-form distance to the nearest decision boundary of a correctly classified point (0 if wrong)."""
    with torch.no_grad():
        z = model(x)
        W = model.weight
        true = z.gather(1, y[:, None])
        gaps = (true - z) / torch.linalg.vector_norm(W[y][:, None, :] - W[None, :, :], dim=2)
        gaps.scatter_(1, y[:, None], math.inf)
        distance = gaps.min(dim=1).values
        return torch.where(z.argmax(dim=1) == y, distance, torch.zeros_like(distance))


@pytest.mark.parametrize(("d", "k"), [(2, 3), (5, 4), (20, 10)])
def test_linear_attack_finds_exactly_the_breakable_points(d: int, k: int) -> None:
    model = _linear(d, k, seed=d)
    x = torch.randn(400, d, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        y = model(x).argmax(dim=1)  # every point correct at ε = 0
    distance = _exact_distance(model, x, y)
    eps = float(distance.median())
    result = pgd_l2(model, x, y, eps, steps=100, targets=k - 1)
    broken = result.margins < 0
    # soundness: nothing beyond its distance is broken
    assert not bool((broken & (distance > eps)).any())
    # power: everything clearly inside is found
    assert bool(broken[distance < 0.97 * eps].all())
    # the points returned lie in the closed ball and carry the model's margins there
    assert bool((torch.linalg.vector_norm(result.points - x, dim=1) <= eps).all())
    with torch.no_grad():
        z = model(result.points)
    others = z.scatter(1, y[:, None], -math.inf).max(dim=1).values
    torch.testing.assert_close(result.margins, z.gather(1, y[:, None])[:, 0] - others, rtol=0, atol=1e-12)
    exact_robust = float((distance > eps).double().mean())
    assert result.robust_accuracy() == pytest.approx(exact_robust, abs=0.03)
    assert result.robust_accuracy() >= exact_robust  # an attack only over-estimates robust accuracy


def test_one_logit_attack_reaches_the_hyperplane() -> None:
    torch.manual_seed(0)
    model = nn.Linear(8, 1).double()
    x = torch.randn(300, 8, dtype=torch.float64)
    with torch.no_grad():
        f = model(x)[:, 0]
    y = (f > 0).long()
    distance = f.abs() / torch.linalg.vector_norm(model.weight)
    eps = 0.5
    result = pgd_l2(model, x, y, eps, steps=20)
    broken = result.margins < 0
    assert torch.equal(broken[distance < 0.99 * eps], torch.ones_like(broken[distance < 0.99 * eps]))
    assert not bool(broken[distance > eps].any())


def test_more_restarts_never_raise_a_margin_and_the_seed_fixes_them() -> None:
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 4)).double()
    x = torch.randn(64, 6, dtype=torch.float64)
    y = torch.randint(0, 4, (64,))
    one = pgd_l2(model, x, y, 0.3, steps=10)
    three = pgd_l2(model, x, y, 0.3, steps=10, restarts=3, seed=5)
    again = pgd_l2(model, x, y, 0.3, steps=10, restarts=3, seed=5)
    assert bool((three.margins <= one.margins).all())
    targeted = pgd_l2(model, x, y, 0.3, steps=10, targets=2)
    assert bool((targeted.margins <= one.margins).all())  # targeted runs only add candidates
    assert torch.equal(three.margins, again.margins) and torch.equal(three.points, again.points)
    with torch.no_grad():
        clean = model(x)
    clean_margin = clean.gather(1, y[:, None])[:, 0] - clean.scatter(1, y[:, None], -math.inf).max(dim=1).values
    assert bool((one.margins <= clean_margin).all())  # never worse than the input itself


def _trained_resnet() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(512, 2, generator=generator)
    y = (x[:, 0] * x[:, 1] > 0).long()
    torch.manual_seed(0)
    model = lipschitz_resnet(2, 2, 16, 3)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(150):
        optimizer.zero_grad()
        nn.functional.cross_entropy(8.0 * model(x), y).backward()
        optimizer.step()
    return model.eval(), x, y


def test_certified_points_survive_the_attack_and_a_false_certificate_is_caught() -> None:
    model, x, y = _trained_resnet()
    radii = [0.05, 0.1, 0.3]
    row = certify(model, x, y, radii, ascent_steps=0, attack_points=300, attack_steps=40)
    assert row["attack_points"] == 300
    for eps in radii:
        assert row[f"attack_broken_{eps:g}"] == 0
        assert row[f"pgd_{eps:g}"] >= row[f"attack_certified_{eps:g}"]
    # the attack is real: it breaks points at the largest radius
    assert row["pgd_0.3"] < row["accuracy"]
    # a certificate that claims L far below the model's: the attack finds certified points it breaks
    with pytest.warns(UserWarning, match="below the model's measured lower bound"):
        false = certify(model, x, y, radii, ascent_steps=0, lipschitz=0.02, attack_points=300, attack_steps=40)
    assert false["attack_broken_0.3"] > 0


def test_no_attack_by_default_and_rows_capped_at_n() -> None:
    model, x, y = _trained_resnet()
    row = certify(model, x[:50], y[:50], [0.1], ascent_steps=0)
    assert not any(key.startswith(("pgd_", "attack_")) for key in row)
    row = certify(model, x[:50], y[:50], [0.1], ascent_steps=0, attack_points=10**6, attack_steps=2)
    assert row["attack_points"] == 50


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"eps": 0.0}, "`eps`"),
        ({"eps": math.nan}, "`eps`"),
        ({"steps": 0}, "`steps`"),
        ({"restarts": 0}, "`restarts`"),
        ({"targets": -1}, "`targets`"),
        ({"step_size": -1.0}, "`step_size`"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict[str, float], match: str) -> None:
    model = _linear(3, 2, 0)
    x = torch.zeros(4, 3, dtype=torch.float64)
    y = torch.zeros(4, dtype=torch.long)
    arguments = {"eps": 0.1, **kwargs}
    with pytest.raises(ValueError, match=match):
        pgd_l2(model, x, y, **arguments)  # type: ignore[arg-type]


def test_bad_labels_are_named() -> None:
    model = _linear(3, 2, 0)
    x = torch.zeros(4, 3, dtype=torch.float64)
    with pytest.raises(TypeError, match="`labels`"):
        pgd_l2(model, x, torch.zeros(4), 0.1)
    with pytest.raises(ValueError, match=r"`labels` must have shape \(4,\)"):
        pgd_l2(model, x, torch.zeros(3, dtype=torch.long), 0.1)
    with pytest.raises(ValueError, match=r"`labels` must be class indices in \[0, 1\], got 2"):
        pgd_l2(model, x, torch.full((4,), 2), 0.1)
    with pytest.raises(ValueError, match="`inputs` must be finite"):
        pgd_l2(model, torch.full((4, 3), math.nan, dtype=torch.float64), torch.zeros(4, dtype=torch.long), 0.1)
    model_x, x_, y_ = _trained_resnet()
    with pytest.raises(ValueError, match="`attack_steps`"):
        certify(model_x, x_[:5], y_[:5], [0.1], ascent_steps=0, attack_points=5, attack_steps=0)
    with pytest.raises(ValueError, match="`attack_points`"):
        certify(model_x, x_[:5], y_[:5], [0.1], ascent_steps=0, attack_points=-1)
    with pytest.raises(ValueError, match="`attack_targets`"):
        certify(model_x, x_[:5], y_[:5], [0.1], ascent_steps=0, attack_points=5, attack_targets=-1)


def test_odd_but_valid_calls_work_and_bad_ones_are_named() -> None:
    import numpy as np

    model = _linear(3, 2, 0)
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    with torch.no_grad():
        y = model(x).argmax(dim=1)
    by_tensor = pgd_l2(model, x, y, 0.1, steps=3)
    assert not by_tensor.points.requires_grad  # the inputs' graph is not carried along
    by_uint64 = pgd_l2(model, x, y.numpy().astype(np.uint64), 0.1, steps=3)
    assert torch.equal(by_uint64.margins, by_tensor.margins)
    with pytest.raises(TypeError, match="`labels`"):
        pgd_l2(model, x, np.array(["a", "b", "a", "b"]), 0.1)
    with pytest.raises(ValueError, match="`model` must map"):
        pgd_l2(lambda t: t.sum(), x, y, 0.1)
    with torch.inference_mode(), pytest.raises(RuntimeError, match="inference_mode"):
        pgd_l2(model, x.detach(), y, 0.1)


def test_a_one_logit_output_of_the_wrong_length_is_refused() -> None:
    x = torch.zeros(4, 3, dtype=torch.float64)
    with pytest.raises(ValueError, match="`model` must map"):
        pgd_l2(lambda t: t[:2, 0], x, torch.zeros(4, dtype=torch.long), 0.1)
