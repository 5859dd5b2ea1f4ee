"""The image-build custom resource Lambda: real HTTP PUTs to a local server, CodeBuild through botocore's Stubber."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from infra.functions.image_build_trigger import index


class _Recorder(BaseHTTPRequestHandler):
    received: list[tuple[str, str, dict[str, str], bytes]] = []

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.command, self.path, dict(self.headers), body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture
def response_server() -> Iterator[tuple[str, list[tuple[str, str, dict[str, str], bytes]]]]:
    received: list[tuple[str, str, dict[str, str], bytes]] = []
    handler = type("Recorder", (_Recorder,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/presigned?sig=abc", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def event(url: str, request_type: str = "Create") -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResponseURL": url,
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/AgentKit-dev/guid",
        "RequestId": "req-1",
        "LogicalResourceId": "ImageBuild",
        "PhysicalResourceId": "oldtag",
        "ResourceProperties": {"ProjectName": "agentkit-image", "ImageTag": "abc123"},
    }


def codebuild() -> tuple[Any, Stubber]:
    client = boto3.client("codebuild", region_name="us-east-1")
    return client, Stubber(client)


def test_create_starts_the_build_and_leaves_the_answer_to_it(response_server) -> None:
    url, received = response_server
    client, stub = codebuild()
    captured: dict[str, Any] = {}

    def remember(params: dict[str, Any]) -> None:
        captured.update(params)

    stub.add_response(
        "start_build",
        {"build": {"id": "agentkit-image:1"}},
        {"projectName": "agentkit-image", "environmentVariablesOverride": ANY},
    )
    with stub:
        client.meta.events.register(
            "provide-client-params.codebuild.StartBuild", lambda params, **_: remember(params)
        )
        index.handler(event(url), None, codebuild=client)
        stub.assert_no_pending_responses()
    assert received == []  # CodeBuild answers CloudFormation when the image is pushed
    env = {v["name"]: v["value"] for v in captured["environmentVariablesOverride"]}
    assert env["CFN_RESPONSE_URL"] == url
    success, failed = json.loads(env["CFN_SUCCESS_BODY"]), json.loads(env["CFN_FAILED_BODY"])
    assert success["Status"] == "SUCCESS" and success["PhysicalResourceId"] == "abc123"
    assert success["Data"] == {"ImageTag": "abc123"} and success["RequestId"] == "req-1"
    assert failed["Status"] == "FAILED" and "agentkit-image" in failed["Reason"]


def test_start_build_failure_answers_failed_at_once(response_server) -> None:
    url, received = response_server
    client, stub = codebuild()
    stub.add_client_error(
        "start_build", "AccessDeniedException", "not authorized to perform codebuild:StartBuild"
    )
    with stub:
        index.handler(event(url), None, codebuild=client)
    ((method, path, headers, body),) = received
    assert method == "PUT" and path == "/presigned?sig=abc"
    assert headers.get("Content-Type", "") == ""  # the pre-signed URL is signed without one
    answer = json.loads(body)
    assert answer["Status"] == "FAILED" and "StartBuild failed" in answer["Reason"]
    assert "not authorized" in answer["Reason"] and answer["PhysicalResourceId"] == "abc123"


def test_delete_answers_success_without_a_build(response_server) -> None:
    url, received = response_server
    client, stub = codebuild()
    with stub:  # no response queued: any CodeBuild call would fail the test
        index.handler(event(url, "Delete"), None, codebuild=client)
    ((_, _, _, body),) = received
    answer = json.loads(body)
    assert answer["Status"] == "SUCCESS" and answer["PhysicalResourceId"] == "oldtag"


def test_long_reasons_are_cut_and_odd_urls_refused() -> None:
    body = json.loads(index.response_body(event("https://x"), "FAILED", "x" * 10_000, "p"))
    assert len(body["Reason"]) == index.MAX_REASON
    with pytest.raises(ValueError, match="non-HTTP"):
        index.put_response("file:///etc/passwd", b"{}")
