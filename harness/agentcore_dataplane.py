"""A loopback stand-in for the AgentCore data plane in front of the real runtime (``python -m runtime``).

``POST /runtimes/{arn}/invocations[?qualifier=…]`` (boto3 ``InvokeAgentRuntime``) is checked for a valid
SigV4 signature (service ``bedrock-agentcore``, the given keys), then forwarded to the runtime's
``POST /invocations`` with ``X-Amzn-Bedrock-AgentCore-Runtime-Session-Id`` and every
``X-Amzn-Bedrock-AgentCore-Runtime-Custom-*`` header, as AgentCore does. A container error status is
*not* relayed as a body: like AgentCore, the stand-in answers HTTP 424 ``RuntimeClientError`` with only
``Received error (<status>) from runtime. Please check your CloudWatch logs for more information``.
Every call is recorded in ``calls`` (path, session id, actor, runtime user id, runtime status, and the raw
request ``body`` and ``headers`` as received).

``POST /runtimes/{arn}/stopruntimesession`` (boto3 ``StopRuntimeSession``) is checked the same way and
forwarded to the runtime's local ``POST /stopruntimesession`` with the session id and the identity headers the
session's invocations carried (AgentCore ends the session's microVM whoever asks; the local route looks the
session up by its caller). Answers ``200 {"runtimeSessionId", "statusCode": 200}``, or ``404
ResourceNotFoundException`` when the runtime has no such session. Recorded in ``stops``.

Runtime user id, as AgentCore handles it: a call naming one (``runtimeUserId``, header
``X-Amzn-Bedrock-AgentCore-Runtime-User-Id``) needs ``InvokeAgentRuntimeForUser``; here the caller has it unless
``for_user_allowed`` is false, and is then refused with ``AccessDeniedException``. An allowed call reaches the
runtime with an opaque ``WorkloadAccessToken`` header and without the id itself; a call naming none reaches it
with no token.
"""

from __future__ import annotations

import http.client
import json
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from harness.loopback import LoopbackServer

SESSION = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id"
USER_ID = "X-Amzn-Bedrock-AgentCore-Runtime-User-Id"
WORKLOAD_TOKEN = "WorkloadAccessToken"
CUSTOM_PREFIX = "x-amzn-bedrock-agentcore-runtime-custom-"
ERROR_MESSAGE = (
    "Received error ({status}) from runtime. Please check your CloudWatch logs for more information"
)


def sigv4_ok(
    handler: BaseHTTPRequestHandler, body: bytes, *, access_key: str, secret_key: str, region: str
) -> bool:
    """Recompute the request's SigV4 signature with the known keys and compare."""
    auth = handler.headers.get("Authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return False
    parts = dict(p.strip().split("=", 1) for p in auth[len("AWS4-HMAC-SHA256 ") :].split(","))
    scope = parts["Credential"].split("/")
    if scope[0] != access_key or scope[2:] != [region, "bedrock-agentcore", "aws4_request"]:
        return False
    signed = parts["SignedHeaders"].split(";")
    headers = {name: handler.headers[name] for name in signed if name != "host"}
    request = AWSRequest(
        method="POST", url=f"http://{handler.headers['Host']}{handler.path}", data=body, headers=headers
    )
    request.context["timestamp"] = handler.headers["X-Amz-Date"]
    signer = SigV4Auth(Credentials(access_key, secret_key), "bedrock-agentcore", region)
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    return bool(expected == parts["Signature"])


class AgentCoreDataPlane(LoopbackServer):
    def __init__(
        self,
        *,
        runtime_port: int,
        access_key: str = "testing",
        secret_key: str = "testing",
        region: str = "us-east-1",
        for_user_allowed: bool = True,
    ) -> None:
        #: Where invocations go: re-point it when a new runtime process takes over (a new microVM).
        self.runtime_port = runtime_port
        self.calls: list[dict[str, Any]] = []
        self.stops: list[dict[str, Any]] = []
        #: The identity headers each session's last invocation reached the runtime with.
        self.identity: dict[str, dict[str, str]] = {}
        plane = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for name, value in {**headers, "Content-Length": str(len(body))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def _signed(self, body: bytes) -> bool:
                """Whether the request carries a valid SigV4 signature; answers AWS's 403 when not."""
                if sigv4_ok(self, body, access_key=access_key, secret_key=secret_key, region=region):
                    return True
                self._send(
                    403, b'{"message": "signature mismatch"}', {"x-amzn-errortype": "AccessDeniedException"}
                )
                return False

            def _stop(self, body: bytes) -> None:
                if not self._signed(body):
                    return
                session = self.headers.get(SESSION, "")
                forward = {
                    "Content-Type": "application/json",
                    **plane.identity.get(session, {SESSION: session}),
                }
                conn = http.client.HTTPConnection("127.0.0.1", plane.runtime_port, timeout=60)
                try:
                    conn.request("POST", "/stopruntimesession", body=b"{}", headers=forward)
                    resp = conn.getresponse()
                    resp.read()
                    status = resp.status
                finally:
                    conn.close()
                plane.stops.append({"path": self.path, "session": session, "status": status})
                if status == 404:
                    self._send(
                        404,
                        b'{"message": "session not found"}',
                        {"x-amzn-errortype": "ResourceNotFoundException"},
                    )
                    return
                answer = json.dumps({"runtimeSessionId": session, "statusCode": 200}).encode()
                self._send(200, answer, {"Content-Type": "application/json", SESSION: session})

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
                request_id = str(uuid.uuid4())
                if self.path.startswith("/runtimes/") and self.path.split("?")[0].endswith(
                    "/stopruntimesession"
                ):
                    self._stop(body)
                    return
                if not self.path.startswith("/runtimes/") or "/invocations" not in self.path:
                    self._send(
                        404, b'{"message": "not found"}', {"x-amzn-errortype": "ResourceNotFoundException"}
                    )
                    return
                if not self._signed(body):
                    return
                user_id = self.headers.get(USER_ID)
                if user_id and not for_user_allowed:
                    denied = {
                        "message": "User is not authorized to perform: bedrock-agentcore:InvokeAgentRuntimeForUser"
                    }
                    self._send(
                        403, json.dumps(denied).encode(), {"x-amzn-errortype": "AccessDeniedException"}
                    )
                    return
                forward = {"Content-Type": self.headers.get("Content-Type", "application/json")}
                forward[SESSION] = self.headers.get(SESSION, "")
                for name, value in self.headers.items():
                    if name.lower().startswith(CUSTOM_PREFIX):
                        forward[name] = value
                if user_id:  # opaque, as AgentCore's: the container cannot read the id from it
                    forward[WORKLOAD_TOKEN] = uuid.uuid4().hex
                conn = http.client.HTTPConnection("127.0.0.1", plane.runtime_port, timeout=120)
                try:
                    conn.request("POST", "/invocations", body=body, headers=forward)
                    resp = conn.getresponse()
                    answer, status = resp.read(), resp.status
                    content_type = resp.getheader("content-type", "application/json")
                finally:
                    conn.close()
                plane.identity[forward[SESSION]] = {k: v for k, v in forward.items() if k != "Content-Type"}
                plane.calls.append(
                    {
                        "body": body,
                        "headers": dict(self.headers.items()),
                        "path": self.path,
                        "session": forward[SESSION],
                        "actor": next(
                            (v for k, v in forward.items() if k.lower().endswith("custom-actor")), None
                        ),
                        "user_id": user_id,
                        "status": status,
                        "prompt": json.loads(body).get("prompt", ""),
                    }
                )
                if status >= 400:  # AgentCore relays only the status, not the container's body
                    message = json.dumps({"message": ERROR_MESSAGE.format(status=status)}).encode()
                    self._send(
                        424,
                        message,
                        {
                            "Content-Type": "application/json",
                            "x-amzn-errortype": "RuntimeClientError",
                            "x-amzn-RequestId": request_id,
                        },
                    )
                    return
                self._send(200, answer, {"Content-Type": content_type, "x-amzn-RequestId": request_id})

        super().__init__(Handler, poll_interval=0.05, daemon_threads=True)
