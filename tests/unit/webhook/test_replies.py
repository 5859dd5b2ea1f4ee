"""Stored replies: a paid turn runs once per task, even when posting its answer fails (moto DynamoDB)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber

from harness.webhook_scene import LAMBDA_CONTEXT, REGION, agentcore_client, sqs_event
from tests.unit.webhook.support import RESULT, stub_one_turn, task_json, worker_client, worker_deps
from webhook import replies, settings, trackers, worker

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

KEY = hashlib.sha256(b"signed body").hexdigest()


def reply_store(aws: SimpleNamespace, client: Any = None, **kwargs: Any) -> replies.ReplyStore:
    return replies.ReplyStore(client=client or aws.ddb, table_name="idem", **kwargs)


def stored_item(aws: SimpleNamespace, key: str) -> dict[str, Any]:
    return aws.ddb.get_item(TableName="idem", Key={"id": {"S": f"reply#{key}"}}).get("Item", {})


def fail_calls(client: Any, operation: str, *, after: int = 0) -> None:
    """Make every ``operation`` call on ``client`` after the first ``after`` fail as if DynamoDB were
    unreachable (``after=1`` with PutItem: the worker's claim succeeds, storing the reply fails)."""
    calls = [0]

    def unreachable(**_: Any) -> None:
        calls[0] += 1
        if calls[0] > after:
            raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")

    client.meta.events.register(f"before-call.dynamodb.{operation}", unreachable)


def test_failed_post_is_reposted_from_the_store_without_a_second_turn(
    aws: SimpleNamespace, github: Any
) -> None:
    client = agentcore_client()
    stub = Stubber(client)
    stub_one_turn(stub)
    worker.configure(worker_deps(client, github.url, store=reply_store(aws)))
    github.script = [(422, "application/json", {"message": "Validation Failed"})]
    body = task_json(key=KEY)
    with stub:
        assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {
            "batchItemFailures": [{"itemIdentifier": "m-0"}]
        }
        stub.assert_no_pending_responses()
        item = stored_item(aws, KEY)
        assert item["status"]["S"] == "answered" and item["cost_usd"]["N"] == "0.0123"
        # SQS redelivers the record: the stored reply is posted, the runtime is not called.
        assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
        # The Stubber has no response left: any invoke fails the record, as this unstored task shows.
        assert worker.handler(sqs_event(task_json(8, key="k-other")), LAMBDA_CONTEXT) == {
            "batchItemFailures": [{"itemIdentifier": "m-0"}]
        }
    first, second = (json.loads(r["body"])["body"] for r in github.requests)
    assert first == second == item["comment"]["S"]
    assert first.startswith("Pin the base image to arm64.") and "$0.0123" in first and "turns 2" in first
    assert stored_item(aws, KEY)["status"]["S"] == "posted"
    assert len(github.requests) == 2


def test_redelivery_after_a_successful_post_does_nothing(aws: SimpleNamespace, github: Any) -> None:
    client = agentcore_client()
    stub = Stubber(client)
    stub_one_turn(stub)
    worker.configure(worker_deps(client, github.url, store=reply_store(aws)))
    body = task_json()  # no idempotency_key: the key falls back to the SQS body's hash
    with stub:
        assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
        assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
        stub.assert_no_pending_responses()
    assert len(github.requests) == 1
    item = stored_item(aws, "sqs-" + hashlib.sha256(body.encode()).hexdigest())
    assert item["status"]["S"] == "posted"
    assert item["comment_url"]["S"] == "https://github.com/octo/kit/issues/7#c1"
    assert int(item["expiration"]["N"]) - int(item["stored_at"]["N"]) == settings.DEFAULT_REPLY_TTL_SECONDS


def test_reply_is_posted_when_dynamodb_cannot_store_it(
    aws: SimpleNamespace, github: Any, caplog: pytest.LogCaptureFixture
) -> None:
    ddb = boto3.client("dynamodb", region_name=REGION)
    fail_calls(ddb, "PutItem", after=1)
    client = agentcore_client()
    stub = Stubber(client)
    stub_one_turn(stub)
    worker.configure(worker_deps(client, github.url, store=reply_store(aws, ddb)))
    with stub:
        assert worker.handler(sqs_event(task_json(key=KEY)), LAMBDA_CONTEXT) == {"batchItemFailures": []}
        stub.assert_no_pending_responses()
    [post] = github.requests
    assert json.loads(post["body"])["body"].startswith("Pin the base image to arm64.")
    [error] = [r for r in caplog.records if r.getMessage() == "could not store the reply; posting it anyway"]
    assert "PutItem on idem failed" in error.__dict__["error"] and error.levelname == "ERROR"
    # Only the claim is stored (no partial reply item from marking it posted): a redelivery never
    # claims the turn again.
    assert stored_item(aws, KEY)["status"] == {"S": "running"} and "comment" not in stored_item(aws, KEY)


def test_reply_neither_stored_nor_posted_is_logged_in_full(
    aws: SimpleNamespace, github: Any, caplog: pytest.LogCaptureFixture
) -> None:
    ddb = boto3.client("dynamodb", region_name=REGION)
    fail_calls(ddb, "PutItem", after=1)
    client = agentcore_client()
    stub = Stubber(client)
    stub_one_turn(stub)
    worker.configure(worker_deps(client, github.url, store=reply_store(aws, ddb)))
    github.script = [(422, "application/json", {"message": "Validation Failed"})]
    with stub:
        assert worker.handler(sqs_event(task_json(key=KEY)), LAMBDA_CONTEXT) == {
            "batchItemFailures": [{"itemIdentifier": "m-0"}]
        }
    [lost] = [r for r in caplog.records if r.getMessage().startswith("reply neither stored nor posted")]
    assert (
        lost.__dict__["reply"].startswith("Pin the base image to arm64.") and "422" in lost.__dict__["error"]
    )


def test_failed_lookup_fails_the_record_before_any_turn(aws: SimpleNamespace, github: Any) -> None:
    ddb = boto3.client("dynamodb", region_name=REGION)
    fail_calls(ddb, "GetItem")
    client = agentcore_client()
    stub = Stubber(client)  # no responses: an invoke would fail differently (and be a paid turn)
    worker.configure(worker_deps(client, github.url, store=reply_store(aws, ddb)))
    with stub:
        assert worker.handler(sqs_event(task_json(key=KEY)), LAMBDA_CONTEXT) == {
            "batchItemFailures": [{"itemIdentifier": "m-0"}]
        }
    assert github.requests == []
    with pytest.raises(replies.ReplyStoreError, match="GetItem on idem failed"):
        reply_store(aws, ddb).get(KEY)
    assert worker.failure_kind(replies.ReplyStoreError("x")) == "transient"


def test_unconfirmed_post_is_not_reposted_on_redelivery(
    aws: SimpleNamespace, stand_in: Any, github: Any
) -> None:
    runtime = stand_in((200, "application/json", RESULT))
    github.script = [(201, "application/json", {"id": 1}, {"delay": 1.0})]
    deps = worker_deps(worker_client(runtime.url), github.url, http_timeout=0.3, store=reply_store(aws))
    worker.configure(deps)
    body = task_json(key=KEY)
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert stored_item(aws, KEY)["status"]["S"] == "unconfirmed"
    assert worker.handler(sqs_event(body), LAMBDA_CONTEXT) == {"batchItemFailures": []}
    assert len(runtime.requests) == 1 and len(github.requests) == 1


def test_reply_store_round_trip_ttl_and_errors(aws: SimpleNamespace) -> None:
    store = reply_store(aws, ttl_seconds=3600, clock=lambda: 1_000_000.0)
    assert store.get(KEY) is None
    reply = replies.StoredReply(
        comment="hi", session_id="gh-x", delivery_id="d", error_code="timeout", request_id="rid"
    )
    store.put(KEY, reply)
    assert store.get(KEY) == dataclasses.replace(reply, stored_at=1_000_000)
    assert stored_item(aws, KEY)["expiration"] == {"N": str(1_000_000 + 3600)}
    store.mark(KEY, status="posted", comment_url="u")
    assert store.get(KEY) == replies.StoredReply(
        comment="hi",
        session_id="gh-x",
        delivery_id="d",
        error_code="timeout",
        request_id="rid",
        status="posted",
        comment_url="u",
        stored_at=1_000_000,
    )
    with pytest.raises(replies.ReplyStoreError, match="UpdateItem"):
        store.mark("never-stored", status="posted")
    assert stored_item(aws, "never-stored") == {}
    aws.ddb.put_item(TableName="idem", Item={"id": {"S": "reply#bad"}, "status": {"S": "weird"}})
    with pytest.raises(replies.ReplyStoreError, match="malformed"):
        store.get("bad")
    with pytest.raises(ValueError, match="ttl_seconds"):
        reply_store(aws, ttl_seconds=0)
    with pytest.raises(ValueError, match="key"):
        store.get("")


@pytest.mark.parametrize("key", ["", "has space", "x" * 129, "a/b"])
def test_task_rejects_a_bad_idempotency_key(key: str) -> None:
    with pytest.raises(ValueError, match="idempotency_key"):
        trackers.AgentTask.model_validate_json(task_json(key=key))


def test_claim_release_and_takeover_are_conditional(aws: SimpleNamespace) -> None:
    clock = [1_000_000.0]
    store = reply_store(aws, clock=lambda: clock[0])
    assert store.claim(KEY) and not store.claim(KEY)  # a second delivery finds the claim
    assert store.get(KEY) == replies.StoredReply(
        comment="", session_id="", status="running", stored_at=1_000_000
    )
    store.release(KEY)
    assert store.get(KEY) is None and store.claim(KEY)  # released: claimable again
    reply = replies.StoredReply(comment="interrupted", session_id="gh-x")
    assert not store.put(KEY, reply, over_claim_from=999)  # not the claim seen: another delivery took over
    assert store.put(KEY, reply, over_claim_from=1_000_000)
    assert not store.put(KEY, reply, over_claim_from=1_000_000)  # the claim is gone now
    store.release(KEY)  # a stored reply is never released
    assert store.get(KEY) == dataclasses.replace(reply, stored_at=1_000_000)
