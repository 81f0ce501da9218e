"""Each linear layer of a model as one dense matrix, in forward order, and the layers' outputs.

docs/design.md, convention 4: every structured layer can return its dense matrix, and analysis tools
work on that matrix. A layer with a ``to_dense()`` method (``LowRankLinear``: ``U V``; later
``DLoRLinear``: ``αI + UVᵀ``, ``NormConstrainedLinear``) gives it; ``nn.Linear`` gives ``weight``.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import nn

__all__ = ["dense_matrices", "factor_ranks", "hidden_representations", "linear_layers", "stored_parameters"]


def _is_linear(module: nn.Module) -> bool:
    return isinstance(module, nn.Linear) or callable(getattr(module, "to_dense", None))


def _walk(module: nn.Module, prefix: str) -> Iterator[tuple[str, nn.Module]]:
    """Linear layers in registration (= forward, for ``nn.Sequential``) order, pre-order."""
    if _is_linear(module):
        yield prefix, module
        return  # its factors (U, V, ...) are inside the dense matrix already
    own = [(name, param) for name, param in module.named_parameters(recurse=False) if param.numel() > 1]
    if own:
        # A module holding matrices we do not know how to read: refuse rather than drop a layer
        # and silently under-count the network (a bound on the wrong network is worse than none).
        names = ", ".join(f"{name}{tuple(param.shape)}" for name, param in own)
        raise TypeError(
            f"module {prefix or '<root>'!r} ({type(module).__name__}) has parameters {names} but is "
            "neither nn.Linear nor a layer with to_dense(); dense_matrices cannot read it"
        )
    # _modules, not named_children(): that drops a module registered twice (nn.Sequential(l, σ, l)
    # applies l twice), and the chain would miss a layer
    for name, child in module._modules.items():
        if child is not None:
            yield from _walk(child, f"{prefix}.{name}" if prefix else name)


def linear_layers(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """The ``(qualified name, module)`` of every linear layer of ``model``, in order.

    Args:
        model: any ``nn.Module`` built from ``nn.Linear``, layers with ``to_dense()``, and
            parameter-free or scalar-parameter modules (activations such as a learnable Swish β).

    Returns:
        a list, possibly empty; a layer registered at several places (one ``nn.Linear`` applied
        twice in an ``nn.Sequential``) appears at each of them.

    Raises:
        TypeError: ``model`` is not a module, or holds a matrix-valued parameter in a module that
            is neither ``nn.Linear`` nor has ``to_dense()`` (e.g. ``nn.Conv2d``).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be a torch.nn.Module, got {type(model).__name__}")
    return list(_walk(model, ""))


def dense_matrices(model: nn.Module) -> list[torch.Tensor]:
    """Each linear layer's ``(out_features, in_features)`` matrix ``A_i``, in forward order.

    For ``f(x) = A_L σ(A_{L−1} σ(⋯ σ(A_1 x)))`` (plus biases) this returns ``[A_1, …, A_L]``,
    detached copies that share no memory with the parameters. Order is module registration
    order, which is the forward order for ``nn.Sequential`` and for :func:`structnets.models.mlp`.
    Parameter-free modules are skipped: activations, and fixed maps such as the ``ZeroPad`` /
    ``TakeFirst`` ends of ``dlor_mlp``. A norm-1 fixed embedding or coordinate projection leaves
    the bounds of :mod:`structnets.analysis.bounds` valid (input norms are kept, output
    differences can only shrink), but the list is then not the full end-to-end factorisation.

    Args:
        model: see :func:`linear_layers`.

    Returns:
        a list of 2-D tensors, in the parameters' dtype and device.
    """
    matrices: list[torch.Tensor] = []
    with torch.no_grad():
        for name, layer in linear_layers(model):
            matrix = layer.weight if isinstance(layer, nn.Linear) else _to_dense(layer)
            if not isinstance(matrix, torch.Tensor) or matrix.ndim != 2:
                raise TypeError(
                    f"layer {name!r} ({type(layer).__name__}) must give a 2-D matrix, got "
                    f"{getattr(matrix, 'shape', type(matrix).__name__)}"
                )
            matrices.append(matrix.detach().clone())
    return matrices


def factor_ranks(model: nn.Module) -> list[int | None]:
    """For each matrix of :func:`dense_matrices`, the inner rank r if the layer *stores* it as a
    product of two factors, else None.

    A :class:`structnets.nn.LowRankLinear` stores ``A = U V`` with ``U`` of shape
    ``(out_features, rank)`` and ``V`` of shape ``(rank, in_features)``: ``rank · (in + out)``
    weights instead of ``in · out``. Pass the result as ``factor_ranks`` to
    :func:`structnets.analysis.parameter_count_bound` to count the parameters the network
    actually has (docs/bounds.md, eq. 4.1f). Other layers (``nn.Linear``, DLoR ``αI + UVᵀ``,
    norm-constrained maps) give None.

    Args:
        model: see :func:`linear_layers`.

    Returns:
        a list aligned with :func:`dense_matrices` (same length and order).
    """
    from ..nn import LowRankLinear

    return [int(layer.rank) if isinstance(layer, LowRankLinear) else None for _, layer in linear_layers(model)]


def stored_parameters(model: nn.Module) -> int:
    """Number of scalars the model stores in its parameters (factors and biases included).

    For a bias-free MLP whose hidden layers are rank-r factorisations of width W this is
    ``Σ_i r (m_i + n_i)`` for those layers plus ``m n`` for the dense ones: e.g. ``2 W r`` per
    W × W factorised layer, against the ``W²`` of its dense matrix.

    Args:
        model: any ``nn.Module``.

    Returns:
        ``Σ_p p.numel()`` over ``model.parameters()`` (shared parameters counted once).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be a torch.nn.Module, got {type(model).__name__}")
    return int(sum(p.numel() for p in model.parameters()))


def hidden_representations(model: nn.Sequential, inputs: torch.Tensor) -> list[torch.Tensor]:
    """The output of every nonlinearity of a sequential model on ``inputs``.

    For ``nn.Sequential(Linear, σ, Linear, σ, …, Linear)`` these are the hidden layers'
    activations ``h_i = σ(A_i h_{i−1} + b_i)``, i = 1 … L−1, the matrices whose rank is the
    bottleneck rank (:func:`structnets.analysis.bottleneck_rank`).

    Args:
        model: an ``nn.Sequential``; the outputs recorded are those of its children that are
            not linear layers.
        inputs: ``(N, in_features)`` tensor.

    Returns:
        a list of ``(N, W_i)`` tensors, computed under ``torch.no_grad``.
    """
    if not isinstance(model, nn.Sequential):
        raise TypeError(f"`model` must be a torch.nn.Sequential, got {type(model).__name__}")
    if not isinstance(inputs, torch.Tensor) or inputs.ndim != 2:
        raise ValueError(
            f"`inputs` must be a 2-D (N, in_features) tensor, got {getattr(inputs, 'shape', type(inputs).__name__)}"
        )
    outputs: list[torch.Tensor] = []
    with torch.no_grad():
        hidden = inputs
        for index, child in enumerate(model):
            try:
                hidden = child(hidden)
            except RuntimeError as error:  # a shape or dtype the model cannot take
                raise ValueError(
                    f"`inputs` of shape {tuple(inputs.shape)} and dtype {inputs.dtype} cannot pass layer {index} "
                    f"({type(child).__name__}) of `model`: {error}"
                ) from None
            if not _is_linear(child) and not isinstance(child, nn.Sequential):
                outputs.append(hidden)
    return outputs


def _to_dense(module: nn.Module) -> torch.Tensor:
    """The dense matrix a structured layer applies, by its own ``to_dense()`` (docs/design.md, convention 4)."""
    to_dense = getattr(module, "to_dense", None)
    if not callable(to_dense):
        raise TypeError(f"{type(module).__name__} has no to_dense() to give its dense matrix")
    return to_dense()
