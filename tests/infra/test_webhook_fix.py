"""The fix-job part of the webhook in the full stack (the ``optional`` variant: webhook, OIDC role, workspace
bucket): the reporter on the runtime's job events queue, least-privilege grants, the fix metrics on the dashboard."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.functions.sdk_bundle import distributions
from infra.webhook.asset import pinned
from tests.infra.conftest import ROOT, Synth
from tests.infra.test_metric_contract import dashboard_queries, webhook_emitted_names

pytestmark = pytest.mark.infra
FIX_METRICS = {
    "PullRequestsOpened",
    "PatchesApplied",
    "Stops",
    "PullRequestCostUSD",
    "JobsTimedOut",
    "ResultsAfterTimeout",
}
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


def test_one_schedule_runs_the_deadline_sweep_and_the_approval_expiry(optional: Synth) -> None:
    """Approvals expire in the sweeper's run (webhook/sweeper.py): no second rule, and the reporter, which holds
    the push token, is not invoked by a schedule."""
    reporter_id, _ = function(optional, "webhook.reporter.handler")
    sweeper_id, _ = function(optional, "webhook.sweeper.handler")
    targets = [
        t["Arn"]
        for r in of_type(optional, "AWS::Events::Rule").values()
        for t in r["Properties"].get("Targets", [])
    ]
    assert targets.count({"Fn::GetAtt": [sweeper_id, "Arn"]}) == 1
    assert {"Fn::GetAtt": [reporter_id, "Arn"]} not in targets
    by_events = [
        p["Properties"]["FunctionName"]
        for p in of_type(optional, "AWS::Lambda::Permission").values()
        if p["Properties"]["Principal"] == "events.amazonaws.com"
    ]
    assert {"Fn::GetAtt": [reporter_id, "Arn"]} not in by_events


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


def test_a_result_after_the_deadline_alarms_the_topic(optional: Synth) -> None:
    """``ResultsAfterTimeout`` above 0 means the job deadline is too short for the stage: an alarm to the alarm
    topic, on the reporter's metric (its ``service`` name, as the function's environment sets it) for every
    tracker, quiet while no late result comes."""
    _, reporter = function(optional, "webhook.reporter.handler")
    service = reporter["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"]
    (alarm,) = [
        a["Properties"]
        for a in of_type(optional, "AWS::CloudWatch::Alarm").values()
        if "ResultsAfterTimeout" in json.dumps(a["Properties"])
    ]
    assert alarm["Threshold"] == 0 and alarm["ComparisonOperator"] == "GreaterThanThreshold"
    assert alarm["TreatMissingData"] == "notBreaching"
    assert "AlarmTopic" in json.dumps(alarm["AlarmActions"])
    stats = [m["MetricStat"] for m in alarm["Metrics"] if "MetricStat" in m]
    seen = set()
    for stat in stats:
        dims = {d["Name"]: d["Value"] for d in stat["Metric"]["Dimensions"]}
        assert stat["Metric"]["MetricName"] == "ResultsAfterTimeout" and stat["Stat"] == "Sum"
        assert dims["service"] == service and set(dims) == {"service", "Tracker"}
        seen.add(dims["Tracker"])
    assert seen == set(optional.config.webhook.trackers)
    (expression,) = [m for m in alarm["Metrics"] if "Expression" in m]
    assert expression["ReturnData"] is not False and all(
        m.get("ReturnData") is False for m in alarm["Metrics"] if "MetricStat" in m
    )


def test_every_webhook_lambda_runs_from_an_asset_that_is_the_webhook_package(optional: Synth) -> None:
    """Each handler path ``webhook.<module>.handler`` resolves inside its code asset, and the asset holds the
    ``webhook`` package under its own name and nothing else of the repository (no tests, no infra, no caches);
    beside it, only the SDK distributions it pins (``tests/infra/test_webhook_asset.py``)."""
    outdir = optional.template_path.parent
    package = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "webhook").rglob("*.py"))
    sdk = {str(f).split("/")[0] for d in distributions(pinned()).values() for f in d.files or []}
    handlers = set()
    for fn in of_type(optional, "AWS::Lambda::Function").values():
        props = fn["Properties"]
        if not str(props.get("Handler", "")).startswith("webhook."):
            continue
        handlers.add(props["Handler"])
        asset = outdir / f"asset.{props['Code']['S3Key'].removesuffix('.zip')}"
        files = sorted(p.relative_to(asset).as_posix() for p in asset.rglob("*") if p.is_file())
        assert [f for f in files if f.startswith("webhook/")] == package
        assert {f.split("/")[0] for f in files if not f.startswith("webhook/")} <= sdk - {"webhook", ".."}
        module, attr = props["Handler"].rsplit(".", 1)
        assert f"\ndef {attr}(" in (asset / f"{module.replace('.', '/')}.py").read_text()
    assert handlers == {
        "webhook.receiver.handler",
        "webhook.worker.handler",
        "webhook.reporter.handler",
        "webhook.sweeper.handler",
    }


def test_the_sweeper_runs_on_a_schedule_with_least_privilege(optional: Synth) -> None:
    """Every 15 minutes a rule invokes the sweeper; it may Scan only the attributes the sweep reads, read and
    move ``reply#*`` items, and read the token secrets (it edits the progress comment) — nothing else."""
    fid, sweeper = function(optional, "webhook.sweeper.handler")
    [rule] = [
        r["Properties"]
        for r in of_type(optional, "AWS::Events::Rule").values()
        if any(t["Arn"] == {"Fn::GetAtt": [fid, "Arn"]} for t in r["Properties"].get("Targets", []))
    ]
    assert rule["ScheduleExpression"] == "rate(15 minutes)" and rule["State"] == "ENABLED"
    [permission] = [
        p["Properties"]
        for p in of_type(optional, "AWS::Lambda::Permission").values()
        if p["Properties"]["FunctionName"] == {"Fn::GetAtt": [fid, "Arn"]}
    ]
    assert permission["Principal"] == "events.amazonaws.com"
    env = sweeper["Environment"]["Variables"]
    # The optional stage's sessions live at most max_lifetime_hours; the deadline is that plus 30 minutes.
    runtime = next(iter(of_type(optional, "AWS::BedrockAgentCore::Runtime").values()))["Properties"]
    lifetime = runtime["LifecycleConfiguration"]["MaxLifetime"]
    assert int(env["JOB_DEADLINE_SECONDS"]) == lifetime + 1800
    st = statements(optional, sweeper["Role"])
    actions = {a for s in st for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
    assert actions == {
        "dynamodb:Scan",
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
        "secretsmanager:GetSecretValue",
        "secretsmanager:DescribeSecret",
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
    }
    [scan] = [s for s in st if s["Action"] == "dynamodb:Scan"]
    assert scan["Condition"] == {
        "ForAllValues:StringEquals": {
            "dynamodb:Attributes": ["id", "status", "started_at", "stored_at", "notified_at"]
        },
        "StringEquals": {"dynamodb:Select": "SPECIFIC_ATTRIBUTES"},
    }
    [ddb] = [s for s in st if "dynamodb:UpdateItem" in s["Action"]]
    assert ddb["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["reply#*"]}}


def test_the_worker_has_ephemeral_storage_for_a_streamed_snapshot_and_its_deadline(optional: Synth) -> None:
    """The worker spools the archive, the files' contents and the snapshot in /tmp: sized from the caps."""
    from webhook.repo import DEFAULT_LIMITS

    _, worker = function(optional, "webhook.worker.handler")
    need = (
        DEFAULT_LIMITS.max_download_bytes
        + DEFAULT_LIMITS.max_unpacked_bytes
        + DEFAULT_LIMITS.max_archive_bytes
    )
    assert worker["EphemeralStorage"]["Size"] * 1024 * 1024 >= 1.5 * need
    runtime = next(iter(of_type(optional, "AWS::BedrockAgentCore::Runtime").values()))["Properties"]
    lifetime = runtime["LifecycleConfiguration"]["MaxLifetime"]
    # How long one issue's active-fix marker may hold: the job deadline.
    assert int(worker["Environment"]["Variables"]["JOB_DEADLINE_SECONDS"]) == lifetime + 1800


def test_the_reporter_has_ephemeral_storage_for_the_archive_it_reads_its_patchs_files_from(
    optional: Synth,
) -> None:
    """The reporter spools the tracker's archive in /tmp (it keeps only the patch's files in memory)."""
    from webhook.repo import DEFAULT_LIMITS

    _, reporter = function(optional, "webhook.reporter.handler")
    assert reporter["EphemeralStorage"]["Size"] * 1024 * 1024 >= 1.5 * DEFAULT_LIMITS.max_download_bytes


def test_the_reporter_has_memory_for_the_largest_patch_half_again(optional: Synth) -> None:
    """benchmarks/fix_scale.py --rewrite measured the reporter's peak with a patch near the runtime's cap."""
    from infra.webhook.fix import REPORTER_PEAK_MIB

    _, reporter = function(optional, "webhook.reporter.handler")
    assert reporter["MemorySize"] >= 1.5 * REPORTER_PEAK_MIB
    _, worker = function(optional, "webhook.worker.handler")
    assert worker["MemorySize"] == 256  # the others keep theirs
