"""An asynchronous job whose turn reaches a call that waits for a person's approval: its one result event says
``awaiting_approval`` with the request's card (the job ends in that state), and the answer, sent as a new job, runs
exactly the approved edit. Real ``python -m runtime`` with the fake CLI, job events to SQS on a moto server."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from harness.archives import tar_gz
from harness.runtime_server import session_id
from tests.functional.test_jobs import CONTEXT, Inbox, aws, inbox, job_server, queue, submit

__all__ = ["aws", "inbox", "queue"]  # fixtures used here

pytestmark = pytest.mark.timeout(120)

CI = ".github/workflows/ci.yml"
EDIT = {"file_path": CI, "old_string": "make test", "new_string": "make test lint"}


def test_a_paused_job_reports_its_card_and_the_approval_job_makes_the_edit(
    tmp_path: Path, queue: str, moto_server: str, inbox: Inbox
) -> None:
    workspace = {"tar_gz_b64": base64.b64encode(tar_gz([(CI, b"run: make test\n")])).decode()}
    sid = session_id("job-approval")
    with job_server(
        tmp_path, queue, moto_server, AGENTKIT_APPROVALS=json.dumps({"paths": [".github/**"]})
    ) as srv:
        assert (
            submit(srv, sid, "gh-7-1", f"[tool:Edit {json.dumps(EDIT)}]", workspace=workspace).status == 202
        )
        paused = inbox.result("gh-7-1")
        card: dict[str, Any] = paused["result"]["approval"]
        assert paused["result"]["subtype"] == "awaiting_approval" and "patch" not in paused["result"]
        assert paused["context"] == CONTEXT and paused["session_id"] == sid
        assert (card["job_id"], card["tool"], card["input"]) == ("gh-7-1", "Edit", EDIT)
        assert card["rule"] == f"paths: .github/** ({CI})"

        reply = srv.invoke(
            session=sid,
            stream=False,
            body=json.dumps(
                {
                    "approve": {
                        "id": card["id"],
                        "by": "maintainer",
                        "note": f"[tool:Edit {json.dumps(EDIT)}]",
                    },
                    "async": True,
                    "job": {"id": card["id"], "context": CONTEXT},
                }
            ).encode(),
        )
        assert reply.status == 202, reply.body
        done = inbox.result(card["id"])["result"]
    assert done["type"] == "result" and done["subtype"] == "success", done
    # The approved edit ran; what it changed is a protected path (CI configuration), which an approval does not
    # let into the patch: the deployment's allow-list decides that (docs/approvals.md).
    assert f"{CI} (protected: ci_config)" in done["withheld_files"], done
    assert CI not in done["changed_files"]
