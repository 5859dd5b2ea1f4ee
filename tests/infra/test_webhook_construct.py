"""CDK: IssueWebhook and GitHubOidcInvoker synth nag-clean and cfn-lint-clean, with least privilege.

Small test stacks hold only these constructs. Assertions use ``Template``/``Match`` on properties,
never logical IDs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk
from aws_cdk.assertions import Match, Template
from cdk_nag import AwsSolutionsChecks

from infra.ci_access import GitHubOidcInvoker, OidcInvokerProps, github_subjects
from infra.webhook.construct import IssueWebhook
from infra.webhook.props import WebhookProps
from infra.webhook.trackers import GitHubSettings, GitLabSettings, JiraSettings

pytestmark = pytest.mark.infra

ACCOUNT, REGION = "123456789012", "us-east-1"
RUNTIME_ARN = f"arn:aws:bedrock-agentcore:{REGION}:{ACCOUNT}:runtime/agentkit_rt-AbCdEf1234"


def _stacks(outdir: Path) -> tuple[cdk.App, dict[str, cdk.Stack]]:
    app = cdk.App(outdir=str(outdir))
    env = cdk.Environment(account=ACCOUNT, region=REGION)
    literal = cdk.Stack(app, "WebhookLiteral", env=env)
    IssueWebhook(
        literal, "Webhook", runtime_arn=RUNTIME_ARN, props=WebhookProps(runtime_endpoint_name="prod")
    )
    GitHubOidcInvoker(
        literal,
        "Ci",
        runtime_arn=RUNTIME_ARN,
        props=OidcInvokerProps(repository="octo/kit", create_provider=True),
    )

    # Runtime ARN as a token (as the real stack passes it), secrets referenced by name, narrow trust.
    tokens = cdk.Stack(app, "WebhookTokens", env=env)
    runtime = cdk.CfnResource(
        tokens,
        "Runtime",
        type="AWS::BedrockAgentCore::Runtime",
        properties={
            "AgentRuntimeName": "agentkit_rt",
            "AgentRuntimeArtifact": {
                "ContainerConfiguration": {"ContainerUri": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/r:1"}
            },
            "NetworkConfiguration": {"NetworkMode": "PUBLIC"},
            "RoleArn": f"arn:aws:iam::{ACCOUNT}:role/rt",
        },
    )
    arn = runtime.get_att("AgentRuntimeArn").to_string()
    IssueWebhook(
        tokens,
        "Webhook",
        runtime_arn=arn,
        props=WebhookProps(
            runtime_endpoint_name=None,
            create_secrets=False,
            github=GitHubSettings(trigger_label="", trigger_mention="@agentkit", bot_login="agentkit-bot"),
            log_retention=cdk.aws_logs.RetentionDays.ONE_WEEK,
            removal_policy=cdk.RemovalPolicy.RETAIN,
        ),
    )
    GitHubOidcInvoker(
        tokens,
        "Ci",
        runtime_arn=arn,
        props=OidcInvokerProps(
            repository="octo/kit",
            create_provider=False,
            branches=["main"],
            allow_pull_requests=True,
            runtime_endpoint_names=["DEFAULT"],
        ),
    )
    # All three trackers behind one Function URL.
    multi = cdk.Stack(app, "WebhookMulti", env=env)
    IssueWebhook(
        multi,
        "Webhook",
        runtime_arn=RUNTIME_ARN,
        props=WebhookProps(
            runtime_endpoint_name="dev",
            name_prefix="agentkit-dev",
            trackers=["jira", "github", "gitlab"],
            gitlab=GitLabSettings(bot_username="project_5_bot", min_access_level=40),
            jira=JiraSettings(
                site_url="https://example.atlassian.net", bot_account_id="5b10a2844c20165700ede21g"
            ),
        ),
    )
    # Read tokens on: created (all three trackers) and referenced by name (a create_secrets: false stage).
    split = cdk.Stack(app, "WebhookSplit", env=env)
    IssueWebhook(
        split,
        "Webhook",
        runtime_arn=RUNTIME_ARN,
        props=WebhookProps(
            name_prefix="agentkit-dev",
            trackers=["github", "gitlab", "jira"],
            read_tokens=True,
            jira=JiraSettings(site_url="https://example.atlassian.net"),
        ),
    )
    split_named = cdk.Stack(app, "WebhookSplitNamed", env=env)
    IssueWebhook(
        split_named,
        "Webhook",
        runtime_arn=RUNTIME_ARN,
        props=WebhookProps(
            name_prefix="agentkit-prod",
            trackers=["github", "gitlab"],
            read_tokens=True,
            create_secrets=False,
        ),
    )
    return app, {
        "literal": literal,
        "tokens": tokens,
        "multi": multi,
        "split": split,
        "split_named": split_named,
    }


@pytest.fixture(scope="module")
def synthed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    outdir = tmp_path_factory.mktemp("cdkout")
    app, stacks = _stacks(outdir)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises RuntimeError("ValidationFailed ...") on any unacknowledged cdk-nag finding
    templates = {
        name: Template.from_json(json.loads((outdir / f"{stack.artifact_id}.template.json").read_text()))
        for name, stack in stacks.items()
    }
    return {"outdir": outdir, "templates": templates, "stacks": stacks}


def _policy_statements(template: Template) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for res in template.find_resources("AWS::IAM::Policy").values():
        out.extend(res["Properties"]["PolicyDocument"]["Statement"])
    return out


def test_nag_clean_and_report_has_no_errors(synthed: dict[str, Any]) -> None:
    report = synthed["outdir"] / "validation-report.json"
    if report.exists():
        assert '"status": "failure"' not in report.read_text().lower()


def test_nag_catches_an_unacknowledged_wildcard(tmp_path: Path) -> None:
    """The nag gate is live: an extra '*' grant on the worker fails synth."""
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Bad", env=cdk.Environment(account=ACCOUNT, region=REGION))
    hook = IssueWebhook(stack, "Webhook", runtime_arn=RUNTIME_ARN)
    hook.worker.add_to_role_policy(cdk.aws_iam.PolicyStatement(actions=["s3:GetObject"], resources=["*"]))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    with pytest.raises(RuntimeError, match="Validation"):
        app.synth()


def test_cfn_lint_clean(synthed: dict[str, Any]) -> None:
    files = [str(synthed["outdir"] / f"{s.artifact_id}.template.json") for s in synthed["stacks"].values()]
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("cfn-lint")), *files], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_function_url_is_public_and_signature_checked_in_code(synthed: dict[str, Any]) -> None:
    t = synthed["templates"]["literal"]
    t.resource_count_is("AWS::Lambda::Url", 1)
    t.has_resource_properties("AWS::Lambda::Url", {"AuthType": "NONE"})
    t.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "webhook.receiver.handler",
            "Runtime": "python3.14",
            "Architectures": ["arm64"],
            "TracingConfig": {"Mode": "Active"},
            "Layers": [Match.any_value()],
            "Environment": {
                "Variables": Match.object_like(
                    {"TRIGGER_LABEL": "agent", "TRIGGER_MENTION": "/agent", "MAX_BODY_BYTES": "1048576"}
                )
            },
        },
    )


def test_queue_sse_tls_and_dlq(synthed: dict[str, Any]) -> None:
    t = synthed["templates"]["literal"]
    t.resource_count_is("AWS::SQS::Queue", 4)  # tasks and the runtime's job events, each with a DLQ
    for queue in t.find_resources("AWS::SQS::Queue").values():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True
    t.has_resource_properties(
        "AWS::SQS::Queue",
        {"RedrivePolicy": {"deadLetterTargetArn": Match.any_value(), "maxReceiveCount": 3}},
    )
    t.has_resource_properties(
        "AWS::SQS::QueuePolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
                        )
                    ]
                )
            }
        },
    )
    t.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
            "BatchSize": 1,
            "ScalingConfig": {"MaximumConcurrency": 5},
        },
    )


def test_idempotency_table_pitr_and_ttl(synthed: dict[str, Any]) -> None:
    t = synthed["templates"]["literal"]
    t.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "TimeToLiveSpecification": {"AttributeName": "expiration", "Enabled": True},
        },
    )


def test_log_groups_have_retention(synthed: dict[str, Any]) -> None:
    for name, days in (("literal", 30), ("tokens", 7), ("multi", 30)):
        groups = synthed["templates"][name].find_resources("AWS::Logs::LogGroup")
        # receiver, worker, reporter, sweeper
        assert len(groups) == 4 and all(g["Properties"]["RetentionInDays"] == days for g in groups.values())


def test_worker_may_invoke_only_this_runtime_endpoint(synthed: dict[str, Any]) -> None:
    statements = _policy_statements(synthed["templates"]["literal"])
    invoke = [s for s in statements if "bedrock-agentcore" in json.dumps(s["Action"])]
    # One statement for the worker, one for the OIDC role.
    # The worker names the tracker user as the runtime user id, so it holds ForUser too.
    worker = next(
        s
        for s in invoke
        if s["Action"]
        == ["bedrock-agentcore:InvokeAgentRuntime", "bedrock-agentcore:InvokeAgentRuntimeForUser"]
    )
    assert worker["Resource"] == [RUNTIME_ARN, f"{RUNTIME_ARN}/runtime-endpoint/prod"]
    assert not any(s["Resource"] == "*" and "bedrock" in json.dumps(s["Action"]) for s in statements)
    assert all(":*" not in json.dumps(s["Action"]) for s in statements)


def test_worker_reads_and_writes_only_its_stored_replies(synthed: dict[str, Any]) -> None:
    t = synthed["templates"]["literal"]
    [table_id] = t.find_resources("AWS::DynamoDB::Table")
    ddb = [s for s in _policy_statements(t) if "dynamodb:" in json.dumps(s["Action"])]
    worker = [
        s for s in ddb if "dynamodb:PutItem" in s["Action"] and "dynamodb:DeleteItem" not in s["Action"]
    ]
    receiver = [s for s in ddb if "dynamodb:DeleteItem" in s["Action"]]
    scan = [s for s in ddb if s["Action"] == "dynamodb:Scan"]  # the sweeper's, limited to a few attributes
    movers = [s for s in ddb if "dynamodb:PutItem" not in s["Action"] and s not in scan]
    assert len(worker) == 1 and len(receiver) == 1 and len(movers) == 2 and len(scan) == 1
    # The reporter and the sweeper move fix jobs' items (reply#<key>) and create none.
    for stmt in movers:
        assert sorted(stmt["Action"]) == ["dynamodb:GetItem", "dynamodb:UpdateItem"]
        assert stmt["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["reply#*"]}}
    [stmt] = worker
    assert sorted(stmt["Action"]) == ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]
    assert stmt["Resource"] == {"Fn::GetAtt": [table_id, "Arn"]}
    assert stmt["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["reply#*"]}}
    env = _env_of(t, "webhook.worker.handler")["Environment"]["Variables"]
    assert env["IDEMPOTENCY_TABLE"] == {"Ref": table_id}
    # Stored replies outlive the longest a message can come back (DLQ retention, 14 days).
    assert env["REPLY_TTL_SECONDS"] == str(14 * 24 * 3600)
    dlq = [
        q["Properties"]["MessageRetentionPeriod"]
        for q in t.find_resources("AWS::SQS::Queue").values()
        if "RedrivePolicy" not in q["Properties"]
    ]
    assert dlq == [int(env["REPLY_TTL_SECONDS"])] * 2  # the tasks' and the job events' DLQs


def test_unqualified_worker_targets_default_endpoint(synthed: dict[str, Any]) -> None:
    statements = _policy_statements(synthed["templates"]["tokens"])
    worker = next(
        s
        for s in statements
        if s["Action"]
        == ["bedrock-agentcore:InvokeAgentRuntime", "bedrock-agentcore:InvokeAgentRuntimeForUser"]
    )
    runtime_ref, endpoint = worker["Resource"]
    assert runtime_ref["Fn::GetAtt"][1] == "AgentRuntimeArn"
    assert endpoint["Fn::Join"][1] == [runtime_ref, "/runtime-endpoint/DEFAULT"]


def test_secrets_are_scoped_per_function(synthed: dict[str, Any]) -> None:
    t = synthed["templates"]["literal"]
    t.resource_count_is("AWS::SecretsManager::Secret", 2)
    t.has_resource_properties(
        "AWS::SecretsManager::Secret",
        {"Name": "agentkit/github-webhook-secret", "GenerateSecretString": Match.object_like({})},
    )
    reads = [s for s in _policy_statements(t) if "secretsmanager:GetSecretValue" in s["Action"]]
    # receiver: the webhook secret; worker, reporter and sweeper: the token
    assert len(reads) == 4 and all(isinstance(s["Resource"], dict) and "Ref" in s["Resource"] for s in reads)
    # By-name references: no secrets created, ARN pattern limited to the name.
    t2 = synthed["templates"]["tokens"]
    t2.resource_count_is("AWS::SecretsManager::Secret", 0)
    reads2 = [
        json.dumps(s["Resource"])
        for s in _policy_statements(t2)
        if "secretsmanager:GetSecretValue" in s["Action"]
    ]
    assert any("secret:agentkit/github-token-??????" in r for r in reads2)
    assert any("secret:agentkit/github-webhook-secret-??????" in r for r in reads2)


def test_powertools_layer_resolved_from_public_ssm_parameter(synthed: dict[str, Any]) -> None:
    params = synthed["templates"]["literal"].to_json()["Parameters"]
    assert any(
        p.get("Default") == "/aws/service/powertools/python/arm64/python3.14/3.37.0" for p in params.values()
    )


def test_oidc_provider_and_repo_scoped_trust(synthed: dict[str, Any]) -> None:
    t = synthed["templates"]["literal"]
    t.has_resource_properties(
        "AWS::IAM::OIDCProvider",
        {"Url": "https://token.actions.githubusercontent.com", "ClientIdList": ["sts.amazonaws.com"]},
    )
    t.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": {
                "Statement": [
                    Match.object_like(
                        {
                            "Action": "sts:AssumeRoleWithWebIdentity",
                            "Condition": {
                                "StringEquals": {
                                    "token.actions.githubusercontent.com:aud": "sts.amazonaws.com"
                                },
                                "StringLike": {
                                    "token.actions.githubusercontent.com:sub": ["repo:octo/kit:*"]
                                },
                            },
                        }
                    )
                ]
            }
        },
    )
    outputs = t.find_outputs("*")
    assert any("GitHubOidcRoleArn" in k for k in outputs)


def test_oidc_role_narrow_filters_and_existing_provider(synthed: dict[str, Any]) -> None:
    t = synthed["templates"]["tokens"]
    t.resource_count_is("AWS::IAM::OIDCProvider", 0)
    t.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": {
                "Statement": [
                    Match.object_like(
                        {
                            "Principal": {"Federated": Match.any_value()},
                            "Condition": Match.object_like(
                                {
                                    "StringLike": {
                                        "token.actions.githubusercontent.com:sub": [
                                            "repo:octo/kit:ref:refs/heads/main",
                                            "repo:octo/kit:pull_request",
                                        ]
                                    }
                                }
                            ),
                        }
                    )
                ]
            }
        },
    )
    federated = json.dumps(t.find_resources("AWS::IAM::Role"))
    assert "oidc-provider/token.actions.githubusercontent.com" in federated


def test_oidc_role_permissions_are_invoke_only(synthed: dict[str, Any]) -> None:
    t = synthed["templates"]["literal"]
    roles = t.find_resources(
        "AWS::IAM::Role",
        {
            "Properties": {
                "AssumeRolePolicyDocument": {
                    "Statement": [Match.object_like({"Action": "sts:AssumeRoleWithWebIdentity"})]
                }
            }
        },
    )
    [role_id] = roles
    policies = [
        p
        for p in t.find_resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in p["Properties"]["Roles"]
    ]
    actions = sorted(
        a
        for p in policies
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
    )
    assert actions == [
        "bedrock-agentcore:InvokeAgentRuntime",
        "bedrock-agentcore:StopRuntimeSession",
        "cloudformation:DescribeStacks",
    ]
    invoke = next(
        s
        for p in policies
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if "bedrock-agentcore:InvokeAgentRuntime" in s["Action"]
    )
    assert invoke["Resource"] == [RUNTIME_ARN, f"{RUNTIME_ARN}/runtime-endpoint/*"]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, ["repo:o/r:*"]),
        ({"environments": ["prod"]}, ["repo:o/r:environment:prod"]),
        (
            {"branches": ["main", "release/*"]},
            ["repo:o/r:ref:refs/heads/main", "repo:o/r:ref:refs/heads/release/*"],
        ),
    ],
)
def test_github_subjects(kwargs: dict[str, Any], expected: list[str]) -> None:
    assert github_subjects("o/r", **kwargs) == expected


def test_immutable_subjects_pin_both_ids() -> None:
    """GitHub's immutable ``sub`` (``repo:owner@<id>/name@<id>:...``) is accepted with the ids as given."""
    assert github_subjects("octo@123456/kit@456789", branches=["main"]) == [
        "repo:octo@123456/kit@456789:ref:refs/heads/main"
    ]
    assert github_subjects("octo@1/kit@2") == ["repo:octo@1/kit@2:*"]


@pytest.mark.parametrize(
    "repo",
    [
        "octo",
        "octo/kit/extra",
        "octo/*",
        "",
        "a b/c",
        "octo@*/kit@*",  # wildcarded ids would match a recycled name again
        "octo@123/kit",  # GitHub sends both ids or neither
        "octo/kit@456",
        "octo@/kit@",
        "octo@12a/kit@3",
    ],
)
def test_bad_repository_is_rejected(repo: str) -> None:
    with pytest.raises(ValueError, match="owner/repo"):
        github_subjects(repo)


def test_webhook_rejects_no_trigger() -> None:
    stack = cdk.Stack(cdk.App(), "S")
    with pytest.raises(ValueError, match="trigger"):
        IssueWebhook(
            stack,
            "W",
            runtime_arn=RUNTIME_ARN,
            props=WebhookProps(github=GitHubSettings(trigger_label="", trigger_mention="")),
        )


def _env_of(template: Template, handler: str) -> dict[str, Any]:
    [fn] = [
        f["Properties"]
        for f in template.find_resources("AWS::Lambda::Function").values()
        if f["Properties"].get("Handler") == handler
    ]
    return fn


def test_only_trusted_authors_trigger_by_default(synthed: dict[str, Any]) -> None:
    env = _env_of(synthed["templates"]["literal"], "webhook.receiver.handler")["Environment"]["Variables"]
    assert env["ALLOWED_ASSOCIATIONS"] == "COLLABORATOR,MEMBER,OWNER"


def test_worker_read_timeout_exceeds_turn_timeout_and_queue_outlasts_lambda(synthed: dict[str, Any]) -> None:
    t = synthed["templates"]["literal"]
    worker = _env_of(t, "webhook.worker.handler")
    assert worker["Timeout"] == 14 * 60
    read_timeout = int(worker["Environment"]["Variables"]["INVOKE_READ_TIMEOUT_SECONDS"])
    assert read_timeout == 13 * 60 and 600 < read_timeout < worker["Timeout"]
    visibility = [
        q["Properties"]["VisibilityTimeout"]
        for q in t.find_resources("AWS::SQS::Queue").values()
        if "RedrivePolicy" in q["Properties"]
    ]
    assert sorted(visibility) == [6 * 2 * 60, 6 * 14 * 60]  # job events (reporter: 2 min), tasks (worker)


def test_secret_names_follow_the_name_prefix_so_stages_do_not_clash() -> None:
    stack = cdk.Stack(cdk.App(), "TwoStages", env=cdk.Environment(account=ACCOUNT, region=REGION))
    for stage in ("dev", "prod"):
        IssueWebhook(
            stack,
            f"Webhook-{stage}",
            runtime_arn=RUNTIME_ARN,
            props=WebhookProps(
                name_prefix=f"agentkit-{stage}",
                github=GitHubSettings(allowed_author_associations=["owner", "MEMBER"]),
            ),
        )
    t = Template.from_stack(stack)
    names = sorted(s["Properties"]["Name"] for s in t.find_resources("AWS::SecretsManager::Secret").values())
    assert names == [
        "agentkit-dev/github-token",
        "agentkit-dev/github-webhook-secret",
        "agentkit-prod/github-token",
        "agentkit-prod/github-webhook-secret",
    ]
    receivers = [
        f["Properties"]["Environment"]["Variables"]
        for f in t.find_resources("AWS::Lambda::Function").values()
        if f["Properties"].get("Handler") == "webhook.receiver.handler"
    ]
    assert [r["ALLOWED_ASSOCIATIONS"] for r in receivers] == ["MEMBER,OWNER", "MEMBER,OWNER"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"name_prefix": "a/b"}, "name_prefix"),
        ({"name_prefix": ""}, "name_prefix"),
        (
            {"github": GitHubSettings(allowed_author_associations=["OWNER", "ADMIN"])},
            "unknown author association",
        ),
        ({"github": GitHubSettings(allowed_author_associations=[])}, "empty"),
        ({"github": GitHubSettings(allowed_author_associations="OWNER")}, "must be a list"),
        ({"worker_timeout": cdk.Duration.minutes(10)}, "must exceed the runtime turn timeout"),
        (
            {"worker_timeout": cdk.Duration.minutes(14), "runtime_turn_timeout": cdk.Duration.minutes(13)},
            "must exceed the runtime turn timeout",
        ),
        ({"job_deadline": cdk.Duration.minutes(5)}, "job_deadline must be at least 600"),
        ({"sweep_interval": cdk.Duration.seconds(30)}, "sweep_interval"),
    ],
    ids=[
        "slash",
        "empty-prefix",
        "unknown-assoc",
        "no-assoc",
        "string-assoc",
        "short-worker",
        "long-turn",
        "short-deadline",
        "fast-sweep",
    ],
)
def test_webhook_rejects_bad_settings(kwargs: dict[str, Any], match: str) -> None:
    stack = cdk.Stack(cdk.App(), "S")
    with pytest.raises(ValueError, match=match):
        IssueWebhook(stack, "W", runtime_arn=RUNTIME_ARN, props=WebhookProps(**kwargs))


# --------------------------------------------------------------------------- GitLab and Jira
def _role_of(template: Template, handler: str) -> str:
    return str(_env_of(template, handler)["Role"]["Fn::GetAtt"][0])


def _secret_reads(template: Template, handler: str) -> list[str]:
    """The secrets' ``Name`` each GetSecretValue grant of ``handler``'s role points at."""
    role = _role_of(template, handler)
    secrets = template.find_resources("AWS::SecretsManager::Secret")
    out = []
    for policy in template.find_resources("AWS::IAM::Policy").values():
        if {"Ref": role} not in policy["Properties"]["Roles"]:
            continue
        for stmt in policy["Properties"]["PolicyDocument"]["Statement"]:
            if "secretsmanager:GetSecretValue" in stmt["Action"]:
                out.append(secrets[stmt["Resource"]["Ref"]]["Properties"]["Name"])
    return sorted(out)


def test_multi_tracker_secrets_and_least_privilege_reads(synthed: dict[str, Any]) -> None:
    t = synthed["templates"]["multi"]
    names = sorted(s["Properties"]["Name"] for s in t.find_resources("AWS::SecretsManager::Secret").values())
    assert names == sorted(
        f"agentkit-dev/{n}-{k}" for n in ("github", "gitlab", "jira") for k in ("webhook-secret", "token")
    )
    # The receiver reads the webhook secrets (+ the GitLab token for the members API), never another token.
    assert _secret_reads(t, "webhook.receiver.handler") == [
        "agentkit-dev/github-webhook-secret",
        "agentkit-dev/gitlab-token",
        "agentkit-dev/gitlab-webhook-secret",
        "agentkit-dev/jira-webhook-secret",
    ]
    # The worker reads the tokens only: a leaked worker role cannot forge deliveries.
    assert _secret_reads(t, "webhook.worker.handler") == [
        "agentkit-dev/github-token",
        "agentkit-dev/gitlab-token",
        "agentkit-dev/jira-token",
    ]


def test_multi_tracker_environment(synthed: dict[str, Any]) -> None:
    t = synthed["templates"]["multi"]
    recv = _env_of(t, "webhook.receiver.handler")["Environment"]["Variables"]
    work = _env_of(t, "webhook.worker.handler")["Environment"]["Variables"]
    assert recv["TRACKERS"] == work["TRACKERS"] == "github,gitlab,jira"
    assert recv["GITLAB_MIN_ACCESS_LEVEL"] == "40" and recv["GITLAB_BOT_USERNAME"] == "project_5_bot"
    assert recv["JIRA_BOT_ACCOUNT_ID"] == "5b10a2844c20165700ede21g"
    assert work["JIRA_SITE_URL"] == "https://example.atlassian.net" and work["GITLAB_API_URL"].endswith(
        "/api/v4"
    )
    assert not any(k.endswith("WEBHOOK_SECRET_NAME") or k == "WEBHOOK_SECRET_NAME" for k in work)
    assert "TRIGGER_MENTION" not in work and "JIRA_TRIGGER_LABEL" not in work


def test_one_function_url_with_a_path_per_tracker_in_stack_outputs(synthed: dict[str, Any]) -> None:
    t = synthed["templates"]["multi"]
    t.resource_count_is("AWS::Lambda::Url", 1)
    outputs = t.to_json()["Outputs"]
    for key in (
        "GitLabWebhookUrl",
        "GitLabWebhookSecretName",
        "GitLabTokenSecretName",
        "JiraWebhookUrl",
        "JiraWebhookSecretName",
        "JiraTokenSecretName",
    ):
        assert key in outputs, key  # stack scope, documented name as the id: no hash suffix
    gitlab_url = outputs["GitLabWebhookUrl"]["Value"]["Fn::Join"][1]
    assert gitlab_url[1] == "gitlab" and "FunctionUrl" in json.dumps(gitlab_url[0])
    assert outputs["JiraWebhookUrl"]["Value"]["Fn::Join"][1][1] == "jira"
    # GitHub-only stacks get none of them.
    assert not any(
        k.startswith(("GitLab", "Jira")) for k in synthed["templates"]["literal"].to_json()["Outputs"]
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"trackers": ["svn"]}, "at most once"),
        ({"trackers": []}, "at most once"),
        ({"trackers": "github"}, "must be a list"),
        ({"trackers": ["github", "github"]}, "at most once"),
        ({"trackers": ["jira"]}, r"jira=JiraSettings.*, or remove 'jira' from trackers"),
        ({"trackers": ["jira"], "jira": JiraSettings(site_url="http://x.atlassian.net")}, "https"),
        ({"trackers": ["gitlab"], "gitlab": GitLabSettings(min_access_level=25)}, "min_access_level"),
        ({"trackers": ["gitlab"], "gitlab": GitLabSettings(trigger_label="", trigger_mention="")}, "trigger"),
    ],
    ids=[
        "unknown",
        "empty",
        "string",
        "twice",
        "jira-without-settings",
        "jira-http",
        "gitlab-level",
        "gitlab-no-trigger",
    ],
)
def test_tracker_settings_are_validated(kwargs: dict[str, Any], match: str) -> None:
    stack = cdk.Stack(cdk.App(), "S")
    with pytest.raises(ValueError, match=match):
        IssueWebhook(stack, "W", runtime_arn=RUNTIME_ARN, props=WebhookProps(**kwargs))


def test_gitlab_only_webhook_has_no_github_secrets() -> None:
    stack = cdk.Stack(cdk.App(), "GitLabOnly", env=cdk.Environment(account=ACCOUNT, region=REGION))
    IssueWebhook(stack, "W", runtime_arn=RUNTIME_ARN, props=WebhookProps(trackers=["gitlab"]))
    t = Template.from_stack(stack)
    names = sorted(s["Properties"]["Name"] for s in t.find_resources("AWS::SecretsManager::Secret").values())
    assert names == ["agentkit/gitlab-token", "agentkit/gitlab-webhook-secret"]
    outputs = t.to_json()["Outputs"]
    assert not any("GitHubToken" in k or k.endswith("WebhookWebhookSecretName") for k in outputs)
    assert "GitLabWebhookSecretName" in outputs


def test_the_sweepers_deadline_without_the_stack_is_above_agentcores_longest_session(
    synthed: dict[str, Any],
) -> None:
    """A construct used on its own (no stage lifetime to derive from) ends jobs 8 h 30 min after their start."""
    env = _env_of(synthed["templates"]["literal"], "webhook.sweeper.handler")["Environment"]["Variables"]
    assert env["JOB_DEADLINE_SECONDS"] == str(8 * 3600 + 1800)


# ---------------------------------------------------------------------------------------------- read tokens
#: The tokens that push code (fix branches, pull/merge requests) and the lesser read tokens, by secret name.
WRITE_TOKENS = ("agentkit-dev/github-token", "agentkit-dev/gitlab-token")
READ_TOKENS = ("agentkit-dev/github-read-token", "agentkit-dev/gitlab-read-token")


def _role_policy_text(template: Template, handler: str) -> str:
    """Every statement of every policy attached to ``handler``'s role, as JSON (any action, any resource)."""
    role = _role_of(template, handler)
    docs = [
        policy["Properties"]["PolicyDocument"]
        for policy in template.find_resources("AWS::IAM::Policy").values()
        if {"Ref": role} in policy["Properties"]["Roles"]
    ]
    return json.dumps(docs)


def _secret_ids(template: Template) -> dict[str, str]:
    """Secret name → its logical id."""
    return {
        res["Properties"]["Name"]: logical_id
        for logical_id, res in template.find_resources("AWS::SecretsManager::Secret").items()
    }


def test_with_read_tokens_only_the_reporter_can_read_a_token_that_pushes_code(
    synthed: dict[str, Any],
) -> None:
    t = synthed["templates"]["split"]
    ids = _secret_ids(t)
    assert set(READ_TOKENS) | set(WRITE_TOKENS) <= set(ids)
    assert "agentkit-dev/jira-read-token" not in ids  # Jira's token pushes no code: nothing to split
    assert "agentkit-dev/github-members-token" not in ids  # GitHub's receiver asks no API
    # The public receiver: webhook secrets and GitLab's read-only members token, no token that can write.
    assert _secret_reads(t, "webhook.receiver.handler") == [
        "agentkit-dev/github-webhook-secret",
        "agentkit-dev/gitlab-members-token",
        "agentkit-dev/gitlab-webhook-secret",
        "agentkit-dev/jira-webhook-secret",
    ]
    # The worker: the read tokens (replies, snapshots) and Jira's; never a token that pushes.
    assert _secret_reads(t, "webhook.worker.handler") == [
        "agentkit-dev/github-read-token",
        "agentkit-dev/gitlab-read-token",
        "agentkit-dev/jira-token",
    ]
    # The reporter: the tokens that push and the read tokens its comments are edited with.
    assert _secret_reads(t, "webhook.reporter.handler") == sorted(
        [*WRITE_TOKENS, *READ_TOKENS, "agentkit-dev/jira-token"]
    )
    # The sweeper edits the comment the worker posted: the read tokens too.
    assert _secret_reads(t, "webhook.sweeper.handler") == _secret_reads(t, "webhook.worker.handler")
    # Not by any other statement either (any action, any policy on the role).
    for handler in ("webhook.receiver.handler", "webhook.worker.handler", "webhook.sweeper.handler"):
        text = _role_policy_text(t, handler)
        for name in WRITE_TOKENS:
            assert ids[name] not in text, (handler, name)
        assert '"secretsmanager:*"' not in text and "secretsmanager:GetSecretValue" in text
    receiver_text = _role_policy_text(t, "webhook.receiver.handler")
    assert not any(ids[name] in receiver_text for name in READ_TOKENS)  # they post comments
    for handler in ("webhook.worker.handler", "webhook.reporter.handler"):
        assert ids["agentkit-dev/gitlab-members-token"] not in _role_policy_text(t, handler)
    assert all(ids[name] in _role_policy_text(t, "webhook.reporter.handler") for name in WRITE_TOKENS)


def test_with_read_tokens_each_lambda_is_told_only_its_secrets(synthed: dict[str, Any]) -> None:
    t = synthed["templates"]["split"]
    ids = _secret_ids(t)
    env = {
        name: _env_of(t, f"webhook.{name}.handler")["Environment"]["Variables"]
        for name in ("receiver", "worker", "reporter")
    }
    ref = {name: {"Ref": logical_id} for name, logical_id in ids.items()}
    assert env["receiver"]["GITLAB_MEMBERS_TOKEN_SECRET_NAME"] == ref["agentkit-dev/gitlab-members-token"]
    assert "GITLAB_READ_TOKEN_SECRET_NAME" not in env["receiver"]
    for function in ("receiver", "worker"):
        assert (
            "GITLAB_TOKEN_SECRET_NAME" not in env[function]
            and "GITHUB_TOKEN_SECRET_NAME" not in env[function]
        )
    assert "GITHUB_READ_TOKEN_SECRET_NAME" not in env["receiver"]
    assert env["worker"]["GITHUB_READ_TOKEN_SECRET_NAME"] == ref["agentkit-dev/github-read-token"]
    assert env["worker"]["JIRA_TOKEN_SECRET_NAME"] == ref["agentkit-dev/jira-token"]
    assert env["reporter"]["GITHUB_TOKEN_SECRET_NAME"] == ref["agentkit-dev/github-token"]
    assert env["reporter"]["GITLAB_READ_TOKEN_SECRET_NAME"] == ref["agentkit-dev/gitlab-read-token"]
    outputs = t.to_json()["Outputs"]
    assert outputs["GitHubReadTokenSecretName"]["Value"] == ref["agentkit-dev/github-read-token"]
    assert outputs["GitLabReadTokenSecretName"]["Value"] == ref["agentkit-dev/gitlab-read-token"]
    assert outputs["GitLabMembersTokenSecretName"]["Value"] == ref["agentkit-dev/gitlab-members-token"]
    # Without read tokens nothing changes: one token per tracker, no read token output.
    multi = synthed["templates"]["multi"].to_json()["Outputs"]
    assert not any("ReadToken" in k or "MembersToken" in k for k in multi)


def test_read_tokens_of_a_stage_without_created_secrets_are_referenced_by_name(
    synthed: dict[str, Any],
) -> None:
    t = synthed["templates"]["split_named"]
    t.resource_count_is("AWS::SecretsManager::Secret", 0)

    def reads(handler: str) -> str:
        return json.dumps(
            [
                s["Resource"]
                for doc in json.loads(_role_policy_text(t, handler))
                for s in doc["Statement"]
                if "secretsmanager:GetSecretValue" in s["Action"]
            ]
        )

    receiver, worker, reporter = (reads(f"webhook.{f}.handler") for f in ("receiver", "worker", "reporter"))
    for tracker in ("github", "gitlab"):
        pushes = f"secret:agentkit-prod/{tracker}-token-??????"
        assert pushes not in receiver and pushes not in worker and pushes in reporter
        assert f"secret:agentkit-prod/{tracker}-read-token-??????" in worker
    assert "secret:agentkit-prod/gitlab-members-token-??????" in receiver
    assert "-read-token-" not in receiver and "-members-token-" not in worker + reporter
