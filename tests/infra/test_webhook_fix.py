"""The fix-job part of the webhook in the full stack (the ``optional`` variant: webhook, OIDC role, workspace
bucket): the reporter on the runtime's job events queue, least-privilege grants, the fix metrics on the dashboard."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.infra.conftest import ROOT, Synth
from tests.infra.test_metric_contract import dashboard_queries, webhook_emitted_names

pytestmark = pytest.mark.infra
FIX_METRICS = {"PullRequestsOpened", "PatchesApplied", "Stops", "PullRequestCostUSD"}
APPROVAL_METRICS = {
    "ApprovalsRequested",
    "ApprovalsApproved",
    "ApprovalsDenied",
    "ApprovalsExpired",
    "ApprovalsRefused",
    "ApprovalDecisionSeconds",
}


def of_type(s: Synth, cfn_type: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in s.raw["Resources"].items() if r["Type"] == cfn_type}


def function(s: Synth, handler: str) -> tuple[str, dict[str, Any]]:
    [(fid, fn)] = [
        (k, f)
        for k, f in of_type(s, "AWS::Lambda::Function").items()
        if f["Properties"].get("Handler") == handler
    ]
    return fid, fn["Properties"]


def statements(s: Synth, role_ref: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for policy in of_type(s, "AWS::IAM::Policy").values():
        if {"Ref": role_ref["Fn::GetAtt"][0]} in policy["Properties"]["Roles"]:
            out += policy["Properties"]["PolicyDocument"]["Statement"]
    return out


def test_the_reporter_consumes_the_runtimes_job_events_queue(optional: Synth) -> None:
    fid, reporter = function(optional, "webhook.reporter.handler")
    [mapping] = [
        m["Properties"]
        for m in of_type(optional, "AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == {"Ref": fid}
    ]
    queue_id = mapping["EventSourceArn"]["Fn::GetAtt"][0]
    runtime = next(iter(of_type(optional, "AWS::BedrockAgentCore::Runtime").values()))["Properties"]
    assert runtime["EnvironmentVariables"]["AGENTKIT_JOB_EVENTS_QUEUE_URL"] == {"Ref": queue_id}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"] and mapping["BatchSize"] == 1
    env = reporter["Environment"]["Variables"]
    assert env["PR_MODE"] == "draft_pr" and env["JOB_LEASE_SECONDS"] == "300"
    assert env["WORKSPACE_S3_URI"]["Fn::Join"][1][0] == "s3://"


def test_a_schedule_runs_the_reporters_approval_sweep(optional: Synth) -> None:
    fid, _ = function(optional, "webhook.reporter.handler")
    [rule] = [
        r["Properties"]
        for r in of_type(optional, "AWS::Events::Rule").values()
        if any(t["Arn"] == {"Fn::GetAtt": [fid, "Arn"]} for t in r["Properties"].get("Targets", []))
    ]
    assert rule["ScheduleExpression"] == "rate(15 minutes)" and rule["State"] == "ENABLED"
    [allowed] = [
        p["Properties"]
        for p in of_type(optional, "AWS::Lambda::Permission").values()
        if p["Properties"]["Principal"] == "events.amazonaws.com"
    ]
    assert (
        allowed["FunctionName"] == {"Fn::GetAtt": [fid, "Arn"]}
        and allowed["Action"] == "lambda:InvokeFunction"
    )


def test_least_privilege_for_fix_jobs(optional: Synth) -> None:
    _, worker = function(optional, "webhook.worker.handler")
    _, reporter = function(optional, "webhook.reporter.handler")
    worker_st, reporter_st = statements(optional, worker["Role"]), statements(optional, reporter["Role"])
    # CDK merges it with InvokeAgentRuntime: the same two resources, the runtime and the worker's endpoint.
    [stop] = [s for s in worker_st if "bedrock-agentcore:StopRuntimeSession" in s["Action"]]
    runtime_arn, endpoint = stop["Resource"]
    assert endpoint["Fn::Join"][1][0] == runtime_arn and endpoint["Fn::Join"][1][-1].startswith(
        "/runtime-endpoint/"
    )
    [put] = [s for s in worker_st if s["Action"] == "s3:PutObject"]
    assert put["Resource"]["Fn::Join"][1][-1] == "/dev/jobs/*"  # the stage's snapshots only
    actions = {
        a for s in reporter_st for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert "bedrock-agentcore:InvokeAgentRuntime" not in actions and "dynamodb:PutItem" not in actions
    assert "s3:PutObject" not in actions and "sqs:SendMessage" not in actions
    [ddb] = [s for s in reporter_st if "dynamodb:UpdateItem" in s["Action"]]
    assert ddb["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["reply#*"]}}
    [get] = [s for s in reporter_st if s["Action"] == "s3:GetObject"]
    assert get["Resource"]["Fn::Join"][1][-1] == "/jobs/*"  # job patches only
    assert not any(s["Resource"] == "*" for s in reporter_st if "xray" not in json.dumps(s["Action"]))


def test_the_fix_metrics_are_on_the_dashboard(optional: Synth) -> None:
    plotted = {q[1] for q in dashboard_queries(optional) if "Tracker" in q[2]}
    assert plotted >= FIX_METRICS
    assert webhook_emitted_names() >= FIX_METRICS


def test_the_approval_metrics_are_on_the_dashboard(optional: Synth) -> None:
    plotted = {q[1] for q in dashboard_queries(optional) if "Tracker" in q[2]}
    assert plotted >= APPROVAL_METRICS
    assert webhook_emitted_names() >= APPROVAL_METRICS


def test_every_webhook_lambda_runs_from_an_asset_that_is_the_webhook_package(optional: Synth) -> None:
    """Each handler path ``webhook.<module>.handler`` resolves inside its code asset, and the asset holds the
    ``webhook`` package under its own name and nothing else of the repository (no tests, no infra, no caches)."""
    outdir = optional.template_path.parent
    package = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "webhook").rglob("*.py"))
    handlers = set()
    for fn in of_type(optional, "AWS::Lambda::Function").values():
        props = fn["Properties"]
        if not str(props.get("Handler", "")).startswith("webhook."):
            continue
        handlers.add(props["Handler"])
        asset = outdir / f"asset.{props['Code']['S3Key'].removesuffix('.zip')}"
        assert sorted(p.relative_to(asset).as_posix() for p in asset.rglob("*") if p.is_file()) == package
        module, attr = props["Handler"].rsplit(".", 1)
        assert f"\ndef {attr}(" in (asset / f"{module.replace('.', '/')}.py").read_text()
    assert handlers == {"webhook.receiver.handler", "webhook.worker.handler", "webhook.reporter.handler"}
