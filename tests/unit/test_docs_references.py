"""The docs pages that describe code name only what exists, and the tables that list code list all of it.

Checked here: the HTTP endpoints table of docs/http-api.md against the routes the app serves; the scripts table of
benchmarks/README.md against the scripts; every repository path the pages name; every class the ownership table of
docs/architecture.md names. (The generated tables are checked by ``test_docs_tables.py``.)
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    ROOT / "README.md",
    ROOT / "benchmarks" / "README.md",
    *(
        ROOT / "docs" / name
        for name in (
            "architecture.md",
            "http-api.md",
            "observability.md",
            "agent.md",
            "development.md",
            "webhook.md",
        )
    ),
    *sorted((ROOT / "docs" / "webhook").glob("*.md")),
]
TOP = (
    "runtime",
    "client",
    "infra",
    "webhook",
    "harness",
    "standins",
    "tests",
    "benchmarks",
    "scripts",
    "docs",
)


def table_after(text: str, heading: str) -> list[list[str]]:
    """The cells of the first Markdown table after ``heading`` (header and separator rows dropped)."""
    section = text.split(heading, 1)[1]
    end = next((i for i, line in enumerate(section.splitlines()) if line.startswith("|")), 0)
    lines = section.splitlines()[end:]
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows[2:]


def test_the_endpoints_table_is_what_the_app_serves(tmp_path: Path) -> None:
    from runtime.config.settings import Settings
    from runtime.http.local_stop import add_stop_route
    from runtime.http.server import build_app

    app = build_app(Settings.from_env({"AGENTKIT_STATE_DIR": str(tmp_path)}))
    add_stop_route(app, actor_header=None)
    served = app.http_routes()
    text = (ROOT / "docs" / "http-api.md").read_text(encoding="utf-8")
    documented = [re.fullmatch(r"`([A-Z]+) (/\S*)`", row[0]) for row in table_after(text, "## Endpoints")]
    assert all(documented), documented
    pairs = {(m.group(1), m.group(2)) for m in documented if m}
    assert {path for _, path in pairs} == set(served), (pairs, served)
    assert all(method in served[path] for method, path in pairs), (pairs, served)


def test_the_benchmark_table_lists_every_script() -> None:
    text = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    listed = {row[0].strip("`") for row in table_after(text, "# Benchmarks")}
    scripts = {p.name for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_")}
    assert listed == scripts


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_repository_path_a_page_names_exists(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    pattern = r"`((?:" + "|".join(TOP) + r")/[A-Za-z0-9_./-]*[A-Za-z0-9_/])`"
    named = set(re.findall(pattern, text))
    assert named or page.name == "README.md" or page.parent.name in ("benchmarks", "webhook")
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"{page.relative_to(ROOT)} names paths that do not exist: {missing}"


def _classes_in(directory: Path) -> set[str]:
    names: set[str] = set()
    for path in directory.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names |= {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    return names


def test_the_ownership_table_names_classes_that_exist() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    owners = " ".join(row[1] for row in table_after(text, "## Who owns what"))
    named = set(re.findall(r"`([A-Z][A-Za-z]+)`", owners))
    assert len(named) >= 6, named
    missing = named - _classes_in(ROOT / "runtime")
    assert not missing, (
        f"docs/architecture.md names owners that are not classes in runtime/: {sorted(missing)}"
    )


@pytest.mark.parametrize(
    "page",
    sorted([*(ROOT / "docs").rglob("*.md"), ROOT / "README.md"]),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_every_relative_link_of_a_page_resolves(page: Path) -> None:
    """A page moved or split keeps its readers: each relative link names a file that exists and, with an
    ``#anchor``, a heading of that file."""
    text = re.sub(r"`[^`\n]*`", "", page.read_text(encoding="utf-8"))  # a link shown as code is no link
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or (anchor and file.suffix == ".md" and anchor not in _anchors(file)):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)} links to what does not exist: {broken}"


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    out = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out
