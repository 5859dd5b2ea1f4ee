"""The webhook's Lambda code is one package with one import name and no import cycle.

A module loaded under two names is two modules: the bare ``trackers.base`` next to ``webhook.trackers.base`` gave
two ``TrackerConfigError`` classes in one interpreter, so an ``except`` naming one missed the other. Read from the
source (ast), so a lazy or ``TYPE_CHECKING`` import counts too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import webhook.trackers.base
from tests.infra.test_imports import cycles, import_graph
from webhook import errors

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "webhook"
#: Names a bare import of a webhook module would use (``import trackers``, ``from fix.jobs import …``).
BARE = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"} | {
    p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()
}
SOURCES = [
    p
    for top in ("webhook", "infra", "tests", "harness", "benchmarks", "scripts")
    for p in (ROOT / top).rglob("*.py")
]


def bare_imports(path: Path, root: Path = ROOT) -> list[str]:
    """The absolute imports in ``path`` that name a webhook module without the ``webhook.`` prefix."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [
            f"{path.relative_to(root)}:{node.lineno} {name}" for name in names if name.split(".")[0] in BARE
        ]
    return found


def test_no_module_is_imported_under_a_second_name() -> None:
    assert [hit for path in SOURCES for hit in bare_imports(path)] == []


def test_nothing_puts_the_package_folder_on_sys_path() -> None:
    call = re.compile(r"(sys\.path\.(insert|append)|syspath_prepend)\(.*webhook", re.IGNORECASE)
    offenders = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in SOURCES
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if call.search(line)
    ]
    assert offenders == []


def test_the_checker_sees_a_bare_import(tmp_path: Path) -> None:
    (tmp_path / "x.py").write_text("def f():\n    import trackers.base\n    from fix.jobs import FixJob\n")
    hits = bare_imports(tmp_path / "x.py", root=tmp_path)
    assert [hit.split(" ", 1)[1] for hit in hits] == ["trackers.base", "fix.jobs"]


def test_the_errors_are_one_class_each() -> None:
    assert webhook.trackers.TrackerConfigError is errors.TrackerConfigError
    assert not hasattr(webhook.trackers.base, "TrackerConfigError") or (
        webhook.trackers.base.TrackerConfigError is errors.TrackerConfigError
    )


def test_no_import_cycle_inside_the_package() -> None:
    assert cycles(import_graph(ROOT, "webhook")) == []
