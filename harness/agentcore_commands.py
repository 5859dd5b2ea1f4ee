"""A loopback stand-in for AgentCore's ``InvokeAgentRuntimeCommand`` (boto3 ``bedrock-agentcore``).

``POST /runtimes/{arn}/commands[?qualifier=…]`` with a JSON body ``{"command": str, "timeout": int}`` and the
session in ``X-Amzn-Bedrock-AgentCore-Runtime-Session-Id``. The SigV4 signature is checked with the known keys. A
caller whose access key is not in ``allowed_access_keys`` gets 403 ``AccessDeniedException``, as the kit's
resource policy answers every principal but the break-glass role. An allowed call runs ``runner(command)``
(the test decides what "inside the microVM" means, e.g. ``sh -c`` here) and streams the answer as botocore's
model describes it (``bedrock-agentcore`` 2024-02-28, ``InvokeAgentRuntimeCommandStreamOutput``): one
``application/vnd.amazon.eventstream`` response whose frames are ``chunk`` events carrying, in order,
``{"contentStart": {}}``, ``{"contentDelta": {"stdout": …}}`` / ``{"contentDelta": {"stderr": …}}``, then
``{"contentStop": {"exitCode": n, "status": "COMPLETED" | "TIMED_OUT"}}``. Frames are encoded by
:func:`standins.eventstream.encode_frame` (real prelude and CRCs), so botocore's own parser reads them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from harness.agentcore_dataplane import SESSION, sigv4_ok
from harness.loopback import LoopbackServer, send_reply
from standins.eventstream import encode_frame


@dataclass(frozen=True)
class CommandRun:
    """What ``runner`` returns: the output as it should stream, and how the command ended."""

    stdout: str = ""
    stderr: str = ""
    exit_code: int = 0
    status: str = "COMPLETED"


def chunk(member: str, value: dict[str, Any]) -> bytes:
    """One ``chunk`` event of the command stream (a ``ResponseChunk`` union member)."""
    headers = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}
    return encode_frame(headers=headers, payload=json.dumps({member: value}).encode())


def frames(run: CommandRun, *, piece: int = 64) -> Iterable[bytes]:
    """The stream of one command: start, its output in ``piece``-character deltas, stop."""
    yield chunk("contentStart", {})
    for name, text in (("stdout", run.stdout), ("stderr", run.stderr)):
        for i in range(0, len(text), piece):
            yield chunk("contentDelta", {name: text[i : i + piece]})
    yield chunk("contentStop", {"exitCode": run.exit_code, "status": run.status})


class AgentCoreCommands(LoopbackServer):
    """Records each call in ``calls`` (path, session id, command, timeout, access key, HTTP status)."""

    def __init__(
        self,
        runner: Callable[[str], CommandRun],
        *,
        allowed_access_keys: frozenset[str] = frozenset({"break-glass"}),
        secrets: dict[str, str] | None = None,
        region: str = "us-east-1",
    ) -> None:
        self.calls: list[dict[str, Any]] = []
        keys = {"break-glass": "break-glass-secret", "testing": "testing", **(secrets or {})}
        plane = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
                auth = self.headers.get("Authorization", "")
                access_key = (
                    auth.split("Credential=", 1)[-1].split("/", 1)[0] if "Credential=" in auth else ""
                )
                call: dict[str, Any] = {
                    "path": self.path,
                    "session": self.headers.get(SESSION),
                    "key": access_key,
                }
                plane.calls.append(call)
                if not self.path.startswith("/runtimes/") or "/commands" not in self.path.split("?")[0]:
                    call["status"] = 404
                    send_reply(
                        self,
                        404,
                        b'{"message": "not found"}',
                        headers={"x-amzn-errortype": "ResourceNotFoundException"},
                    )
                    return
                secret = keys.get(access_key)
                if secret is None or not sigv4_ok(
                    self, body, access_key=access_key, secret_key=secret, region=region
                ):
                    call["status"] = 403
                    send_reply(
                        self,
                        403,
                        b'{"message": "signature mismatch"}',
                        headers={"x-amzn-errortype": "AccessDeniedException"},
                    )
                    return
                if access_key not in allowed_access_keys:
                    call["status"] = 403
                    message = (
                        "User is not authorized to perform: bedrock-agentcore:InvokeAgentRuntimeCommand "
                        "with an explicit deny in a resource-based policy"
                    )
                    send_reply(
                        self,
                        403,
                        json.dumps({"message": message}).encode(),
                        headers={"x-amzn-errortype": "AccessDeniedException"},
                    )
                    return
                request = json.loads(body)
                call.update(command=request["command"], timeout=request.get("timeout"), status=200)
                run = runner(request["command"])
                stream = b"".join(frames(run))
                send_reply(
                    self,
                    200,
                    stream,
                    content_type="application/vnd.amazon.eventstream",
                    headers={SESSION: call["session"] or ""},
                )

        super().__init__(Handler, poll_interval=0.05, daemon_threads=True)
