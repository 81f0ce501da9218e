"""Module-tree walks shared by :func:`structnets.compress` and :func:`structnets.export`."""

from __future__ import annotations

from collections.abc import Iterator

from torch import nn


def unique_modules(root: nn.Module) -> Iterator[nn.Module]:
    """Every module under ``root`` (``root`` included) once, even when shared or nested in a cycle-free DAG."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        module = stack.pop()
        if id(module) in seen:
            continue
        seen.add(id(module))
        yield module
        stack.extend(child for child in module._modules.values() if child is not None)


def replace_children(root: nn.Module, replacements: dict[int, nn.Module]) -> None:
    """Swap every child whose id is in ``replacements``, at every place it occurs under ``root``.

    The places are found in the tree as given, before any swap: a replacement is not walked into, so
    one that holds the module it replaces (a wrapper) keeps it instead of being put inside itself.
    """
    places = [
        (parent, child_name, child)
        for parent in unique_modules(root)
        for child_name, child in parent._modules.items()
        if child is not None and id(child) in replacements
    ]
    for parent, child_name, child in places:
        parent._modules[child_name] = replacements[id(child)]
