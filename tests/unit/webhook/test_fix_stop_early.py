"""``/agent stop`` while a fix is still being started (snapshot being fetched, runtime being invoked): the stop is
kept on the fix task's claim and the worker honours it — it does not start the job, or stops the one the runtime
just accepted — with one edit of the progress comment; a stop delivered twice changes nothing more.

The two tasks interleave for real: the stop task runs (through the real :class:`fix_stop.Stopper`) from inside
the worker's snapshot fetch, or right after the runtime's 202. moto DynamoDB; the GitHub stand-in; an AgentCore
stand-in answering 202 ``job_accepted`` as the runtime does; botocore Stubber for ``StopRuntimeSession``."""

from __future__ import annotations

import json
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.stub import Stubber

from harness.github_repo_api import GitHubRepoApi
from harness.webhook_scene import LAMBDA_CONTEXT, RUNTIME_ARN, agentcore_client, sqs_event
from tests.unit.webhook.support import TOKEN, runtime_client_error, task_json, worker_client, worker_deps
from tests.unit.webhook.test_fix_worker import FILES, accept, fix_task
from webhook import trackers, worker
from webhook.fix.config import FixSettings
from webhook.fix.jobs import RELEASED, STOPPED, JobStore
from webhook.fix.repos import TrackerComments, TrackerRepos
from webhook.fix.stop import Stopper
from webhook.fix.worker import FixDeps, FixRunner
from webhook.replies import ReplyStore
from webhook.session_stop import SessionStopper
from webhook.webhook_metrics import TrackerMetrics

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
STOP_KEY = "5" * 64


@pytest.fixture
def setup(aws: SimpleNamespace, stand_in: Any) -> Any:
    with GitHubRepoApi(token=TOKEN, repository="octo/kit", files=dict(FILES)) as api:
        runtime = stand_in(
            (202, "application/json", {"type": "job_accepted", "job_id": "x", "session_id": "s"})
        )
        deps = worker_deps(worker_client(runtime.url), api.url)
        adapters = dict(deps.trackers)
        jobs = JobStore(client=aws.ddb, table_name="idem")
        comments = TrackerComments(adapters)
        stop_client = agentcore_client()
        deps.stopper = Stopper(
            client=stop_client,
            runtime_arn=RUNTIME_ARN,
            qualifier="prod",
            jobs=jobs,
            replies=ReplyStore(client=aws.ddb, table_name="idem"),
            comments=comments,
            trackers=adapters,
            metrics=TrackerMetrics(service="test"),
            logger=worker.logger,
            invoker=deps.invoker,
        )
        deps.fix = FixRunner(
            fx=FixDeps(
                jobs=jobs,
                repos=TrackerRepos(tokens={"github": lambda: TOKEN}, api_urls={"github": api.url}),
                comments=comments,
                settings=FixSettings(),
                stop_session=SessionStopper(client=stop_client, runtime_arn=RUNTIME_ARN, qualifier="prod"),
            ),
            invoker=deps.invoker,
            trackers=adapters,
            metrics=TrackerMetrics(service="test"),
            logger=worker.logger,
        )
        worker.configure(deps)
        body, key = fix_task()
        stop_doc = json.loads(task_json(7, comment="/agent stop", key=STOP_KEY, delivery="d-stop"))
        stop_doc["intent"] = "stop"
        stop = trackers.AgentTask.model_validate(stop_doc)
        yield SimpleNamespace(
            api=api,
            runtime=runtime,
            jobs=jobs,
            deps=deps,
            body=body,
            key=key,
            stop_body=json.dumps(stop_doc),
            stop=lambda: deps.stopper.run(stop, STOP_KEY),  # type: ignore[union-attr]
            stub=Stubber(stop_client),
            session=stop.runtime_session_id,
        )


def then(first: Callable[..., Any], after: Callable[[], Any]) -> Callable[..., Any]:
    """``first``, then ``after`` (the other task running in between), returning ``first``'s result."""

    def run(*args: Any, **kwargs: Any) -> Any:
        out = first(*args, **kwargs)
        after()
        return out

    return run


def assert_one_stopped_comment(setup: SimpleNamespace, starts: str) -> None:
    [comment] = setup.api.comments.values()  # the progress comment; no "Nothing to stop"
    assert comment["edits"] == 1 and comment["body"].startswith(starts), comment["body"]
    state = setup.jobs.get(setup.key)
    assert state.status == STOPPED and state.stop_key == STOP_KEY


def expect_stop(setup: SimpleNamespace) -> None:
    setup.stub.add_response(
        "stop_runtime_session",
        {"runtimeSessionId": setup.session, "statusCode": 200},
        expected_params={
            "agentRuntimeArn": RUNTIME_ARN,
            "runtimeSessionId": setup.session,
            "qualifier": "prod",
        },
    )


def redeliver_both(setup: SimpleNamespace) -> None:
    """SQS delivers both tasks again: nothing more happens (no call, no comment, no edit)."""
    before = [dict(c) for c in setup.api.comments.values()]
    with setup.stub:
        for body in (setup.body, setup.stop_body):
            assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert [dict(c) for c in setup.api.comments.values()] == before


def test_a_stop_while_the_snapshot_is_fetched_keeps_the_job_from_starting(
    setup: SimpleNamespace, monkeypatch: Any
) -> None:
    accept(setup, setup.key)
    fx = setup.deps.fix.fx
    monkeypatch.setattr(fx.repos, "fetch", then(fx.repos.fetch, setup.stop))
    with setup.stub:  # no StopRuntimeSession answer queued: the job never reached the runtime, none is called
        assert worker.handler(sqs_event(setup.body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert not setup.runtime.requests
    assert_one_stopped_comment(setup, "Stopped by `@bob` before the agent started. Cost so far: $0.0000.")
    redeliver_both(setup)
    assert not setup.runtime.requests


def test_a_stop_while_the_runtime_is_invoked_stops_the_accepted_job_at_once(
    setup: SimpleNamespace, monkeypatch: Any
) -> None:
    accept(setup, setup.key)
    invoker = setup.deps.fix.invoker
    monkeypatch.setattr(invoker, "invoke", then(invoker.invoke, setup.stop))
    expect_stop(setup)
    with setup.stub:
        assert worker.handler(sqs_event(setup.body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
        setup.stub.assert_no_pending_responses()  # exactly one StopRuntimeSession
    assert len(setup.runtime.requests) == 1
    assert_one_stopped_comment(setup, "Stopped by `@bob` while the agent was starting. Cost so far: n/a.")
    redeliver_both(setup)


def test_a_stop_between_two_attempts_keeps_the_retry_from_starting(setup: SimpleNamespace) -> None:
    setup.runtime.script = [runtime_client_error("Received error (429) from runtime. Please check your logs")]
    assert worker.handler(sqs_event(setup.body), LAMBDA_CONTEXT) == {
        "batchItemFailures": [{"itemIdentifier": "m-0"}]
    }
    assert setup.jobs.get(setup.key).status == RELEASED  # waiting for SQS to retry it
    # The first attempt prepared the job and invoked the runtime: the worker cannot know for sure that nothing
    # runs there, so honouring the stop includes one StopRuntimeSession of the session.
    expect_stop(setup)
    with setup.stub:
        assert worker.handler(sqs_event(setup.stop_body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
        accept(setup, setup.key)
        assert worker.handler(sqs_event(setup.body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
        setup.stub.assert_no_pending_responses()
    assert len(setup.runtime.requests) == 1  # the retry invoked nothing
    assert_one_stopped_comment(setup, "Stopped by `@bob` while the agent was starting.")
    redeliver_both(setup)
