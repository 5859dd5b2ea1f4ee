"""Reading snapshots from S3 (runtime.workspace.s3) where moto cannot go: an object whose reported length lies is
still cut at the limit while reading, and a denied read names the IAM action. botocore's Stubber checks the calls
against the S3 model."""

from __future__ import annotations

import io

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from runtime.errors import WorkspaceError, WorkspaceTooLarge
from runtime.workspace.s3 import S3Location, S3Snapshots

URI = "s3://kit-ws/dev/run/ws.tar.gz"


def snapshots(max_bytes: int = 100) -> tuple[S3Snapshots, Stubber]:
    client = boto3.client("s3", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b")
    stub = Stubber(client)
    stub.activate()
    return S3Snapshots(client=client, allowed=S3Location.parse("s3://kit-ws/dev/"), max_bytes=max_bytes), stub


def test_a_body_longer_than_its_reported_length_is_cut_at_the_limit() -> None:
    reader, stub = snapshots()
    body = StreamingBody(io.BytesIO(b"x" * 5000), 5000)
    stub.add_response(
        "get_object", {"ContentLength": 10, "Body": body}, {"Bucket": "kit-ws", "Key": "dev/run/ws.tar.gz"}
    )
    with pytest.raises(WorkspaceTooLarge, match="AGENTKIT_WORKSPACE_MAX_S3_BYTES"):
        reader.fetch(URI)


def test_a_denied_read_names_the_action_the_role_needs() -> None:
    reader, stub = snapshots()
    stub.add_client_error("get_object", service_error_code="AccessDenied", http_status_code=403)
    with pytest.raises(WorkspaceError, match="s3:GetObject on s3://kit-ws/dev/"):
        reader.fetch(URI)


def test_a_small_object_is_read_whole() -> None:
    reader, stub = snapshots()
    stub.add_response(
        "get_object",
        {"ContentLength": 3, "Body": StreamingBody(io.BytesIO(b"abc"), 3)},
        {"Bucket": "kit-ws", "Key": "dev/run/ws.tar.gz"},
    )
    assert reader.fetch(URI) == b"abc"
