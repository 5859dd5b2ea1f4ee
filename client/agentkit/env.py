"""Environment variables ``agentkit`` reads (explicit option > env var > default, everywhere).

``AGENTKIT_RUNTIME_ARN``       default runtime of ``invoke``, ``sessions stop``, ``status``, ``logs``
``AGENTKIT_STACK``             default stack (outputs give the runtime ARN and the stage endpoint)
``AGENTKIT_METRICS_NAMESPACE`` metric namespace of ``cost`` and ``report`` (same name as the runtime's)
``AGENTKIT_AGENT_NAME``        ``Agent`` dimension of ``cost`` and ``report`` (same name as the runtime's)
``AGENTKIT_DAILY_BUDGET_USD``  daily budget ``cost`` compares spend with (else the stack's cost alarm)
``AGENTKIT_DEBUG``             ``1``: print the traceback of an unexpected error
``AWS_REGION`` / ``AWS_DEFAULT_REGION``  region, after ``--region`` (see :mod:`agentkit.aws`)
"""

from __future__ import annotations

ENV_RUNTIME_ARN = "AGENTKIT_RUNTIME_ARN"
ENV_STACK = "AGENTKIT_STACK"
ENV_METRICS_NAMESPACE = "AGENTKIT_METRICS_NAMESPACE"
ENV_AGENT_NAME = "AGENTKIT_AGENT_NAME"
ENV_DAILY_BUDGET_USD = "AGENTKIT_DAILY_BUDGET_USD"
ENV_DEBUG = "AGENTKIT_DEBUG"
ENV_REGION = "AWS_REGION"
ENV_DEFAULT_REGION = "AWS_DEFAULT_REGION"

DEFAULT_NAMESPACE = (
    "AgentCoreClaudeKit"  # runtime/observe/metrics/__init__.py DEFAULT_NAMESPACE, infra/config.py
)
DEFAULT_AGENT = "agentkit"  # cdk.json agent_name
