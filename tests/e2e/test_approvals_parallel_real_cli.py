"""Two tool calls in one model message, with the REAL bundled CLI in the OS sandbox: one needs approval, one does not.
The CLI runs PreToolUse for each: the one that waits stops the turn and never runs; the other runs as it would have."""

from __future__ import annotations

import json
from pathlib import Path

from harness.runtime_server import session_id
from standins import BedrockStandIn, Reply
from standins.replies import ToolUse
from tests.e2e.test_approvals_real_cli import SECRET_LINE, _result, _server, _text, scene

__all__ = ["scene"]


def test_a_waiting_call_next_to_a_free_one_does_not_run(scene: tuple[BedrockStandIn, Path]) -> None:
    bedrock, tmp = scene
    (tmp / "workspace" / "other.txt").write_text("free to read\n")
    (tmp / "workspace" / "other.txt").chmod(0o644)
    bedrock.enqueue(
        Reply.message(
            ToolUse("Bash", {"command": "cat notes.txt"}, "toolu_par_1"),
            ToolUse("Read", {"file_path": str(tmp / "workspace" / "other.txt")}, "toolu_par_2"),
            stop_reason="tool_use",
        ),
        Reply.text("unused"),
    )
    srv = _server(bedrock, tmp, "par")
    try:
        body = _result(srv.invoke("Read both", session=session_id("approvals-par"), stream=False))
        srv.invoke("and now?", session=session_id("approvals-par"), stream=False)
    finally:
        srv.stop()
    assert body["subtype"] == "awaiting_approval", body
    assert body["approval"]["input"] == {"command": "cat notes.txt"}
    results = bedrock.tool_results()
    waited = results["toolu_par_1"]
    assert waited["is_error"] and SECRET_LINE not in _text(waited)
    assert all(SECRET_LINE not in json.dumps(r.body) for r in bedrock.model_requests)
    # the call that needed no approval ran as usual (its result reached the model with the next prompt)
    assert not results["toolu_par_2"].get("is_error") and "free to read" in _text(results["toolu_par_2"])
