"""The gateway stand-in (:mod:`harness.gateway_standin`) serving an agent directory's own Gateway tools: it lists
each ``gateway/<target>/target.json``'s tools as ``<target>___<tool>`` and answers a call by running the target's
Lambda handler in this process, with the event and context AgentCore Gateway gives it (the arguments as the event,
the tool's name in ``context.client_context.custom["bedrockAgentCoreToolName"]``), as a deployed target would."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from harness.gateway_standin import GatewayControl
from runtime.agent.agent_dir import GatewayTarget, read_agent_dir


def _handler(target: GatewayTarget) -> Callable[[Any, Any], Any]:
    module_name, _, function = target.spec.handler.partition(".")
    unique = f"agentkit_gateway_target_{target.name.replace('-', '_')}_{module_name}"
    path = target.directory / f"{module_name}.py"
    if not path.is_file():
        path = target.directory / module_name / "__init__.py"
    spec = importlib.util.spec_from_file_location(unique, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(target.directory))  # as Lambda puts the code's root on the path
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(target.directory))
    return getattr(module, function)


def agent_gateway_control(agent_dir: Path) -> GatewayControl:
    """A :class:`GatewayControl` listing and calling ``agent_dir``'s Gateway tools (none: an empty list)."""
    targets = read_agent_dir(agent_dir).gateway_targets
    handlers = {t.name: _handler(t) for t in targets}
    tools = [w for t in targets for w in t.wire_tools()]

    def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        target = name.split("___", 1)[0]
        context = SimpleNamespace(
            client_context=SimpleNamespace(custom={"bedrockAgentCoreToolName": name}),
            function_name=f"stand-in-{target}",
            aws_request_id="stand-in",
        )
        try:
            result = handlers[target](arguments, context)
        except Exception as exc:  # a deployed target's failure reaches the model as an error result
            return {"content": [{"type": "text", "text": f"{type(exc).__name__}: {exc}"}], "isError": True}
        text = result if isinstance(result, str) else json.dumps(result)
        return {"content": [{"type": "text", "text": text}], "isError": False}

    return GatewayControl(tools=tools, call=call)
