"""``/agent stop`` on its own: the job is marked stopped once, StopRuntimeSession is called with the issue's
session, the progress comment says so; a failure is retried without a second stop or comment (moto DynamoDB,
botocore Stubber for StopRuntimeSession, the GitHub stand-in for comments)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from harness.github_repo_api import GitHubRepoApi
from harness.webhook_scene import LAMBDA_CONTEXT, RUNTIME_ARN, agentcore_client, sqs_event
from tests.unit.webhook.support import GITHUB_REPOSITORY_ID, TOKEN, task_json
from webhook import trackers, worker
from webhook.fix.jobs import STOPPED, FixJob, JobStore
from webhook.fix.repos import TrackerComments
from webhook.fix.stop import Stopper
from webhook.replies import ReplyStore
from webhook.webhook_metrics import TrackerMetrics

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
JOB_KEY = "1" * 64


@pytest.fixture
def setup(aws: SimpleNamespace) -> Iterator[SimpleNamespace]:
    with GitHubRepoApi(token=TOKEN, repository="octo/kit", files={"a": ("100644", b"a\n")}) as api:
        adapter = trackers.GitHubTracker(trackers.TrackerOptions(token=lambda: TOKEN, api_url=api.url))
        stop_task = trackers.AgentTask.model_validate_json(task_json(7, comment="/agent stop"))
        progress = adapter.post_reply(stop_task, "Working on it…")
        jobs = JobStore(client=aws.ddb, table_name="idem")
        doc = FixJob(
            tracker="github",
            repository="octo/kit",
            scope_id=stop_task.scope_id,
            issue_number=7,
            issue_id="7",
            issue_ref="#7",
            session_id=stop_task.runtime_session_id,
            comment_id=str(progress.id),
            comment_url=progress.url,
            target_tracker="github",
            target_repository="octo/kit",
            base_branch="main",
            base_sha="2" * 40,
            pr_base="main",
        )
        assert jobs.claim(JOB_KEY)
        jobs.remember_progress_comment(JOB_KEY, comment_id=str(progress.id), url=progress.url)
        assert jobs.started(JOB_KEY, doc, claimed_at=jobs.get(JOB_KEY).stored_at)  # type: ignore[union-attr]
        jobs.record_progress(JOB_KEY, seq=1, cost_usd=0.0123, tool_calls=2, last_tool="Bash", elapsed_s=42)
        client = agentcore_client()
        stub = Stubber(client)
        replies = ReplyStore(client=aws.ddb, table_name="idem")
        deps = worker.WorkerDeps(
            trackers={"github": adapter},
            invoker=None,  # type: ignore[arg-type] # a stop never invokes
            stopper=Stopper(
                client=client,
                runtime_arn=RUNTIME_ARN,
                qualifier="dev",
                jobs=jobs,
                replies=replies,
                comments=TrackerComments({"github": adapter}),
                trackers={"github": adapter},
                metrics=TrackerMetrics(service="test"),
                logger=worker.logger,
                # on the stubbed client: an InvokeAgentRuntime the test does not expect is refused
                invoker=worker.AgentRuntimeInvoker(client=client, runtime_arn=RUNTIME_ARN, qualifier="dev"),
            ),
        )
        worker.configure(deps)
        body = json.loads(task_json(7, comment="/agent stop", key="s" * 64))
        body["intent"] = "stop"
        yield SimpleNamespace(api=api, jobs=jobs, stub=stub, body=json.dumps(body), session=doc.session_id)


def expect_stop(setup: SimpleNamespace, *, error: str | None = None) -> None:
    """One StopRuntimeSession call on the issue's session and the worker's endpoint (``dev``)."""
    params = {"agentRuntimeArn": RUNTIME_ARN, "runtimeSessionId": setup.session, "qualifier": "dev"}
    if error:
        status = 404 if "NotFound" in error else 403
        setup.stub.add_client_error(
            "stop_runtime_session", service_error_code=error, http_status_code=status, expected_params=params
        )
    else:
        setup.stub.add_response(
            "stop_runtime_session",
            {"runtimeSessionId": setup.session, "statusCode": 200},
            expected_params=params,
        )


def test_a_stop_of_a_session_already_gone_still_stops_the_job_once(setup: SimpleNamespace) -> None:
    expect_stop(setup, error="ResourceNotFoundException")
    with setup.stub:
        for _ in range(2):  # delivered twice: the second does nothing (the Stubber has no second answer)
            assert worker.handler(sqs_event(setup.body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
        setup.stub.assert_no_pending_responses()
    state = setup.jobs.get(JOB_KEY)
    assert state.status == STOPPED and state.stopped_by == "bob"
    [comment] = setup.api.comments.values()
    assert comment["edits"] == 1
    assert comment["body"].startswith("Stopped by `@bob` after 42s, 2 tool calls. Cost so far: $0.0123.")


def test_a_failed_stop_call_is_retried_and_finishes_its_own_stop(setup: SimpleNamespace) -> None:
    expect_stop(setup, error="AccessDeniedException")
    expect_stop(setup)
    with setup.stub:
        assert worker.handler(sqs_event(setup.body), LAMBDA_CONTEXT) == {
            "batchItemFailures": [{"itemIdentifier": "m-0"}]
        }
        assert setup.jobs.get(JOB_KEY).status == STOPPED  # recorded first: a late result opens nothing
        assert worker.handler(sqs_event(setup.body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
        setup.stub.assert_no_pending_responses()
    [comment] = setup.api.comments.values()
    assert comment["edits"] == 1 and comment["body"].startswith("Stopped by")


def test_a_stop_while_the_result_is_being_reported_says_it_is_too_late(setup: SimpleNamespace) -> None:
    assert setup.jobs.begin_report(JOB_KEY, lease_seconds=300)  # the reporter is opening the pull request
    with setup.stub:  # no StopRuntimeSession: the agent has finished
        assert worker.handler(sqs_event(setup.body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert setup.jobs.get(JOB_KEY).status == "reporting"
    answer = [c["body"] for c in setup.api.comments.values()][-1]
    assert answer.startswith("Too late to stop") and "Nothing to stop" not in answer


def test_a_stop_after_the_fix_finished_links_its_pull_request(setup: SimpleNamespace) -> None:
    assert setup.jobs.begin_report(JOB_KEY, lease_seconds=300)
    assert setup.jobs.finish(JOB_KEY, pr_url="https://github.example/octo/kit/pull/3")
    with setup.stub:
        assert worker.handler(sqs_event(setup.body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    answer = [c["body"] for c in setup.api.comments.values()][-1]
    assert "the fix has finished already: https://github.example/octo/kit/pull/3" in answer


def test_a_stop_after_a_failed_pull_request_call_names_the_branch_it_may_have_left(
    setup: SimpleNamespace,
) -> None:
    assert setup.jobs.begin_report(JOB_KEY, lease_seconds=300)
    setup.jobs.unreport(JOB_KEY)  # the pull request call failed after the branch was pushed; retried later
    expect_stop(setup)
    with setup.stub:
        assert worker.handler(sqs_event(setup.body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    [comment] = setup.api.comments.values()
    assert setup.jobs.get(JOB_KEY).status == STOPPED
    assert (
        "may have pushed the branch `agent/issue-7-" in comment["body"] and "left in place" in comment["body"]
    )


APPROVAL_ID = "apv-" + "a" * 20


@pytest.fixture
def waiting(setup: SimpleNamespace) -> SimpleNamespace:
    """The job of ``setup`` waiting for an approval, and a Stopper that withdraws it through the worker's invoker
    (on the same stubbed client, so the Stubber checks the order of the two calls)."""
    assert setup.jobs.begin_report(JOB_KEY, lease_seconds=60)
    approval = {"id": APPROVAL_ID, "tool": "Edit", "expires_at": 4_000_000_000.0, "requester": "carol"}
    assert setup.jobs.await_approval(JOB_KEY, approval, cost_usd=0.02, hold_seconds=3600)
    stopper = worker._get_deps().stopper
    assert stopper is not None
    stopper.invoker = worker.AgentRuntimeInvoker(
        client=setup.stub.client, runtime_arn=RUNTIME_ARN, qualifier="dev", actor_header="X-Actor"
    )
    return setup


def expect_withdraw(setup: SimpleNamespace, *, error: str | None = None) -> None:
    """One InvokeAgentRuntime with the withdraw of the waiting job's approval, as the issue's actor."""
    params = {
        "agentRuntimeArn": RUNTIME_ARN,
        "runtimeSessionId": setup.session,
        "qualifier": "dev",
        "runtimeUserId": f"github:{GITHUB_REPOSITORY_ID}",
        "contentType": "application/json",
        "accept": "application/json",
        "payload": json.dumps(
            {
                "withdraw": {
                    "id": APPROVAL_ID,
                    "by": "github:bob",
                    "reason": "the fix job waiting for it was stopped with /agent stop on the issue",
                },
                "stream": False,
            }
        ).encode(),
    }
    if error:
        setup.stub.add_client_error(
            "invoke_agent_runtime",
            service_error_code="RuntimeClientError",
            service_message=f"Received error ({error}) from runtime. Please check your CloudWatch logs",
            http_status_code=424,
            expected_params=params,
        )
        return
    doc = {"type": "approval_withdrawn", "approval": {"id": APPROVAL_ID, "status": "withdrawn"}}
    data = json.dumps(doc).encode()
    setup.stub.add_response(
        "invoke_agent_runtime",
        {
            "response": StreamingBody(io.BytesIO(data), len(data)),
            "contentType": "application/json",
            "statusCode": 200,
        },
        expected_params=params,
    )


def test_a_stop_of_a_waiting_job_withdraws_its_approval_before_it_stops_the_session(
    waiting: SimpleNamespace,
) -> None:
    expect_withdraw(
        waiting
    )  # first: the withdraw is an invocation, which would start a stopped session again
    expect_stop(waiting, error="AccessDeniedException")
    expect_withdraw(waiting)  # the redelivery finds its own stop recorded and withdraws again (idempotent)
    expect_stop(waiting)
    with waiting.stub:
        assert worker.handler(sqs_event(waiting.body), LAMBDA_CONTEXT) == {
            "batchItemFailures": [{"itemIdentifier": "m-0"}]
        }
        assert waiting.jobs.get(JOB_KEY).status == STOPPED
        assert worker.handler(sqs_event(waiting.body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
        assert worker.handler(sqs_event(waiting.body), LAMBDA_CONTEXT) == {
            "batchItemFailures": []
        }  # answered: nothing
        waiting.stub.assert_no_pending_responses()
    [comment] = waiting.api.comments.values()
    assert comment["edits"] == 1 and comment["body"].startswith("Stopped by `@bob`")


@pytest.mark.parametrize("error", ["503", "500"])
def test_a_failed_withdraw_does_not_keep_the_job_from_stopping(
    waiting: SimpleNamespace, error: str, caplog: pytest.LogCaptureFixture
) -> None:
    expect_withdraw(waiting, error=error)  # 503: transient (raised), 500: refused (a code): both only logged
    expect_stop(waiting)
    with waiting.stub:
        assert worker.handler(sqs_event(waiting.body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
        waiting.stub.assert_no_pending_responses()
    assert waiting.jobs.get(JOB_KEY).status == STOPPED
    [comment] = waiting.api.comments.values()
    assert comment["body"].startswith("Stopped by `@bob`")
    assert any("withdraw" in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)


def test_a_stop_of_a_running_job_withdraws_nothing(setup: SimpleNamespace) -> None:
    stopper = worker._get_deps().stopper
    assert stopper is not None
    stopper.invoker = worker.AgentRuntimeInvoker(
        client=setup.stub.client, runtime_arn=RUNTIME_ARN, qualifier="dev"
    )
    expect_stop(setup)  # the Stubber refuses any InvokeAgentRuntime
    with setup.stub:
        assert worker.handler(sqs_event(setup.body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
        setup.stub.assert_no_pending_responses()
    assert setup.jobs.get(JOB_KEY).status == STOPPED
