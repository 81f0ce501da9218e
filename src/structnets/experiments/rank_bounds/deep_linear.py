"""``rank-bounds`` deep linear units: weight decay drives ``Σ‖W_i‖_F²`` to ``L‖ΠW_i‖_{S_{2/L}}^{2/L}``."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...protocol import JSONScalar

if TYPE_CHECKING:
    import torch
    from torch import nn


def _objective(
    model: nn.Sequential, layers: list[nn.Linear], X: torch.Tensor, Y: torch.Tensor, weight_decay: float
) -> tuple[float, float]:
    """``(loss, ‖∇ (loss + (λ/2) Σ‖W_i‖_F²)‖)`` at the current weights, ``loss = (1/2n)‖f(X) − Y‖_F²``."""
    model.zero_grad(set_to_none=True)
    loss = _half_squared_error(model(X), Y)
    penalty = 0.5 * weight_decay * sum(layer.weight.square().sum() for layer in layers)
    (loss + penalty).backward()
    grads = [layer.weight.grad for layer in layers]
    norm = math.sqrt(sum(float(grad.square().sum()) for grad in grads if grad is not None))
    model.zero_grad(set_to_none=True)
    return float(loss.detach()), norm


def _half_squared_error(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``(1/2n) ‖output − target‖_F²`` over a batch of n rows."""
    return 0.5 * (output - target).square().sum() / output.shape[0]


def train_deep_linear(
    depth: int,
    width: int,
    weight_decay: float,
    *,
    steps: int,
    lr: float,
    seed: int = 0,
    n: int = 256,
    record: int = 10,
) -> dict[str, Any]:
    """Full-batch gradient descent, in float64, on a deep linear network with weight decay.

    Minimises ``(1/2n) ‖X W_1ᵀ ⋯ W_Lᵀ − Y‖_F² + (λ/2) Σ_i ‖W_i‖_F²`` for a synthetic regression
    ``Y = X Tᵀ + 0.1·noise`` with a rank-3 teacher T (singular values 3, 2, 1), ``X`` (n × width)
    Gaussian, W_i (width × width) Gaussian with variance 1/width, by plain full-batch gradient
    descent ``W_i ← W_i − η(∇_i loss + λ W_i)``
    (:func:`structnets.training.linear_gd.deep_linear_gradient_descent`, through XᵀX/n and YᵀX/n;
    the update of :func:`structnets.training.fit` with ``batch_size=None`` and
    ``torch.optim.SGD(lr, weight_decay)``, to rounding, ×20–60 faster). At any critical point ``W_{i+1}ᵀ W_{i+1} = W_i W_iᵀ`` (balance),
    hence every W_i has the singular values ``σ_j(Π W)^{1/L}`` and
    ``Σ_i ‖W_i‖_F² = L ‖Π W_i‖_{S_{2/L}}^{2/L}`` exactly; along gradient flow the imbalance
    ``D_i = W_{i+1}ᵀW_{i+1} − W_iW_iᵀ`` obeys ``Ḋ_i = −2λ D_i`` whatever the loss (Arora, Cohen,
    Hazan 2018, Thm 1, with the weight-decay term added), so with λ > 0 the ratio tends to 1, and
    with λ = 0 the initial imbalance is conserved (Ledent, Alves and Lei, NeurIPS 2025, Sec. 1).

    Args:
        depth: number of weight matrices L (≥ 2).
        width: input, hidden and output dimension.
        weight_decay: λ ≥ 0.
        steps: gradient steps (one full-batch epoch each).
        lr: step size η > 0.
        seed: seeds the teacher, the data and the initial weights.
        n: number of samples.
        record: how many times (evenly spaced steps, the last included) the ratio is recorded.

    Returns:
        a dict: ``ratio`` (final Σ‖W_i‖_F² / (L‖ΠW_i‖_{S_{2/L}}^{2/L})), ``ratio_init``,
        ``ratio_history`` (list of (step, ratio)), ``imbalance`` and ``imbalance_init``
        (max_i ‖D_i‖_F / ‖W_iW_iᵀ‖_F), ``flow_factor`` ((1 − ηλ)^{2·steps}, the decay of D
        predicted for gradient descent up to O(η²)), ``loss``, ``gradient_norm`` (of the
        regularised objective at the end), ``end_to_end_rank`` (#σ > 10⁻²σ_1), ``matrices``.
    """
    import torch
    from torch import nn

    from ...analysis import numerical_rank
    from ...analysis.balance import end_to_end, frobenius_sum, imbalance, schatten_end_to_end
    from ...training.fit import seeded
    from ...training.linear_gd import deep_linear_gradient_descent

    f64 = torch.float64
    g = torch.Generator().manual_seed(seed)
    left, _ = torch.linalg.qr(torch.randn(width, width, generator=g, dtype=f64))
    right, _ = torch.linalg.qr(torch.randn(width, width, generator=g, dtype=f64))
    teacher = left[:, :3] @ torch.diag(torch.tensor([3.0, 2.0, 1.0], dtype=f64)) @ right[:, :3].T
    X = torch.randn(n, width, generator=g, dtype=f64)
    Y = X @ teacher.T + 0.1 * torch.randn(n, width, generator=g, dtype=f64)
    initial = [torch.randn(width, width, generator=g, dtype=f64) / math.sqrt(width) for _ in range(depth)]
    with seeded(seed):  # nn.Linear draws an initialisation that is overwritten; keep the caller's RNG
        layers = [nn.Linear(width, width, bias=False, dtype=f64) for _ in range(depth)]
    model = nn.Sequential(*layers)
    with torch.no_grad():
        for layer, weight in zip(layers, initial, strict=True):
            layer.weight.copy_(weight)

    def weights() -> list[torch.Tensor]:
        return [layer.weight.detach() for layer in layers]

    def ratio(matrices: list[torch.Tensor]) -> float:
        return frobenius_sum(matrices) / schatten_end_to_end(matrices)

    ratio_init, imbalance_init = ratio(weights()), imbalance(weights())
    history = [(0, ratio_init)]
    marks = {mark for j in range(record) if (mark := round(steps * (j + 1) / record)) >= 1}

    def callback(step: int, current: list[torch.Tensor]) -> None:
        history.append((step, ratio(current)))

    trained = deep_linear_gradient_descent(
        weights(), X, Y, steps=steps, lr=lr, weight_decay=weight_decay, callback=callback, callback_steps=marks
    )
    with torch.no_grad():
        for layer, weight in zip(layers, trained, strict=True):
            layer.weight.copy_(weight)
    loss, gradient_norm = _objective(model, layers, X, Y, weight_decay)
    return {
        "ratio": ratio(weights()),
        "ratio_init": ratio_init,
        "ratio_history": history,
        "imbalance": imbalance(weights()),
        "imbalance_init": imbalance_init,
        "flow_factor": (1.0 - lr * weight_decay) ** (2 * steps),
        "loss": loss,
        "gradient_norm": gradient_norm,
        "end_to_end_rank": int(numerical_rank(end_to_end(weights()), rtol=1e-2)),
        "matrices": [w.clone() for w in weights()],
    }


def _run_linear_unit(params: Mapping[str, Any]) -> dict[str, JSONScalar]:
    """One deep linear unit: train, then record the ratio, the imbalance and their histories."""
    start = time.perf_counter()
    depth, decay = int(params["depth"]), float(params["weight_decay"])
    out = train_deep_linear(
        depth, int(params["width"]), decay, steps=int(params["steps"]), lr=float(params["lr"]), seed=int(params["seed"])
    )
    return {
        "dataset": "synthetic-rank3",
        "variant": "deep-linear",
        "depth": depth,
        "width": int(params["width"]),
        "weight_decay": decay,
        "seed": int(params["seed"]),
        "steps": int(params["steps"]),
        "linear_ratio": out["ratio"],
        "linear_ratio_init": out["ratio_init"],
        "linear_ratio_history": json.dumps(out["ratio_history"]),
        "imbalance": out["imbalance"],
        "imbalance_init": out["imbalance_init"],
        "flow_factor": out["flow_factor"],
        "train_loss": out["loss"],
        "gradient_norm": out["gradient_norm"],
        "end_to_end_rank": out["end_to_end_rank"],
        "seconds": time.perf_counter() - start,
    }
