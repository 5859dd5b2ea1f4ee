"""CloudFormation custom resource ``Custom::AgentImageBuild``: start the CodeBuild image build.

Create/Update: ``codebuild:StartBuild`` on ``ResourceProperties.ProjectName`` with three environment variables
for the build's ``post_build`` phase — ``CFN_RESPONSE_URL`` and the two finished response bodies
(``CFN_SUCCESS_BODY``, ``CFN_FAILED_BODY``) — and return without answering: the build answers CloudFormation
itself when the image is pushed (or failed), so the stack waits for the image, not for this function. The
physical id is ``ResourceProperties.ImageTag`` (a new tag is a new resource; CloudFormation then deletes the
old one). If StartBuild fails, answer FAILED at once instead of leaving the stack waiting for an hour.
Delete: nothing to clean up (the repository's lifecycle rule ages images out); answer SUCCESS.

Response protocol: an HTTP PUT of a JSON body to the pre-signed ``ResponseURL`` with an empty Content-Type
(https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-responses.html); reasons are cut to
fit the 4 KiB response limit.

IAM: ``codebuild:StartBuild`` on the project. Environment variables: none.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

MAX_REASON = 3000
Put = Callable[[str, bytes], None]


def put_response(url: str, body: bytes) -> None:
    """PUT ``body`` to the pre-signed S3 URL CloudFormation gave (the Content-Type must stay empty).

    Raises:
        ValueError: a URL that is not http(s) (never sent).
    """
    if not url.startswith(("https://", "http://")):
        raise ValueError(f"refusing to answer CloudFormation at a non-HTTP URL: {url[:40]!r}")
    request = urllib.request.Request(url, data=body, method="PUT", headers={"Content-Type": ""})  # noqa: S310
    with urllib.request.urlopen(request, timeout=30) as reply:  # noqa: S310 - http(s) only, checked above
        reply.read()


def response_body(
    event: Mapping[str, Any],
    status: str,
    reason: str,
    physical_id: str,
    data: Mapping[str, str] | None = None,
) -> str:
    """The JSON document CloudFormation expects for ``event``."""
    return json.dumps(
        {
            "Status": status,
            "Reason": reason[:MAX_REASON],
            "PhysicalResourceId": physical_id,
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "Data": dict(data or {}),
        }
    )


def build_environment(event: Mapping[str, Any], physical_id: str) -> list[dict[str, str]]:
    """The ``environmentVariablesOverride`` that lets the build answer CloudFormation."""
    project = event["ResourceProperties"]["ProjectName"]
    data = {"ImageTag": physical_id}
    values = {
        "CFN_RESPONSE_URL": event["ResponseURL"],
        "CFN_SUCCESS_BODY": response_body(event, "SUCCESS", "image pushed", physical_id, data),
        "CFN_FAILED_BODY": response_body(
            event,
            "FAILED",
            f"image build failed, see the logs of CodeBuild project {project}",
            physical_id,
            data,
        ),
    }
    return [{"name": k, "value": v, "type": "PLAINTEXT"} for k, v in values.items()]


def handler(
    event: Mapping[str, Any], context: Any, *, codebuild: Any = None, put: Put = put_response
) -> None:
    """Lambda entry point (see module docstring). ``codebuild``/``put`` are injected by tests."""
    physical_id = str(event["ResourceProperties"]["ImageTag"])
    if event["RequestType"] == "Delete":
        done = response_body(
            event, "SUCCESS", "nothing to delete", event.get("PhysicalResourceId", physical_id)
        )
        put(event["ResponseURL"], done.encode())
        return
    try:
        if codebuild is None:
            import boto3

            codebuild = boto3.client("codebuild")
        codebuild.start_build(
            projectName=event["ResourceProperties"]["ProjectName"],
            environmentVariablesOverride=build_environment(event, physical_id),
        )
    except Exception as exc:  # answer CloudFormation instead of leaving the stack waiting an hour
        failed = response_body(event, "FAILED", f"StartBuild failed: {exc}", physical_id)
        put(event["ResponseURL"], failed.encode())
