"""A local HTTP stand-in for Amazon Bedrock Runtime that the real Claude Code CLI can talk to offline.

Test and demo code only: it lives outside the runtime's import path and is never deployed.

Endpoints (all on ``127.0.0.1``, no authentication, the CLI is run with ``CLAUDE_CODE_SKIP_BEDROCK_AUTH=1``):

- ``POST /model/{modelId}/invoke-with-response-stream``: ``application/vnd.amazon.eventstream`` frames
  carrying the Anthropic streaming events (see :mod:`standins.eventstream`).
- ``POST /model/{modelId}/invoke``: one Message JSON (the CLI's fallback after a broken stream).
- ``POST /model/{modelId}/count-tokens``: ``{"inputTokens": n}``.
- ``GET /inference-profiles``: a page of system-defined inference profiles.

Every model call takes the next queued :class:`~standins.replies.Reply` (FIFO, shared by both model
endpoints) or, when the queue is empty, :func:`~standins.replies.default_reply`. Every request is recorded.

Usage::

    with BedrockStandIn() as bedrock:
        bedrock.enqueue(Reply.error(429), Reply.text("hi", usage=Usage(input_tokens=10, output_tokens=2)))
        env = cli_env(bedrock.url, "us.anthropic.claude-sonnet-4-5-20250929-v1:0")
        ...  # run the CLI with env
        assert bedrock.model_requests[-1].body["anthropic_version"] == "bedrock-2023-05-31"
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from runtime.models import MODELS
from standins.eventstream import chunk_frame, exception_frame
from standins.replies import Reply, Usage, default_reply, render_events, render_message

__all__ = ["DEFAULT_MODEL", "BedrockStandIn", "RecordedRequest", "cli_env"]

#: The inference profile the kit uses by default (``AGENTKIT_MODEL``).
DEFAULT_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
_MODEL_OPERATIONS = ("invoke-with-response-stream", "invoke", "count-tokens")
#: The system-defined profiles the stand-in lists: every profile of the kit's model table (runtime/models), so the
#: CLI's start-up lookup finds whichever model a test configures.
_PROFILE_IDS = tuple(
    dict.fromkeys(
        [
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "us.anthropic.claude-haiku-4-5-20251001-v1:0",
            "us.anthropic.claude-opus-4-5-20251101-v1:0",
            "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
            *(m.profile(g) for m in MODELS.values() for g in m.geographies),
        ]
    )
)


@dataclass(frozen=True)
class RecordedRequest:
    """One request the stand-in received. ``body`` is the parsed JSON (``None`` if absent or invalid)."""

    method: str
    path: str
    operation: str
    model_id: str | None
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    status: int
    received_at: float = field(compare=False)

    @property
    def is_model_call(self) -> bool:
        return self.operation in ("invoke-with-response-stream", "invoke")


def cli_env(
    url: str,
    model: str = DEFAULT_MODEL,
    *,
    region: str = "us-east-1",
    cache_home: str | Path | None = None,
    config_dir: str | Path | None = None,
) -> dict[str, str]:
    """Environment for the Claude Code CLI to use Bedrock at ``url`` with inference profile ``model``.

    Sets ``CLAUDE_CODE_USE_BEDROCK``, ``CLAUDE_CODE_SKIP_BEDROCK_AUTH`` (no SigV4, no AWS credentials),
    ``ANTHROPIC_BEDROCK_BASE_URL``, ``AWS_REGION``, ``ANTHROPIC_MODEL`` and the ``ANTHROPIC_DEFAULT_*_MODEL``
    aliases (so background calls use ``model`` too), ``ENABLE_TOOL_SEARCH=false`` (SDK MCP tools are not
    deferred), ``DISABLE_AUTOUPDATER``, ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC``; plus
    ``XDG_CACHE_HOME`` / ``CLAUDE_CONFIG_DIR`` when given (else the CLI writes under ``~``).
    Merge it over the SDK's ``ClaudeAgentOptions.env``.
    """
    env = {
        "CLAUDE_CODE_USE_BEDROCK": "1",
        "CLAUDE_CODE_SKIP_BEDROCK_AUTH": "1",
        "ANTHROPIC_BEDROCK_BASE_URL": url.rstrip("/"),
        "AWS_REGION": region,
        "ANTHROPIC_MODEL": model,
        "ANTHROPIC_DEFAULT_SONNET_MODEL": model,
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": model,
        "ANTHROPIC_DEFAULT_OPUS_MODEL": model,
        "ENABLE_TOOL_SEARCH": "false",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    if cache_home is not None:
        env["XDG_CACHE_HOME"] = str(cache_home)
    if config_dir is not None:
        env["CLAUDE_CONFIG_DIR"] = str(config_dir)
    return env


class BedrockStandIn:
    """A threaded HTTP server imitating Bedrock Runtime. Start it with ``with`` or :meth:`start`.

    Args:
        host, port: where to listen (port 0 picks a free port; see :attr:`url`).
        default_usage: usage reported by replies that carry none.
        prefer_tools: tool-name fragments the default model calls when offered (see ``default_reply``).
        region: region named in the inference profile ARNs.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        default_usage: Usage | None = None,
        prefer_tools: Sequence[str] = ("invoice",),
        region: str = "us-east-1",
    ) -> None:
        self.default_usage = default_usage or Usage(
            input_tokens=850,
            output_tokens=64,
            cache_creation_input_tokens=1024,
            cache_read_input_tokens=12288,
        )
        self.prefer_tools = tuple(prefer_tools)
        self.region = region
        self._host, self._port = host, port
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._seq = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------------
    def start(self) -> BedrockStandIn:
        """Bind and serve in a daemon thread. Raises ``OSError`` if the address is taken."""
        if self._server is not None:
            raise RuntimeError("BedrockStandIn is already running")
        server = ThreadingHTTPServer((self._host, self._port), _Handler)
        server.daemon_threads = True
        server.standin = self  # type: ignore[attr-defined]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.05,), name="bedrock-standin", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> BedrockStandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """Base URL for ``ANTHROPIC_BEDROCK_BASE_URL``. Raises ``RuntimeError`` before :meth:`start`."""
        if self._server is None:
            raise RuntimeError("BedrockStandIn is not running")
        host, port = self._server.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else host
        return f"http://{host}:{port}"

    # -- scripting ------------------------------------------------------------------------------------
    def enqueue(self, *replies: Reply, times: int = 1) -> None:
        """Queue ``replies`` (in order) for the next model calls; ``times`` repeats the whole group."""
        if times < 1:
            raise ValueError("times must be >= 1")
        for reply in replies:
            if not isinstance(reply, Reply):
                raise TypeError(f"expected a Reply, got {type(reply).__name__}")
        with self._lock:
            for _ in range(times):
                self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """Queued replies not yet consumed."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def model_requests(self) -> list[RecordedRequest]:
        """The ``invoke`` / ``invoke-with-response-stream`` requests only."""
        return [r for r in self.requests if r.is_model_call]

    def tool_results(self) -> dict[str, dict[str, Any]]:
        """Every ``tool_result`` block the CLI sent the model, by ``tool_use_id``. It arrives with the model call that
        follows the tool's run, not always in its last message: CLI 2.1.337 may append a user message of its own
        after it (a "USD budget: ..." reminder when the turn has a budget), so every message is read."""
        return {
            block["tool_use_id"]: block
            for request in self.model_requests
            for message in request.body["messages"]
            if isinstance(content := message.get("content"), list)
            for block in content
            if isinstance(block, dict) and block.get("type") == "tool_result"
        }

    def reset(self) -> None:
        """Forget queued replies and recorded requests."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()

    # -- used by the handler --------------------------------------------------------------------------
    def _next_reply(self, body: Any) -> tuple[Reply, int]:
        with self._lock:
            self._seq += 1
            if self._queue:
                return self._queue.popleft(), self._seq
            seq = self._seq
        return default_reply(body, prefer_tools=self.prefer_tools), seq

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _profiles(self) -> dict[str, Any]:
        ids = _PROFILE_IDS
        summaries = [
            {
                "inferenceProfileName": f"Stand-in {pid}",
                "inferenceProfileId": pid,
                "inferenceProfileArn": f"arn:aws:bedrock:{self.region}:123456789012:inference-profile/{pid}",
                "models": [
                    {"modelArn": f"arn:aws:bedrock:{self.region}::foundation-model/{pid.split('.', 1)[-1]}"}
                ],
                "status": "ACTIVE",
                "type": "SYSTEM_DEFINED",
                "description": "Bedrock stand-in profile",
                "createdAt": "2025-01-01T00:00:00Z",
                "updatedAt": "2025-01-01T00:00:00Z",
            }
            for pid in ids
        ]
        return {"inferenceProfileSummaries": summaries}


def _parse_path(path: str) -> tuple[str, str | None]:
    parts = path.strip("/").split("/")
    if len(parts) == 3 and parts[0] == "model" and parts[2] in _MODEL_OPERATIONS:
        return parts[2], unquote(parts[1])
    if parts == ["inference-profiles"]:
        return "inference-profiles", None
    return "unknown", None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 60
    # TCP_NODELAY: a streamed reply is one small write per event-stream frame. With Nagle's algorithm on, a
    # frame waits for the ACK of the one before, which the CLI may delay by up to 40 ms (delayed ACK): turns
    # measured against the stand-in then took 30-60 ms longer at random (benchmarks/http_edge.py --nagle).
    disable_nagle_algorithm = True
    server_version = "BedrockStandIn/1.0"

    @property
    def standin(self) -> BedrockStandIn:
        return self.server.standin  # type: ignore[attr-defined,no-any-return]

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.send_header("x-amzn-RequestId", f"standin-{time.monotonic_ns()}")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)

    def _send_error(
        self, status: int, error_type: str, message: str, retry_after_s: float | None = None
    ) -> None:
        headers = {"x-amzn-ErrorType": f"{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/"}
        if retry_after_s is not None:
            headers["retry-after-ms"] = str(int(retry_after_s * 1000))
        self._send_json(status, {"message": message}, headers)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        split = urlsplit(self.path)
        operation, model_id = _parse_path(split.path)
        raw = self._read_body()
        body: Any = None
        bad_json = False
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                bad_json = True
        standin = self.standin
        reply: Reply | None = None
        seq = 0
        if operation == "inference-profiles" and method == "GET":
            status = 200
        elif operation in _MODEL_OPERATIONS and method == "POST":
            if bad_json or not isinstance(body, dict):
                status = 400
            elif operation == "count-tokens":
                status = 200
            else:
                reply, seq = standin._next_reply(body)
                status = reply.status if reply.is_error else 200
                if operation == "invoke" and reply.exception_type:
                    status = 500
        else:
            status = 404
        # Record before answering, so a caller that has its answer also sees its request recorded.
        standin._record(
            RecordedRequest(
                method=method,
                path=split.path,
                operation=operation,
                model_id=model_id,
                query=parse_qs(split.query),
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                status=status,
                received_at=time.monotonic(),
            )
        )
        if reply is not None:
            self._model_call(operation, model_id or "", reply, seq)
        elif status == 404:
            self._send_error(404, "UnknownOperationException", f"No route for {method} {split.path}")
        elif status == 400:
            self._send_error(
                400, "ValidationException", "Malformed input request: body must be a JSON object."
            )
        elif operation == "count-tokens":
            self._send_json(200, {"inputTokens": max(1, len(raw) // 4)})
        else:
            self._send_json(200, standin._profiles())

    def _model_call(self, operation: str, model_id: str, reply: Reply, seq: int) -> None:
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.is_error:
            self._send_error(
                reply.status, reply.error_type or "", reply.error_message or "", reply.retry_after_s
            )
            return
        usage = reply.usage or self.standin.default_usage
        if operation == "invoke":
            if reply.exception_type:
                self._send_error(500, "InternalServerException", reply.exception_message)
                return
            self._send_json(200, render_message(reply, model_id=model_id, seq=seq, usage=usage))
            return
        frames = [chunk_frame(e) for e in render_events(reply, model_id=model_id, seq=seq, usage=usage)]
        if reply.exception_type:
            frames = frames[: reply.exception_after]
            frames.append(
                exception_frame(exception_type=reply.exception_type, message=reply.exception_message)
            )
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.amazon.eventstream")
        self.send_header("X-Amzn-Bedrock-Content-Type", "application/json")
        self.send_header("x-amzn-RequestId", f"standin-{seq}")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for index, frame in enumerate(frames):
                if index and reply.chunk_delay_s:
                    time.sleep(reply.chunk_delay_s)
                self.wfile.write(f"{len(frame):x}\r\n".encode() + frame + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
