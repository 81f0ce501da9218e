"""Adversarial review (s10) of the training loop: Adam fast path, checkpoints, schedules, trainers, losses."""

from __future__ import annotations

import torch
from torch import nn

from structnets.training import _adam, fit, seeded
from structnets.training._adam import FusedAdam


class _SometimesUsed(nn.Module):
    """A layer whose second parameter enters the output on every other call only (as in stochastic depth)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 2)
        self.extra = nn.Parameter(torch.zeros(2))
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        out = self.linear(x)
        return out + self.extra if self.calls % 2 == 0 else out


def test_fused_adam_counts_each_parameters_own_steps_like_torch():
    """A parameter without a gradient at a step keeps its step count in torch.optim; the fast path shared one count.

    After 6 steps, with the second parameter stepped at steps 0, 2, 4, 5, it differed from
    ``torch.optim.Adam(fused=True)`` by 3.8e-3 (float32): its bias correction used the shared count.
    """
    for dtype in (torch.float32, torch.float64):
        for decoupled in (False, True):
            generator = torch.Generator().manual_seed(0)
            start = [
                torch.randn(4, 3, generator=generator, dtype=dtype),
                torch.randn(3, generator=generator, dtype=dtype),
            ]
            ours = [nn.Parameter(t.clone()) for t in start]
            theirs = [nn.Parameter(t.clone()) for t in start]
            fast = FusedAdam(ours, lr=1e-2, weight_decay=0.05, decoupled=decoupled)
            reference = (torch.optim.AdamW if decoupled else torch.optim.Adam)(
                theirs, lr=1e-2, weight_decay=0.05, fused=True
            )
            for step in range(8):
                grads = [
                    torch.randn(4, 3, generator=generator, dtype=dtype),
                    torch.randn(3, generator=generator, dtype=dtype),
                ]
                for params in (ours, theirs):
                    params[0].grad = grads[0].clone()
                    params[1].grad = grads[1].clone() if step in (0, 2, 4, 5) else None
                fast.step()
                reference.step()
                for a, b in zip(ours, theirs, strict=True):
                    assert torch.equal(a, b), (dtype, decoupled, step)


def test_fit_fast_adam_equals_public_adam_when_a_parameter_sits_out(monkeypatch):
    X = torch.randn(24, 4, generator=torch.Generator().manual_seed(1))
    y = torch.randn(24, 2, generator=torch.Generator().manual_seed(2))
    models = []
    for fast in (True, False):
        monkeypatch.setattr(_adam, "USE_FAST_ADAM", fast)
        with seeded(0):
            model = _SometimesUsed()
        fit(model, X, y, epochs=3, batch_size=8, lr=1e-2, seed=0)
        models.append(model)
    for a, b in zip(models[0].state_dict().values(), models[1].state_dict().values(), strict=True):
        assert torch.equal(a, b)
