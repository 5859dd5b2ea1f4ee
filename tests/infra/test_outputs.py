"""Stack outputs keep the names the docs use: stack scope, no hash suffix, no duplicates."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.infra.conftest import ROOT, Synth

pytestmark = pytest.mark.infra
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
TABLE_HEADING = "## Stack outputs"
CFN_FIELDS = {"OutputKey", "OutputValue", "ExportName", "Description"}  # CloudFormation's words, not outputs


def outputs_table() -> set[str]:
    """First-column names of the "Stack outputs" table in docs/deploy.md."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    section = text.split(TABLE_HEADING, 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([A-Za-z0-9]+)` \|", section, re.M))


def outputs_named_in(path: Path) -> set[str]:
    """Backticked names in any sentence or table cell of ``path`` that speaks of an output."""
    text = re.sub(r"\n[ \t]*(?=[^\s|#*-])", " ", path.read_text())  # join wrapped lines of a paragraph
    names: set[str] = set()
    for clause in re.split(r"(?<=[.:;,])\s|\||\n", text):  # clauses and list items, not whole paragraphs
        if re.search(r"(?<!-)\boutputs?\b", clause, re.I):  # not the CLI's --output option
            names.update(re.findall(r"`([A-Z][A-Za-z0-9]+)`", clause))
    return {n for n in names if not n.endswith(("Error", "Exception")) and n not in CFN_FIELDS}


def test_docs_name_only_outputs_that_exist(optional: Synth) -> None:
    template = set(optional.raw["Outputs"])
    named = {(path.name, name) for path in DOCS for name in outputs_named_in(path)}
    assert {name for _, name in named} >= {
        "RuntimeArn",
        "GitHubOidcRoleArn",
        "WebhookUrl",
        "WebhookSecretName",
    }
    missing = sorted((doc, name) for doc, name in named if name not in template)
    assert not missing, f"docs name outputs the stack does not have: {missing}; template: {sorted(template)}"


def test_the_outputs_table_is_the_template(optional: Synth) -> None:
    assert outputs_table() == set(optional.raw["Outputs"])


def test_output_ids_carry_no_hash(dev: Synth, prod: Synth, optional: Synth) -> None:
    for s in (dev, prod, optional):
        for name in s.raw["Outputs"]:
            assert not re.search(r"[0-9A-F]{8}$", name), name
    assert "WebhookUrl" in optional.raw["Outputs"] and "GitHubOidcRoleArn" in optional.raw["Outputs"]
