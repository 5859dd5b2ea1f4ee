"""No import cycle between the modules of ``infra/``, read from the source (ast), not by importing it.

Every ``import`` statement counts, also one inside a function: a lazy import does not remove a cycle, it only
hides it from import time (and moves the failure to the first call that takes that path).
"""

from __future__ import annotations

import ast
from pathlib import Path

from harness.import_graph import strongly_connected
from tests.infra.conftest import ROOT

PACKAGE = "infra"


def module_names(root: Path, package: str) -> dict[str, Path]:
    """``infra.x.y`` → its file, for every module and package ``__init__`` under ``root/package``."""
    names: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def imported_modules(path: Path, module: str, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``module`` (at ``path``) imports anywhere in its body."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from infra import nag`` imports the module infra.nag; ``from infra.x import f`` imports infra.x.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known:  # ``import infra.a.b`` also runs infra.a: stop at a module
                target = target.rpartition(".")[0]
            # A module's own packages are always imported before it: an edge to one is no cycle.
            if target and target != module and not module.startswith(target + "."):
                found.add(target)
    return found


def import_graph(root: Path = ROOT, package: str = PACKAGE) -> dict[str, set[str]]:
    names = module_names(root, package)
    known = set(names)
    return {module: imported_modules(path, module, known) for module, path in names.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module, as a readable path."""
    return [_path_through(component, graph) for component in strongly_connected(graph)]


def _path_through(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A closed path ``a → b → … → a`` inside one strongly connected ``component``."""
    members = set(component)
    start = component[0]
    path, seen = [start], {start}
    node = start
    while True:
        succ = sorted(graph[node] & members)
        if start in succ and len(path) > 1:
            return [*path, start]
        nxt = next((s for s in succ if s not in seen), None)
        if nxt is None:
            return [*path, start]
        path.append(nxt)
        seen.add(nxt)
        node = nxt


def test_the_graph_sees_the_stack_and_its_constructs() -> None:
    graph = import_graph()
    assert {"infra.config", "infra.runtime", "infra.webhook.construct"} <= graph["infra.stack"]
    assert "infra.config" in graph["infra.context"]


def test_a_lazy_import_cycle_is_found(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.b import g\n\ndef f():\n    return g()\n")
    (pkg / "b.py").write_text("def g():\n    from pkg import a  # lazy\n    return a\n")
    (pkg / "c.py").write_text("from . import a\n")
    (pkg / "sub").mkdir()  # a subpackage's modules importing each other through it is no cycle
    (pkg / "sub" / "__init__.py").write_text("from .x import X\n")
    (pkg / "sub" / "x.py").write_text("from . import y\n\nX = y.Y\n")
    (pkg / "sub" / "y.py").write_text("Y = 1\n")
    assert cycles(import_graph(tmp_path, "pkg")) == [["pkg.a", "pkg.b", "pkg.a"]]


def test_no_import_cycle_in_infra() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles in infra/: " + "; ".join(" -> ".join(c) for c in found)
