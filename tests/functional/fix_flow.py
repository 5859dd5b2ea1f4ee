"""The wiring of an issue-comment fix, shared by the functional test (fake CLI) and the e2e test (real CLI).

:func:`fix_world` stands up everything around a given runtime: a moto server's SQS queues (tasks, job events),
DynamoDB table and the webhook's secrets, the AgentCore data-plane stand-in in front of the runtime (it checks
SigV4), the GitHub and GitLab repository stand-ins holding ``files``, GitLab's members API, and the three Lambdas
(receiver, worker, reporter) configured from the environment as in Lambda. :func:`make_world` is that world around
the runtime with the fake CLI (the functional tests' scene: ``harness.runtime_server.EDITING_AGENT``, the repository
:data:`FILES`, the scripted :data:`EDIT` that fixes it). The helpers drive it: one worker invocation per queued task,
the reporter fed from the events queue, and the checks that no tracker token reached the runtime's side.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

from harness.agentcore_dataplane import AgentCoreDataPlane
from harness.github_repo_api import GitHubRepoApi
from harness.gitlab_repo_api import GitLabRepoApi
from harness.runtime_server import EDITING_AGENT, RuntimeServer, fake_cli_server
from harness.tracker_apis import GitLabApi, JiraApi
from harness.webhook_scene import (
    ACTOR_HEADER,
    LAMBDA_CONTEXT,
    aws_clients,
    create_job_resources,
    deliver_events,
    deliver_tasks,
    lambda_environment,
)
from tests.unit.webhook.support import (
    GITHUB_REPOSITORY_ID,
    GITLAB_MEMBERS,
    GITLAB_SECRET,
    GITLAB_TOKEN,
    JIRA_SECRET,
    JIRA_TOKEN,
    SECRET_NAMES,
    TOKEN,
    fixture,
    fresh_jira,
    github_event,
    jira_event,
    tracker_env,
)
from webhook import receiver, reporter, wiring, worker
from webhook.settings import ENV
from webhook.trackers import jira_auth_header

#: The marks of every webhook scene test file (with its own ``pytest.mark.timeout``): the Lambdas' Powertools metrics
#: warn when an invocation published none, which is expected here.
SCENE_MARKS = [pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")]
#: :data:`SCENE_MARKS`, and :func:`lambdas_never_log_a_token` after every test of the file. The fixture is found by
#: name: such a file registers this module as a plugin (``pytest_plugins = ["tests.functional.fix_flow"]``), else
#: every test of it errors with "fixture not found" (the check cannot silently go missing).
TOKEN_CHECKED_MARKS = [*SCENE_MARKS, pytest.mark.usefixtures("lambdas_never_log_a_token")]
#: What the Jira stand-in expects in ``Authorization`` (the worker's and reporter's Jira token).
JIRA_AUTHORIZATION = jira_auth_header(JIRA_TOKEN)
#: Every secret of the trusted side: tracker tokens (Jira's as its API token and as the header it becomes) and the
#: GitLab and Jira webhook secrets.
TOKENS = (
    TOKEN,
    GITLAB_TOKEN,
    GITLAB_SECRET,
    JIRA_SECRET,
    json.loads(JIRA_TOKEN)["api_token"],
    JIRA_AUTHORIZATION.split(" ", 1)[1],
)

#: The Jira project of the fixtures (``SP-9``) and the Jira accounts of the scene (account id → display name).
#: ``mia`` wrote the fixture's comment; ``mia`` and ``noah`` are named by the mapping (``fix_account_ids``),
#: ``olga`` is a member of :data:`JIRA_FIX_GROUP` (the Jira stand-in's ``groups``), ``rex`` is none of these.
JIRA_PROJECT = "SP"
JIRA_ACCOUNTS = {
    "mia": ("5b10ac8d82e05b22cc7d4ef5", "Mia Krystof"),
    "noah": ("5b10ac8d82e05b22cc7d4ef6", "Noah Berg"),
    "olga": ("712020:0e3a5f9c-41d7-4c2b-9d5e-2f6a8b1c7d90", "Olga Lind"),
    "rex": ("712020:7c1b2a3d-9e8f-4a5b-8c6d-1e2f3a4b5c6d", "Rex Moor"),
}
JIRA_FIXERS = (JIRA_ACCOUNTS["mia"][0], JIRA_ACCOUNTS["noah"][0])
JIRA_FIX_GROUP = "kit-fixers"
#: ``JIRA_REPOSITORIES``: project SP's fixes go to the GitHub stand-in's repository.
JIRA_MAPPING = {
    JIRA_PROJECT: {
        "tracker": "github",
        "repository": "octo/kit",
        "fix_account_ids": list(JIRA_FIXERS),
        "fix_group": JIRA_FIX_GROUP,
    }
}

#: The repository the fake-CLI scene serves, its scripted fix (a fake-CLI directive in the prompt) and the result.
FILES = {
    "src/calc.py": ("100644", b"def add(a, b):\n    return a - b\n"),
    "tests/test_calc.py": (
        "100644",
        b"from src.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    ),
    "README.md": ("100644", b"# calc\n"),
}
EDIT = '[tool:Edit {"file_path": "src/calc.py", "old_string": "a - b", "new_string": "a + b"}]'
FIXED = ("100644", b"def add(a, b):\n    return a + b\n")


def job_queues(moto: str) -> tuple[SimpleNamespace, str, str, str]:
    """New resources on the (session-long) moto server: ``(aws clients, table, tasks queue, events queue)``.
    The runtime must be given the events queue before :func:`fix_world` starts it."""
    aws = aws_clients(moto)
    made = create_job_resources(aws, dict(SECRET_NAMES.values()))
    return aws, made.table, made.tasks, made.events


@contextmanager
def fix_world(
    *,
    moto: str,
    queues: tuple[SimpleNamespace, str, str, str],
    runtime: RuntimeServer,
    files: Mapping[str, tuple[str, bytes]],
    tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[SimpleNamespace]:
    """Start ``runtime`` (not yet started) and the stand-ins around it; configure the Lambdas. Yields the world."""
    aws, table, tasks, events = queues
    with (
        runtime,
        AgentCoreDataPlane(runtime_port=runtime.port) as plane,
        GitHubRepoApi(token=TOKEN, repository="octo/kit", files=dict(files)) as github,
        GitLabRepoApi(
            token=GITLAB_TOKEN, project_id=5, path="gitlab-org/gitlab-test", files=dict(files)
        ) as gitlab,
        GitLabApi(token=GITLAB_TOKEN, members=GITLAB_MEMBERS) as members,
        JiraApi(authorization=JIRA_AUTHORIZATION) as jira,
    ):
        jira.groups.update(
            {
                JIRA_ACCOUNTS["olga"][0]: [JIRA_FIX_GROUP, "jira-software-users"],
                JIRA_ACCOUNTS["rex"][0]: ["jira-software-users"],
            }
        )
        env = {
            **tracker_env(gitlab.api_url, jira.url),
            **lambda_environment(
                moto=moto, plane=plane.url, github_api=github.url, queue_url=tasks, table=table
            ),
            ENV["fix_trigger_label"]: "agent-fix",
            ENV["progress_min_seconds"]: "0",
            ENV["jira_repositories"]: json.dumps(JIRA_MAPPING),
        }
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        # Fixes need the right to write: the commenters and labelers of the GitHub fixtures are writers.
        github.permissions.update({"alice": "write", "carol": "maintain", "octo": "admin"})
        # The receiver asks GitLab's members API (another stand-in) who may trigger; worker and reporter are
        # built from the environment alone.
        receiver.configure(
            receiver.ReceiverDeps(
                trackers=wiring.build_trackers(
                    "receiver", env={**env, ENV["gitlab_api_url"]: members.api_url}, secrets_client=aws.sm
                ),
                sqs=aws.sqs,
                queue_url=tasks,
                persistence=DynamoDBPersistenceLayer(table_name=table, boto3_client=aws.ddb),
            )
        )
        worker.configure(None)
        reporter.configure(None)
        try:
            yield SimpleNamespace(
                table=table,
                aws=aws,
                tasks=tasks,
                events=events,
                runtime=runtime,
                plane=plane,
                github=github,
                gitlab=gitlab,
                jira=jira,
                tmp=tmp,
            )
        finally:
            receiver.configure(None)
            worker.configure(None)
            reporter.configure(None)


def make_world(
    tmp_path: Path,
    moto_server: str,
    monkeypatch: pytest.MonkeyPatch,
    approvals: Mapping[str, Any] | None = None,
) -> AbstractContextManager[SimpleNamespace]:
    """:func:`fix_world` around the runtime with the fake CLI and ``EDITING_AGENT``, serving :data:`FILES`, its
    job events on new queues (the moto server lives for the whole session); ``approvals``: its
    ``AGENTKIT_APPROVALS``."""
    queues = job_queues(moto_server)
    (tmp_path / "agent.json").write_text(json.dumps(EDITING_AGENT))
    runtime = fake_cli_server(
        tmp_path,
        AGENTKIT_AGENT_FILE=str(tmp_path / "agent.json"),
        AGENTKIT_ACTOR_HEADER=ACTOR_HEADER,
        AGENTKIT_JOB_EVENTS_QUEUE_URL=queues[3],
        AGENTKIT_JOB_PROGRESS_SECONDS="0.2",
        AWS_ENDPOINT_URL_SQS=moto_server,
        **({} if approvals is None else {"AGENTKIT_APPROVALS": json.dumps(approvals)}),
    )
    return fix_world(
        moto=moto_server, queues=queues, runtime=runtime, files=FILES, tmp=tmp_path, monkeypatch=monkeypatch
    )


def run_worker(world: SimpleNamespace) -> None:
    """One worker invocation per queued task (as Lambda with batch size 1); every record must succeed."""
    deliver_tasks(world.aws.sqs, world.tasks, worker.handler, LAMBDA_CONTEXT)


def pump_events(world: SimpleNamespace, *, until: str, timeout: float = 30.0) -> list[tuple[str, str]]:
    """Feed the events queue to the reporter (one record per invocation, deleted once handled, as Lambda does)
    until an event of kind ``until`` was handled. Returns the ``(kind, body)`` of each, in order."""
    return deliver_events(
        world.aws.sqs, world.events, reporter.handler, until=until, timeout=timeout, context=LAMBDA_CONTEXT
    )


def github_comment(text: str, comment_id: int = 99) -> tuple[dict[str, Any], bytes]:
    """A signed ``issue_comment`` delivery and its body (whose sha256 is the task's key and the job id)."""
    payload = fixture("github", "issue_comment_created")
    payload["comment"]["body"] = text
    payload["comment"]["id"] = comment_id
    payload["repository"].update({"full_name": "octo/kit", "id": GITHUB_REPOSITORY_ID})
    body = json.dumps(payload).encode()
    return github_event(body, event="issue_comment", path="/github", delivery=f"d-{comment_id}"), body


def jira_comment(
    text: str,
    comment_id: int = 10031,
    *,
    account: str = "mia",
    issue: str = "SP-9",
    name: str | None = None,
) -> tuple[dict[str, Any], bytes]:
    """A signed, fresh Jira ``comment_created`` delivery by ``account`` (a key of :data:`JIRA_ACCOUNTS`, or an
    account id of nobody named there; shown as ``name`` when given: anyone can change their display name) on
    ``issue`` of project ``SP``, and its body."""
    account_id, shown = JIRA_ACCOUNTS.get(account, (account, account))
    name = shown if name is None else name
    payload = fresh_jira(fixture("jira", "comment_created"))
    comment = payload["comment"]
    comment.update(id=str(comment_id), body=text)
    comment["self"] = f"{comment['self'].rsplit('/', 1)[0]}/{comment_id}"
    for who in (comment["author"], comment["updateAuthor"]):
        who.update(accountId=account_id, displayName=name)
        who["self"] = who["self"].split("?", 1)[0] + f"?accountId={account_id}"
    payload["issue"]["key"] = issue
    number = int(issue.rsplit("-", 1)[1])
    if issue != "SP-9":  # another issue: another id (the runtime session is the site and the issue's id)
        payload["issue"]["id"] = str(10139 + number)
        payload["issue"]["self"] = payload["issue"]["self"].rsplit("/", 1)[0] + f"/{payload['issue']['id']}"
    body = json.dumps(payload).encode()
    return jira_event(body, **{"x-atlassian-webhook-identifier": f"jira-d-{comment_id}"}), body


def adf_text(doc: Any) -> str:
    """The text of an ADF document as a reader sees it, with each link's target after its text (``[href]``), so a
    check for a URL finds it whether it is written out or behind a link."""
    if isinstance(doc, list):
        return "".join(adf_text(node) for node in doc)
    if not isinstance(doc, dict):
        return ""
    text = str(doc.get("text", ""))
    hrefs = [m.get("attrs", {}).get("href", "") for m in doc.get("marks", []) if m.get("type") == "link"]
    text += "".join(f" [{h}]" for h in hrefs)
    inner = adf_text(doc.get("content", []))
    return (
        text + inner + ("\n" if doc.get("type") in ("paragraph", "codeBlock", "heading", "listItem") else "")
    )


def job_item(world: SimpleNamespace, session_prefix: str) -> dict[str, Any]:
    """The one job record (in the idempotency table) whose runtime session starts with ``session_prefix``."""
    items = world.aws.ddb.scan(TableName=world.table)["Items"]
    jobs = [
        i for i in items if "job" in i and json.loads(i["job"]["S"])["session_id"].startswith(session_prefix)
    ]
    assert len(jobs) == 1, jobs
    return dict(jobs[0])


def assert_no_token_reached_the_runtime(world: SimpleNamespace, *also: bytes) -> None:
    """Not in the runtime's environment (its /proc environ), not in any request the data plane forwarded, not in
    the runtime's or the fake CLI's logs, nor in ``also`` (e.g. what a real CLI sent the model)."""
    assert world.runtime.proc is not None
    environ = Path(f"/proc/{world.runtime.proc.pid}/environ").read_bytes()
    seen = [environ, world.runtime.log_path.read_bytes(), *also]
    fake_log = world.tmp / "fake.log"
    if fake_log.exists():
        seen.append(fake_log.read_bytes())
    for call_ in world.plane.calls:
        seen += [call_["body"], json.dumps(call_["headers"]).encode()]
    assert world.plane.calls, "no invocation reached the runtime"
    # The trusted side did use these very tokens (so their absence above is meaningful).
    used = [
        r["headers"].get("authorization", "") + r["headers"].get("private-token", "")
        for r in world.github.requests + world.gitlab.requests + world.jira.requests
    ]
    assert any(TOKEN in u for u in used) or any(GITLAB_TOKEN in u for u in used)
    for token in TOKENS:
        for blob in seen:
            assert token.encode() not in blob


@pytest.fixture
def lambdas_never_log_a_token(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> Iterator[None]:
    """After the test: the trusted side holds the tokens, and its Lambdas' logs (every record with its extra fields,
    and what they print: EMF) never show one. Used by the files marked with :data:`TOKEN_CHECKED_MARKS`."""
    yield
    out = capfd.readouterr()
    logged = [json.dumps(r.__dict__, default=str) for r in caplog.get_records("call")]
    # The worker's records were captured here (a job started, or stopped while it was being started).
    assert any("fix job started" in line or "fix job stopped before" in line for line in logged)
    for token in TOKENS:
        assert token not in out.out and token not in out.err
        assert not [line for line in logged if token in line]
