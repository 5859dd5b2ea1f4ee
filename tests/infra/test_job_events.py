"""The job events queue (created with the webhook): encrypted, TLS only, 1 MiB messages, a dead-letter queue; the
runtime may only send to it (and put job patches under ``jobs/`` of the workspace bucket), and is told where. Off
without the webhook. cdk-nag clean (the synth fails on any unacknowledged finding)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.infra.conftest import Synth

pytestmark = pytest.mark.infra


def of_type(s: Synth, cfn_type: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in s.raw["Resources"].items() if r["Type"] == cfn_type}


def job_queues(s: Synth) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in of_type(s, "AWS::SQS::Queue").items() if k.startswith("JobEvents")}


def runtime_of(s: Synth) -> dict[str, Any]:
    (runtime,) = of_type(s, "AWS::BedrockAgentCore::Runtime").values()
    return runtime


def runtime_statements(s: Synth) -> list[dict[str, Any]]:
    role = runtime_of(s)["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    found = []
    for policy in of_type(s, "AWS::IAM::Policy").values():
        if {"Ref": role} in policy["Properties"]["Roles"]:
            found += policy["Properties"]["PolicyDocument"]["Statement"]
    return found


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


def test_the_queue_is_encrypted_tls_only_sized_for_a_result_and_dead_lettered(optional: Synth) -> None:
    queues = job_queues(optional)
    assert len(queues) == 2
    (main_id,) = [k for k, q in queues.items() if "RedrivePolicy" in q["Properties"]]
    (dlq_id,) = [k for k in queues if k != main_id]
    main = queues[main_id]["Properties"]
    assert main["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]},
        "maxReceiveCount": 5,
    }
    for props in (main, queues[dlq_id]["Properties"]):
        assert props["SqsManagedSseEnabled"] is True
        assert props["MaximumMessageSize"] == 1_048_576  # what runtime/jobs/protocol.py fits a result into
        assert props["MessageRetentionPeriod"] == 14 * 24 * 3600
    # Six times the webhook worker's timeout (14 min by default): either webhook function may consume the events.
    assert main["VisibilityTimeout"] == 6 * 14 * 60
    for queue_id in (main_id, dlq_id):
        (policy,) = [
            p
            for p in of_type(optional, "AWS::SQS::QueuePolicy").values()
            if {"Ref": queue_id} in p["Properties"]["Queues"]
        ]
        (deny,) = [st for st in policy["Properties"]["PolicyDocument"]["Statement"] if st["Effect"] == "Deny"]
        assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert optional.raw["Outputs"]["JobEventsDeadLetterQueueUrl"]["Value"] == {"Ref": dlq_id}


def test_the_runtime_may_only_send_to_it_and_put_job_patches(optional: Synth) -> None:
    (main_id,) = [k for k, q in job_queues(optional).items() if "RedrivePolicy" in q["Properties"]]
    statements = runtime_statements(optional)
    sqs = [st for st in statements if any(a.startswith("sqs:") for a in _actions(st))]
    assert sqs == [
        {"Action": "sqs:SendMessage", "Effect": "Allow", "Resource": {"Fn::GetAtt": [main_id, "Arn"]}}
    ]
    ((bucket_id, _),) = of_type(optional, "AWS::S3::Bucket").items()
    s3 = [st for st in statements if any(a.startswith("s3:") for a in _actions(st))]
    jobs = {"Fn::Join": ["", [{"Fn::GetAtt": [bucket_id, "Arn"]}, "/jobs/*"]]}
    snapshots = {"Fn::Join": ["", [{"Fn::GetAtt": [bucket_id, "Arn"]}, "/dev/*"]]}
    assert sorted(s3, key=str) == sorted(
        [
            {"Action": "s3:GetObject", "Effect": "Allow", "Resource": snapshots},
            {"Action": "s3:PutObject", "Effect": "Allow", "Resource": jobs},
        ],
        key=str,
    )
    env = runtime_of(optional)["Properties"]["EnvironmentVariables"]
    assert env["AGENTKIT_JOB_EVENTS_QUEUE_URL"] == {"Ref": main_id}
    assert env["AGENTKIT_WORKSPACE_BUCKET"] == {"Ref": bucket_id}
    # The dev stage's sessions live 2 hours (cdk.json): a job's turn ends 5 minutes before, so its result is sent.
    assert optional.config.settings.max_lifetime_hours == 2 and env["AGENTKIT_JOB_TIMEOUT"] == "6900"


def test_job_patches_expire_with_the_messages_that_name_them(optional: Synth) -> None:
    ((_, bucket),) = of_type(optional, "AWS::S3::Bucket").items()
    rules = {r["Id"]: r for r in bucket["Properties"]["LifecycleConfiguration"]["Rules"]}
    assert rules["expire-job-patches"]["Prefix"] == "jobs/"
    assert rules["expire-job-patches"]["ExpirationInDays"] == 14


def test_the_construct_exposes_the_queue_to_its_consumer(optional: Synth) -> None:
    events = optional.stack.job_events
    assert events is not None
    assert events.queue_arn == events.queue.queue_arn and events.queue_url == events.queue.queue_url
    assert events.dead_letter_queue is not None


def test_what_the_stack_sets_for_jobs_parses_through_the_runtime_settings(optional: Synth) -> None:
    from runtime.config.settings import Settings

    env = runtime_of(optional)["Properties"]["EnvironmentVariables"]
    resolved = {
        "AGENTKIT_JOB_EVENTS_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/AgentKit-dev-JobEvents",
        "AGENTKIT_WORKSPACE_BUCKET": "agentkit-dev-workspacesbucket-abc123",
        "AGENTKIT_JOB_TIMEOUT": env["AGENTKIT_JOB_TIMEOUT"],
    }
    assert set(resolved) <= set(env)
    settings = Settings.from_env(resolved)
    assert settings.job_events_queue_url and settings.workspace_bucket and settings.job_timeout_s == 6900


def test_off_without_the_webhook(dev: Synth) -> None:
    assert not job_queues(dev) and dev.stack.job_events is None
    env = runtime_of(dev)["Properties"]["EnvironmentVariables"]
    assert "AGENTKIT_JOB_EVENTS_QUEUE_URL" not in env and "AGENTKIT_WORKSPACE_BUCKET" not in env
    assert not [st for st in runtime_statements(dev) if any(a.startswith("sqs:") for a in _actions(st))]
