"""Dashboard, alarms and (opt-in) CloudWatch Transaction Search for the agent.

What each metric is and why its dimensions are what they are: ``infra/dashboard.py``. In short, alarms and
runtime widgets watch the **stage endpoint** (the one every caller invokes), totals read the ``Agent`` roll-up
the runtime writes with every document, breakdowns ``SEARCH`` the detailed dimension sets.

Alarms (to an SNS topic, optional email subscription): runtime error rate (system errors + throttles over
invocations) and p99 latency of the stage endpoint, both with missing data treated as missing (an alarm whose
metric never arrives stays INSUFFICIENT_DATA, not OK); daily model spend (``CostUSD`` of the ``Agent`` roll-up,
every model) above the stage's budget.

The dashboard opens on the last 7 days: spend today and this month against the daily budget, cost per day
with the budget line, cost per day in parts (model tokens + Runtime compute + Memory, priced with the kit's
price table, ``runtime/observe/prices.py``) and their total against the budget, tokens, cache hits,
invocations/errors, latencies (runtime, agent, time to first token), the runtime's billed compute (vCPU-hours,
GB-hours per day), turns, budget hits, tools, session resumes, the webhook's cost per issue tracker, and a Logs
Insights table of the sessions and callers that cost most. The daily cost alarm stays on ``CostUSD`` alone:
compute arrives up to 60 minutes late, so an alarm on the total would judge an incomplete day.

Transaction Search (``observability.transaction_search``) is account- and Region-wide: it creates
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
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_xray as xray
from constructs import Construct

from infra.config import AppConfig
from infra.dashboard import (
    COMPUTE_METRICS,
    DAY,
    FIVE_MINUTES,
    HOUR,
    MEMORY_USAGE_METRICS,
    TOKEN_METRICS,
    agent_metric,
    calendar_spend,
    compute_metric,
    cost_parts,
    cost_table_query,
    runtime_metric,
    search,
)
from runtime.observe.prices import DEFAULT_PRICES

DEFAULT_RANGE = cdk.Duration.days(7)


class AgentObservability(Construct):
    """Dashboard + alarms + SNS topic for one agent runtime and its stage endpoint.

    Args:
        config: the validated app config. Read here: ``stage`` (the endpoint callers invoke; AgentCore's
            metrics are per endpoint), ``resource_prefix`` (the dashboard's name), ``metrics_namespace`` /
            ``agent_name`` (where and under which ``Agent`` dimension the agent publishes), the stage's
            ``daily_budget_usd`` / ``error_rate_alarm_percent`` / ``p99_latency_alarm_ms`` (alarm thresholds),
            ``observability.alarm_email`` (optional email subscription to the alarm topic),
            ``observability.transaction_search`` (see module docstring) and, when the webhook is enabled,
            ``webhook.trackers`` (whose metrics to plot, ``Tracker`` dimension).
        runtime: the L2 runtime (its name, ARN and id identify its metrics and log group).
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, config: AppConfig, runtime: agentcore.Runtime
    ) -> None:
        super().__init__(scope, construct_id)
        stack = cdk.Stack.of(self)
        settings, endpoint_name, dashboard_name = config.settings, config.stage, config.resource_prefix
        error_rate_percent, p99_latency_ms = settings.error_rate_alarm_percent, settings.p99_latency_alarm_ms
        self.namespace, self.agent = config.metrics_namespace, config.agent_name
        self.budget = daily_budget_usd = settings.daily_budget_usd
        self.endpoint_name = endpoint_name
        self._runtime_name, self._runtime_arn = runtime.agent_runtime_name, runtime.agent_runtime_arn
        self.runtime_log_group = f"/aws/bedrock-agentcore/runtimes/{runtime.agent_runtime_id}-{endpoint_name}"
        self.topic = sns.Topic(self, "AlarmTopic", display_name=f"{dashboard_name} alarms", enforce_ssl=True)
        if config.observability.alarm_email:
            self.topic.add_subscription(subs.EmailSubscription(config.observability.alarm_email))
        action = cw_actions.SnsAction(self.topic)

        invocations = self.runtime_metric("Invocations", "Sum", label="Invocations")
        system_errors = self.runtime_metric("SystemErrors", "Sum", label="System errors")
        throttles = self.runtime_metric("Throttles", "Sum", label="Throttles")
        error_rate = cw.MathExpression(
            expression="IF(inv > 0, 100 * (FILL(sys, 0) + FILL(thr, 0)) / inv, 0)",
            using_metrics={"inv": invocations, "sys": system_errors, "thr": throttles},
            label="Error rate %",
            period=FIVE_MINUTES,
        )
        self.error_rate_alarm = cw.Alarm(
            self,
            "ErrorRateAlarm",
            alarm_description=(
                f"Endpoint {endpoint_name}: system errors + throttles above {error_rate_percent}% of invocations"
            ),
            metric=error_rate,
            threshold=error_rate_percent,
            evaluation_periods=3,
            datapoints_to_alarm=2,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
            # Not NOT_BREACHING: AWS does not document the runtime metrics' dimensions, so a wrong dimension set
            # would leave the alarm silently OK. MISSING keeps it in INSUFFICIENT_DATA instead, which
            # `agentkit status` / `agentkit doctor` explain (they list the runtime's real metrics).
            treat_missing_data=cw.TreatMissingData.MISSING,
        )
        self.latency_alarm = cw.Alarm(
            self,
            "LatencyP99Alarm",
            alarm_description=f"Endpoint {endpoint_name}: p99 latency above {p99_latency_ms} ms",
            metric=self.runtime_metric("Latency", "p99", label="p99"),
            threshold=p99_latency_ms,
            evaluation_periods=3,
            datapoints_to_alarm=2,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.MISSING,  # as the error-rate alarm's
        )
        self.daily_cost = agent_metric(
            self.namespace, self.agent, "CostUSD", statistic="Sum", period=DAY, label="all"
        )
        self.cost_alarm = cw.Alarm(
            self,
            "DailyCostAlarm",
            alarm_description=f"Model spend above the daily budget of {daily_budget_usd} USD",
            metric=self.daily_cost,
            threshold=daily_budget_usd,
            evaluation_periods=1,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
        )
        for alarm in (self.error_rate_alarm, self.latency_alarm, self.cost_alarm):
            alarm.add_alarm_action(action)
            alarm.add_ok_action(action)

        self.dashboard = cw.Dashboard(
            self, "Dashboard", dashboard_name=dashboard_name, default_interval=DEFAULT_RANGE
        )
        self._header(stack)
        self._spend_row()
        self._traffic_rows(invocations=invocations, system_errors=system_errors, throttles=throttles)
        self._agent_rows(config.webhook.trackers if config.webhook.enabled else ())
        if config.observability.transaction_search:
            self._enable_transaction_search(stack)

    def alarm_on_dead_letters(self, construct_id: str, queue: sqs.IQueue, *, what: str) -> cw.Alarm:
        """An alarm (to the alarm topic) as soon as ``queue``, a dead-letter queue, holds a message: each one is
        work that failed every retry (a webhook task, a job's event) and waits for a fix and a redrive.

        ``ApproximateNumberOfMessagesVisible`` is published per ``QueueName`` every 5 minutes for active queues
        (AWS docs, "Available CloudWatch metrics for Amazon SQS"); no data means an empty, idle queue."""
        alarm = cw.Alarm(
            self,
            construct_id,
            alarm_description=f"{what} failed every retry and wait in a dead-letter queue: fix the cause, then redrive",
            metric=queue.metric_approximate_number_of_messages_visible(
                period=FIVE_MINUTES, statistic="Maximum"
            ),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
        )
        action = cw_actions.SnsAction(self.topic)
        alarm.add_alarm_action(action)
        alarm.add_ok_action(action)
        return alarm

    def alarm_on_results_after_timeout(
        self, construct_id: str, trackers: Sequence[str], *, service: str
    ) -> cw.Alarm:
        """An alarm (to the alarm topic) when a fix job's result arrives after the sweeper ended the job as timed
        out (``ResultsAfterTimeout``, emitted by the reporter Lambda, ``service``, per ``Tracker``): the work was
        done and paid for but nothing was opened, so the job deadline is too short for this stage's fixes."""
        parts = {
            f"t{i}": cw.Metric(
                namespace=self.namespace,
                metric_name="ResultsAfterTimeout",
                dimensions_map={"service": service, "Tracker": tracker},
                statistic="Sum",
                period=FIVE_MINUTES,
            )
            for i, tracker in enumerate(trackers)
        }
        alarm = cw.Alarm(
            self,
            construct_id,
            alarm_description=(
                "A webhook fix job's result came after its deadline (JOB_DEADLINE_SECONDS, the stage's "
                "max_lifetime_hours plus 30 min), so nothing was opened for it: the deadline is too short"
            ),
            metric=cw.MathExpression(
                expression=" + ".join(f"FILL({name}, 0)" for name in parts),
                using_metrics=dict(parts),
                label="ResultsAfterTimeout",
                period=FIVE_MINUTES,
            ),
            threshold=0,
            evaluation_periods=1,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,  # no late result, no data point
        )
        action = cw_actions.SnsAction(self.topic)
        alarm.add_alarm_action(action)
        alarm.add_ok_action(action)
        return alarm

    def runtime_metric(self, name: str, statistic: str, *, label: str | None = None) -> cw.Metric:
        """An AgentCore runtime metric of this stack's stage endpoint."""
        return runtime_metric(
            name,
            runtime_name=self._runtime_name,
            runtime_arn=self._runtime_arn,
            endpoint=self.endpoint_name,
            statistic=statistic,
            label=label,
        )

    @property
    def dashboard_url(self) -> str:
        stack = cdk.Stack.of(self)
        return (
            f"https://{stack.region}.console.aws.amazon.com/cloudwatch/home?region={stack.region}"
            f"#dashboards/dashboard/{self.dashboard.dashboard_name}"
        )

    # --- widgets -------------------------------------------------------------------------------------------

    def _search(
        self, dims: Sequence[str], metric: str, stat: str, period: cdk.Duration, **filters: str
    ) -> cw.IMetric:
        return search(
            self.namespace,
            ["Agent", *dims],
            metric,
            {"Agent": self.agent, **filters},
            statistic=stat,
            period=period,
        )

    def _total(self, metric: str, stat: str, period: cdk.Duration, label: str | None = None) -> cw.Metric:
        return agent_metric(self.namespace, self.agent, metric, statistic=stat, period=period, label=label)

    def _header(self, stack: cdk.Stack) -> None:
        console = f"https://{stack.region}.console.aws.amazon.com/cloudwatch/home?region={stack.region}"
        self.dashboard.add_widgets(
            cw.TextWidget(
                markdown=(
                    f"# Claude agent `{self.agent}`, endpoint `{self.endpoint_name}`\n"
                    f"Cost, tokens, turns and tools: the agent's metrics (namespace `{self.namespace}`). Runtime "
                    f"health: `AWS/Bedrock-AgentCore` for this endpoint. Spans need CloudWatch Transaction Search, "
                    f"enabled once per account and Region (docs/deploy.md).\n\n"
                    f"[Traces: GenAI observability]({console}#gen-ai-observability/agent-core) · "
                    f"[X-Ray trace query]({console}#xray:traces/query)"
                ),
                width=24,
                height=3,
            )
        )

    def _spend_row(self) -> None:
        hourly = self._total("CostUSD", "Sum", HOUR)
        today, today_budget = calendar_spend(hourly, "DATE", self.budget)
        month, month_budget = calendar_spend(hourly, "MONTH", self.budget)
        self.dashboard.add_widgets(
            cw.SingleValueWidget(
                title=f"Spend today (UTC) vs daily budget ${self.budget:g}",
                metrics=[today, today_budget],
                start="-P2D",
                full_precision=False,
                width=8,
                height=4,
            ),
            cw.SingleValueWidget(
                title=f"Spend this month (UTC) vs ${self.budget:g}/day to date",
                metrics=[month, month_budget],
                start="-P32D",
                width=8,
                height=4,
            ),
            cw.AlarmStatusWidget(
                title="Alarms",
                alarms=[self.error_rate_alarm, self.latency_alarm, self.cost_alarm],
                width=8,
                height=4,
            ),
        )
        budget_line = cw.HorizontalAnnotation(value=self.budget, label=f"daily budget ${self.budget:g}")
        self._cost_parts_row(budget_line)
        self.dashboard.add_widgets(
            cw.GraphWidget(
                title="Cost USD per day (all models, and by model)",
                left=[self.daily_cost, self._search(["Model"], "CostUSD", "Sum", DAY)],
                left_annotations=[budget_line],
                width=12,
            ),
            cw.GraphWidget(
                title="Cost USD per hour by model",
                left=[self._search(["Model"], "CostUSD", "Sum", HOUR)],
                width=12,
            ),
        )

    def _cost_parts_row(self, budget_line: cw.HorizontalAnnotation) -> None:
        """Cost per day in parts: model tokens + Runtime compute + Memory, and their total against the budget."""
        region = cdk.Stack.of(self).region
        prices, _checked = DEFAULT_PRICES.agentcore_for(None if cdk.Token.is_unresolved(region) else region)
        parts = cost_parts(
            model=self.daily_cost,
            compute=[compute_metric(name, runtime_arn=self._runtime_arn) for name in COMPUTE_METRICS],
            memory=[self._total(name, "Sum", DAY) for name in MEMORY_USAGE_METRICS],
            prices=prices,
        )
        dated = f"list prices as of {DEFAULT_PRICES.agentcore_as_of}"
        self.dashboard.add_widgets(
            cw.GraphWidget(
                title=f"Cost USD per day in parts: model + Runtime compute + Memory ({dated})",
                left=[parts["model"], parts["compute"], parts["memory"]],
                stacked=True,
                width=12,
            ),
            cw.GraphWidget(
                title="Cost USD per day, all parts, and the daily budget (compute lags up to 60 min)",
                left=[parts["total"]],
                left_annotations=[budget_line],
                width=12,
            ),
        )

    def _traffic_rows(
        self, *, invocations: cw.IMetric, system_errors: cw.IMetric, throttles: cw.IMetric
    ) -> None:
        tokens = {name: self._total(name, "Sum", HOUR) for name in TOKEN_METRICS}
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
        self.dashboard.add_widgets(
            cw.GraphWidget(
                title="Tokens per hour by type", left=list(tokens.values()), stacked=True, width=12
            ),
            cw.GraphWidget(
                title="Prompt cache hit ratio %",
                left=[hit_ratio],
                left_y_axis=cw.YAxisProps(min=0, max=100),
                width=12,
            ),
        )
        self.dashboard.add_widgets(
            cw.GraphWidget(
                title=f"Invocations and errors (endpoint {self.endpoint_name})",
                left=[invocations],
                right=[
                    system_errors,
                    self.runtime_metric("UserErrors", "Sum", label="User errors"),
                    throttles,
                    self._search(["ErrorCode"], "InvocationErrors", "Sum", FIVE_MINUTES),
                ],
                width=12,
            ),
            cw.GraphWidget(
                title=f"Runtime latency ms p50 / p90 / p99 and sessions (endpoint {self.endpoint_name})",
                left=[self.runtime_metric("Latency", stat, label=stat) for stat in ("p50", "p90", "p99")],
                right=[self.runtime_metric("SessionCount", "Sum", label="Sessions")],
                width=12,
            ),
        )
        # The runtime's own bill beside the model's: CostUSD counts tokens only.
        compute = [compute_metric(name, runtime_arn=self._runtime_arn) for name in COMPUTE_METRICS]
        self.dashboard.add_widgets(
            cw.GraphWidget(
                title="Runtime compute per day, as billed: vCPU-hours and GB-hours (the whole runtime)",
                left=[compute[0]],
                right=[compute[1]],
                width=24,
            )
        )

    def _agent_rows(self, trackers: Sequence[str]) -> None:
        latency = [
            self._total("InvocationLatencyMs", s, FIVE_MINUTES, f"turn {s}") for s in ("p50", "p90", "p99")
        ]
        ttft = [
            self._total("TimeToFirstTokenMs", s, FIVE_MINUTES, f"first token {s}") for s in ("p50", "p90")
        ]
        self.dashboard.add_widgets(
            cw.GraphWidget(
                title="Agent latency ms: turn and time to first token", left=latency + ttft, width=12
            ),
            cw.GraphWidget(
                title="Turns and budget hits per hour",
                left=[self._total("Turns", "Sum", HOUR, "Turns")],
                right=[self._total("BudgetExceeded", "Sum", HOUR, "BudgetExceeded")],
                width=12,
            ),
        )
        self.dashboard.add_widgets(
            cw.GraphWidget(
                title="Tool calls, errors and denials by tool",
                left=[self._search(["Tool"], "ToolCalls", "Sum", FIVE_MINUTES)],
                right=[
                    self._search(["Tool"], "ToolErrors", "Sum", FIVE_MINUTES),
                    self._search(["Tool"], "ToolDenied", "Sum", FIVE_MINUTES),
                ],
                width=12,
            ),
            cw.GraphWidget(
                title="Tool latency ms p90 by tool",
                left=[self._search(["Tool"], "ToolLatencyMs", "p90", FIVE_MINUTES)],
                width=12,
            ),
        )
        # Tool calls that waited for a person (runtime.approvals; docs/approvals.md).
        self.dashboard.add_widgets(
            cw.GraphWidget(
                title="Approvals per hour: requested, approved, denied, expired, withdrawn",
                left=[
                    self._total(name, "Sum", HOUR, name)
                    for name in ("ApprovalsRequested", "Approved", "Denied", "Expired", "Withdrawn")
                ],
                width=12,
            ),
            cw.GraphWidget(
                title="Approvals: seconds from request to answer (average, maximum)",
                left=[
                    self._total("ApprovalDecisionSeconds", s, HOUR, f"time to answer {s}")
                    for s in ("Average", "Maximum")
                ],
                width=12,
            ),
        )
        row: list[cw.IWidget] = [
            cw.GraphWidget(
                title="Session resumes and session-store errors",
                left=[self._total("SessionResumed", "Sum", HOUR, "SessionResumed")],
                right=[self._total("SessionStoreErrors", "Sum", HOUR, "SessionStoreErrors")],
                width=12,
            )
        ]
        if trackers:
            row.append(
                cw.GraphWidget(
                    title="Webhook: cost USD per day by issue tracker",
                    left=[
                        search(
                            self.namespace,
                            ["Tracker", "service"],
                            "IssueCostUSD",
                            {"Tracker": tracker},
                            statistic="Sum",
                            period=DAY,
                            label=tracker,
                        )
                        for tracker in trackers
                    ],
                    width=12,
                )
            )
        self.dashboard.add_widgets(*row)
        if trackers:
            self.dashboard.add_widgets(*self._fix_widgets(trackers))
        self.dashboard.add_widgets(
            cw.LogQueryWidget(
                title="Top sessions and callers by cost (turn logs)",
                log_group_names=[self.runtime_log_group],
                query_lines=cost_table_query(),
                view=cw.LogQueryVisualizationType.TABLE,
                width=24,
                height=6,
            )
        )

    def _fix_widgets(self, trackers: Sequence[str]) -> list[cw.IWidget]:
        """Fix jobs of the webhook (reporter and worker, Powertools EMF, ``Tracker`` + ``service``): pull requests
        opened, patches applied and stops per day, the average cost of a pull request, and the approvals asked and
        answered on the issues (with the time to an answer), per tracker."""

        def per_tracker(metric: str, statistic: str) -> list[cw.IMetric]:
            return [
                search(
                    self.namespace,
                    ["Tracker", "service"],
                    metric,
                    {"Tracker": tracker},
                    statistic=statistic,
                    period=DAY,
                    label=f"{metric} {tracker}",
                )
                for tracker in trackers
            ]

        return [
            cw.GraphWidget(
                title=(
                    "Webhook fixes per day: pull requests opened, patches applied; stops, jobs timed out, "
                    "results after the deadline"
                ),
                left=[*per_tracker("PullRequestsOpened", "Sum"), *per_tracker("PatchesApplied", "Sum")],
                # The sweeper's JobsTimedOut (no result by the job's deadline: the issue was told) and the
                # reporter's ResultsAfterTimeout (a result came after that: nothing was opened for it).
                right=[
                    *per_tracker("Stops", "Sum"),
                    *per_tracker("JobsTimedOut", "Sum"),
                    *per_tracker("ResultsAfterTimeout", "Sum"),
                ],
                width=12,
            ),
            cw.GraphWidget(
                title="Webhook: cost USD per pull request (daily average) by issue tracker",
                left=per_tracker("PullRequestCostUSD", "Average"),
                width=12,
            ),
            cw.GraphWidget(
                title="Webhook approvals per day: requested, approved, denied, expired; answers refused",
                left=[
                    *per_tracker("ApprovalsRequested", "Sum"),
                    *per_tracker("ApprovalsApproved", "Sum"),
                    *per_tracker("ApprovalsDenied", "Sum"),
                    *per_tracker("ApprovalsExpired", "Sum"),
                ],
                right=per_tracker("ApprovalsRefused", "Sum"),
                width=12,
            ),
            cw.GraphWidget(
                title="Webhook approvals: seconds from the card to the answer (daily average)",
                left=per_tracker("ApprovalDecisionSeconds", "Average"),
                width=12,
            ),
        ]

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
