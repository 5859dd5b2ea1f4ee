"""The module rule of ``runtime/``: a module is one concept, a package replaces a prefix family, and a name is
imported from the module that defines it (re-exports only in a package's ``__init__``).

Read with ``ast`` from the source (nothing is imported). A re-export outside ``__init__`` gives one class two
import paths and hides where it lives; a prefix family (``agentcore.py``, ``agentcore_ids.py``, …) is a package
written as file names.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "runtime"
#: Where code that imports the runtime lives.
IMPORTERS = (
    "runtime",
    "tests",
    "harness",
    "benchmarks",
    "scripts",
    "standins",
    "infra",
    "client",
    "webhook",
    "app.py",
)


def _module_file(module: str, root: Path = ROOT) -> Path | None:
    path = root.joinpath(*module.split("."))
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    return path.with_suffix(".py") if path.with_suffix(".py").is_file() else None


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements at module level, including those under ``if``/``try`` (``TYPE_CHECKING``, optional imports)."""
    found: list[ast.stmt] = []
    for node in body:
        found.append(node)
        if isinstance(node, ast.If | ast.Try):
            found += _top_level(node.body + node.orelse)
            for handler in getattr(node, "handlers", []):
                found += _top_level(handler.body)
    return found


def defined_and_imported(path: Path) -> tuple[set[str], dict[str, str]]:
    """The names a module defines at its top level, and the names it imports (name → where from)."""
    defined: set[str] = set()
    imported: dict[str, str] = {}
    for node in _top_level(ast.parse(path.read_text(encoding="utf-8")).body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported |= {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            imported |= {a.asname or a.name.split(".")[0]: a.name for a in node.names}
    return defined, imported


def _python_files(roots: tuple[str, ...], root: Path = ROOT) -> list[Path]:
    files = []
    for name in roots:
        path = root / name
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return [p for p in files if not {".venv", "node_modules", "cdk.out"}.intersection(p.parts)]


def imports_through_a_re_export(root: Path = ROOT) -> list[str]:
    """Every ``from runtime.m import name`` where ``m`` is a plain module that only imported ``name``."""
    found = []
    for path in _python_files(IMPORTERS, root):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
                continue
            if node.module.split(".")[0] != "runtime":
                continue
            source = _module_file(node.module, root)
            if source is None or source.name == "__init__.py":
                continue
            defined, imported = defined_and_imported(source)
            for alias in node.names:
                if alias.name not in defined and alias.name in imported:
                    found.append(
                        f"{path.relative_to(root)}:{node.lineno} imports {alias.name} from {node.module}; "
                        f"it lives in {imported[alias.name].rpartition('.')[0]}"
                    )
    return found


def re_exports_outside_init(package: Path = PACKAGE) -> list[str]:
    """Modules other than a package's ``__init__`` that list an imported name in ``__all__`` or re-export it with
    ``import x as x``."""
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        _, imported = defined_and_imported(path)
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                names = [e.value for e in getattr(node.value, "elts", []) if isinstance(e, ast.Constant)]
                found += [
                    f"{path.relative_to(package.parent)}: __all__ names imported {n}"
                    for n in names
                    if n in imported
                ]
        for imp in ast.walk(tree):
            if isinstance(imp, ast.Import | ast.ImportFrom):
                found += [
                    f"{path.relative_to(package.parent)}:{imp.lineno}: import {a.name} as {a.asname}"
                    for a in imp.names
                    if a.asname is not None and a.asname == a.name.rpartition(".")[2]
                ]
    return found


def prefix_families(package: Path = PACKAGE) -> list[str]:
    """Module names in one directory that are a package written as file names: a module whose name prefixes
    others (``agentcore`` + ``agentcore_ids``), or three or more modules sharing a ``<prefix>_``."""
    found = []
    for directory in sorted({p.parent for p in package.rglob("*.py")}):
        names = {p.stem for p in directory.glob("*.py")} - {"__init__", "__main__"}
        by_prefix: dict[str, set[str]] = defaultdict(set)
        for name in names:
            if "_" in name:
                by_prefix[name.split("_")[0]].add(name)
        for prefix, members in sorted(by_prefix.items()):
            stems = {prefix, prefix.rstrip("s")} & names
            if stems or len(members) >= 3:
                found.append(f"{directory.relative_to(package.parent)}: {sorted(members | stems)}")
    return found


def test_the_checks_see_what_they_look_for(tmp_path: Path) -> None:
    pkg = tmp_path / "runtime"
    (pkg / "store").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "store" / "__init__.py").write_text("from runtime.store.ids import escape\n__all__ = ['escape']\n")
    (pkg / "store" / "ids.py").write_text("def escape(): ...\n")
    (pkg / "store" / "agentcore.py").write_text(
        "from runtime.store.ids import escape\nfrom runtime.store.ids import escape as escape\n"
        "__all__ = ['Store', 'escape']\nclass Store: ...\n"
    )
    (pkg / "store" / "agentcore_plan.py").write_text("")
    (pkg / "user.py").write_text(
        "from runtime.store.agentcore import escape\nfrom runtime.store import escape\n"
    )
    assert re_exports_outside_init(pkg) == [
        "runtime/store/agentcore.py: __all__ names imported escape",
        "runtime/store/agentcore.py:2: import escape as escape",
    ]
    # the package's __init__ may re-export; a plain module may not
    assert imports_through_a_re_export(tmp_path) == [
        "runtime/user.py:1 imports escape from runtime.store.agentcore; it lives in runtime.store.ids"
    ]
    assert prefix_families(pkg) == ["runtime/store: ['agentcore', 'agentcore_plan']"]


def test_names_are_imported_from_where_they_are_defined() -> None:
    assert imports_through_a_re_export() == []


def test_re_exports_only_in_a_package_init() -> None:
    assert re_exports_outside_init() == []


def test_no_prefix_family_stands_in_for_a_package() -> None:
    assert prefix_families() == []


def test_the_session_store_import_path_is_the_package_itself() -> None:
    """``from runtime.session_store import AgentCoreMemorySessionStore`` is kept by the package's ``__init__``,
    not by a compatibility module beside a package of another name."""
    import inspect

    import runtime.session_store
    from runtime.session_store import AgentCoreMemorySessionStore

    assert Path(runtime.session_store.__file__).name == "__init__.py"
    assert not (PACKAGE / "session_store.py").exists()
    parameters = inspect.signature(AgentCoreMemorySessionStore).parameters
    assert next(iter(parameters)) == "memory_id"
    assert (
        parameters["client"].kind is inspect.Parameter.KEYWORD_ONLY and parameters["client"].default is None
    )
