"""Dashboard, alarms and (opt-in) CloudWatch Transaction Search for the agent.

Two metric sources:
  * the agent's own metrics (namespace from config, default ``AgentCoreClaudeKit``; dimensions ``Agent`` +
    ``Model``, ``Agent`` + ``Tool``): cost, tokens, latency, tools, budget hits. The dashboard uses SEARCH
    expressions so every model/tool shows up without being listed here.
  * the runtime's AWS metrics, namespace ``AWS/Bedrock-AgentCore`` (dimensions
    ``Operation=InvokeAgentRuntime`` and ``Resource=<runtime ARN>``): Invocations, Latency, SystemErrors,
    UserErrors, Throttles, SessionCount — taken from the L2 ``Runtime.metric_*`` helpers.

Alarms cannot use SEARCH, so they use explicit metrics: error rate and p99 latency from the runtime's AWS
metrics, daily cost as the sum of ``CostUSD{Agent, Model}`` over the configured models.

Transaction Search (``transaction_search=True``) is account- and Region-wide: it creates
``AWS::XRay::TransactionSearchConfig`` and the logs resource policy that lets X-Ray write spans to the
``aws/spans`` log group. Enable it in one stack per account/Region only; a second stack enabling it fails.
"""

from __future__ import annotations

from collections.abc import Sequence

import aws_cdk as cdk
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subs
from aws_cdk import aws_xray as xray
from constructs import Construct

HOUR = cdk.Duration.hours(1)
DAY = cdk.Duration.days(1)
TOKEN_METRICS = ("InputTokens", "OutputTokens", "CacheReadTokens", "CacheWriteTokens")


def _search(namespace: str, dims: str, metric: str, agent: str, stat: str, period: cdk.Duration) -> str:
    return (
        f'SEARCH(\'{{{namespace},{dims}}} MetricName="{metric}" Agent="{agent}"\', '
        f"'{stat}', {int(period.to_seconds())})"
    )


class AgentObservability(Construct):
    """Dashboard + alarms + SNS topic for one agent runtime.

    Args:
        runtime: the L2 runtime (its AWS metrics feed alarms and widgets).
        namespace / agent_name: where and under which ``Agent`` dimension the agent publishes.
        models: inference profile ids (the ``Model`` dimension) summed by the daily cost alarm.
        daily_budget_usd / error_rate_percent / p99_latency_ms: alarm thresholds.
        alarm_email: optional email subscription to the alarm topic.
        transaction_search: enable CloudWatch Transaction Search (account-level, see module docstring).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        runtime: agentcore.Runtime,
        dashboard_name: str,
        namespace: str,
        agent_name: str,
        models: Sequence[str],
        daily_budget_usd: float,
        error_rate_percent: float,
        p99_latency_ms: int,
        alarm_email: str | None,
        transaction_search: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = cdk.Stack.of(self)
        self.topic = sns.Topic(self, "AlarmTopic", display_name=f"{dashboard_name} alarms", enforce_ssl=True)
        if alarm_email:
            self.topic.add_subscription(subs.EmailSubscription(alarm_email))
        action = cw_actions.SnsAction(self.topic)

        invocations = runtime.metric_invocations(period=cdk.Duration.minutes(5), statistic="Sum")
        system_errors = runtime.metric_system_errors(period=cdk.Duration.minutes(5), statistic="Sum")
        user_errors = runtime.metric_user_errors(period=cdk.Duration.minutes(5), statistic="Sum")
        throttles = runtime.metric_throttles(period=cdk.Duration.minutes(5), statistic="Sum")
        error_rate = cw.MathExpression(
            expression="IF(inv > 0, 100 * (FILL(sys, 0) + FILL(thr, 0)) / inv, 0)",
            using_metrics={"inv": invocations, "sys": system_errors, "thr": throttles},
            label="Error rate %",
            period=cdk.Duration.minutes(5),
        )
        self.error_rate_alarm = cw.Alarm(
            self,
            "ErrorRateAlarm",
            alarm_description=f"Runtime system errors + throttles above {error_rate_percent}% of invocations",
            metric=error_rate,
            threshold=error_rate_percent,
            evaluation_periods=3,
            datapoints_to_alarm=2,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
        )
        latency_p99 = runtime.metric_latency(period=cdk.Duration.minutes(5), statistic="p99")
        self.latency_alarm = cw.Alarm(
            self,
            "LatencyP99Alarm",
            alarm_description=f"Runtime p99 latency above {p99_latency_ms} ms",
            metric=latency_p99,
            threshold=p99_latency_ms,
            evaluation_periods=3,
            datapoints_to_alarm=2,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
        )
        cost_metrics = {
            f"m{i}": cw.Metric(
                namespace=namespace,
                metric_name="CostUSD",
                dimensions_map={"Agent": agent_name, "Model": model},
                statistic="Sum",
                period=DAY,
            )
            for i, model in enumerate(models)
        }
        daily_cost = cw.MathExpression(
            expression=" + ".join(f"FILL({k}, 0)" for k in cost_metrics),
            using_metrics=cost_metrics,
            label="Cost USD per day",
            period=DAY,
        )
        self.cost_alarm = cw.Alarm(
            self,
            "DailyCostAlarm",
            alarm_description=f"Model spend above the daily budget of {daily_budget_usd} USD",
            metric=daily_cost,
            threshold=daily_budget_usd,
            evaluation_periods=1,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
        )
        for alarm in (self.error_rate_alarm, self.latency_alarm, self.cost_alarm):
            alarm.add_alarm_action(action)
            alarm.add_ok_action(action)

        self.dashboard = cw.Dashboard(self, "Dashboard", dashboard_name=dashboard_name)
        self._widgets(
            stack=stack,
            runtime=runtime,
            namespace=namespace,
            agent=agent_name,
            invocations=invocations,
            system_errors=system_errors,
            user_errors=user_errors,
            throttles=throttles,
        )
        if transaction_search:
            self._enable_transaction_search(stack)

    @property
    def dashboard_url(self) -> str:
        stack = cdk.Stack.of(self)
        return (
            f"https://{stack.region}.console.aws.amazon.com/cloudwatch/home?region={stack.region}"
            f"#dashboards/dashboard/{self.dashboard.dashboard_name}"
        )

    def _widgets(
        self,
        *,
        stack: cdk.Stack,
        runtime: agentcore.Runtime,
        namespace: str,
        agent: str,
        invocations: cw.IMetric,
        system_errors: cw.IMetric,
        user_errors: cw.IMetric,
        throttles: cw.IMetric,
    ) -> None:
        def search(dims: str, metric: str, stat: str, period: cdk.Duration, label: str) -> cw.MathExpression:
            return cw.MathExpression(
                expression=_search(namespace, dims, metric, agent, stat, period), label=label, period=period
            )

        def total(metric: str, period: cdk.Duration, label: str, stat: str = "Sum") -> cw.MathExpression:
            inner = _search(namespace, "Agent,Model", metric, agent, stat, period)
            return cw.MathExpression(expression=f"SUM({inner})", label=label, period=period)

        five = cdk.Duration.minutes(5)
        tokens = {name: total(name, HOUR, name) for name in TOKEN_METRICS}
        hit_ratio = cw.MathExpression(
            expression="IF((i + r + w) > 0, 100 * r / (i + r + w), 0)",
            using_metrics={
                "i": tokens["InputTokens"],
                "r": tokens["CacheReadTokens"],
                "w": tokens["CacheWriteTokens"],
            },
            label="Cache hit %",
            period=HOUR,
        )
        traces_url = (
            f"https://{stack.region}.console.aws.amazon.com/cloudwatch/home?region={stack.region}"
            "#gen-ai-observability/agent-core"
        )
        xray_url = (
            f"https://{stack.region}.console.aws.amazon.com/cloudwatch/home?region={stack.region}"
            "#xray:traces/query"
        )
        self.dashboard.add_widgets(
            cw.TextWidget(
                markdown=(
                    f"# Claude agent `{agent}`\nCost and tokens come from the agent's own metrics "
                    f"(namespace `{namespace}`); runtime health from `AWS/Bedrock-AgentCore`.\n\n"
                    f"[Traces: GenAI observability]({traces_url}) · [X-Ray trace query]({xray_url})"
                ),
                width=24,
                height=3,
            ),
            cw.GraphWidget(
                title="Cost USD per hour by model",
                left=[search("Agent,Model", "CostUSD", "Sum", HOUR, "")],
                width=12,
            ),
            cw.GraphWidget(
                title="Cost USD per day by model",
                left=[search("Agent,Model", "CostUSD", "Sum", DAY, "")],
                width=12,
            ),
            cw.GraphWidget(
                title="Tokens per hour by type", left=list(tokens.values()), stacked=True, width=12
            ),
            cw.GraphWidget(
                title="Prompt cache hit ratio %",
                left=[hit_ratio],
                left_y_axis=cw.YAxisProps(min=0, max=100),
                width=12,
            ),
            cw.GraphWidget(
                title="Invocations and errors (runtime)",
                left=[invocations],
                right=[
                    system_errors,
                    user_errors,
                    throttles,
                    total("InvocationErrors", five, "Agent errors"),
                ],
                width=12,
            ),
            cw.GraphWidget(
                title="Invocation latency ms (agent) p50 / p90 / p99",
                left=[
                    search("Agent,Model", "InvocationLatencyMs", stat, five, "")
                    for stat in ("p50", "p90", "p99")
                ],
                width=12,
            ),
            cw.GraphWidget(
                title="Runtime latency (AWS/Bedrock-AgentCore) p50 / p90 / p99",
                left=[
                    runtime.metric_latency(period=five, statistic=s, label=s) for s in ("p50", "p90", "p99")
                ],
                right=[runtime.metric_session_count(period=five, statistic="Sum", label="Sessions")],
                width=12,
            ),
            cw.GraphWidget(
                title="Tool calls and errors by tool",
                left=[search("Agent,Tool", "ToolCalls", "Sum", five, "")],
                right=[
                    search("Agent,Tool", "ToolErrors", "Sum", five, ""),
                    search("Agent,Tool", "ToolDenied", "Sum", five, ""),
                ],
                width=12,
            ),
            cw.GraphWidget(
                title="Budget hits and session resumes",
                left=[total("BudgetExceeded", HOUR, "BudgetExceeded")],
                right=[
                    total("SessionResumed", HOUR, "SessionResumed"),
                    total("SessionStoreErrors", HOUR, "SessionStoreErrors"),
                ],
                width=12,
            ),
            cw.AlarmStatusWidget(
                title="Alarms",
                alarms=[self.error_rate_alarm, self.latency_alarm, self.cost_alarm],
                width=12,
            ),
        )

    def _enable_transaction_search(self, stack: cdk.Stack) -> None:
        spans_policy = logs.CfnResourcePolicy(
            self,
            "XRaySpansPolicy",
            policy_name=f"{stack.stack_name}-TransactionSearch",
            policy_document=stack.to_json_string(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "TransactionSearchXRayAccess",
                            "Effect": "Allow",
                            "Principal": {"Service": "xray.amazonaws.com"},
                            "Action": "logs:PutLogEvents",
                            "Resource": [
                                f"arn:{stack.partition}:logs:{stack.region}:{stack.account}:log-group:aws/spans:*",
                                f"arn:{stack.partition}:logs:{stack.region}:{stack.account}"
                                ":log-group:/aws/application-signals/data:*",
                            ],
                            "Condition": {
                                "ArnLike": {
                                    "aws:SourceArn": (
                                        f"arn:{stack.partition}:xray:{stack.region}:{stack.account}:*"
                                    )
                                },
                                "StringEquals": {"aws:SourceAccount": stack.account},
                            },
                        }
                    ],
                }
            ),
        )
        config = xray.CfnTransactionSearchConfig(self, "TransactionSearch", indexing_percentage=1)
        config.node.add_dependency(spans_policy)
