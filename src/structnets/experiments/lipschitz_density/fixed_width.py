"""Training of the width-(d + 3) networks of ``lipschitz-density``, all seeds at once, and their errors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch


def fit_fixed_width(
    target: Callable[[np.ndarray], np.ndarray],
    dim: int,
    depth: int,
    *,
    width: int | None = None,
    seeds: Sequence[int] = (0,),
    steps: int = 1000,
    lr: float = 1e-2,
    train_per_axis: int = 65,
    step: float = 1.0,
    low: float = -1.0,
    high: float = 1.0,
    device: str = "cpu",
    variant: str = "fixed-width",
) -> list[Any]:
    """Train ``lipschitz_resnet(dim, 1, width, depth, variant="fixed-width")`` on ``target``, one per seed.

    Full-batch Adam with the cosine schedule η_t = η(1 + cos(πt/T))/2 (one call of
    :func:`structnets.training.fit`, ``schedule="cosine"``) on the mean squared error at the tensor
    grid of ``train_per_axis``ᵈ points of [low, high]ᵈ, all seeds at once: the seeds' parameters
    are stacked into one seed-batched module with the library's parametrisation (lift/head/between
    maps A = V / max(1, ‖V‖₂); blocks x − τWᵀReLU(Wx + b), τ = 2·sigmoid(θ)/‖W‖₂², ‖·‖₂ from
    ``svdvals``), float64, and the loss is Σ_s MSE_s, so each seed trains as it would alone. The
    trained parameters are loaded into library models (which compute τ and A from a certified
    B ≥ ‖·‖₂ in eval mode), so what is returned is certified 1-Lipschitz.

    The library models themselves under :func:`structnets.training.train_ensemble` train the same
    networks, but took 4.6–5.0× the CPU time (depths 4 and 16, three seeds) and differentiate
    ‖·‖₂ at the identity-initialised maps' repeated singular values differently (``svdvals``'
    gradient is stable there), so the stacked module stays.

    Args:
        target: callable (n, dim) float64 array → (n,) array, finite on [low, high]ᵈ.
        dim: input dimension d ≥ 1.
        depth: residual blocks L ≥ 1.
        width: residual width ≥ 1; None is the theorem's d + 3 (Murari, Furuya, Schönlieb, Thm. 4.1).
        seeds: initialisation seeds (non-empty); model i is built under ``seeded(seeds[i])``.
        steps, lr: Adam steps (≥ 1) and initial learning rate (> 0).
        train_per_axis: grid points per axis (≥ 2).
        step: initial s ∈ (0, 2) of every block's learnable τ = s/‖W‖₂² (s = 2 is the reflection
            the paper's max/min units use; s = 1 projects the slope out along W where ReLU is on).
        low, high: the domain.
        device: where the training runs (``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"``). The
            models are built on the CPU from their seeds and the seed-batched module moves to the
            device; the trained weights are loaded back into the CPU models.
        variant: ``"fixed-width"`` (Theorem 4.1: norm-constrained affine maps between the blocks) or
            ``"gradient-step"`` (Theorem 3.1's family G_{d,σ}: lift Q, blocks, head v, no maps between;
            ``width`` must be given), trained the same way.

    Returns:
        one float64 ``nn.Sequential`` per seed, on the CPU, in eval mode.

    Raises:
        ValueError: naming the argument (``target`` not callable or not finite on the domain,
            ``depth``/``width``/``steps`` < 1, empty ``seeds``, ...).
    """
    import torch

    from ..._validation import check_int, check_real
    from ...constructive.lipschitz_targets import check_domain, check_target, grid_points
    from ...models import lipschitz_resnet
    from ...training import fit
    from ...training.device import check_device, unit_device
    from ...training.fit import seeded

    dim = _check_positive_int("dim", dim)
    depth = _check_positive_int("depth", depth)
    if variant not in _VARIANTS:
        raise ValueError(f"`variant` must be one of {list(_VARIANTS)}, got {variant!r}")
    if width is not None:
        width = _check_positive_int("width", width)
    elif variant == "gradient-step":
        raise ValueError("`width` must be given (an int ≥ 1) for variant='gradient-step', got None")
    low, high = check_domain(low, high)
    check_target(target, dim, low, high)
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence) or len(seeds) == 0:
        raise ValueError(f"`seeds` must be a non-empty sequence of ints ≥ 0, got {seeds!r}")
    seeds = [check_int("seeds", s, low=0) for s in seeds]
    steps = _check_positive_int("steps", steps)
    lr = check_real("lr", lr, low=0.0, low_open=True)
    train_per_axis = check_int("train_per_axis", train_per_axis, low=2)
    step = check_real("step", step, low=0.0, high=2.0, low_open=True, high_open=True)
    device = unit_device({"device": check_device(device)})

    x_np = grid_points(dim, train_per_axis, low, high)
    y_np = np.asarray(target(x_np), dtype=np.float64).reshape(-1)
    if y_np.size != len(x_np) or not np.isfinite(y_np).all():
        raise ValueError(
            f"`target` must give one finite value per training point ({len(x_np)} points of "
            f"[{low}, {high}]^{dim}), got shape {y_np.shape} with non-finite: {not np.isfinite(y_np).all()}"
        )
    models = []
    for seed in seeds:
        with seeded(seed):
            models.append(lipschitz_resnet(dim, 1, width, depth, variant=variant, step=step, dtype=torch.float64))
    between = variant == "fixed-width"
    # Built on the CPU under the seeds, then moved: the same start on every device.
    batched = _SeedBatched(_stack(models, depth, between)).to(device)
    # Sum over seeds of each seed's mean squared error: seed s's gradient is its own MSE gradient
    # and Adam is elementwise, so every seed trains exactly as it would alone.
    fit(
        batched, torch.tensor(x_np), torch.tensor(y_np), loss=_summed_mse, epochs=steps, batch_size=None, lr=lr,
        schedule="cosine",
    )  # fmt: skip
    params = {k: v.detach().cpu() for k, v in batched.params.items()}
    _unstack(params, models, depth, between)
    for model in models:
        model.eval()
    return models


_VARIANTS = ("fixed-width", "gradient-step")


def _check_positive_int(name: str, value: Any) -> int:
    """check_int with low=1, but a wrong type is a ValueError too (the argument is named either way)."""
    from ..._validation import check_int

    try:
        return check_int(name, value, low=1)
    except TypeError as error:
        raise ValueError(str(error)) from None


def _stack(models: list[Any], depth: int, between: bool = True) -> dict[str, Any]:
    """Stack the seeds' parameters: lift (B, w, d), blocks (B, L, ·), between maps (B, L, w, w) when
    ``between`` (the fixed-width layout lift, (block, map) × L, head; else lift, block × L, head), head."""
    import torch

    states = [m.state_dict() for m in models]

    def stack(keys: list[str]) -> torch.Tensor:
        return torch.stack([torch.stack([s[k] for k in keys]) for s in states]).clone().requires_grad_(True)

    blocks, maps, head = _layout(depth, between)
    out = {
        "lift_V": stack(["0.raw_weight"])[:, 0].detach().requires_grad_(True),
        "lift_b": stack(["0.bias"])[:, 0].detach().requires_grad_(True),
        "W": stack([f"{i}.weight" for i in blocks]),
        "b": stack([f"{i}.bias" for i in blocks]),
        "theta": stack([f"{i}.step_logit" for i in blocks]),
    }
    if between:
        out["A_V"] = stack([f"{i}.raw_weight" for i in maps])
        out["A_b"] = stack([f"{i}.bias" for i in maps])
    out["head_V"] = stack([f"{head}.raw_weight"])[:, 0].detach().requires_grad_(True)
    out["head_b"] = stack([f"{head}.bias"])[:, 0].detach().requires_grad_(True)
    return out


def _layout(depth: int, between: bool) -> tuple[list[int], list[int], int]:
    """Indices of the blocks, of the maps between them and of the head in the ``nn.Sequential``."""
    if between:
        return [2 * i + 1 for i in range(depth)], [2 * i + 2 for i in range(depth)], 2 * depth + 1
    return [i + 1 for i in range(depth)], [], depth + 1


class _SeedBatched(torch.nn.Module):
    """The S seeds' fixed-width networks as one module: (n, d) → (n, S), from stacked parameters."""

    def __init__(self, params: dict[str, torch.Tensor]) -> None:
        super().__init__()
        self.params = torch.nn.ParameterDict({k: torch.nn.Parameter(v.detach()) for k, v in params.items()})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seeds = self.params["W"].shape[0]
        # (S, n) from the batched forward, handed out as its transpose (n, S): the loss takes the
        # transpose back, so it reduces the same contiguous (S, n) tensor.
        return _batched_forward(dict(self.params), x.expand(seeds, -1, -1)).transpose(0, 1)


def _summed_mse(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Σ_s mean_i (f_s(x_i) − y_i)² for ``output`` (n, S) and ``target`` (n,)."""
    return ((output.transpose(0, 1) - target) ** 2).mean(dim=1).sum()


def _unstack(params: dict[str, Any], models: list[Any], depth: int, between: bool = True) -> None:
    import torch

    blocks, maps, head = _layout(depth, between)
    with torch.no_grad():
        for n, model in enumerate(models):
            state = model.state_dict()
            state["0.raw_weight"] = params["lift_V"][n]
            state["0.bias"] = params["lift_b"][n]
            for i, index in enumerate(blocks):
                state[f"{index}.weight"] = params["W"][n, i]
                state[f"{index}.bias"] = params["b"][n, i]
                state[f"{index}.step_logit"] = params["theta"][n, i]
            for i, index in enumerate(maps):
                state[f"{index}.raw_weight"] = params["A_V"][n, i]
                state[f"{index}.bias"] = params["A_b"][n, i]
            state[f"{head}.raw_weight"] = params["head_V"][n]
            state[f"{head}.bias"] = params["head_b"][n]
            model.load_state_dict({k: v.detach().clone() for k, v in state.items()})


def _batched_forward(params: dict[str, Any], x: Any) -> Any:
    """(B, n, d) → (B, n): the network of each of B parameter sets (see :func:`fit_fixed_width`); the maps
    between the blocks only where ``params`` has them (``"A_V"``: the fixed-width variant)."""
    import torch

    def constrained(V: torch.Tensor) -> torch.Tensor:
        # svdvals' gradient is stable even at repeated singular values (identity-initialised maps).
        return V / torch.linalg.svdvals(V)[..., :1, None].clamp_min(1.0)

    lift = constrained(params["lift_V"])
    between = constrained(params["A_V"]) if "A_V" in params else None
    head = constrained(params["head_V"])
    W = params["W"]
    tau = 2.0 * torch.sigmoid(params["theta"]) / torch.linalg.svdvals(W)[..., 0] ** 2  # (B, L)
    outer = W.transpose(-1, -2) * -tau[..., None, None]  # (B, L, w, h)
    # Points along the last axis, (B, w, n): the tiny (w × w) matmuls run faster this way round.
    h = lift @ x.transpose(-1, -2) + params["lift_b"][..., None]
    for i in range(W.shape[1]):
        z = torch.relu(W[:, i] @ h + params["b"][:, i, :, None])
        h = h + outer[:, i] @ z
        if between is not None:
            h = between[:, i] @ h + params["A_b"][:, i, :, None]
    return (head @ h + params["head_b"][..., None])[:, 0, :]


def fit_errors(model: Any, target: Any, points: np.ndarray) -> tuple[float, float, np.ndarray]:
    """Sup error, RMSE and outputs of ``model`` against ``target`` at (n, d) ``points`` (float64)."""
    import torch

    with torch.no_grad():
        out = model(torch.tensor(points, dtype=torch.float64))[..., 0].numpy()
    err = out - np.asarray(target(points), dtype=np.float64)
    return float(np.abs(err).max()), float(np.sqrt(np.mean(err**2))), out


__all__ = ["fit_errors", "fit_fixed_width"]
