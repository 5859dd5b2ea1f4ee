"""docs/customize.md stays true: its agent directory, built from the page's own examples, is read, checked and its
tools served; and the names it points at exist."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from runtime.agent import tools
from runtime.agent.agent_dir import load_tools, read_agent_dir
from runtime.agent.definition import DEFAULT_SYSTEM_PROMPT
from standins.__main__ import main as standins_main

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "customize.md").read_text(encoding="utf-8")


def _heredoc(path: str) -> str:
    found = re.search(rf"cat > {re.escape(path)} <<'EOF'\n(.*?)\n\s*EOF", DOC, re.DOTALL)
    assert found, f"the example writing {path} is gone from docs/customize.md"
    return found.group(1)


def _write_documented_agent(root: Path) -> Path:
    agent = root / "our-agent"
    (agent / "tools").mkdir(parents=True)
    (agent / "agent.json").write_text(_heredoc("../our-agent/agent.json"))
    code = re.search(r"```python\n# \.\./our-agent/tools/__init__\.py\n(.*?)```", DOC, re.DOTALL)
    assert code, "the tools/__init__.py example is gone"
    (agent / "tools" / "__init__.py").write_text(code.group(1))
    (agent / "gateway" / "tickets").mkdir(parents=True)
    target = _heredoc("../our-agent/gateway/tickets/target.json")
    (agent / "gateway" / "tickets" / "target.json").write_text(target)
    (agent / "gateway" / "tickets" / "app.py").write_text("def handler(event, context):\n    return {}\n")
    return agent


def test_the_documented_agent_directory_loads_with_its_tools(tmp_path: Path) -> None:
    directory = read_agent_dir(_write_documented_agent(tmp_path))
    spec = directory.definition
    assert spec.system_prompt != DEFAULT_SYSTEM_PROMPT and spec.include_sample_tools is False
    assert json.loads(_heredoc("../our-agent/agent.json"))["max_turns"] == spec.max_turns
    assert load_tools(directory).tool_names == ("mcp__agent__queue_depth",)
    assert directory.tool_names == ["mcp__gateway__tickets___get_ticket"]
    assert "mcp__agent__<name>" in DOC and "mcp__gateway__<target>___<tool>" in DOC


def test_the_names_the_guide_points_at_exist() -> None:
    for path in (
        "runtime/agent/definition.py",
        "runtime/agent/tools.py",
        "infra/gateway.py",
        "infra/nag.py",
        "infra/agent_tools.py",
        "infra/image_context.py",
        "infra/functions/invoices/app.py",
        "runtime/agent/data/sample_invoices.json",
        "agents/sample/",
    ):
        assert f"`{path}`" in DOC and (ROOT / path).exists(), path
    assert tools.SERVER_NAME == "kit" and callable(tools.build_sample_server)
    gateway = (ROOT / "infra" / "gateway.py").read_text(encoding="utf-8")
    assert "class InvoiceTools" in gateway and 'gateway_target_name="invoices"' in gateway
    cdk = json.loads((ROOT / "cdk.json").read_text())["context"]["agentkit"]
    assert cdk["agent_dir"] == "agents/sample" and '"agent_dir": "../our-agent"' in DOC


def test_the_stand_in_option_the_guide_documents_exists(capsys: pytest.CaptureFixture[str]) -> None:
    assert "python -m standins --prefer-tool NAME" in DOC
    with pytest.raises(SystemExit):
        standins_main(["--help"])
    assert "--prefer-tool" in capsys.readouterr().out
