"""Review of ``structnets._module_walk`` (shared by compress and export): a replacement that wraps what it replaces."""

from __future__ import annotations

from torch import nn

from structnets._module_walk import replace_children, unique_modules


def test_a_wrapper_replacing_its_own_child_is_not_put_inside_itself() -> None:
    layer = nn.Linear(2, 2)
    wrapper = nn.Sequential(layer)  # holds the module it replaces
    root = nn.Sequential(layer, nn.ReLU(), layer)
    replace_children(root, {id(layer): wrapper})
    assert root[0] is wrapper and root[2] is wrapper
    assert wrapper[0] is layer  # it was wrapper[0] is wrapper: a module containing itself
    assert sum(1 for _ in unique_modules(root)) == 4  # root, wrapper, layer, ReLU


def test_every_place_of_a_shared_child_is_replaced() -> None:
    layer, other = nn.Linear(2, 2), nn.Linear(2, 2)
    inner = nn.Sequential(layer)
    root = nn.Sequential(inner, layer, nn.Sequential(inner))
    replace_children(root, {id(layer): other})
    assert inner[0] is other and root[1] is other and root[2][0][0] is other
