"""``pip install ./client`` into a throwaway virtualenv: the slim distribution installs, runs, and pulls in
boto3 and its dependencies only."""

from __future__ import annotations

import json
import os
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


def _size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_client_installs_alone_with_boto3_only(tmp_path: Path) -> None:
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
    # cwd: not the kit's root, so nothing of the kit is on sys.path but what pip installed
    subprocess.run([*install, str(ROOT / "client")], check=True, env=env, cwd=tmp_path)
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
    assert installed == BOTO3_AND_ITS_DEPENDENCIES | {"agentkit"}
    added = _size_mb(venv) - empty
    print(f"\nempty venv {empty:.1f} MB; after pip install ./client {empty + added:.1f} MB (+{added:.1f} MB)")
    assert added < 50, f"the client added {added:.1f} MB (target: at most 50 MB)"
