"""The slim client installs into a throwaway virtualenv the way docs/ci-cd.md tells a pipeline of ANOTHER
repository to install it (a pinned VCS URL with ``#subdirectory=client``), runs, and pulls in boto3 and its
dependencies only. The distribution's name is ours, not ``agentkit`` (an unrelated project on PyPI)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOTO3_AND_ITS_DEPENDENCIES = {
    "boto3",
    "botocore",
    "jmespath",
    "s3transfer",
    "python-dateutil",
    "six",
    "urllib3",
}


DISTRIBUTION = "agentcore-claude-kit-client"


def documented_install_line() -> str:
    """The one pip requirement docs/ci-cd.md gives for pipelines outside the kit's repository."""
    doc = (ROOT / "docs" / "ci-cd.md").read_text(encoding="utf-8")
    lines = re.findall(r'pip install "(' + DISTRIBUTION + r' @ [^"]+)"', doc)
    assert lines, "docs/ci-cd.md lost its install line"
    assert len(set(lines)) == 1, f"docs/ci-cd.md gives different install lines: {set(lines)}"
    return lines[0]


def test_the_distribution_name_is_ours_and_the_docs_pin_it() -> None:
    pyproject = (ROOT / "client" / "pyproject.toml").read_text(encoding="utf-8")
    assert f'name = "{DISTRIBUTION}"' in pyproject
    line = documented_install_line()
    assert line == f"{DISTRIBUTION} @ <KIT_REPO_URL>@<COMMIT>#subdirectory=client"
    readme = (ROOT / "client" / "README.md").read_text(encoding="utf-8")
    assert f'pip install "{line}"' in readme


def _size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6


@pytest.mark.slow
@pytest.mark.timeout(300)
def documented_url_only_line() -> str:
    """The form docs/ci-cd.md gives for a pip too old for ``name @ URL`` with a ``git+file`` URL."""
    doc = (ROOT / "docs" / "ci-cd.md").read_text(encoding="utf-8")
    (line,) = re.findall(r'pip install "(<KIT_REPO_URL>@[^"]+)"', doc)
    return line


def test_the_docs_say_to_upgrade_pip_before_the_install_line() -> None:
    doc = (ROOT / "docs" / "ci-cd.md").read_text(encoding="utf-8")
    upgrade, install = doc.index("python -m pip install --upgrade pip"), doc.index(documented_install_line())
    assert upgrade < install
    assert documented_url_only_line() == documented_install_line().split(" @ ", 1)[1]


@pytest.mark.parametrize("form", ["name @ url", "url only"])
def test_the_client_installs_alone_with_boto3_only(tmp_path: Path, form: str) -> None:
    venv = tmp_path / "venv"
    # --without-pip skips ensurepip (most of a venv's creation time); this interpreter's pip installs into it
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    empty = _size_mb(venv)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    install = [
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(python),
        "install",
        "--quiet",
        "--disable-pip-version-check",
    ]
    # The documented line, with this checkout standing in for the kit's repository: a VCS URL pinned to a
    # commit, from a directory that is not the kit (cwd), so nothing of the kit is on sys.path but what pip
    # installed.
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    documented = documented_install_line() if form == "name @ url" else documented_url_only_line()
    line = documented.replace("<KIT_REPO_URL>", f"git+file://{ROOT}").replace("<COMMIT>", commit)
    subprocess.run([*install, line], check=True, env=env, cwd=tmp_path)
    version = subprocess.run(
        [str(venv / "bin" / "agentkit"), "--version"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert version.returncode == 0 and version.stdout.startswith("agentkit "), version.stderr
    help_text = subprocess.run(
        [str(venv / "bin" / "agentkit")], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert help_text.returncode == 0 and "report" in help_text.stdout
    listing = "import importlib.metadata as m, json; print(json.dumps([d.metadata['Name'] for d in m.distributions()]))"
    listed = subprocess.run(
        [str(python), "-c", listing], capture_output=True, text=True, check=True, env=env, cwd=tmp_path
    )
    installed = {name.lower() for name in json.loads(listed.stdout)}
    assert installed == BOTO3_AND_ITS_DEPENDENCIES | {DISTRIBUTION}
    added = _size_mb(venv) - empty
    print(f"\nempty venv {empty:.1f} MB; after pip install ./client {empty + added:.1f} MB (+{added:.1f} MB)")
    assert added < 50, f"the client added {added:.1f} MB (target: at most 50 MB)"
