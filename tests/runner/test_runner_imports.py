"""The runner and the experiments: one protocol module both import, no import cycle between subpackages.

The import graph is read from the source (every ``import`` statement under ``src/structnets``, including
deferred imports inside functions), so a cycle hidden in a function body is found too.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import structnets
from structnets import protocol
from structnets.runner import experiment as runner_experiment
from structnets.runner import figures as runner_figures

SRC = Path(structnets.__file__).resolve().parent

ALLOWED_EDGES: dict[tuple[str, str], str] = {}
"""Edges left out of the cycle check, each with why; a test below fails once one is no longer needed."""


def _component(path: Path) -> str:
    """The subpackage (or top-level module) a source file belongs to; ``__init__`` for the package root."""
    rel = path.relative_to(SRC)
    if len(rel.parts) == 1:
        return rel.stem
    return rel.parts[0]


def _is_module(name: str) -> bool:
    return (SRC / f"{name}.py").is_file() or (SRC / name / "__init__.py").is_file()


def import_graph() -> dict[tuple[str, str], list[str]]:
    """Edges ``(importer, imported)`` between structnets' subpackages, each with the ``file:line`` that makes it."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(SRC.rglob("*.py")):
        source = _component(path)
        package = ["structnets", *path.relative_to(SRC).with_suffix("").parts][:-1]  # the file's package
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[list[str]] = []
            if isinstance(node, ast.Import):
                targets = [alias.name.split(".") for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - node.level + 1]
                    module = base + (node.module.split(".") if node.module else [])
                else:
                    module = (node.module or "").split(".")
                if module == ["structnets"]:  # from structnets import X: X is a submodule or a root attribute
                    targets = [["structnets", a.name] if _is_module(a.name) else ["structnets"] for a in node.names]
                else:
                    targets = [module]
            for target in targets:
                if target[0] != "structnets":
                    continue
                imported = "__init__" if len(target) == 1 else target[1]
                if imported != source:
                    edges[(source, imported)].append(f"{path.relative_to(SRC)}:{node.lineno}")
    return dict(edges)


def find_cycle(edges: set[tuple[str, str]]) -> list[str] | None:
    """One cycle of the directed graph ``edges`` as a node path ``[a, b, ..., a]``, or None if it is acyclic."""
    graph: dict[str, list[str]] = defaultdict(list)
    for a, b in sorted(edges):
        graph[a].append(b)
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def _reaches(edges: set[tuple[str, str]], start: str, goal: str) -> bool:
    """Whether a path of ``edges`` leads from ``start`` to ``goal``."""
    seen, todo = {start}, [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        for a, b in edges:
            if a == node and b not in seen:
                seen.add(b)
                todo.append(b)
    return False


def test_find_cycle_finds_cycles_and_only_cycles() -> None:
    assert find_cycle({("a", "b"), ("b", "c"), ("a", "c")}) is None
    assert find_cycle({("a", "b"), ("b", "c"), ("c", "a")}) == ["a", "b", "c", "a"]
    assert find_cycle({("x", "y"), ("y", "x"), ("a", "x")}) in (["x", "y", "x"], ["y", "x", "y"])
    assert _reaches({("a", "b"), ("b", "c")}, "a", "c") and not _reaches({("a", "b"), ("b", "c")}, "c", "a")


def test_the_graph_sees_deferred_and_relative_imports() -> None:
    edges = import_graph()
    assert ("cli", "runner") in edges and ("cli", "experiments") in edges  # deferred, inside functions
    assert ("experiments", "runner") in edges and ("experiments", "protocol") in edges
    assert ("runner", "protocol") in edges and ("runner", "atomic_io") in edges
    assert ("__init__", "nn") in edges  # from . import functional, models, nn


def test_no_import_cycle_between_subpackages() -> None:
    edges = import_graph()
    cycle = find_cycle(set(edges) - set(ALLOWED_EDGES))
    assert cycle is None, (
        " -> ".join(cycle or [])
        + ": "
        + "; ".join(f"{a}->{b} at {', '.join(edges[(a, b)][:3])}" for a, b in zip(cycle or [], (cycle or [])[1:]))
    )


def test_every_allowed_edge_is_still_needed() -> None:
    edges = import_graph()
    for edge in sorted(ALLOWED_EDGES):
        assert edge in edges, f"{edge} no longer exists: remove it from ALLOWED_EDGES"
        assert _reaches(set(edges), edge[1], edge[0]), f"{edge} closes no cycle any more: remove it from ALLOWED_EDGES"


def test_runner_and_protocol_import_nothing_from_experiments_or_cli() -> None:
    edges = import_graph()
    for source in ("runner", "protocol", "atomic_io"):
        bad = {b: where for (a, b), where in edges.items() if a == source and b in ("experiments", "cli", "claims")}
        assert bad == {}, f"{source} imports {bad}"
    assert not any(a == "protocol" for a, _ in edges), "protocol imports other parts of structnets"


def test_importing_the_runner_leaves_the_experiments_unimported() -> None:
    code = (
        "import sys, structnets.runner, structnets.protocol, structnets.atomic_io\n"
        "print(sorted(m for m in sys.modules if m.startswith(('structnets.experiments', 'structnets.cli'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_protocol_is_one_set_of_objects_under_every_old_name() -> None:
    for name in ("Unit", "Experiment", "FunctionExperiment", "JSONScalar", "ProgressCallback", "config_to_dict"):
        assert getattr(runner_experiment, name) is getattr(protocol, name)
    for name in ("save_figure", "figure_format_context", "current_figure_format", "FIGURE_FORMATS"):
        assert getattr(runner_figures, name) is getattr(protocol, name)
