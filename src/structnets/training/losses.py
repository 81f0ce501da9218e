"""Loss functions by name, and the target dtype each expects.

Every loss is a mean over the batch, so the fit loop can weight minibatch losses by batch size
to report the epoch's per-sample average.

Besides the plain losses (:data:`LOSSES`), this module holds the margin-aware losses used to train
certified 1-Lipschitz classifiers (:data:`CERTIFIED_LOSSES`, built by :func:`certified_loss`). A
1-Lipschitz network certifies a point at ℓ₂ radius ε when its logit margin
z_y − max_{j≠y} z_j is at least √2·ε (Tsuzuku, Sato, Sugiyama, NeurIPS 2018), so these losses keep
pushing the margin up to a target m ≈ √2·ε instead of saturating once the point is classified.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch
from torch import nn

from .._validation import check_choice, check_real

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def mse(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean squared error ``(1 / (n·k)) Σᵢⱼ (outputᵢⱼ − targetᵢⱼ)²``.

    Args:
        output: (n, k) predictions.
        target: (n, k) targets, same shape as ``output`` (the fit loop reshapes a 1-D target to
            (n, 1) before calling; it never relies on broadcasting, which would silently compare
            every prediction with every target).

    Returns:
        a scalar tensor.
    """
    _check_tensors(output, target)
    if output.shape != target.shape:
        raise ValueError(
            f"`target` must have the shape of `output` {tuple(output.shape)} (no broadcasting), "
            f"got {tuple(target.shape)}"
        )
    return nn.functional.mse_loss(output, target)


def cross_entropy(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Softmax cross-entropy ``(1/n) Σᵢ [logsumexp(outputᵢ) − outputᵢ,targetᵢ]``.

    Args:
        output: (n, K) unnormalised logits.
        target: (n,) int64 class indices in [0, K).

    Returns:
        a scalar tensor.
    """
    _check_logits(output, target)
    if bool(((target < 0) | (target >= output.shape[1])).any()):
        raise ValueError(f"`target` must hold class indices in [0, {output.shape[1]}), got values outside")
    return nn.functional.cross_entropy(output, target)


LOSSES: dict[str, LossFn] = {"mse": mse, "cross_entropy": cross_entropy}
# The same losses without the argument checks, for the fit loop: it checks shapes, dtypes and
# label ranges once for the whole data set, so every step need not check its batch again.
_UNCHECKED: dict[str, LossFn] = {"mse": nn.functional.mse_loss, "cross_entropy": nn.functional.cross_entropy}

# How the fit loop must convert ``y`` for each named loss: class indices or real-valued targets.
TARGET_KIND: dict[str, str] = {"mse": "real", "cross_entropy": "index"}


def get_loss(name: str | LossFn) -> LossFn:
    """Return the loss function named ``name`` (one of :data:`LOSSES`), or ``name`` if callable.

    Args:
        name: ``"mse"``, ``"cross_entropy"`` or a callable ``(output, target) -> scalar``.

    Returns:
        the loss function.
    """
    if callable(name):
        return name
    check_choice("loss", name, tuple(LOSSES))
    return LOSSES[name]


# --------------------------------------------------------------------------------------------
# Margin-aware losses for certified (1-Lipschitz) classifiers


def _check_tensors(output: torch.Tensor, target: torch.Tensor) -> None:
    for name, value in (("output", output), ("target", target)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"`{name}` must be a torch.Tensor, got {type(value).__name__}")


def _check_logits(output: torch.Tensor, target: torch.Tensor) -> None:
    # only what holds for every batch (types, shapes, dtypes): these losses must run under vmap (train_ensemble)
    _check_tensors(output, target)
    if output.dim() != 2 or output.shape[1] < 2:
        raise ValueError(f"`output` must be (n, K) logits with K ≥ 2, got shape {tuple(output.shape)}")
    if target.dim() != 1 or target.shape[0] != output.shape[0]:
        raise ValueError(
            f"`target` must be (n,) class indices matching `output` {tuple(output.shape)}, got {tuple(target.shape)}"
        )
    if target.is_floating_point() or target.is_complex() or target.dtype == torch.bool:
        raise TypeError(f"`target` must hold integer class indices, got dtype {target.dtype}")


#: ``cross_entropy``'s ``ignore_index`` for the certified losses: no label may be skipped (torch's default, -100,
#: silently left those rows out of the mean), so a label outside [0, K) fails in torch's own check.
_NO_IGNORED_LABEL = -(2**63)


def scaled_cross_entropy(output: torch.Tensor, target: torch.Tensor, temperature: float = 4.0) -> torch.Tensor:
    """Cross-entropy on temperature-scaled logits, ``(1/n) Σᵢ CE(T·zᵢ, yᵢ)``.

    The loss structnets used before margin training ("old loss" in ``lipschitz-mnist``). A
    1-Lipschitz network's logits are small, and T trades accuracy against margin (Béthune et al.,
    *Pay attention to your loss: understanding misconceptions about 1-Lipschitz neural networks*,
    NeurIPS 2022), but nothing in it aims at a margin of √2·ε.

    Args:
        output: (n, K) logits z.
        target: (n,) int64 class indices y.
        temperature: T > 0.

    Returns:
        a scalar tensor.
    """
    temperature = check_real("temperature", temperature, low=0.0, low_open=True)
    _check_logits(output, target)
    return nn.functional.cross_entropy(temperature * output, target, ignore_index=_NO_IGNORED_LABEL)


def margin_cross_entropy(
    output: torch.Tensor, target: torch.Tensor, margin: float = 2.2, temperature: float = 4.0
) -> torch.Tensor:
    """Margin (offset) cross-entropy ``(1/n) Σᵢ CE(T·(zᵢ − m·e_{yᵢ}), yᵢ)``.

    Subtracting m from the true logit before the softmax makes the loss keep falling until the
    margin z_y − max_{j≠y} z_j exceeds m by a few 1/T: for a 1-Lipschitz model, m = √2·ε asks for
    certified radius ε (Tsuzuku, Sato, Sugiyama, *Lipschitz-margin training*, NeurIPS 2018; the
    "offset cross-entropy" of Prach & Lampert, *1-Lipschitz layers compared*, CVPR 2024). With
    m = 0 it is :func:`scaled_cross_entropy`.

    Per row: ℓ(z, y) = logsumexp_j(T·(z_j − m·[j = y])) − T·(z_y − m).

    Args:
        output: (n, K) logits z.
        target: (n,) int64 class indices y.
        margin: m ≥ 0 (default 2.2 ≈ √2·1.58, the MNIST radius of the published comparisons).
        temperature: T > 0 (1/T is the softness of the margin).

    Returns:
        a scalar tensor.
    """
    margin = check_real("margin", margin, low=0.0)
    temperature = check_real("temperature", temperature, low=0.0, low_open=True)
    _check_logits(output, target)
    shifted = output - margin * nn.functional.one_hot(target, output.shape[1]).to(output.dtype)
    return nn.functional.cross_entropy(temperature * shifted, target, ignore_index=_NO_IGNORED_LABEL)


def multiclass_hinge(output: torch.Tensor, target: torch.Tensor, margin: float = 2.2) -> torch.Tensor:
    """Multi-class (Crammer–Singer) hinge ``(1/n) Σᵢ max(0, m − (z_{i,yᵢ} − max_{j≠yᵢ} z_{ij}))``.

    Zero exactly when every point has margin ≥ m, i.e. (1-Lipschitz model) certified radius
    ≥ m/√2. Crammer & Singer, JMLR 2001; used with margin for GroupSort networks by Anil, Lucas,
    Grosse, *Sorting out Lipschitz function approximation*, ICML 2019.

    Args:
        output: (n, K) logits z.
        target: (n,) int64 class indices y.
        margin: m ≥ 0.

    Returns:
        a scalar tensor.
    """
    margin = check_real("margin", margin, low=0.0)
    _check_logits(output, target)
    true = output.gather(1, target[:, None])[:, 0]
    others = output.masked_fill(nn.functional.one_hot(target, output.shape[1]).bool(), -math.inf)
    return torch.relu(margin - (true - others.max(dim=1).values)).mean()


def hkr(output: torch.Tensor, target: torch.Tensor, margin: float = 2.2, alpha: float = 0.98) -> torch.Tensor:
    """Multi-class hinge-Kantorovich–Rubinstein loss ``α·H_m(z, y) − (1 − α)·KR(z, y)``, α ∈ [0, 1].

    As deel-lip / deel-torchlip's ``HKRMulticlassLoss`` (Serrurier, Mamalet, González-Sanz,
    Boissin, Loubes, del Barrio, *Achieving robustness in classification using optimal transport
    with hinge regularization*, CVPR 2021), with s_{ik} = +1 if k = yᵢ else −1:

    * H_m = (1/n) Σᵢ (1/K) Σ_k w_{ik}·max(0, m/2 − s_{ik} z_{ik}), w = K − 1 on the true class
      and 1 elsewhere (each class is a one-vs-rest hinge with margin m/2 on either side, so the
      gap z_y − z_j is pushed to m);
    * KR = (1/K) Σ_k [mean_{i: yᵢ = k} z_{ik} − mean_{i: yᵢ ≠ k} z_{ik}], the dual estimate of the
      Wasserstein-1 distance between class k and the rest (classes absent from the batch, or
      present in every row, contribute 0).

    Args:
        output: (n, K) logits z.
        target: (n,) int64 class indices y.
        margin: m ≥ 0.
        alpha: α in [0, 1]: weight of the hinge (α = 1: hinge only; α = 0: KR only).

    Returns:
        a scalar tensor.
    """
    margin = check_real("margin", margin, low=0.0)
    alpha = check_real("alpha", alpha, low=0.0, high=1.0)
    _check_logits(output, target)
    k = output.shape[1]
    onehot = nn.functional.one_hot(target, k).to(output.dtype)
    sign = 2.0 * onehot - 1.0
    weight = 1.0 + (k - 2.0) * onehot
    hinge = (weight * torch.relu(margin / 2.0 - sign * output)).mean()
    positives = onehot.sum(0)
    negatives = output.shape[0] - positives
    mean_pos = (output * onehot).sum(0) / positives.clamp_min(1.0)
    mean_neg = (output * (1.0 - onehot)).sum(0) / negatives.clamp_min(1.0)
    present = (positives > 0) & (negatives > 0)
    kr = torch.where(present, mean_pos - mean_neg, torch.zeros_like(mean_pos)).mean()
    return alpha * hinge - (1.0 - alpha) * kr


CERTIFIED_LOSSES: tuple[str, ...] = ("margin-ce", "scaled-ce", "hinge", "hkr")


def certified_loss(
    name: str | LossFn = "margin-ce",
    *,
    margin: float = 2.2,
    temperature: float = 4.0,
    alpha: float = 0.98,
) -> LossFn:
    """Return the certified-training loss ``name`` with its options bound, or ``name`` if callable.

    Args:
        name: one of :data:`CERTIFIED_LOSSES` — ``"margin-ce"`` (:func:`margin_cross_entropy`,
            the default for constrained models), ``"scaled-ce"`` (:func:`scaled_cross_entropy`,
            the old loss), ``"hinge"`` (:func:`multiclass_hinge`), ``"hkr"`` (:func:`hkr`) — or any
            callable ``(logits, target) -> scalar``, returned as is.
        margin: m ≥ 0 (margin-ce, hinge, hkr).
        temperature: T > 0 (margin-ce, scaled-ce).
        alpha: α ∈ [0, 1] (hkr).

    Returns:
        a function ``(logits (n, K), target (n,)) -> scalar``.

    Raises:
        ValueError: unknown ``name`` (the message lists the valid ones), ``margin < 0``,
            ``temperature ≤ 0`` or ``alpha`` outside [0, 1], each naming the argument.
    """
    margin = check_real("margin", margin, low=0.0)
    temperature = check_real("temperature", temperature, low=0.0, low_open=True)
    alpha = check_real("alpha", alpha, low=0.0, high=1.0)
    if callable(name):
        return name
    check_choice("loss", name, CERTIFIED_LOSSES)
    if name == "margin-ce":
        return functools.partial(margin_cross_entropy, margin=margin, temperature=temperature)
    if name == "scaled-ce":
        return functools.partial(scaled_cross_entropy, temperature=temperature)
    if name == "hinge":
        return functools.partial(multiclass_hinge, margin=margin)
    return functools.partial(hkr, margin=margin, alpha=alpha)
