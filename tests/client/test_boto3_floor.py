"""The client's declared boto3 floor (``client/pyproject.toml``) has every operation and parameter it calls.

A CI runner may have any boto3 at or above the floor. The check downloads the floor's botocore wheel (pip, from
the package index; cached after the first run), loads ONLY its service models (no fallback to the installed,
newer botocore) and runs the same source walk as ``tests/unit/test_botocore_calls.py`` against them.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import botocore.session
import pytest
from botocore.loaders import Loader

from tests.unit.test_botocore_calls import ROOT, problems, unit_files

#: Operations newer than the floor that the client calls only behind a check that names the upgrade (tested in
#: tests/client/test_probe_sandbox.py): (operation, ``file:line`` prefix of the call, by file name).
NEWER_THAN_FLOOR = (("invoke_agent_runtime_command", "sandbox_probe.py"),)


def declared_floor() -> str:
    pyproject = (ROOT / "client" / "pyproject.toml").read_text(encoding="utf-8")
    match = re.search(r'dependencies = \["boto3>=([0-9.]+)"\]', pyproject)
    assert match, 'client/pyproject.toml: expected dependencies = ["boto3>=X.Y.Z"]'
    return match.group(1)


def runtime_floor() -> str:
    """The boto3 floor of the container package (the root ``pyproject.toml``)."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    match = re.search(r'"boto3>=([0-9.]+)"', pyproject)
    assert match, 'pyproject.toml: expected "boto3>=X.Y.Z" in dependencies'
    return match.group(1)


def floor_session(version: str, tmp: Path) -> botocore.session.Session:
    """A botocore session that knows only the service models of botocore ``version`` (boto3 and botocore
    share version numbers: boto3 X requires botocore X)."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--only-binary=:all:",
            f"botocore=={version}",
            "-d",
            str(tmp),
        ],
        check=True,
        timeout=240,
    )
    (wheel,) = tmp.glob(f"botocore-{version}-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(
            tmp / "unpacked", [n for n in archive.namelist() if n.startswith("botocore/data/")]
        )
    session = botocore.session.Session()
    session.register_component(
        "data_loader",
        Loader(
            extra_search_paths=[str(tmp / "unpacked" / "botocore" / "data")],
            include_default_search_paths=False,
        ),
    )
    return session


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_declared_floor_has_every_call_the_client_makes(tmp_path: Path) -> None:
    session = floor_session(declared_floor(), tmp_path)
    found = problems(session, unit_files("client"), found_with=botocore.session.get_session())
    assert [
        p for p in found if not any(p.startswith(f"{where}:") and op in p for op, where in NEWER_THAN_FLOOR)
    ] == []


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_release_below_the_floor_is_caught(tmp_path: Path) -> None:
    """botocore 1.40.45 has no StopRuntimeSession (``agentkit sessions stop`` died with AttributeError there):
    the same walk must say so, or it would not catch a floor set too low."""
    session = floor_session("1.40.45", tmp_path)
    found = problems(session, unit_files("client"), found_with=botocore.session.get_session())
    assert any("stop_runtime_session is not an operation" in p for p in found), found


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_runtime_floor_has_every_call_the_runtime_makes(tmp_path: Path) -> None:
    """The container package's boto3 floor: the session store's CreateEvent(extractionMode=...) needs botocore 1.44."""
    session = floor_session(runtime_floor(), tmp_path)
    assert problems(session, unit_files("runtime"), found_with=botocore.session.get_session()) == []


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_runtime_floor_without_extraction_mode_is_caught(tmp_path: Path) -> None:
    session = floor_session("1.43.0", tmp_path)
    found = problems(session, unit_files("runtime"), found_with=botocore.session.get_session())
    assert any("create_event(extractionMode)" in p for p in found), found
