"""``paths`` approval rules with the REAL bundled Claude Code CLI, the real OS sandbox and the ``developer`` profile,
against the Bedrock stand-in (only the model is scripted).

``AGENTKIT_APPROVALS`` names ``infra/**``. The developer profile writes through sandboxed programs, not file tools:

- a ``touch infra/new.tf`` names a path under the rule, so the turn stops at it (the parser layer); approved, it
  runs and its file reaches the patch;
- a ``python3 -c`` program that writes ``infra/extra.tf`` names no path the shell parser can see, so it runs in the
  sandbox without waiting; the patch withholds what it wrote (the backstop: ``needs approval: paths infra/**``),
  while its change outside the rule reaches the patch.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.archives import b64, tar_gz
from harness.runtime_server import RuntimeServer, session_id
from runtime.identity import claude_session_id
from standins import BedrockStandIn, Reply
from tests.e2e.real_cli_scene import DEVELOPER_AGENT, bash, python_read_paths, sandboxed_runtime

pytestmark = pytest.mark.timeout(300)
FILES = {"infra/main.tf": b'region = "a"\n', "src/app.py": b"x = 1\n"}
#: Writes under the rule and fixes src/app.py; the paths are inside a Python string, not shell words.
SNEAK = (
    "import pathlib; pathlib.Path('infra/extra.tf').write_text('open = true\\n');"
    " p = pathlib.Path('src/app.py'); p.write_text(p.read_text().replace('x = 1', 'x = 2'))"
)


@pytest.fixture
def scene() -> Iterator[dict[str, Any]]:
    with sandboxed_runtime(
        "ak-ap-paths-real-",
        {**DEVELOPER_AGENT, "sandbox_read_paths": python_read_paths()},
        AGENTKIT_APPROVALS=json.dumps({"paths": ["infra/**"]}),
    ) as scene:
        yield scene


def result(reply: Any) -> dict[str, Any]:
    assert reply.status == 200, reply.body
    assert reply.body["type"] == "result", reply.body
    return dict(reply.body)


def test_a_command_naming_a_ruled_path_waits_and_an_unseen_write_stays_out_of_the_patch(
    scene: dict[str, Any],
) -> None:
    root: Path = scene["root"]
    bedrock: BedrockStandIn = scene["bedrock"]
    server: RuntimeServer = scene["server"]
    sid = session_id("ap-paths-real")
    bedrock.enqueue(
        Reply.message(bash("python3 -c " + shlex.quote(SNEAK), "toolu_pp_1")),
        Reply.message(bash("touch infra/new.tf", "toolu_pp_2")),
        Reply.text("unused"),
    )
    paused = result(
        server.invoke(
            "Fix app.py and add the new module.",
            session=sid,
            stream=False,
            timeout=280,
            extra={"workspace": {"tar_gz_b64": b64(tar_gz(list(FILES.items())))}},
        )
    )
    assert paused["subtype"] == "awaiting_approval", paused
    card = paused["approval"]
    assert (
        card["rule"] == "paths: infra/** (infra/new.tf)" and card["input"]["command"] == "touch infra/new.tf"
    )
    # The Python program ran in the sandbox without waiting: its write under the rule is in the workspace.
    tree = root / "state" / "workspaces" / claude_session_id(sid, None)
    assert (tree / "infra" / "extra.tf").read_text() == "open = true\n"
    assert not (tree / "infra" / "new.tf").exists()  # the call that waited did not run

    bedrock.reset()
    bedrock.enqueue(Reply.message(bash("touch infra/new.tf", "toolu_pp_3")), Reply.text("Done."))
    done = result(
        server.invoke(
            session=sid,
            stream=False,
            timeout=280,
            body=json.dumps({"approve": {"id": card["id"], "by": "maintainer"}, "stream": False}).encode(),
        )
    )
    assert done["subtype"] == "success", done
    assert done["changed_files"] == ["infra/new.tf", "src/app.py"], done
    assert done["withheld_files"] == ["infra/extra.tf (needs approval: paths infra/**)"], done
    assert "infra/extra.tf" not in done["patch"] and "+x = 2" in done["patch"]
    assert "sandbox: on" in (root / "server.log").read_text()
