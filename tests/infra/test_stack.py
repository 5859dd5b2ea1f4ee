"""Synthesized stacks: every construct's important properties and the stack-level grants (no logical ids)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match

from tests.infra.conftest import Synth

pytestmark = pytest.mark.infra


def resources(s: Synth, cfn_type: str) -> list[dict[str, Any]]:
    return [r for r in s.raw["Resources"].values() if r["Type"] == cfn_type]


def runtime_props(s: Synth) -> dict[str, Any]:
    (runtime,) = resources(s, "AWS::BedrockAgentCore::Runtime")
    return runtime["Properties"]


def runtime_statements(s: Synth) -> list[dict[str, Any]]:
    role_arn = runtime_props(s)["RoleArn"]["Fn::GetAtt"][0]
    statements = []
    for policy in resources(s, "AWS::IAM::Policy"):
        if {"Ref": role_arn} in policy["Properties"]["Roles"]:
            statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return statements


def by_sid(s: Synth, sid: str) -> dict[str, Any]:
    (statement,) = [st for st in runtime_statements(s) if st.get("Sid") == sid]
    return statement


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


# --- runtime -------------------------------------------------------------------------------------------


def test_runtime_basics(dev: Synth) -> None:
    dev.template.has_resource_properties(
        "AWS::BedrockAgentCore::Runtime",
        {
            "AgentRuntimeName": "agentkit_dev",
            "ProtocolConfiguration": "HTTP",
            "NetworkConfiguration": {"NetworkMode": "PUBLIC"},
            "LifecycleConfiguration": {"IdleRuntimeSessionTimeout": 900, "MaxLifetime": 7200},
            "RequestHeaderConfiguration": {
                "RequestHeaderAllowlist": ["X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor"]
            },
        },
    )
    assert "AuthorizerConfiguration" not in runtime_props(dev)  # IAM (SigV4) is the default


def test_runtime_environment(dev: Synth) -> None:
    env = runtime_props(dev)["EnvironmentVariables"]
    memory_ref = dumps(env["AGENTKIT_MEMORY_ID"])
    assert "Memory" in memory_ref
    assert env["AGENTKIT_SESSION_STORE"]["Fn::Join"][1][0] == "agentcore://"
    assert env["AGENTKIT_METRICS"] == "cloudwatch"
    assert env["AGENTKIT_METRICS_NAMESPACE"] == "AgentCoreClaudeKit"
    assert env["AGENTKIT_MODEL"] == "us.anthropic.claude-sonnet-5-5"
    assert env["AGENTKIT_SMALL_MODEL"] == "us.anthropic.claude-haiku-4-5-20251001-v1:0"
    assert env["AGENTKIT_FALLBACK_MODEL"] == "us.anthropic.claude-sonnet-5"  # a profile the role may invoke
    assert "AGENTKIT_BEDROCK_PROJECT" not in env and "AGENTKIT_PRICES" not in env  # unset unless configured
    assert env["AGENTKIT_RECALL_NAMESPACES"] == "/agentkit/facts/{actorId},/agentkit/preferences/{actorId}"
    assert env["AGENTKIT_ACTOR_HEADER"] == "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor"
    assert "GatewayUrl" in dumps(env["AGENTKIT_GATEWAY_URL"])
    assert env["AWS_REGION"] == {"Ref": "AWS::Region"}
    assert (env["AGENTKIT_AGENT_PROFILE"], env["AGENTKIT_SANDBOX"]) == ("readonly", "required")
    assert env["AGENTKIT_STAGE"] == "dev"  # attribution in each Bedrock call's request metadata


def _resolve(value: Any) -> str:
    """A synthesized value with its CloudFormation references replaced by plausible deployed values."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(_resolve(part) for part in parts)
    ref = dumps(value)
    if "AWS::Region" in ref:
        return "eu-west-1"
    if "Memory" in ref:
        return "agentkit_dev_memory-AbCdEf1234"
    if "Gateway" in ref:
        return "https://gw-abc.gateway.bedrock-agentcore.eu-west-1.amazonaws.com/mcp"
    raise AssertionError(f"unexpected reference in the runtime environment: {ref}")


def test_what_the_stack_sets_parses_through_the_runtime_settings(dev: Synth) -> None:
    from runtime.config.settings import Settings
    from runtime.env import ENV_MEMORY_ID

    env = {name: _resolve(value) for name, value in runtime_props(dev)["EnvironmentVariables"].items()}
    settings = Settings.from_env(env)  # raises ConfigurationError on any value the runtime would refuse
    assert settings.session_store == "agentcore://agentkit_dev_memory-AbCdEf1234"
    assert settings.memory_id == env[ENV_MEMORY_ID] and settings.aws_region == "eu-west-1"
    assert settings.metrics == "cloudwatch" and settings.metrics_namespace == "AgentCoreClaudeKit"
    assert settings.recall_namespaces == ("/agentkit/facts/{actorId}", "/agentkit/preferences/{actorId}")
    assert settings.actor_header == "X-Amzn-Bedrock-AgentCore-Runtime-Custom-Actor"
    assert settings.gateway_url is not None and settings.gateway_url.startswith("https://")
    assert settings.bedrock_endpoint is None  # never set by a deployed stack


def test_bedrock_endpoint_is_never_deployed(dev: Synth, prod: Synth) -> None:
    for s in (dev, prod):
        assert "AGENTKIT_BEDROCK_ENDPOINT" not in runtime_props(s)["EnvironmentVariables"]
        assert "AGENTKIT_BEDROCK_ENDPOINT" not in s.template_path.read_text()


def test_runtime_construct_refuses_bedrock_endpoint() -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_bedrockagentcore as agentcore
    from aws_cdk import aws_ecr as ecr

    from infra.config import load_config
    from infra.image_build import ImageSource
    from infra.runtime import AgentRuntime
    from tests.infra.conftest import base_context

    stack = cdk.Stack(cdk.App(), "S")
    repo = ecr.Repository.from_repository_name(stack, "R", "r")
    with pytest.raises(ValueError, match="AGENTKIT_BEDROCK_ENDPOINT"):
        AgentRuntime(
            stack,
            "A",
            config=load_config(base_context()["agentkit"], stage="dev"),
            image=ImageSource(agentcore.AgentRuntimeArtifact.from_ecr_repository(repo, "t"), repo),
            environment={"AGENTKIT_BEDROCK_ENDPOINT": "http://127.0.0.1:1"},
        )


def test_tracing_and_log_delivery_with_retention(dev: Synth, prod: Synth) -> None:
    dev.template.has_resource_properties("AWS::Logs::DeliverySource", {"LogType": "TRACES"})
    dev.template.has_resource_properties("AWS::Logs::DeliverySource", {"LogType": "APPLICATION_LOGS"})
    dev.template.has_resource_properties("AWS::Logs::DeliverySource", {"LogType": "USAGE_LOGS"})
    dev.template.has_resource_properties(
        "AWS::Logs::DeliveryDestination", {"DeliveryDestinationType": "XRAY"}
    )
    dev.template.has_resource_properties("AWS::Logs::LogGroup", {"RetentionInDays": 14})
    prod.template.has_resource_properties("AWS::Logs::LogGroup", {"RetentionInDays": 90})
    for group in resources(dev, "AWS::Logs::LogGroup"):
        assert group["Properties"]["RetentionInDays"] == 14
        assert group["DeletionPolicy"] == "Delete"
    for group in resources(prod, "AWS::Logs::LogGroup"):
        assert group["DeletionPolicy"] == "Retain"


def test_endpoint_per_stage(dev: Synth, prod: Synth) -> None:
    dev.template.has_resource_properties("AWS::BedrockAgentCore::RuntimeEndpoint", {"Name": "dev"})
    prod.template.has_resource_properties("AWS::BedrockAgentCore::RuntimeEndpoint", {"Name": "prod"})


def test_prod_jwt_auth_and_vpc(prod: Synth) -> None:
    prod.template.has_resource_properties(
        "AWS::BedrockAgentCore::Runtime",
        {
            "AuthorizerConfiguration": {
                "CustomJWTAuthorizer": {
                    "DiscoveryUrl": "https://issuer.example.com/.well-known/openid-configuration",
                    "AllowedClients": ["client-1"],
                }
            },
            "NetworkConfiguration": {
                "NetworkMode": "VPC",
                "NetworkModeConfig": Match.object_like(
                    {"Subnets": ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"]}
                ),
            },
            # The JWT must reach the container: its sub is the actor. The custom actor header is not trusted.
            "RequestHeaderConfiguration": {"RequestHeaderAllowlist": ["Authorization"]},
        },
    )
    env = runtime_props(prod)["EnvironmentVariables"]
    assert "AGENTKIT_ACTOR_HEADER" not in env


# --- IAM least privilege -----------------------------------------------------------------------------


def test_model_access_only_on_profiles_and_their_models(dev: Synth) -> None:
    """The profiles, and their foundation models in any Region only through those profiles: no copy of which
    Regions a profile routes to (AWS changes that) and no model reachable without a configured profile."""
    direct = by_sid(dev, "InvokeConfiguredProfiles")
    through = by_sid(dev, "InvokeModelsThroughConfiguredProfiles")
    for statement in (direct, through):
        assert sorted(as_list(statement["Action"])) == [
            "bedrock:InvokeModel",
            "bedrock:InvokeModelWithResponseStream",
        ]
    profiles = [dumps(r) for r in as_list(direct["Resource"])]
    models = [dumps(r) for r in as_list(through["Resource"])]
    # The main model, the small/fast slot and the fallback: nothing else.
    assert all("*" not in r for r in profiles) and len(profiles) == 3
    for model in ("claude-sonnet-5-5", "claude-haiku-4-5-20251001-v1:0", "claude-sonnet-5"):
        assert sum(r.endswith(f'inference-profile/us.anthropic.{model}"]]}}') for r in profiles) == 1, model
        assert sum(r.endswith(f':bedrock:*::foundation-model/anthropic.{model}"]]}}') for r in models) == 1, (
            model
        )
    assert len(models) == 3
    # Only through the configured profiles: the condition lists exactly the profile ARNs of the first statement.
    assert list(through["Condition"]) == ["StringEquals"]
    condition = through["Condition"]["StringEquals"]["bedrock:InferenceProfileArn"]
    assert sorted(dumps(c) for c in as_list(condition)) == sorted(profiles)


def test_a_global_profile_adds_the_regionless_model_arn(global_oidc: Synth) -> None:
    through = by_sid(global_oidc, "InvokeModelsThroughConfiguredProfiles")
    models = [dumps(r) for r in as_list(through["Resource"])]
    assert sum(":bedrock:::foundation-model/anthropic.claude-sonnet-4-5" in r for r in models) == 1
    assert sum(":bedrock:*::foundation-model/anthropic.claude-sonnet-4-5" in r for r in models) == 1


def test_first_use_of_a_claude_model_can_subscribe(dev: Synth) -> None:
    """Bedrock subscribes on first invocation; the role needs Subscribe and Unsubscribe (scoped by product) and
    ViewSubscriptions, the model-access page's prerequisites."""
    subscribe = by_sid(dev, "MarketplaceSubscribeConfiguredModels")
    assert subscribe["Action"] == ["aws-marketplace:Subscribe", "aws-marketplace:Unsubscribe"]
    assert subscribe["Resource"] == "*"
    # Haiku 4.5 (AWS's product-id table), nothing else: no source read gives Sonnet 5.5's or Sonnet 5's product id
    # (docs/configuration.md says what to do; the synth warns, test_unknown_product_id_warns_and_config_can_add_it).
    assert subscribe["Condition"] == {
        "ForAnyValue:StringEquals": {"aws-marketplace:ProductId": ["prod-xdkflymybwmvi"]}
    }
    view = by_sid(dev, "MarketplaceViewSubscriptions")
    assert view["Action"] == "aws-marketplace:ViewSubscriptions" and "Condition" not in view
    marketplace = {a for st in runtime_statements(dev) for a in as_list(st["Action"]) if "marketplace" in a}
    assert marketplace == {
        "aws-marketplace:Subscribe",
        "aws-marketplace:Unsubscribe",
        "aws-marketplace:ViewSubscriptions",
    }


def test_inference_profile_reads_are_scoped(dev: Synth) -> None:
    get = by_sid(dev, "ReadConfiguredInferenceProfiles")
    assert get["Action"] == "bedrock:GetInferenceProfile"
    rendered = sorted(dumps(r) for r in as_list(get["Resource"]))
    assert len(rendered) == 3 and all("*" not in r for r in rendered)
    assert any(r.endswith('inference-profile/us.anthropic.claude-sonnet-5-5"]]}') for r in rendered)
    listing = by_sid(dev, "ListInferenceProfiles")
    assert listing["Action"] == "bedrock:ListInferenceProfiles"
    assert listing["Resource"] == "*"  # no resource types in the SAR: a scoped grant would never match


def test_unknown_product_id_warns_and_config_can_add_it(tmp_path_factory: pytest.TempPathFactory) -> None:
    from aws_cdk.assertions import Annotations

    from tests.infra.conftest import synth

    newer = "us.anthropic.claude-opus-9-20300101-v1:0"
    price = {"claude-opus-9": {"input": 5, "output": 25}}  # an unpriced model refuses to synth
    warned = synth(
        tmp_path_factory.mktemp("w"),
        stage="dev",
        overrides={"extra_models": [newer], "prices": price},
        account=None,
    )
    Annotations.from_stack(warned.stack).has_warning(
        "*", Match.string_like_regexp("No AWS Marketplace product id known for .*anthropic.claude-opus-9")
    )
    added = synth(
        tmp_path_factory.mktemp("a"),
        stage="dev",
        overrides={
            "extra_models": [newer],
            "prices": price,
            "marketplace_product_ids": {"anthropic.claude-opus-9-20300101-v1:0": "prod-abc123"},
        },
        account=None,
    )
    condition = by_sid(added, "MarketplaceSubscribeConfiguredModels")["Condition"]
    assert "prod-abc123" in condition["ForAnyValue:StringEquals"]["aws-marketplace:ProductId"]
    assert not Annotations.from_stack(added.stack).find_warning(
        "*", Match.string_like_regexp("claude-opus-9")
    )
    passed = json.loads(runtime_props(added)["EnvironmentVariables"]["AGENTKIT_PRICES"])
    assert passed == {
        "claude-opus-9": {"input": 5, "output": 25}
    }  # the runtime prices it with the same figures


def test_no_bedrock_wildcards_anywhere(dev: Synth, prod: Synth) -> None:
    for s in (dev, prod):
        for policy in resources(s, "AWS::IAM::Policy"):
            for st in policy["Properties"]["PolicyDocument"]["Statement"]:
                actions = as_list(st["Action"])
                assert "bedrock:*" not in actions and "*" not in actions
                if any(a.startswith("bedrock:") for a in actions) and "*" in as_list(st["Resource"]):
                    # The one exception is a list call the SAR gives no resource types; it grants no model access.
                    assert actions == ["bedrock:ListInferenceProfiles"], st


def test_memory_actions_only_on_memory_arn(dev: Synth) -> None:
    statement = by_sid(dev, "AgentMemoryData")
    assert sorted(statement["Action"]) == sorted(
        [
            "bedrock-agentcore:CreateEvent",
            "bedrock-agentcore:ListEvents",
            "bedrock-agentcore:DeleteEvent",
            "bedrock-agentcore:RetrieveMemoryRecords",
        ]
    )
    assert set(statement["Resource"]["Fn::GetAtt"][1:]) == {"MemoryArn"}


def test_metrics_conditioned_on_namespace(dev: Synth) -> None:
    statement = by_sid(dev, "AgentMetrics")
    assert statement["Action"] == "cloudwatch:PutMetricData"
    assert statement["Condition"] == {"StringEquals": {"cloudwatch:namespace": "AgentCoreClaudeKit"}}
    others = [st for st in runtime_statements(dev) if "cloudwatch:PutMetricData" in as_list(st["Action"])]
    assert others == [statement]  # the L2's bedrock-agentcore namespace grant was dropped


def test_gateway_invoke_only_on_gateway(dev: Synth) -> None:
    statement = by_sid(dev, "InvokeToolsGateway")
    assert statement["Action"] == "bedrock-agentcore:InvokeGateway"
    assert statement["Resource"]["Fn::GetAtt"][1] == "GatewayArn"


def test_logs_only_to_our_runtime_groups(dev: Synth) -> None:
    for st in runtime_statements(dev):
        actions = as_list(st["Action"])
        if any(a in actions for a in ("logs:PutLogEvents", "logs:CreateLogStream", "logs:CreateLogGroup")):
            assert "/aws/bedrock-agentcore/runtimes/agentkit_dev-*" in dumps(st["Resource"])


def test_ecr_pull_only_from_our_repository(dev: Synth, prod: Synth) -> None:
    for s in (dev, prod):
        pulls = [st for st in runtime_statements(s) if "ecr:BatchGetImage" in as_list(st["Action"])]
        assert len(pulls) == 1 and "*" not in as_list(pulls[0]["Resource"])
        tokens = [st for st in runtime_statements(s) if "ecr:GetAuthorizationToken" in as_list(st["Action"])]
        assert as_list(tokens[0]["Action"]) == ["ecr:GetAuthorizationToken"]
    prod_pull = next(st for st in runtime_statements(prod) if "ecr:BatchGetImage" in as_list(st["Action"]))
    assert "Repository" in dumps(prod_pull["Resource"])  # our CodeBuild repository


def test_xray_writes_present(dev: Synth) -> None:
    assert "xray:PutTraceSegments" in by_sid(dev, "XRayWrite")["Action"]


def test_cmk_memory_in_prod(prod: Synth) -> None:
    prod.template.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})
    prod.template.has_resource_properties(
        "AWS::BedrockAgentCore::Memory", {"EncryptionKeyArn": Match.any_value()}
    )
    assert by_sid(prod, "AgentMemoryKey")["Action"] == ["kms:Decrypt", "kms:GenerateDataKey"]


# --- memory --------------------------------------------------------------------------------------------


def test_memory_strategies_and_expiry(dev: Synth, prod: Synth) -> None:
    """Each strategy's namespace is a ``NamespaceTemplates`` entry (botocore and the CloudFormation schema
    carry it; ``Namespaces`` is the legacy field), with nothing else changed."""
    (memory,) = resources(dev, "AWS::BedrockAgentCore::Memory")
    assert memory["Properties"]["EventExpiryDuration"] == 30
    assert memory["Properties"]["MemoryStrategies"] == [
        {"SemanticMemoryStrategy": {"Name": "facts", "NamespaceTemplates": ["/agentkit/facts/{actorId}"]}},
        {
            "UserPreferenceMemoryStrategy": {
                "Name": "preferences",
                "NamespaceTemplates": ["/agentkit/preferences/{actorId}"],
            }
        },
        {
            "SummaryMemoryStrategy": {
                "Name": "summaries",
                "NamespaceTemplates": ["/agentkit/summaries/{actorId}/{sessionId}"],
            }
        },
    ]
    prod.template.has_resource_properties("AWS::BedrockAgentCore::Memory", {"EventExpiryDuration": 90})


# --- gateway -------------------------------------------------------------------------------------------


def test_gateway_uses_explicit_iam_and_no_cognito(dev: Synth) -> None:
    dev.template.has_resource_properties(
        "AWS::BedrockAgentCore::Gateway", {"AuthorizerType": "AWS_IAM", "ProtocolType": "MCP"}
    )
    dev.template.resource_count_is("AWS::Cognito::UserPool", 0)


def test_gateway_role_is_trusted_only_with_source_account_and_arn(prod: Synth) -> None:
    """One trust statement, with the confused-deputy conditions: an unconditioned second statement (the L2
    default role's) would make them moot."""
    (gateway,) = resources(prod, "AWS::BedrockAgentCore::Gateway")
    role_id = gateway["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    trust = prod.raw["Resources"][role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert len(trust) == 1
    (statement,) = trust
    assert statement["Principal"] == {"Service": "bedrock-agentcore.amazonaws.com"}
    assert statement["Action"] == "sts:AssumeRole" and statement["Effect"] == "Allow"
    assert statement["Condition"] == {
        "StringEquals": {"aws:SourceAccount": "123456789012"},
        "ArnLike": {
            "aws:SourceArn": "arn:aws:bedrock-agentcore:us-east-1:123456789012:gateway/agentkit-prod-tools*"
        },
    }
    # The tool target's grant still lands on this role.
    policies = [
        r for r in resources(prod, "AWS::IAM::Policy") if {"Ref": role_id} in r["Properties"]["Roles"]
    ]
    assert "lambda:InvokeFunction" in dumps(policies)


def test_gateway_lambda_target_with_inline_tools(dev: Synth) -> None:
    # The sample's target; an agent directory's own targets sit next to it (tests/infra/test_agent_dir_deploy.py).
    targets = {t["Properties"]["Name"]: t for t in resources(dev, "AWS::BedrockAgentCore::GatewayTarget")}
    text = dumps(targets["invoices"]["Properties"])
    assert "list_overdue_invoices" in text and "get_invoice" in text
    assert "GATEWAY_IAM_ROLE" in text


def test_invoice_function_and_table(dev: Synth) -> None:
    dev.template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "app.handler",
            "Architectures": ["arm64"],
            "TracingConfig": {"Mode": "Active"},
            "Environment": {"Variables": Match.object_like({"INVOICES_TABLE": Match.any_value()})},
        },
    )
    dev.template.has_resource_properties(
        "AWS::DynamoDB::GlobalTable",
        {"GlobalSecondaryIndexes": [Match.object_like({"IndexName": "by_status"})]},
    )


# --- observability -------------------------------------------------------------------------------------


def test_dead_letter_queues_alarm_on_their_first_message(optional: Synth) -> None:
    """A webhook task or a job event that failed every retry waits in a dead-letter queue: the alarm topic hears
    of the first one (nothing else would tell anyone, and a stopped fix job's comment stays 'Working…')."""
    dlq_ids = {
        logical_id
        for logical_id, resource in optional.raw["Resources"].items()
        if resource["Type"] == "AWS::SQS::Queue"
        and any(
            "deadLetterTargetArn" in dumps(other["Properties"].get("RedrivePolicy", {}))
            and logical_id in dumps(other["Properties"]["RedrivePolicy"])
            for other in resources(optional, "AWS::SQS::Queue")
        )
    }
    assert len(dlq_ids) == 2, dlq_ids  # the webhook's tasks and the runtime's job events
    alarmed = set()
    for alarm in resources(optional, "AWS::CloudWatch::Alarm"):
        props = alarm["Properties"]
        if props.get("MetricName") != "ApproximateNumberOfMessagesVisible":
            continue
        assert props["Namespace"] == "AWS/SQS" and props["Threshold"] == 1
        assert props["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert "AlarmTopic" in dumps(props["AlarmActions"])
        alarmed |= {d for d in dlq_ids if d in dumps(props["Dimensions"])}
    assert alarmed == dlq_ids


def test_alarms_to_topic(dev: Synth, prod: Synth) -> None:
    dev.template.resource_count_is("AWS::CloudWatch::Alarm", 3)
    dev.template.has_resource_properties("AWS::CloudWatch::Alarm", {"Threshold": 10, "EvaluationPeriods": 1})
    dev.template.has_resource_properties("AWS::CloudWatch::Alarm", {"Threshold": 120000})
    prod.template.has_resource_properties("AWS::CloudWatch::Alarm", {"Threshold": 100})
    for alarm in resources(dev, "AWS::CloudWatch::Alarm"):
        assert "AlarmTopic" in dumps(alarm["Properties"]["AlarmActions"])
    dev.template.resource_count_is("AWS::SNS::Subscription", 0)
    prod.template.has_resource_properties(
        "AWS::SNS::Subscription", {"Protocol": "email", "Endpoint": "ops@example.com"}
    )


def test_runtime_alarms_do_not_call_missing_data_ok(dev: Synth) -> None:
    """The runtime metrics' dimensions are undocumented: a wrong set must show as INSUFFICIENT_DATA, not OK.
    Only the spend alarm (our own metric: no data means no spend) treats missing data as not breaching."""
    alarms = resources(dev, "AWS::CloudWatch::Alarm")
    spend = [a for a in alarms if "CostUSD" in dumps(a["Properties"])]
    assert [a["Properties"]["TreatMissingData"] for a in spend] == ["notBreaching"]
    runtime_alarms = [
        a
        for a in resources(dev, "AWS::CloudWatch::Alarm")
        if "AWS/Bedrock-AgentCore" in dumps(a["Properties"])
    ]
    assert len(runtime_alarms) == 2
    assert {a["Properties"]["TreatMissingData"] for a in runtime_alarms} == {"missing"}


def test_dashboard_shows_the_runtimes_billed_compute(dev: Synth) -> None:
    """CostUSD counts model tokens only; AgentCore also bills the runtime's vCPU-hours and GB-hours, which it
    publishes under ``Service=AgentCore.Runtime`` and ``Resource=<runtime ARN>`` (no ``Operation``)."""
    widget = _widget(dev, "Runtime compute per day, as billed")
    rows = [[f for f in row if not isinstance(f, dict)] for row in widget["metrics"]]
    assert [r[:2] for r in rows] == [
        ["AWS/Bedrock-AgentCore", "CPUUsed-vCPUHours"],
        ["AWS/Bedrock-AgentCore", "MemoryUsed-GBHours"],
    ]
    for row in rows:
        dims = dict(zip(row[2::2], row[3::2], strict=True))
        assert set(dims) == {"Service", "Resource"} and dims["Service"] == "AgentCore.Runtime", row


def _widget(dev: Synth, title_start: str) -> dict[str, Any]:
    """The dashboard widget whose title starts with ``title_start`` (its ARN tokens read as <TOKEN>)."""
    from tests.infra.test_metric_contract import dashboard_body

    (widget,) = [
        w
        for w in dashboard_body(dev)["widgets"]
        if w.get("properties", {}).get("title", "").startswith(title_start)
    ]
    return widget["properties"]


def test_dashboard_prices_each_days_model_compute_and_memory(dev: Synth) -> None:
    """Cost per day in parts: the model's CostUSD, the runtime's vCPU-hours and GB-hours at the price table's
    rates, and the Memory calls the runtime counted at theirs; the total beside the daily budget."""
    from runtime.observe.prices import DEFAULT_PRICES

    prices, _ = DEFAULT_PRICES.agentcore_for("us-east-1")
    parts = _widget(dev, "Cost USD per day in parts")
    assert parts["stacked"] is True and DEFAULT_PRICES.agentcore_as_of in parts["title"]
    expressions = [row[0]["expression"] for row in parts["metrics"] if isinstance(row[0], dict)]
    assert f"FILL(cpu, 0) * {prices.vcpu_hour!r} + FILL(gb, 0) * {prices.gb_hour!r}" in expressions
    assert f"FILL(ev, 0) * {prices.memory_event!r} + FILL(rt, 0) * {prices.memory_retrieval!r}" in expressions
    rows = [
        [f for f in row if not isinstance(f, dict)]
        for row in parts["metrics"]
        if not isinstance(row[0], dict)
    ]
    named = {tuple(r[:2]) for r in rows if len(r) >= 2}
    assert ("AgentCoreClaudeKit", "CostUSD") in named
    assert {(r[0], r[1]) for r in rows if r[0] != "."} >= {
        ("AWS/Bedrock-AgentCore", "CPUUsed-vCPUHours"),
        ("AgentCoreClaudeKit", "MemoryEventsWritten"),
    }
    assert all(row[-1].get("period") == 86400 for row in parts["metrics"])  # per day
    total = _widget(dev, "Cost USD per day, all parts")
    assert (
        next(row[0]["expression"] for row in total["metrics"] if isinstance(row[0], dict)) == "mo + co + me"
    )
    assert total["annotations"]["horizontal"][0]["value"] == dev.config.settings.daily_budget_usd


def test_dashboard_content(dev: Synth) -> None:
    (dashboard,) = resources(dev, "AWS::CloudWatch::Dashboard")
    body = dumps(dashboard["Properties"]["DashboardBody"])
    for needle in (
        "CostUSD",
        "CacheReadTokens",
        "InvocationLatencyMs",
        "ToolCalls",
        "ToolErrors",
        "BudgetExceeded",
        "AWS/Bedrock-AgentCore",
        "Invocations",
        "SystemErrors",
        "Throttles",
        "p99",
        "gen-ai-observability",
    ):
        assert needle in body, needle


def test_dashboard_opens_on_a_week_with_spend_against_the_budget(dev: Synth, optional: Synth) -> None:
    (dashboard,) = resources(dev, "AWS::CloudWatch::Dashboard")
    body = dumps(dashboard["Properties"]["DashboardBody"])
    assert '\\"start\\":\\"-P7D\\"' in body  # 7-day default range: "cost per day" shows a week
    for needle in (
        "TimeToFirstTokenMs",
        "ToolLatencyMs",
        "Turns",
        "Spend today (UTC)",
        "Spend this month (UTC)",
    ):
        assert needle in body, needle
    assert 'daily budget $10\\"' in body and '\\"value\\":10' in body  # threshold line on the cost graph
    assert "Top sessions and callers by cost" in body and "IssueCostUSD" not in body  # no webhook in dev
    (with_webhook,) = resources(optional, "AWS::CloudWatch::Dashboard")
    assert "IssueCostUSD" in dumps(with_webhook["Properties"]["DashboardBody"])


def test_transaction_search_is_opt_in(dev: Synth, prod: Synth) -> None:
    dev.template.resource_count_is("AWS::XRay::TransactionSearchConfig", 0)
    prod.template.resource_count_is("AWS::XRay::TransactionSearchConfig", 1)


# --- image build ---------------------------------------------------------------------------------------


def test_local_image_is_an_arm64_docker_asset(dev: Synth) -> None:
    assets = json.loads(
        next(dev.template_path.parent.glob(f"{dev.stack.stack_name}.assets.json")).read_text()
    )
    (image,) = assets["dockerImages"].values()
    assert image["source"]["platform"] == "linux/arm64"
    staged = dev.template_path.parent / image["source"]["directory"]
    assert (staged / "Dockerfile").is_file() and (staged / "runtime").is_dir()
    for excluded in ("infra", "tests", "cdk.out", ".venv", "node_modules"):
        assert not (staged / excluded).exists(), excluded


def test_codebuild_image_mode(prod: Synth) -> None:
    prod.template.has_resource_properties(
        "AWS::CodeBuild::Project",
        {"Environment": Match.object_like({"Type": "ARM_CONTAINER", "PrivilegedMode": True})},
    )
    prod.template.has_resource_properties(
        "AWS::ECR::Repository", {"ImageScanningConfiguration": {"ScanOnPush": True}}
    )
    (build,) = resources(prod, "Custom::AgentImageBuild")
    (runtime,) = [
        k for k, v in prod.raw["Resources"].items() if v["Type"] == "AWS::BedrockAgentCore::Runtime"
    ]
    build_id = next(k for k, v in prod.raw["Resources"].items() if v["Type"] == "Custom::AgentImageBuild")
    assert build_id in prod.raw["Resources"][runtime]["DependsOn"]
    uri = dumps(runtime_props(prod)["AgentRuntimeArtifact"])
    assert build["Properties"]["ImageTag"] in uri
    # The trigger's code is a reviewed, tested module shipped as an asset, not an inline string.
    trigger = [
        f
        for f in resources(prod, "AWS::Lambda::Function")
        if f["Properties"].get("Handler") == "index.handler"
    ]
    assert trigger and all("ZipFile" not in f["Properties"]["Code"] for f in trigger)
    assets = json.loads(
        next(prod.template_path.parent.glob(f"{prod.stack.stack_name}.assets.json")).read_text()
    )
    staged = [prod.template_path.parent / a["source"]["path"] for a in assets["files"].values()]
    assert any((d / "index.py").is_file() and "StartBuild" in (d / "index.py").read_text() for d in staged)


# --- outputs -------------------------------------------------------------------------------------------


def test_outputs(dev: Synth) -> None:
    outputs = dev.raw["Outputs"]
    for name in (
        "RuntimeArn",
        "RuntimeEndpointArn",
        "MemoryId",
        "GatewayUrl",
        "DashboardUrl",
        "InvokeCommand",
    ):
        assert name in outputs, name
    command = dumps(outputs["InvokeCommand"]["Value"])
    assert "agentkit invoke --runtime-arn " in command and "AgentRuntimeArn" in command


# --- optional front doors ------------------------------------------------------------------------------


def test_optional_constructs_are_off_by_default(dev: Synth) -> None:
    dev.template.resource_count_is("AWS::SQS::Queue", 0)
    assert "WebhookUrl" not in dev.raw["Outputs"]
    assert not [r for r in resources(dev, "AWS::IAM::Role") if "sts:AssumeRoleWithWebIdentity" in dumps(r)]


def test_webhook_and_oidc_behind_flags(optional: Synth) -> None:
    assert "WebhookUrl" in optional.raw["Outputs"]
    optional.template.has_resource_properties("AWS::Lambda::Url", {"AuthType": "NONE"})
    oidc_roles = [
        r for r in resources(optional, "AWS::IAM::Role") if "sts:AssumeRoleWithWebIdentity" in dumps(r)
    ]
    assert len(oidc_roles) == 1
    assert "repo:acme/agent:ref:refs/heads/main" in dumps(oidc_roles[0])
    # cdk.json's webhook.allowed_author_associations reaches the receiver Lambda.
    receivers = [
        f["Properties"]["Environment"]["Variables"]
        for f in resources(optional, "AWS::Lambda::Function")
        if "ALLOWED_ASSOCIATIONS" in dumps(f.get("Properties", {}).get("Environment", {}))
    ]
    assert [r["ALLOWED_ASSOCIATIONS"] for r in receivers] == ["MEMBER,OWNER"]
    # webhook.trackers / webhook.jira reach the construct: one URL, a path and outputs per tracker.
    assert receivers[0]["TRACKERS"] == "github,gitlab,jira"
    assert receivers[0]["JIRA_SITE_URL"] == "https://acme.atlassian.net"
    for key in ("GitLabWebhookUrl", "GitLabWebhookSecretName", "JiraWebhookUrl", "JiraTokenSecretName"):
        assert key in optional.raw["Outputs"], key


def test_the_accounts_oidc_provider_is_used_unless_asked(optional: Synth, global_oidc: Synth) -> None:
    """An account holds one GitHub OIDC provider per URL (most have it; dev and prod would both create it):
    the stack trusts the existing one by default."""
    for synthesized in (optional, global_oidc):
        synthesized.template.resource_count_is("AWS::IAM::OIDCProvider", 0)
        (role,) = [
            r for r in resources(synthesized, "AWS::IAM::Role") if "sts:AssumeRoleWithWebIdentity" in dumps(r)
        ]
        principal = dumps(role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"])
        assert ":oidc-provider/token.actions.githubusercontent.com" in principal


def test_immutable_github_subject_is_trusted_with_its_ids(global_oidc: Synth) -> None:
    (role,) = [
        r for r in resources(global_oidc, "AWS::IAM::Role") if "sts:AssumeRoleWithWebIdentity" in dumps(r)
    ]
    condition = role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Condition"]
    assert condition["StringLike"]["token.actions.githubusercontent.com:sub"] == [
        "repo:acme@1234567/agent@89012345:ref:refs/heads/main"
    ]


def test_small_model_slot_falls_back_to_an_invocable_profile() -> None:
    import copy

    from infra.config import load_config
    from infra.stack import runtime_environment
    from tests.infra.conftest import base_context

    data = copy.deepcopy(base_context()["agentkit"])
    data["extra_models"] = []
    config = load_config(data, stage="dev")
    env = runtime_environment(config, memory_id="m", gateway_url=None, region="us-east-1")
    assert env["AGENTKIT_SMALL_MODEL"] == config.model  # never a profile the role may not invoke
