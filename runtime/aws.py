"""Every boto3 client the runtime uses is built here, with one retry configuration.

Retries: botocore's ``standard`` mode with :data:`MAX_ATTEMPTS` attempts in all (the first call and 3 retries)
for every service. botocore's ``retries`` config: ``total_max_attempts`` counts the first call, ``max_attempts``
does not (docstring of ``botocore.config.Config``). Before this module the runtime set ``max_attempts`` 3 (4 calls)
for CloudWatch and the default AgentCore client, but 4 (5 calls) for the wired AgentCore client; now every client
makes at most 4 calls. Timeouts differ by use: metrics
must never hold a turn, so CloudWatch gets shorter ones than AgentCore. Endpoint overrides come from boto3's own
variables (``AWS_ENDPOINT_URL_CLOUDWATCH``, ``AWS_ENDPOINT_URL_BEDROCK_AGENTCORE``).

boto3 is imported when a client is built, not when this module is imported (the server starts without it).
"""

from __future__ import annotations

from typing import Any

#: Attempts per call in all (the first call plus retries), for every AWS client of the runtime.
MAX_ATTEMPTS = 4
RETRY_MODE = "standard"


def client_config(*, connect_timeout: float, read_timeout: float) -> Any:
    """The ``botocore.config.Config`` of every runtime client: one retry policy, the given timeouts."""
    from botocore.config import Config

    return Config(
        retries={"mode": RETRY_MODE, "total_max_attempts": MAX_ATTEMPTS},
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
    )


def cloudwatch_client(region: str | None) -> Any:
    """CloudWatch (``PutMetricData``): short timeouts, metrics never hold a turn."""
    import boto3

    return boto3.client(
        "cloudwatch", region_name=region, config=client_config(connect_timeout=2, read_timeout=5)
    )


def agentcore_client(region: str | None) -> Any:
    """AgentCore data plane (Memory events and records)."""
    import boto3

    return boto3.client(
        "bedrock-agentcore", region_name=region, config=client_config(connect_timeout=3, read_timeout=10)
    )


def session(region: str | None) -> Any:
    """A ``boto3.Session`` (for signing the gateway's requests; credentials are fetched per request)."""
    import boto3

    return boto3.Session(region_name=region)
