"""docs/customize.md stays true: its agent definition example loads, and the names it points at exist."""

from __future__ import annotations

import json
import re
from pathlib import Path

from runtime.agent import tools
from runtime.agent.definition import DEFAULT_SYSTEM_PROMPT, AgentDefinitionSpec

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "customize.md").read_text(encoding="utf-8")


def test_the_json_definition_example_is_a_valid_definition(tmp_path: Path) -> None:
    example = re.search(r"cat > my-agent.json <<'EOF'\n(.*?)\n\s*EOF", DOC, re.DOTALL)
    assert example, "the JSON example is gone from docs/customize.md"
    path = tmp_path / "my-agent.json"
    path.write_text(example.group(1))
    spec = AgentDefinitionSpec.from_file(path)
    assert spec.system_prompt != DEFAULT_SYSTEM_PROMPT and spec.include_sample_tools is False
    assert json.loads(example.group(1))["max_turns"] == spec.max_turns


def test_the_names_the_guide_points_at_exist() -> None:
    for path in (
        "runtime/agent/definition.py",
        "runtime/agent/tools.py",
        "infra/gateway.py",
        "infra/functions/invoices/app.py",
        "runtime/agent/data/sample_invoices.json",
    ):
        assert f"`{path}`" in DOC and (ROOT / path).exists(), path
    assert tools.SERVER_NAME == "kit" and callable(tools.build_sample_server)
    gateway = (ROOT / "infra" / "gateway.py").read_text(encoding="utf-8")
    assert "class InvoiceTools" in gateway and 'gateway_target_name="invoices"' in gateway
    assert "mcp__gateway__<target>___<tool>" in DOC
