"""How long what one stage creates lives: the removal policy of its stateful resources and the retention of its
log groups, read from the stage's settings (``stages.<stage>.removal_policy`` and ``log_retention_days``)."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_logs as logs

from infra.config import StageConfig

#: CloudWatch Logs retention values (days) and the CDK enum member for each.
_RETENTION = {
    1: "ONE_DAY",
    3: "THREE_DAYS",
    5: "FIVE_DAYS",
    7: "ONE_WEEK",
    14: "TWO_WEEKS",
    30: "ONE_MONTH",
    60: "TWO_MONTHS",
    90: "THREE_MONTHS",
    120: "FOUR_MONTHS",
    150: "FIVE_MONTHS",
    180: "SIX_MONTHS",
    365: "ONE_YEAR",
    400: "THIRTEEN_MONTHS",
    545: "EIGHTEEN_MONTHS",
    731: "TWO_YEARS",
    1827: "FIVE_YEARS",
    3653: "TEN_YEARS",
}


def removal_policy(settings: StageConfig) -> cdk.RemovalPolicy:
    """``destroy`` or ``retain`` for the stage's tables, queues, secrets, log groups and memory."""
    return cdk.RemovalPolicy.DESTROY if settings.removal_policy == "destroy" else cdk.RemovalPolicy.RETAIN


def log_retention(settings: StageConfig) -> logs.RetentionDays:
    """The stage's log retention.

    Raises:
        ValueError: ``log_retention_days`` is not a CloudWatch retention value (the config model refuses
            those first).
    """
    days = settings.log_retention_days
    if days not in _RETENTION:
        raise ValueError(f"log retention {days} days is not a CloudWatch retention value")
    return logs.RetentionDays[_RETENTION[days]]
