"""Where code may import from: nothing outside ``tests/`` imports the test suite.

The demo, the benchmarks and the product import the development harness (``harness/``) instead; a test module
that other code imports would run its module-level set-up (fixtures, markers) outside pytest.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIP = {".venv", "node_modules", "cdk.out", ".git", "tests"}


def _imports_of_tests(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.split(".")[0] == "tests"]
    return found


def python_files_outside_tests() -> list[Path]:
    return [
        p
        for p in ROOT.rglob("*.py")
        if not SKIP.intersection(p.relative_to(ROOT).parts) and not p.name.startswith(".")
    ]


def test_nothing_outside_tests_imports_the_test_suite() -> None:
    files = python_files_outside_tests()
    assert any(
        p.parts[-2:] == ("scripts", "demo.py") for p in files
    )  # the scan sees the demo and the benchmarks
    assert any(p.parent.name == "benchmarks" for p in files)
    offenders = [hit for p in files for hit in _imports_of_tests(p)]
    assert not offenders, offenders


def test_the_harness_does_not_import_the_test_suite() -> None:
    harness = sorted((ROOT / "harness").glob("*.py"))
    assert len(harness) > 10
    assert not [hit for p in harness for hit in _imports_of_tests(p)]


def test_the_readme_fits_on_a_screen_and_keeps_the_two_commands() -> None:
    """Reference material lives in docs/; the README's quick start stays ``make demo`` and ``make test``."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) <= 12 * 1024, (
        f"README.md is {len(readme.encode())} bytes; move detail to docs/"
    )
    assert "make demo" in readme and "make test" in readme
