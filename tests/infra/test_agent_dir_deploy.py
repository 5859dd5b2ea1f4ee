"""A team's agent directory OUTSIDE the kit's tree, named in the stage's config, goes into the deploy: synth checks
it, its Gateway Lambda becomes a target next to the sample's (cdk-nag and cfn-lint clean, with no acknowledgement
written for it), and the image's build context carries the directory where the Dockerfile copies it from."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.custom_agent import PROMPT, add_plugin, write_custom_agent
from harness.dockerfile import instructions
from infra.config import ConfigError, load_config
from infra.image_context import KIT_PATHS, stage_image_context
from tests.infra.conftest import ROOT, Synth, base_context, synth

pytestmark = pytest.mark.infra
CFN_LINT = Path(sys.executable).parent / "cfn-lint"


@pytest.fixture(scope="module")
def custom(tmp_path_factory: pytest.TempPathFactory) -> tuple[Synth, Path]:
    agent = write_custom_agent(tmp_path_factory.mktemp("team-repo"))
    add_plugin(agent)
    assert ROOT not in agent.parents  # outside the kit's checkout
    return synth(
        tmp_path_factory.mktemp("synth"), stage="dev", overrides={"agent_dir": str(agent)}, account=None
    ), agent


def _docker_asset_dir(s: Synth) -> Path:
    manifest = json.loads(next(s.template_path.parent.glob("*.assets.json")).read_text())
    (image,) = manifest["dockerImages"].values()
    return s.template_path.parent / image["source"]["directory"]


def test_its_gateway_tool_is_a_target_of_the_gateway(custom: tuple[Synth, Path]) -> None:
    s, _ = custom
    targets = {
        r["Properties"]["Name"]: r["Properties"]
        for r in s.raw["Resources"].values()
        if r["Type"] == "AWS::BedrockAgentCore::GatewayTarget"
    }
    assert set(targets) == {"invoices", "tickets"}
    (tool,) = targets["tickets"]["TargetConfiguration"]["Mcp"]["Lambda"]["ToolSchema"]["InlinePayload"]
    assert tool["Name"] == "get_ticket" and tool["InputSchema"]["Required"] == ["ticket_id"]
    functions = [r["Properties"] for r in s.raw["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    assert any(
        "target tickets" in f.get("Description", "") and f["Handler"] == "app.handler" for f in functions
    )


def test_the_stack_with_it_is_nag_and_cfn_lint_clean(custom: tuple[Synth, Path]) -> None:
    s, _ = custom  # synth registered cdk-nag: an unacknowledged finding would have raised there
    result = subprocess.run(
        [str(CFN_LINT), str(s.template_path)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_image_context_carries_the_directory_where_the_dockerfile_copies_it(
    custom: tuple[Synth, Path],
) -> None:
    s, agent = custom
    context = _docker_asset_dir(s)
    assert json.loads((context / "agent" / "agent.json").read_text())["system_prompt"] == PROMPT
    assert (context / "agent" / "tools" / "__init__.py").read_text() == (
        agent / "tools" / "__init__.py"
    ).read_text()
    assert (context / "agent" / "gateway" / "tickets" / "app.py").is_file()
    # the plugin's Markdown too: the kit's .dockerignore drops *.md only at the context's root
    assert (context / "agent" / "plugin" / "commands" / "hello.md").is_file()
    assert (context / "agent" / "plugin" / "skills" / "greet" / "SKILL.md").is_file()
    # every COPY source of the Dockerfile is in the context (a docker build would find it)
    for keyword, rest in instructions(context / "Dockerfile"):
        if keyword == "COPY":
            source = rest.split()[0]
            assert (context / source).exists(), source
    env = " ".join(rest for keyword, rest in instructions(context / "Dockerfile") if keyword == "ENV")
    assert "AGENTKIT_AGENT_DIR=/app/agent" in env
    assert not (context / "tests").exists() and not (context / "infra").exists()


def test_staging_keeps_caches_out_and_every_kit_path_in(tmp_path: Path) -> None:
    agent = write_custom_agent(tmp_path / "repo")
    (agent / "tools" / "__pycache__").mkdir()
    (agent / "tools" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    context = stage_image_context(kit_root=ROOT, agent_dir=agent, dest=tmp_path / "ctx")
    for relative in KIT_PATHS:
        assert (context / relative).exists(), relative
    assert not (context / "agent" / "tools" / "__pycache__").exists()
    copies = [rest.split()[0] for keyword, rest in instructions(ROOT / "Dockerfile") if keyword == "COPY"]
    assert {re.sub(r"/$", "", c) for c in copies} <= {*KIT_PATHS, "agent"}


def test_a_bad_agent_directory_fails_synth_naming_the_key(tmp_path: Path) -> None:
    raw = base_context()["agentkit"]
    with pytest.raises(ConfigError, match=r"agentkit\.agent_dir: .*does not exist"):
        load_config({**raw, "agent_dir": str(tmp_path / "nowhere")}, stage="dev")
    agent = write_custom_agent(tmp_path)
    (agent / "agent.json").write_text('{"max_turns": -1}')
    with pytest.raises(ConfigError, match=r"agentkit\.agent_dir: invalid agent definition .*max_turns"):
        load_config({**raw, "agent_dir": str(agent)}, stage="dev")


def test_gateway_tools_with_the_gateway_off_are_refused(tmp_path: Path) -> None:
    raw = base_context()["agentkit"]
    agent = write_custom_agent(tmp_path)
    with pytest.raises(ConfigError, match=r"agentkit\.gateway\.enabled: .*tickets"):
        load_config({**raw, "agent_dir": str(agent), "gateway": {"enabled": False}}, stage="dev")


def test_the_runtime_starts_on_the_directory_the_image_carries(
    custom: tuple[Synth, Path], tmp_path: Path
) -> None:
    """What the image runs: ``python -m runtime`` with ``AGENTKIT_AGENT_DIR`` at the context's copy (the fake CLI
    stands in for the model; the tools package is imported at start, before ``/ping`` answers)."""
    from harness.cli import write_fake_cli
    from harness.runtime_server import RuntimeServer, session_id

    s, _ = custom
    copied = _docker_asset_dir(s) / "agent"
    server = RuntimeServer(
        env={
            "AGENTKIT_CLI_PATH": str(write_fake_cli(tmp_path)),
            "AGENTKIT_STATE_DIR": str(tmp_path / "state"),
            "AGENTKIT_AGENT_DIR": str(copied),
        },
        log_path=tmp_path / "server.log",
    ).start()
    try:
        reply = server.invoke("hello", session=session_id("image-agent"))
    finally:
        server.stop()
    assert reply.events[-1]["type"] == "result"
    log = (tmp_path / "server.log").read_text()
    assert f"agent: agent directory {copied}" in log and "mcp__agent__queue_depth" in log
