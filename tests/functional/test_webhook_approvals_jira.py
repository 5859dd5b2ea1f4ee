"""Fix jobs and approvals asked for and answered on a Jira issue, the change proposed on the mapped GitHub repository.

The scene of tests/functional/test_webhook_approvals.py (signed deliveries → receiver → SQS → worker → the real
``python -m runtime`` with the fake CLI behind the AgentCore data-plane stand-in → job events on SQS → reporter;
moto for SQS, DynamoDB and Secrets Manager), driven by signed Jira ``comment_created`` deliveries on issue
``SP-9``. Project ``SP`` is mapped to the GitHub stand-in's ``octo/kit`` (``JIRA_REPOSITORIES``), naming two
accounts (``fix_account_ids``) and one group (``fix_group``): only they may start a fix or answer its approval.
Progress comments, approval cards and refusals are Jira comments (the stand-in accepts only valid ADF); the pull
request opens on GitHub.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.functional.fix_flow import (
    adf_text,
    assert_lambdas_never_logged_a_token,
    assert_no_token_reached_the_runtime,
    jira_comment,
    pump_events,
    run_worker,
)
from tests.functional.test_webhook_approvals import make_world
from tests.functional.test_webhook_fix import EDIT, FIXED
from tests.unit.webhook.support import call

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning"),
]
APPROVAL = re.compile(r"apv-[0-9a-f]{20}")


@pytest.fixture(autouse=True)
def _lambdas_never_log_a_token(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> Iterator[None]:
    yield
    assert_lambdas_never_logged_a_token(capfd, caplog)


@pytest.fixture
def plain(tmp_path: Path, moto_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """The scene without approval rules: a fix runs to its pull request."""
    with make_world(tmp_path, moto_server, monkeypatch, {}) as world:
        yield world


def texts(world: SimpleNamespace) -> list[str]:
    """Every comment the Jira stand-in accepted, as text, oldest first."""
    return [adf_text(c["body"]) for c in world.jira.replies]


def test_a_jira_fix_opens_the_pull_request_on_the_mapped_github_repository(plain: SimpleNamespace) -> None:
    event, _ = jira_comment(f"/agent fix the add function {EDIT}", 20001)
    status, doc = call(event)
    assert (status, doc["status"]) == (202, "queued"), doc
    run_worker(plain)
    pump_events(plain, until="result")
    [pull] = plain.github.pulls
    assert plain.github.branch_changes(pull["head"]["ref"]) == {"src/calc.py": FIXED}
    [progress] = plain.jira.replies
    assert progress["issue"] == "SP-9"
    assert pull["html_url"] in adf_text(progress["body"])
    assert_no_token_reached_the_runtime(plain)
