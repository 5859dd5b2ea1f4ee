"""``scripts/check_python.py``: the interpreter check ``make setup`` runs before it builds ``.venv``."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import check_python  # noqa: E402


def test_bounds_are_pyprojects_requires_python() -> None:
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    low, high = (f"{a}.{b}" for a, b in (check_python.MINIMUM, check_python.BEYOND))
    assert requires == f">={low},<{high}"


@pytest.mark.parametrize(
    ("version", "ok"), [((3, 10), False), ((3, 11), True), ((3, 13), True), ((3, 14), False)]
)
def test_problem_names_the_version_and_the_fix(version: tuple[int, int], ok: bool) -> None:
    message = check_python.problem(version)
    assert (message is None) is ok
    if message:
        assert f"Python {version[0]}.{version[1]} cannot run the kit" in message and "PYTHON=" in message


def test_the_running_interpreter_passes_quietly() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check_python.py")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0 and proc.stderr == ""


def test_makefile_checks_before_building_and_rebuilds_a_wrong_venv() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("$(VENV)/.installed:", 1)[1].split("\n\n", 1)[0]
    assert "$(BIN)/python scripts/check_python.py --quiet" in recipe and "rm -rf $(VENV)" in recipe
    assert "$(PYTHON) scripts/check_python.py && $(PYTHON) -m venv" in recipe
    assert "distclean: clean\n\trm -rf $(VENV) node_modules" in makefile
