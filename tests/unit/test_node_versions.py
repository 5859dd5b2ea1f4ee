"""Which Node.js releases the kit accepts: ``engines`` in ``package.json`` lists whole major releases, each one the
AWS CDK's jsii runtime (the copy bundled with the installed ``jsii`` package, which every ``cdk synth`` runs)
supports and does not call untested, within what the pinned CDK CLI accepts; the Node these tests run on is one
of them; the docs name the same releases."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import jsii

ROOT = Path(__file__).resolve().parents[2]
JSII_RUNTIME = Path(jsii.__file__).parent / "_embedded" / "jsii" / "bin__jsii-runtime.js"


def engine_majors() -> set[int]:
    """The major releases ``package.json`` accepts (it must be a list of ``^N.0.0`` ranges)."""
    engines = json.loads((ROOT / "package.json").read_text())["engines"]["node"]
    ranges = [part.strip() for part in engines.split("||")]
    assert all(re.fullmatch(r"\^\d+\.0\.0", r) for r in ranges), engines
    return {int(r[1:].split(".")[0]) for r in ranges}


def jsii_releases() -> dict[int, str]:
    """Major → the options jsii's runtime declares for it (``endOfLife``, ``untested``, ``knownBroken``...)."""
    source = JSII_RUNTIME.read_text(encoding="utf-8")
    found = {
        int(m.group(1)): m.group(2) for m in re.finditer(r"new NodeRelease\((\d+),\{([^}]*)\}\)", source)
    }
    assert found, f"no NodeRelease table in {JSII_RUNTIME}"
    return found


def test_the_engines_are_releases_jsii_supports() -> None:
    releases = jsii_releases()
    for major in engine_majors():
        assert major in releases, f"jsii does not know Node {major}"
        assert "untested" not in releases[major] and "knownBroken" not in releases[major], releases[major]
        assert "endOfJsiiSupport" not in releases[major], f"jsii dropped Node {major}"
    cdk_cli = json.loads((ROOT / "node_modules" / "aws-cdk" / "package.json").read_text())["engines"]["node"]
    minimum = re.fullmatch(r">= ?(\d+)\.0\.0", cdk_cli)
    assert minimum is not None, cdk_cli
    assert min(engine_majors()) >= int(minimum.group(1))


def test_the_node_the_tests_run_on_is_accepted() -> None:
    version = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    assert int(version.lstrip("v").split(".")[0]) in engine_majors(), version


def test_the_docs_name_the_accepted_releases() -> None:
    majors = sorted(engine_majors())
    deploy = " ".join((ROOT / "docs" / "deploy.md").read_text().split())
    newest = " or ".join(str(m) for m in majors[1:])
    assert f"Node.js: {newest} (the active LTS releases), or {majors[0]}." in deploy
    development = " ".join((ROOT / "docs" / "development.md").read_text().split())
    listed = ", ".join(str(m) for m in majors[:-1]) + f" and {majors[-1]}"
    assert f"`package.json` accepts Node {listed}" in development
