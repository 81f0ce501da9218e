"""Learning-rate schedules in `fit`: closed forms, warm-up, custom schedulers, any loss, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from structnets.models import mlp
from structnets.training import fit, seeded
from structnets.training.schedules import cosine_lr, warmup_cosine_lr

F64 = torch.float64


def _data(n: int = 40, d: int = 3):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    return X, np.sin(X[:, :1]) + X[:, 1:2] * X[:, 2:3]


def _model(seed: int = 0) -> nn.Module:
    with seeded(seed):
        return mlp(3, 1, 8, 2, dtype=F64)


class RecordingSGD(torch.optim.SGD):
    """Plain SGD that records the learning rate of every step (one parameter group)."""

    def __init__(self, params, lr: float = 0.1) -> None:
        super().__init__(params, lr=lr)
        self.seen: list[float] = []

    def step(self, closure=None):  # type: ignore[override]
        self.seen.append(self.param_groups[0]["lr"])
        return super().step(closure)


def _recorded(**kwargs) -> tuple[list[float], float]:
    opts: list[RecordingSGD] = []
    base = kwargs.pop("base", 0.1)

    def factory(params):
        opts.append(RecordingSGD(params, lr=base))
        return opts[-1]

    X, y = _data()
    fit(_model(), X, y, optimizer=factory, **kwargs)
    return opts[0].seen, opts[0].defaults["lr"]


def test_constant_is_the_default_and_never_changes_the_rate():
    seen, base = _recorded(epochs=3, batch_size=16)  # 40 rows: 3 steps per epoch
    assert seen == [base] * 9


def test_cosine_rates_equal_the_closed_form():
    seen, base = _recorded(epochs=4, batch_size=16, schedule="cosine", min_lr=0.01)
    T = 12
    assert len(seen) == T
    expected = [0.01 + (base - 0.01) * (1 + math.cos(math.pi * t / T)) / 2 for t in range(T)]
    assert seen == expected  # the same float operations: exact
    assert seen[0] == base and seen[T // 2] == pytest.approx(0.01 + (base - 0.01) / 2, rel=1e-15)
    assert all(a > b for a, b in zip(seen, seen[1:]))  # strictly decreasing towards min_lr
    # torch's recursive CosineAnnealingLR gives the same sequence up to rounding.
    param = nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=base)
    torch_sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=T, eta_min=0.01)
    theirs = []
    for _ in range(T):
        theirs.append(opt.param_groups[0]["lr"])
        opt.step()
        torch_sched.step()
    np.testing.assert_allclose(seen, theirs, rtol=1e-13)


@pytest.mark.parametrize("warmup", [{"warmup_epochs": 2}, {"warmup_steps": 6}])
def test_warmup_cosine_rises_linearly_then_anneals(warmup):
    seen, base = _recorded(epochs=5, batch_size=16, schedule="warmup_cosine", **warmup)
    T, W = 15, 6
    assert seen[:W] == [base * ((t + 1) / W) for t in range(W)]
    assert seen[W - 1] == base  # the peak is reached exactly at the end of the warm-up
    assert seen[W:] == [(base * (1 + math.cos(math.pi * (t - W) / (T - W)))) / 2 for t in range(W, T)]
    assert seen == [warmup_cosine_lr(t, T, W, base) for t in range(T)]


def test_warmup_over_every_step_is_a_linear_ramp():
    seen, base = _recorded(epochs=2, batch_size=40, schedule="warmup_cosine", warmup_steps=2)
    assert seen == [base / 2, base]


def test_cosine_lr_closed_form_values():
    assert cosine_lr(0, 10, 1.0) == 1.0
    assert cosine_lr(5, 10, 1.0, 0.2) == pytest.approx(0.6, abs=1e-15)
    assert cosine_lr(10, 10, 1.0, 0.2) == pytest.approx(0.2, abs=1e-15)


def _hand_loop(model, X, y, *, epochs, batch, seed, opt, after_step, loss_fn):
    """The loop `fit` documents: one seeded permutation per epoch, contiguous slices."""
    generator = torch.Generator().manual_seed(seed)
    n = len(X)
    for _ in range(epochs):
        perm = torch.randperm(n, generator=generator)
        for i in range(0, n, batch):
            idx = perm[i : i + batch]
            opt.zero_grad(set_to_none=True)
            loss_fn(model(X[idx]), y[idx]).backward()
            opt.step()
            after_step()


def _l1(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return (output - target).abs().mean()


def test_callable_scheduler_and_loss_equal_a_hand_written_loop():
    X, y = (torch.as_tensor(a) for a in _data())
    ours, theirs = _model(), _model()

    def step_lr(opt):
        return torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)

    fit(ours, X, y, loss=_l1, epochs=4, batch_size=16, lr=0.02, schedule=step_lr, seed=5)
    opt = torch.optim.Adam(theirs.parameters(), lr=0.02, fused=True)
    sched = step_lr(opt)
    _hand_loop(theirs, X, y, epochs=4, batch=16, seed=5, opt=opt, after_step=sched.step, loss_fn=_l1)
    assert opt.param_groups[0]["lr"] == 0.02 * 0.5**4  # 12 steps: halved four times
    for a, b in zip(ours.state_dict().values(), theirs.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_named_schedule_with_fast_adam_equals_public_adam_with_closed_form_rates():
    X, y = (torch.as_tensor(a) for a in _data())
    ours, theirs = _model(1), _model(1)
    fit(ours, X, y, epochs=3, batch_size=16, lr=0.05, schedule="warmup_cosine", warmup_steps=4, min_lr=1e-3, seed=2)
    opt = torch.optim.Adam(theirs.parameters(), lr=0.05, fused=True)
    step = [0]

    def set_next_rate():
        step[0] += 1
        opt.param_groups[0]["lr"] = warmup_cosine_lr(step[0], 9, 4, 0.05, 1e-3)

    opt.param_groups[0]["lr"] = warmup_cosine_lr(0, 9, 4, 0.05, 1e-3)
    _hand_loop(
        theirs, X, y, epochs=3, batch=16, seed=2, opt=opt, after_step=set_next_rate, loss_fn=nn.functional.mse_loss
    )
    for a, b in zip(ours.state_dict().values(), theirs.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_early_stopping_cuts_the_schedule_without_rescaling():
    # min_delta 1: no epoch after the first improves enough, so patience 1 stops after epoch 2;
    # the two rates are those of the planned T = 50 full-batch steps.
    seen, base = _recorded(epochs=50, batch_size=40, schedule="cosine", patience=1, min_delta=1.0)
    assert len(seen) == 2
    assert seen == [cosine_lr(t, 50, base) for t in range(len(seen))]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"schedule": "linear"}, ValueError, "`schedule` must be one of"),
        ({"schedule": 3}, TypeError, "`schedule` must be one of"),
        ({"schedule": "cosine", "warmup_epochs": 1}, ValueError, "`warmup_epochs`/`warmup_steps` apply only"),
        ({"warmup_steps": 2}, ValueError, "`warmup_epochs`/`warmup_steps` apply only"),
        ({"schedule": "warmup_cosine"}, ValueError, "exactly one of `warmup_epochs` and `warmup_steps`"),
        (
            {"schedule": "warmup_cosine", "warmup_epochs": 1, "warmup_steps": 1},
            ValueError,
            "exactly one of `warmup_epochs` and `warmup_steps`",
        ),
        ({"schedule": "warmup_cosine", "warmup_steps": 0}, ValueError, r"`warmup_steps` must be an int >= 1, got 0"),
        ({"schedule": "warmup_cosine", "warmup_epochs": 1.5}, TypeError, "`warmup_epochs` must be an int"),
        (
            {"schedule": "warmup_cosine", "warmup_steps": 10},
            ValueError,
            r"`warmup_steps` must give .* 9 planned .* got 10",
        ),
        ({"schedule": "warmup_cosine", "warmup_epochs": 4}, ValueError, r"`warmup_epochs` must give .* got 12 steps"),
        ({"schedule": "cosine", "min_lr": 0.5}, ValueError, r"`min_lr` must be <= `lr`=0.001, got 0.5"),
        ({"schedule": "cosine", "min_lr": -1.0}, ValueError, "`min_lr` must be a real number in"),
        ({"min_lr": 1e-4}, ValueError, "`min_lr` applies only to the cosine schedules"),
        ({"schedule": lambda opt: "not a scheduler"}, TypeError, "`schedule` factory must return"),
        (
            {"schedule": lambda opt: torch.optim.lr_scheduler.ReduceLROnPlateau(opt)},
            TypeError,
            "not ReduceLROnPlateau",
        ),
        (
            {
                "schedule": lambda opt: torch.optim.lr_scheduler.StepLR(
                    torch.optim.SGD([nn.Parameter(torch.ones(1))]), 1
                )
            },
            ValueError,
            "`schedule` factory must return a scheduler of the optimizer",
        ),
        ({"loss": lambda out, t: (out - t).abs()}, ValueError, r"`loss` must return a scalar .* got shape \(16, 1\)"),
        ({"loss": lambda out, t: 1.0}, ValueError, "`loss` must return a scalar .* got float"),
        ({"loss": lambda out, t: torch.zeros(())}, ValueError, "`loss` must return a tensor that depends"),
    ],
)
def test_bad_schedule_arguments_are_named(kwargs, error, match):
    X, y = _data()
    model = _model()
    before = [t.clone() for t in model.state_dict().values()]
    with pytest.raises(error, match=match):
        fit(model, X, y, epochs=3, batch_size=16, **kwargs)  # 3 steps per epoch, T = 9
    if "loss" not in kwargs:  # refused before any step
        assert all(torch.equal(a, b) for a, b in zip(before, model.state_dict().values(), strict=True))
