"""The backstop of ``paths`` approval rules, over real HTTP through the real runtime (``python -m runtime``) with the
real claude-agent-sdk and the fake CLI, whose Write and Edit tools change files for real.

A rule's parsing sees the path a file tool or a Bash word names, not where a write lands: a Write through a symbolic
link of the snapshot (``deploy -> infra``) names ``deploy/extra.tf`` and lands in ``infra/extra.tf``, under the
rule ``infra/**``, without waiting. The patch of that turn withholds it (``needs approval: paths infra/**``), while
the change an approved call made under the rule, and every change outside it, reach the patch.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.archives import Entry, b64, tar_gz
from harness.runtime_server import EDITING_AGENT, fake_cli_server, session_id

pytestmark = pytest.mark.timeout(120)

SNAPSHOT = [
    Entry("infra/main.tf", b'region = "a"\n'),
    Entry("src/app.py", b"x = 1\n"),
    Entry("deploy", kind="symlink", target="infra"),
]
EDIT = {"file_path": "infra/main.tf", "old_string": '"a"', "new_string": '"b"'}
SNEAK = '[tool:Write {"file_path": "deploy/extra.tf", "content": "open = true\\n"}]'
APP = '[tool:Edit {"file_path": "src/app.py", "old_string": "x = 1", "new_string": "x = 2"}]'


def result(reply: Any) -> dict[str, Any]:
    assert reply.status == 200, reply.body
    assert reply.body["type"] == "result", reply.body
    return dict(reply.body)


def test_a_change_under_a_path_rule_that_no_approved_call_made_stays_out_of_the_patch(tmp_path: Path) -> None:
    (tmp_path / "agent.json").write_text(json.dumps(EDITING_AGENT))
    env = {
        "AGENTKIT_AGENT_FILE": str(tmp_path / "agent.json"),
        "AGENTKIT_SANDBOX": "off",
        "AGENTKIT_SESSION_STORE": f"sqlite:///{tmp_path / 'sessions.db'}",
        "AGENTKIT_APPROVALS": json.dumps({"paths": ["infra/**"]}),
    }
    sid = session_id("ap-backstop")
    with fake_cli_server(tmp_path, **env) as srv:
        first = result(
            srv.invoke(
                f"{SNEAK} {APP}",
                session=sid,
                stream=False,
                extra={"workspace": {"tar_gz_b64": b64(tar_gz(SNAPSHOT))}},
            )
        )
        # Nothing waited: the Write named deploy/extra.tf, which the rule does not match.
        assert first["subtype"] == "success" and "approval" not in first
        assert first["changed_files"] == ["src/app.py"]
        assert first["withheld_files"] == ["infra/extra.tf (needs approval: paths infra/**)"]
        assert "infra/extra.tf" not in first["patch"] and "x = 2" in first["patch"]

        # An approved edit under the rule reaches the patch; the sneaked file still does not.
        paused = result(srv.invoke(f"[tool:Edit {json.dumps(EDIT)}]", session=sid, stream=False))
        assert paused["subtype"] == "awaiting_approval" and "patch" not in paused
        card = paused["approval"]
        assert card["rule"] == "paths: infra/** (infra/main.tf)"
        body = {"approve": {"id": card["id"], "by": "ada", "note": f"[tool:Edit {json.dumps(EDIT)}]"}}
        done = result(
            srv.invoke(session=sid, stream=False, body=json.dumps({**body, "stream": False}).encode())
        )
    assert done["subtype"] == "success"
    assert done["changed_files"] == ["infra/main.tf", "src/app.py"]
    assert done["withheld_files"] == ["infra/extra.tf (needs approval: paths infra/**)"]
    # The patch applies to the original tree and makes exactly the approved change under the rule.
    repo = tmp_path / "checkout"
    for entry in SNAPSHOT:
        target = repo / entry.name
        target.parent.mkdir(parents=True, exist_ok=True)
        if entry.kind == "symlink":
            target.symlink_to(entry.target)
        else:
            target.write_bytes(entry.data)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "apply", "-"], cwd=repo, input=done["patch"].encode(), check=True)
    assert (repo / "infra/main.tf").read_bytes() == b'region = "b"\n'
    assert not (repo / "infra/extra.tf").exists()
    assert (repo / "src/app.py").read_bytes() == b"x = 2\n"
