"""docs/architecture.md cites only code that exists: every ``runtime.module.name`` it names imports and has that
attribute, every ``Class.attribute`` of a runtime class and every "``name`` in ``runtime/x.py``" is there, every
repository path exists, and its links reach a page and a heading.

The page follows one invocation through the code; when a function is renamed or a module moves, the step that
names it must change with it (the page once named an entrypoint and a pre-invocation hook the server no longer has).
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
TOP = ("runtime", "client", "infra", "harness", "standins", "tests", "benchmarks", "scripts", "docs")


def cited_dotted(text: str) -> set[str]:
    """``runtime.a.b.Name.attr`` spans of the page (``runtime.py`` is a file name of ``infra/``, not a module)."""
    return {m for m in re.findall(r"`(runtime(?:\.[A-Za-z_]\w*)+)`", text) if not m.endswith(".py")}


def resolve(dotted: str) -> Any:
    """Import the longest module prefix of ``dotted``, then get the rest as attributes. Raises on a missing part."""
    parts = dotted.split(".")
    module: ModuleType | None = None
    for cut in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as exc:
            if exc.name is None or not ".".join(parts).startswith(exc.name):
                raise  # a module that exists but fails to import is a failure, not a shorter prefix
            continue
        break
    assert module is not None, f"no module of {dotted} imports"
    value: Any = module
    for name in parts[cut:]:
        value = getattr(value, name)
    return value


def cited_paths(text: str) -> set[str]:
    return set(re.findall(r"`((?:" + "|".join(TOP) + r")/[A-Za-z0-9_./-]*[A-Za-z0-9_/])`", text))


def names_in_files(text: str) -> list[tuple[str, str]]:
    """(name, path) for "``a`` / ``b`` in ``runtime/x.py``": names the page says a file defines."""
    found = []
    for match in re.finditer(
        r"((?:`[A-Za-z_]\w*`(?: / |, | and ))*`[A-Za-z_]\w*`) in `(runtime/[\w/]+\.py)`", text
    ):
        found += [(name, match.group(2)) for name in re.findall(r"`(\w+)`", match.group(1))]
    return found


def runtime_classes() -> dict[str, list[str]]:
    """Class name → the runtime modules that define a class of that name."""
    classes: dict[str, list[str]] = {}
    for path in (ROOT / "runtime").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                classes.setdefault(node.name, []).append(".".join(parts))
    return classes


def class_attributes(text: str) -> set[tuple[str, str]]:
    """(class, attribute) for ``Class.attribute`` spans whose class is defined in runtime/."""
    classes = runtime_classes()
    return {(c, a) for c, a in re.findall(r"`([A-Z]\w*)\.([a-z_]\w*)`", text) if c in classes}


def has_member(cls: Any, name: str) -> bool:
    """An attribute, method, or declared field (a dataclass field with a factory is no class attribute)."""
    declared = {n for klass in getattr(cls, "__mro__", ()) for n in getattr(klass, "__annotations__", {})}
    return hasattr(cls, name) or name in declared


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_checks_catch_what_the_old_page_got_wrong() -> None:
    with pytest.raises(AttributeError):
        resolve("runtime.http.server.AgentKitApp.before_invocation")
    with pytest.raises((ImportError, AttributeError)):
        resolve("runtime.server.build_app")
    assert resolve("runtime.http.server.build_app").__name__ == "build_app"
    assert names_in_files("(`_stream` / `_collect` in `runtime/http/server.py`)") == [
        ("_stream", "runtime/http/server.py"),
        ("_collect", "runtime/http/server.py"),
    ]
    assert ("AgentKitApp", "before_invocation") in class_attributes("`AgentKitApp.before_invocation`")
    assert slug("The asynchronous path (`jobs/`)") == "the-asynchronous-path-jobs"


def test_every_module_and_name_the_page_cites_exists() -> None:
    text = PAGE.read_text(encoding="utf-8")
    cited = cited_dotted(text)
    assert len(cited) >= 40, sorted(cited)  # the page names its functions; the check sees them
    missing = []
    for dotted in sorted(cited):
        try:
            resolve(dotted)
        except (ImportError, AttributeError) as exc:
            missing.append(f"{dotted}: {exc}")
    assert not missing, missing


def test_the_page_shows_the_parts_the_runtime_has() -> None:
    cited = cited_dotted(PAGE.read_text(encoding="utf-8"))
    for part in ("runtime.http.loop_bridge.", "runtime.jobs.", "runtime.workspace.", "runtime.process."):
        assert any(c.startswith(part) for c in cited), part


def test_every_path_the_page_cites_exists() -> None:
    paths = cited_paths(PAGE.read_text(encoding="utf-8"))
    assert len(paths) >= 20, sorted(paths)
    assert sorted(p for p in paths if not (ROOT / p).exists()) == []


def test_names_said_to_be_in_a_file_are_there() -> None:
    pairs = names_in_files(PAGE.read_text(encoding="utf-8"))
    missing = []
    for name, path in pairs:
        module = ".".join(Path(path).with_suffix("").parts)
        if not hasattr(importlib.import_module(module), name):
            missing.append(f"{name} in {path}")
    assert not missing, missing


def test_class_attributes_the_page_cites_exist() -> None:
    text = PAGE.read_text(encoding="utf-8")
    pairs = class_attributes(text)
    assert len(pairs) >= 2, pairs
    classes = runtime_classes()
    missing = [
        f"{cls}.{attr}"
        for cls, attr in sorted(pairs)
        if not any(has_member(getattr(importlib.import_module(m), cls, None), attr) for m in classes[cls])
    ]
    assert not missing, missing


@pytest.mark.parametrize(
    "page", [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name
)
def test_links_to_pages_reach_a_page_and_links_into_the_architecture_page_a_heading(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    headings = {slug(h) for h in re.findall(r"^#+ (.+)$", PAGE.read_text(encoding="utf-8"), flags=re.M)}
    broken = []
    for target in re.findall(r"\]\(([^)\s]+\.md(?:#[^)\s]*)?)\)", text):
        if "://" in target:
            continue
        file, _, anchor = target.partition("#")
        resolved = (page.parent / file).resolve()
        if not resolved.is_file() or (resolved == PAGE and anchor and anchor not in headings):
            broken.append(target)
    for anchor in re.findall(r"\]\(#([^)\s]+)\)", text) if page == PAGE else []:
        if anchor not in headings:
            broken.append(f"#{anchor}")
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"
