"""No import cycles inside ``runtime/``, between files or between packages.

The import graph is read with ``ast`` from the source (nothing is imported), and every import counts: at module
level, inside a function (a lazy import only hides a cycle from the interpreter, not from a reader), and under
``TYPE_CHECKING``. A node of the package graph is a sub-package (``runtime.agent``, ``runtime.guard``, ...) or
a module directly under ``runtime/`` (``runtime.sessions``, ``runtime.wiring``, ...): each of them may use the
ones below it, and none may reach back up.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

from harness.import_graph import strongly_connected

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "runtime"

Graph = Mapping[str, Iterable[str]]


def module_files(root: Path = ROOT / PACKAGE) -> dict[str, Path]:
    """Dotted module name → file, for every ``.py`` under ``root`` (a package's name maps to its __init__)."""
    modules = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _owner(name: str, modules: Mapping[str, Path]) -> str | None:
    """The module of ``runtime`` that ``name`` (a module, or a name inside one) lives in."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imported(tree: ast.AST, modules: Mapping[str, Path]) -> set[str]:
    found: set[str | None] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {_owner(alias.name, modules) for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # ``from runtime.observe import costs`` imports the module runtime.observe.costs
            found |= {_owner(f"{node.module}.{alias.name}", modules) for alias in node.names}
    return {name for name in found if name is not None}


def file_graph(root: Path = ROOT / PACKAGE) -> dict[str, set[str]]:
    """Module → the modules of ``runtime`` it imports (relative imports are not used in this project)."""
    modules = module_files(root)
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        graph[name] = _imported(tree, modules) - {name}
    return graph


def node_of(module: str, root: Path = ROOT / PACKAGE) -> str:
    """The package-graph node of a module: its sub-package of ``runtime``, or itself when it is top-level."""
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and (root / parts[1]).is_dir()):
        return ".".join(parts[:2])
    return module


def package_graph(files: Graph, root: Path = ROOT / PACKAGE) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for source, targets in files.items():
        edges = graph.setdefault(node_of(source, root), set())
        edges |= {node_of(t, root) for t in targets} - {node_of(source, root)}
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components with more than one node (each holds at least one cycle)."""
    return strongly_connected(graph)


def _edges_within(files: Graph, component: list[str]) -> list[str]:
    """The file-level imports that make up a package-level cycle (for the failure message)."""
    return sorted(
        f"{source} -> {target}"
        for source, targets in files.items()
        for target in targets
        if node_of(source) in component
        and node_of(target) in component
        and node_of(source) != node_of(target)
    )


def test_the_checker_finds_a_cycle_it_is_shown() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert (
        node_of("runtime.agent.turn") == "runtime.agent" and node_of("runtime.sessions") == "runtime.sessions"
    )


def test_the_graph_sees_lazy_and_type_checking_imports() -> None:
    files = file_graph()
    assert "runtime.wiring" in files["runtime.http.server"]  # under TYPE_CHECKING
    assert "runtime.session_store.factory" in files["runtime.wiring"]  # inside a function


def test_no_file_imports_itself_round_a_cycle() -> None:
    assert cycles(file_graph()) == []


def test_no_package_imports_itself_round_a_cycle() -> None:
    files = file_graph()
    found = cycles(package_graph(files))
    assert found == [], "; ".join(f"{c}: {_edges_within(files, c)}" for c in found)
